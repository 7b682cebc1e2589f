//! Writing the parent's status through the status subresource, only when it changed (and not again
//! while the cache has yet to show the host's own write: `written_status`). What it should be is the
//! decision's (`decide::status`).

use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::super::context::Context;
use super::super::decide::status::{Outcome, desired_status, status_of};
use super::super::error::{ReconcileError, name_of, uid_of};

impl Context {
    pub async fn write_status(
        &self,
        parent: &DynamicObject,
        outcome: Outcome<'_>,
    ) -> Result<(), ReconcileError> {
        // A decorated kind is not the host's: its status is left to its owner (see `selection`).
        if self.selection.decorates() {
            return Ok(());
        }
        let current = status_of(parent);
        let desired = desired_status(&current, parent.metadata.generation, outcome);
        if desired == current {
            self.metrics.status_write("unchanged");
            return Ok(());
        }
        let uid = uid_of(parent)?;
        let version = parent.metadata.resource_version.as_deref();
        if self.written_status.already_written(uid, version, &desired) {
            self.metrics.status_write("stale_cache");
            return Ok(());
        }
        // A merge patch that nulls the keys the new status drops: the guest's part is replaced, not merged.
        let mut patch = desired.clone();
        for key in current.keys() {
            patch.entry(key.clone()).or_insert(Value::Null);
        }
        let name = name_of(parent)?;
        self.parent_api(parent)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": patch })),
            )
            .await
            .map_err(ReconcileError::Parent)?;
        self.written_status.record(uid, version, &desired);
        self.metrics.status_write("written");
        Ok(())
    }
}
