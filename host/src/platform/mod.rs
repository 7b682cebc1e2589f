//! Platform mode (`serve`): one host, many reconcilers, each declared by a `Reconciler` (namespaced,
//! for a team) or a `ClusterReconciler` (for platform admins) and each isolated from the others: its
//! own controller and caches, its own client impersonating its ServiceAccount, its own guest limits,
//! metrics and status. `spec` reads the objects (`module_ref` their module sources, ConfigMap or
//! registry), `manager` starts and stops reconcilers as they change, `instance` runs one, `status`
//! reports on it. `controller/` stays the one-reconciler machinery.

mod instance;
mod manager;
pub mod module_ref;
mod namespaced_name;
pub mod spec;
mod spec_error;
mod status;

use std::sync::Arc;

use clap::Args;
use futures::StreamExt;
use kube::api::Api;
use kube::core::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};

use crate::cli::PolicyArgs;
use crate::cli::RuntimeArgs;
use crate::guest::Runtime;
use crate::reconciler::{leader, shutdown_signal};
use crate::source::oci::OciArgs;
use crate::telemetry::{Health, Metrics, Recorder, serve as serve_http};
use instance::Shared;
pub use instance::impersonating;
use manager::Manager;
use spec::Scope;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address of /healthz, /readyz and /metrics (port 0: any free port, logged).
    #[arg(
        long,
        env = "RECONCILE_HOST_METRICS_ADDR",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_addr: std::net::SocketAddr,
    /// Elect a leader among replicas on the Lease `reconcile-host-platform`; only the leader runs
    /// reconcilers.
    #[arg(long, env = "RECONCILE_HOST_LEADER_ELECTION")]
    pub leader_election: bool,
    /// Only reconciler objects matching this label selector (several platforms in one cluster).
    #[arg(long, env = "RECONCILE_HOST_RECONCILER_SELECTOR")]
    pub reconciler_selector: Option<String>,
    /// Guest instances alive at once, over all reconcilers (the pool reserves this many slots).
    #[arg(
        long,
        env = "RECONCILE_HOST_MAX_GUEST_INSTANCES",
        default_value_t = 128
    )]
    pub max_guest_instances: u32,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// How every reconciler's `oci://` module is reached and polled: the operator's settings, which
    /// no reconciler can change. Credentials are each reconciler's own pull Secret; the host has none.
    #[command(flatten)]
    pub oci: OciArgs,
    /// Defaults of every reconciler's guest limits; `--guest-memory-mib` is also the most a
    /// reconciler's `spec.limits.memoryMiB` may ask for.
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve_async(args))
}

async fn serve_async(args: ServeArgs) -> anyhow::Result<()> {
    let metrics = Metrics::new("reconcile-host-platform");
    let health = Arc::new(Health::default());
    let addr = serve_http(args.metrics_addr, health.clone(), metrics.clone()).await?;
    tracing::info!(%addr, "serving /healthz, /readyz and /metrics");

    let defaults = args
        .runtime
        .config()
        .max_instances(args.max_guest_instances);
    let runtime = Runtime::new(defaults.clone())?;
    let config = kube::Config::infer().await?;
    let client = kube::Client::try_from(config.clone())?;
    let election = args.leader_election.then(|| leader::Election {
        namespace: leader::namespace(),
        lease: "reconcile-host-platform".into(),
        identity: leader::identity(),
    });
    leader::lead(election, client.clone(), &metrics).await?;
    let shared = Arc::new(Shared {
        recorder: Recorder::for_host(client.clone()),
        client: client.clone(),
        config,
        runtime,
        defaults,
        metrics,
        resync_period: args.policy.period(),
        adopt_orphans: args.policy.adopt_orphans,
        oci: args.oci,
    });

    let mut selector = watcher::Config::default();
    if let Some(labels) = &args.reconciler_selector {
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
    Ok(())
}
