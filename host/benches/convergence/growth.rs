//! Growth: the two floors, reconcile-host and the native controller at several sizes (1,000, 3,000 and
//! 10,000 MyApps unless `RECONCILE_HOST_BENCH_GROWTH` says otherwise), each contender at each size on
//! a fresh control plane, so that no measurement pays for the objects an earlier one left in etcd.

use std::path::Path;

use anyhow::Result;
use testcluster::TestCluster;

use crate::floor::Floor;
use crate::measure::{self, Contender, Converged, converge};
use crate::spawn::Spawner;
use crate::{guests, myapp};

/// The three contenders' convergence at one size.
pub struct Row {
    pub parents: usize,
    pub floor: Converged,
    pub checked_floor: Converged,
    pub ours: Converged,
    pub native: Converged,
}

/// The sizes to measure: `RECONCILE_HOST_BENCH_GROWTH` (comma-separated; empty for none).
pub fn sizes() -> Vec<usize> {
    match std::env::var("RECONCILE_HOST_BENCH_GROWTH") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect(),
        Err(_) => vec![1000, 3000, 10000],
    }
}

pub async fn run(sizes: &[usize], logs: &Path) -> Result<Vec<Row>> {
    let guest = guests::component("guest_myapp");
    let mut rows = Vec::new();
    for &n in sizes {
        eprintln!("bench: growth at {n} parents");
        let floor = on_fresh_cluster(logs, async |client, cluster, ns, _| {
            measure::floor(client, cluster, ns, n, Floor::Bare).await
        })
        .await?;
        let checked_floor = on_fresh_cluster(logs, async |client, cluster, ns, _| {
            measure::floor(client, cluster, ns, n, Floor::Checked).await
        })
        .await?;
        let ours = on_fresh_cluster(logs, async |client, cluster, ns, spawn| {
            let module = guest.to_str().unwrap();
            let mut host = spawn.host("reconcile-host-growth", ns, &["--module", module], &[])?;
            let contender = Contender {
                process: &host.process,
                metrics_addr: Some(&host.metrics_addr),
            };
            let converged = converge(client, cluster, ns, n, &contender).await;
            host.process.kill();
            converged
        })
        .await?;
        let native = on_fresh_cluster(logs, async |client, cluster, ns, spawn| {
            let mut native = spawn.native(ns)?;
            let contender = Contender {
                process: &native,
                metrics_addr: None,
            };
            let converged = converge(client, cluster, ns, n, &contender).await;
            native.kill();
            converged
        })
        .await?;
        rows.push(Row {
            parents: n,
            floor,
            checked_floor,
            ours,
            native,
        });
    }
    Ok(rows)
}

/// Starts a control plane with the MyApp CRD and a namespace, runs `measure` on it, and stops it.
async fn on_fresh_cluster<F>(logs: &Path, measure: F) -> Result<Converged>
where
    F: AsyncFnOnce(&kube::Client, &TestCluster, &str, &Spawner) -> Result<Converged>,
{
    let cluster = TestCluster::start().await?;
    myapp::install_crd(&cluster);
    let client = cluster.client().await?;
    let ns = cluster.namespace("growth").await?;
    let spawn = Spawner::new(&cluster, logs);
    measure(&client, &cluster, &ns, &spawn).await
}
