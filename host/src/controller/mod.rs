//! The controller: watches parents and the child kinds they own through kube-runtime, calls the guest
//! for each parent, and applies its answer (`reconcile`), using the reflector caches (`observe`),
//! server-side apply and pruning (`apply`), the status subresource (`status`) and per-object backoff.

mod backoff;
mod context;
mod decide;
mod driver;
mod error;
mod execute;
mod health;
pub mod leader;
mod observe;
mod reconcile;
mod release;
mod request;
mod settings;
pub mod swap;
mod webhook;

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use kube::Client;

use crate::cli::RuntimeArgs;
use crate::guest::Runtime;
use crate::identity::{Identity, LEASE_PREFIX, parse_run_name};
use crate::kind::Gvk;
use crate::source::oci::{CredentialsArgs, OciArgs};
use crate::source::{ConfigMapRef, ModuleLocation, ModuleSource};
use crate::telemetry::{Health, Metrics, serve};
pub use context::Context;
pub use decide::ownership::Claim;
pub use decide::plan::{HostRules, Plan, Prune, Write, plan};
pub use decide::start::{Released, Start, held, release_calls_guest, released, start};
pub use decide::status::{HOST_STATUS_KEYS, READY, guest_part, status_of};
pub use driver::{drive, shutdown_signal};
pub use error::{ReconcileError, uid_of};
pub use health::{HealthReport, ModuleProblem, ReconcilerHealth};
pub use observe::children::{Observed, controlled_by, left_out};
pub use observe::kinds::{ChildCache, ChildKind, DiscoveryError, ResolvedKind};
pub use observe::selection::{Selection, SelectionArgs, SelectionError, parent_key};
pub use observe::sync::as_cached;
pub use request::request;
pub use settings::Settings;

pub use crate::identity::{MANAGED_BY_LABEL, MANAGER};

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
    /// A kind the guest may read as related objects, GROUP/VERSION/KIND (repeatable; env:
    /// comma-separated). Each is watched (the host needs get, list and watch on it); a module's
    /// selector of another kind is refused on its parent.
    #[arg(
        long = "related",
        env = "RECONCILE_HOST_RELATED",
        value_delimiter = ','
    )]
    pub related: Vec<Gvk>,
    /// The reconciler component: a .wasm file (typically a mounted ConfigMap), watched; or
    /// `oci://REGISTRY/REPOSITORY:TAG` (polled) or `@sha256:DIGEST` in a registry. Hot-swapped.
    #[arg(long, env = "RECONCILE_HOST_MODULE", group = "module-source")]
    pub module: Option<ModuleLocation>,
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
    /// Name of the Lease (default: reconcile-host-<name>, see `--name`).
    #[arg(long, env = "RECONCILE_HOST_LEADER_ELECTION_ID")]
    pub leader_election_id: Option<String>,
    /// Only parents in this namespace (default: all namespaces).
    #[arg(long, env = "RECONCILE_HOST_NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub name: NameArgs,
    /// A candidate module (a .wasm file or an `oci://` reference) called beside the active one on
    /// every reconcile and never applied; where it answers differently, the parent gets a
    /// `ShadowDiffers` Event. Watched and hot-swapped like `--module`.
    #[arg(long, env = "RECONCILE_HOST_SHADOW_MODULE")]
    pub shadow_module: Option<ModuleLocation>,
    /// The candidate module in a ConfigMap's binaryData, NAMESPACE/NAME[/KEY] (see `--shadow-module`).
    #[arg(
        long,
        env = "RECONCILE_HOST_SHADOW_MODULE_CONFIGMAP",
        conflicts_with = "shadow_module"
    )]
    pub shadow_module_configmap: Option<ConfigMapRef>,
    #[command(flatten)]
    pub selection: SelectionArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub conversion: crate::conversion::ConversionArgs,
    #[command(flatten)]
    pub oci: OciArgs,
    #[command(flatten)]
    pub oci_credentials: CredentialsArgs,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

/// The name of a `run` reconciler, shared by `run` and `plan` (which must plan as the host acts).
#[derive(Clone, Debug, Args)]
pub struct NameArgs {
    /// This reconciler's name: each child carries it (label `reconcile-host.dev/reconciler`), and the
    /// host watches, prunes and releases only children that carry it, so that two hosts of one parent
    /// kind (two decorators with different selectors) never act on each other's children. Default:
    /// the parent kind, lowercased, and with `--parent-selector` a hash of the selector
    /// (`namespace-1a2b3c4d`). The default Lease is `reconcile-host-<name>`.
    #[arg(long = "name", env = "RECONCILE_HOST_NAME", value_parser = parse_run_name)]
    pub name: Option<String>,
}

impl NameArgs {
    /// The identity of a `run` reconciler of `parent` that takes the parents `selection` selects.
    pub fn identity(&self, parent: &Gvk, selection: &Selection) -> Identity {
        let selector = selection.parent_selector.as_ref();
        let name = (self.name.clone()).unwrap_or_else(|| Identity::run_default(parent, selector));
        Identity::new(name)
    }
}

/// What the host's operator decides for every reconciler, shared by `run` and `serve`.
#[derive(Clone, Debug, Args)]
pub struct PolicyArgs {
    /// Re-run every parent this often (e.g. `10h`, `30m`, `1h30m`; `0` or unset: never). A safety
    /// net for a missed event, like controller-runtime's SyncPeriod: the watches already reconcile
    /// every change, and each resync calls the guest once per parent.
    #[arg(long = "resync-period", env = "RECONCILE_HOST_RESYNC_PERIOD", value_parser = parse_period)]
    period: Option<Duration>,
    /// Let a parent adopt an existing object that nothing controls when its guest names it (default:
    /// refuse with `ChildExists`). The risk: any guest can then take over, rewrite and, through the
    /// ownerReference, get garbage-collected every uncontrolled object of its child kinds in its
    /// namespace, such as one a person created by hand.
    #[arg(long, env = "RECONCILE_HOST_ADOPT_ORPHANS")]
    pub adopt_orphans: bool,
}

impl PolicyArgs {
    /// The period, if there is one.
    pub fn period(&self) -> Option<Duration> {
        self.period.filter(|period| !period.is_zero())
    }
}

/// A duration such as `10h`, `30m` or `1h30m`, or `0`.
pub(crate) fn parse_period(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let period: jiff::SignedDuration = text.parse().map_err(|e| format!("{e}"))?;
    Duration::try_from(period).map_err(|_| "a period cannot be negative".to_string())
}

impl RunArgs {
    pub fn settings(&self) -> Settings {
        let selection = (&self.selection).into();
        Settings {
            identity: self.name.identity(&self.parent, &selection),
            parent: self.parent.clone(),
            children: self.children.clone(),
            related: self.related.clone(),
            namespace: self.namespace.clone(),
            finalizer: self.finalizer.clone(),
            concurrency: self.concurrency,
            resync_period: self.policy.period(),
            adopt_orphans: self.policy.adopt_orphans,
            selection,
        }
    }

    /// The Lease of the leader election: `--leader-election-id`, else named after the reconciler, so
    /// that two hosts of one kind with different names (decorators) do not contend for one Lease.
    fn lease(&self, identity: &Identity) -> String {
        (self.leader_election_id.clone())
            .unwrap_or_else(|| format!("{LEASE_PREFIX}{}", identity.name()))
    }
}

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
    let of = |location| {
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
    let shadow_source = match (&args.shadow_module, &args.shadow_module_configmap) {
        (Some(location), _) => Some(of(location)),
        (None, Some(cm)) => Some(ModuleSource::ConfigMap(cm.clone())),
        (None, None) => None,
    };
    let mut updates = source.updates(Some(client.clone()));
    let module = swap::first_module(&runtime, &source, &mut updates).await?;
    tracing::info!(%source, digest = module.digest(), bytes = module.size(), world = module.world(), "module loaded");
    metrics.module_loaded(module.digest(), true);

    // The context, the module follower and the conversion webhook come before the election: a standby
    // serves conversions too (the API server calls any replica behind the Service), with the module
    // every replica keeps current. The caches fill and reconciles start only once leading (`drive`).
    let settings = args.settings();
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
    webhook::serve_conversion(&args.conversion, client.clone(), &ctx).await?;

    let election = args.leader_election.then(|| leader::Election {
        namespace: args
            .leader_election_namespace
            .clone()
            .unwrap_or_else(leader::namespace),
        lease: args.lease(&settings.identity),
        identity: leader::identity(),
    });
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn run_with(extra: &[&str]) -> Result<Settings, clap::Error> {
        let base = [
            "reconcile-host",
            "run",
            "--parent",
            "example.com/v1alpha1/MyApp",
            "--child",
            "apps/v1/Deployment",
            "--module",
            "myapp.wasm",
        ];
        let cli = Cli::try_parse_from(base.iter().chain(extra))?;
        match cli.command {
            Command::Run(args) => Ok(args.settings()),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_name_defaults_to_the_kind_and_the_selector_and_names_the_lease() {
        let parse = |extra: &[&str]| {
            let base = [
                "reconcile-host",
                "run",
                "--parent",
                "v1/Namespace",
                "--child",
            ];
            let base = base
                .into_iter()
                .chain(["v1/ResourceQuota", "--module", "m.wasm"]);
            match Cli::try_parse_from(base.chain(extra.iter().copied()))
                .unwrap()
                .command
            {
                Command::Run(args) => {
                    let identity = args.settings().identity;
                    let lease = args.lease(&identity);
                    (identity.label().to_string(), lease)
                }
                other => panic!("parsed as {other:?}"),
            }
        };
        // Without a selector, the Lease is the one hosts had before names.
        let plain = parse(&[]);
        assert_eq!(
            plain,
            ("namespace".into(), "reconcile-host-namespace".into())
        );
        let (a, lease_a) = parse(&["--parent-selector", "team=a"]);
        let (b, lease_b) = parse(&["--parent-selector", "team=b"]);
        assert_ne!(a, b);
        assert_ne!(lease_a, lease_b);
        assert_eq!(lease_a, format!("reconcile-host-{a}"));
        let named = parse(&["--parent-selector", "team=a", "--name", "team-a-quotas"]);
        assert_eq!(
            named,
            (
                "team-a-quotas".into(),
                "reconcile-host-team-a-quotas".into()
            )
        );
        let chosen = parse(&["--name", "x", "--leader-election-id", "mine"]);
        assert_eq!(chosen.1, "mine");
        assert!(run_with(&["--name", "Team_A"]).is_err());
    }

    #[test]
    fn the_resync_period_is_off_unless_given_and_read_as_people_write_it() {
        let period = |extra: &[&str]| run_with(extra).unwrap().resync_period;
        assert_eq!(period(&[]), None);
        assert_eq!(period(&["--resync-period", "0"]), None);
        assert_eq!(
            period(&["--resync-period", "10h"]),
            Some(Duration::from_secs(36_000))
        );
        assert_eq!(
            period(&["--resync-period", "1h30m"]),
            Some(Duration::from_secs(5_400))
        );
        assert!(run_with(&["--resync-period", "-1h"]).is_err());
        assert!(run_with(&["--resync-period", "often"]).is_err());
    }
}
