//! Which parents a reconciler takes and where their children may live: cluster-scoped parents (a
//! cluster-scoped CRD, or Namespaces) whose children go to the namespaces the operator allowed by name
//! or by label (the latter read from a Namespace cache the driver fills); decorators
//! (`--parent-selector`), which take only the parents of a kind they do not own that carry a label;
//! and a namespace selector (`--namespace-selector`, a ClusterReconciler's `namespaceSelector`), which
//! bounds both the parents (those in, or being, a matching Namespace) and where children may live.
//!
//! A decorator watches every parent of its kind and matches the selector here, rather than passing it
//! to the watch: the API server's filtered watch turns "stopped matching" into a delete event, after
//! which the parent is gone from the cache (nothing left to call the guest with) and, across a restart,
//! the parent is never seen again while its children stay forever. Unfiltered, a parent whose label
//! went is still in the cache: the reconciler sees it, finalizes it and deletes what it controls. The
//! namespace selector is matched here for the same reason, against the Namespace cache.

use std::collections::BTreeSet;
use std::sync::Arc;

use kube::core::DynamicObject;

use crate::kind::Gvk;
use crate::selector::LabelSelector;
use crate::validate::Placement;

/// Which parents a reconciler takes and where their children may live.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// For a cluster-scoped parent: the namespaces its children may live in.
    pub child_namespaces: Vec<String>,
    /// For a cluster-scoped parent: the labels of the other namespaces its children may live in.
    pub child_namespace_selector: Option<LabelSelector>,
    /// Decorator mode: only the parents this selects; `None`: every parent (the host owns the kind).
    pub parent_selector: Option<LabelSelector>,
    /// Only the namespaces this selects: the parents in them (a Namespace parent: itself) and, for a
    /// cluster-scoped parent, the namespaces its children may live in. `None`: every namespace.
    pub namespace_selector: Option<LabelSelector>,
}

/// How one Namespace fits a selection: whether children of cluster-scoped parents may live there by
/// its labels, and whether it is in the reconciler's scope. A change of either concerns parents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NamespaceFit {
    pub takes_children: bool,
    pub in_scope: bool,
}

/// Why a reconciler's parents or child namespaces cannot be as configured.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SelectionError {
    #[error(
        "parent kind {0} is cluster-scoped, and a namespaced reconciler (--namespace, or a Reconciler object) takes only namespaced parents: use a ClusterReconciler, or run without --namespace"
    )]
    ClusterParentInNamespace(Gvk),
    #[error(
        "parent kind {0} is cluster-scoped: say which namespaces its children may live in with --child-namespace NS (repeatable) or --child-namespace-selector LABELS"
    )]
    NoChildNamespaces(Gvk),
    #[error(
        "--child-namespace and --child-namespace-selector are for cluster-scoped parents; the children of {0} live in their parent's namespace"
    )]
    ChildNamespacesOfNamespacedParent(Gvk),
}

impl Selection {
    /// Checks the selection against the parent kind, once its scope is known.
    pub fn check(
        &self,
        parent: &Gvk,
        cluster_scoped: bool,
        namespace: Option<&str>,
    ) -> Result<(), SelectionError> {
        let unbounded = self.child_namespaces.is_empty() && self.child_namespace_selector.is_none();
        match (cluster_scoped, namespace, unbounded) {
            (true, Some(_), _) => Err(SelectionError::ClusterParentInNamespace(parent.clone())),
            (true, None, true) if !is_namespace(parent) => {
                Err(SelectionError::NoChildNamespaces(parent.clone()))
            }
            (false, _, false) => Err(SelectionError::ChildNamespacesOfNamespacedParent(
                parent.clone(),
            )),
            _ => Ok(()),
        }
    }

    /// Whether this reconciler decorates a kind it does not own (no status written there).
    pub fn decorates(&self) -> bool {
        self.parent_selector.is_some()
    }

    /// Whether some parents of the kind may not be this reconciler's (a parent or namespace selector).
    pub fn passes_over_some(&self) -> bool {
        self.parent_selector.is_some() || self.namespace_selector.is_some()
    }

    /// Whether `parent` is one this reconciler takes. `namespace` is the Namespace that bounds it (see
    /// [`Self::scope_of`]), from the cache; a parent whose Namespace is not there is out of scope.
    pub fn selects(&self, parent: &DynamicObject, namespace: Option<&DynamicObject>) -> bool {
        self.passed_over(parent, namespace).is_none()
    }

    /// The selector `parent` fails, named for the Event of its release; `None` if it is taken.
    pub fn passed_over(
        &self,
        parent: &DynamicObject,
        namespace: Option<&DynamicObject>,
    ) -> Option<String> {
        if let Some(selector) = &self.parent_selector
            && !selector.matches(parent.metadata.labels.as_ref())
        {
            return Some(format!("the parent selector `{selector}`"));
        }
        if let Some(selector) = &self.namespace_selector
            && self.scope_of(parent).is_some()
            && !namespace.is_some_and(|ns| self.in_scope(ns))
        {
            return Some(format!("the namespace selector `{selector}`"));
        }
        None
    }

    /// The name of the Namespace whose labels bound `parent` under the namespace selector: its own
    /// namespace, or itself for a Namespace; `None` for another cluster-scoped parent (its children's
    /// namespaces are bounded instead) or without a namespace selector.
    pub fn scope_of<'p>(&self, parent: &'p DynamicObject) -> Option<&'p str> {
        self.namespace_selector.as_ref()?;
        match &parent.metadata.namespace {
            Some(namespace) => Some(namespace),
            None if is_namespace_object(parent) => parent.metadata.name.as_deref(),
            None => None,
        }
    }

    /// Whether the host must watch Namespaces, to place children or to bound parents by their labels.
    pub fn watches_namespaces(&self) -> bool {
        self.child_namespace_selector.is_some() || self.namespace_selector.is_some()
    }

    /// Whether `namespace` matches `--child-namespace-selector` (false without one).
    pub fn selects_namespace(&self, namespace: &DynamicObject) -> bool {
        self.child_namespace_selector
            .as_ref()
            .is_some_and(|selector| selector.matches(namespace.metadata.labels.as_ref()))
    }

    /// Whether `namespace` is in scope: it matches the namespace selector (true without one).
    pub fn in_scope(&self, namespace: &DynamicObject) -> bool {
        self.namespace_selector
            .as_ref()
            .is_none_or(|selector| selector.matches(namespace.metadata.labels.as_ref()))
    }

    /// How `namespace` fits (a terminating one fits nothing: its parents and children are going).
    pub fn fit(&self, namespace: &DynamicObject) -> NamespaceFit {
        let live = namespace.metadata.deletion_timestamp.is_none();
        NamespaceFit {
            takes_children: live && self.selects_namespace(namespace),
            in_scope: live && self.namespace_selector.is_some() && self.in_scope(namespace),
        }
    }

    /// Where the children of `parent` may live; `namespaces` are the cluster's Namespaces (from the
    /// cache, empty unless [`Self::watches_namespaces`]).
    pub fn placement(
        &self,
        parent: &DynamicObject,
        namespaces: &[Arc<DynamicObject>],
    ) -> Placement {
        let name = parent.metadata.name.clone().unwrap_or_default();
        if let Some(namespace) = &parent.metadata.namespace {
            return Placement::ParentNamespace(namespace.clone());
        }
        let mut allowed: BTreeSet<String> = self.child_namespaces.iter().cloned().collect();
        let mut rules = Vec::new();
        if !self.child_namespaces.is_empty() {
            rules.push(format!(
                "--child-namespace {}",
                self.child_namespaces.join(", ")
            ));
        }
        if let Some(selector) = &self.child_namespace_selector {
            let labelled = namespaces
                .iter()
                .filter(|ns| self.selects_namespace(ns))
                .filter_map(|ns| ns.metadata.name.clone());
            allowed.extend(labelled);
            rules.push(format!("--child-namespace-selector {selector}"));
        }
        if rules.is_empty() {
            return Placement::ParentItself(name);
        }
        let mut rule = rules.join(" or ");
        if let Some(selector) = &self.namespace_selector {
            let in_scope: BTreeSet<&str> = (namespaces.iter())
                .filter(|ns| self.in_scope(ns))
                .filter_map(|ns| ns.metadata.name.as_deref())
                .collect();
            allowed.retain(|namespace| in_scope.contains(namespace.as_str()));
            rule = format!("({rule}) and --namespace-selector {selector}");
        }
        Placement::Allowed {
            namespaces: allowed,
            rule,
        }
    }
}

/// Whether `gvk` is the built-in `v1/Namespace`, whose objects are namespaces children can live in.
fn is_namespace(gvk: &Gvk) -> bool {
    gvk.group.is_empty() && gvk.version == "v1" && gvk.kind == "Namespace"
}

/// Whether `object` is a Namespace (by its type, which every cached object carries).
fn is_namespace_object(object: &DynamicObject) -> bool {
    (object.types.as_ref()).is_some_and(|t| t.api_version == "v1" && t.kind == "Namespace")
}

/// The key of a parent in health, backoff and logs: `namespace/name`, or `name` if cluster-scoped.
pub fn parent_key(parent: &DynamicObject) -> String {
    let name = parent.metadata.name.as_deref().unwrap_or_default();
    match &parent.metadata.namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn gvk(text: &str) -> Gvk {
        text.parse().unwrap()
    }

    #[test]
    fn a_cluster_scoped_parent_needs_child_namespaces_unless_it_is_a_namespace() {
        let none = Selection::default();
        let cluster = gvk("example.com/v1/Tenant");
        assert_eq!(
            none.check(&cluster, true, None),
            Err(SelectionError::NoChildNamespaces(cluster.clone()))
        );
        assert!(none.check(&gvk("v1/Namespace"), true, None).is_ok());
        let some = Selection {
            child_namespaces: vec!["team-a".into()],
            ..Selection::default()
        };
        assert!(some.check(&cluster, true, None).is_ok());
        let err = some.check(&cluster, true, Some("team-a")).unwrap_err();
        assert!(err.to_string().contains("ClusterReconciler"), "{err}");
        let namespaced = gvk("example.com/v1alpha1/MyApp");
        assert_eq!(
            some.check(&namespaced, false, None),
            Err(SelectionError::ChildNamespacesOfNamespacedParent(
                namespaced
            ))
        );
    }

    #[test]
    fn only_parents_with_the_labels_are_selected() {
        let parent = |labels: serde_json::Value| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "a", "labels": labels},
            }))
            .unwrap()
        };
        let decorator = Selection {
            parent_selector: Some("team".parse().unwrap()),
            ..Selection::default()
        };
        assert!(decorator.selects(&parent(serde_json::json!({"team": "x"})), None));
        assert!(!decorator.selects(&parent(serde_json::json!({})), None));
        assert!(Selection::default().selects(&parent(serde_json::json!({})), None));
        assert_eq!(parent_key(&parent(serde_json::json!({}))), "a");
    }

    fn namespace(name: &str, labels: serde_json::Value) -> Arc<DynamicObject> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": labels},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn the_namespace_selector_bounds_parents_by_their_namespace_and_a_namespace_by_itself() {
        let selection = Selection {
            namespace_selector: Some("team".parse().unwrap()),
            ..Selection::default()
        };
        let app = |ns: &str| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
                "metadata": {"name": "app", "namespace": ns},
            }))
            .unwrap()
        };
        let labelled = namespace("team-a", serde_json::json!({"team": "a"}));
        let plain = namespace("other", serde_json::json!({}));
        assert!(selection.selects(&app("team-a"), Some(&labelled)));
        assert_eq!(selection.scope_of(&app("other")), Some("other"));
        let passed = selection.passed_over(&app("other"), Some(&plain));
        assert_eq!(passed.as_deref(), Some("the namespace selector `team`"));
        // A namespace missing from the cache (deleted) takes no parent.
        assert!(!selection.selects(&app("gone"), None));
        // A Namespace parent is bounded by its own labels.
        assert_eq!(selection.scope_of(&labelled), Some("team-a"));
        assert!(selection.selects(&labelled, Some(&labelled)));
        assert!(!selection.selects(&plain, Some(&plain)));
        // Another cluster-scoped parent is not: its children's namespaces are.
        let tenant: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Tenant", "metadata": {"name": "t"},
        }))
        .unwrap();
        assert_eq!(selection.scope_of(&tenant), None);
        assert!(selection.selects(&tenant, None));
        // Without a namespace selector, nothing is bounded by namespace.
        assert_eq!(Selection::default().scope_of(&app("other")), None);
        assert!(Selection::default().selects(&app("other"), None));
    }

    #[test]
    fn a_namespace_fits_by_each_selector_and_not_at_all_while_terminating() {
        let selection = Selection {
            child_namespace_selector: Some("tenants".parse().unwrap()),
            namespace_selector: Some("team".parse().unwrap()),
            ..Selection::default()
        };
        let fit = |labels| selection.fit(&namespace("n", labels));
        let (yes, no) = (true, false);
        let both = NamespaceFit {
            takes_children: yes,
            in_scope: yes,
        };
        assert_eq!(fit(serde_json::json!({"tenants": "", "team": "a"})), both);
        assert_eq!(
            fit(serde_json::json!({"team": "a"})),
            NamespaceFit {
                takes_children: no,
                in_scope: yes
            }
        );
        assert_eq!(fit(serde_json::json!({})), NamespaceFit::default());
        let mut terminating =
            (*namespace("n", serde_json::json!({"tenants": "", "team": "a"}))).clone();
        terminating.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        assert_eq!(selection.fit(&terminating), NamespaceFit::default());
        // Without a namespace selector, no namespace is "in scope": its parents need no trigger.
        let children_only = Selection {
            child_namespace_selector: Some("tenants".parse().unwrap()),
            ..Selection::default()
        };
        let fit = children_only.fit(&namespace("n", serde_json::json!({"tenants": ""})));
        assert!(fit.takes_children && !fit.in_scope);
    }

    #[test]
    fn children_may_go_only_to_allowed_namespaces_the_namespace_selector_matches() {
        let cluster = [
            namespace("shared", serde_json::json!({})),
            namespace("team-x", serde_json::json!({"team": "x", "tenants": ""})),
            namespace("team-y", serde_json::json!({"tenants": ""})),
        ];
        let tenant = namespace("tenant-a", serde_json::json!({}));
        let selection = Selection {
            child_namespaces: vec!["shared".into()],
            child_namespace_selector: Some("tenants".parse().unwrap()),
            namespace_selector: Some("team".parse().unwrap()),
            ..Selection::default()
        };
        assert_eq!(
            selection.placement(&tenant, &cluster),
            Placement::Allowed {
                namespaces: ["team-x".to_string()].into(),
                rule: "(--child-namespace shared or --child-namespace-selector tenants) and --namespace-selector team".into(),
            }
        );
    }

    #[test]
    fn children_may_go_to_the_named_and_the_labelled_namespaces() {
        let tenant = namespace("tenant-a", serde_json::json!({}));
        let cluster = [
            namespace("team-x", serde_json::json!({"team": "x"})),
            namespace("kube-system", serde_json::json!({})),
        ];
        let selection = Selection {
            child_namespaces: vec!["shared".into()],
            child_namespace_selector: Some("team".parse().unwrap()),
            ..Selection::default()
        };
        assert_eq!(
            selection.placement(&tenant, &cluster),
            Placement::Allowed {
                namespaces: ["shared".to_string(), "team-x".to_string()].into(),
                rule: "--child-namespace shared or --child-namespace-selector team".into(),
            }
        );
        assert_eq!(
            Selection::default().placement(&tenant, &cluster),
            Placement::ParentItself("tenant-a".into())
        );
    }
}
