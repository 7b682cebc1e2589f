//! The live writes of single children: server-side apply of a child the parent controls (forced: the
//! host owns what the guest wants of it; for an adoption, only at the resourceVersion the decision
//! saw), and deletion of one the answer left out. What each write changed becomes an Event.

use std::borrow::Cow;
use std::fmt;

use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::super::context::Context;
use super::super::decide::ownership::Claim;
use super::super::decide::plan::Prune;
use super::super::error::ReconcileError;
use super::applied::AppliedChildren;
use crate::identity::MANAGER;
use crate::validate::Child;

/// What a reconcile changed, for the parent's Events.
#[derive(Debug, PartialEq)]
pub enum Change {
    Created(String),
    Updated(String),
    Deleted(String),
    /// Deleted to be created anew by its kind's update strategy (`Recreate`, `RollingRecreate`).
    Recreating(String),
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
            Change::Recreating(_) => "Recreating",
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
            Change::Recreating(child) => {
                write!(
                    f,
                    "deleted {child}, outdated, to create it anew (update strategy)"
                )
            }
            Change::Adopted(child) => {
                write!(
                    f,
                    "adopted {child}, which nothing controlled (--adopt-orphans)"
                )
            }
        }
    }
}

impl Context {
    /// Server-side applies `body` for `child` as `claim` allows: forced, and for an adoption only if
    /// the object is still at the resourceVersion the decision saw.
    pub async fn apply_child(
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

    /// Deletes each of `prunes` (with a UID precondition, so a child re-created by someone else in the
    /// meantime is left alone), and forgets what was applied to it.
    pub async fn prune(&self, prunes: &[Prune<'_>]) -> Result<Vec<Change>, ReconcileError> {
        let mut changes = Vec::new();
        for Prune {
            id,
            observed: stale,
            recreate,
        } in prunes
        {
            let namespace = stale
                .object
                .metadata
                .namespace
                .as_deref()
                .unwrap_or_default();
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
                Ok(_) if *recreate => changes.push(Change::Recreating(id.clone())),
                Ok(_) => changes.push(Change::Deleted(id.clone())),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(source) => {
                    return Err(ReconcileError::Prune {
                        child: id.clone(),
                        source,
                    });
                }
            }
        }
        Ok(changes)
    }
}

/// Whether the apply changed what the host asked for. Kinds with a `generation` bump it on spec changes
/// only, so a status update seen after the cache filled (another resourceVersion) is not reported as
/// an update; kinds without one fall back to the resourceVersion.
pub fn changed(before: &DynamicObject, after: &DynamicObject) -> bool {
    match (before.metadata.generation, after.metadata.generation) {
        (Some(before), Some(after)) => before != after,
        _ => before.metadata.resource_version != after.metadata.resource_version,
    }
}
