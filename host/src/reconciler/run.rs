//! The `run` command: one reconciler from flags, in this process, with /metrics and health, the parent
//! CRD's conversion webhook and, with several replicas, a leader election.

use std::sync::Arc;

use kube::Client;

use super::builder::{GiveUp, ReconcilerBuilder};
use super::driver::shutdown_signal;
use super::{leader, webhook};
use crate::controller::RunArgs;
use crate::guest::Runtime;
use crate::source::{ModuleLocation, ModuleSource};
use crate::telemetry::{Health, Metrics, serve};

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> anyhow::Result<()> {
    let metrics = Metrics::new(&args.parent.kind.to_lowercase());
    let health = Arc::new(Health::default());
    let addr = serve(args.metrics_addr, health.clone(), metrics.clone()).await?;
    tracing::info!(%addr, "serving /healthz, /readyz and /metrics");

    let conversions = match args.conversion.conversion_webhook_addr {
        Some(_) => webhook::CONVERSION_INSTANCES,
        None => 0,
    };
    let runtime = Runtime::new(
        args.runtime
            .config()
            .max_instances(u32::from(args.concurrency) * 2 + 4 + conversions),
    )?;
    let client = Client::try_default().await?;
    let of = |location: &ModuleLocation| {
        let credentials = args.oci_credentials.credentials();
        ModuleSource::of(
            location,
            &args.oci,
            credentials,
            args.runtime.cache_dir.as_deref(),
        )
    };
    let source = match (&args.module, &args.module_configmap) {
        (Some(location), _) => of(location),
        (None, Some(cm)) => ModuleSource::ConfigMap(cm.clone()),
        (None, None) => unreachable!("clap requires a module source"),
    };
    let shadow = match (&args.shadow_module, &args.shadow_module_configmap) {
        (Some(location), _) => Some(of(location)),
        (None, Some(cm)) => Some(ModuleSource::ConfigMap(cm.clone())),
        (None, None) => None,
    };

    // The reconciler (its context and module follows) and the conversion webhook come before the
    // election: a standby serves conversions too (the API server calls any replica behind the
    // Service), with the module every replica keeps current. The caches fill and reconciles start
    // only once leading.
    let settings = args.settings();
    let reconciler = ReconcilerBuilder::new(
        settings.clone(),
        client.clone(),
        runtime,
        metrics.clone(),
        source,
    )
    .shadow(shadow)
    .build(&mut GiveUp)
    .await?;
    webhook::serve_conversion(&args.conversion, client.clone(), reconciler.context()).await?;

    let election = args.leader_election.then(|| leader::Election {
        namespace: args
            .leader_election_namespace
            .clone()
            .unwrap_or_else(leader::namespace),
        lease: args.lease(&settings.identity),
        identity: leader::identity(),
    });
    leader::lead(election, client, &metrics).await?;

    let ready = move || {
        tracing::info!("caches synced; ready");
        health.set_ready();
    };
    reconciler.run(shutdown_signal(), ready).await;
    Ok(())
}
