//! Skipping server-side applies that would change nothing.
//!
//! An apply that changes nothing is still a write for the API server, and a parent is reconciled
//! again on every change of itself and of its children (the cluster updating a Deployment's status,
//! our own status patch): without this, half of the host's writes were no-ops (the convergence
//! benchmark counted 4.25 writes per parent where 2 do the work). An apply is skipped only when this
//! process applied exactly the same object last time *and* the observed child still holds every field
//! of it: a drifted child, a guest that drops a field (which the apply would remove) and a restart
//! all lead to a real apply. A child's entry goes when the child does: pruned by the host, or deleted
//! by anyone (the garbage collector, with its parent), as the child watch sees it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use kube::core::DynamicObject;
use kube::runtime::watcher;
use serde::Serialize;
use serde_json::Value;

use crate::kind::Gvk;

/// What this process last applied, per child, as a digest of the apply body.
#[derive(Default)]
pub struct AppliedChildren {
    last: Mutex<HashMap<String, u64>>,
}

impl AppliedChildren {
    /// The entry of one child: `group/version/Kind/namespace/name`.
    pub fn key(kind: &Gvk, namespace: &str, name: &str) -> String {
        format!("{kind}/{namespace}/{name}")
    }

    /// Whether applying `body` to the child `key` (observed as `observed`) would change nothing. The
    /// observed child is only turned into JSON when the body is the one applied last.
    pub fn unchanged(&self, key: &str, body: &Value, observed: Option<&impl Serialize>) -> bool {
        let Some(observed) = observed else {
            return false;
        };
        let digest = digest(body);
        let last = self.last.lock().expect("applied-children lock poisoned");
        if last.get(key) != Some(&digest) {
            return false;
        }
        drop(last);
        serde_json::to_value(observed).is_ok_and(|observed| holds(&observed, body))
    }

    pub fn record(&self, key: &str, body: &Value) {
        let digest = digest(body);
        let mut last = self.last.lock().expect("applied-children lock poisoned");
        last.insert(key.to_owned(), digest);
    }

    pub fn forget(&self, key: &str) {
        let mut last = self.last.lock().expect("applied-children lock poisoned");
        last.remove(key);
    }

    /// Forgets the child of `kind` that a watch `event` says is gone, whoever deleted it.
    pub fn forget_deleted(&self, kind: &Gvk, event: &watcher::Event<DynamicObject>) {
        if let watcher::Event::Delete(child) = event {
            let namespace = child.metadata.namespace.as_deref().unwrap_or_default();
            let name = child.metadata.name.as_deref().unwrap_or_default();
            self.forget(&AppliedChildren::key(kind, namespace, name));
        }
    }
}

pub(super) fn digest(body: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    body.to_string().hash(&mut hasher);
    hasher.finish()
}

/// Whether `observed` has every field of `desired` with the same value (objects: every key, lists:
/// same length, element by element). Fields the API server added (defaults, status) do not matter.
fn holds(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (Value::Object(observed), Value::Object(desired)) => desired
            .iter()
            .all(|(key, want)| observed.get(key).is_some_and(|have| holds(have, want))),
        (Value::Array(observed), Value::Array(desired)) => {
            observed.len() == desired.len()
                && observed
                    .iter()
                    .zip(desired)
                    .all(|(have, want)| holds(have, want))
        }
        (observed, desired) => observed == desired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn desired() -> Value {
        json!({"metadata": {"name": "d", "labels": {"app": "a"}},
               "spec": {"replicas": 3, "containers": [{"name": "main", "ports": [{"containerPort": 80}]}]}})
    }

    fn observed() -> Value {
        // What the API server returns: the same, plus defaults and status.
        json!({"metadata": {"name": "d", "labels": {"app": "a"}, "resourceVersion": "7"},
               "spec": {"replicas": 3, "containers": [{"name": "main", "imagePullPolicy": "Always",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}]}]},
               "status": {"readyReplicas": 3}})
    }

    #[test]
    fn skips_only_the_same_body_on_a_child_that_still_holds_it() {
        let applied = AppliedChildren::default();
        assert!(
            !applied.unchanged("k", &desired(), Some(&observed())),
            "never applied here"
        );
        applied.record("k", &desired());
        assert!(applied.unchanged("k", &desired(), Some(&observed())));
        assert!(
            !applied.unchanged("k", &desired(), None::<&Value>),
            "the child is gone"
        );

        let mut drifted = observed();
        drifted["spec"]["replicas"] = json!(1);
        assert!(!applied.unchanged("k", &desired(), Some(&drifted)), "drift");
        let mut extra = observed();
        extra["spec"]["containers"] = json!([{"name": "main"}, {"name": "sidecar"}]);
        assert!(
            !applied.unchanged("k", &desired(), Some(&extra)),
            "a list grew"
        );

        // The guest drops a label: the body differs, so the apply runs and removes it.
        let mut fewer = desired();
        fewer["metadata"]["labels"] = json!({});
        assert!(!applied.unchanged("k", &fewer, Some(&observed())));

        applied.forget("k");
        assert!(!applied.unchanged("k", &desired(), Some(&observed())));
    }

    #[test]
    fn a_child_deleted_by_anyone_leaves_the_memory() {
        let applied = AppliedChildren::default();
        let deployment: Gvk = "apps/v1/Deployment".parse().unwrap();
        let key = AppliedChildren::key(&deployment, "default", "d");
        applied.record(&key, &desired());
        let child = |namespace: &str, name: &str| {
            let mut child = DynamicObject::new(
                name,
                &kube::api::ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()),
            );
            child.metadata.namespace = Some(namespace.into());
            child
        };

        let elsewhere = watcher::Event::Delete(child("other", "d"));
        applied.forget_deleted(&deployment, &elsewhere);
        let updated = watcher::Event::Apply(child("default", "d"));
        applied.forget_deleted(&deployment, &updated);
        assert!(
            applied.unchanged(&key, &desired(), Some(&observed())),
            "another namespace's child, or an update, forgets nothing"
        );

        let gone = watcher::Event::Delete(child("default", "d"));
        applied.forget_deleted(&deployment, &gone);
        assert!(!applied.unchanged(&key, &desired(), Some(&observed())));
        assert!(applied.last.lock().unwrap().is_empty());
    }
}
