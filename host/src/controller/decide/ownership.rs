//! The ownership rule: a parent changes only objects it controls.
//!
//! A guest names its children, and a name is no boundary: it can name a Deployment a person made, or
//! the child of another parent. A forced server-side apply would take either over (the host's one
//! field manager rewrites the spec and the controller ownerReference), and deleting the new parent
//! would then garbage-collect it. So before anything of an answer is applied, the host finds out who
//! controls each desired child that the parent does not already own: the UID in the controller
//! ownerReference decides, never a label (a guest can put the managed-by label on anything it names).
//! What no cache holds is created create-only, so that an object made after the host looked is
//! refused like one made before, never taken over.

use kube::core::DynamicObject;

use super::super::error::ReconcileError;
use super::super::observe::children::Observed;
use super::super::observe::owner_index::controller_of;
use crate::validate::Child;

/// How a desired child may be written, once its owner is known.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// The parent controls it: apply (with force: the host owns what the guest wants of it).
    Apply,
    /// The caches hold no object of that name: create it, create-only (a POST fails if something of
    /// that name exists by then, which the executor then decides on with [`claim`]). Never an apply:
    /// an object a person creates after the host looked would be taken over.
    Create,
    /// It exists and nothing controls it, and the operator allowed adoption: apply only if it is still
    /// at this resourceVersion (a person changing it meanwhile stops the adoption).
    Adopt { resource_version: String },
}

/// The claim on an existing object of the child's kind and name (`id`, as conditions name it): `Apply`
/// if the parent with `parent_uid` controls it, `Adopt` if nothing does and the operator allowed it,
/// else the refusal of the whole answer.
pub fn claim(
    parent_uid: &str,
    id: &str,
    existing: &DynamicObject,
    adopt_orphans: bool,
) -> Result<Claim, ReconcileError> {
    match controller_of(existing) {
        Some(controller) if controller.uid == parent_uid => Ok(Claim::Apply),
        Some(controller) => Err(ReconcileError::ChildOwnedByOther {
            child: id.to_string(),
            controller: format!("{}/{}", controller.kind, controller.name),
            uid: controller.uid.clone(),
        }),
        None if adopt_orphans => Ok(Claim::Adopt {
            resource_version: existing
                .metadata
                .resource_version
                .clone()
                .unwrap_or_default(),
        }),
        None => Err(ReconcileError::ChildExists {
            child: id.to_string(),
        }),
    }
}

/// How conditions and Events name a child: `Kind/name`, or `Kind/namespace/name` when the parent is
/// cluster-scoped, since its children of one name may then live in several namespaces.
pub fn child_id(child: &Child, cluster_scoped: bool) -> String {
    id_of(
        &child.kind.kind,
        child.namespace(),
        &child.name,
        cluster_scoped,
    )
}

/// [`child_id`] of a child the parent already has.
pub fn observed_id(observed: &Observed<'_>, cluster_scoped: bool) -> String {
    let namespace = observed.object.metadata.namespace.as_deref();
    let namespace = namespace.unwrap_or_default();
    id_of(
        &observed.kind.gvk.kind,
        namespace,
        observed.name(),
        cluster_scoped,
    )
}

fn id_of(kind: &str, namespace: &str, name: &str, cluster_scoped: bool) -> String {
    crate::validate::child_id(kind, cluster_scoped.then_some(namespace), name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(owner_references: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "ns", "ownerReferences": owner_references},
        }))
        .unwrap()
    }

    #[test]
    fn only_a_controller_reference_controls() {
        let owner = |controller: bool| {
            json!([{"apiVersion": "example.com/v1alpha1", "kind": "MyApp", "name": "a",
                    "uid": "u-a", "controller": controller}])
        };
        assert_eq!(controller_of(&object(owner(true))).unwrap().uid, "u-a");
        assert!(
            controller_of(&object(owner(false))).is_none(),
            "a plain owner does not control"
        );
        assert!(controller_of(&object(json!([]))).is_none());
    }
}
