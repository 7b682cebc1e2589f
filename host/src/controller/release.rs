//! A decorated parent that stops matching `--parent-selector` (its label removed): the guest gets a
//! finalize call (`finalizing: true`), then the host deletes every child the parent controls that
//! carries this reconciler's identity, and its finalizer, as Metacontroller's DecoratorController
//! does. Garbage collection cannot do this: the parent still exists.
//!
//! A parent that matches nothing and controls nothing costs no guest call and no write, so the parents
//! a decorator does not take (most Namespaces of a cluster) stay cheap.

use std::sync::Arc;
use std::time::Duration;

use kube::core::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use super::context::Context;
use super::error::{ReconcileError, uid_of};
use super::finalizer::has_finalizer;

/// When a guest is not done finalizing and names no time of its own, ask it again after this.
const FINALIZE_AGAIN: Duration = Duration::from_secs(10);

impl Context {
    /// Releases `parent`, which the selector no longer takes: finalize, then delete what it controls.
    pub async fn release(
        &self,
        parent: &Arc<DynamicObject>,
        key: &str,
    ) -> Result<Action, ReconcileError> {
        let uid = uid_of(parent)?;
        // Only children that carry this reconciler's identity: a legacy child of a parent it does
        // not select may belong to another reconciler of the kind, which selects that parent.
        let observed = self.observe_own(parent.metadata.namespace.as_deref(), uid);
        let finalizer = self
            .finalizer
            .as_deref()
            .filter(|finalizer| has_finalizer(parent, finalizer));
        if observed.is_empty() && finalizer.is_none() {
            return Ok(Action::await_change());
        }
        let module = self.module();
        let request = self
            .request_with_related(parent, key, &observed, true, &module)
            .await?;
        let answer = self.call_guest(key, module, request).await?;
        if !answer.finalized {
            return Ok(Action::requeue(
                answer.requeue_after.unwrap_or(FINALIZE_AGAIN),
            ));
        }
        let deleted = self.prune(&observed, &[]).await?;
        let selector = self.selection.parent_selector.as_ref();
        let note = format!(
            "no longer matches the parent selector `{}`: finalized by the module, {} children deleted",
            selector.map(ToString::to_string).unwrap_or_default(),
            deleted.len()
        );
        self.publish(parent, EventType::Normal, "Released", note)
            .await;
        if let Some(finalizer) = finalizer {
            self.remove_finalizer(parent, finalizer).await?;
        }
        Ok(Action::await_change())
    }
}
