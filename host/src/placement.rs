//! Where a parent's children may live. A namespaced parent's children stay in its namespace; a
//! cluster-scoped parent's go to the namespaces the operator allowed (`--child-namespace`), and each
//! must name one; a Namespace parent with no allow-list keeps its children in itself. Each refusal
//! names the rule that applies, so that the guest's author knows which one to follow.

use std::collections::BTreeSet;

use crate::validate::Rule;

/// Where a parent's children may live, and so which rule refuses a child elsewhere.
#[derive(Clone, Debug, PartialEq)]
pub enum Placement {
    /// A namespaced parent's namespace; a child may leave its namespace out.
    ParentNamespace(String),
    /// The Namespace that is the parent (a Namespace parent without an allow-list); may be left out.
    ParentItself(String),
    /// A cluster-scoped parent's allowed namespaces; each child must name one.
    Allowed {
        namespaces: BTreeSet<String>,
        /// What allowed them, for the refusal's message (e.g. `--child-namespace team-a, team-b`).
        rule: String,
    },
}

impl Placement {
    /// The namespace of a child that names `given` (or none), or the rule it breaks.
    pub(crate) fn namespace_of(&self, given: Option<&str>) -> Result<String, Rule> {
        match (self, given) {
            (Placement::ParentNamespace(ns) | Placement::ParentItself(ns), None) => Ok(ns.clone()),
            (Placement::ParentNamespace(ns) | Placement::ParentItself(ns), Some(given))
                if given == ns =>
            {
                Ok(ns.clone())
            }
            (Placement::ParentNamespace(ns), Some(given)) => Err(Rule::OtherNamespace {
                namespace: given.to_string(),
                parent: ns.clone(),
            }),
            (Placement::ParentItself(ns), Some(given)) => Err(Rule::OutsideParentNamespace {
                namespace: given.to_string(),
                parent: ns.clone(),
            }),
            (Placement::Allowed { rule, .. }, None) => Err(Rule::NoNamespace {
                allowed: rule.clone(),
            }),
            (Placement::Allowed { namespaces, .. }, Some(given)) if namespaces.contains(given) => {
                Ok(given.to_string())
            }
            (Placement::Allowed { rule, .. }, Some(given)) => Err(Rule::NamespaceNotAllowed {
                namespace: given.to_string(),
                allowed: rule.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::Answer;
    use crate::validate::{Rules, validate_in};
    use serde_json::{Value, json};

    fn rules() -> Rules {
        Rules::new(Some(vec!["v1/ConfigMap".parse().unwrap()]))
    }

    fn answer(children: Vec<Value>) -> Answer {
        Answer {
            children,
            ..Answer::default()
        }
    }

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    }

    #[test]
    fn a_cluster_scoped_parent_s_children_name_an_allowed_namespace() {
        let placement = Placement::Allowed {
            namespaces: ["team-a".to_string(), "team-b".to_string()].into(),
            rule: "--child-namespace team-a, team-b".into(),
        };
        let check = |child: Value| validate_in(&answer(vec![child]), &placement, &rules());
        let mut child = cm("settings");
        let err = check(child.clone()).unwrap_err();
        assert!(matches!(err.rule, Rule::NoNamespace { .. }), "{err}");
        assert!(
            err.to_string().contains("--child-namespace team-a"),
            "{err}"
        );
        child["metadata"]["namespace"] = json!("kube-system");
        let err = check(child.clone()).unwrap_err();
        assert_eq!(
            err.rule,
            Rule::NamespaceNotAllowed {
                namespace: "kube-system".into(),
                allowed: "--child-namespace team-a, team-b".into()
            }
        );
        child["metadata"]["namespace"] = json!("team-b");
        assert_eq!(check(child).unwrap()[0].namespace(), "team-b");
    }

    #[test]
    fn a_cluster_scoped_parent_may_reuse_a_child_name_in_another_namespace_only() {
        let placement = Placement::Allowed {
            namespaces: ["team-a".to_string(), "team-b".to_string()].into(),
            rule: "--child-namespace team-a, team-b".into(),
        };
        let in_namespace = |namespace: &str| {
            let mut child = cm("settings");
            child["metadata"]["namespace"] = json!(namespace);
            child
        };
        let both = vec![in_namespace("team-a"), in_namespace("team-b")];
        assert_eq!(
            validate_in(&answer(both), &placement, &rules())
                .unwrap()
                .len(),
            2
        );
        let twice = vec![in_namespace("team-b"), in_namespace("team-b")];
        let err = validate_in(&answer(twice), &placement, &rules()).unwrap_err();
        assert_eq!(err.rule, Rule::Duplicate);
        assert_eq!(
            err.child, "ConfigMap/team-b/settings",
            "which of the two: {err}"
        );
    }

    #[test]
    fn a_namespace_parent_keeps_its_children_in_itself_by_default() {
        let placement = Placement::ParentItself("team-a".into());
        let check = |child: Value| validate_in(&answer(vec![child]), &placement, &rules());
        assert_eq!(check(cm("quota")).unwrap()[0].namespace(), "team-a");
        let mut child = cm("quota");
        child["metadata"]["namespace"] = json!("default");
        let err = check(child).unwrap_err();
        assert!(
            matches!(err.rule, Rule::OutsideParentNamespace { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("--child-namespace"), "{err}");
    }
}
