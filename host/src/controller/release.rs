//! The release stage runner. A decorated parent that stops matching `--parent-selector` (its label
//! removed), or a parent whose Namespace stops matching `--namespace-selector`: the guest gets a finalize call (`finalizing: true`), then the host deletes every child
//! the parent controls that carries this reconciler's identity, and its finalizer, as Metacontroller's
//! DecoratorController does. Garbage collection cannot do this: the parent still exists.
//!
//! A parent that matches nothing and controls nothing costs no guest call and no write, so the parents
//! a decorator does not take (most Namespaces of a cluster) stay cheap. What to do is decided in
//! `decide::start`; this file runs it.

use std::sync::Arc;

use kube::core::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use super::context::Context;
use super::decide::start::{Released, held, release_calls_guest, released};
use super::error::{ReconcileError, uid_of};

impl Context {
    /// Releases `parent`, which a selector no longer takes: finalize, then delete what it controls.
    pub async fn release(
        &self,
        parent: &Arc<DynamicObject>,
        key: &str,
    ) -> Result<Action, ReconcileError> {
        let uid = uid_of(parent)?;
        // Only children that carry this reconciler's identity: a legacy child of a parent it does
        // not select may belong to another reconciler of the kind, which selects that parent.
        let observed = self.observe_own(parent.metadata.namespace.as_deref(), uid);
        let finalizer = held(parent, self.finalizer.as_deref());
        if !release_calls_guest(&observed, finalizer) {
            return Ok(Action::await_change());
        }
        let module = self.module();
        let request = self
            .request_with_related(parent, key, &observed, true, &module)
            .await?;
        let answer = self.call_guest(key, module, request).await?;
        let (prunes, remove_finalizer) =
            match released(&answer, &observed, finalizer, self.cluster_scoped) {
                Released::Again(after) => return Ok(Action::requeue(after)),
                Released::Done {
                    prunes,
                    remove_finalizer,
                } => (prunes, remove_finalizer),
            };
        let deleted = self.prune(&prunes).await?;
        let selector = self
            .passed_over(parent)
            .unwrap_or_else(|| "its selector".into());
        let note = format!(
            "no longer matches {selector}: finalized by the module, {} children deleted",
            deleted.len()
        );
        self.publish(parent, EventType::Normal, "Released", note)
            .await;
        if let Some(finalizer) = remove_finalizer {
            self.remove_finalizer(parent, &finalizer).await?;
        }
        Ok(Action::await_change())
    }
}
