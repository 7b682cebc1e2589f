//! `make bench` (platform part): R reconcilers (default 20, `RECONCILE_HOST_BENCH_RECONCILERS`) with P
//! parents each (default 50, `RECONCILE_HOST_BENCH_RECONCILER_PARENTS`), on one local control plane:
//! - one `serve` host, running as its shipped ServiceAccount, to which the R `Reconciler`s are added one
//!   after another on existing parents: the time from applying a `Reconciler` to its first parent
//!   reconciled and to all P, and the host's resident memory per added reconciler;
//! - R single-reconciler hosts (`run`), one per namespace: the time from starting a host to its first
//!   parent reconciled, and their memory in total.
//!
//! The cores are kept awake meanwhile, as in the controller part (`convergence/awake.rs`).
//!
//! Printed and written to `target/bench/platform.txt`.

#[path = "convergence/awake.rs"]
mod awake;
#[path = "../tests/common/guests.rs"]
#[allow(dead_code)]
mod guests;
#[path = "../tests/common/host.rs"]
#[allow(dead_code)]
mod host;
#[path = "../tests/common/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
#[path = "../tests/common/myapp.rs"]
#[allow(dead_code)]
mod myapp;
#[path = "convergence/parents.rs"]
mod parents;
#[path = "../tests/common/platform.rs"]
#[allow(dead_code)]
mod platform;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::TryStreamExt;
use kube::Client;
use kube::api::ListParams;
use serde_json::json;
use testcluster::TestCluster;
use testcluster::process::Component;

use parents::setting;

/// Requests in flight at once when creating parents.
pub const CONCURRENCY: usize = 16;
const POLL: Duration = Duration::from_millis(100);
const GIVE_UP: Duration = Duration::from_secs(600);

fn main() -> Result<()> {
    awake::main_or_spin(run())
}

/// One reconciler's figures: to its first parent, to all of them.
struct Started {
    first: Duration,
    all: Duration,
}

async fn run() -> Result<()> {
    let reconcilers: usize = setting("RECONCILE_HOST_BENCH_RECONCILERS", 20);
    let parents: usize = setting("RECONCILE_HOST_BENCH_RECONCILER_PARENTS", 50);
    let _awake = awake::KeepAwake::start()?;
    let logs = tempfile::tempdir()?;
    eprintln!("bench: starting the control plane");
    let cluster = TestCluster::start().await?;
    platform::install_platform(&cluster);
    let client = cluster.client().await?;
    let host_bin = Path::new(env!("CARGO_BIN_EXE_reconcile-host"));
    let module = guests::component("guest_myapp");

    // One platform host; reconcilers added one after another.
    let mut namespaces = Vec::new();
    for _ in 0..reconcilers {
        let ns = cluster.namespace("team").await?;
        platform::apply_team_rbac(&cluster, "myapp", &ns, |_| {});
        platform::put_module(&client, &ns, "myapp-module", "myapp.wasm", &module).await;
        create(&client, &ns, parents).await?;
        namespaces.push(ns);
    }
    let kubeconfig = cluster
        .service_account_kubeconfig("reconcile-host-system", "reconcile-host-platform")
        .await?;
    let kubeconfig = kubeconfig.to_string_lossy().into_owned();
    let env = [
        ("KUBECONFIG", Path::new(&kubeconfig)),
        ("RUST_LOG", Path::new("warn")),
    ];
    let serve_args = [
        "serve",
        "--metrics-addr",
        "127.0.0.1:0",
        "--reconciler-selector",
        "bench=platform",
    ]
    .map(String::from);
    let mut serve = Component::spawn("serve", host_bin, &serve_args, &env, logs.path())?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let baseline = serve.memory_kib().0;
    let mut added = Vec::new();
    for ns in &namespaces {
        let mut reconciler = platform::example_reconciler("myapp", ns, "platform");
        reconciler["metadata"]["labels"] = json!({"bench": "platform"});
        let start = Instant::now();
        platform::apply_reconciler(&client, &reconciler).await;
        let first = wait_reconciled(&client, ns, 1)
            .await?
            .then(|| start.elapsed());
        wait_reconciled(&client, ns, parents).await?;
        added.push(Started {
            first: first.unwrap_or_default(),
            all: start.elapsed(),
        });
        eprintln!(
            "bench: reconciler {} of {reconcilers} converged",
            added.len()
        );
    }
    let (serve_rss, serve_peak) = serve.memory_kib();
    serve.kill();

    // The same as R single-reconciler hosts, as admin (each would have RBAC of its own in a cluster).
    let admin = cluster.kubeconfig_path().to_string_lossy().into_owned();
    let env = [
        ("KUBECONFIG", Path::new(&admin)),
        ("RUST_LOG", Path::new("warn")),
    ];
    let mut singles = Vec::new();
    let mut single_started = Vec::new();
    for _ in 0..reconcilers {
        let ns = cluster.namespace("single").await?;
        platform::put_module(&client, &ns, "myapp-module", "myapp.wasm", &module).await;
        create(&client, &ns, parents).await?;
        let args = [
            "run",
            "--metrics-addr",
            "127.0.0.1:0",
            "--parent",
            "example.com/v1alpha1/MyApp",
            "--child",
            "apps/v1/Deployment",
            "--namespace",
            &ns,
            "--module-configmap",
            &format!("{ns}/myapp-module"),
            "--concurrency",
            "4",
        ]
        .map(String::from);
        let log_dir = logs.path().join(&ns);
        std::fs::create_dir_all(&log_dir)?;
        let start = Instant::now();
        let host = Component::spawn("run", host_bin, &args, &env, &log_dir)?;
        wait_reconciled(&client, &ns, 1).await?;
        let first = start.elapsed();
        wait_reconciled(&client, &ns, parents).await?;
        single_started.push(Started {
            first,
            all: start.elapsed(),
        });
        singles.push(host);
    }
    let singles_rss: u64 = singles.iter().map(|h| h.memory_kib().0).sum();
    for mut host in singles {
        host.kill();
    }

    let report = report(
        reconcilers,
        parents,
        &added,
        (baseline, serve_rss, serve_peak),
        &single_started,
        singles_rss,
    );
    print!("{report}");
    let dir = guests::repo_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("platform.txt"), &report)?;
    println!("(written to target/bench/platform.txt)");
    Ok(())
}

/// Creates MyApps `app-<i>` for `i` in `0..n`.
async fn create(client: &Client, namespace: &str, n: usize) -> Result<()> {
    parents::create(client, namespace, 0..n)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// Waits until at least `n` parents of the namespace have a status phase.
async fn wait_reconciled(client: &Client, namespace: &str, n: usize) -> Result<bool> {
    let api = myapp::myapps(client, namespace);
    let deadline = Instant::now() + GIVE_UP;
    loop {
        let list = api.list(&ListParams::default()).await?;
        let done = list
            .items
            .iter()
            .filter(|p| p.data.pointer("/status/phase").is_some())
            .count();
        if done >= n {
            return Ok(true);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{namespace}: {done} of {n} parents reconciled after {GIVE_UP:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

fn report(
    reconcilers: usize,
    parents: usize,
    added: &[Started],
    (baseline, serve_rss, serve_peak): (u64, u64, u64),
    singles: &[Started],
    singles_rss: u64,
) -> String {
    let stats = |times: Vec<Duration>| {
        let mut times = times;
        times.sort();
        let median = times[times.len() / 2];
        let max = times[times.len() - 1];
        format!(
            "median {:.2} s, max {:.2} s",
            median.as_secs_f64(),
            max.as_secs_f64()
        )
    };
    let mib = |kib: u64| kib as f64 / 1024.0;
    let mut out = String::new();
    let _ = writeln!(out, "{}", awake::described());
    let _ = writeln!(
        out,
        "Platform: {reconcilers} MyApp reconcilers with {parents} existing parents each"
    );
    let _ = writeln!(
        out,
        "one `serve` host, Reconcilers applied one after another:"
    );
    let _ = writeln!(
        out,
        "  apply -> first parent reconciled: {}",
        stats(added.iter().map(|s| s.first).collect())
    );
    let _ = writeln!(
        out,
        "  apply -> all {parents} reconciled:     {}",
        stats(added.iter().map(|s| s.all).collect())
    );
    let _ = writeln!(
        out,
        "  RSS: {:.1} MiB with none, {:.1} MiB with {reconcilers} (peak {:.1}): {:.2} MiB per added reconciler",
        mib(baseline),
        mib(serve_rss),
        mib(serve_peak),
        (mib(serve_rss) - mib(baseline)) / reconcilers as f64
    );
    let _ = writeln!(
        out,
        "{reconcilers} single-reconciler hosts (`run`), one per namespace:"
    );
    let _ = writeln!(
        out,
        "  process start -> first parent reconciled: {}",
        stats(singles.iter().map(|s| s.first).collect())
    );
    let _ = writeln!(
        out,
        "  process start -> all {parents} reconciled:     {}",
        stats(singles.iter().map(|s| s.all).collect())
    );
    let _ = writeln!(
        out,
        "  RSS: {:.1} MiB in total, {:.1} MiB per host",
        mib(singles_rss),
        mib(singles_rss) / reconcilers as f64
    );
    out
}
