//! The parent's status: the guest's part, plus the host's `observedGeneration`, `moduleDigest` and
//! `Ready` condition, written through the status subresource only when it changed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};

use super::context::Context;
use super::error::{ReconcileError, name_of};

/// The condition type the host owns.
pub const READY: &str = "Ready";
/// The `.status` keys the host writes beside the guest's part (and the `Ready` condition).
pub const HOST_STATUS_KEYS: [&str; 2] = ["observedGeneration", "moduleDigest"];

/// How the reconcile ended, as far as the status is concerned.
pub enum Outcome<'a> {
    /// The answer was applied. `guest_status: None` leaves the guest's part as it is.
    Reconciled {
        guest_status: Option<&'a Map<String, Value>>,
        /// The module that produced this answer.
        module_digest: &'a str,
        message: String,
    },
    Failed {
        reason: &'static str,
        message: String,
    },
}

impl Context {
    pub async fn write_status(
        &self,
        parent: &DynamicObject,
        namespace: &str,
        outcome: Outcome<'_>,
    ) -> Result<(), ReconcileError> {
        let current = status_of(parent);
        let desired = desired_status(&current, parent.metadata.generation, outcome);
        if desired == current {
            return Ok(());
        }
        // A merge patch that nulls the keys the new status drops: the guest's part is replaced, not merged.
        let mut patch = desired.clone();
        for key in current.keys() {
            patch.entry(key.clone()).or_insert(Value::Null);
        }
        let name = name_of(parent)?;
        self.api(&self.parent, namespace)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": patch })),
            )
            .await
            .map_err(ReconcileError::Parent)?;
        Ok(())
    }
}

/// The parent's `.status` as it is (empty if it has none).
pub fn status_of(parent: &DynamicObject) -> Map<String, Value> {
    parent
        .data
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The whole new `.status`, computed from the current one so that an unchanged status costs no write.
fn desired_status(
    current: &Map<String, Value>,
    generation: Option<i64>,
    outcome: Outcome<'_>,
) -> Map<String, Value> {
    let (mut status, ready, reason, message) = match outcome {
        Outcome::Reconciled {
            guest_status,
            module_digest,
            message,
        } => {
            let mut status = guest_status.cloned().unwrap_or_else(|| current.clone());
            if let Some(generation) = generation {
                status.insert("observedGeneration".into(), json!(generation));
            }
            status.insert("moduleDigest".into(), json!(module_digest));
            (status, "True", "Reconciled", message)
        }
        Outcome::Failed { reason, message } => (current.clone(), "False", reason, message),
    };
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let previous = current
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == READY));
    let transition = match previous {
        Some(p) if p["status"] == ready => p["lastTransitionTime"].clone(),
        _ => serde_json::to_value(Time(k8s_openapi::jiff::Timestamp::now())).unwrap_or(Value::Null),
    };
    let condition = json!({
        "type": READY,
        "status": ready,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": transition,
    });
    conditions.retain(|c| c["type"] != READY);
    conditions.push(condition);
    status.insert("conditions".into(), Value::Array(conditions));
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reconciled(status: Option<&Map<String, Value>>) -> Outcome<'_> {
        Outcome::Reconciled {
            guest_status: status,
            module_digest: "sha256:abc",
            message: "ok".into(),
        }
    }

    #[test]
    fn guest_status_replaces_its_part_and_host_fields_are_added() {
        let current = json!({"phase": "Created", "stale": 1})
            .as_object()
            .unwrap()
            .clone();
        let guest = json!({"phase": "Ready"}).as_object().unwrap().clone();
        let status = desired_status(&current, Some(3), reconciled(Some(&guest)));
        assert_eq!(status["phase"], "Ready");
        assert!(!status.contains_key("stale"));
        assert_eq!(status["observedGeneration"], 3);
        assert_eq!(status["moduleDigest"], "sha256:abc");
        assert_eq!(status["conditions"][0]["status"], "True");
    }

    #[test]
    fn no_guest_status_keeps_the_current_one() {
        let current = json!({"phase": "Created"}).as_object().unwrap().clone();
        let status = desired_status(&current, Some(1), reconciled(None));
        assert_eq!(status["phase"], "Created");
    }

    #[test]
    fn the_same_outcome_twice_gives_the_same_status() {
        let guest = json!({"phase": "Ready"}).as_object().unwrap().clone();
        let first = desired_status(&Map::new(), Some(1), reconciled(Some(&guest)));
        let second = desired_status(&first, Some(1), reconciled(Some(&guest)));
        assert_eq!(
            first, second,
            "an unchanged outcome must not cost a status write"
        );
    }

    #[test]
    fn failure_keeps_the_guest_part_and_flips_ready() {
        let guest = json!({"phase": "Ready"}).as_object().unwrap().clone();
        let ok = desired_status(&Map::new(), Some(1), reconciled(Some(&guest)));
        let failed = desired_status(
            &ok,
            Some(2),
            Outcome::Failed {
                reason: "GuestRejected",
                message: "spec.replicas must not be negative".into(),
            },
        );
        assert_eq!(failed["phase"], "Ready");
        assert_eq!(
            failed["observedGeneration"], 1,
            "a failed generation is not observed"
        );
        let ready = &failed["conditions"][0];
        assert_eq!(ready["status"], "False");
        assert_eq!(ready["reason"], "GuestRejected");
        assert_eq!(ready["observedGeneration"], 2);
    }
}
