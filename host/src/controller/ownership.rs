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

use super::context::{ChildKind, Context};
use super::error::ReconcileError;
use super::observe::Observed;
use crate::validate::Child;

/// How a desired child may be written, once its owner is known.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// The parent controls it: apply (with force: the host owns what the guest wants of it).
    Apply,
    /// The caches hold no object of that name: create it, create-only (a POST fails if something of
    /// that name exists by then, which [`Context::claim_existing`] then decides on). Never an apply:
    /// an object a person creates after the host looked would be taken over.
    Create,
    /// It exists and nothing controls it, and the operator allowed adoption: apply only if it is still
    /// at this resourceVersion (a person changing it meanwhile stops the adoption).
    Adopt { resource_version: String },
}

impl Context {
    /// The claim on each of `children` (same order), or the refusal of the whole answer: a child
    /// controlled by something else (`ChildOwnedByOther`), or by nothing without `--adopt-orphans`
    /// (`ChildExists`). Children the parent owns (`observed`) are applied; the others are looked up in
    /// their kind's cache (which holds only labelled objects) and, if it holds none, created
    /// create-only: no GET, whose answer would be stale by the time of the write.
    pub fn claim_children(
        &self,
        parent_uid: &str,
        children: &[Child],
        observed: &[Observed<'_>],
    ) -> Result<Vec<Claim>, ReconcileError> {
        let mut claims = Vec::with_capacity(children.len());
        for child in children {
            if observed.iter().any(|o| o.is(child)) {
                claims.push(Claim::Apply);
                continue;
            }
            let kind = self.child_kind(child);
            claims.push(match kind.cached(child.namespace(), &child.name) {
                Some(object) => self.claim(parent_uid, child, &object)?,
                None => Claim::Create,
            });
        }
        Ok(claims)
    }

    /// After a create-only write of `child` found the name taken (409 `AlreadyExists`): the object
    /// now there, and the claim on it as for a cached one (`Apply` if this parent controls it, e.g. a
    /// child the cache has not seen yet). `None` if it is gone again.
    pub async fn claim_existing(
        &self,
        parent_uid: &str,
        child: &Child,
    ) -> Result<Option<(Claim, DynamicObject)>, ReconcileError> {
        let existing = self
            .api(&self.child_kind(child).kind, child.namespace())
            .get_opt(&child.name)
            .await
            .map_err(|source| ReconcileError::Lookup {
                child: self.child_id(child),
                source,
            })?;
        match existing {
            Some(object) => Ok(Some((self.claim(parent_uid, child, &object)?, object))),
            None => Ok(None),
        }
    }

    /// The claim on an existing object of the child's kind and name.
    fn claim(
        &self,
        parent_uid: &str,
        child: &Child,
        existing: &DynamicObject,
    ) -> Result<Claim, ReconcileError> {
        match controller_of(existing) {
            Some(controller) if controller.uid == parent_uid => Ok(Claim::Apply),
            Some(controller) => Err(ReconcileError::ChildOwnedByOther {
                child: self.child_id(child),
                controller: format!("{}/{}", controller.kind, controller.name),
                uid: controller.uid.clone(),
            }),
            None if self.adopt_orphans => Ok(Claim::Adopt {
                resource_version: existing
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap_or_default(),
            }),
            None => Err(ReconcileError::ChildExists {
                child: self.child_id(child),
            }),
        }
    }

    /// How conditions and Events name a child: `Kind/name`, or `Kind/namespace/name` when the parent is
    /// cluster-scoped, since its children of one name may then live in several namespaces.
    pub fn child_id(&self, child: &Child) -> String {
        self.id_of(&child.kind.kind, child.namespace(), &child.name)
    }

    /// [`Context::child_id`] of a child the parent already has.
    pub fn observed_id(&self, observed: &Observed<'_>) -> String {
        let namespace = observed.object.metadata.namespace.as_deref();
        self.id_of(
            &observed.kind.gvk.kind,
            namespace.unwrap_or_default(),
            observed.name(),
        )
    }

    fn id_of(&self, kind: &str, namespace: &str, name: &str) -> String {
        crate::validate::child_id(kind, self.cluster_scoped.then_some(namespace), name)
    }

    /// The allow-listed kind of a validated child.
    pub fn child_kind(&self, child: &Child) -> &ChildKind {
        self.children
            .iter()
            .find(|c| c.kind.gvk == child.kind)
            .expect("validated children are of allow-listed kinds")
    }
}

/// The controller ownerReference of an object, if it has one.
pub(super) fn controller_of(
    object: &DynamicObject,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
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
