//! Prometheus metrics: controller-runtime's names for the controller (so existing dashboards and alerts
//! work), and `reconcile_host_*` for the guest runtime and the module.

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
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModuleLabels {
    digest: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DigestLabels {
    digest: String,
}

/// Every metric the host exports, registered once.
pub struct Metrics {
    registry: Registry,
    controller: ControllerLabels,
    reconcile_total: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    reconcile_time: Family<ControllerLabels, Histogram>,
    active_workers: Family<ControllerLabels, Gauge>,
    guest_call_time: Histogram,
    guest_failures: Family<ReasonLabels, Counter>,
    module_loads: Family<ModuleLabels, Counter>,
    active_module: Family<DigestLabels, Gauge>,
    child_applies: Family<OutcomeLabels, Counter>,
}

fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 20))
}

impl Metrics {
    /// `controller` labels the controller-runtime metrics: the parent kind, lowercased.
    pub fn new(controller: &str) -> Metrics {
        let mut registry = Registry::default();
        let reconcile_total = Family::<ResultLabels, Counter>::default();
        let reconcile_errors = Family::<ControllerLabels, Counter>::default();
        let reconcile_time = Family::<ControllerLabels, Histogram>::new_with_constructor(
            seconds_histogram as fn() -> Histogram,
        );
        let active_workers = Family::<ControllerLabels, Gauge>::default();
        let guest_call_time = seconds_histogram();
        let guest_failures = Family::<ReasonLabels, Counter>::default();
        let module_loads = Family::<ModuleLabels, Counter>::default();
        let child_applies = Family::<OutcomeLabels, Counter>::default();
        let active_module = Family::<DigestLabels, Gauge>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Reconciliations by result",
            reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Reconciliations that failed",
            reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Time of one reconciliation",
            reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Reconciliations running now",
            active_workers.clone(),
        );
        registry.register(
            "reconcile_host_guest_call_duration_seconds",
            "Time of one guest call",
            guest_call_time.clone(),
        );
        registry.register(
            "reconcile_host_guest_failures",
            "Guest calls that gave no usable answer, by reason",
            guest_failures.clone(),
        );
        registry.register(
            "reconcile_host_module_loads",
            "Module versions loaded or refused, by digest",
            module_loads.clone(),
        );
        registry.register(
            "reconcile_host_active_module",
            "The module serving reconciles (1 for its digest)",
            active_module.clone(),
        );
        registry.register(
            "reconcile_host_child_applies",
            "Server-side applies of desired children: applied, or skipped as changing nothing",
            child_applies.clone(),
        );
        Metrics {
            registry,
            controller: ControllerLabels {
                controller: controller.to_string(),
            },
            reconcile_total,
            reconcile_errors,
            reconcile_time,
            active_workers,
            guest_call_time,
            guest_failures,
            module_loads,
            active_module,
            child_applies,
        }
    }

    /// Marks a reconcile as running until the guard drops, and records its time and result then.
    pub fn reconcile_started(&self) -> ReconcileTimer<'_> {
        self.active_workers.get_or_create(&self.controller).inc();
        ReconcileTimer {
            metrics: self,
            start: std::time::Instant::now(),
        }
    }

    pub fn reconcile_finished(&self, result: &'static str) {
        let labels = ResultLabels {
            controller: self.controller.controller.clone(),
            result,
        };
        self.reconcile_total.get_or_create(&labels).inc();
        if result == "error" {
            self.reconcile_errors.get_or_create(&self.controller).inc();
        }
    }

    pub fn guest_call(&self, took: Duration, failure: Option<&'static str>) {
        self.guest_call_time.observe(took.as_secs_f64());
        if let Some(reason) = failure {
            self.guest_failures
                .get_or_create(&ReasonLabels { reason })
                .inc();
        }
    }

    /// Counts a desired child: `applied`, or `skipped` as an apply that would change nothing.
    pub fn child_apply(&self, result: &'static str) {
        self.child_applies
            .get_or_create(&OutcomeLabels { result })
            .inc();
    }

    /// Records a module version; an accepted one becomes the active module.
    pub fn module_loaded(&self, digest: &str, accepted: bool, previous: Option<&str>) {
        let result = if accepted { "loaded" } else { "refused" };
        self.module_loads
            .get_or_create(&ModuleLabels {
                digest: digest.to_string(),
                result,
            })
            .inc();
        if accepted {
            if let Some(previous) = previous {
                self.active_module.remove(&DigestLabels {
                    digest: previous.to_string(),
                });
            }
            self.active_module
                .get_or_create(&DigestLabels {
                    digest: digest.to_string(),
                })
                .set(1);
        }
    }

    /// The OpenMetrics text of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
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
        let metrics = self.metrics;
        metrics
            .active_workers
            .get_or_create(&metrics.controller)
            .dec();
        metrics
            .reconcile_time
            .get_or_create(&metrics.controller)
            .observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_controller_runtime_names_and_guest_figures() {
        let metrics = Metrics::new("myapp");
        drop(metrics.reconcile_started());
        metrics.reconcile_finished("success");
        metrics.reconcile_finished("error");
        metrics.guest_call(Duration::from_micros(40), Some("GuestTrapped"));
        metrics.module_loaded("sha256:aaa", true, None);
        metrics.module_loaded("sha256:bbb", true, Some("sha256:aaa"));
        metrics.module_loaded("sha256:ccc", false, None);
        let text = metrics.encode();
        for expected in [
            r#"controller_runtime_reconcile_total{controller="myapp",result="success"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="myapp"} 1"#,
            r#"controller_runtime_active_workers{controller="myapp"} 0"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="myapp"} 1"#,
            r#"reconcile_host_guest_failures_total{reason="GuestTrapped"} 1"#,
            r#"reconcile_host_module_loads_total{digest="sha256:ccc",result="refused"} 1"#,
            r#"reconcile_host_active_module{digest="sha256:bbb"} 1"#,
        ] {
            assert!(text.contains(expected), "missing {expected} in:\n{text}");
        }
        assert!(
            !text.contains(r#"reconcile_host_active_module{digest="sha256:aaa"}"#),
            "the old module is still active"
        );
    }
}
