//! Observed children, read from the reflector caches (found through their owner index): no GET, and
//! no scan of the cache, per reconcile. Which caches: a parent the reconciler selects sees its own
//! children and the legacy ones (no reconciler named yet); a parent it releases, only its own
//! (`Context::observe`, `Context::observe_own`).

use std::sync::Arc;

use kube::core::DynamicObject;

use super::kinds::{ChildKind, ResolvedKind};
use super::owner_index::controller_uid;
use crate::validate::Child;

/// A child the parent owns (controller ownerReference) as the cache last saw it.
#[derive(Clone, Debug)]
pub struct Observed<'a> {
    pub kind: &'a ResolvedKind,
    pub object: Arc<DynamicObject>,
}

impl Observed<'_> {
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or_default()
    }

    /// Whether this is the object `child` names.
    pub fn is(&self, child: &Child) -> bool {
        self.kind.gvk == child.kind
            && self.name() == child.name
            && self.object.metadata.namespace.as_deref() == Some(child.namespace())
    }
}

/// The observed children that no desired child names: what applying `desired` would delete.
pub fn left_out<'o, 'a>(
    observed: &'o [Observed<'a>],
    desired: &'o [Child],
) -> impl Iterator<Item = &'o Observed<'a>> {
    observed
        .iter()
        .filter(|o| !desired.iter().any(|child| o.is(child)))
}

/// Which caches of a child kind a reconcile reads.
#[derive(Clone, Copy, PartialEq)]
pub enum Caches {
    Own,
    OwnAndLegacy,
}

/// The children of the parent with `uid` in `which` caches of each kind (see `Context::observe`).
pub fn observe_children<'a>(
    children: &'a [ChildKind],
    namespace: Option<&str>,
    uid: &str,
    which: Caches,
) -> Vec<Observed<'a>> {
    let mut observed: Vec<Observed<'a>> = Vec::new();
    for child in children {
        let caches = child.caches();
        let caches = match which {
            Caches::Own => &caches[..1],
            Caches::OwnAndLegacy => &caches[..],
        };
        let first = observed.len();
        for cache in caches {
            let owned = cache.owned.owned(uid, |child_namespace, name| {
                cache
                    .get(&child.kind, child_namespace, name)
                    .filter(|obj| controlled_by(obj, namespace, uid))
            });
            for object in owned {
                // A legacy child the host just named is in the own cache as soon as its watch says
                // so, and in the legacy one until that watch says it left: the own copy counts.
                let key = (&object.metadata.namespace, &object.metadata.name);
                let seen = observed[first..]
                    .iter()
                    .any(|o| (&o.object.metadata.namespace, &o.object.metadata.name) == key);
                if !seen {
                    observed.push(Observed {
                        kind: &child.kind,
                        object,
                    });
                }
            }
        }
    }
    observed
}

/// Whether the controller ownerReference of `object` is the parent with `uid`, and `object` is in the
/// parent's `namespace` (any namespace for a cluster-scoped parent: `None`).
pub fn controlled_by(object: &DynamicObject, namespace: Option<&str>, uid: &str) -> bool {
    namespace.is_none_or(|namespace| object.metadata.namespace.as_deref() == Some(namespace))
        && controls(object, uid)
}

/// Whether the controller ownerReference of `object` is the parent with `uid`.
fn controls(object: &DynamicObject, uid: &str) -> bool {
    controller_uid(object) == Some(uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ApiResource;
    use kube::runtime::watcher;
    use serde_json::json;

    use crate::identity::{MANAGED_BY_LABEL, MANAGER, RECONCILER_LABEL};

    fn child(name: &str, controller: &str, reconciler: Option<&str>) -> DynamicObject {
        let mut labels = json!({ MANAGED_BY_LABEL: MANAGER });
        if let Some(reconciler) = reconciler {
            labels[RECONCILER_LABEL] = json!(reconciler);
        }
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "labels": labels, "ownerReferences": [
                {"apiVersion": "v1", "kind": "Namespace", "name": "ns",
                 "uid": controller, "controller": true}]},
        }))
        .unwrap()
    }

    /// A child kind whose own cache holds `own` and legacy cache `legacy`, as the watches with the
    /// identity's selectors would fill them.
    fn kind_with(own: &[DynamicObject], legacy: &[DynamicObject]) -> ChildKind {
        let kind = ResolvedKind {
            gvk: "v1/ConfigMap".parse().unwrap(),
            resource: ApiResource::erase::<ConfigMap>(&()),
        };
        let (child, writers) = ChildKind::new(kind);
        for ((writer, objects), cache) in writers.into_iter().zip([own, legacy]).zip(child.caches())
        {
            let mut writer = writer;
            for object in objects {
                writer.apply_watcher_event(&watcher::Event::Apply(object.clone()));
                cache.owned.insert(object);
            }
        }
        child
    }

    fn names(observed: &[Observed<'_>]) -> Vec<String> {
        let mut names: Vec<_> = observed.iter().map(|o| o.name().to_string()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_release_sees_only_its_own_children_and_a_selected_parent_its_legacy_ones_too() {
        let kinds = [kind_with(
            &[child("own", "p", Some("c.mine"))],
            &[
                child("legacy", "p", None),
                child("of-another-parent", "q", None),
            ],
        )];
        let release = observe_children(&kinds, None, "p", Caches::Own);
        assert_eq!(
            names(&release),
            ["own"],
            "a release would delete a legacy child"
        );
        let reconcile = observe_children(&kinds, None, "p", Caches::OwnAndLegacy);
        assert_eq!(names(&reconcile), ["legacy", "own"]);
        assert!(observe_children(&kinds, None, "q", Caches::Own).is_empty());
    }

    #[test]
    fn a_child_in_both_caches_while_it_is_named_is_observed_once_as_named() {
        let kinds = [kind_with(
            &[child("moving", "p", Some("c.mine"))],
            &[child("moving", "p", None)],
        )];
        let observed = observe_children(&kinds, None, "p", Caches::OwnAndLegacy);
        assert_eq!(names(&observed), ["moving"]);
        let labels = observed[0].object.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[RECONCILER_LABEL], "c.mine");
    }
}
