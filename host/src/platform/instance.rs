//! One running reconciler: from its `Definition` to a controller acting as its ServiceAccount, through
//! the phases that can each stop it (module not there or refused, kind not served), with its status
//! written as it goes. Started and stopped by the manager; nothing here reaches another reconciler.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::Client;
use kube::core::DynamicObject;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::module_ref::ModuleRef;
use super::spec::{Definition, Key};
use super::status::{Report, StatusWriter};
use crate::controller::{Context, Settings};
use crate::conversion::{RouteSettings, Routes, SecretRef, ServedRoute};
use crate::guest::{Runtime, RuntimeConfig};
use crate::lease::{self, Fence};
use crate::reconciler::{Blocked, ReconcilerBuilder, Startup, Waiting, serve_conversion_route};
use crate::shard::{Joined, Member};
use crate::source::oci::OciSettings;
use crate::source::{ModuleProblem, ModuleSource};
use crate::telemetry::{Metrics, Recorder};

/// How long a stopping controller may finish its running reconciles before it is cut off.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// How often a running reconciler's status is refreshed (written only when it changes).
const STATUS_PERIOD: Duration = Duration::from_secs(1);
/// How long before a conversion route that could not be set up is tried again (its CRD, Secret or
/// RBAC may be fixed meanwhile).
const CONVERSION_RETRY: Duration = Duration::from_secs(5);

/// What every reconciler of one host shares.
pub struct Shared {
    /// The host's own identity: status of reconciler objects and Events only.
    pub client: Client,
    /// The host's connection settings, from which each reconciler's impersonating client is made.
    pub config: kube::Config,
    pub runtime: Arc<Runtime>,
    pub defaults: RuntimeConfig,
    pub metrics: Metrics,
    pub recorder: Recorder,
    /// Every reconciler's resync period (`--resync-period`).
    pub resync_period: Option<Duration>,
    /// Whether parents may adopt uncontrolled objects (`--adopt-orphans`).
    pub adopt_orphans: bool,
    /// How `oci://` modules are reached and polled (`--oci-plain-http`, `--oci-ca-file`,
    /// `--oci-poll-interval`).
    pub oci: OciSettings,
    /// Whether this replica may write: every replica runs each reconciler (caches, conversion);
    /// only the one that holds the Lease reconciles and writes status.
    pub fence: Fence,
    /// The platform's ring, if sharded: each reconciler reconciles the parents assigned to this
    /// replica, while it holds its own shard Lease.
    pub joined: Option<Joined>,
    /// The shared conversion webhook port's routes (`--conversion-webhook-addr`), if it has one.
    pub routes: Option<Arc<Routes>>,
}

/// A client on `config`'s connection that makes every call as `user`: the API server's RBAC then
/// bounds the reconciler exactly as it would its ServiceAccount. Only the user is impersonated: the API
/// server adds a ServiceAccount's groups itself, and the host needs no right to impersonate groups.
/// `serve` runs each reconciler through one (its writes past `fence`); `plan --reconciler` plans
/// through one.
pub fn impersonating(
    config: &kube::Config,
    user: &str,
    fence: Option<&Fence>,
) -> kube::Result<Client> {
    let mut config = config.clone();
    config.auth_info.impersonate = Some(user.to_string());
    config.auth_info.impersonate_groups = None;
    lease::connect(config, fence)
}

/// A started reconciler: its definition (a changed one means a restart) and its task.
pub struct Instance {
    pub definition: Definition,
    object: watch::Sender<Arc<DynamicObject>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Instance {
    pub fn start(shared: Arc<Shared>, definition: Definition, object: DynamicObject) -> Instance {
        let (object, object_rx) = watch::channel(Arc::new(object));
        let (stop, stop_rx) = watch::channel(false);
        let key = Key::of(&object_rx.borrow());
        let run = Run {
            metrics: shared.metrics.for_controller(&key.to_string()),
            status: StatusWriter::new(
                shared.client.clone(),
                shared.recorder.clone(),
                shared.fence.clone(),
                key.clone(),
            ),
            shared,
            key,
            definition: definition.clone(),
            object: object_rx,
            stop: stop_rx,
            driving: Arc::default(),
        };
        Instance {
            definition,
            object,
            stop,
            task: tokio::spawn(run.run()),
        }
    }

    /// The object changed without a change of definition (labels, a status write): status uses it.
    pub fn observe(&self, object: DynamicObject) {
        self.object.send_replace(Arc::new(object));
    }

    /// Stops the controller: running reconciles finish (up to a grace period), no new one starts.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        let abort = self.task.abort_handle();
        if tokio::time::timeout(STOP_GRACE, self.task).await.is_err() {
            abort.abort();
        }
    }
}

struct Run {
    shared: Arc<Shared>,
    key: Key,
    definition: Definition,
    metrics: Metrics,
    status: StatusWriter,
    object: watch::Receiver<Arc<DynamicObject>>,
    stop: watch::Receiver<bool>,
    driving: Arc<AtomicBool>,
}

impl Run {
    async fn run(mut self) {
        tracing::info!(reconciler = %self.key, parent = %self.definition.settings.parent, user = %self.definition.user, "reconciler starting");
        // Before its controller runs, a stop cuts a phase short; once it runs, the controller itself
        // shuts down gracefully on the stop signal and `phases` returns.
        let mut stop = self.stop.clone();
        let driving = self.driving.clone();
        let cut_short = async move {
            let _ = stop.wait_for(|stop| *stop).await;
            if driving.load(Ordering::Relaxed) {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = cut_short => {}
            _ = self.phases() => {}
        }
        self.metrics.remove_controller();
        tracing::info!(reconciler = %self.key, "reconciler stopped");
    }

    async fn report(&mut self, report: Report) {
        let object = self.object.borrow().clone();
        self.status.write(&object, report).await;
    }

    /// Runs until stopped; each phase that cannot go on reports why and waits for what would fix it.
    async fn phases(&mut self) {
        let config = self.definition.runtime_config(&self.shared.defaults);
        let runtime = match self.shared.runtime.with_limits(config) {
            Ok(runtime) => runtime,
            Err(e) => {
                return self
                    .report(Report::not_ready(
                        "InvalidSpec",
                        format!("spec.limits: {e}"),
                    ))
                    .await;
            }
        };
        // Clients as the reconciler: its reconciles write through the fenced one (by this replica's
        // shard Lease when sharded); its module source and conversion route (whose caBundle every
        // replica keeps) through the unfenced one; a sharded reconciler's parents are assigned
        // through one fenced by the leader Lease.
        let user = &self.definition.user;
        let shared = &self.shared;
        let reconciles = (shared.joined.as_ref()).map_or(&shared.fence, |joined| &joined.fence);
        let clients = impersonating(&shared.config, user, Some(reconciles)).and_then(|fenced| {
            let unfenced = impersonating(&shared.config, user, None)?;
            let assigns = (shared.joined.as_ref())
                .map(|_| impersonating(&shared.config, user, Some(&shared.fence)))
                .transpose()?;
            Ok((fenced, unfenced, assigns))
        });
        let (client, unfenced, assigns) = match clients {
            Ok(clients) => clients,
            Err(e) => {
                return self
                    .report(Report::not_ready("InvalidSpec", e.to_string()))
                    .await;
            }
        };
        let settings = Settings {
            resync_period: self.shared.resync_period,
            adopt_orphans: self.shared.adopt_orphans,
            ..self.definition.settings.clone()
        };
        let module = self.module_source(&self.definition.module, &unfenced);
        let shadow = (self.definition.shadow_module.as_ref())
            .map(|shadow| self.module_source(shadow, &unfenced));
        let identity = settings.identity.clone();
        let mut builder =
            ReconcilerBuilder::new(settings, client, runtime, self.metrics.clone(), module)
                .events_as(self.shared.client.clone())
                .shadow(shadow)
                .fence(self.shared.fence.clone());
        if let Some(joined) = &self.shared.joined {
            builder = builder.member(Member::joining(joined, &identity));
        }
        let reconciler = match builder.build(&mut ReportOnStatus(self)).await {
            Ok(reconciler) => reconciler,
            Err(blocked) => {
                return self
                    .report(Report::not_ready(blocked.reason(), blocked.to_string()))
                    .await;
            }
        };

        let ctx = reconciler.context().clone();
        let _route = match self.definition.conversion_secret.clone() {
            Some(secret) => match self.conversion_route(&ctx, &unfenced, &secret).await {
                Some(route) => Some(route),
                None => return,
            },
            None => None,
        };
        // Every replica runs the controller (a standby's caches stay warm, its reconciles held until
        // it leads) and serves the conversions.
        self.driving.store(true, Ordering::Relaxed);
        let synced = Arc::new(AtomicBool::new(false));
        let on_synced = synced.clone();
        let mut stop = self.stop.clone();
        let shutdown = async move {
            let _ = stop.wait_for(|stop| *stop).await;
        };
        // The ring leader's assignment of this reconciler's parents, for as long as it runs.
        let assigner = (self.shared.joined.as_ref())
            .zip(assigns)
            .map(|(joined, assigns)| {
                let (client, fence) = (self.shared.client.clone(), self.shared.fence.clone());
                reconciler.assigner(joined, assigns, client, fence)
            });
        let assigning = async move {
            match assigner {
                Some(assigner) => assigner.run().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(assigning);
        let controller = reconciler.run(shutdown, move || on_synced.store(true, Ordering::Relaxed));
        tokio::pin!(controller);
        let mut tick = tokio::time::interval(STATUS_PERIOD);
        loop {
            tokio::select! {
                _ = &mut controller => break,
                () = &mut assigning => {}
                _ = tick.tick() => {
                    let report = running_report(&ctx, synced.load(Ordering::Relaxed));
                    self.report(report).await;
                }
            }
        }
    }

    /// The parent CRD's route on the platform's conversion port, retried until it can be served;
    /// `None` if the platform has no such port (which waiting does not fix).
    async fn conversion_route(
        &mut self,
        ctx: &Arc<Context>,
        client: &Client,
        secret: &SecretRef,
    ) -> Option<ServedRoute> {
        let Some(routes) = self.shared.routes.clone() else {
            let message = "spec.conversion: this platform serves no conversion webhook (it runs \
                           without --conversion-webhook-addr)";
            self.report(Report::not_ready("InvalidSpec", message)).await;
            return None;
        };
        let parent = &ctx.parent.resource;
        let settings = RouteSettings {
            route: self.key.name.clone(),
            crd: format!("{}.{}", parent.plural, parent.group),
            secret: secret.clone(),
        };
        loop {
            match serve_conversion_route(&routes, &settings, client.clone(), ctx).await {
                Ok(route) => return Some(route),
                Err(e) => {
                    tracing::warn!(reconciler = %self.key, error = %format!("{e:#}"), "cannot serve the conversion webhook yet");
                    let message = format!("spec.conversion: {e:#}");
                    let report = Report::not_ready("ConversionUnavailable", message);
                    self.report(report).await;
                    tokio::time::sleep(CONVERSION_RETRY).await;
                }
            }
        }
    }

    /// A module's source, read as the reconciler (`client`): a registry's pull Secret too.
    fn module_source(&self, module: &ModuleRef, client: &Client) -> ModuleSource {
        module.source(
            client,
            &self.shared.oci,
            self.shared.defaults.cache_dir.as_deref(),
            self.definition.settings.namespace.as_deref(),
        )
    }
}

/// A reconciler's start-up as `serve` meets it: each step and each problem on its status, and a wait
/// for what would fix the problem (a new module version, the kind's CRD).
struct ReportOnStatus<'a>(&'a mut Run);

impl Startup for ReportOnStatus<'_> {
    async fn waiting(&mut self, step: Waiting<'_>) {
        let report = match step {
            Waiting::Module(source) => Report::not_ready(
                "ModuleUnavailable",
                format!("waiting for the module in {source}"),
            ),
            Waiting::Caches => Report::not_ready("Starting", "waiting for the caches to list"),
        };
        self.0.report(report).await;
    }

    async fn blocked(&mut self, blocked: &Blocked) -> bool {
        tracing::warn!(reconciler = %self.0.key, reason = blocked.reason(), error = %blocked, "reconciler cannot start yet");
        let report = Report::not_ready(blocked.reason(), blocked.to_string());
        self.0.report(report).await;
        true
    }
}

/// The status of a reconciler whose controller runs.
fn running_report(ctx: &Context, synced: bool) -> Report {
    let health = ctx.health.report();
    let parents = ctx.parents_taken();
    let failing = ctx.failing_parents();
    let module = ctx.module();
    let (ready, reason, message) = match (&health.watch_error, synced) {
        (Some(error), _) => (false, "WatchFailed", error.clone()),
        (None, false) => (
            false,
            "Starting",
            "waiting for the caches to list".to_string(),
        ),
        (None, true) => (
            true,
            "Running",
            format!("{parents} parents, module {}", module.short_digest()),
        ),
    };
    let degraded = match (&health.module_problem, failing.first()) {
        (Some(problem), _) => {
            let reason = problem.reason();
            let what = match problem {
                ModuleProblem::Refused(_) => "the new module was refused",
                ModuleProblem::Unavailable(_) => "no new module can be had",
            };
            let serving = module.short_digest();
            Some((
                reason,
                format!("{what}, {serving} keeps serving: {}", problem.message()),
            ))
        }
        (None, Some((first, reason))) => Some((
            "ParentsFailing",
            format!(
                "{} of {} parents fail, e.g. {first}: {reason}",
                failing.len(),
                parents
            ),
        )),
        (None, None) => None,
    };
    Report {
        ready,
        reason,
        message,
        degraded,
        module_digest: Some(module.digest().to_string()),
        parents,
        failing_parents: failing.len(),
    }
}
