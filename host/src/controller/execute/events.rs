//! Events on the parent: what a reconcile changed, why it failed, a release, a shadow verdict.

use kube::Resource;
use kube::core::DynamicObject;
use kube::runtime::events::{Event, EventType};

use super::super::context::Context;

impl Context {
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
