//! The metric families: their names, help texts, label sets and buckets, registered once per process.
//! Apart from `metrics`, which records into them for one controller, so that the list of what the host
//! exposes reads in one place.

use std::collections::HashMap;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ControllerLabels {
    pub(super) controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ResultLabels {
    pub(super) controller: String,
    pub(super) result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ReasonLabels {
    pub(super) controller: String,
    pub(super) reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct TransitionLabels {
    /// `acquired` or `lost`.
    pub(super) transition: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ActionLabels {
    pub(super) controller: String,
    /// `assign`, `drain`, `reassign` or `fence` (`shard::decide::Action`).
    pub(super) action: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ModuleLabels {
    pub(super) controller: String,
    pub(super) digest: String,
    pub(super) result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct DigestLabels {
    pub(super) controller: String,
    pub(super) digest: String,
}

/// Counts one controller's failing parents. Counted at scrape time, not at reconcile time: a parent
/// deleted while failing is never reconciled again, and must still leave the count.
pub type ScrapeCount = Box<dyn Fn() -> usize + Send + Sync>;

pub(super) type SecondsFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// The metric families, registered once per process and shared by every controller's handle.
pub(super) struct Families {
    pub(super) registry: Registry,
    pub(super) reconcile_total: Family<ResultLabels, Counter>,
    pub(super) reconcile_errors: Family<ControllerLabels, Counter>,
    pub(super) reconcile_time: SecondsFamily,
    pub(super) active_workers: Family<ControllerLabels, Gauge>,
    pub(super) guest_call_time: SecondsFamily,
    pub(super) guest_failures: Family<ReasonLabels, Counter>,
    pub(super) module_loads: Family<ModuleLabels, Counter>,
    pub(super) active_module: Family<DigestLabels, Gauge>,
    pub(super) child_applies: Family<ResultLabels, Counter>,
    pub(super) status_writes: Family<ResultLabels, Counter>,
    pub(super) related_triggers: Family<ControllerLabels, Counter>,
    pub(super) shadow_parents: Family<ResultLabels, Gauge>,
    pub(super) failing_parents: Family<ControllerLabels, Gauge>,
    pub(super) module_refused: Family<ControllerLabels, Gauge>,
    pub(super) module_unavailable: Family<ControllerLabels, Gauge>,
    pub(super) max_workers: Family<ControllerLabels, Gauge>,
    pub(super) conversions: Family<ResultLabels, Counter>,
    pub(super) leader: Gauge,
    pub(super) fenced_writes: Counter,
    pub(super) api_throttled: Counter,
    pub(super) watch_errors: Family<ReasonLabels, Counter>,
    pub(super) lease_transitions: Family<TransitionLabels, Counter>,
    pub(super) shard_member: Gauge,
    pub(super) shard_lease_transitions: Family<TransitionLabels, Counter>,
    pub(super) ring_members: Gauge,
    /// Each controller's count of failing parents, taken when scraped (see `count_failing_parents`).
    pub(super) failing_counters: Mutex<HashMap<String, ScrapeCount>>,
    pub(super) cached_objects: Family<ControllerLabels, Gauge>,
    /// Each controller's count of cached objects, taken when scraped (see `count_cached_objects`).
    pub(super) cached_counters: Mutex<HashMap<String, ScrapeCount>>,
    pub(super) shard_parents: Family<ControllerLabels, Gauge>,
    /// Each sharded controller's count of the parents it holds, taken when scraped.
    pub(super) shard_parent_counters: Mutex<HashMap<String, ScrapeCount>>,
    pub(super) shard_releases: Family<ControllerLabels, Counter>,
    pub(super) shard_assignments: Family<ActionLabels, Counter>,
    pub(super) runtime_tasks: Gauge,
    /// Each controller's active digest, to take its series down when another replaces it.
    pub(super) active_digests: Mutex<HashMap<String, String>>,
}

fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 20))
}

impl Families {
    pub(super) fn new() -> Families {
        let families = Families {
            registry: Registry::default(),
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(seconds_histogram),
            active_workers: Family::default(),
            guest_call_time: Family::new_with_constructor(seconds_histogram),
            guest_failures: Family::default(),
            module_loads: Family::default(),
            active_module: Family::default(),
            child_applies: Family::default(),
            status_writes: Family::default(),
            related_triggers: Family::default(),
            shadow_parents: Family::default(),
            failing_parents: Family::default(),
            module_refused: Family::default(),
            module_unavailable: Family::default(),
            max_workers: Family::default(),
            conversions: Family::default(),
            leader: Gauge::default(),
            fenced_writes: Counter::default(),
            api_throttled: Counter::default(),
            watch_errors: Family::default(),
            lease_transitions: Family::default(),
            shard_member: Gauge::default(),
            shard_lease_transitions: Family::default(),
            ring_members: Gauge::default(),
            failing_counters: Mutex::default(),
            cached_objects: Family::default(),
            cached_counters: Mutex::default(),
            shard_parents: Family::default(),
            shard_parent_counters: Mutex::default(),
            shard_releases: Family::default(),
            shard_assignments: Family::default(),
            runtime_tasks: Gauge::default(),
            active_digests: Mutex::default(),
        };
        let mut registry = Registry::default();
        let f = &families;
        registry.register(
            "controller_runtime_reconcile",
            "Reconciliations by result",
            f.reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Reconciliations that failed",
            f.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Time of one reconciliation",
            f.reconcile_time.clone(),
        );
        registry.register(
            "reconcile_host_status_writes",
            "Parent statuses after a reconcile: written, unchanged, or not written again because the cache had yet to show the host's own write (stale_cache)",
            f.status_writes.clone(),
        );
        registry.register(
            "reconcile_host_related_triggers",
            "Parents queued because an object they selected as related changed",
            f.related_triggers.clone(),
        );
        registry.register(
            "reconcile_host_conversions",
            "Conversion webhook reviews by result: success, or why the review failed",
            f.conversions.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Reconciliations running now",
            f.active_workers.clone(),
        );
        registry.register(
            "reconcile_host_guest_call_duration_seconds",
            "Time of one guest call",
            f.guest_call_time.clone(),
        );
        registry.register(
            "reconcile_host_guest_failures",
            "Guest calls that gave no usable answer, by reason",
            f.guest_failures.clone(),
        );
        registry.register(
            "reconcile_host_module_loads",
            "Module versions loaded or refused, by digest",
            f.module_loads.clone(),
        );
        registry.register(
            "reconcile_host_active_module",
            "The module serving reconciles (1 for its digest)",
            f.active_module.clone(),
        );
        registry.register(
            "reconcile_host_child_applies",
            "Server-side applies of desired children: applied, or skipped as changing nothing",
            f.child_applies.clone(),
        );
        registry.register(
            "reconcile_host_shadow_parents",
            "Parents on which the shadow module's last answer agrees with, differs from, or failed beside the active one's",
            f.shadow_parents.clone(),
        );
        registry.register(
            "reconcile_host_failing_parents",
            "Parents whose last reconcile failed (Ready=False), among the live ones",
            f.failing_parents.clone(),
        );
        registry.register(
            "reconcile_host_module_refused",
            "1 while the latest module version offered was refused and the previous one keeps serving",
            f.module_refused.clone(),
        );
        registry.register(
            "reconcile_host_module_unavailable",
            "1 while the module's source cannot deliver it (a registry down or refusing, credentials that cannot be read, a layer failing its digest, a ConfigMap that cannot be read) and the last good module keeps serving",
            f.module_unavailable.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "How many reconciles may run at once (0: no limit)",
            f.max_workers.clone(),
        );
        registry.register(
            "reconcile_host_leader",
            "1 while this process may reconcile (it holds the lease, or runs without leader election)",
            f.leader.clone(),
        );
        registry.register(
            "reconcile_host_fenced_writes",
            "Writes this process refused to send because it did not hold its Lease (a standby, or a leader paused or cut off past its renew deadline)",
            f.fenced_writes.clone(),
        );
        registry.register(
            "reconcile_host_api_throttled",
            "Answers 429 (Too Many Requests) from the API server to this process's reconcilers, each retried attempt counted: API Priority and Fairness turning them away",
            f.api_throttled.clone(),
        );
        registry.register(
            "reconcile_host_cached_objects",
            "Objects the controller's caches hold (parents, children, related objects, namespaces), counted when scraped",
            f.cached_objects.clone(),
        );
        registry.register(
            "reconcile_host_runtime_tasks",
            "Tasks alive in the process's async runtime, counted when scraped: what must stay flat under churn",
            f.runtime_tasks.clone(),
        );
        registry.register(
            "reconcile_host_watch_errors",
            "Errors of the watches that fill the caches, by kind: expired (410 Gone: behind etcd's compaction, listed again), forbidden, api, transport; each is retried with backoff",
            f.watch_errors.clone(),
        );
        registry.register(
            "reconcile_host_lease_transitions",
            "Times this process took its Lease (acquired) or stepped down from it (lost: held by another, or not renewed within the renew deadline)",
            f.lease_transitions.clone(),
        );
        registry.register(
            "reconcile_host_shard_member",
            "1 while this replica holds its own shard Lease: a member of its ring, reconciling the parents assigned to it",
            f.shard_member.clone(),
        );
        registry.register(
            "reconcile_host_shard_lease_transitions",
            "Times this replica took its own shard Lease (acquired) or stepped down from it (lost: taken by the ring's leader, or not renewed within the renew deadline)",
            f.shard_lease_transitions.clone(),
        );
        registry.register(
            "reconcile_host_shard_parents",
            "Parents this replica holds in its ring (assigned to it, in its cache), counted when scraped",
            f.shard_parents.clone(),
        );
        registry.register(
            "reconcile_host_shard_releases",
            "Parents this replica handed over when the ring's leader asked (drain label): each after its last reconcile of the parent finished",
            f.shard_releases.clone(),
        );
        registry.register(
            "reconcile_host_shard_assignments",
            "Writes of the ring's leader, by action: assign (an unassigned parent labelled), drain (a live member asked to release one), reassign (a fenced member's parent moved), fence (a lapsed member's Lease taken or kept), forget (an orphaned Lease deleted)",
            f.shard_assignments.clone(),
        );
        registry.register(
            "reconcile_host_ring_members",
            "Live members of this replica's ring as it sees them: the shard Leases carrying its ring label, held by their member and renewed within their duration",
            f.ring_members.clone(),
        );
        Families {
            registry,
            ..families
        }
    }
}
