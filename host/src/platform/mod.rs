//! Platform mode (`serve`): one host, many reconcilers, each declared by a `Reconciler` (namespaced,
//! for a team) or a `ClusterReconciler` (for platform admins) and each isolated from the others: its
//! own controller and caches, its own client impersonating its ServiceAccount, its own guest limits,
//! metrics and status. `spec` reads the objects (`module_ref` their module sources, ConfigMap or
//! registry), `manager` starts and stops reconcilers as they change, `instance` runs one, `status`
//! reports on it. Every replica builds every reconciler and serves its CRD's conversion (a
//! ClusterReconciler's `spec.conversion`, one route each on a shared port) and runs their controllers;
//! only the one that holds the Lease reconciles and writes status (`crate::lease`). `controller/` stays the one-reconciler machinery.

mod instance;
mod manager;
pub mod module_ref;
mod namespaced_name;
pub mod spec;
mod spec_error;
mod status;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::core::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};

use crate::conversion::{self, Routes};
use crate::guest::{Runtime, RuntimeConfig};
use crate::lease::{self, Election, Leadership};
use crate::reconciler::shutdown_signal;
use crate::shard::{Membership, ShardSettings};
use crate::source::oci::OciSettings;
use crate::telemetry::{Health, Metrics, Recorder, serve as serve_http};
use instance::Shared;
pub use instance::impersonating;
use manager::Manager;
use spec::Scope;

/// The name of the platform's ring: its shard Leases carry `reconcile-host.dev/ring=platform`.
const PLATFORM_RING: &str = "platform";

/// Everything `serve` needs, as plain values: the command line builds it (`cli::ServeArgs`).
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address of /healthz, /readyz and /metrics.
    pub metrics_addr: std::net::SocketAddr,
    /// Elect a leader among replicas on the Lease `reconcile-host-platform`; only the leader runs
    /// controllers (every replica serves conversions).
    pub leader_election: bool,
    /// Spread every reconciler's parents over the replicas: one ring for the platform (`crate::shard`).
    pub sharded: bool,
    /// Only reconciler objects matching this label selector (several platforms in one cluster).
    pub reconciler_selector: Option<String>,
    /// Guest instances alive at once, over all reconcilers (the pool reserves this many slots).
    pub max_guest_instances: u32,
    /// Every reconciler's resync period (`None`: never).
    pub resync_period: Option<Duration>,
    /// Whether a parent may adopt an object nothing controls.
    pub adopt_orphans: bool,
    /// How every reconciler's `oci://` module is reached and polled: the operator's settings, which
    /// no reconciler can change. Credentials are each reconciler's own pull Secret; the host has none.
    pub oci: OciSettings,
    /// Defaults of every reconciler's guest limits; the memory limit is also the most a reconciler's
    /// `spec.limits.memoryMiB` may ask for.
    pub runtime: RuntimeConfig,
    /// Where to serve the conversion webhooks of ClusterReconcilers with `spec.conversion`, one route
    /// each (`POST /convert/<name>`, HTTPS); `None`: no conversion.
    pub conversion_addr: Option<std::net::SocketAddr>,
}

pub fn serve(options: ServeOptions) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve_async(options))
}

async fn serve_async(options: ServeOptions) -> anyhow::Result<()> {
    let metrics = Metrics::new("reconcile-host-platform");
    let health = Arc::new(Health::default());
    let addr = serve_http(options.metrics_addr, health.clone(), metrics.clone()).await?;
    tracing::info!(%addr, "serving /healthz, /readyz and /metrics");

    let defaults = options.runtime.max_instances(options.max_guest_instances);
    let runtime = Runtime::new(defaults.clone())?;
    let config = kube::Config::infer().await?;
    let election = options.leader_election.then(|| {
        let lease = "reconcile-host-platform".into();
        Election::leader(lease::namespace(), lease, lease::identity())
    });
    // Every replica follows the reconcilers, runs their controllers and serves their conversions (the
    // API server calls any replica behind a Service); only the Lease's holder reconciles and writes.
    let unfenced = lease::connect(config.clone(), None)?;
    let leadership = Leadership::start(election, unfenced.clone(), &metrics);
    // One ring for the platform: one shard Lease per replica, however many reconcilers it runs.
    let membership = options.sharded.then(|| {
        let shard =
            ShardSettings::new(lease::namespace(), PLATFORM_RING.into(), &lease::identity());
        Membership::start(&shard, unfenced, &metrics)
    });
    let client = lease::connect(config.clone(), Some(leadership.fence()))?;
    let routes = match options.conversion_addr {
        Some(addr) => {
            let routes = Arc::new(Routes::default());
            let bound = conversion::routes::serve(addr, routes.clone())?;
            tracing::info!(%bound, "serving the ClusterReconcilers' conversion webhooks");
            Some(routes)
        }
        None => None,
    };
    let shared = Arc::new(Shared {
        recorder: Recorder::for_host(client.clone()),
        client: client.clone(),
        config,
        runtime,
        defaults,
        metrics,
        resync_period: options.resync_period,
        adopt_orphans: options.adopt_orphans,
        oci: options.oci,
        fence: leadership.fence().clone(),
        joined: membership.as_ref().map(Membership::joined),
        routes,
    });

    let mut selector = watcher::Config::default();
    if let Some(labels) = &options.reconciler_selector {
        selector = selector.labels(labels);
    }
    let watch = |scope: Scope| {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &scope.resource());
        watcher(api, selector.clone())
            .default_backoff()
            .map(move |event| (scope, event))
            .boxed()
    };
    let mut events = futures::stream::select(watch(Scope::Namespaced), watch(Scope::Cluster));
    let mut manager = Manager::new(shared);
    let mut listed = std::collections::BTreeSet::new();
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    tracing::info!("platform starting: watching Reconcilers and ClusterReconcilers");
    loop {
        let (scope, event) = tokio::select! {
            _ = &mut shutdown => break,
            next = events.next() => match next {
                Some(next) => next,
                None => break,
            },
        };
        match event {
            Ok(event) => {
                if matches!(event, watcher::Event::InitDone)
                    && listed.insert(scope)
                    && listed.len() == 2
                {
                    tracing::info!("reconcilers listed; ready");
                    health.set_ready();
                }
                manager.handle(event, scope).await;
            }
            Err(e) => {
                tracing::warn!(kind = scope.kind(), error = %e, "watching reconciler objects")
            }
        }
    }
    tracing::info!("shutting down every reconciler");
    manager.stop_all().await;
    if let Some(membership) = membership {
        membership.release().await;
    }
    leadership.release().await;
    Ok(())
}
