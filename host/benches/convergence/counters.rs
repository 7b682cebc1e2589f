//! reconcile-host's own account of a convergence, from the metrics it serves: its reconciles and the
//! time spent in them, and any other sample by name. The convergence and the sharding benchmarks
//! read their hosts alike.

use crate::http;

/// What reconcile-host counted while converging: reconciles, and the time spent in them and in the
/// guest calls, per parent.
#[derive(Clone, Copy)]
pub struct HostCounters {
    pub reconciles: f64,
    pub reconcile_seconds: f64,
    pub guest_seconds: f64,
}

impl HostCounters {
    /// reconcile-host's counters so far (of every result), from the metrics it serves at `metrics_addr`.
    pub fn take(metrics_addr: Option<&str>) -> Option<HostCounters> {
        let (_, metrics) = http::get(metrics_addr?, "/metrics").ok()?;
        let sum = |prefix: &str| metric_sum(&metrics, prefix, "");
        Some(HostCounters {
            reconciles: sum("controller_runtime_reconcile_total{"),
            reconcile_seconds: sum("controller_runtime_reconcile_time_seconds_sum{"),
            guest_seconds: sum("reconcile_host_guest_call_duration_seconds_sum{"),
        })
    }

    /// What was counted since `before`, per parent of `n`.
    pub fn since(
        before: Option<HostCounters>,
        metrics_addr: Option<&str>,
        n: usize,
    ) -> Option<Self> {
        let (before, after) = before.zip(HostCounters::take(metrics_addr))?;
        let n = n as f64;
        Some(HostCounters {
            reconciles: (after.reconciles - before.reconciles) / n,
            reconcile_seconds: (after.reconcile_seconds - before.reconcile_seconds) / n,
            guest_seconds: (after.guest_seconds - before.guest_seconds) / n,
        })
    }
}

/// The sum of every sample of the Prometheus text `metrics` whose line starts with `prefix` and
/// contains `labels`.
pub fn metric_sum(metrics: &str, prefix: &str, labels: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(prefix) && l.contains(labels))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// The sum of the samples of the family `name` in the Prometheus text `metrics` (its exposed name:
/// a counter's ends in `_total`), or none if it has none: a family the host does not serve is not
/// a zero.
pub fn metric(metrics: &str, name: &str) -> Option<f64> {
    let values: Vec<f64> = samples(metrics, name).map(|(_, v)| v).collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// The samples of the family `name` summed by the value of its label `label`.
pub fn metric_by(metrics: &str, name: &str, label: &str) -> Vec<(String, f64)> {
    let mut by = std::collections::BTreeMap::<String, f64>::new();
    let key = format!("{label}=\"");
    for (labels, value) in samples(metrics, name) {
        let Some((_, rest)) = labels.split_once(&key) else {
            continue;
        };
        let of = rest.split('"').next().unwrap_or_default();
        *by.entry(of.to_string()).or_default() += value;
    }
    by.into_iter().collect()
}

/// The samples of the family `name`: their labels (`{...}`, or empty) and values.
fn samples<'a>(metrics: &'a str, name: &'a str) -> impl Iterator<Item = (&'a str, f64)> + 'a {
    metrics.lines().filter_map(move |line| {
        let rest = line.strip_prefix(name)?;
        // `name{labels} value` or `name value`; not a family whose name merely starts so.
        let (labels, value) = match rest.strip_prefix('{') {
            Some(labelled) => labelled.rsplit_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        Some((labels, value.trim().parse().ok()?))
    })
}
