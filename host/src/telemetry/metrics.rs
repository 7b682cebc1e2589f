//! Prometheus metrics: controller-runtime's names for the controller (so existing dashboards and alerts
//! work), and `reconcile_host_*` for the guest runtime and the module. Every series carries
//! controller-runtime's `controller` label, so one host running many reconcilers (`serve`) reports each
//! on its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    controller: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModuleLabels {
    controller: String,
    digest: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DigestLabels {
    controller: String,
    digest: String,
}

/// Counts one controller's failing parents. Counted at scrape time, not at reconcile time: a parent
/// deleted while failing is never reconciled again, and must still leave the count.
pub type FailingCounter = Box<dyn Fn() -> usize + Send + Sync>;

type SecondsFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// The metric families, registered once per process and shared by every controller's handle.
struct Families {
    registry: Registry,
    reconcile_total: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    reconcile_time: SecondsFamily,
    active_workers: Family<ControllerLabels, Gauge>,
    guest_call_time: SecondsFamily,
    guest_failures: Family<ReasonLabels, Counter>,
    module_loads: Family<ModuleLabels, Counter>,
    active_module: Family<DigestLabels, Gauge>,
    child_applies: Family<ResultLabels, Counter>,
    related_triggers: Family<ControllerLabels, Counter>,
    shadow_parents: Family<ResultLabels, Gauge>,
    failing_parents: Family<ControllerLabels, Gauge>,
    module_refused: Family<ControllerLabels, Gauge>,
    max_workers: Family<ControllerLabels, Gauge>,
    conversions: Family<ResultLabels, Counter>,
    leader: Gauge,
    /// Each controller's count of failing parents, taken when scraped (see `count_failing_parents`).
    failing_counters: Mutex<HashMap<String, FailingCounter>>,
    /// Each controller's active digest, to take its series down when another replaces it.
    active_digests: Mutex<HashMap<String, String>>,
}

/// One controller's view of the process's metrics: every figure it records carries its `controller`
/// label. Cheap to clone; `for_controller` gives another controller a handle on the same registry.
#[derive(Clone)]
pub struct Metrics {
    families: Arc<Families>,
    controller: ControllerLabels,
}

fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 20))
}

impl Families {
    fn new() -> Families {
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
            related_triggers: Family::default(),
            shadow_parents: Family::default(),
            failing_parents: Family::default(),
            module_refused: Family::default(),
            max_workers: Family::default(),
            conversions: Family::default(),
            leader: Gauge::default(),
            failing_counters: Mutex::default(),
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
            "controller_runtime_max_concurrent_reconciles",
            "How many reconciles may run at once (0: no limit)",
            f.max_workers.clone(),
        );
        registry.register(
            "reconcile_host_leader",
            "1 while this process may reconcile (it holds the lease, or runs without leader election)",
            f.leader.clone(),
        );
        Families {
            registry,
            ..families
        }
    }
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
        f.failing_parents.remove(&self.controller);
        f.failing_counters
            .lock()
            .expect("metrics lock poisoned")
            .remove(&self.controller.controller);
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

    /// Counts a conversion review: `success`, or the reason it failed (a guest failure's reason, or
    /// `ConversionInvalid` for an answer that is not the object in the desired version).
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

    /// Counts a desired child: `applied`, or `skipped` as an apply that would change nothing.
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
        if accepted {
            self.set_active_digest(Some(&digest));
        }
    }

    /// Sets how many reconciles of this controller may run at once.
    pub fn max_concurrent_reconciles(&self, max: u16) {
        self.families
            .max_workers
            .get_or_create(&self.controller)
            .set(i64::from(max));
    }

    /// Counts this controller's failing parents with `counter` whenever the metrics are scraped.
    pub fn count_failing_parents(&self, counter: FailingCounter) {
        self.families
            .failing_counters
            .lock()
            .expect("metrics lock poisoned")
            .insert(self.controller.controller.clone(), counter);
    }

    /// Records whether this process may reconcile (leads, or needs no lease).
    pub fn leading(&self, leads: bool) {
        self.families.leader.set(i64::from(leads));
    }

    /// The OpenMetrics text of every metric of every controller.
    pub fn encode(&self) -> String {
        let f = &self.families;
        for (controller, count) in f
            .failing_counters
            .lock()
            .expect("metrics lock poisoned")
            .iter()
        {
            let labels = ControllerLabels {
                controller: controller.clone(),
            };
            f.failing_parents.get_or_create(&labels).set(count() as i64);
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
