//! The hot swap on N converged parents (a ConfigMap update until every Deployment carries the second
//! module's label), and its floors: a bare client sending the writes such a swap needs, and the same
//! with the `Updated` Event that reconcile-host posts for each changed child.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use testcluster::TestCluster;

use crate::counters::{HostCounters, metric_sum};
use crate::cpu::{CpuClock, CpuSeconds};
use crate::floor::{self, Floor};
use crate::measure::Contender;
use crate::{api, http, watch};

/// A hot swap on every parent, or the floor's writes of one: how long, the Deployment and status
/// writes per parent, the CPU time spent meanwhile, and reconcile-host's own account of it.
pub struct Swap {
    pub time: Duration,
    pub writes: f64,
    pub cpu: CpuSeconds,
    pub host: Option<HostCounters>,
    /// When the host had compiled and swapped in the new module: the part of a swap that the floor has
    /// no counterpart for.
    pub module_loaded: Option<Duration>,
}

/// Times `change` on the `parents` of `namespace`, with what it cost the API server and the CPU.
async fn timed(
    client: &Client,
    cluster: &TestCluster,
    contender: Option<&Contender<'_>>,
    parents: usize,
    change: impl AsyncFnOnce(Instant) -> Result<Option<Duration>>,
) -> Result<Swap> {
    let metrics_addr = contender.and_then(|c| c.metrics_addr);
    let counted_before = HostCounters::take(metrics_addr);
    let before = api::Requests::take(client).await?;
    let clock = CpuClock {
        cluster,
        contender: contender.map(|c| c.process),
    };
    let cpu_before = clock.read();
    let start = Instant::now();
    let module_loaded = change(start).await?;
    let time = start.elapsed();
    let cpu = clock.read() - cpu_before;
    Ok(Swap {
        time,
        cpu,
        host: HostCounters::since(counted_before, metrics_addr, parents),
        module_loaded,
        writes: api::Requests::take(client)
            .await?
            .since(&before, parents)
            .controller(),
    })
}

/// reconcile-host's swap: its module ConfigMap `name` now holds `module`; timed until every one of
/// the `parents` Deployments is the new module's.
pub async fn host(
    client: &Client,
    cluster: &TestCluster,
    namespace: &str,
    host: &Contender<'_>,
    parents: usize,
    (name, module): (&str, &Path),
) -> Result<Swap> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let metrics_addr = host.metrics_addr.map(str::to_owned);
    timed(client, cluster, Some(host), parents, async |start| {
        let update = crate::module_configmap(name, module)?;
        let loads_before = module_loads(metrics_addr.clone()).await;
        configmaps
            .patch(name, &PatchParams::default(), &Patch::Merge(update))
            .await?;
        let (loaded, labelled) = futures::join!(
            module_loaded(metrics_addr, loads_before, start),
            watch::labelled(client, namespace, parents)
        );
        labelled.map(|()| loaded)
    })
    .await
}

/// The modules the host has loaded so far, from its metrics (0 without them).
async fn module_loads(metrics_addr: Option<String>) -> f64 {
    let Some(addr) = metrics_addr else {
        return 0.0;
    };
    let metrics = tokio::task::spawn_blocking(move || http::get(&addr, "/metrics")).await;
    let Ok(Ok((_, metrics))) = metrics else {
        return 0.0;
    };
    let loaded = "result=\"loaded\"";
    metric_sum(&metrics, "reconcile_host_module_loads_total{", loaded)
}

/// How long after `start` the host counted one more module loaded than `before` (polled every 10 ms).
async fn module_loaded(
    metrics_addr: Option<String>,
    before: f64,
    start: Instant,
) -> Option<Duration> {
    metrics_addr.as_ref()?;
    while start.elapsed() < Duration::from_secs(60) {
        if module_loads(metrics_addr.clone()).await > before {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

/// The floor (bare or checked) of a swap that changes every child, on the `parents` of `namespace`.
pub async fn floor(
    client: &Client,
    cluster: &TestCluster,
    (namespace, parents): (&str, usize),
    floor: Floor,
) -> Result<Swap> {
    timed(client, cluster, None, parents, async |_| {
        floor::rewrite_all(client, namespace, floor)
            .await
            .map(|()| None)
    })
    .await
}
