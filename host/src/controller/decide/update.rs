//! The update strategy rule: which existing children of one kind a changed desired state reaches now,
//! by the kind's [`UpdateStrategy`]. Missing children are always created; `InPlace` writes every
//! child (the rule is not even asked); the others hold back, delete or roll.
//!
//! A child is *current* when the digest of its desired state, which the host writes on it
//! ([`DESIRED_ANNOTATION`]), is the digest of what the guest wants now, and *outdated* otherwise. One
//! without the annotation (written before its kind had a strategy) is written in place once, which
//! marks it: turning a strategy on recreates nothing by itself. A
//! rolling update moves one child at a time: while a current child fails its status checks (or one
//! is missing or still terminating), it waits; else it updates the first outdated child by name. How
//! long a child has failed is counted from the host's last write of it (its managedFields entry).
//! Everything is read from the children as observed, so a restart or a handover needs no memory of a
//! rollout, and a desired state that changes again makes the child a stopped update waits on
//! outdated: the update resumes.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::core::DynamicObject;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::status::HostCondition;
use crate::identity::is_host_entry;
use crate::names::DESIRED_ANNOTATION;
use crate::strategy::{Method, UpdateStrategy};

/// One child of the kind as the decision sees it: how conditions name it, the digest of its desired
/// state, and the object as observed, if it exists.
pub struct Candidate<'a> {
    pub id: &'a str,
    pub digest: &'a str,
    pub observed: Option<&'a DynamicObject>,
}

/// What becomes of one child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write it (create it, or apply its desired state).
    Write,
    /// Leave it as it is, this time.
    Keep,
    /// Delete it: it is created anew, as desired, once it is gone.
    Recreate,
}

/// Where a rolling update of one kind stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// Every child is current and passes its checks.
    Complete,
    /// `child` is being updated or waited for; `outdated` children are still to come. The deadline of
    /// the child waited for falls in `deadline_in`.
    Rolling {
        child: String,
        outdated: usize,
        deadline_in: Duration,
    },
    /// `child` has failed its checks (`checks`) for longer than `deadline`: the update stopped.
    Stuck {
        child: String,
        checks: String,
        deadline: Duration,
    },
}

/// The rule's answer for one kind: a step per candidate, in their order, and, for a rolling
/// strategy, the progress.
#[derive(Debug, PartialEq)]
pub struct KindDecision {
    pub steps: Vec<Step>,
    pub progress: Option<Progress>,
}

/// The reason of a stopped update, on the condition and its Warning Event.
pub const STOPPED: &str = "ProgressDeadlineExceeded";

/// The parent's `ChildrenUpdated` condition from the progress of each rolling kind (`None`: it has
/// none): False while an update stopped (`ProgressDeadlineExceeded`) or moves (`RollingUpdate`), True
/// once every child is current and passes its checks.
pub fn children_updated(progress: &[(String, Progress)]) -> Option<HostCondition> {
    if progress.is_empty() {
        return None;
    }
    let stuck = progress.iter().find_map(|(_, p)| match p {
        Progress::Stuck {
            child,
            checks,
            deadline,
        } => Some(format!(
            "{child} has not passed its status checks ({checks}) within {}s: the update stopped; it \
             resumes when the desired state changes",
            deadline.as_secs()
        )),
        _ => None,
    });
    let rolling = progress.iter().find_map(|(_, p)| match p {
        Progress::Rolling {
            child, outdated, ..
        } => Some(format!("updating {child}; {outdated} more outdated")),
        _ => None,
    });
    Some(match (stuck, rolling) {
        (Some(message), _) => HostCondition {
            status: "False",
            reason: STOPPED,
            message,
        },
        (None, Some(message)) => HostCondition {
            status: "False",
            reason: "RollingUpdate",
            message,
        },
        (None, None) => HostCondition {
            status: "True",
            reason: "UpdateComplete",
            message: "every child is current and passes its status checks".into(),
        },
    })
}

/// The digest of a child's desired state (its apply body, before the annotation that carries it).
pub fn desired_digest(body: &Value) -> String {
    let digest = Sha256::digest(body.to_string().as_bytes());
    digest[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Missing,
    Terminating,
    /// Written before its kind had a strategy: no digest to compare.
    Unmarked,
    Current,
    Outdated,
}

fn state(candidate: &Candidate<'_>) -> State {
    let Some(object) = candidate.observed else {
        return State::Missing;
    };
    if object.metadata.deletion_timestamp.is_some() {
        return State::Terminating;
    }
    let annotations = object.metadata.annotations.as_ref();
    match annotations.and_then(|a| a.get(DESIRED_ANNOTATION)) {
        None => State::Unmarked,
        Some(digest) if digest == candidate.digest => State::Current,
        Some(_) => State::Outdated,
    }
}

/// When the host last wrote `object`: the time of its field manager's entry (a write that changed
/// nothing leaves it), else the object's creation.
fn last_written(object: &DynamicObject) -> Option<Timestamp> {
    let entries = object.metadata.managed_fields.iter().flatten();
    let ours = entries.filter(|entry| is_host_entry(entry));
    let written = ours
        .filter_map(|entry| entry.time.as_ref())
        .map(|time| time.0)
        .max();
    written.or(object
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|time| time.0))
}

/// What `strategy` does with `candidates` (one child kind's desired children, with what is observed
/// of each) at `now`.
pub fn decide(
    strategy: &UpdateStrategy,
    candidates: &[Candidate<'_>],
    now: Timestamp,
) -> KindDecision {
    let method = strategy.method;
    let states: Vec<State> = candidates.iter().map(state).collect();
    let mut steps: Vec<Step> = (states.iter())
        .map(|state| match (state, method) {
            (State::Missing, _) => Step::Write,
            (State::Terminating, _) | (_, Method::OnDelete) => Step::Keep,
            (State::Current | State::Unmarked, _) | (State::Outdated, Method::InPlace) => {
                Step::Write
            }
            (State::Outdated, Method::Recreate) => Step::Recreate,
            (State::Outdated, _) => Step::Keep,
        })
        .collect();
    if !method.rolling() {
        return KindDecision {
            steps,
            progress: None,
        };
    }
    let outdated: Vec<usize> = (0..states.len())
        .filter(|&i| states[i] == State::Outdated)
        .collect();
    // In flight: a current child that fails its checks (since the host wrote it), or one that is
    // missing or terminating (being created anew).
    let failing = |i: usize| -> Option<Option<Timestamp>> {
        match states[i] {
            State::Missing | State::Terminating => Some(None),
            State::Current => {
                let object = candidates[i].observed.expect("a current child is observed");
                let json = serde_json::to_value(object).unwrap_or_default();
                (!strategy.passes(&json)).then(|| last_written(object))
            }
            State::Outdated | State::Unmarked => None,
        }
    };
    let waiting: Vec<(usize, Option<Timestamp>)> = (0..states.len())
        .filter_map(|i| failing(i).map(|since| (i, since)))
        .collect();
    let deadline = strategy.progress_deadline;
    let elapsed = |since: Option<Timestamp>| {
        let since = since.unwrap_or(now);
        Duration::try_from(now.duration_since(since)).unwrap_or_default()
    };
    let progress = if let Some(&(stuck, _)) =
        (waiting.iter()).find(|(_, since)| elapsed(*since) >= deadline)
    {
        Progress::Stuck {
            child: candidates[stuck].id.to_string(),
            checks: strategy.checks_text(),
            deadline,
        }
    } else if let Some(&(first, _)) = waiting.first() {
        let soonest = (waiting.iter())
            .map(|(_, since)| deadline.saturating_sub(elapsed(*since)))
            .min();
        Progress::Rolling {
            child: candidates[first].id.to_string(),
            outdated: outdated.len(),
            deadline_in: soonest.unwrap_or(deadline),
        }
    } else if let Some(&next) = outdated.first() {
        steps[next] = match method.recreates() {
            true => Step::Recreate,
            false => Step::Write,
        };
        Progress::Rolling {
            child: candidates[next].id.to_string(),
            outdated: outdated.len() - 1,
            deadline_in: deadline,
        }
    } else {
        Progress::Complete
    };
    KindDecision {
        steps,
        progress: Some(progress),
    }
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
