//! The parent's desired status: the guest's part, plus the host's `observedGeneration`, `moduleDigest`,
//! `Ready` condition and, where a child kind rolls its updates, `ChildrenUpdated` condition. The executor writes it through the status subresource only when it changed
//! (`execute::status`).
//!
//! `moduleDigest` names the module whose answer brought the parent to its state. An answer that changes
//! nothing (no child written, the same guest status) leaves it, so that a swap to a module that answers
//! the same costs a parent no write at all: which module *serves* is the host's to say
//! (`reconcile_host_active_module`, the `Reconciler` status), not every parent's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};

/// The condition type the host owns.
pub const READY: &str = "Ready";
/// The condition the host writes on parents with a rolling update strategy (see `decide::update`).
pub const CHILDREN_UPDATED: &str = "ChildrenUpdated";
/// Every condition type the host writes: the rest of `.status.conditions` is the guest's.
const HOST_CONDITIONS: [&str; 2] = [READY, CHILDREN_UPDATED];

/// A condition the host sets: its status, reason and message.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCondition {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}
/// The `.status` keys the host writes beside the guest's part (and the `Ready` condition).
pub const HOST_STATUS_KEYS: [&str; 2] = ["observedGeneration", "moduleDigest"];

/// How the reconcile ended, as far as the status is concerned.
pub enum Outcome<'a> {
    /// The answer was applied. `guest_status: None` leaves the guest's part as it is.
    Reconciled {
        guest_status: Option<&'a Map<String, Value>>,
        /// The module that produced this answer.
        module_digest: &'a str,
        /// How many children the answer holds.
        children: usize,
        /// Whether applying the answer wrote any child (created, changed or deleted one).
        children_written: bool,
        /// The `ChildrenUpdated` condition (`None`: the parent has no rolling child kind).
        children_updated: Option<HostCondition>,
    },
    Failed {
        reason: &'static str,
        message: String,
    },
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
pub fn desired_status(
    current: &Map<String, Value>,
    generation: Option<i64>,
    outcome: Outcome<'_>,
) -> Map<String, Value> {
    let (mut status, ready, children_updated) = match outcome {
        Outcome::Reconciled {
            guest_status,
            module_digest,
            children,
            children_written,
            children_updated,
        } => {
            let mut status = guest_status.cloned().unwrap_or_else(|| current.clone());
            let same_answer = !children_written && guest_part(&status) == guest_part(current);
            let digest = match current.get("moduleDigest").and_then(Value::as_str) {
                Some(previous) if same_answer => previous.to_string(),
                _ => module_digest.to_string(),
            };
            if let Some(generation) = generation {
                status.insert("observedGeneration".into(), json!(generation));
            }
            let short = digest
                .trim_start_matches("sha256:")
                .get(..12)
                .unwrap_or(&digest);
            let message = format!("{children} children applied by module {short}");
            status.insert("moduleDigest".into(), json!(digest));
            let ready = HostCondition {
                status: "True",
                reason: "Reconciled",
                message,
            };
            (status, ready, Some(children_updated))
        }
        Outcome::Failed { reason, message } => {
            let ready = HostCondition {
                status: "False",
                reason,
                message,
            };
            // A failed reconcile knows nothing new of the children: their condition stays.
            (current.clone(), ready, None)
        }
    };
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    set_condition(&mut conditions, current, generation, READY, Some(ready));
    if let Some(children_updated) = children_updated {
        set_condition(
            &mut conditions,
            current,
            generation,
            CHILDREN_UPDATED,
            children_updated,
        );
    }
    status.insert("conditions".into(), Value::Array(conditions));
    status
}

/// Puts the host's condition `type_` in `conditions` (`None`: takes it out), keeping its last
/// transition time from `current` while its status stays.
fn set_condition(
    conditions: &mut Vec<Value>,
    current: &Map<String, Value>,
    generation: Option<i64>,
    type_: &str,
    condition: Option<HostCondition>,
) {
    conditions.retain(|c| c["type"] != type_);
    let Some(condition) = condition else {
        return;
    };
    let previous = current
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == type_));
    let transition = match previous {
        Some(p) if p["status"] == condition.status => p["lastTransitionTime"].clone(),
        _ => serde_json::to_value(Time(k8s_openapi::jiff::Timestamp::now())).unwrap_or(Value::Null),
    };
    conditions.push(json!({
        "type": type_,
        "status": condition.status,
        "reason": condition.reason,
        "message": condition.message,
        "observedGeneration": generation,
        "lastTransitionTime": transition,
    }));
}

/// The guest's part of a status: all but the host's keys and conditions.
pub fn guest_part(status: &Map<String, Value>) -> Map<String, Value> {
    let mut part = status.clone();
    for key in HOST_STATUS_KEYS {
        part.remove(key);
    }
    if let Some(Value::Array(conditions)) = part.get_mut("conditions") {
        conditions.retain(|c| !HOST_CONDITIONS.iter().any(|host| c["type"] == *host));
        if conditions.is_empty() {
            part.remove("conditions");
        }
    }
    part
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reconciled(status: Option<&Map<String, Value>>) -> Outcome<'_> {
        answered_by(status, "sha256:abc", true)
    }

    fn answered_by<'a>(
        status: Option<&'a Map<String, Value>>,
        module_digest: &'a str,
        children_written: bool,
    ) -> Outcome<'a> {
        Outcome::Reconciled {
            guest_status: status,
            module_digest,
            children: 1,
            children_written,
            children_updated: None,
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

    #[test]
    fn a_module_that_answers_the_same_leaves_the_status_unwritten() {
        let guest = json!({"phase": "Ready"}).as_object().unwrap().clone();
        let old = answered_by(Some(&guest), "sha256:0123456789abcdef", true);
        let first = desired_status(&Map::new(), Some(1), old);
        let same = answered_by(Some(&guest), "sha256:fedcba9876543210", false);
        assert_eq!(
            desired_status(&first, Some(1), same),
            first,
            "the same answer from another module must cost no status write"
        );

        // A child written, or another guest status: the new module made this state.
        let wrote = answered_by(Some(&guest), "sha256:fedcba9876543210", true);
        let after = desired_status(&first, Some(1), wrote);
        assert_eq!(after["moduleDigest"], "sha256:fedcba9876543210");
        assert!(
            after["conditions"][0]["message"]
                .as_str()
                .unwrap()
                .ends_with("module fedcba987654")
        );
        let other = json!({"phase": "Created"}).as_object().unwrap().clone();
        let changed = answered_by(Some(&other), "sha256:fedcba9876543210", false);
        assert_eq!(
            desired_status(&first, Some(1), changed)["moduleDigest"],
            "sha256:fedcba9876543210"
        );
    }

    #[test]
    fn the_guest_part_of_a_status_leaves_out_what_the_host_writes() {
        let status = json!({
            "phase": "Ready", "observedGeneration": 3, "moduleDigest": "sha256:a",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "Progressing", "status": "True"}],
        });
        let part = guest_part(status.as_object().unwrap());
        assert_eq!(
            Value::Object(part),
            json!({"phase": "Ready", "conditions": [{"type": "Progressing", "status": "True"}]})
        );
        let host_only = json!({"observedGeneration": 1, "conditions": [{"type": "Ready"}]});
        assert!(guest_part(host_only.as_object().unwrap()).is_empty());
    }
}
