//! Prometheus metrics: controller-runtime's names for the controller (so existing dashboards and alerts
//! work), and `reconcile_host_*` for the guest runtime and the module. Every series carries
//! controller-runtime's `controller` label, so one host running many reconcilers (`serve`) reports each
//! on its own. The families themselves (names, help, labels) are in `families`; this is how a
//! controller records into them.

use std::sync::Arc;
use std::time::Duration;

pub use super::families::ScrapeCount;
use super::families::{
    ActionLabels, ControllerLabels, DigestLabels, Families, ModuleLabels, ReasonLabels,
    ResultLabels, TransitionLabels,
};

/// One controller's view of the process's metrics: every figure it records carries its `controller`
/// label. Cheap to clone; `for_controller` gives another controller a handle on the same registry.
#[derive(Clone)]
pub struct Metrics {
    families: Arc<Families>,
    controller: ControllerLabels,
}

impl Metrics {
    /// A registry of its own, with a handle for `controller` (the parent kind, lowercased, for `run`).
    pub fn new(controller: &str) -> Metrics {
        Metrics {
            families: Arc::new(Families::new()),
            controller: ControllerLabels {
                controller: controller.to_string(),
            },
        }
    }

    /// A handle on the same registry for another controller.
    pub fn for_controller(&self, controller: &str) -> Metrics {
        Metrics {
            families: self.families.clone(),
            controller: ControllerLabels {
                controller: controller.to_string(),
            },
        }
    }

    /// Drops this controller's gauges (a stopped controller runs nothing and serves no module); its
    /// counters stay, as Prometheus expects of counters.
    pub fn remove_controller(&self) {
        let f = &self.families;
        f.active_workers.remove(&self.controller);
        f.max_workers.remove(&self.controller);
        f.module_refused.remove(&self.controller);
        f.module_unavailable.remove(&self.controller);
        f.failing_parents.remove(&self.controller);
        f.cached_objects.remove(&self.controller);
        f.shard_parents.remove(&self.controller);
        for counters in [
            &f.failing_counters,
            &f.cached_counters,
            &f.shard_parent_counters,
        ] {
            (counters.lock().expect("metrics lock poisoned")).remove(&self.controller.controller);
        }
        self.set_active_digest(None);
    }

    /// Makes `digest` this controller's one active module series (none: no series).
    fn set_active_digest(&self, digest: Option<&str>) {
        let f = &self.families;
        let controller = self.controller.controller.clone();
        let mut active = f.active_digests.lock().expect("metrics lock poisoned");
        let previous = match digest {
            Some(digest) => active.insert(controller.clone(), digest.to_string()),
            None => active.remove(&controller),
        };
        if let Some(previous) = previous.filter(|p| Some(p.as_str()) != digest) {
            f.active_module.remove(&DigestLabels {
                controller: controller.clone(),
                digest: previous,
            });
        }
        if let Some(digest) = digest {
            f.active_module
                .get_or_create(&DigestLabels {
                    controller,
                    digest: digest.to_string(),
                })
                .set(1);
        }
    }

    fn labels<L>(&self, make: impl FnOnce(String) -> L) -> L {
        make(self.controller.controller.clone())
    }

    /// Marks a reconcile as running until the guard drops, and records its time and result then.
    pub fn reconcile_started(&self) -> ReconcileTimer<'_> {
        self.families
            .active_workers
            .get_or_create(&self.controller)
            .inc();
        ReconcileTimer {
            metrics: self,
            start: std::time::Instant::now(),
        }
    }

    pub fn reconcile_finished(&self, result: &'static str) {
        let labels = self.labels(|controller| ResultLabels { controller, result });
        self.families.reconcile_total.get_or_create(&labels).inc();
        if result == "error" {
            self.families
                .reconcile_errors
                .get_or_create(&self.controller)
                .inc();
        }
    }

    pub fn guest_call(&self, took: Duration, failure: Option<&'static str>) {
        self.families
            .guest_call_time
            .get_or_create(&self.controller)
            .observe(took.as_secs_f64());
        if let Some(reason) = failure {
            let labels = self.labels(|controller| ReasonLabels { controller, reason });
            self.families.guest_failures.get_or_create(&labels).inc();
        }
    }

    /// Counts a watch error by its kind: `expired` (410 Gone: the watch fell behind etcd's compaction
    /// and lists again), `forbidden` (403), `api` (another API error), `transport` (no answer).
    pub fn watch_error(&self, reason: &'static str) {
        let labels = self.labels(|controller| ReasonLabels { controller, reason });
        self.families.watch_errors.get_or_create(&labels).inc();
    }

    /// Counts a conversion review: `success`, or the reason it failed, each its own label value:
    /// `ConverterFailed` (the guest's error, trap or limit), `ConversionInvalid` (not the object in
    /// the desired version), `ConversionMetadataChanged` (labels, annotations outside the group,
    /// ownerReferences or finalizers changed), `ConversionFailed` (the converter panicked),
    /// `ConversionBusy` (no slot free: answered 429, retried by the API server) or `BadRequest`.
    pub fn conversion(&self, result: &'static str) {
        let labels = self.labels(|controller| ResultLabels { controller, result });
        self.families.conversions.get_or_create(&labels).inc();
    }

    /// Counts `parents` queued by a change to an object they selected.
    pub fn related_triggers(&self, parents: usize) {
        let counter = self
            .families
            .related_triggers
            .get_or_create(&self.controller);
        counter.inc_by(parents as u64);
    }

    /// Counts a parent status: `written`, `unchanged`, or `stale_cache` (see `controller::written_status`).
    pub fn status_write(&self, result: &'static str) {
        let labels = self.labels(|controller| ResultLabels { controller, result });
        self.families.status_writes.get_or_create(&labels).inc();
    }

    /// Counts a desired child: `applied` (a server-side apply, or a create-only write of a child no
    /// cache held), or `skipped` as an apply that would change nothing; and `fields_taken` for each
    /// created child whose fields moved to the host's apply manager (`controller::create`).
    pub fn child_apply(&self, result: &'static str) {
        let labels = self.labels(|controller| ResultLabels { controller, result });
        self.families.child_applies.get_or_create(&labels).inc();
    }

    /// Sets how many parents the shadow module agrees with, differs on, or fails on.
    pub fn shadow_parents(&self, agrees: i64, differs: i64, failing: i64) {
        for (result, count) in [
            ("agrees", agrees),
            ("differs", differs),
            ("failing", failing),
        ] {
            let labels = self.labels(|controller| ResultLabels { controller, result });
            self.families
                .shadow_parents
                .get_or_create(&labels)
                .set(count);
        }
    }

    /// Records a module version; an accepted one becomes this controller's only active module.
    pub fn module_loaded(&self, digest: &str, accepted: bool) {
        let result = if accepted { "loaded" } else { "refused" };
        let f = &self.families;
        let digest = digest.to_string();
        f.module_loads
            .get_or_create(&self.labels(|controller| ModuleLabels {
                controller,
                digest: digest.clone(),
                result,
            }))
            .inc();
        f.module_refused
            .get_or_create(&self.controller)
            .set(i64::from(!accepted));
        // A version to load, good or not, is one the source delivered.
        self.module_source(true);
        if accepted {
            self.set_active_digest(Some(&digest));
        }
    }

    /// Whether the module's source delivers (`true`), or fails while the last good module serves.
    pub fn module_source(&self, delivers: bool) {
        self.families
            .module_unavailable
            .get_or_create(&self.controller)
            .set(i64::from(!delivers));
    }

    /// Sets how many reconciles of this controller may run at once.
    pub fn max_concurrent_reconciles(&self, max: u16) {
        self.families
            .max_workers
            .get_or_create(&self.controller)
            .set(i64::from(max));
    }

    /// Counts this controller's failing parents with `counter` whenever the metrics are scraped.
    pub fn count_failing_parents(&self, counter: ScrapeCount) {
        self.families
            .failing_counters
            .lock()
            .expect("metrics lock poisoned")
            .insert(self.controller.controller.clone(), counter);
    }

    /// Counts the objects this controller's caches hold with `counter` whenever the metrics are scraped.
    pub fn count_cached_objects(&self, counter: ScrapeCount) {
        self.families
            .cached_counters
            .lock()
            .expect("metrics lock poisoned")
            .insert(self.controller.controller.clone(), counter);
    }

    /// Records whether this process may reconcile (leads, or needs no lease).
    pub fn leading(&self, leads: bool) {
        self.families.leader.set(i64::from(leads));
    }

    /// Counts a Lease taken (`true`) or stepped down from (`false`), and records the new state.
    pub fn lease_transition(&self, acquired: bool) {
        let transition = if acquired { "acquired" } else { "lost" };
        let labels = TransitionLabels { transition };
        self.families.lease_transitions.get_or_create(&labels).inc();
        self.leading(acquired);
    }

    /// Counts this replica's own shard Lease taken (`true`) or stepped down from (`false`), and records
    /// whether it is a member of its ring now (`crate::shard`).
    pub fn shard_lease_transition(&self, acquired: bool) {
        let transition = if acquired { "acquired" } else { "lost" };
        let labels = TransitionLabels { transition };
        let f = &self.families;
        f.shard_lease_transitions.get_or_create(&labels).inc();
        f.shard_member.set(i64::from(acquired));
    }

    /// Counts the parents this replica holds in its ring with `counter`, when scraped.
    pub fn count_shard_parents(&self, counter: ScrapeCount) {
        (self.families.shard_parent_counters.lock())
            .expect("metrics lock poisoned")
            .insert(self.controller.controller.clone(), counter);
    }

    /// Counts a parent this replica handed over to its ring's leader.
    pub fn shard_released(&self) {
        self.families
            .shard_releases
            .get_or_create(&self.controller)
            .inc();
    }

    /// Counts a write of the ring's leader (`assign`, `drain`, `reassign`, `fence`).
    pub fn shard_assignment(&self, action: &'static str) {
        let labels = ActionLabels {
            controller: self.controller.controller.clone(),
            action,
        };
        self.families.shard_assignments.get_or_create(&labels).inc();
    }

    /// Records how many live members this replica sees in its ring.
    pub fn ring_members(&self, members: usize) {
        self.families.ring_members.set(members as i64);
    }

    /// Counts a 429 answer of the API server.
    pub fn api_throttled(&self) {
        self.families.api_throttled.inc();
    }

    /// Counts a write the fence refused to send.
    pub fn write_fenced(&self) {
        self.families.fenced_writes.inc();
    }

    /// The OpenMetrics text of every metric of every controller.
    pub fn encode(&self) -> String {
        let f = &self.families;
        let counted = [
            (&f.failing_counters, &f.failing_parents),
            (&f.cached_counters, &f.cached_objects),
            (&f.shard_parent_counters, &f.shard_parents),
        ];
        for (counters, family) in counted {
            for (controller, count) in counters.lock().expect("metrics lock poisoned").iter() {
                let labels = ControllerLabels {
                    controller: controller.clone(),
                };
                family.get_or_create(&labels).set(count() as i64);
            }
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            f.runtime_tasks
                .set(runtime.metrics().num_alive_tasks() as i64);
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.families.registry)
            .expect("writing to a String");
        text
    }
}

/// Ends a reconcile's `active_workers` slot and observes its duration when dropped.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    start: std::time::Instant,
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        let Metrics {
            families,
            controller,
        } = self.metrics;
        families.active_workers.get_or_create(controller).dec();
        families
            .reconcile_time
            .get_or_create(controller)
            .observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
