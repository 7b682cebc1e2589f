//! The `run` command: one reconciler from flags, in this process, with /metrics and health, the parent
//! CRD's conversion webhook and, with several replicas, a leader election (`crate::lease`) and
//! membership of the reconciler's ring (`crate::shard`).

use std::net::SocketAddr;
use std::sync::Arc;

use super::builder::{GiveUp, ReconcilerBuilder};
use super::driver::shutdown_signal;
use super::webhook;
use crate::controller::Settings;
use crate::conversion::WebhookSettings;
use crate::guest::{Runtime, RuntimeConfig};
use crate::lease::{self, Election, Leadership};
use crate::shard::{Member, Membership, ShardSettings};
use crate::source::ModuleSource;
use crate::telemetry::{Health, Metrics, serve};

/// Everything `run` needs, as plain values: the command line builds it (`cli::RunArgs`).
pub struct RunOptions {
    pub settings: Settings,
    /// Where the module comes from; hot-swapped as it changes.
    pub source: ModuleSource,
    /// A candidate module called beside the active one and never applied (`--shadow-module`).
    pub shadow_source: Option<ModuleSource>,
    /// Address of /healthz, /readyz and /metrics.
    pub metrics_addr: SocketAddr,
    /// The Lease to hold while writing; `None`: this process is the only writer.
    pub election: Option<Election>,
    /// The ring this replica joins with a shard Lease of its own (`--sharded`); `None`: no ring.
    pub shard: Option<ShardSettings>,
    /// The parent CRD's conversion webhook, served with the active module; `None`: no webhook.
    pub conversion: Option<WebhookSettings>,
    /// The guest runtime's limits; the instance count is sized here, from the concurrency.
    pub runtime: RuntimeConfig,
}

pub fn run(options: RunOptions) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run_async(options))
}

async fn run_async(options: RunOptions) -> anyhow::Result<()> {
    let RunOptions {
        settings,
        source,
        shadow_source,
        metrics_addr,
        election,
        shard,
        conversion,
        runtime,
    } = options;
    let metrics = Metrics::new(&settings.parent.kind.to_lowercase());
    let health = Arc::new(Health::default());
    let addr = serve(metrics_addr, health.clone(), metrics.clone()).await?;
    tracing::info!(%addr, "serving /healthz, /readyz and /metrics");

    let conversions = match conversion {
        Some(_) => webhook::CONVERSION_INSTANCES,
        None => 0,
    };
    let instances = u32::from(settings.concurrency) * 2 + 4 + conversions;
    let runtime = Runtime::new(runtime.max_instances(instances))?;
    let config = kube::Config::infer().await?;
    // The Lease and the conversion webhook's caBundle are written by every replica; everything the
    // reconciler writes passes the fence.
    let unfenced = lease::connect(config.clone(), None)?;
    let leadership = Leadership::start(election, unfenced.clone(), &metrics);
    // A ring member holds its own shard Lease beside the leader election (`crate::shard`): the
    // leader assigns the parents, and each member reconciles its own while it holds its Lease.
    let membership =
        (shard.as_ref()).map(|shard| Membership::start(shard, unfenced.clone(), &metrics));
    let leader_client = lease::connect(config.clone(), Some(leadership.fence()))?;
    let client = match &membership {
        Some(membership) => lease::connect(config, Some(membership.fence()))?,
        None => leader_client.clone(),
    };
    let identity = settings.identity.clone();

    // Every replica builds the reconciler, fills its caches and serves the conversion webhook (the
    // API server calls any replica behind the Service), with the module every replica keeps
    // current; only the one that holds the Lease reconciles, and it reconciles every parent when it
    // takes the Lease. A ring member reconciles the parents assigned to it instead.
    let mut builder = ReconcilerBuilder::new(settings, client, runtime, metrics.clone(), source)
        .shadow(shadow_source)
        .fence(leadership.fence().clone());
    if let Some(membership) = &membership {
        builder = builder.member(Member::joining(&membership.joined(), &identity));
    }
    let reconciler = builder.build(&mut GiveUp).await?;
    // The leader of the ring assigns the parents (every member runs the assigner; the leader Lease's
    // fence lets one write).
    let assigner = membership.as_ref().map(|membership| {
        let assigner = reconciler.assigner(
            &membership.joined(),
            leader_client.clone(),
            leader_client.clone(),
            leadership.fence().clone(),
        );
        tokio::spawn(assigner.run())
    });
    if let Some(conversion) = &conversion {
        webhook::serve_conversion(conversion, unfenced, reconciler.context()).await?;
    }

    let ready = move || {
        tracing::info!("caches synced; ready");
        health.set_ready();
    };
    reconciler.run(shutdown_signal(), ready).await;
    if let Some(assigner) = assigner {
        assigner.abort();
    }
    // The controller has stopped (running reconciles finished): the shard Lease may go.
    if let Some(membership) = membership {
        membership.release().await;
    }
    leadership.release().await;
    Ok(())
}
