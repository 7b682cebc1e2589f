//! `make bench` (controller part): on one local control plane, N MyApps (default 1000,
//! `RECONCILE_HOST_BENCH_PARENTS`) created at once, and the time until every one has its Deployment and
//! its status, for four contenders in turn:
//! - the seed's Python controller (`bench/seed-python`), first, because it watches every namespace;
//! - a bare client doing the same writes directly, with no watch and no cache: the floor;
//! - reconcile-host with the Rust MyApp guest, its module in a ConfigMap;
//! - a native kube-rs controller with the same logic linked in (`convergence/native.rs`).
//!
//! Then, on the host's N parents, a hot swap (ConfigMap update until every Deployment carries the new
//! module's label), and cold starts (process start until a first parent has its status) with and
//! without the compiled-artifact cache. Each contender works in its own namespace; its MyApps ask for
//! 1 replica (the CRD's minimum), so the cluster's deployment controller, scheduler and kwok work
//! alongside, as they would in a real cluster, for every contender alike.
//! Each convergence comes with the API server's own count of the writes it caused, per parent, by
//! resource and verb, beside the floor's. Then growth: the floor, reconcile-host and the native
//! controller at 1,000, 3,000 and 10,000 parents (`RECONCILE_HOST_BENCH_GROWTH`, empty to skip), each on
//! a fresh control plane.
//! Everything is printed and written to `target/bench/controllers.txt`.

#[path = "convergence/answer.rs"]
mod answer;
#[path = "convergence/api.rs"]
mod api;
#[path = "convergence/cpu.rs"]
mod cpu;
#[path = "convergence/floor.rs"]
mod floor;
#[path = "convergence/growth.rs"]
mod growth;
#[path = "../tests/common/guests.rs"]
#[allow(dead_code)]
mod guests;
#[path = "../tests/common/http.rs"]
#[allow(dead_code)]
mod http;
#[path = "../tests/common/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
#[path = "convergence/measure.rs"]
mod measure;
#[path = "../tests/common/myapp.rs"]
#[allow(dead_code)]
mod myapp;
#[path = "convergence/native.rs"]
mod native;
#[path = "convergence/parents.rs"]
mod parents;
#[path = "../tests/common/ports.rs"]
mod ports;
#[path = "convergence/report.rs"]
mod report;
#[path = "convergence/spawn.rs"]
mod spawn;
#[path = "convergence/watch.rs"]
mod watch;

use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result};
use cpu::CpuClock;
use floor::Floor;
use futures::TryStreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use measure::{Contender, converge};
use parents::create;
use report::Swap;
use serde_json::json;
use spawn::Spawner;
use testcluster::TestCluster;

/// Requests in flight at once: for creating parents, for the floor's writes, and each controller's
/// reconcile concurrency (reconcile-host's default).
pub const CONCURRENCY: usize = 16;
const VARIANT_LABEL: &str = "example.com/variant";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, namespace, ..] = args.as_slice()
        && flag == "--native-controller"
    {
        return native::main(namespace);
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

fn parents() -> usize {
    std::env::var("RECONCILE_HOST_BENCH_PARENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000)
}

async fn run() -> Result<()> {
    let n = parents();
    let logs = tempfile::tempdir()?;
    eprintln!("bench: starting the control plane");
    let cluster = TestCluster::start().await?;
    myapp::install_crd(&cluster);
    let client = cluster.client().await?;
    let spawn = Spawner::new(&cluster, logs.path());
    let install = std::process::Command::new(guests::repo_root().join("bench/seed-python/run.sh"))
        .arg("--install-only")
        .status()?;
    anyhow::ensure!(install.success(), "installing the seed's Python client");
    let guest = guests::component("guest_myapp");
    let variant_b = guests::myapp_variant_b();

    // The seed's Python controller.
    let ns = cluster.namespace("python").await?;
    let mut python = spawn.python()?;
    let python_converged = converge(&client, &cluster, &ns, n, &unwatched(&python)).await?;
    python.kill();

    // The floors: create and write, no controller.
    let ns = cluster.namespace("floor").await?;
    let floor = measure::floor(&client, &cluster, &ns, n, Floor::Bare).await?;
    // The hot swap's floor, on the same parents: every Deployment and status written again.
    let before = api::Requests::take(&client).await?;
    let clock = CpuClock {
        cluster: &cluster,
        contender: None,
    };
    let cpu_before = clock.read();
    let start = Instant::now();
    floor::rewrite_all(&client, &ns).await?;
    let swap_floor = Swap {
        time: start.elapsed(),
        cpu: clock.read() - cpu_before,
        writes: api::Requests::take(&client)
            .await?
            .since(&before, n)
            .controller(),
    };
    let ns = cluster.namespace("floor-checked").await?;
    let checked_floor = measure::floor(&client, &cluster, &ns, n, Floor::Checked).await?;

    // reconcile-host, its module in a ConfigMap, then the hot swap on its parents.
    let ns = cluster.namespace("host").await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    configmaps
        .create(&PostParams::default(), &module_configmap(&guest)?)
        .await?;
    let cm_ref = format!("{ns}/myapp-module");
    let mut host = spawn.host("reconcile-host", &ns, &["--module-configmap", &cm_ref], &[])?;
    let contender = Contender {
        process: &host.process,
        metrics_addr: Some(&host.metrics_addr),
    };
    let ours = converge(&client, &cluster, &ns, n, &contender).await?;
    let before = api::Requests::take(&client).await?;
    let clock = CpuClock {
        cluster: &cluster,
        contender: Some(&host.process),
    };
    let cpu_before = clock.read();
    let swap_start = Instant::now();
    configmaps
        .patch(
            "myapp-module",
            &PatchParams::default(),
            &Patch::Merge(module_configmap(&variant_b)?),
        )
        .await?;
    watch::labelled(&client, &ns, n + 1).await?;
    let swap = Swap {
        time: swap_start.elapsed(),
        cpu: clock.read() - cpu_before,
        writes: api::Requests::take(&client)
            .await?
            .since(&before, n + 1)
            .controller(),
    };
    host.process.kill();

    // The native kube-rs controller.
    let ns = cluster.namespace("native").await?;
    let mut native = spawn.native(&ns)?;
    let native_converged = converge(&client, &cluster, &ns, n, &unwatched(&native)).await?;
    native.kill();

    // Cold start, with an empty and then with a filled artifact cache.
    let mut cold = Vec::new();
    let js = guests::myapp_js();
    for (language, module) in [("Rust", &guest), ("JavaScript", &js)] {
        let cache = tempfile::tempdir()?;
        for cached in [false, true] {
            let ns = cluster.namespace("cold").await?;
            create(&client, &ns, 0..1).try_collect::<Vec<_>>().await?;
            let module = ["--module", module.to_str().unwrap()];
            let cache_dir = ["--cache-dir", cache.path().to_str().unwrap()];
            let start = Instant::now();
            let mut host = spawn.host("reconcile-host-cold", &ns, &module, &cache_dir)?;
            watch::converged(&client, &ns, 1).await?;
            cold.push((language, cached, start.elapsed()));
            host.process.kill();
        }
    }
    drop(cluster);

    let growth = growth::run(&growth::sizes(), logs.path()).await?;
    let report = report::report(&report::Results {
        parents: n,
        python: python_converged,
        floor,
        checked_floor,
        ours,
        native: native_converged,
        swap,
        swap_floor,
        cold,
        growth,
    });
    print!("{report}");
    let dir = guests::repo_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("controllers.txt"), &report)?;
    println!("(written to target/bench/controllers.txt)");
    Ok(())
}

/// A controller whose reconciles the benchmark cannot count (it serves no reconcile-host metrics).
fn unwatched(process: &testcluster::process::Component) -> Contender<'_> {
    Contender {
        process,
        metrics_addr: None,
    }
}

fn module_configmap(module: &Path) -> Result<ConfigMap> {
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    Ok(serde_json::from_value(json!({
        "metadata": {"name": "myapp-module"},
        "binaryData": {"module.wasm": ByteString(bytes)},
    }))?)
}
