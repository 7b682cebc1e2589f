//! The hot swap on N converged parents (a ConfigMap update until every Deployment carries the second
//! module's label), and its floor: a bare client sending the writes such a swap needs.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use testcluster::TestCluster;
use testcluster::process::Component;

use crate::cpu::{CpuClock, CpuSeconds};
use crate::{api, floor, watch};

/// A hot swap on every parent, or the floor's writes of one: how long, the Deployment and status
/// writes per parent, and the CPU time spent meanwhile.
pub struct Swap {
    pub time: Duration,
    pub writes: f64,
    pub cpu: CpuSeconds,
}

/// Times `change` on the `parents` of `namespace`, with what it cost the API server and the CPU.
async fn timed(
    client: &Client,
    cluster: &TestCluster,
    contender: Option<&Component>,
    parents: usize,
    change: impl AsyncFnOnce() -> Result<()>,
) -> Result<Swap> {
    let before = api::Requests::take(client).await?;
    let clock = CpuClock { cluster, contender };
    let cpu_before = clock.read();
    let start = Instant::now();
    change().await?;
    Ok(Swap {
        time: start.elapsed(),
        cpu: clock.read() - cpu_before,
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
    host: &Component,
    parents: usize,
    (name, module): (&str, &Path),
) -> Result<Swap> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    timed(client, cluster, Some(host), parents, async || {
        let update = crate::module_configmap(name, module)?;
        configmaps
            .patch(name, &PatchParams::default(), &Patch::Merge(update))
            .await?;
        watch::labelled(client, namespace, parents).await
    })
    .await
}

/// The floor of a swap that changes every child, on the `parents` of `namespace`.
pub async fn floor(
    client: &Client,
    cluster: &TestCluster,
    namespace: &str,
    parents: usize,
) -> Result<Swap> {
    timed(client, cluster, None, parents, async || {
        floor::rewrite_all(client, namespace).await
    })
    .await
}
