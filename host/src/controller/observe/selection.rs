//! Which parents a reconciler takes and where their children may live: cluster-scoped parents (a
//! cluster-scoped CRD, or Namespaces) whose children go to the namespaces the operator allowed by name
//! or by label (the latter read from a Namespace cache the driver fills), and
//! decorators (`--parent-selector`), which take only the parents of a kind they do not own that carry
//! a label.
//!
//! A decorator watches every parent of its kind and matches the selector here, rather than passing it
//! to the watch: the API server's filtered watch turns "stopped matching" into a delete event, after
//! which the parent is gone from the cache (nothing left to call the guest with) and, across a restart,
//! the parent is never seen again while its children stay forever. Unfiltered, a parent whose label
//! went is still in the cache: the reconciler sees it, finalizes it and deletes what it controls.

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

    /// Whether `parent` is one this reconciler takes.
    pub fn selects(&self, parent: &DynamicObject) -> bool {
        self.parent_selector
            .as_ref()
            .is_none_or(|selector| selector.matches(parent.metadata.labels.as_ref()))
    }

    /// Whether the host must watch Namespaces to place children (`--child-namespace-selector`).
    pub fn watches_namespaces(&self) -> bool {
        self.child_namespace_selector.is_some()
    }

    /// Whether `namespace` matches `--child-namespace-selector` (false without one).
    pub fn selects_namespace(&self, namespace: &DynamicObject) -> bool {
        self.child_namespace_selector
            .as_ref()
            .is_some_and(|selector| selector.matches(namespace.metadata.labels.as_ref()))
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
        match rules.is_empty() {
            true => Placement::ParentItself(name),
            false => Placement::Allowed {
                namespaces: allowed,
                rule: rules.join(" or "),
            },
        }
    }
}

/// Whether `gvk` is the built-in `v1/Namespace`, whose objects are namespaces children can live in.
fn is_namespace(gvk: &Gvk) -> bool {
    gvk.group.is_empty() && gvk.version == "v1" && gvk.kind == "Namespace"
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
        assert!(decorator.selects(&parent(serde_json::json!({"team": "x"}))));
        assert!(!decorator.selects(&parent(serde_json::json!({}))));
        assert!(Selection::default().selects(&parent(serde_json::json!({}))));
        assert_eq!(parent_key(&parent(serde_json::json!({}))), "a");
    }

    #[test]
    fn children_may_go_to_the_named_and_the_labelled_namespaces() {
        let namespace = |name: &str, labels: serde_json::Value| -> Arc<DynamicObject> {
            Arc::new(
                serde_json::from_value(serde_json::json!({
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "labels": labels},
                }))
                .unwrap(),
            )
        };
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
