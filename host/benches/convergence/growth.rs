//! One row of the benchmark: the two floors, reconcile-host and the native controller converging N
//! MyApps, each on a fresh control plane (`fresh`), and optionally each one's hot swap on the parents
//! it converged. The main row (N = `RECONCILE_HOST_BENCH_PARENTS`, with the swaps) is followed by
//! growth rows at larger sizes (3,000 and 10,000 unless `RECONCILE_HOST_BENCH_GROWTH` says otherwise).

use std::path::Path;

use anyhow::Result;

use crate::floor::Floor;
use crate::fresh::on_fresh_cluster;
use crate::measure::{self, Contender, Converged, converge};
use crate::swap::{self, Swap};
use crate::{guests, module_configmap};

/// The four contenders' convergence at one size.
pub struct Row {
    pub parents: usize,
    pub floor: Converged,
    pub checked_floor: Converged,
    pub ours: Converged,
    pub native: Converged,
    /// The hot swap, and its floor, if this row measured them.
    pub swaps: Option<Swaps>,
}

/// reconcile-host's hot swap on its converged parents, and the bare client's writes of one, without
/// and with the Events the host's rules add.
pub struct Swaps {
    pub ours: Swap,
    pub floor: Swap,
    pub checked_floor: Swap,
}

/// The growth sizes: `RECONCILE_HOST_BENCH_GROWTH` (comma-separated; empty for none), those above
/// `main` (the main row measures that one).
pub fn sizes(main: usize) -> Vec<usize> {
    let sizes = match std::env::var("RECONCILE_HOST_BENCH_GROWTH") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect(),
        Err(_) => vec![3000, 10000],
    };
    sizes.into_iter().filter(|&n| n > main).collect()
}

const MODULE_CONFIGMAP: &str = "myapp-module";

impl Row {
    /// Measures the four contenders at `n` parents, each on its own control plane; with `swaps`,
    /// each floor's and the host's swap on the parents they converged.
    pub async fn measure(n: usize, logs: &Path, swaps: bool) -> Result<Row> {
        eprintln!("bench: {n} parents");
        let guest = guests::component("guest_myapp");
        let variant_b = guests::myapp_variant_b();
        // Each floor converges its parents, then (with `swaps`) swaps them the same way.
        let floor_and_swap = |kind: Floor| async move {
            let name = match kind {
                Floor::Bare => "floor",
                Floor::Checked => "floor-checked",
            };
            on_fresh_cluster(name, logs, async |client, cluster, ns, _| {
                let converged = measure::floor(client, cluster, ns, n, kind).await?;
                let swap = if swaps {
                    Some(swap::floor(client, cluster, (ns, n), kind).await?)
                } else {
                    None
                };
                Ok((converged, swap))
            })
            .await
        };
        let (floor, swap_floor) = floor_and_swap(Floor::Bare).await?;
        let (checked_floor, swap_checked_floor) = floor_and_swap(Floor::Checked).await?;
        let (ours, swap) = on_fresh_cluster("host", logs, async |client, cluster, ns, spawn| {
            let configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
                kube::Api::namespaced(client.clone(), ns);
            configmaps
                .create(
                    &Default::default(),
                    &module_configmap(MODULE_CONFIGMAP, &guest)?,
                )
                .await?;
            let configmap = format!("{ns}/{MODULE_CONFIGMAP}");
            let module = ["--module-configmap", configmap.as_str()];
            let mut host = spawn.host("reconcile-host", ns, &module, &[])?;
            let contender = Contender {
                process: &host.process,
                metrics_addr: Some(&host.metrics_addr),
            };
            let converged = converge(client, cluster, ns, n, &contender).await?;
            // The warm-up parent `converge` made first is swapped too.
            let b = (MODULE_CONFIGMAP, variant_b.as_path());
            let swap = if swaps {
                Some(swap::host(client, cluster, ns, &contender, n + 1, b).await?)
            } else {
                None
            };
            host.process.kill();
            Ok((converged, swap))
        })
        .await?;
        let native = on_fresh_cluster("native", logs, async |client, cluster, ns, spawn| {
            let mut native = spawn.native(ns)?;
            let converged = converge(client, cluster, ns, n, &Contender::unwatched(&native)).await;
            native.kill();
            converged
        })
        .await?;
        Ok(Row {
            parents: n,
            floor,
            checked_floor,
            ours,
            native,
            swaps: swap.zip(swap_floor).zip(swap_checked_floor).map(
                |((ours, floor), checked_floor)| Swaps {
                    ours,
                    floor,
                    checked_floor,
                },
            ),
        })
    }
}
