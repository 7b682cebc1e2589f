//! `make bench` (controller part): N MyApps (default 1000, `RECONCILE_HOST_BENCH_PARENTS`) created at
//! once, and the time until every one has its Deployment and its status, for five contenders, each on
//! a fresh control plane (`fresh`: a contender measured on a cluster that holds another's objects pays
//! for them):
//! - the seed's Python controller (`bench/seed-python`);
//! - a bare client doing the same writes directly, with no watch and no cache: the floor; and the
//!   checked floor, which also sends the GET and the Event that reconcile-host's rules add;
//! - reconcile-host with the Rust MyApp guest, its module in a ConfigMap;
//! - a native kube-rs controller with the same logic linked in (`convergence/native.rs`).
//!
//! Then, on the host's N parents, a hot swap (ConfigMap update until every Deployment carries the new
//! module's label) beside its two floors (bare, and checked: with the host's Events), and cold starts
//! (process start until a first parent has its status) with and without the compiled-artifact cache.
//! The MyApps ask for 1 replica (the CRD's minimum), so the cluster's deployment controller, scheduler
//! and kwok work alongside, as they would in a real cluster, for every contender alike. Each
//! convergence comes with the API server's own count of the requests it served, per parent, by
//! resource and verb, and the CPU every process spent.
//! Then growth: the floors, reconcile-host and the native controller at 3,000 and 10,000 parents
//! (`RECONCILE_HOST_BENCH_GROWTH`, empty to skip).
//! The cores are kept awake meanwhile (`awake`: on a virtual machine, halting vCPUs charge each wakeup
//! to whoever runs next). Everything is printed and written to `target/bench/controllers.txt`.

#[path = "convergence/answer.rs"]
mod answer;
#[path = "convergence/api.rs"]
mod api;
#[path = "convergence/awake.rs"]
mod awake;
#[path = "convergence/counters.rs"]
#[allow(dead_code)]
mod counters;
#[path = "convergence/cpu.rs"]
mod cpu;
#[path = "convergence/floor.rs"]
mod floor;
#[path = "convergence/fresh.rs"]
mod fresh;
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
#[path = "convergence/swap.rs"]
mod swap;
#[path = "convergence/watch.rs"]
mod watch;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use fresh::on_fresh_cluster;
use futures::TryStreamExt;
use growth::Row;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use measure::{Contender, converge};
use parents::{create, setting};
use serde_json::json;
use spawn::Spawner;
use testcluster::TestCluster;

/// Requests in flight at once: for creating parents, for the floor's writes, and each controller's
/// reconcile concurrency (reconcile-host's default).
pub const CONCURRENCY: usize = 16;
const VARIANT_LABEL: &str = "example.com/variant";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--native-controller") {
        return native::main(&args[2]);
    }
    awake::main_or_spin(run())
}

fn parents() -> usize {
    setting("RECONCILE_HOST_BENCH_PARENTS", 1000)
}

async fn run() -> Result<()> {
    let n = parents();
    let _awake = awake::KeepAwake::start()?;
    let logs = tempfile::tempdir()?;
    let logs = logs.path();
    let install = std::process::Command::new(guests::repo_root().join("bench/seed-python/run.sh"))
        .arg("--install-only")
        .status()?;
    anyhow::ensure!(install.success(), "installing the seed's Python client");

    let python = on_fresh_cluster("python", logs, async |client, cluster, ns, spawn| {
        let mut python = spawn.python()?;
        let converged = converge(client, cluster, ns, n, &Contender::unwatched(&python)).await;
        python.kill();
        converged
    })
    .await?;
    let main = Row::measure(n, logs, true).await?;
    let cold = on_fresh_cluster("cold", logs, async |client, cluster, _, spawn| {
        cold_starts(client, cluster, spawn).await
    })
    .await?;
    let mut rows = vec![main];
    for size in growth::sizes(n) {
        rows.push(Row::measure(size, logs, false).await?);
    }

    let report = report::report(&report::Results { python, rows, cold });
    print!("{report}");
    let dir = guests::repo_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("controllers.txt"), &report)?;
    println!("(written to target/bench/controllers.txt)");
    Ok(())
}

/// Cold starts, process start until a first parent has its status: the Rust and the JavaScript
/// guest, each with an empty and then with a filled artifact cache.
async fn cold_starts(
    client: &kube::Client,
    cluster: &TestCluster,
    spawn: &Spawner,
) -> Result<Vec<(&'static str, bool, Duration)>> {
    let mut cold = Vec::new();
    let (rust, js) = (guests::component("guest_myapp"), guests::myapp_js());
    for (language, module) in [("Rust", &rust), ("JavaScript", &js)] {
        let cache = tempfile::tempdir()?;
        for cached in [false, true] {
            let ns = cluster.namespace("cold").await?;
            create(client, &ns, 0..1).try_collect::<Vec<_>>().await?;
            let module = ["--module", module.to_str().unwrap()];
            let cache_dir = ["--cache-dir", cache.path().to_str().unwrap()];
            let start = Instant::now();
            let mut host = spawn.host("reconcile-host-cold", &ns, &module, &cache_dir)?;
            watch::converged(client, &ns, 1).await?;
            cold.push((language, cached, start.elapsed()));
            host.process.kill();
        }
    }
    Ok(cold)
}

/// The module ConfigMap `name`, holding `module`.
fn module_configmap(name: &str, module: &Path) -> Result<ConfigMap> {
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "binaryData": {"module.wasm": ByteString(bytes)},
    }))?)
}
