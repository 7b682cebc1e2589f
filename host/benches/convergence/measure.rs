//! One contender's convergence: N MyApps created at once, timed until each has its Deployment and its
//! status, with the writes the API server served for it and, for a process, its resident memory.

use std::time::{Duration, Instant};

use anyhow::Result;
use futures::{StreamExt, TryStreamExt};
use kube::Client;
use testcluster::TestCluster;
use testcluster::process::Component;

use crate::api::Requests;
use crate::counters::HostCounters;
use crate::cpu::{CpuClock, CpuSeconds};
use crate::floor::{self, Floor};
use crate::parents::create;
use crate::watch;

/// One contender's convergence.
pub struct Converged {
    pub time: Duration,
    /// When the last of the N parents had been created.
    pub created: Duration,
    /// The controller process's resident memory in MiB: once started (its caches synced, its module
    /// loaded and one parent reconciled), then once converged (now, peak); none for the floor.
    pub rss_mib: Option<Rss>,
    /// What the API server served per parent, by resource and verb.
    pub requests: Requests,
    /// reconcile-host's own account, from its metrics.
    pub host: Option<HostCounters>,
    /// The CPU time spent meanwhile, by the contender, the control plane and the benchmark.
    pub cpu: CpuSeconds,
}

/// Resident memory of a controller process, in MiB.
#[derive(Clone, Copy)]
pub struct Rss {
    pub started: f64,
    pub now: f64,
    pub peak: f64,
}

/// The contender being measured: a controller process (and the address of its metrics, if it serves
/// reconcile-host's), or the floor, which `write` drives instead.
pub struct Contender<'a> {
    pub process: &'a Component,
    pub metrics_addr: Option<&'a str>,
}

impl<'a> Contender<'a> {
    /// A controller whose reconciles the benchmark cannot count (it serves no reconcile-host
    /// metrics).
    pub fn unwatched(process: &'a Component) -> Contender<'a> {
        Contender {
            process,
            metrics_addr: None,
        }
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Waits until the controller has reconciled a warm-up parent (so its caches are synced and its
/// module loaded), then creates `n` parents at once and times until all are converged.
pub async fn converge(
    client: &Client,
    cluster: &TestCluster,
    namespace: &str,
    n: usize,
    contender: &Contender<'_>,
) -> Result<Converged> {
    create(client, namespace, n..n + 1)
        .try_collect::<Vec<_>>()
        .await?;
    watch::converged(client, namespace, 1).await?;
    let started = mib(contender.process.memory_kib().0);
    let counted_before = HostCounters::take(contender.metrics_addr);
    eprintln!("bench: {namespace}: creating {n} MyApps");
    let before = Requests::take(client).await?;
    let clock = CpuClock {
        cluster,
        contender: Some(contender.process),
    };
    let cpu_before = clock.read();
    let start = Instant::now();
    create(client, namespace, 0..n)
        .try_collect::<Vec<_>>()
        .await?;
    let created = start.elapsed();
    watch::converged(client, namespace, n + 1).await?;
    let time = start.elapsed();
    let cpu = clock.read() - cpu_before;
    eprintln!("bench: {namespace}: converged in {time:.2?}");
    let (now, peak) = contender.process.memory_kib();
    Ok(Converged {
        time,
        created,
        requests: Requests::take(client).await?.since(&before, n),
        rss_mib: Some(Rss {
            started,
            now: mib(now),
            peak: mib(peak),
        }),
        host: HostCounters::since(counted_before, contender.metrics_addr, n),
        cpu,
    })
}

/// A floor: creates the `n` parents and writes what a controller would (see `floor`), timed until
/// all are converged.
pub async fn floor(
    client: &Client,
    cluster: &TestCluster,
    namespace: &str,
    n: usize,
    floor: Floor,
) -> Result<Converged> {
    let before = Requests::take(client).await?;
    let clock = CpuClock {
        cluster,
        contender: None,
    };
    let cpu_before = clock.read();
    let start = Instant::now();
    // Parents are created as for the controllers, `CONCURRENCY` at a time whatever the writer does
    // meanwhile; the writer takes each as it comes.
    let (created, parents) = futures::channel::mpsc::unbounded();
    let creating = {
        let (client, namespace) = (client.clone(), namespace.to_owned());
        tokio::spawn(async move {
            create(&client, &namespace, 0..n)
                .map(Ok)
                .forward(created)
                .await
        })
    };
    floor::write_all(client, namespace, parents, floor).await?;
    creating.await??;
    let created = start.elapsed();
    watch::converged(client, namespace, n).await?;
    let time = start.elapsed();
    Ok(Converged {
        time,
        created,
        rss_mib: None,
        requests: Requests::take(client).await?.since(&before, n),
        host: None,
        cpu: clock.read() - cpu_before,
    })
}
