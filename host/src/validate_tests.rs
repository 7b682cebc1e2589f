use super::*;
use serde_json::json;

fn rules() -> Rules {
    Rules::new(Some(vec![
        "apps/v1/Deployment".parse().unwrap(),
        "v1/ConfigMap".parse().unwrap(),
    ]))
}

fn answer(children: Vec<Value>) -> Answer {
    Answer {
        children,
        ..Answer::default()
    }
}

fn refused(children: Vec<Value>) -> ValidationError {
    validate(&answer(children), "team-a", &rules()).expect_err("should be refused")
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

#[test]
fn accepts_allowed_kinds_and_fills_the_namespace() {
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "demo-app-deploy", "namespace": "team-a"}});
    let children = validate(&answer(vec![deploy, cm("settings")]), "team-a", &rules()).unwrap();
    assert_eq!(children.len(), 2);
    assert_eq!(children[0].name, "demo-app-deploy");
    assert_eq!(children[1].kind.kind, "ConfigMap");
    assert_eq!(children[1].object["metadata"]["namespace"], "team-a");
}

#[test]
fn refuses_a_kind_outside_the_allow_list() {
    let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "pwn"}});
    let err = refused(vec![crb]);
    assert_eq!(err.child, "ClusterRoleBinding/pwn");
    assert!(
        matches!(err.rule, Rule::KindNotAllowed { ref kind, .. } if kind == "ClusterRoleBinding")
    );
    assert!(err.to_string().contains("not allow-listed"), "{err}");
}

#[test]
fn refuses_the_right_kind_at_another_version() {
    let old =
        json!({"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "x"}});
    assert!(matches!(
        refused(vec![old]).rule,
        Rule::KindNotAllowed { .. }
    ));
}

#[test]
fn refuses_another_namespace() {
    let mut child = cm("settings");
    child["metadata"]["namespace"] = json!("kube-system");
    let err = refused(vec![child]);
    assert_eq!(
        err.rule,
        Rule::OtherNamespace {
            namespace: "kube-system".into(),
            parent: "team-a".into()
        }
    );
}

#[test]
fn refuses_invalid_names() {
    for name in [
        "Not_A_Valid_Name",
        "",
        "-leading",
        "trailing-",
        &"a".repeat(254),
    ] {
        let err = refused(vec![cm(name)]);
        assert!(
            matches!(err.rule, Rule::InvalidName { .. }),
            "{name}: {err}"
        );
    }
}

#[test]
fn refuses_missing_fields_and_non_objects() {
    assert_eq!(
        refused(vec![json!("text")]).rule,
        Rule::NotAnObject("a string")
    );
    assert_eq!(
        refused(vec![json!({"kind": "ConfigMap"})]).rule,
        Rule::MissingField("apiVersion")
    );
    assert_eq!(
        refused(vec![json!({"apiVersion": "v1", "kind": "ConfigMap"})]).rule,
        Rule::MissingField("metadata.name")
    );
}

#[test]
fn refuses_too_many_too_large_and_duplicates() {
    let many = (0..101).map(|i| cm(&format!("cm-{i}"))).collect();
    assert_eq!(
        refused(many).rule,
        Rule::TooMany {
            count: 101,
            max: 100
        }
    );

    let mut big = cm("big");
    big["data"] = json!({"blob": "x".repeat(600 << 10)});
    assert!(matches!(refused(vec![big]).rule, Rule::TooLarge { .. }));

    assert_eq!(refused(vec![cm("same"), cm("same")]).rule, Rule::Duplicate);
}

/// Where children may live (`crate::placement`), as the checks of an answer apply it.
mod placement {
    use super::{answer, cm};
    use crate::validate::{Placement, Rule, Rules, validate_in};
    use serde_json::{Value, json};

    fn rules() -> Rules {
        Rules::new(Some(vec!["v1/ConfigMap".parse().unwrap()]))
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

/// The fields a child and a status are read by, for the fuzz target's objects.
const CHILD_KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "labels",
    "annotations",
    "ownerReferences",
    "uid",
    "controller",
    "spec",
    "status",
    "generateName",
    "finalizers",
];

/// A guest's answer as the host receives it: each child and the status a JSON text, or any text.
fn response() -> impl proptest::strategy::Strategy<Value = crate::guest::Response> {
    use proptest::prelude::*;
    let document = prop_oneof![
        3 => crate::fuzz::object(CHILD_KEYS).prop_map(|v| v.to_string()),
        1 => crate::fuzz::text("{}\\[\\]\":,a-z0-9 "),
    ];
    (
        proptest::collection::vec(document.clone(), 0..6),
        proptest::option::of(document),
        proptest::option::of(any::<u32>()),
        any::<bool>(),
    )
        .prop_map(|(children, status, requeue_after_seconds, finalized)| {
            crate::guest::Response {
                children,
                status,
                requeue_after_seconds,
                finalized,
            }
        })
}

proptest::proptest! {
    #![proptest_config(crate::fuzz::config())]

    /// Any answer is parsed or refused with a reason, and every child that passes the rules is of an
    /// allowed kind, in the parent's namespace, with a valid name.
    #[test]
    fn fuzz_guest_answers_are_parsed_and_checked_or_refused(response in response()) {
        let config = crate::guest::RuntimeConfig::default();
        let Ok(answer) = crate::guest::parse_answer(response, &config) else {
            return Ok(());
        };
        let allowed: Vec<Gvk> = vec!["apps/v1/Deployment".parse().unwrap(), "v1/ConfigMap".parse().unwrap()];
        let rules = Rules::new(Some(allowed.clone()));
        if let Ok(children) = validate(&answer, "team-a", &rules) {
            for child in children {
                proptest::prop_assert!(allowed.contains(&child.kind));
                proptest::prop_assert_eq!(child.namespace(), "team-a");
                proptest::prop_assert!(check_name(&child.name).is_ok());
            }
        }
    }
}
