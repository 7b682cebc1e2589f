//! The update strategy rule, method by method, on children as the caches would hold them.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::core::DynamicObject;
use serde_json::json;

use super::*;
use crate::names::MANAGER;
use crate::strategy::{Method, UpdateStrategy};

/// The time of the decisions.
fn now() -> Timestamp {
    "2026-12-07T12:00:00Z".parse().unwrap()
}

/// A Deployment `name` the host wrote `minutes_ago` with the desired digest `digest`, showing
/// `Available=available`.
fn child(name: &str, digest: &str, available: bool, minutes_ago: i64) -> DynamicObject {
    let written = now() - SignedDuration::from_mins(minutes_ago);
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns", "generation": 1,
            "annotations": {DESIRED_ANNOTATION: digest},
            "managedFields": [
                {"manager": MANAGER, "operation": "Apply", "time": written.to_string()},
                {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
                 "time": now().to_string()}]},
        "status": {"observedGeneration": 1, "conditions": [
            {"type": "Available", "status": if available { "True" } else { "False" }}]},
    }))
    .unwrap()
}

fn terminating(mut object: DynamicObject) -> DynamicObject {
    object.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()));
    object
}

fn strategy(method: Method) -> UpdateStrategy {
    UpdateStrategy {
        method,
        checks: vec!["Available=True".parse().unwrap()],
        progress_deadline: Duration::from_secs(600),
    }
}

/// The rule on children `a`, `b`, `c` (each observed as given) that should all be at digest `new`.
fn decide_abc(method: Method, observed: [Option<&DynamicObject>; 3]) -> KindDecision {
    let ids = ["Deployment/a", "Deployment/b", "Deployment/c"];
    let candidates: Vec<Candidate<'_>> = (ids.iter().zip(observed))
        .map(|(id, observed)| Candidate {
            id,
            digest: "new",
            observed,
        })
        .collect();
    decide(&strategy(method), &candidates, now())
}

use Step::{Keep, Recreate, Write};

#[test]
fn missing_children_are_created_by_every_method() {
    for method in Method::NAMES.map(|name| name.parse::<Method>().unwrap()) {
        let decision = decide_abc(method, [None, None, None]);
        assert_eq!(decision.steps, [Write, Write, Write], "{method}");
    }
}

#[test]
fn outdated_children_are_kept_recreated_or_updated_at_once_by_the_non_rolling_methods() {
    let (a, b) = (child("a", "old", true, 5), child("b", "new", true, 5));
    let observed = [Some(&a), Some(&b), None];
    let steps = |method| decide_abc(method, observed).steps;
    // OnDelete writes no existing child, not even a current one (no drift repair either).
    assert_eq!(steps(Method::OnDelete), [Keep, Keep, Write]);
    assert_eq!(steps(Method::Recreate), [Recreate, Write, Write]);
    assert_eq!(steps(Method::InPlace), [Write, Write, Write]);
    assert_eq!(decide_abc(Method::Recreate, observed).progress, None);
}

#[test]
fn a_terminating_child_is_waited_for() {
    let a = terminating(child("a", "old", true, 5));
    let decision = decide_abc(Method::Recreate, [Some(&a), None, None]);
    assert_eq!(decision.steps, [Keep, Write, Write]);
}

#[test]
fn a_rolling_update_moves_one_child_at_a_time_in_name_order() {
    let [a, b, c] = ["a", "b", "c"].map(|name| child(name, "old", true, 30));
    for (method, step) in [
        (Method::RollingInPlace, Write),
        (Method::RollingRecreate, Recreate),
    ] {
        let decision = decide_abc(method, [Some(&a), Some(&b), Some(&c)]);
        assert_eq!(decision.steps, [step, Keep, Keep], "{method}");
        assert_eq!(
            decision.progress,
            Some(Progress::Rolling {
                child: "Deployment/a".into(),
                outdated: 2,
                deadline_in: Duration::from_secs(600),
            })
        );
    }
}

#[test]
fn a_rolling_update_waits_while_an_updated_child_fails_its_checks_then_moves_on() {
    let (a_waiting, a_done) = (child("a", "new", false, 4), child("a", "new", true, 4));
    let [b, c] = ["b", "c"].map(|name| child(name, "old", true, 30));
    let waiting = decide_abc(
        Method::RollingInPlace,
        [Some(&a_waiting), Some(&b), Some(&c)],
    );
    // The current child is still written (drift repair is in place); the outdated ones wait.
    assert_eq!(waiting.steps, [Write, Keep, Keep]);
    assert_eq!(
        waiting.progress,
        Some(Progress::Rolling {
            child: "Deployment/a".into(),
            outdated: 2,
            deadline_in: Duration::from_secs(6 * 60),
        })
    );
    let next = decide_abc(Method::RollingInPlace, [Some(&a_done), Some(&b), Some(&c)]);
    assert_eq!(next.steps, [Write, Write, Keep]);
    // A child being created anew (RollingRecreate) is waited for like a failing one.
    let gone = decide_abc(Method::RollingRecreate, [None, Some(&b), Some(&c)]);
    assert_eq!(gone.steps, [Write, Keep, Keep]);
    let [a, b, c] = ["a", "b", "c"].map(|name| child(name, "new", true, 1));
    let done = decide_abc(Method::RollingRecreate, [Some(&a), Some(&b), Some(&c)]);
    assert_eq!(done.progress, Some(Progress::Complete));
}

#[test]
fn a_rolling_update_stops_past_the_deadline_and_resumes_when_the_desired_state_changes() {
    let never_ready = child("a", "new", false, 11);
    let [b, c] = ["b", "c"].map(|name| child(name, "old", true, 30));
    let stuck = decide_abc(
        Method::RollingInPlace,
        [Some(&never_ready), Some(&b), Some(&c)],
    );
    assert_eq!(stuck.steps, [Write, Keep, Keep]);
    assert_eq!(
        stuck.progress,
        Some(Progress::Stuck {
            child: "Deployment/a".into(),
            checks: "Available=True".into(),
            deadline: Duration::from_secs(600),
        })
    );
    // The guest wants something else again: the stuck child is outdated, no longer waited for.
    let outdated_again = child("a", "older", false, 11);
    let resumed = decide_abc(
        Method::RollingInPlace,
        [Some(&outdated_again), Some(&b), Some(&c)],
    );
    assert_eq!(resumed.steps, [Write, Keep, Keep]);
    assert!(matches!(
        resumed.progress,
        Some(Progress::Rolling { outdated: 2, .. })
    ));
}

#[test]
fn the_digest_is_the_desired_state_s() {
    let body = json!({"kind": "Deployment", "spec": {"replicas": 1}});
    assert_eq!(desired_digest(&body), desired_digest(&body.clone()));
    assert_ne!(
        desired_digest(&body),
        desired_digest(&json!({"kind": "Deployment", "spec": {"replicas": 2}}))
    );
    assert_eq!(desired_digest(&body).len(), 16);
}

#[test]
fn a_child_written_before_its_kind_had_a_strategy_is_marked_in_place_not_recreated() {
    let mut unmarked = child("a", "", true, 60);
    unmarked.metadata.annotations = None;
    for method in [
        Method::Recreate,
        Method::RollingRecreate,
        Method::RollingInPlace,
    ] {
        let decision = decide_abc(method, [Some(&unmarked), None, None]);
        assert_eq!(decision.steps, [Write, Write, Write], "{method}");
    }
    let on_delete = decide_abc(Method::OnDelete, [Some(&unmarked), None, None]);
    assert_eq!(on_delete.steps, [Keep, Write, Write]);
}

#[test]
fn the_condition_says_stopped_before_moving_and_complete_last() {
    let rolling = Progress::Rolling {
        child: "Deployment/b".into(),
        outdated: 1,
        deadline_in: Duration::from_secs(60),
    };
    let stuck = Progress::Stuck {
        child: "Deployment/a".into(),
        checks: "Available=True".into(),
        deadline: Duration::from_secs(600),
    };
    let kinds = |progress: Vec<Progress>| -> Vec<(String, Progress)> {
        progress
            .into_iter()
            .map(|p| ("apps/v1/Deployment".to_string(), p))
            .collect()
    };
    assert_eq!(children_updated(&[]), None);
    let condition = children_updated(&kinds(vec![rolling.clone(), stuck])).unwrap();
    assert_eq!(
        (condition.status, condition.reason),
        ("False", "ProgressDeadlineExceeded")
    );
    assert!(
        condition.message.contains("Deployment/a"),
        "{}",
        condition.message
    );
    let condition = children_updated(&kinds(vec![Progress::Complete, rolling])).unwrap();
    assert_eq!(
        (condition.status, condition.reason),
        ("False", "RollingUpdate")
    );
    let condition = children_updated(&kinds(vec![Progress::Complete])).unwrap();
    assert_eq!(
        (condition.status, condition.reason),
        ("True", "UpdateComplete")
    );
}
