//! `make bench` (sharding part, issue 35): N MyApps (default 10,000,
//! `RECONCILE_HOST_BENCH_SHARD_PARENTS`; 1,000 for a quick check) created at once and converged by
//! one reconcile-host replica, unsharded (`run` as deployed before sharding: the baseline), then by R
//! replicas sharded (`run --sharded`, default 3, `RECONCILE_HOST_BENCH_SHARD_REPLICAS`: a
//! comma-separated list, one row each). All replicas of a row share one control plane; each row has
//! a fresh one (`convergence/fresh.rs`: a cluster holding another row's objects is slower).
//!
//! Each row: the time until every parent has its Deployment and its status; the API writes per
//! parent from the API server's own `apiserver_request_total` (`convergence/api.rs`), so the
//! assignment label and the shard Leases' renewals are counted as any other write, not taken from
//! the host's word; and each replica's peak resident memory (`VmHWM`), with its ratio to the single
//! replica's (goal: at most 45 %). Under each row, per replica: the parents it holds by the labels on
//! the parents (the API server's view) and by its own metrics, its reconciles, the objects it caches
//! and the ring leader's label writes, so that a replica holding every parent, or memory that does
//! not divide, shows in the figures.
//!
//! The replicas, the control plane and the benchmark share the machine's cores: on a small machine
//! three replicas compete with the API server for CPU, so time is reported, not a gate. The cores are
//! kept awake meanwhile (`convergence/awake.rs`). This is a binary of its own, not a part of the
//! convergence benchmark, so that it runs alone (`cargo bench --bench sharding`): its rows take as
//! long as the convergence benchmark's largest. Printed and written to `target/bench/sharding.txt`;
//! the replicas' logs are kept in `target/bench/sharding-logs/`.

#[path = "convergence/api.rs"]
#[allow(dead_code)]
mod api;
#[path = "convergence/awake.rs"]
mod awake;
#[path = "convergence/counters.rs"]
#[allow(dead_code)]
mod counters;
#[path = "convergence/cpu.rs"]
mod cpu;
#[path = "convergence/fresh.rs"]
mod fresh;
#[path = "../tests/common/guests.rs"]
#[allow(dead_code)]
mod guests;
#[path = "../tests/common/http.rs"]
#[allow(dead_code)]
mod http;
#[path = "../tests/common/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
#[path = "../tests/common/myapp.rs"]
#[allow(dead_code)]
mod myapp;
#[path = "convergence/parents.rs"]
mod parents;
#[path = "../tests/common/ports.rs"]
mod ports;
#[path = "convergence/spawn.rs"]
#[allow(dead_code)]
mod spawn;
#[path = "convergence/watch.rs"]
#[allow(dead_code)]
mod watch;

#[path = "sharding/report.rs"]
mod report;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures::TryStreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use testcluster::TestCluster;

use api::Requests;
use counters::{HostCounters, metric, metric_by};
use cpu::{CpuClock, CpuSeconds};
use fresh::on_fresh_cluster;
use parents::{create, setting};
use report::{Resident, mib, report};
use spawn::Host;

/// Requests in flight at once when creating parents, as in the convergence benchmark.
pub const CONCURRENCY: usize = 16;
/// `watch` names the label of the hot swap's second module, which this benchmark does not use.
const VARIANT_LABEL: &str = "example.com/variant";
const MODULE_CONFIGMAP: &str = "myapp-module";
/// The assignment label's key is this and the reconciler's name (`host/src/shard/mod.rs`); the
/// benchmark takes whatever reconciler the replicas name.
const SHARD_LABEL: &str = "shard.reconcile-host.dev/";
const DRAIN_LABEL: &str = "drain.reconcile-host.dev/";
/// The verbs of a write on the MyApp itself by a controller: the assignment label. The benchmark's
/// own POSTs create the parents, and nothing deletes them.
const LABEL_VERBS: [&str; 3] = ["PATCH", "PUT", "APPLY"];
/// Longest wait for the replicas to see each other in their ring.
const RING_FORMS: Duration = Duration::from_secs(180);
const POLL: Duration = Duration::from_millis(250);
/// A sharded row stops waiting after this many times the single replica's time (and at least
/// `SLOWEST`): replicas competing for the cores may be slower, but a parent that never converges
/// (left unreconciled by its member) would otherwise hold the benchmark for `watch`'s half hour and
/// lose the figures; the row is then reported as not converged, with what each replica holds.
const SLOWER: u32 = 5;
const SLOWEST: Duration = Duration::from_secs(120);

fn main() -> Result<()> {
    awake::main_or_spin(run())
}

/// `RECONCILE_HOST_BENCH_SHARD_PARENTS`, else 10,000 (the size).
fn parents() -> usize {
    setting("RECONCILE_HOST_BENCH_SHARD_PARENTS", 10_000)
}

/// The sharded rows' replica counts: `RECONCILE_HOST_BENCH_SHARD_REPLICAS` (comma-separated; 1 is a
/// ring of one, which shows the label's cost alone), else 3.
fn sharded_rows() -> Vec<usize> {
    match std::env::var("RECONCILE_HOST_BENCH_SHARD_REPLICAS") {
        Ok(list) => (list.split(','))
            .filter_map(|s| s.trim().parse().ok())
            .filter(|&r| r > 0)
            .collect(),
        Err(_) => vec![3],
    }
}

async fn run() -> Result<()> {
    let n = parents();
    let _awake = awake::KeepAwake::start()?;
    let dir = guests::repo_root().join("target/bench");
    // Kept, unlike the convergence benchmark's: a sharded row that goes wrong is read from them.
    let logs = dir.join("sharding-logs");
    let _ = std::fs::remove_dir_all(&logs);
    let single = Row::measure(n, 1, false, None, &logs.join("single")).await?;
    let give_up = (single.time * SLOWER).max(SLOWEST);
    let mut rows = vec![single];
    let mut failed = None;
    for replicas in sharded_rows() {
        // What is measured so far, in case a later row fails.
        eprint!("{}", report(n, &rows));
        let row_logs = logs.join(format!("sharded-{replicas}"));
        match Row::measure(n, replicas, true, Some(give_up), &row_logs).await {
            Ok(row) => rows.push(row),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let report = report(n, &rows);
    print!("{report}");
    std::fs::write(dir.join("sharding.txt"), &report)?;
    println!(
        "(written to target/bench/sharding.txt; the replicas' logs in target/bench/sharding-logs/)"
    );
    if let Some(e) = failed {
        return Err(e);
    }
    let stalled = rows.iter().filter(|row| !row.converged).count();
    anyhow::ensure!(stalled == 0, "{stalled} row(s) did not converge");
    Ok(())
}

/// One row: R replicas, sharded or not, converging N parents.
struct Row {
    sharded: bool,
    /// Until every parent converged, or until the benchmark gave up (`converged` false).
    time: Duration,
    converged: bool,
    /// When the last of the N parents had been created.
    created: Duration,
    /// What the API server served per parent, by resource and verb.
    requests: Requests,
    cpu: CpuSeconds,
    replicas: Vec<Replica>,
    /// The parents, and their Deployments, by the member their shard label names.
    parents: Assigned,
    children: Assigned,
    /// If the row did not converge: the parents without a status, by the member their label names.
    pending: BTreeMap<String, usize>,
}

/// One replica's figures, once converged.
struct Replica {
    member: String,
    /// Resident memory in MiB: once started (its caches synced, its module loaded, the warm-up
    /// parent converged), now, and its peak.
    started_mib: f64,
    now_mib: f64,
    peak_mib: f64,
    /// Its resident memory once converged, by kind of mapping.
    resident: Resident,
    /// Its reconciles while the N converged (none if its metrics did not answer).
    reconciles: Option<f64>,
    /// Its own account, from its metrics; none where it serves no such family.
    held: Option<f64>,
    cached: Option<f64>,
    ring: Option<f64>,
    leader: Option<f64>,
    releases: Option<f64>,
    fenced: Option<f64>,
    /// The ring leader's label writes, by action.
    assignments: Vec<(String, f64)>,
    /// Its own shard Lease taken and lost.
    transitions: Vec<(String, f64)>,
}

/// Objects by the member their shard label names, those without one, and those with a drain label.
#[derive(Default)]
struct Assigned {
    by_member: BTreeMap<String, usize>,
    unassigned: usize,
    draining: usize,
}

impl Row {
    /// Starts `replicas` replicas on a fresh control plane, with `--sharded` if `sharded`, and
    /// measures their convergence of `n` parents, waiting `give_up` at most (else `watch`'s limit).
    async fn measure(
        n: usize,
        replicas: usize,
        sharded: bool,
        give_up: Option<Duration>,
        logs: &Path,
    ) -> Result<Row> {
        let what = if sharded { "sharded" } else { "single" };
        eprintln!("bench: {n} parents, {replicas} replica(s), {what}");
        std::fs::create_dir_all(logs)?;
        let guest = guests::component("guest_myapp");
        on_fresh_cluster(what, logs, async |client, cluster, ns, spawn| {
            // The module from a ConfigMap, as deployed and as the convergence benchmark's host has it.
            let from = format!("--from-file=module.wasm={}", guest.display());
            let args = ["create", "configmap", MODULE_CONFIGMAP, "-n", ns, &from];
            kubectl::kubectl_ok(cluster, &args);
            let configmap = format!("{ns}/{MODULE_CONFIGMAP}");
            let module = ["--module-configmap", configmap.as_str()];
            let sharding = ["--sharded", "--leader-election-namespace", ns];
            let extra: &[&str] = if sharded { &sharding } else { &[] };
            let mut hosts = Vec::new();
            for i in 0..replicas {
                // A component's name is 'static (its log file's); a few per run.
                let name = Box::leak(format!("reconcile-host-{i}").into_boxed_str());
                let member = format!("replica-{i}");
                let env = [("POD_NAME", member.as_str())];
                let host = spawn.host_with_env(name, ns, &module, extra, &env)?;
                hosts.push((member, host));
            }
            let measured = converge(client, cluster, (ns, n), sharded, give_up, &hosts).await;
            let tails: Vec<String> = (hosts.iter())
                .map(|(member, h)| format!("--- {member}:\n{}", h.process.log_tail(15)))
                .collect();
            for (_, host) in &mut hosts {
                host.process.kill();
            }
            measured.with_context(|| format!("the replicas' last log lines:\n{}", tails.join("\n")))
        })
        .await
    }
}

/// Waits until the replicas see their ring whole (if sharded) and have converged a warm-up parent,
/// then creates `n` parents in `ns` at once and times until all are converged, or `give_up` passed.
async fn converge(
    client: &Client,
    cluster: &TestCluster,
    (ns, n): (&str, usize),
    sharded: bool,
    give_up: Option<Duration>,
    hosts: &[(String, Host)],
) -> Result<Row> {
    if sharded {
        ring_formed(hosts).await?;
    }
    create(client, ns, n..n + 1).try_collect::<Vec<_>>().await?;
    watch::converged(client, ns, 1).await?;
    let started: Vec<f64> = (hosts.iter())
        .map(|(_, h)| mib(h.process.memory_kib().0))
        .collect();
    let counted_before: Vec<_> = (hosts.iter())
        .map(|(_, h)| HostCounters::take(Some(&h.metrics_addr)))
        .collect();
    eprintln!("bench: {ns}: creating {n} MyApps");
    let before = Requests::take(client).await?;
    let clock = CpuClock {
        cluster,
        contender: None,
    };
    let hosts_cpu = || -> f64 { hosts.iter().map(|(_, h)| h.process.cpu_seconds()).sum() };
    let (cpu_before, hosts_cpu_before) = (clock.read(), hosts_cpu());
    let start = Instant::now();
    create(client, ns, 0..n).try_collect::<Vec<_>>().await?;
    let created = start.elapsed();
    let converged = match give_up {
        Some(limit) => tokio::time::timeout(limit, watch::converged(client, ns, n + 1))
            .await
            .ok()
            .transpose()?
            .is_some(),
        None => watch::converged(client, ns, n + 1).await.map(|()| true)?,
    };
    let time = start.elapsed();
    let mut cpu = clock.read() - cpu_before;
    cpu.contender = hosts_cpu() - hosts_cpu_before;
    let requests = Requests::take(client).await?.since(&before, n);
    match converged {
        true => eprintln!("bench: {ns}: converged in {time:.2?}"),
        false => eprintln!("bench: {ns}: NOT converged after {time:.2?}: gave up"),
    }
    let mut replicas = Vec::new();
    for (((member, h), started), before) in hosts.iter().zip(started).zip(counted_before) {
        let (now, peak) = h.process.memory_kib();
        let (_, metrics) = http::get(&h.metrics_addr, "/metrics").unwrap_or_default();
        let after = HostCounters::take(Some(&h.metrics_addr));
        replicas.push(Replica {
            member: member.clone(),
            started_mib: started,
            now_mib: mib(now),
            peak_mib: mib(peak),
            resident: Resident::of(h.process.pid()),
            reconciles: before.zip(after).map(|(b, a)| a.reconciles - b.reconciles),
            held: metric(&metrics, "reconcile_host_shard_parents"),
            cached: metric(&metrics, "reconcile_host_cached_objects"),
            ring: metric(&metrics, "reconcile_host_ring_members"),
            leader: metric(&metrics, "reconcile_host_leader"),
            releases: metric(&metrics, "reconcile_host_shard_releases_total"),
            fenced: metric(&metrics, "reconcile_host_fenced_writes_total"),
            assignments: metric_by(&metrics, "reconcile_host_shard_assignments_total", "action"),
            transitions: metric_by(
                &metrics,
                "reconcile_host_shard_lease_transitions_total",
                "transition",
            ),
        });
    }
    // Listed after the API server's count was taken: these lists are the benchmark's, not a cost.
    let parents = Assigned::list(myapp::myapps(client, ns)).await?;
    let children = Assigned::list(Api::<Deployment>::namespaced(client.clone(), ns)).await?;
    let pending = match converged {
        true => BTreeMap::new(),
        false => pending(client, ns).await?,
    };
    Ok(Row {
        sharded,
        time,
        converged,
        created,
        requests,
        cpu,
        replicas,
        parents,
        children,
        pending,
    })
}

/// The parents of `ns` without a status, by the member their shard label names (`-`: none).
async fn pending(client: &Client, ns: &str) -> Result<BTreeMap<String, usize>> {
    let api = myapp::myapps(client, ns);
    let mut pending = BTreeMap::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        for parent in page
            .items
            .iter()
            .filter(|p| p.data["status"]["phase"].is_null())
        {
            let member = (parent.labels().iter())
                .find(|(key, _)| key.starts_with(SHARD_LABEL))
                .map_or("-", |(_, member)| member.as_str());
            *pending.entry(member.to_string()).or_default() += 1;
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(pending),
        }
    }
}

/// Until every replica holds its shard Lease and sees all the replicas live in its ring: parents
/// created before would first be assigned to a part of the ring, then moved.
async fn ring_formed(hosts: &[(String, Host)]) -> Result<()> {
    let deadline = Instant::now() + RING_FORMS;
    let whole = hosts.len() as f64;
    loop {
        let mut seen = Vec::new();
        for (member, h) in hosts {
            let (_, metrics) = http::get(&h.metrics_addr, "/metrics").unwrap_or_default();
            let ring = metric(&metrics, "reconcile_host_ring_members");
            let joined = metric(&metrics, "reconcile_host_shard_member");
            seen.push((member, ring, joined));
        }
        if (seen.iter()).all(|(_, ring, joined)| *ring == Some(whole) && *joined == Some(1.0)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "the ring did not form within {RING_FORMS:?}: (member, ring members seen, holds its Lease) {seen:?}"
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

impl Assigned {
    /// Lists the objects of `api` (their metadata, a page at a time) and counts their shard labels.
    async fn list<K>(api: Api<K>) -> Result<Assigned>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let mut assigned = Assigned::default();
        let mut params = ListParams::default().limit(500);
        loop {
            let page = api.list_metadata(&params).await?;
            for object in &page.items {
                let labels = object.labels();
                match labels.iter().find(|(key, _)| key.starts_with(SHARD_LABEL)) {
                    Some((_, member)) => {
                        *assigned.by_member.entry(member.clone()).or_default() += 1
                    }
                    None => assigned.unassigned += 1,
                }
                if labels.keys().any(|key| key.starts_with(DRAIN_LABEL)) {
                    assigned.draining += 1;
                }
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(assigned),
            }
        }
    }

    fn held_by(&self, member: &str) -> usize {
        self.by_member.get(member).copied().unwrap_or(0)
    }

    /// Labels naming no replica of the row: a member name the benchmark did not start.
    fn strangers(&self, replicas: &[Replica]) -> Vec<(&str, usize)> {
        (self.by_member.iter())
            .filter(|(member, _)| !replicas.iter().any(|r| &r.member == *member))
            .map(|(member, n)| (member.as_str(), *n))
            .collect()
    }
}
