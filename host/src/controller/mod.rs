//! The controller: watches parents and the child kinds they own through kube-runtime, calls the guest
//! for each parent, and applies its answer (`reconcile`), using the reflector caches (`observe`),
//! server-side apply and pruning (`apply`), the status subresource (`status`) and per-object backoff.

mod applied;
mod apply;
mod backoff;
mod context;
mod error;
mod finalizer;
mod leader;
mod observe;
mod reconcile;
mod status;
mod swap;

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use futures::{StreamExt, TryStreamExt};
use kube::core::DynamicObject;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client};

use crate::cli::RuntimeArgs;
use crate::guest::Runtime;
use crate::kind::Gvk;
use crate::source::{ConfigMapRef, ModuleSource};
use crate::telemetry::{Health, Metrics, serve};
pub use context::Context;
pub use error::ReconcileError;

/// The field manager of every apply, and the value of the managed-by label on children.
pub const MANAGER: &str = "reconcile-host";
/// Label the host puts on every child; the child watches select on it so the caches hold only ours.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

#[derive(Debug, Args)]
#[group(id = "module-source", required = true, multiple = false)]
pub struct RunArgs {
    /// The parent kind to watch, GROUP/VERSION/KIND, e.g. example.com/v1alpha1/MyApp.
    #[arg(long, env = "RECONCILE_HOST_PARENT")]
    pub parent: Gvk,
    /// A child kind the guest may create, GROUP/VERSION/KIND (repeatable; env: comma-separated).
    #[arg(
        long = "child",
        env = "RECONCILE_HOST_CHILDREN",
        value_delimiter = ',',
        required = true
    )]
    pub children: Vec<Gvk>,
    /// The reconciler component (.wasm), typically a mounted ConfigMap; watched and hot-swapped.
    #[arg(long, env = "RECONCILE_HOST_MODULE", group = "module-source")]
    pub module: Option<PathBuf>,
    /// The reconciler component in a ConfigMap's binaryData (raw or gzip), NAMESPACE/NAME[/KEY];
    /// watched through the API and hot-swapped.
    #[arg(long, env = "RECONCILE_HOST_MODULE_CONFIGMAP", group = "module-source")]
    pub module_configmap: Option<ConfigMapRef>,
    /// A finalizer to hold parents until the guest answers `finalized` during deletion.
    #[arg(long, env = "RECONCILE_HOST_FINALIZER")]
    pub finalizer: Option<String>,
    /// Parents reconciled at once.
    #[arg(long, env = "RECONCILE_HOST_CONCURRENCY", default_value_t = 16)]
    pub concurrency: u16,
    /// Address of /healthz, /readyz and /metrics (port 0: any free port, logged).
    #[arg(
        long,
        env = "RECONCILE_HOST_METRICS_ADDR",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_addr: std::net::SocketAddr,
    /// Elect a leader among replicas on a Lease; only the leader reconciles.
    #[arg(long, env = "RECONCILE_HOST_LEADER_ELECTION")]
    pub leader_election: bool,
    /// Namespace of the Lease (default: POD_NAMESPACE, else `default`).
    #[arg(long, env = "RECONCILE_HOST_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease (default: reconcile-host-<parent kind>).
    #[arg(long, env = "RECONCILE_HOST_LEADER_ELECTION_ID")]
    pub leader_election_id: Option<String>,
    /// Only parents in this namespace (default: all namespaces).
    #[arg(long, env = "RECONCILE_HOST_NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new(&args.parent.kind.to_lowercase()));
    let health = Arc::new(Health::default());
    let addr = serve(args.metrics_addr, health.clone(), metrics.clone()).await?;
    tracing::info!(%addr, "serving /healthz, /readyz and /metrics");

    let runtime = Runtime::new(
        args.runtime
            .config()
            .max_instances(u32::from(args.concurrency) * 2 + 4),
    )?;
    let client = Client::try_default().await?;
    let source = match (&args.module, &args.module_configmap) {
        (Some(path), _) => ModuleSource::File(path.clone()),
        (None, Some(cm)) => ModuleSource::ConfigMap(cm.clone()),
        (None, None) => unreachable!("clap requires a module source"),
    };
    let mut updates = source.updates(Some(client.clone()));
    let module = swap::first_module(&runtime, &source, &mut updates).await?;
    tracing::info!(%source, digest = module.digest(), bytes = module.size(), "module loaded");
    metrics.module_loaded(module.digest(), true, None);

    if args.leader_election {
        let election = leader::Election {
            namespace: args
                .leader_election_namespace
                .clone()
                .or_else(|| std::env::var("POD_NAMESPACE").ok())
                .unwrap_or_else(|| "default".into()),
            lease: args
                .leader_election_id
                .clone()
                .unwrap_or_else(|| format!("reconcile-host-{}", args.parent.kind.to_lowercase())),
            identity: leader::identity(),
        };
        let leadership = election.acquire(client.clone()).await?;
        tokio::spawn(leader::exit_on_loss(leadership));
    }

    let ctx = Arc::new(Context::discover(client.clone(), &args, module, metrics).await?);
    let (reconcile_all, reconcile_all_rx) = futures::channel::mpsc::unbounded();
    tokio::spawn(swap::follow(
        ctx.clone(),
        runtime.clone(),
        source,
        updates,
        reconcile_all,
    ));

    let parent_api = ctx.parent_api_all();
    let parent_writer = Writer::new(ctx.parent.resource.clone());
    let parent_reader = parent_writer.as_reader();
    // Readiness: every cache has listed once. The parent store's own `wait_until_ready` is awaited by
    // the Controller, and kube-runtime wakes only one waiter of a store, so the parent's initial sync is
    // read off its event stream instead; the child stores have no other waiter.
    let (parent_synced, mut parent_synced_rx) = tokio::sync::watch::channel(false);
    let child_stores: Vec<_> = ctx.children.iter().map(|c| c.store.clone()).collect();
    tokio::spawn(async move {
        for store in child_stores {
            if store.wait_until_ready().await.is_err() {
                return;
            }
        }
        if parent_synced_rx.wait_for(|synced| *synced).await.is_ok() {
            tracing::info!("caches synced; ready");
            health.set_ready();
        }
    });
    let parents = reflector::reflector(
        parent_writer,
        watcher(parent_api, watcher::Config::default()),
    )
    .inspect_ok(move |event| {
        if matches!(event, watcher::Event::InitDone) {
            parent_synced.send_replace(true);
        }
    })
    .modify(|obj: &mut DynamicObject| obj.metadata.managed_fields = None)
    .applied_objects();
    let mut controller =
        Controller::for_stream_with(parents, parent_reader, ctx.parent.resource.clone())
            .with_config(kube::runtime::controller::Config::default().concurrency(args.concurrency))
            .reconcile_all_on(reconcile_all_rx);
    for (child, writer) in ctx.child_writers() {
        let api: Api<DynamicObject> = ctx.child_api_all(child);
        let selector = watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGER}"));
        let stream = reflector::reflector(writer, watcher(api, selector))
            .modify(|obj: &mut DynamicObject| obj.metadata.managed_fields = None)
            .touched_objects();
        controller = controller.owns_stream_with(stream, child.resource.clone());
    }

    tracing::info!(parent = %args.parent, children = ?args.children.iter().map(Gvk::to_string).collect::<Vec<_>>(), "controller starting");
    controller
        .shutdown_on_signal()
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "reconcile loop");
            }
        })
        .await;
    tracing::info!("controller stopped");
    Ok(())
}
