//! Shadow modules: a candidate module beside the active one, called on every reconcile with the same
//! request and never applied. Where its answer differs from the active one, the host says so (a metric,
//! an Event on the parent naming the first differing JSON pointer, a log line with the diff), so that
//! new logic is judged on live inputs before it is promoted (by making it the active module: a swap).
//!
//! The candidate runs after the active answer is applied, in a task of its own: it never delays a
//! reconcile. At most `SHADOW_CALLS` candidate calls run at once, so a candidate that loops or hoards
//! memory holds at most that many threads and memory caps (of the shared budget), and fails only itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use kube::core::DynamicObject;
use kube::runtime::events::EventType;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use super::context::Context;
use crate::guest::{Answer, Module, Request};
use crate::text::truncate;
use crate::validate::{Child, child_id, validate_in};

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

    /// Makes `module` the candidate; every parent is compared afresh.
    pub fn set_module(&self, module: Arc<Module>) {
        *self.module.write().expect("shadow lock poisoned") = Some(module);
        self.verdicts.lock().expect("shadow lock poisoned").clear();
    }

    /// Records `verdict` for `parent`; returns whether the verdict changed, and the counts of each
    /// kind. Holding more verdicts than there are `live` parents means some parent was deleted: only
    /// then are the verdicts of parents for which `exists` is false forgotten.
    fn record(
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

impl Context {
    /// Calls the candidate, if there is one, on `request` in the background and reports how its answer
    /// compares with the active one (`active`, from `comparable`).
    pub fn compare_in_shadow(
        self: &Arc<Self>,
        parent: &Arc<DynamicObject>,
        key: &str,
        request: Request,
        active: Value,
    ) {
        let Some(candidate) = self.shadow.module() else {
            return;
        };
        let (ctx, parent, key) = (self.clone(), parent.clone(), key.to_string());
        tokio::spawn(async move {
            let Ok(_permit) = ctx.shadow.calls.acquire().await else {
                return;
            };
            let placement = ctx.placement(&parent);
            let (module, tag) = (candidate.clone(), key.clone());
            let answer = tokio::task::spawn_blocking(move || module.call(&tag, &request)).await;
            let (verdict, diff) = match answer {
                Err(_) => (Verdict::Failing("GuestCallCancelled"), String::new()),
                Ok(Err(e)) => (Verdict::Failing(e.reason()), e.to_string()),
                Ok(Ok(answer)) => match validate_in(&answer, &placement, &ctx.rules) {
                    Err(e) => (Verdict::Failing("InvalidGuestOutput"), e.to_string()),
                    Ok(children) => compare(&active, &comparable(&children, &answer)),
                },
            };
            ctx.report_shadow(&parent, &key, &candidate, verdict, diff)
                .await;
        });
    }

    async fn report_shadow(
        &self,
        parent: &DynamicObject,
        key: &str,
        candidate: &Module,
        verdict: Verdict,
        diff: String,
    ) {
        let live = self.parents.len();
        let (changed, [agrees, differs, failing]) =
            self.shadow
                .record(key, verdict.clone(), live, |key| self.parent_exists(key));
        self.metrics.shadow_parents(agrees, differs, failing);
        let digest = candidate.short_digest();
        let (reason, note) = match &verdict {
            Verdict::Agrees => return,
            Verdict::Differs(pointer) => (
                "ShadowDiffers",
                format!("shadow module {digest} answers differently, first at {pointer}"),
            ),
            Verdict::Failing(why) => (
                "ShadowFailed",
                format!("shadow module {digest} gave no usable answer: {why}"),
            ),
        };
        tracing::info!(parent = %key, shadow = digest, ?verdict, diff = %truncate(diff, 2000), "shadow module disagrees");
        // One Event per change of verdict, not one per reconcile.
        if changed {
            self.publish(parent, EventType::Normal, reason, note).await;
        }
    }
}

/// How `candidate` compares with `active`, and the diff (a JSON Patch) for the log.
fn compare(active: &Value, candidate: &Value) -> (Verdict, String) {
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
