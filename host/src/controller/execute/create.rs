//! Creating a child that no cache holds, create-only.
//!
//! A forced server-side apply of a name nobody seemed to use takes over whatever a person created
//! there after the host looked. So such a child is POSTed: the API server refuses it if the name is
//! taken (`AlreadyExists`), and the host then decides on the object found as the ownership rule
//! says. A POST records its fields under an `Update` entry of the host's field manager, which a
//! later apply (operation `Apply`) would not remove when the module drops a field; so the entry is
//! then turned into the host's `Apply` entry, as client-go's `csaupgrade` does for kubectl.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};

use super::super::context::Context;
use super::super::decide::ownership::{Claim, claim};
use super::super::error::ReconcileError;
use super::super::observe::sync::pending_update;
use crate::identity::MANAGER;
use crate::validate::Child;

/// What a create-only write of one child came to.
pub struct Created {
    /// The object found instead when the name was taken and this parent may write it.
    pub found: Option<DynamicObject>,
    /// How it was then written (`Apply` or `Adopt`); `Create` when the POST made it.
    pub claim: Claim,
    pub object: DynamicObject,
}

impl Context {
    /// POSTs `body` for `child`; on `AlreadyExists`, decides on the object found
    /// ([`Context::claim_existing`], the ownership rule of the decision) and, if the parent may write it, applies `body` as that claim
    /// says. A refusal (`ChildOwnedByOther`, `ChildExists`) is the same as for a cached object.
    pub async fn create_child(
        &self,
        parent_uid: &str,
        child: &Child,
        body: &Value,
    ) -> Result<Created, ReconcileError> {
        let id = self.child_id(child);
        let api = self.api(&self.child_kind(child).kind, child.namespace());
        let failed = |source| ReconcileError::Create {
            child: id.clone(),
            source,
        };
        let object: DynamicObject =
            serde_json::from_value(body.clone()).map_err(|e| failed(kube::Error::SerdeError(e)))?;
        pause_before_create(child).await;
        let params = PostParams {
            field_manager: Some(MANAGER.into()),
            ..PostParams::default()
        };
        let conflict = match api.create(&params, &object).await {
            Ok(created) => {
                self.take_fields(&api, &id, created.clone()).await?;
                return Ok(Created {
                    found: None,
                    claim: Claim::Create,
                    object: created,
                });
            }
            Err(kube::Error::Api(status)) if status.is_already_exists() => kube::Error::Api(status),
            Err(source) => return Err(failed(source)),
        };
        let Some((claim, found)) = self.claim_existing(parent_uid, child).await? else {
            // Gone again since the POST: the reconcile fails and its retry creates it.
            return Err(failed(conflict));
        };
        // A child this parent created earlier may still carry the POST's entry.
        self.take_fields(&api, &id, found.clone()).await?;
        let object = self.apply_child(child, body, &claim).await?;
        Ok(Created {
            found: Some(found),
            claim,
            object,
        })
    }

    /// After a create-only write of `child` found the name taken (409 `AlreadyExists`): the object
    /// now there, and the claim on it as for a cached one (`Apply` if this parent controls it, e.g. a
    /// child the cache has not seen yet). `None` if it is gone again.
    pub async fn claim_existing(
        &self,
        parent_uid: &str,
        child: &Child,
    ) -> Result<Option<(Claim, DynamicObject)>, ReconcileError> {
        let existing = self
            .api(&self.child_kind(child).kind, child.namespace())
            .get_opt(&child.name)
            .await
            .map_err(|source| ReconcileError::Lookup {
                child: self.child_id(child),
                source,
            })?;
        let id = self.child_id(child);
        match existing {
            Some(object) => Ok(Some((
                claim(parent_uid, &id, &object, self.adopt_orphans)?,
                object,
            ))),
            None => Ok(None),
        }
    }

    /// Turns the host's `Update` entry of `object`'s managedFields into its `Apply` entry, so that
    /// the host's applies own (and may remove) what its POST wrote. The patch tests the entries it
    /// changes; if they moved meanwhile (another writer's entry sorted before it), it is recomputed
    /// from a fresh read, a few times. A child still carrying the entry after that keeps it in the
    /// cache (`sync::as_cached`), and its next reconcile, which the change that moved it causes,
    /// tries again.
    pub async fn take_fields(
        &self,
        api: &Api<DynamicObject>,
        id: &str,
        mut object: DynamicObject,
    ) -> Result<(), ReconcileError> {
        let name = object.metadata.name.clone().unwrap_or_default();
        let params = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..PatchParams::default()
        };
        let failed = |source| ReconcileError::Apply {
            child: id.to_owned(),
            source,
        };
        for _ in 0..3 {
            let Some(patch) = fields_patch(&object) else {
                return Ok(());
            };
            match api.patch(&name, &params, &Patch::Json::<()>(patch)).await {
                Ok(_) => {
                    self.metrics.child_apply("fields_taken");
                    return Ok(());
                }
                // A `test` failed (422) or the object changed under the patch (409): read it again.
                Err(kube::Error::Api(status)) if status.code == 422 || status.is_conflict() => {
                    match api.get_opt(&name).await.map_err(failed)? {
                        Some(fresh) => object = fresh,
                        None => return Ok(()),
                    }
                }
                Err(source) => return Err(failed(source)),
            }
        }
        tracing::debug!(
            child = id,
            "managedFields still moving; the next reconcile retries"
        );
        Ok(())
    }

    /// For an observed child whose cached entry shows the host's `Update` entry still pending: read it
    /// (the cache keeps no fields) and take its fields.
    pub async fn take_pending_fields(
        &self,
        child: &Child,
        observed: &DynamicObject,
    ) -> Result<(), ReconcileError> {
        if !pending_update(observed) {
            return Ok(());
        }
        let id = self.child_id(child);
        let api = self.api(&self.child_kind(child).kind, child.namespace());
        let fresh = api
            .get_opt(&child.name)
            .await
            .map_err(|source| ReconcileError::Lookup {
                child: id.clone(),
                source,
            })?;
        match fresh {
            Some(fresh) => self.take_fields(&api, &id, fresh).await,
            None => Ok(()),
        }
    }
}

/// Whether `entry` is the host's `Update` entry of the object itself (not of a subresource).
fn is_update_of_host(entry: &Value) -> bool {
    entry["manager"] == MANAGER
        && entry["operation"] == "Update"
        && entry["subresource"].as_str().unwrap_or_default().is_empty()
}

/// The JSON Patch that moves the host's `Update` entry to its `Apply` entry, or `None` if there is
/// none to move. With no `Apply` entry yet (after a POST), the entry's operation becomes `Apply`;
/// with one (an apply came first), its fields join the `Apply` entry's and it goes. Each entry
/// touched is `test`ed first, so a patch computed from a stale read fails instead of clobbering.
pub fn fields_patch(object: &DynamicObject) -> Option<json_patch::Patch> {
    let entries = serde_json::to_value(object.metadata.managed_fields.as_ref()?).ok()?;
    let entries = entries.as_array()?;
    let update = entries.iter().position(is_update_of_host)?;
    let path = |i: usize, field: &str| format!("/metadata/managedFields/{i}/{field}");
    let test = |i: usize, field: &str| json!({"op": "test", "path": path(i, field), "value": entries[i][field]});
    let apply = entries
        .iter()
        .position(|e| e["manager"] == MANAGER && e["operation"] == "Apply");
    let mut ops = vec![
        test(update, "manager"),
        test(update, "operation"),
        test(update, "apiVersion"),
    ];
    match apply {
        None => {
            ops.push(json!({"op": "replace", "path": path(update, "operation"), "value": "Apply"}))
        }
        // Fields of another version would need converting: left as they are.
        Some(apply) if entries[apply]["apiVersion"] != entries[update]["apiVersion"] => {
            return None;
        }
        Some(apply) => {
            let mut fields = entries[apply]["fieldsV1"].clone();
            union(&mut fields, &entries[update]["fieldsV1"]);
            ops.extend([
                test(update, "fieldsV1"),
                test(apply, "manager"),
                test(apply, "operation"),
                test(apply, "fieldsV1"),
                json!({"op": "replace", "path": path(apply, "fieldsV1"), "value": fields}),
                json!({"op": "remove", "path": format!("/metadata/managedFields/{update}")}),
            ]);
        }
    }
    serde_json::from_value(Value::Array(ops)).ok()
}

/// Adds the field set `other` to `fields` (both `fieldsV1` tries: objects whose leaves are `{}`).
fn union(fields: &mut Value, other: &Value) {
    let (Some(fields), Some(other)) = (fields.as_object_mut(), other.as_object()) else {
        return;
    };
    for (key, value) in other {
        union(
            fields
                .entry(key)
                .or_insert_with(|| Value::Object(Map::new())),
            value,
        );
    }
}

/// Test-only: with `RECONCILE_HOST_TEST_PAUSE_BEFORE_CREATE=<dir>`, each create-only write first
/// writes `<dir>/<namespace>.<name>.paused` and waits until `<dir>/<namespace>.<name>.release`
/// exists, so that an end-to-end test can create an object of the child's name exactly between the
/// host's cache read and its write (`e2e_controller/ownership.rs`). Read once; unset (always, outside tests) it
/// costs one check of a static.
async fn pause_before_create(child: &Child) {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        std::env::var_os("RECONCILE_HOST_TEST_PAUSE_BEFORE_CREATE").map(PathBuf::from)
    });
    let Some(dir) = dir else {
        return;
    };
    let stem = format!("{}.{}", child.namespace(), child.name);
    let marker: &Path = &dir.join(format!("{stem}.paused"));
    if let Err(e) = std::fs::write(marker, b"") {
        tracing::warn!(error = %e, "test pause: cannot write the marker");
        return;
    }
    let release = dir.join(format!("{stem}.release"));
    while !release.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(entries: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "ns", "managedFields": entries},
        }))
        .unwrap()
    }

    fn entry(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": "v1",
               "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    fn patched(object: &DynamicObject) -> Value {
        let mut value = serde_json::to_value(object).unwrap();
        json_patch::patch(&mut value, &fields_patch(object).unwrap()).unwrap();
        value["metadata"]["managedFields"].clone()
    }

    #[test]
    fn a_posted_entry_becomes_the_hosts_apply_entry() {
        let fields = json!({"f:data": {"f:a": {}}});
        let posted = object(json!([
            entry(
                "kube-controller-manager",
                "Update",
                json!({"f:data": {"f:b": {}}})
            ),
            entry(MANAGER, "Update", fields.clone()),
        ]));
        let after = patched(&posted);
        assert_eq!(after[1]["operation"], "Apply");
        assert_eq!(after[1]["fieldsV1"], fields);
        assert_eq!(after[0]["manager"], "kube-controller-manager");
        assert!(fields_patch(&object(json!([entry(MANAGER, "Apply", fields)]))).is_none());
    }

    #[test]
    fn with_an_apply_entry_the_fields_join_it() {
        let both = object(json!([
            entry(MANAGER, "Apply", json!({"f:data": {"f:a": {}}})),
            entry(
                MANAGER,
                "Update",
                json!({"f:data": {"f:b": {}}, "f:metadata": {}})
            ),
        ]));
        let after = patched(&both);
        assert_eq!(after.as_array().unwrap().len(), 1);
        assert_eq!(
            after[0]["fieldsV1"],
            json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {}})
        );
    }

    #[test]
    fn a_patch_from_a_stale_read_fails() {
        let stale = object(json!([entry(MANAGER, "Update", json!({}))]));
        let moved = object(json!([
            entry("other", "Update", json!({})),
            entry(MANAGER, "Update", json!({})),
        ]));
        let mut value = serde_json::to_value(&moved).unwrap();
        assert!(json_patch::patch(&mut value, &fields_patch(&stale).unwrap()).is_err());
    }
}
