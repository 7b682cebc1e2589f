//! The decision after the guest's answer, like the kubelet's `computePodActions`: from the parent, its
//! observed children, the cached objects the answer names, the answer and the host's rules, a [`Plan`]
//! of every write (creations first, each child with its claim, held back or turned into a deletion by
//! its kind's update strategy: `update`), every deletion, the desired status, the finalizer's removal
//! and the requeue; or the refusal of the whole answer, with its reason.
//! Nothing here reads or writes the API server: the executors (`execute::live`, and `plan`'s dry run)
//! carry a plan out.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};

use super::super::error::ReconcileError;
use super::super::observe::children::{Observed, left_out};
use super::ownership::{Claim, child_id, claim, observed_id};
use super::update::{self, Candidate, Progress, Step, desired_digest};
use super::write::{apply_body, owner_reference};
use crate::guest::Answer;
use crate::identity::Identity;
use crate::names::DESIRED_ANNOTATION;
use crate::shard::Member;
use crate::strategy::{KindStrategy, Method};
use crate::validate::{Child, Placement, Rules, validate_in};

/// The host's rules for one parent: where its children may go, what a child may be, whose children
/// are its own, and the operator's choices.
pub struct HostRules<'a> {
    /// Where the parent's children may live.
    pub placement: Placement,
    pub rules: &'a Rules,
    pub identity: &'a Identity,
    /// Whether an object nothing controls may be adopted (`--adopt-orphans`).
    pub adopt_orphans: bool,
    /// Whether the parent is cluster-scoped: its children are then named with their namespace.
    pub cluster_scoped: bool,
    /// Whether the parent kind is decorated: its status is then not the host's to write.
    pub decorates: bool,
    /// The host's finalizer, if any.
    pub finalizer: Option<&'a str>,
    /// The update strategy of each child kind that has one other than `InPlace`.
    pub updates: &'a [KindStrategy],
    /// The time of the decision, which a rolling update's deadline is measured against.
    pub now: Timestamp,
    /// This replica in the reconciler's ring, if it is sharded: its children carry its labels.
    pub member: Option<&'a Member>,
}

/// What carrying out an answer takes.
#[derive(Debug)]
pub struct Plan<'a> {
    /// The validated children, in the answer's order.
    pub children: Vec<Child>,
    /// One write per child, creations first: one refused on a name taken meanwhile then leaves the
    /// children the parent had as they were.
    pub writes: Vec<Write>,
    /// The children the parent controls that the answer leaves out, and the outdated ones an update
    /// strategy recreates.
    pub prunes: Vec<Prune<'a>>,
    /// Where the rolling update of each kind that has one stands, by kind.
    pub progress: Vec<(String, Progress)>,
    /// The status to write (`None`: a decorated parent, whose status is not the host's).
    pub status: Option<DesiredStatus>,
    /// The host's finalizer, to remove once the guest answered `finalized` while finalizing.
    pub remove_finalizer: Option<String>,
    /// When to reconcile again without a change (`None`: on the next change).
    pub requeue: Option<Duration>,
}

/// One child to write.
#[derive(Debug)]
pub struct Write {
    /// Its index in [`Plan::children`].
    pub child: usize,
    /// How conditions and Events name it.
    pub id: String,
    /// What the host writes: the guest's object with the parent as controller and the host's labels.
    pub body: Value,
    /// How it may be written.
    pub claim: Claim,
    /// The object as observed, if the parent already controls it.
    pub observed: Option<Arc<DynamicObject>>,
}

/// One child to delete.
#[derive(Clone, Debug)]
pub struct Prune<'a> {
    pub id: String,
    pub observed: Observed<'a>,
    /// Deleted to be created anew (its kind's update strategy), not because the answer left it out.
    pub recreate: bool,
}

impl PartialEq for Prune<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.observed.object.metadata.uid == other.observed.object.metadata.uid
    }
}

impl<'a> Prune<'a> {
    /// The deletion of the observed child `observed`.
    pub fn of(observed: &Observed<'a>, cluster_scoped: bool) -> Prune<'a> {
        Prune {
            id: observed_id(observed, cluster_scoped),
            observed: observed.clone(),
            recreate: false,
        }
    }
}

/// The status a carried-out plan writes: the guest's part (`None`: leave it as it is) and the host's.
#[derive(Debug, PartialEq)]
pub struct DesiredStatus {
    pub guest_status: Option<Map<String, Value>>,
}

impl Plan<'_> {
    /// The child a write is of.
    pub fn child(&self, write: &Write) -> &Child {
        &self.children[write.child]
    }
}

/// Decides what the guest's `answer` for `parent` takes, given its `observed` children, whether it is
/// `finalizing`, the host's `rules` and, for each child the parent does not control yet, the object
/// of that kind and name the caches hold (`cached`). All children pass the rules and the ownership
/// rule, or nothing is planned: the refusal says why.
pub fn plan<'a>(
    parent: &DynamicObject,
    observed: &[Observed<'a>],
    answer: &Answer,
    finalizing: bool,
    rules: &HostRules<'_>,
    cached: impl Fn(&Child) -> Option<Arc<DynamicObject>>,
) -> Result<Plan<'a>, ReconcileError> {
    let children = validate_in(answer, &rules.placement, rules.rules)?;
    let owner = owner_reference(parent)?;
    let parent_uid = owner["uid"].as_str().unwrap_or_default();
    let mut writes = Vec::with_capacity(children.len());
    for (index, child) in children.iter().enumerate() {
        let id = child_id(child, rules.cluster_scoped);
        let observed = observed.iter().find(|o| o.is(child));
        // The parent controls it: apply. Else who controls the cached object of its name decides;
        // with none cached, a create-only write (no GET, whose answer would be stale by the write).
        let claim = match (observed, cached(child)) {
            (Some(_), _) => Claim::Apply,
            (None, Some(object)) => claim(parent_uid, &id, &object, rules.adopt_orphans)?,
            (None, None) => Claim::Create,
        };
        let member = rules.member.map(|m| m.child_labels(parent_uid));
        let mut body = apply_body(
            &owner,
            child,
            rules.identity,
            member.as_ref().map_or(&[], |l| l),
        );
        if strategy_of(rules.updates, child).is_some() {
            let digest = desired_digest(&body);
            let metadata = &mut body["metadata"];
            if !metadata["annotations"].is_object() {
                metadata["annotations"] = json!({});
            }
            metadata["annotations"][DESIRED_ANNOTATION] = json!(digest);
        }
        writes.push(Write {
            child: index,
            id,
            body,
            claim,
            observed: observed.map(|o| o.object.clone()),
        });
    }
    let mut prunes: Vec<Prune<'a>> = left_out(observed, &children)
        .map(|o| Prune::of(o, rules.cluster_scoped))
        .collect();
    let progress = update_strategies(&children, &mut writes, &mut prunes, observed, rules);
    writes.sort_by_key(|write| write.claim != Claim::Create);
    let status = (!rules.decorates).then(|| DesiredStatus {
        guest_status: answer.status.clone(),
    });
    let remove_finalizer = (rules.finalizer)
        .filter(|_| finalizing && answer.finalized)
        .map(str::to_string);
    // A rolling update waiting on a child comes back at its deadline, to stop there if it must.
    let deadline = (progress.iter())
        .filter_map(|(_, progress)| match progress {
            Progress::Rolling { deadline_in, .. } => Some(*deadline_in),
            _ => None,
        })
        .min();
    let requeue = [answer.requeue_after, deadline].into_iter().flatten().min();
    Ok(Plan {
        children,
        writes,
        prunes,
        progress,
        status,
        remove_finalizer,
        requeue,
    })
}

/// The strategy of `child`'s kind, if it is not `InPlace` (which every child has by default).
fn strategy_of<'r>(updates: &'r [KindStrategy], child: &Child) -> Option<&'r KindStrategy> {
    (updates.iter()).find(|k| k.kind == child.kind && k.strategy.method != Method::InPlace)
}

/// Applies each kind's update strategy to the planned writes: a write held back is dropped, one
/// turned into a recreation becomes a deletion. Returns the progress of the rolling kinds.
fn update_strategies<'a>(
    children: &[Child],
    writes: &mut Vec<Write>,
    prunes: &mut Vec<Prune<'a>>,
    observed: &[Observed<'a>],
    rules: &HostRules<'_>,
) -> Vec<(String, Progress)> {
    let mut progress = Vec::new();
    let mut keep = vec![true; writes.len()];
    for kind in rules
        .updates
        .iter()
        .filter(|k| k.strategy.method != Method::InPlace)
    {
        // In name order: a rolling update goes through the children in an order that does not
        // depend on the answer's.
        let mut of_kind: Vec<usize> = (0..writes.len())
            .filter(|&i| children[writes[i].child].kind == kind.kind)
            .collect();
        of_kind.sort_by(|&a, &b| writes[a].id.cmp(&writes[b].id));
        let candidates: Vec<Candidate<'_>> = (of_kind.iter())
            .map(|&i| Candidate {
                id: &writes[i].id,
                digest: writes[i].body["metadata"]["annotations"][DESIRED_ANNOTATION]
                    .as_str()
                    .unwrap_or_default(),
                observed: writes[i].observed.as_deref(),
            })
            .collect();
        let decision = update::decide(&kind.strategy, &candidates, rules.now);
        for (&i, step) in of_kind.iter().zip(decision.steps) {
            match step {
                Step::Write => {}
                Step::Keep => keep[i] = false,
                Step::Recreate => {
                    keep[i] = false;
                    let child = &children[writes[i].child];
                    if let Some(o) = observed.iter().find(|o| o.is(child)) {
                        prunes.push(Prune {
                            recreate: true,
                            ..Prune::of(o, rules.cluster_scoped)
                        });
                    }
                }
            }
        }
        if let Some(kind_progress) = decision.progress {
            progress.push((kind.kind.to_string(), kind_progress));
        }
    }
    let mut index = 0;
    writes.retain(|_| {
        index += 1;
        keep[index - 1]
    });
    progress
}
