//! Applying the guest's answer: server-side apply of each desired child with the host's ownerReference
//! and label, then deletion of the owned children the answer left out.

use std::fmt;

use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::context::Context;
use super::error::{ReconcileError, name_of};
use super::observe::Observed;
use super::{MANAGED_BY_LABEL, MANAGER};
use crate::validate::Child;

/// What a reconcile changed, for the parent's Events.
#[derive(Debug, PartialEq)]
pub enum Change {
    Created(String),
    Updated(String),
    Deleted(String),
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Created(child) => write!(f, "created {child}"),
            Change::Updated(child) => write!(f, "updated {child}"),
            Change::Deleted(child) => write!(f, "deleted {child}"),
        }
    }
}

impl Context {
    /// Server-side applies every child (one field manager, forced: the host owns what the guest wants).
    pub async fn apply_children(
        &self,
        parent: &DynamicObject,
        children: &[Child],
        observed: &[Observed<'_>],
        namespace: &str,
    ) -> Result<Vec<Change>, ReconcileError> {
        let owner = owner_reference(parent)?;
        let params = PatchParams::apply(MANAGER).force();
        let mut changes = Vec::new();
        for child in children {
            let mut object = child.object.clone();
            let metadata = &mut object["metadata"];
            metadata["ownerReferences"] = json!([owner]);
            if !metadata["labels"].is_object() {
                metadata["labels"] = json!({});
            }
            metadata["labels"][MANAGED_BY_LABEL] = json!(MANAGER);

            let resolved = self
                .children
                .iter()
                .find(|c| c.kind.gvk == child.kind)
                .expect("validated children are of allow-listed kinds");
            let id = format!("{}/{}", child.kind.kind, child.name);
            let key = format!("{}/{namespace}/{}", child.kind, child.name);
            let before = observed
                .iter()
                .find(|o| o.kind.gvk == child.kind && o.name() == child.name);
            if self
                .applied
                .unchanged(&key, &object, before.map(|o| &*o.object))
            {
                self.metrics.child_apply("skipped");
                continue;
            }
            let applied = self
                .api(&resolved.kind, namespace)
                .patch(&child.name, &params, &Patch::Apply(&object))
                .await
                .map_err(|source| ReconcileError::Apply {
                    child: id.clone(),
                    source,
                })?;
            self.applied.record(&key, &object);
            self.metrics.child_apply("applied");
            match before {
                None => changes.push(Change::Created(id)),
                Some(o) if changed(&o.object, &applied) => changes.push(Change::Updated(id)),
                Some(_) => {}
            }
        }
        Ok(changes)
    }

    /// Deletes every owned child that is not among `desired` (with a UID precondition, so a child
    /// re-created by someone else in the meantime is left alone).
    pub async fn prune(
        &self,
        observed: &[Observed<'_>],
        desired: &[Child],
    ) -> Result<Vec<Change>, ReconcileError> {
        let mut changes = Vec::new();
        for stale in observed.iter().filter(|o| {
            !desired
                .iter()
                .any(|d| d.kind == o.kind.gvk && d.name == o.name())
        }) {
            let id = format!("{}/{}", stale.kind.gvk.kind, stale.name());
            let namespace = stale
                .object
                .metadata
                .namespace
                .as_deref()
                .unwrap_or_default();
            self.applied
                .forget(&format!("{}/{namespace}/{}", stale.kind.gvk, stale.name()));
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
fn owner_reference(parent: &DynamicObject) -> Result<Value, ReconcileError> {
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
