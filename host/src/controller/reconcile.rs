//! One reconcile, the stage runner: observe (`observe`), call the guest (`request`), decide
//! (`decide`: what comes first, then the plan of the answer), execute (`execute::live`: writes,
//! deletions, Events and the status), then the shadow comparison, the finalizer and the requeue.
//! A refused answer applies nothing and prunes nothing: the last good state stays.

use std::sync::Arc;

use kube::core::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use super::claim::{Claimed, RECORD, merge_listed, now_us};
use super::context::Context;
use super::decide::plan::plan;
use super::decide::shadow::comparable;
use super::decide::start::{Start, start};
use super::decide::status::Outcome;
use super::error::{ReconcileError, uid_of};
use super::observe::selection::parent_key;

/// Reconciles `parent` within the fence's current tenure: should the Lease lapse meanwhile, nothing
/// of it is written, even once the Lease is won back (the parent may be another member's by then).
pub async fn reconcile(
    parent: Arc<DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let fence = ctx.fence.clone();
    fence.within_tenure(reconcile_in_tenure(parent, ctx)).await
}

async fn reconcile_in_tenure(
    parent: Arc<DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    // A standby (or a leader past its renew deadline) holds its reconciles: the leader runs them, and
    // this replica runs them all once it leads (`reconciler::builder`).
    if !ctx.fence.admits_writes() {
        return Ok(Action::await_change());
    }
    let key = parent_key(&parent);
    // A sharded reconciler's parent may be another member's, or handed over now (`claim`).
    let (parent, fresh, list_children) = match ctx.claim(parent).await {
        Ok(Claimed::Own {
            parent,
            fresh,
            list_children,
        }) => (parent, fresh, list_children),
        Ok(Claimed::Done) => return Ok(Action::await_change()),
        Err(e) if e.parent_gone() => return Ok(Action::await_change()),
        Err(e) if !ctx.fence.admits_writes() => {
            tracing::debug!(parent = %key, error = %e, "claim cut short: this replica stepped down");
            return Ok(Action::await_change());
        }
        Err(e) => {
            tracing::debug!(parent = %key, error = %e, "claiming the parent; retried");
            return Err(e);
        }
    };
    let _timer = ctx.metrics.reconcile_started();
    let started = now_us();
    let result = match reconcile_inner(&parent, &key, list_children, &ctx).await {
        Err(e) if e.parent_gone() => {
            tracing::debug!(parent = %key, "the parent is gone: nothing left to reconcile");
            Ok(Action::await_change())
        }
        result => result,
    };
    // Every reconcile that ran is on the record, one cut short too: what proves no overlap.
    if let Some(member) = &ctx.shard {
        tracing::debug!(target: RECORD, parent = %key, member = %member.name, start_us = started, end_us = now_us(), "reconciled");
    }
    if result.is_err() && !ctx.fence.admits_writes() {
        // The Lease was lost during the reconcile and its writes refused: not the parent's failure,
        // and nothing to report with writes that would be refused too.
        tracing::debug!(parent = %key, "reconcile cut short: this replica stepped down");
        return Ok(Action::await_change());
    }
    if let (Some(member), Some(tenure), Ok(_)) = (&ctx.shard, fresh, &result) {
        member.verified(uid_of(&parent)?, tenure);
    }
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

/// Reconciles `parent`; `listed`: with its children listed from the API server too (`claim`).
async fn reconcile_inner(
    parent: &Arc<DynamicObject>,
    key: &str,
    listed: bool,
    ctx: &Arc<Context>,
) -> Result<Action, ReconcileError> {
    // Observe and decide what comes first.
    let selects = ctx.selects(parent);
    let finalizing = match start(parent, selects, ctx.finalizer.as_deref()) {
        Start::Release => return ctx.release(parent, key).await,
        Start::AddFinalizer(finalizer) => {
            // The update this causes triggers the next reconcile.
            ctx.add_finalizer(parent, finalizer).await?;
            return Ok(Action::await_change());
        }
        // Garbage collection removes the children through their ownerReferences.
        Start::AwaitGarbageCollection => return Ok(Action::await_change()),
        Start::Call { finalizing } => finalizing,
    };
    let uid = uid_of(parent)?;
    // The module that selects the related objects is the one that answers, and the one the status
    // names, even if a hot swap lands meanwhile.
    let module = ctx.module();
    let mut observed = ctx.observe(parent.metadata.namespace.as_deref(), uid);
    if listed {
        observed = merge_listed(observed, ctx.observe_listed(parent, uid).await?);
    }

    // The guest.
    let request = ctx
        .request_with_related(parent, key, &observed, finalizing, &module)
        .await?;
    let shadow_request = ctx.shadow.module().map(|_| request.clone());
    let answer = ctx.call_guest(key, module.clone(), request).await?;

    // Decide, execute, status.
    let rules = ctx.host_rules(parent);
    let plan = plan(parent, &observed, &answer, finalizing, &rules, |c| {
        ctx.cached(c)
    })?;
    ctx.carry_out(parent, &plan, module.digest()).await?;
    if let Some(request) = shadow_request {
        ctx.compare_in_shadow(parent, key, request, comparable(&plan.children, &answer));
    }
    ctx.finish(parent, &plan).await
}

pub fn error_policy(
    parent: Arc<DynamicObject>,
    _error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    Action::requeue(ctx.backoff.next_delay(&parent_key(&parent)))
}
