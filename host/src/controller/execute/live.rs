//! The live executor: carries a [`Plan`] out against the API server. Creations first (create-only,
//! with the 409 path that decides on the object found), forced server-side applies of the rest
//! (skipped where the same body was applied to the same object: `applied`), UID-preconditioned
//! deletions, then the Events and the status in one concurrent round; the finalizer last. What only
//! this side can meet (the API server refusing a write, a name taken between the decision and the
//! create) is decided here.

use kube::core::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use super::super::context::Context;
use super::super::decide::ownership::Claim;
use super::super::decide::plan::Plan;
use super::super::decide::status::Outcome;
use super::super::decide::update::{STOPPED, children_updated};
use super::super::error::{ReconcileError, uid_of};
use super::applied::AppliedChildren;
use super::apply::{Change, changed};

/// What writing a plan's children did.
#[derive(Default)]
struct Applied {
    /// The creations, spec updates and adoptions to report as Events.
    changes: Vec<Change>,
    /// Whether any apply changed a stored object (a label counts; a spec update is also a change).
    wrote: bool,
}

impl Context {
    /// Carries out `plan` for `parent`, whose answer came from the module with `module_digest`: the
    /// writes, the deletions, then the Events and the status. The finalizer and the requeue are
    /// [`Context::finish`]'s, after the shadow comparison.
    pub async fn carry_out(
        &self,
        parent: &DynamicObject,
        plan: &Plan<'_>,
        module_digest: &str,
    ) -> Result<(), ReconcileError> {
        let applied = self.write_children(parent, plan).await?;
        let mut changes = applied.changes;
        changes.extend(self.prune(&plan.prunes).await?);
        let children_written = applied.wrote || !changes.is_empty();
        // The Events and the status are independent writes: one round trip, not two, per reconcile.
        let children_updated = children_updated(&plan.progress);
        let events = async {
            for change in &changes {
                let note = change.to_string();
                self.publish(parent, EventType::Normal, change.reason(), note)
                    .await;
            }
            // A stopped update is told on every reconcile that finds it stopped (the recorder folds
            // repeats into one Event series), so a decorated parent, which has no status, hears too.
            if let Some(stopped) = (children_updated.as_ref()).filter(|c| c.reason == STOPPED) {
                let note = stopped.message.clone();
                self.publish(parent, EventType::Warning, stopped.reason, note)
                    .await;
            }
        };
        let status = async {
            let Some(status) = &plan.status else {
                return Ok(());
            };
            let reconciled = Outcome::Reconciled {
                guest_status: status.guest_status.as_ref(),
                module_digest,
                children: plan.children.len(),
                children_written,
                children_updated: children_updated.clone(),
            };
            self.write_status(parent, reconciled).await
        };
        let ((), status) = futures::join!(events, status);
        status
    }

    /// The end of a carried-out plan: the finalizer removed if the plan says so, and when to come back.
    pub async fn finish(
        &self,
        parent: &DynamicObject,
        plan: &Plan<'_>,
    ) -> Result<Action, ReconcileError> {
        if let Some(finalizer) = &plan.remove_finalizer {
            self.remove_finalizer(parent, finalizer).await?;
        }
        Ok(match plan.requeue {
            Some(after) => Action::requeue(after),
            None => Action::await_change(),
        })
    }

    /// Writes every child of `plan`, in its order (creations first).
    async fn write_children(
        &self,
        parent: &DynamicObject,
        plan: &Plan<'_>,
    ) -> Result<Applied, ReconcileError> {
        let parent_uid = uid_of(parent)?;
        let mut result = Applied::default();
        for write in &plan.writes {
            let child = plan.child(write);
            let key = AppliedChildren::key(&child.kind, child.namespace(), &child.name);
            let mut before = write.observed.as_deref();
            if let Some(before) = before {
                self.take_pending_fields(child, before).await?;
            }
            if self.applied.unchanged(&key, &write.body, before) {
                self.metrics.child_apply("skipped");
                continue;
            }
            let (claim, applied, found) = match &write.claim {
                Claim::Create => {
                    let created = self.create_child(parent_uid, child, &write.body).await?;
                    (created.claim, created.object, created.found)
                }
                claim => {
                    let applied = self.apply_child(child, &write.body, claim).await?;
                    (claim.clone(), applied, None)
                }
            };
            before = before.or(found.as_ref());
            self.applied.record(&key, &write.body);
            self.metrics.child_apply("applied");
            result.wrote |= before
                .is_none_or(|o| o.metadata.resource_version != applied.metadata.resource_version);
            let id = write.id.clone();
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
}
