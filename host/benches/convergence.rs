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
//! Everything is printed and written to `target/bench/controllers.txt`.

#[path = "convergence/answer.rs"]
mod answer;
#[path = "convergence/floor.rs"]
mod floor;
#[path = "../tests/common/guests.rs"]
#[allow(dead_code)]
mod guests;
#[path = "../tests/common/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
#[path = "../tests/common/myapp.rs"]
#[allow(dead_code)]
mod myapp;
#[path = "convergence/native.rs"]
mod native;
#[path = "convergence/parents.rs"]
mod parents;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures::TryStreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use parents::create;
use serde_json::json;
use testcluster::TestCluster;
use testcluster::process::Component;

/// Requests in flight at once: for creating parents, for the floor's writes, and each controller's
/// reconcile concurrency (reconcile-host's default).
pub const CONCURRENCY: usize = 16;
/// Longest wait for any one measurement.
const GIVE_UP: Duration = Duration::from_secs(900);
/// Checking convergence lists every parent: often enough for sub-second resolution, rarely enough not
/// to load the API server it measures.
const POLL: Duration = Duration::from_millis(500);
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

/// One contender's convergence.
struct Converged {
    time: Duration,
    /// The controller process's resident memory in MiB: once started (its caches synced, its module
    /// loaded and one parent reconciled), then once converged (now, peak); none for the floor.
    rss_mib: Option<Rss>,
    /// Deployment and status writes per parent, from the API server's counters.
    writes: f64,
}

async fn run() -> Result<()> {
    let n = parents();
    let logs = tempfile::tempdir()?;
    eprintln!("bench: starting the control plane");
    let cluster = TestCluster::start().await?;
    myapp::install_crd(&cluster);
    let client = cluster.client().await?;
    let kubeconfig = cluster.kubeconfig_path().to_path_buf();
    let env = |extra: &'static [(&'static str, &'static str)]| {
        let mut env: Vec<(&str, &Path)> = vec![("KUBECONFIG", kubeconfig.as_path())];
        env.extend(extra.iter().map(|(k, v)| (*k, Path::new(*v))));
        env
    };
    let seed_python = guests::repo_root().join("bench/seed-python/run.sh");
    let install = std::process::Command::new(&seed_python)
        .arg("--install-only")
        .status()?;
    anyhow::ensure!(install.success(), "installing the seed's Python client");
    let guest = guests::component("guest_myapp");
    let variant_b = guests::myapp_variant_b();
    let host_bin = Path::new(env!("CARGO_BIN_EXE_reconcile-host"));

    // The seed's Python controller.
    let ns = cluster.namespace("python").await?;
    let mut python = Component::spawn("seed-python", &seed_python, &[], &env(&[]), logs.path())?;
    let py = converge(&client, &ns, n, Some(&python)).await?;
    python.kill();

    // The floor: create and write, no controller.
    let ns = cluster.namespace("floor").await?;
    let before = controller_writes(&client).await?;
    let start = Instant::now();
    floor::write_all(&client, &ns, create(&client, &ns, 0..n)).await?;
    wait_until("the floor's parents converged", || {
        converged(&client, &ns, n)
    })
    .await?;
    let floor = Converged {
        time: start.elapsed(),
        rss_mib: None,
        writes: (controller_writes(&client).await? - before) / n as f64,
    };

    // reconcile-host, its module in a ConfigMap, then the hot swap on its parents.
    let ns = cluster.namespace("host").await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    configmaps
        .create(&PostParams::default(), &module_configmap(&guest)?)
        .await?;
    let host_args = |ns: &str, module: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "run",
            "--metrics-addr",
            "127.0.0.1:0",
            "--parent",
            "example.com/v1alpha1/MyApp",
            "--child",
            "apps/v1/Deployment",
            "--namespace",
            ns,
        ]
        .map(String::from)
        .to_vec();
        args.extend(module.iter().map(|s| s.to_string()));
        args
    };
    let cm_ref = format!("{ns}/myapp-module");
    let mut host = Component::spawn(
        "reconcile-host",
        host_bin,
        &host_args(&ns, &["--module-configmap", &cm_ref]),
        &env(&[("RUST_LOG", "warn")]),
        logs.path(),
    )?;
    let ours = converge(&client, &ns, n, Some(&host)).await?;
    let before = controller_writes(&client).await?;
    let swap_start = Instant::now();
    configmaps
        .patch(
            "myapp-module",
            &PatchParams::default(),
            &Patch::Merge(module_configmap(&variant_b)?),
        )
        .await?;
    wait_until("every Deployment on the new module", || {
        all_labelled(&client, &ns, n + 1)
    })
    .await?;
    let swap = swap_start.elapsed();
    let swap_writes = (controller_writes(&client).await? - before) / (n + 1) as f64;
    host.kill();

    // The native kube-rs controller.
    let ns = cluster.namespace("native").await?;
    let me = std::env::current_exe()?;
    let native_args = ["--native-controller".to_string(), ns.clone()];
    let mut native = Component::spawn("native", &me, &native_args, &env(&[]), logs.path())?;
    let nat = converge(&client, &ns, n, Some(&native)).await?;
    native.kill();

    // Cold start, with an empty and then with a filled artifact cache.
    let mut cold = Vec::new();
    let js = guests::myapp_js();
    for (language, module) in [("Rust", &guest), ("JavaScript", &js)] {
        let cache = tempfile::tempdir()?;
        for cached in [false, true] {
            let ns = cluster.namespace("cold").await?;
            create(&client, &ns, 0..1).try_collect::<Vec<_>>().await?;
            let mut args = host_args(&ns, &["--module", module.to_str().unwrap()]);
            args.extend(["--cache-dir".into(), cache.path().display().to_string()]);
            let start = Instant::now();
            let mut host = Component::spawn(
                "reconcile-host-cold",
                host_bin,
                &args,
                &env(&[("RUST_LOG", "warn")]),
                logs.path(),
            )?;
            wait_until("the first reconcile", || converged(&client, &ns, 1)).await?;
            cold.push((language, cached, start.elapsed()));
            host.kill();
        }
    }

    let report = report(n, &py, &floor, &ours, &nat, (swap, swap_writes), &cold);
    print!("{report}");
    let dir = guests::repo_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("controllers.txt"), &report)?;
    println!("(written to target/bench/controllers.txt)");
    Ok(())
}

/// Resident memory of a controller process, in MiB.
#[derive(Clone, Copy)]
struct Rss {
    started: f64,
    now: f64,
    peak: f64,
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Waits until the controller has reconciled a warm-up parent (so its caches are synced and its
/// module loaded), then creates `n` parents at once and times until all are converged.
async fn converge(
    client: &Client,
    namespace: &str,
    n: usize,
    controller: Option<&Component>,
) -> Result<Converged> {
    create(client, namespace, n..n + 1)
        .try_collect::<Vec<_>>()
        .await?;
    wait_until("the warm-up parent", || converged(client, namespace, 1)).await?;
    let started = controller.map(|c| mib(c.memory_kib().0));
    eprintln!("bench: {namespace}: creating {n} MyApps");
    let before = controller_writes(client).await?;
    let start = Instant::now();
    create(client, namespace, 0..n)
        .try_collect::<Vec<_>>()
        .await?;
    wait_until("every parent converged", || {
        converged(client, namespace, n + 1)
    })
    .await?;
    let time = start.elapsed();
    eprintln!("bench: {namespace}: converged in {time:.2?}");
    Ok(Converged {
        time,
        writes: (controller_writes(client).await? - before) / n as f64,
        rss_mib: controller.zip(started).map(|(c, started)| {
            let (now, peak) = c.memory_kib();
            Rss {
                started,
                now: mib(now),
                peak: mib(peak),
            }
        }),
    })
}

/// All `n` parents of the namespace have a status phase, and `n` Deployments exist.
async fn converged(client: &Client, namespace: &str, n: usize) -> Result<bool> {
    let parents = myapp::myapps(client, namespace)
        .list(&ListParams::default())
        .await?;
    let with_status = parents
        .items
        .iter()
        .filter(|p| p.data.pointer("/status/phase").is_some())
        .count();
    if with_status < n {
        return Ok(false);
    }
    let deployments = myapp::deployments(client, namespace)
        .list_metadata(&ListParams::default())
        .await?;
    Ok(deployments.items.len() >= n)
}

async fn all_labelled(client: &Client, namespace: &str, n: usize) -> Result<bool> {
    let deployments = myapp::deployments(client, namespace)
        .list_metadata(&ListParams::default())
        .await?;
    let labelled = deployments
        .items
        .iter()
        .filter(|d| d.labels().get(VARIANT_LABEL).map(String::as_str) == Some("b"))
        .count();
    Ok(labelled >= n)
}

async fn wait_until<F, Fut>(what: &str, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + GIVE_UP;
    while !check().await? {
        if Instant::now() > deadline {
            bail!("gave up after {GIVE_UP:?} waiting for {what}");
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

/// What the API server has served of the writes a MyApp controller makes: Deployments (create, apply,
/// update; not their status, which the cluster's deployment controller writes) and MyApp statuses.
/// Counted from its own `apiserver_request_total`, across all clients.
async fn controller_writes(client: &Client) -> Result<f64> {
    let request = axum::http::Request::get("/metrics").body(Vec::new())?;
    let metrics = client.request_text(request).await?;
    let total = metrics
        .lines()
        .filter_map(|line| line.strip_prefix("apiserver_request_total{"))
        .filter(|line| {
            let write = ["POST", "PUT", "PATCH", "APPLY"]
                .iter()
                .any(|verb| line.contains(&format!("verb=\"{verb}\"")));
            let deployment =
                line.contains("resource=\"deployments\"") && line.contains("subresource=\"\"");
            let status =
                line.contains("resource=\"myapps\"") && line.contains("subresource=\"status\"");
            write && (deployment || status)
        })
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum();
    Ok(total)
}

fn module_configmap(module: &Path) -> Result<ConfigMap> {
    let bytes = std::fs::read(module).with_context(|| format!("reading {}", module.display()))?;
    Ok(serde_json::from_value(json!({
        "metadata": {"name": "myapp-module"},
        "binaryData": {"module.wasm": ByteString(bytes)},
    }))?)
}

fn report(
    n: usize,
    python: &Converged,
    floor: &Converged,
    ours: &Converged,
    native: &Converged,
    (swap, swap_writes): (Duration, f64),
    cold: &[(&str, bool, Duration)],
) -> String {
    let secs = |c: &Converged| c.time.as_secs_f64();
    let rss = |c: &Converged| {
        c.rss_mib.map_or("-".to_string(), |r| {
            format!("{:.1} / {:.1} / {:.1} MiB", r.started, r.now, r.peak)
        })
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Convergence: {n} MyApps created at once ({CONCURRENCY} at a time) until each has its Deployment and status"
    );
    let _ = writeln!(
        out,
        "  {:<34} {:>10} {:>28} {:>18}",
        "contender", "time", "RSS started / now / peak", "writes per parent"
    );
    for (name, c) in [
        ("bare client writes (floor)", floor),
        ("reconcile-host, Rust guest", ours),
        ("native kube-rs, same logic", native),
        ("seed's Python controller", python),
    ] {
        let _ = writeln!(
            out,
            "  {name:<34} {:>8.2} s {:>28} {:>18.2}",
            secs(c),
            rss(c),
            c.writes
        );
    }
    let _ = writeln!(
        out,
        "  ours / floor   {:>6.2}x   (target <= 1.3x)",
        secs(ours) / secs(floor)
    );
    let _ = writeln!(
        out,
        "  python / ours  {:>6.2}x   (target >= 10x)",
        secs(python) / secs(ours)
    );
    let _ = writeln!(
        out,
        "  native / ours  {:>6.2}x   (target >= 1x: ours no slower)",
        secs(native) / secs(ours)
    );
    if let (Some(o), Some(n)) = (ours.rss_mib, native.rss_mib) {
        let _ = writeln!(
            out,
            "  peak RSS ours / native {:>4.2}x   (target <= 1.5x; started {:.2}x, now {:.2}x; ours grew {:.1} MiB with the parents, native {:.1} MiB)",
            o.peak / n.peak,
            o.started / n.started,
            o.now / n.now,
            o.now - o.started,
            n.now - n.started
        );
    }
    let _ = writeln!(
        out,
        "Hot swap at {n} parents: ConfigMap update until every Deployment is the new module's: {:.2} s   (target <= 3 s; {swap_writes:.2} writes per parent)",
        swap.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "Cold start: process start until a first parent has its status"
    );
    for (language, cached, time) in cold {
        let cache = if *cached {
            "filled artifact cache"
        } else {
            "empty artifact cache"
        };
        let _ = writeln!(
            out,
            "  {language:<11} {cache:<22} {:>8.2} s",
            time.as_secs_f64()
        );
    }
    out
}
