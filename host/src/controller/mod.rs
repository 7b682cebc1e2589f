//! The controller: watches parents and the child kinds they own through kube-runtime, calls the guest
//! for each parent, and applies its answer (`reconcile`), using the reflector caches (`observe`),
//! server-side apply and pruning (`apply`), the status subresource (`status`) and per-object backoff.

mod applied;
mod apply;
mod backoff;
mod context;
mod create;
mod driver;
mod error;
mod finalizer;
mod health;
pub mod leader;
mod namespaces;
mod observe;
mod owner_index;
mod ownership;
mod reconcile;
mod related;
mod release;
mod selection;
mod shadow;
mod status;
pub mod swap;
mod sync;
mod webhook;
mod written_status;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;

use crate::conversion::ConversionArgs;
use crate::guest::{Runtime, RuntimeConfig};
use crate::identity::Identity;
use crate::kind::Gvk;
use crate::source::ModuleSource;
use crate::telemetry::{Health, Metrics, serve};
pub use apply::{apply_body, owner_reference};
pub use context::{ChildCache, ChildKind, Context, DiscoveryError, ResolvedKind};
pub use driver::{drive, shutdown_signal};
pub use error::ReconcileError;
pub use health::{HealthReport, ModuleProblem, ReconcilerHealth};
pub use observe::{Observed, controlled_by, left_out, request};
pub use ownership::Claim;
pub use selection::{Selection, SelectionError, parent_key};
pub use status::{HOST_STATUS_KEYS, READY, guest_part, status_of};
pub use sync::as_cached;

pub use crate::identity::{MANAGED_BY_LABEL, MANAGER};

/// What defines one reconciler, whether from `run`'s flags or a `Reconciler` object.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub parent: Gvk,
    pub children: Vec<Gvk>,
    /// The kinds a module may read as related objects (separate from `children`, read-only).
    pub related: Vec<Gvk>,
    /// Only parents (and so children) in this namespace; `None`: all namespaces.
    pub namespace: Option<String>,
    pub finalizer: Option<String>,
    pub concurrency: u16,
    /// Re-run every parent this often, as a safety net; `None`: only on changes.
    pub resync_period: Option<Duration>,
    /// Take over existing objects that nothing controls when the guest names them (`--adopt-orphans`).
    pub adopt_orphans: bool,
    /// Which parents it takes (decorators) and where their children may live (cluster-scoped parents).
    pub selection: Selection,
    /// Whose children are its own: they carry this identity, and its caches hold only those.
    pub identity: Identity,
}

/// Everything `run` needs, as plain values: the command line builds it (`cli::RunArgs`).
pub struct RunOptions {
    pub settings: Settings,
    /// Where the module comes from; hot-swapped as it changes.
    pub source: ModuleSource,
    /// A candidate module called beside the active one and never applied (`--shadow-module`).
    pub shadow_source: Option<ModuleSource>,
    /// Address of /healthz, /readyz and /metrics.
    pub metrics_addr: SocketAddr,
    /// The Lease to lead on before reconciling; `None`: reconcile at once.
    pub election: Option<leader::Election>,
    pub conversion: ConversionArgs,
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
        conversion,
        runtime,
    } = options;
    let metrics = Metrics::new(&settings.parent.kind.to_lowercase());
    let health = Arc::new(Health::default());
    let addr = serve(metrics_addr, health.clone(), metrics.clone()).await?;
    tracing::info!(%addr, "serving /healthz, /readyz and /metrics");

    let conversions = match conversion.conversion_webhook_addr {
        Some(_) => webhook::CONVERSION_INSTANCES,
        None => 0,
    };
    let runtime =
        Runtime::new(runtime.max_instances(u32::from(settings.concurrency) * 2 + 4 + conversions))?;
    let client = Client::try_default().await?;
    let mut updates = source.updates(Some(client.clone()));
    let module = swap::first_module(&runtime, &source, &mut updates).await?;
    tracing::info!(%source, digest = module.digest(), bytes = module.size(), world = module.world(), "module loaded");
    metrics.module_loaded(module.digest(), true);

    // The context, the module follower and the conversion webhook come before the election: a standby
    // serves conversions too (the API server calls any replica behind the Service), with the module
    // every replica keeps current. The caches fill and reconciles start only once leading (`drive`).
    let ctx = Arc::new(
        Context::discover(
            client.clone(),
            client.clone(),
            &settings,
            module,
            metrics.clone(),
        )
        .await?,
    );
    let (reconcile_all, reconcile_all_rx) = futures::channel::mpsc::unbounded();
    if let Some(shadow) = shadow_source {
        let mut updates = shadow.updates(Some(client.clone()));
        let (ctx, runtime, reconcile_all) = (ctx.clone(), runtime.clone(), reconcile_all.clone());
        tokio::spawn(async move {
            let slot = swap::Slot::Shadow;
            swap::follow_into(slot, ctx, runtime, shadow, &mut updates, reconcile_all).await
        });
    }
    tokio::spawn(swap::follow(
        ctx.clone(),
        runtime.clone(),
        source,
        updates,
        reconcile_all,
    ));
    webhook::serve_conversion(&conversion, client.clone(), &ctx).await?;

    leader::lead(election, client, &metrics).await?;

    tracing::info!(parent = %settings.parent, reconciler = %settings.identity, children = ?settings.children.iter().map(Gvk::to_string).collect::<Vec<_>>(), "controller starting");
    drive(
        ctx,
        reconcile_all_rx,
        driver::shutdown_signal(),
        move || {
            tracing::info!("caches synced; ready");
            health.set_ready();
        },
    )
    .await;
    tracing::info!("controller stopped");
    Ok(())
}
