//! `make soak`: the host under churn for a long time, on a fresh control plane: 2,000 MyApps
//! (`RECONCILE_HOST_SOAK_PARENTS`), and for 30 minutes (`RECONCILE_HOST_SOAK_MINUTES`) a spec change
//! every second (60 parents, each once a minute), a deletion and a creation every 10 s, and a module
//! swap every 5 minutes (which changes every parent's Deployment). Each minute
//! it samples the host's resident memory, the tasks alive in its runtime, the objects its caches hold
//! and the Events it has published on the live parents (their series: one object per repeated
//! message, so a parent changed every few minutes must not gain objects); it prints them
//! as a table, draws them in `target/soak/soak.svg`, and fails if any grew by 5 % or more from the
//! end of the warm-up (the first third of the run, at least 5 minutes) to the end.

#[path = "soak/churn.rs"]
mod churn;
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
#[path = "soak/plot.rs"]
mod plot;
#[path = "../tests/common/ports.rs"]
mod ports;
#[path = "convergence/spawn.rs"]
#[allow(dead_code)]
mod spawn;

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures::TryStreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use testcluster::TestCluster;

use parents::setting;

/// Parents created at once (`parents::create`).
const CONCURRENCY: usize = 16;
/// How much a sampled figure may grow after the warm-up.
const GROWTH_LIMIT: f64 = 0.05;

/// One minute's figures.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub minute: u64,
    pub rss_mib: f64,
    pub tasks: f64,
    pub cached: f64,
    pub events: f64,
}

impl Sample {
    /// The figures that must stay flat, by name.
    pub fn figures(&self) -> [(&'static str, f64); 4] {
        [
            ("RSS MiB", self.rss_mib),
            ("tasks", self.tasks),
            ("cached objects", self.cached),
            ("Event series", self.events),
        ]
    }
}

fn main() -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(soak())
}

async fn soak() -> Result<()> {
    let parents: usize = setting("RECONCILE_HOST_SOAK_PARENTS", 2000);
    let minutes: u64 = setting("RECONCILE_HOST_SOAK_MINUTES", 30);
    anyhow::ensure!(
        parents > churn::HOT,
        "the soak needs more than {} parents",
        churn::HOT
    );
    let out = guests::repo_root().join("target/soak");
    std::fs::create_dir_all(&out)?;
    let cluster = TestCluster::start().await?;
    myapp::install_crd(&cluster);
    let client = cluster.client().await?;
    let namespace = cluster.namespace("soak").await?;
    let modules = [
        std::fs::read(guests::component("guest_myapp"))?,
        std::fs::read(guests::myapp_variant_b())?,
    ];
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    configmaps
        .create(&PostParams::default(), &module_configmap(&modules[0])?)
        .await?;
    let spawner = spawn::Spawner::new(&cluster, &out);
    let source = format!("{namespace}/soak-module/module.wasm");
    let host = spawner.host(
        "reconcile-host",
        &namespace,
        &["--module-configmap", &source],
        &[],
    )?;
    parents::create(&client, &namespace, 0..parents)
        .try_collect::<Vec<_>>()
        .await?;
    println!("soak: {parents} parents, {minutes} min of churn; sampling each minute");

    let start = Instant::now();
    let mut churn = churn::Churn::new(client.clone(), namespace.clone(), parents);
    let mut samples = Vec::new();
    let mut second = 0u64;
    while start.elapsed() < Duration::from_secs(minutes * 60) {
        second += 1;
        churn.step(second).await?;
        if second.is_multiple_of(300) {
            let module = &modules[(second / 300) as usize % 2];
            let patch = json!({"binaryData": {"module.wasm": ByteString(module.clone())}});
            (configmaps.patch(
                "soak-module",
                &PatchParams::default(),
                &Patch::Merge(&patch),
            ))
            .await
            .context("swapping the module")?;
        }
        if second.is_multiple_of(60) {
            let sample = sample(&client, &namespace, &host, second / 60).await?;
            println!("{}", row(&sample));
            samples.push(sample);
        }
        let next = start + Duration::from_secs(second);
        tokio::time::sleep_until(next.into()).await;
    }

    println!("\n{}", table(&samples));
    std::fs::write(out.join("soak.txt"), table(&samples))?;
    std::fs::write(out.join("soak.svg"), plot::svg(&samples))?;
    println!("(written to target/soak/soak.txt and target/soak/soak.svg)");
    let grown = growth(&samples);
    for (figure, grew) in &grown {
        println!("{figure}: {:+.1} % after the warm-up", grew * 100.0);
    }
    if let Some((figure, grew)) = grown.iter().find(|(_, grew)| *grew >= GROWTH_LIMIT) {
        bail!(
            "{figure} grew {:.1} % after the warm-up (limit 5 %)",
            grew * 100.0
        );
    }
    Ok(())
}

fn module_configmap(module: &[u8]) -> Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": "soak-module"},
        "binaryData": {"module.wasm": ByteString(module.to_vec())},
    }))?)
}

async fn sample(
    client: &kube::Client,
    namespace: &str,
    host: &spawn::Host,
    minute: u64,
) -> Result<Sample> {
    let (rss_kib, _) = host.process.memory_kib();
    let (_, metrics) = http::get(&host.metrics_addr, "/metrics")?;
    let value = |name: &str| {
        (metrics.lines())
            .filter(|line| line.starts_with(name))
            .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum::<f64>()
    };
    // The live parents' Events: those of deleted parents stay until the API server's TTL (1 h) and
    // say nothing of the host.
    let live: std::collections::HashSet<String> = myapp::myapps(client, namespace)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|parent| parent.metadata.uid)
        .collect();
    let events = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|event| event.reporting_controller.as_deref() == Some("reconcile-host"))
        .filter(|event| {
            let uid = event.regarding.as_ref().and_then(|r| r.uid.as_ref());
            uid.is_some_and(|uid| live.contains(uid))
        })
        .count();
    Ok(Sample {
        minute,
        rss_mib: rss_kib as f64 / 1024.0,
        tasks: value("reconcile_host_runtime_tasks"),
        cached: value("reconcile_host_cached_objects"),
        events: events as f64,
    })
}

fn row(s: &Sample) -> String {
    format!(
        "{:>6} {:>9.1} {:>7} {:>15} {:>13}",
        s.minute, s.rss_mib, s.tasks, s.cached, s.events
    )
}

fn table(samples: &[Sample]) -> String {
    let mut text = format!(
        "{:>6} {:>9} {:>7} {:>15} {:>13}\n",
        "minute", "RSS MiB", "tasks", "cached objects", "Event series"
    );
    for sample in samples {
        text.push_str(&row(sample));
        text.push('\n');
    }
    text
}

/// Each figure's growth from the end of the warm-up (the first third, at least 5 minutes) to the
/// last sample, as a fraction.
fn growth(samples: &[Sample]) -> Vec<(&'static str, f64)> {
    let warm = (samples.len() / 3)
        .max(5)
        .min(samples.len().saturating_sub(1));
    let (Some(first), Some(last)) = (samples.get(warm), samples.last()) else {
        return Vec::new();
    };
    (first.figures().iter().zip(last.figures()))
        .map(|((name, from), (_, to))| (*name, if *from > 0.0 { to / from - 1.0 } else { 0.0 }))
        .collect()
}
