//! A sharded reconciler's first step in each reconcile: whether the parent is this member's to
//! reconcile now (`shard::Member::claim`), carried out. A parent the ring's leader drains is handed
//! over here, inside a reconcile of it, so that kube-runtime (which never runs two reconciles of one
//! object at once) guarantees the last one has finished; a parent reconciled for the first time in
//! a tenure is read from the API server, with its children when it moved from another member (see
//! `shard::member` for why).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use kube::api::{ListParams, Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::json;

use super::context::Context;
use super::error::{ReconcileError, name_of, uid_of};
use super::observe::children::{Observed, controlled_by};
use super::observe::selection::parent_key;
use super::observe::sync::as_cached;
use crate::shard::member::Parent;
use crate::shard::{Claim, Member};

/// The target of the lines that record what each member reconciled and handed over, with the times:
/// what proves that no parent was reconciled by two members at once.
pub const RECORD: &str = "reconcile_host::shard::record";

/// How a reconcile of a sharded reconciler goes on.
pub enum Claimed {
    /// Not this member's to reconcile now (another's, or just handed over): the reconcile ends.
    Done,
    /// Its own: reconcile `parent`. `fresh`: read from the API server in `tenure`; the reconcile
    /// records the parent verified once it succeeds. `list_children`: the reconcile lists them from
    /// the API server too.
    Own {
        parent: Arc<DynamicObject>,
        fresh: Option<u64>,
        list_children: bool,
    },
}

impl Context {
    /// What this replica does with `parent` (always its own when the reconciler is not sharded).
    pub async fn claim(&self, parent: Arc<DynamicObject>) -> Result<Claimed, ReconcileError> {
        let Some(member) = &self.shard else {
            return Ok(Claimed::Own {
                parent,
                fresh: None,
                list_children: false,
            });
        };
        let tenure = member.tenure();
        self.forget_gone_parents(member);
        match member.claim(ring_view(member, &parent)?, tenure) {
            Claim::Skip => Ok(Claimed::Done),
            Claim::Release => self.hand_over(member, &parent).await,
            Claim::Reconcile { fresh: false } => Ok(Claimed::Own {
                parent,
                fresh: None,
                list_children: false,
            }),
            Claim::Reconcile { fresh: true } => {
                let api = self.parent_api(&parent);
                let Some(mut current) =
                    (api.get_opt(name_of(&parent)?).await).map_err(ReconcileError::Parent)?
                else {
                    return Ok(Claimed::Done);
                };
                as_cached(&mut current, &self.parent.type_meta());
                let current = Arc::new(current);
                match member.claim(ring_view(member, &current)?, tenure) {
                    Claim::Skip => Ok(Claimed::Done),
                    Claim::Release => self.hand_over(member, &current).await,
                    Claim::Reconcile { .. } => {
                        let annotations = current.metadata.annotations.as_ref();
                        let moved_from = annotations
                            .and_then(|a| a.get(&member.moved_annotation))
                            .map(String::as_str);
                        Ok(Claimed::Own {
                            list_children: member.lists_children(moved_from),
                            parent: current,
                            fresh: Some(tenure),
                        })
                    }
                }
            }
        }
    }

    /// Keeps what `member` remembers of parents bounded by the parents it holds: once it remembers
    /// more than twice as many (and a few), it forgets those its cache no longer holds.
    fn forget_gone_parents(&self, member: &Member) {
        let held = self.parents.len();
        if member.remembered() <= 2 * held + 64 {
            return;
        }
        let uids: std::collections::HashSet<String> = (self.parents.state().iter())
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        member.retain(|uid| uids.contains(uid));
    }

    /// Gives `parent` back to the ring's leader: both labels removed and the member named as the one
    /// it moved from, on the condition that it is still the version this replica decided on (a
    /// newer one triggers another reconcile).
    async fn hand_over(
        &self,
        member: &Member,
        parent: &DynamicObject,
    ) -> Result<Claimed, ReconcileError> {
        let version = (parent.metadata.resource_version.as_deref())
            .ok_or(ReconcileError::MissingMetadata("resourceVersion"))?;
        let patch = json!({"metadata": {
            "resourceVersion": version,
            "labels": {&member.shard_label: null, &member.drain_label: null},
            "annotations": {&member.moved_annotation: &member.name},
        }});
        let api = self.parent_api(parent);
        let written = api
            .patch_metadata(
                name_of(parent)?,
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await;
        match written {
            Ok(_) => {
                member.released(uid_of(parent)?, version);
                self.metrics.shard_released();
                let key = parent_key(parent);
                tracing::debug!(target: RECORD, parent = %key, member = %member.name, at_us = now_us(), "released");
                Ok(Claimed::Done)
            }
            // Changed meanwhile: its watch brings the new version, whose reconcile decides again.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Claimed::Done),
            Err(e) => Err(ReconcileError::Parent(e)),
        }
    }

    /// The children of `parent` (with `uid`) from the API server, by the label every member puts on
    /// them, whichever member that was: those of a parent that just moved here from another member
    /// are in no cache of this replica yet. Only those the parent controls count, as in the caches.
    pub async fn observe_listed(
        &self,
        parent: &DynamicObject,
        uid: &str,
    ) -> Result<Vec<Observed<'_>>, ReconcileError> {
        let namespace = parent.metadata.namespace.as_deref();
        let selector = ListParams::default().labels(&Member::children_of(&self.identity, uid));
        let mut observed = Vec::new();
        for child in &self.children {
            let api = match namespace {
                Some(namespace) => self.api(&child.kind, namespace),
                None => self.api_all(&child.kind),
            };
            let listed = api
                .list(&selector)
                .await
                .map_err(|source| ReconcileError::Lookup {
                    child: child.kind.gvk.to_string(),
                    source,
                })?;
            for mut object in listed.items {
                as_cached(&mut object, &child.kind.type_meta());
                if controlled_by(&object, namespace, uid) {
                    let object = Arc::new(object);
                    observed.push(Observed {
                        kind: &child.kind,
                        object,
                    });
                }
            }
        }
        Ok(observed)
    }
}

/// `observed` with the `listed` copies in place of the cached ones of the same objects.
pub fn merge_listed<'a>(
    observed: Vec<Observed<'a>>,
    listed: Vec<Observed<'a>>,
) -> Vec<Observed<'a>> {
    let same = |a: &Observed, b: &Observed| {
        a.kind.gvk == b.kind.gvk
            && a.name() == b.name()
            && a.object.metadata.namespace == b.object.metadata.namespace
    };
    let mut merged: Vec<Observed<'a>> = (observed.into_iter())
        .filter(|cached| !listed.iter().any(|l| same(cached, l)))
        .collect();
    merged.extend(listed);
    merged
}

/// `parent` as the member's claim reads it.
fn ring_view<'p>(member: &Member, parent: &'p DynamicObject) -> Result<Parent<'p>, ReconcileError> {
    let labels = parent.metadata.labels.as_ref();
    Ok(Parent {
        uid: uid_of(parent)?,
        resource_version: parent
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default(),
        member: labels
            .and_then(|l| l.get(&member.shard_label))
            .map(String::as_str),
        draining: labels.is_some_and(|l| l.contains_key(&member.drain_label)),
    })
}

/// Microseconds since the Unix epoch: the records of all replicas of one machine compare.
pub fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
}
