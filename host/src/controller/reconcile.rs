//! One reconcile: observe, call the guest, validate, apply and prune, write the status, requeue.
//! A failure anywhere before apply applies nothing and prunes nothing: the last good state stays.

use std::sync::Arc;

use kube::Resource;
use kube::core::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};

use super::context::Context;
use super::error::{ReconcileError, uid_of};
use super::finalizer::has_finalizer;
use super::selection::parent_key;
use super::shadow::comparable;
use super::status::Outcome;
use crate::guest::{Answer, Module, Request};
use crate::validate::validate_in;

pub async fn reconcile(
    parent: Arc<DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let key = parent_key(&parent);
    let _timer = ctx.metrics.reconcile_started();
    let result = reconcile_inner(&parent, &key, &ctx).await;
    ctx.metrics.reconcile_finished(match &result {
        Ok(action) if action == &Action::await_change() => "success",
        Ok(_) => "requeue_after",
        Err(_) => "error",
    });
    ctx.health
        .parent_result(&key, result.as_ref().err().map(|e| e.reason()));
    match &result {
        Ok(_) => ctx.backoff.reset(&key),
        Err(e) => {
            tracing::warn!(parent = %key, reason = e.reason(), error = %e, "reconcile failed");
            ctx.publish(&parent, EventType::Warning, e.reason(), e.to_string())
                .await;
            let failed = Outcome::Failed {
                reason: e.reason(),
                message: e.to_string(),
            };
            if let Err(status_error) = ctx.write_status(&parent, failed).await {
                tracing::warn!(parent = %key, error = %status_error, "cannot report the failure in the status");
            }
        }
    }
    result
}

async fn reconcile_inner(
    parent: &Arc<DynamicObject>,
    key: &str,
    ctx: &Arc<Context>,
) -> Result<Action, ReconcileError> {
    if !ctx.selection.selects(parent) {
        return ctx.release(parent, key).await;
    }
    let deleting = parent.metadata.deletion_timestamp.is_some();
    let finalizing = match &ctx.finalizer {
        Some(finalizer) if deleting => has_finalizer(parent, finalizer),
        Some(finalizer) if !has_finalizer(parent, finalizer) => {
            // The update this causes triggers the next reconcile.
            ctx.add_finalizer(parent, finalizer).await?;
            return Ok(Action::await_change());
        }
        _ => false,
    };
    if deleting && !finalizing {
        // Garbage collection removes the children through their ownerReferences.
        return Ok(Action::await_change());
    }

    let uid = uid_of(parent)?;
    // The module that selects the related objects is the one that answers, and the one the status
    // names, even if a hot swap lands meanwhile.
    let module = ctx.module();
    let observed = ctx.observe(parent.metadata.namespace.as_deref(), uid);
    let request = ctx
        .request_with_related(parent, key, &observed, finalizing, &module)
        .await?;
    let shadow_request = ctx.shadow.module().map(|_| request.clone());
    let answer = ctx.call_guest(key, module.clone(), request).await?;
    let children = validate_in(&answer, &ctx.placement(parent), &ctx.rules)?;

    let applied = ctx.apply_children(parent, &children, &observed).await?;
    let mut changes = applied.changes;
    changes.extend(ctx.prune(&observed, &children).await?);
    let reconciled = Outcome::Reconciled {
        guest_status: answer.status.as_ref(),
        module_digest: module.digest(),
        children: children.len(),
        children_written: applied.wrote || !changes.is_empty(),
    };
    // The Events and the status are independent writes: one round trip, not two, per reconcile.
    let events = async {
        for change in &changes {
            let note = change.to_string();
            ctx.publish(parent, EventType::Normal, change.reason(), note)
                .await;
        }
    };
    let ((), status) = futures::join!(events, ctx.write_status(parent, reconciled));
    status?;
    if let Some(request) = shadow_request {
        ctx.compare_in_shadow(parent, key, request, comparable(&children, &answer));
    }

    if let Some(finalizer) = ctx
        .finalizer
        .as_ref()
        .filter(|_| finalizing && answer.finalized)
    {
        ctx.remove_finalizer(parent, finalizer).await?;
    }
    Ok(match answer.requeue_after {
        Some(after) => Action::requeue(after),
        None => Action::await_change(),
    })
}

pub fn error_policy(
    parent: Arc<DynamicObject>,
    _error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    Action::requeue(ctx.backoff.next_delay(&parent_key(&parent)))
}

impl Context {
    /// Calls `module` for the parent `key` and returns its answer.
    pub async fn call_guest(
        &self,
        key: &str,
        module: Arc<Module>,
        request: Request,
    ) -> Result<Answer, ReconcileError> {
        let tag = key.to_string();
        // Guest calls are CPU-bound and may run up to their deadline: keep them off the async workers.
        let (answer, took) = tokio::task::spawn_blocking(move || {
            let start = std::time::Instant::now();
            (module.call(&tag, &request), start.elapsed())
        })
        .await?;
        self.metrics
            .guest_call(took, answer.as_ref().err().map(|e| e.reason()));
        Ok(answer?)
    }

    /// Publishes an Event on the parent; a failure to do so is logged, never fatal.
    pub async fn publish(
        &self,
        parent: &DynamicObject,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        let reference = parent.object_ref(&self.parent.resource);
        if let Err(e) = self.recorder.publish(&event, &reference).await {
            tracing::warn!(error = %e, "cannot publish event");
        }
    }
}
