//! The ring's leader at work: it watches the parents' metadata (not their bodies), keeps of each
//! parent only its mark (`marks`), and on every change of a parent or of the ring, and every second
//! (a member lapses with no event), decides each parent's action (`decide`) and writes it.
//!
//! Every write is conditional on the version decided from, and goes through a client fenced by the
//! leader Lease: a leader that lost its Lease, or decided on a stale cache, changes nothing. A
//! parent written and still cached at the version it was written from is passed over until the
//! watch brings the new one, so a pass never writes one decision twice.
//!
//! A member whose Lease the leader took (`Fenced`) keeps it fenced while it still has parents: the
//! leader renews the taken Lease until the last one moved, so the member cannot stand again (it
//! waits a Lease's duration unrenewed) while parents it held are moving away.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ApiResource, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::assign::assign;
use super::decide::{Action, Held, decide};
use super::marks::{Marks, Meta, located};
use super::membership::ShardSettings;
use super::ring::{Ring, State, member_of};
use crate::lease::{Fence, claimed};
use crate::telemetry::Metrics;

/// How often the leader decides again without a change: a member lapses by the clock alone.
const TICK: Duration = Duration::from_secs(1);
/// How long the leader waits after a change for the ones that come with it.
const COALESCE: Duration = Duration::from_millis(100);
/// Label writes in flight at once.
const WRITES: usize = 16;

/// What the ring's leader needs: where the parents and the ring's Leases are, written through a
/// client fenced by the leader Lease, and the ring as this replica observes it.
pub struct Assigner {
    /// Every write, fenced by the leader Lease.
    pub client: Client,
    /// The parent kind, and the namespace the reconciler watches (`None`: all).
    pub resource: ApiResource,
    pub namespace: Option<String>,
    /// Which parents the reconciler takes (a decorator's selector), as a watch selects them.
    pub selector: Option<String>,
    /// The ring's Leases.
    pub leases: Api<Lease>,
    pub ring: Arc<Mutex<Ring>>,
    /// The leader Lease's fence: the assigner writes only while it admits.
    pub fence: Fence,
    /// This replica's ring and member name (the holder it writes into a Lease it takes).
    pub ring_settings: ShardSettings,
    pub shard_label: String,
    pub drain_label: String,
    /// Where a parent moved from a lapsed member names that member (`Identity::moved_annotation`).
    pub moved_annotation: String,
    pub metrics: Metrics,
}

/// What the leader remembers between passes.
#[derive(Default)]
struct Memory {
    /// Parents written (or found changed), by UID, with the version they were decided from.
    written: HashMap<Box<str>, Box<str>>,
    /// Fenced members whose taken Lease was last renewed, and when.
    kept: HashMap<String, Instant>,
}

impl Memory {
    /// Every write due at `now`, from the `parents` and the `ring`.
    fn decide(&mut self, parents: &Marks, ring: &mut Ring, now: Instant) -> Vec<Work> {
        let live: Vec<String> = ring.live(now).into_iter().map(String::from).collect();
        let mut work = Vec::new();
        let mut fence = BTreeSet::new();
        let mut holding: BTreeSet<String> = BTreeSet::new();
        // Every member a parent names: its Lease is no orphan to delete.
        let mut named: BTreeSet<&str> = BTreeSet::new();
        // The parents still cached at the version they were written from; the others are done with.
        let mut pending = HashMap::new();
        for (key, parent) in parents.iter() {
            let (uid, version) = (&parent.uid, &parent.version);
            let held = Held {
                member: parent.member.as_deref(),
                draining: parent.draining,
            };
            named.extend(held.member);
            if let Some(member) = held.member
                && ring.state(member, now) == State::Fenced
            {
                holding.insert(member.to_string());
            }
            if self.written.get(uid) == Some(version) {
                pending.insert(uid.clone(), version.clone());
                continue;
            }
            let desired = assign(key, live.iter().map(String::as_str));
            let label = |to: Option<&str>, moved_from: Option<&str>, action| Work::Label {
                key: key.to_string(),
                uid: uid.clone(),
                version: version.clone(),
                to: to.map(String::from),
                moved_from: moved_from.map(String::from),
                action,
            };
            match decide(held, desired, |member| ring.state(member, now)) {
                Action::Keep => {}
                Action::Assign { to } => work.push(label(Some(to), None, "assign")),
                Action::Drain { .. } => work.push(label(None, None, "drain")),
                Action::Reassign { from, to } => {
                    work.push(label(Some(to), Some(from), "reassign"));
                }
                Action::Fence { member } => {
                    fence.insert(member.to_string());
                }
            }
        }
        self.written = pending;
        // A fenced member that still has parents stays fenced: its taken Lease is renewed.
        self.kept.retain(|member, _| holding.contains(member));
        for member in holding {
            let due = (self.kept.get(&member)).is_none_or(|at| now - *at >= TICK * 2);
            if due && !fence.contains(&member) {
                self.kept.insert(member.clone(), now);
                fence.insert(member);
            }
        }
        let orphans = (ring.orphaned(now))
            .filter_map(member_of)
            .filter(|member| !named.contains(member) && !fence.contains(*member))
            .map(|member| Work::Forget {
                member: member.to_string(),
            })
            .collect::<Vec<_>>();
        work.extend(fence.into_iter().map(|member| Work::Fence { member }));
        work.extend(orphans);
        work
    }
}

/// One write the leader decided.
#[derive(Debug, PartialEq)]
enum Work {
    /// Labels of the parent with `key` at `version`: assigned to `to`, or asked to drain; with the
    /// member it is moved from, when that member cannot release it (it lapsed).
    Label {
        key: String,
        uid: Box<str>,
        version: Box<str>,
        to: Option<String>,
        moved_from: Option<String>,
        action: &'static str,
    },
    /// Take (or keep) the Lease of `member`.
    Fence { member: String },
    /// Delete the orphaned Lease of `member`, which no parent names.
    Forget { member: String },
}

impl Assigner {
    /// Runs until the task is dropped: while this replica leads, the parents' watch and the
    /// decisions (in one task, so that both stop together and the cache keeps filling while writes
    /// are in flight). A replica that does not lead watches nothing: the parents' metadata is the
    /// leader's memory alone.
    pub async fn run(self) {
        let mut leading = self.fence.leading();
        loop {
            if leading.wait_for(|leads| *leads).await.is_err() {
                return;
            }
            tokio::select! {
                () = self.lead() => {}
                _ = leading.wait_for(|leads| !*leads) => {}
            }
        }
    }

    /// One term's assignment: a fresh table of the parents, decisions on every change.
    async fn lead(&self) {
        let marks = Mutex::new(Marks::new(&self.shard_label, &self.drain_label));
        let changed = Notify::new();
        let mut config = watcher::Config::default();
        if let Some(selector) = &self.selector {
            config = config.labels(selector);
        }
        // An `Api` of `PartialObjectMeta` asks for the metadata alone.
        let api: Api<Meta> = match &self.namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &self.resource),
            None => Api::all_with(self.client.clone(), &self.resource),
        };
        let watch = async {
            let mut stream = std::pin::pin!(watcher(api, config).default_backoff());
            loop {
                match stream.try_next().await {
                    Ok(Some(event)) => {
                        marks.lock().expect("marks lock poisoned").apply(event);
                        changed.notify_one();
                    }
                    Ok(None) => return,
                    Err(e) => {
                        tracing::debug!(error = %e, "watching the parents' metadata; retried")
                    }
                }
            }
        };
        let assign = async {
            let mut memory = Memory::default();
            loop {
                tokio::select! {
                    // A burst of changes (a list, many writes landing) makes one pass.
                    _ = changed.notified() => tokio::time::sleep(COALESCE).await,
                    _ = tokio::time::sleep(TICK) => {}
                }
                if !self.fence.admits_writes() {
                    continue;
                }
                let work = {
                    let mut ring = self.ring.lock().expect("ring lock poisoned");
                    let marks = marks.lock().expect("marks lock poisoned");
                    memory.decide(&marks, &mut ring, Instant::now())
                };
                let fenced = work.iter().any(|w| matches!(w, Work::Fence { .. }));
                self.carry_out(work, &mut memory.written).await;
                if fenced {
                    // The taken Leases' watch lands in a moment: their parents move in the next pass.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    changed.notify_one();
                }
            }
        };
        tokio::select! {
            () = watch => {}
            () = assign => {}
        }
    }

    /// The parent kind in `namespace` (`None`: every namespace, or a cluster-scoped kind).
    fn api(&self, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &self.resource),
            None => Api::all_with(self.client.clone(), &self.resource),
        }
    }

    /// Writes `work`, at most `WRITES` at a time; records each parent written at its version.
    async fn carry_out(&self, work: Vec<Work>, written: &mut HashMap<Box<str>, Box<str>>) {
        let done: Vec<Option<(Box<str>, Box<str>)>> = futures::stream::iter(work)
            .map(|work| self.write(work))
            .buffer_unordered(WRITES)
            .collect()
            .await;
        written.extend(done.into_iter().flatten());
    }

    /// One write; the parent's UID and version once written (or found changed meanwhile).
    async fn write(&self, work: Work) -> Option<(Box<str>, Box<str>)> {
        match work {
            Work::Label {
                key,
                uid,
                version,
                to,
                moved_from,
                action,
            } => {
                let labels: Value = match &to {
                    Some(to) => json!({&self.shard_label: to, &self.drain_label: null}),
                    None => json!({&self.drain_label: "true"}),
                };
                let mut patch = json!({"metadata": {"resourceVersion": version, "labels": labels}});
                if let Some(from) = moved_from {
                    patch["metadata"]["annotations"] = json!({&self.moved_annotation: from});
                }
                let (namespace, name) = located(&key);
                // The answer is the parent's metadata alone: no body to parse and drop.
                match self
                    .api(namespace)
                    .patch_metadata(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                {
                    Ok(_) => {
                        self.metrics.shard_assignment(action);
                        tracing::debug!(parent = %name, ?namespace, ?to, action, "assigned");
                        Some((uid, version))
                    }
                    // Changed since: the watch brings the new version, decided anew.
                    Err(kube::Error::Api(status)) if status.code == 409 => Some((uid, version)),
                    Err(kube::Error::Api(status)) if status.code == 404 => None,
                    Err(e) => {
                        tracing::debug!(parent = %name, error = %e, "assigning; retried");
                        None
                    }
                }
            }
            Work::Fence { member } => {
                self.take(&member).await;
                None
            }
            Work::Forget { member } => {
                self.forget(&member).await;
                None
            }
        }
    }

    /// Deletes `member`'s orphaned Lease as last observed (conditional on that version: it fails
    /// if the member, or a leader keeping it taken, renewed it meanwhile).
    async fn forget(&self, member: &str) {
        let lease = {
            let ring = self.ring.lock().expect("ring lock poisoned");
            ring.lease(member).cloned()
        };
        let Some(lease) = lease else {
            return;
        };
        let name = lease.name_any();
        let preconditions = Preconditions {
            resource_version: lease.resource_version(),
            uid: lease.uid(),
        };
        let params = DeleteParams {
            preconditions: Some(preconditions),
            ..DeleteParams::default()
        };
        match self.leases.delete(&name, &params).await {
            Ok(_) => {
                self.metrics.shard_assignment("forget");
                tracing::info!(%member, lease = %name, "deleted the Lease of a member gone for a minute");
            }
            Err(e) => tracing::debug!(%member, error = %e, "deleting an orphaned Lease; retried"),
        }
    }

    /// Takes `member`'s Lease as last observed (conditional on that version: it fails if the member
    /// renewed meanwhile), or renews it if already taken.
    async fn take(&self, member: &str) {
        let lease = {
            let ring = self.ring.lock().expect("ring lock poisoned");
            ring.lease(member).cloned()
        };
        let me = &self.ring_settings.member;
        let now = MicroTime(jiff::Timestamp::now());
        let Some(mut lease) = lease else {
            // Gone (deleted by hand, or as an orphan while another reconciler's parents named the
            // member) or never made: the member cannot write without it, but its parents move only
            // once its Lease is held by another. So it is made anew, held by this leader; the create
            // fails if the member made it first.
            let mut lease = self.ring_settings.lease_of(member);
            lease.spec = Some(claimed(&LeaseSpec::default(), me, now));
            match self.leases.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    self.metrics.shard_assignment("fence");
                    tracing::info!(%member, lease = %lease.name_any(), "made the Lease of a member that has none, held by this leader");
                }
                Err(e) => tracing::debug!(%member, error = %e, "making a member's Lease; retried"),
            }
            return;
        };
        let spec = lease.spec.take().unwrap_or_default();
        lease.spec = Some(claimed(&spec, me, now));
        let name = lease.name_any();
        match self
            .leases
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.metrics.shard_assignment("fence");
                tracing::info!(%member, lease = %name, "took the Lease of a member that lapsed");
            }
            Err(e) => tracing::debug!(%member, error = %e, "taking a member's Lease; retried"),
        }
    }
}

#[cfg(test)]
#[path = "assigner_tests.rs"]
mod tests;
