//! `reconcile-host plan`: what a module would do to the live cluster, without doing it.
//!
//! Hot swap puts new logic in front of every parent within seconds; `plan` shows its effect first. For
//! every live parent it calls the module with the same request the controller would build (the parent,
//! the children it controls and the related objects it selects), runs the same safety and ownership
//! rules, and asks the API server for the result of each apply in dry-run mode, so defaults, admission
//! and other field managers are accounted for. It writes nothing. The report (`report`) lists the
//! parents that would change or fail; the exit code lets a CI job gate on it. With `--reconciler` it
//! plans as a platform reconciler runs, as its ServiceAccount (`reconciler`).

mod parent;
mod reconciler;
mod report;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use kube::Client;
use kube::api::ListParams;
use kube::core::DynamicObject;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;

use crate::controller::{Context, ResolvedKind, Settings, as_cached};
use crate::guest::{Module, Runtime, RuntimeConfig};
use crate::identity::Identity;
use crate::platform::spec::Key;
use crate::telemetry::Metrics;
use crate::text::OutputFormat;
pub use parent::{ParentPlan, Verdict};
pub use reconciler::parse_namespaced;
pub use report::Summary;

/// Exit code when some parent would fail: the module must not be rolled out as it is.
pub const EXIT_FAILING: u8 = 2;
/// Exit code with `--fail-on-change` when some parent would change.
pub const EXIT_CHANGES: u8 = 3;

/// What a plan runs as: the reconciler that `run`'s flags describe, or a platform reconciler's object.
#[derive(Debug)]
pub enum PlanTarget {
    /// The settings of a host run with flags (`--parent`, `--child`, ...), as the caller.
    Settings(Box<Settings>),
    /// A `Reconciler` or `ClusterReconciler`, as `serve` runs it: its settings, limits and
    /// ServiceAccount.
    Reconciler(Key),
}

/// Everything `plan` needs, as plain values: the command line builds it (`cli::PlanArgs`).
#[derive(Debug)]
pub struct PlanOptions {
    /// The candidate component (.wasm).
    pub module: PathBuf,
    pub target: PlanTarget,
    /// Plan as a host that lets parents adopt orphans acts.
    pub adopt_orphans: bool,
    /// Exit with [`EXIT_CHANGES`] when any parent would change.
    pub fail_on_change: bool,
    pub output: OutputFormat,
    /// The guest limits of a plan as the caller (a reconciler object brings its own).
    pub runtime: RuntimeConfig,
}

pub fn plan(args: PlanOptions, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(plan_async(args, out))
}

async fn plan_async(args: PlanOptions, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    let host = Runtime::new(args.runtime)?;
    let config = kube::Config::infer().await?;
    let caller = Client::try_from(config.clone())?;
    // As the caller, or as the reconciler: its settings and limits, and every call as its ServiceAccount.
    let (settings, runtime, client, who) = match args.target {
        PlanTarget::Settings(settings) => (*settings, host, caller, "the caller".to_string()),
        PlanTarget::Reconciler(key) => {
            let as_it =
                reconciler::plan_as(&caller, &config, key, &host, args.adopt_orphans).await?;
            (as_it.settings, as_it.runtime, as_it.client, as_it.user)
        }
    };
    let module = Module::load_file(&runtime, &args.module)?;
    // The controller's context, never started: its child, related and Namespace caches are listed once
    // (`fill_caches`).
    let ctx = Context::discover(
        client.clone(),
        client,
        &settings,
        module,
        Metrics::new("plan"),
    )
    .await?;
    let listing = |what: &str| format!("listing {what} as {who}");
    let mut parents = ctx
        .api_all(&ctx.parent)
        .list(&ListParams::default())
        .await
        .with_context(|| listing(&format!("the parents ({})", settings.parent)))?
        .items;
    for parent in &mut parents {
        parent.types = Some(ctx.parent.type_meta());
    }
    fill_caches(&ctx)
        .await
        .with_context(|| listing("the children, related objects and Namespaces"))?;

    let mut plans = Vec::with_capacity(parents.len());
    for parent in parents {
        plans.extend(parent::plan_parent(&ctx, &parent).await);
    }
    let summary = report::write(&plans, args.output, out)?;
    eprintln!("{summary}");
    Ok(if summary.failing > 0 {
        ExitCode::from(EXIT_FAILING)
    } else if args.fail_on_change && summary.changed > 0 {
        ExitCode::from(EXIT_CHANGES)
    } else {
        ExitCode::SUCCESS
    })
}

/// Lists each related kind, the Namespaces for `--child-namespace-selector`, and each child kind
/// with the selectors of the controller's two child watches (the children carrying the reconciler's
/// identity, then the legacy ones), into their caches, once: the module's selections, the children's
/// placement and what each parent observes then read them as the host reads its watched caches.
async fn fill_caches(ctx: &Context) -> kube::Result<()> {
    let namespaces = ctx
        .namespace_writer()
        .map(|cache| (ResolvedKind::namespace(), cache));
    let related = ctx.related.writers();
    let related = related
        .into_iter()
        .map(|(kind, cache)| (kind.clone(), cache));
    for (kind, cache) in related.chain(namespaces) {
        fill_cache(ctx, &kind, cache, &ListParams::default()).await?;
    }
    let selectors = [ctx.identity.own_children(), Identity::unnamed_children()];
    for (child, writers) in ctx.child_writers() {
        for ((writer, cache), selector) in writers.into_iter().zip(child.caches()).zip(&selectors) {
            let params = ListParams::default().labels(selector);
            fill_cache(ctx, &child.kind, writer, &params).await?;
            cache
                .owned
                .rebuild(cache.store.state().iter().map(|object| object.as_ref()));
        }
    }
    Ok(())
}

/// Lists `kind` with `params` into `cache`.
async fn fill_cache(
    ctx: &Context,
    kind: &ResolvedKind,
    mut cache: Writer<DynamicObject>,
    params: &ListParams,
) -> kube::Result<()> {
    let items = ctx.api_all(kind).list(params).await?.items;
    cache.apply_watcher_event(&watcher::Event::Init);
    let types = kind.type_meta();
    for mut object in items {
        as_cached(&mut object, &types);
        cache.apply_watcher_event(&watcher::Event::InitApply(object));
    }
    cache.apply_watcher_event(&watcher::Event::InitDone);
    Ok(())
}
