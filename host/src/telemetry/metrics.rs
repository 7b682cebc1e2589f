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
    shadow_parents: Family<ResultLabels, Gauge>,
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
            shadow_parents: Family::default(),
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
        if accepted {
            self.set_active_digest(Some(&digest));
        }
    }

    /// The OpenMetrics text of every metric of every controller.
    pub fn encode(&self) -> String {
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
mod tests {
    use super::*;

    #[test]
    fn exports_controller_runtime_names_and_guest_figures() {
        let metrics = Metrics::new("myapp");
        drop(metrics.reconcile_started());
        metrics.reconcile_finished("success");
        metrics.reconcile_finished("error");
        metrics.guest_call(Duration::from_micros(40), Some("GuestTrapped"));
        metrics.module_loaded("sha256:aaa", true);
        metrics.module_loaded("sha256:bbb", true);
        metrics.module_loaded("sha256:ccc", false);
        let text = metrics.encode();
        for expected in [
            r#"controller_runtime_reconcile_total{controller="myapp",result="success"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="myapp"} 1"#,
            r#"controller_runtime_active_workers{controller="myapp"} 0"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="myapp"} 1"#,
            r#"reconcile_host_guest_failures_total{controller="myapp",reason="GuestTrapped"} 1"#,
            r#"reconcile_host_module_loads_total{controller="myapp",digest="sha256:ccc",result="refused"} 1"#,
            r#"reconcile_host_active_module{controller="myapp",digest="sha256:bbb"} 1"#,
        ] {
            assert!(text.contains(expected), "missing {expected} in:\n{text}");
        }
        assert!(
            !text.contains(r#"digest="sha256:aaa"} 1"#),
            "the old module is still active:\n{text}"
        );
    }

    #[test]
    fn controllers_share_a_registry_and_keep_their_own_series() {
        let team_a = Metrics::new("team-a/myapp");
        let team_b = team_a.for_controller("team-b/website");
        team_a.module_loaded("sha256:aaa", true);
        team_b.module_loaded("sha256:bbb", true);
        team_b.reconcile_finished("error");
        let text = team_a.encode();
        assert!(
            text.contains(
                r#"reconcile_host_active_module{controller="team-a/myapp",digest="sha256:aaa"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"controller_runtime_reconcile_errors_total{controller="team-b/website"} 1"#
            ),
            "{text}"
        );
        assert!(
            !text.contains(
                r#"controller_runtime_reconcile_errors_total{controller="team-a/myapp"}"#
            ),
            "{text}"
        );

        team_b.remove_controller();
        let text = team_a.encode();
        assert!(
            !text.contains(r#"reconcile_host_active_module{controller="team-b/website""#),
            "{text}"
        );
        assert!(
            text.contains(r#"controller="team-a/myapp",digest="sha256:aaa"} 1"#),
            "{text}"
        );
    }
}
