//! The host's finalizer: added to live parents, removed once the guest answers `finalized` for a parent
//! being deleted (when: `decide::start`, `decide::plan`). JSON patches with a `test` op, so a concurrent edit of the list is never clobbered.

use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::json;

use super::super::context::Context;
use super::super::error::{ReconcileError, name_of};

impl Context {
    pub async fn add_finalizer(
        &self,
        parent: &DynamicObject,
        finalizer: &str,
    ) -> Result<(), ReconcileError> {
        let ops = match &parent.metadata.finalizers {
            None => json!([{"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}]),
            Some(_) => json!([{"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}]),
        };
        self.patch_parent(parent, ops).await
    }

    pub async fn remove_finalizer(
        &self,
        parent: &DynamicObject,
        finalizer: &str,
    ) -> Result<(), ReconcileError> {
        let Some(index) = parent
            .metadata
            .finalizers
            .iter()
            .flatten()
            .position(|f| f == finalizer)
        else {
            return Ok(());
        };
        let path = format!("/metadata/finalizers/{index}");
        let ops = json!([{"op": "test", "path": path, "value": finalizer}, {"op": "remove", "path": path}]);
        self.patch_parent(parent, ops).await
    }

    async fn patch_parent(
        &self,
        parent: &DynamicObject,
        ops: serde_json::Value,
    ) -> Result<(), ReconcileError> {
        let patch: json_patch::Patch = serde_json::from_value(ops).expect("well-formed JSON patch");
        let name = name_of(parent)?;
        self.parent_api(parent)
            .patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
            .await
            .map_err(ReconcileError::Parent)?;
        Ok(())
    }
}
