//! Applying the guest's answer: the ownership rule first (`ownership`), then server-side apply of each
//! desired child the parent controls and a create-only write (`create`) of each one no cache holds,
//! with the host's ownerReference and labels (its reconciler's identity among them), then deletion of
//! the owned children the answer left out.

use std::borrow::Cow;
use std::fmt;

use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::applied::AppliedChildren;
use super::context::Context;
use super::error::{ReconcileError, name_of};
use super::observe::{Observed, left_out};
use super::ownership::Claim;
use crate::identity::{
    Identity, MANAGED_BY_LABEL, MANAGER, RECONCILER_ANNOTATION, RECONCILER_LABEL,
};
use crate::validate::Child;

/// What a reconcile changed, for the parent's Events.
#[derive(Debug, PartialEq)]
pub enum Change {
    Created(String),
    Updated(String),
    Deleted(String),
    /// An object nothing controlled, taken over with `--adopt-orphans`.
    Adopted(String),
}

impl Change {
    /// The reason of the parent's Event.
    pub fn reason(&self) -> &'static str {
        match self {
            Change::Created(_) => "Created",
            Change::Updated(_) => "Updated",
            Change::Deleted(_) => "Deleted",
            Change::Adopted(_) => "Adopted",
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Created(child) => write!(f, "created {child}"),
            Change::Updated(child) => write!(f, "updated {child}"),
            Change::Deleted(child) => write!(f, "deleted {child}"),
            Change::Adopted(child) => {
                write!(
                    f,
                    "adopted {child}, which nothing controlled (--adopt-orphans)"
                )
            }
        }
    }
}

/// What applying an answer's children did.
#[derive(Default)]
pub struct Applied {
    /// The creations, spec updates and adoptions to report as Events.
    pub changes: Vec<Change>,
    /// Whether any apply changed a stored object (a label counts; a spec update is also a change).
    pub wrote: bool,
}

impl Context {
    /// Writes every child, after the ownership rule passed for all of them as the caches show them:
    /// server-side apply (one field manager, forced: the host owns what the guest wants of the
    /// objects its parent controls) of the children the parent controls, create-only writes of those
    /// no cache holds (`create`). The creations go first, so that one refused on a name taken
    /// meanwhile leaves the children the parent had as they were.
    pub async fn apply_children(
        &self,
        parent: &DynamicObject,
        children: &[Child],
        observed: &[Observed<'_>],
    ) -> Result<Applied, ReconcileError> {
        let owner = owner_reference(parent)?;
        let parent_uid = owner["uid"].as_str().unwrap_or_default();
        let claims = self.claim_children(parent_uid, children, observed)?;
        let mut order: Vec<_> = children.iter().zip(claims).collect();
        order.sort_by_key(|(_, claim)| *claim != Claim::Create);
        let mut result = Applied::default();
        for (child, claim) in order {
            let object = apply_body(&owner, child, &self.identity);
            let id = self.child_id(child);
            let namespace = child.namespace();
            let key = AppliedChildren::key(&child.kind, namespace, &child.name);
            let mut before = observed.iter().find(|o| o.is(child)).map(|o| &*o.object);
            if let Some(before) = before {
                self.take_pending_fields(child, before).await?;
            }
            if self.applied.unchanged(&key, &object, before) {
                self.metrics.child_apply("skipped");
                continue;
            }
            let (claim, applied, found) = match claim {
                Claim::Create => {
                    let created = self.create_child(parent_uid, child, &object).await?;
                    (created.claim, created.object, created.found)
                }
                claim => {
                    let applied = self.apply_child(child, &object, &claim).await?;
                    (claim, applied, None)
                }
            };
            before = before.or(found.as_ref());
            self.applied.record(&key, &object);
            self.metrics.child_apply("applied");
            result.wrote |= before
                .is_none_or(|o| o.metadata.resource_version != applied.metadata.resource_version);
            let changes = &mut result.changes;
            match (before, claim) {
                (_, Claim::Adopt { .. }) => changes.push(Change::Adopted(id)),
                (_, Claim::Create) => changes.push(Change::Created(id)),
                (None, Claim::Apply) => changes.push(Change::Created(id)),
                (Some(o), Claim::Apply) if changed(o, &applied) => {
                    changes.push(Change::Updated(id))
                }
                (Some(_), Claim::Apply) => {}
            }
        }
        Ok(result)
    }

    /// Server-side applies `body` for `child` as `claim` allows: forced, and for an adoption only if
    /// the object is still at the resourceVersion the decision saw.
    pub(super) async fn apply_child(
        &self,
        child: &Child,
        body: &Value,
        claim: &Claim,
    ) -> Result<DynamicObject, ReconcileError> {
        let mut body = Cow::Borrowed(body);
        if let Claim::Adopt { resource_version } = claim {
            // A precondition: a person changing the object meanwhile makes the apply fail.
            body.to_mut()["metadata"]["resourceVersion"] = json!(resource_version);
        }
        self.api(&self.child_kind(child).kind, child.namespace())
            .patch(
                &child.name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&*body),
            )
            .await
            .map_err(|source| ReconcileError::Apply {
                child: self.child_id(child),
                source,
            })
    }

    /// Deletes every owned child that is not among `desired` (with a UID precondition, so a child
    /// re-created by someone else in the meantime is left alone).
    pub async fn prune(
        &self,
        observed: &[Observed<'_>],
        desired: &[Child],
    ) -> Result<Vec<Change>, ReconcileError> {
        let mut changes = Vec::new();
        for stale in left_out(observed, desired) {
            let namespace = stale
                .object
                .metadata
                .namespace
                .as_deref()
                .unwrap_or_default();
            let id = self.observed_id(stale);
            self.applied.forget(&AppliedChildren::key(
                &stale.kind.gvk,
                namespace,
                stale.name(),
            ));
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: stale.object.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            match self
                .api(stale.kind, namespace)
                .delete(stale.name(), &params)
                .await
            {
                Ok(_) => changes.push(Change::Deleted(id)),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(source) => return Err(ReconcileError::Prune { child: id, source }),
            }
        }
        Ok(changes)
    }
}

/// What the host applies for `child`: the guest's object with the parent as controller, the
/// managed-by label and the label naming its reconciler `identity` (labels only scope the caches;
/// they grant nothing), and the reconciler's full name where the label had to shorten it.
pub fn apply_body(owner: &Value, child: &Child, identity: &Identity) -> Value {
    let mut object = child.object.clone();
    let metadata = &mut object["metadata"];
    metadata["ownerReferences"] = json!([owner]);
    if !metadata["labels"].is_object() {
        metadata["labels"] = json!({});
    }
    metadata["labels"][MANAGED_BY_LABEL] = json!(MANAGER);
    metadata["labels"][RECONCILER_LABEL] = json!(identity.label());
    if identity.shortened() {
        if !metadata["annotations"].is_object() {
            metadata["annotations"] = json!({});
        }
        metadata["annotations"][RECONCILER_ANNOTATION] = json!(identity.name());
    }
    object
}

/// Whether the apply changed what the host asked for. Kinds with a `generation` bump it on spec changes
/// only, so a status update seen after the cache filled (another resourceVersion) is not reported as
/// an update; kinds without one fall back to the resourceVersion.
fn changed(before: &DynamicObject, after: &DynamicObject) -> bool {
    match (before.metadata.generation, after.metadata.generation) {
        (Some(before), Some(after)) => before != after,
        _ => before.metadata.resource_version != after.metadata.resource_version,
    }
}

/// The controller ownerReference, so that garbage collection removes children with their parent.
pub fn owner_reference(parent: &DynamicObject) -> Result<Value, ReconcileError> {
    let types = parent
        .types
        .as_ref()
        .ok_or(ReconcileError::MissingMetadata("apiVersion/kind"))?;
    Ok(json!({
        "apiVersion": types.api_version,
        "kind": types.kind,
        "name": name_of(parent)?,
        "uid": parent.metadata.uid.as_ref().ok_or(ReconcileError::MissingMetadata("uid"))?,
        "controller": true,
        "blockOwnerDeletion": true,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(labels: Value) -> Child {
        Child {
            kind: "v1/ConfigMap".parse().unwrap(),
            name: "c".into(),
            object: json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "c", "namespace": "ns", "labels": labels}}),
        }
    }

    #[test]
    fn every_child_names_its_reconciler_whatever_the_guest_wrote() {
        let owner = json!({"uid": "u"});
        let forged = child(json!({RECONCILER_LABEL: "c.another", "app": "x"}));
        let body = apply_body(&owner, &forged, &Identity::cluster_reconciler("mine"));
        let labels = &body["metadata"]["labels"];
        assert_eq!(labels[RECONCILER_LABEL], "c.mine");
        assert_eq!(labels[MANAGED_BY_LABEL], MANAGER);
        assert_eq!(labels["app"], "x");
        assert!(body["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_shortened_identity_is_written_in_full_as_an_annotation() {
        let identity = Identity::reconciler("team-a", &"long-name.".repeat(20));
        assert!(identity.shortened());
        let body = apply_body(&json!({"uid": "u"}), &child(json!(null)), &identity);
        let metadata = &body["metadata"];
        assert_eq!(metadata["labels"][RECONCILER_LABEL], identity.label());
        assert_eq!(
            metadata["annotations"][RECONCILER_ANNOTATION],
            identity.name()
        );
    }
}
