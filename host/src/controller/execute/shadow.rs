//! Running the shadow module: after the active answer is applied, the candidate is called with the same
//! request in a task of its own, and its verdict (`decide::shadow`) becomes a metric, an Event per
//! change of verdict and a log line.

use std::sync::Arc;

use kube::core::DynamicObject;
use kube::runtime::events::EventType;
use serde_json::Value;

use super::super::context::Context;
use super::super::decide::shadow::{Verdict, verdict_of};
use crate::guest::{Module, Request};
use crate::text::truncate;

impl Context {
    /// Calls the candidate, if there is one, on `request` in the background and reports how its answer
    /// compares with the active one (`active`, from `comparable`).
    pub fn compare_in_shadow(
        self: &Arc<Self>,
        parent: &Arc<DynamicObject>,
        key: &str,
        request: Request,
        active: Value,
    ) {
        let Some(candidate) = self.shadow.module() else {
            return;
        };
        let (ctx, parent, key) = (self.clone(), parent.clone(), key.to_string());
        tokio::spawn(async move {
            let Some(_permit) = ctx.shadow.permit().await else {
                return;
            };
            let placement = ctx.placement(&parent);
            let (module, tag) = (candidate.clone(), key.clone());
            let answer = tokio::task::spawn_blocking(move || module.call(&tag, &request)).await;
            let (verdict, diff) = verdict_of(answer.ok(), &placement, &ctx.rules, &active);
            ctx.report_shadow(&parent, &key, &candidate, verdict, diff)
                .await;
        });
    }

    async fn report_shadow(
        &self,
        parent: &DynamicObject,
        key: &str,
        candidate: &Module,
        verdict: Verdict,
        diff: String,
    ) {
        let live = self.parents.len();
        let (changed, [agrees, differs, failing]) =
            self.shadow
                .record(key, verdict.clone(), live, |key| self.parent_exists(key));
        self.metrics.shadow_parents(agrees, differs, failing);
        let digest = candidate.short_digest();
        let (reason, note) = match &verdict {
            Verdict::Agrees => return,
            Verdict::Differs(pointer) => (
                "ShadowDiffers",
                format!("shadow module {digest} answers differently, first at {pointer}"),
            ),
            Verdict::Failing(why) => (
                "ShadowFailed",
                format!("shadow module {digest} gave no usable answer: {why}"),
            ),
        };
        tracing::info!(parent = %key, shadow = digest, ?verdict, diff = %truncate(diff, 2000), "shadow module disagrees");
        // One Event per change of verdict, not one per reconcile.
        if changed {
            self.publish(parent, EventType::Normal, reason, note).await;
        }
    }
}
