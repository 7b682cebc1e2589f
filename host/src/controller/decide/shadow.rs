//! Shadow modules: a candidate module beside the active one, called on every reconcile with the same
//! request and never applied. Where its answer differs from the active one, the host says so (a metric,
//! an Event on the parent naming the first differing JSON pointer, a log line with the diff), so that
//! new logic is judged on live inputs before it is promoted (by making it the active module: a swap).
//!
//! This file holds the comparison and the candidate's state; the call itself runs after the active
//! answer is applied, in a task of its own (`execute::shadow`): it never delays a reconcile. At most `SHADOW_CALLS` candidate calls run at once, so a candidate that loops or hoards
//! memory holds at most that many threads and memory caps (of the shared budget), and fails only itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::guest::{Answer, GuestError, Module};
use crate::validate::{Child, Placement, Rules, child_id, validate_in};

/// Candidate calls at once.
const SHADOW_CALLS: usize = 2;

/// How the candidate's answer for one parent compares with the active one.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Agrees,
    /// The first JSON pointer (into `{"children": {"Kind/name": ...}, "status": ...}`) that differs.
    Differs(String),
    /// The candidate gave no usable answer; the reason, as a condition would say it.
    Failing(&'static str),
}

/// The candidate module and what it did on each parent.
pub struct Shadow {
    module: RwLock<Option<Arc<Module>>>,
    verdicts: Mutex<HashMap<String, Verdict>>,
    calls: Semaphore,
}

impl Default for Shadow {
    fn default() -> Shadow {
        Shadow {
            module: RwLock::default(),
            verdicts: Mutex::default(),
            calls: Semaphore::new(SHADOW_CALLS),
        }
    }
}

impl Shadow {
    pub fn module(&self) -> Option<Arc<Module>> {
        self.module.read().expect("shadow lock poisoned").clone()
    }

    /// A turn among the `SHADOW_CALLS` candidate calls that may run at once (`None`: never, closed).
    pub async fn permit(&self) -> Option<SemaphorePermit<'_>> {
        self.calls.acquire().await.ok()
    }

    /// Makes `module` the candidate; every parent is compared afresh.
    pub fn set_module(&self, module: Arc<Module>) {
        *self.module.write().expect("shadow lock poisoned") = Some(module);
        self.verdicts.lock().expect("shadow lock poisoned").clear();
    }

    /// Records `verdict` for `parent`; returns whether the verdict changed, and the counts of each
    /// kind. Holding more verdicts than there are `live` parents means some parent was deleted: only
    /// then are the verdicts of parents for which `exists` is false forgotten.
    pub fn record(
        &self,
        parent: &str,
        verdict: Verdict,
        live: usize,
        exists: impl Fn(&str) -> bool,
    ) -> (bool, [i64; 3]) {
        let mut verdicts = self.verdicts.lock().expect("shadow lock poisoned");
        if verdicts.len() > live {
            verdicts.retain(|key, _| exists(key));
        }
        let changed = verdicts.insert(parent.to_string(), verdict.clone()) != Some(verdict);
        let mut counts = [0; 3];
        for verdict in verdicts.values() {
            counts[match verdict {
                Verdict::Agrees => 0,
                Verdict::Differs(_) => 1,
                Verdict::Failing(_) => 2,
            }] += 1;
        }
        (changed, counts)
    }
}

/// An answer as compared: children keyed by `Kind/namespace/name` (so that a pointer names the child;
/// the namespace because a cluster-scoped parent's children may share a name across namespaces),
/// status, requeue and finalized.
pub fn comparable(children: &[Child], answer: &Answer) -> Value {
    let children: Map<String, Value> = children
        .iter()
        .map(|c| {
            (
                child_id(&c.kind.kind, Some(c.namespace()), &c.name),
                c.object.clone(),
            )
        })
        .collect();
    json!({
        "children": children,
        "status": answer.status,
        "requeueAfterSeconds": answer.requeue_after.map(|d| d.as_secs()),
        "finalized": answer.finalized,
    })
}

/// The verdict on the candidate's `answer` (`None`: the call was cancelled), validated as the active
/// one was (`placement`, `rules`), against the active answer `active` (see [`comparable`]); and the diff
/// or error for the log.
pub fn verdict_of(
    answer: Option<Result<Answer, GuestError>>,
    placement: &Placement,
    rules: &Rules,
    active: &Value,
) -> (Verdict, String) {
    match answer {
        None => (Verdict::Failing("GuestCallCancelled"), String::new()),
        Some(Err(e)) => (Verdict::Failing(e.reason()), e.to_string()),
        Some(Ok(answer)) => match validate_in(&answer, placement, rules) {
            Err(e) => (Verdict::Failing("InvalidGuestOutput"), e.to_string()),
            Ok(children) => compare(active, &comparable(&children, &answer)),
        },
    }
}

/// How `candidate` compares with `active`, and the diff (a JSON Patch) for the log.
pub fn compare(active: &Value, candidate: &Value) -> (Verdict, String) {
    let patch = json_patch::diff(active, candidate);
    let Some(first) = patch.0.first() else {
        return (Verdict::Agrees, String::new());
    };
    let first = serde_json::to_value(first).unwrap_or_default();
    let pointer = first["path"].as_str().unwrap_or_default().to_string();
    let diff = serde_json::to_string(&patch).unwrap_or_default();
    (Verdict::Differs(pointer), diff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_difference_is_named_by_its_pointer() {
        let active =
            json!({"children": {"Deployment/a": {"metadata": {"labels": {}}}}, "status": null});
        assert_eq!(compare(&active, &active.clone()).0, Verdict::Agrees);
        let mut candidate = active.clone();
        candidate["children"]["Deployment/a"]["metadata"]["labels"]["example.com/variant"] =
            json!("c");
        let (verdict, diff) = compare(&active, &candidate);
        assert_eq!(
            verdict,
            Verdict::Differs("/children/Deployment~1a/metadata/labels/example.com~1variant".into())
        );
        assert!(diff.contains("\"value\":\"c\""), "{diff}");
    }

    #[test]
    fn children_of_one_name_in_two_namespaces_are_compared_apart() {
        let quota = |namespace: &str, cpu: &str| Child {
            kind: "v1/ResourceQuota".parse().unwrap(),
            name: "quota".into(),
            object: json!({"metadata": {"name": "quota", "namespace": namespace},
                           "spec": {"hard": {"cpu": cpu}}}),
        };
        let answer = Answer {
            children: Vec::new(),
            status: None,
            requeue_after: None,
            finalized: false,
        };
        let active = comparable(&[quota("a", "1"), quota("b", "1")], &answer);
        let candidate = comparable(&[quota("a", "2"), quota("b", "1")], &answer);
        assert_eq!(
            compare(&active, &candidate).0,
            Verdict::Differs("/children/ResourceQuota~1a~1quota/spec/hard/cpu".into())
        );
    }

    #[test]
    fn verdicts_are_counted_once_per_parent_and_changes_are_told() {
        let shadow = Shadow::default();
        let all = |_: &str| true;
        assert_eq!(
            shadow.record("ns/a", Verdict::Agrees, 2, all),
            (true, [1, 0, 0])
        );
        assert_eq!(
            shadow.record("ns/a", Verdict::Agrees, 2, all),
            (false, [1, 0, 0])
        );
        let differs = Verdict::Differs("/status".into());
        assert_eq!(
            shadow.record("ns/b", differs.clone(), 2, all),
            (true, [1, 1, 0])
        );
        assert_eq!(shadow.record("ns/b", differs, 2, all), (false, [1, 1, 0]));
        assert_eq!(
            shadow.record("ns/a", Verdict::Failing("GuestTrapped"), 2, all),
            (true, [0, 1, 1])
        );
        let gone = |key: &str| key != "ns/b";
        assert_eq!(
            shadow.record("ns/a", Verdict::Agrees, 1, gone),
            (true, [1, 0, 0]),
            "a deleted parent is no longer counted"
        );
    }
}
