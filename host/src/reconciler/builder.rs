//! The one assembly of a running reconciler, whichever command asks for it: `run` feeds it from flags,
//! `serve` from a `Reconciler` object. It waits for the first module version that loads, resolves the
//! kinds into the reconciler's `Context`, and starts following the module (and the shadow module);
//! `Reconciler::run` then drives the watches and the controller until shutdown, and the follows end
//! with it.
//!
//! What differs between the commands is only how a start-up meets what blocks it (`Startup`): `run`
//! gives up at once, `serve` reports on the reconciler's status and waits for what would fix it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::{self, UnboundedReceiver};
use kube::Client;
use tokio::task::JoinHandle;

use super::driver::drive;
use super::follow::{Slot, follow};
use crate::controller::{Context, DiscoveryError, Settings};
use crate::guest::{Module, Runtime};
use crate::lease::Fence;
use crate::shard::{Assigner, Joined, Member};
use crate::source::{ModuleProblem, ModuleSource, load};
use crate::telemetry::Metrics;

/// How long before a kind that is not served is looked up again (its CRD may be installed later).
const DISCOVERY_RETRY: Duration = Duration::from_secs(5);

/// Why a reconciler cannot start (yet).
#[derive(Debug, thiserror::Error)]
pub enum Blocked {
    #[error("module source {0} ended before it gave a module")]
    SourceEnded(String),
    #[error(transparent)]
    Module(#[from] ModuleProblem),
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
}

impl Blocked {
    /// The reason a status condition gives for it.
    pub fn reason(&self) -> &'static str {
        match self {
            Blocked::SourceEnded(_) => "ModuleUnavailable",
            Blocked::Module(problem) => problem.reason(),
            Blocked::Discovery(DiscoveryError::NotServed { .. }) => "KindNotServed",
            Blocked::Discovery(_) => "InvalidSpec",
        }
    }

    /// Whether waiting can fix it: a new module version, a CRD installed later. A spec that asks for
    /// what the host refuses (a cluster-scoped child kind, a selection that cannot be) stays refused.
    pub fn may_pass(&self) -> bool {
        match self {
            Blocked::SourceEnded(_) => false,
            Blocked::Module(_) => true,
            Blocked::Discovery(error) => matches!(error, DiscoveryError::NotServed { .. }),
        }
    }
}

/// How one start-up meets what blocks it, and what it tells meanwhile.
pub trait Startup: Send {
    /// The build waits for `step`; `serve` says so on the reconciler's status.
    fn waiting(&mut self, step: Waiting<'_>) -> impl Future<Output = ()> + Send;
    /// `blocked` stops the build; `true` waits for what may fix it (only asked if `may_pass`),
    /// `false` gives up with it.
    fn blocked(&mut self, blocked: &Blocked) -> impl Future<Output = bool> + Send;
}

/// What a build waits for.
#[derive(Clone, Copy, Debug)]
pub enum Waiting<'a> {
    /// The first version of the module from its source.
    Module(&'a ModuleSource),
    /// The first list of every cache (the controller runs meanwhile).
    Caches,
}

/// A start-up with no one to wait for a fix: the first problem ends it (`run`, at a terminal or in a
/// Pod that restarts).
pub struct GiveUp;

impl Startup for GiveUp {
    async fn waiting(&mut self, step: Waiting<'_>) {
        if let Waiting::Module(source) = step {
            tracing::info!(%source, "waiting for the module");
        }
    }

    async fn blocked(&mut self, _: &Blocked) -> bool {
        false
    }
}

/// What one reconciler is made of; `build` assembles it.
pub struct ReconcilerBuilder {
    settings: Settings,
    client: Client,
    event_client: Client,
    runtime: Arc<Runtime>,
    metrics: Metrics,
    module: ModuleSource,
    shadow: Option<ModuleSource>,
    fence: Fence,
    member: Option<Arc<Member>>,
}

impl ReconcilerBuilder {
    /// A reconciler of `settings` whose every read and write goes through `client` (in `serve`,
    /// impersonating its ServiceAccount), running `module` on `runtime`, counted in `metrics`.
    pub fn new(
        settings: Settings,
        client: Client,
        runtime: Arc<Runtime>,
        metrics: Metrics,
        module: ModuleSource,
    ) -> Self {
        ReconcilerBuilder {
            settings,
            event_client: client.clone(),
            client,
            runtime,
            metrics,
            module,
            shadow: None,
            fence: Fence::open(),
            member: None,
        }
    }

    /// Reconciles only while `fence` admits writes (the replica holds its Lease), and every parent
    /// when it opens; by default always. The clients' own fence refuses the writes; this one spares a
    /// standby the guest calls whose writes would be refused.
    pub fn fence(mut self, fence: Fence) -> Self {
        self.fence = fence;
        self
    }

    /// Reconciles only the parents assigned to `member` in its ring, while its own shard Lease is
    /// held (its fence replaces `fence`'s); its caches hold only those parents and their children.
    pub fn member(mut self, member: Member) -> Self {
        self.fence = member.fence.clone();
        self.member = Some(Arc::new(member));
        self
    }

    /// Events go out as the host itself (`serve`: a reconciler's ServiceAccount may not publish them).
    pub fn events_as(mut self, client: Client) -> Self {
        self.event_client = client;
        self
    }

    /// A candidate module called beside the active one and never applied.
    pub fn shadow(mut self, source: Option<ModuleSource>) -> Self {
        self.shadow = source;
        self
    }

    /// Waits for the first module that loads, resolves the kinds, and starts the module follows;
    /// `startup` decides what a problem on the way means.
    pub async fn build(self, startup: &mut impl Startup) -> Result<Reconciler, Blocked> {
        let mut updates = self.module.updates(Some(self.client.clone()));
        startup.waiting(Waiting::Module(&self.module)).await;
        let module = loop {
            let blocked = match updates.next().await {
                None => Blocked::SourceEnded(self.module.to_string()),
                Some(update) => match load(&self.runtime, update).await {
                    Ok(module) => break module,
                    Err(problem) => Blocked::Module(problem),
                },
            };
            tracing::warn!(source = %self.module, reason = blocked.reason(), error = %blocked, "no usable module yet");
            if !(blocked.may_pass() && startup.blocked(&blocked).await) {
                return Err(blocked);
            }
        };
        let source = &self.module;
        tracing::info!(%source, digest = module.digest(), bytes = module.size(), world = module.world(), "module loaded");
        self.metrics.module_loaded(module.digest(), true);
        let ctx = self.discover(module, startup).await?;
        startup.waiting(Waiting::Caches).await;

        let (reconcile_all, reconcile_all_rx) = mpsc::unbounded();
        let mut follows = Follows(Vec::new());
        let leads = reconcile_all_on_leading(self.fence.clone(), reconcile_all.clone());
        follows.0.push(tokio::spawn(leads));
        if let Some(shadow) = self.shadow {
            let updates = shadow.updates(Some(self.client.clone()));
            let (ctx, runtime, reconcile_all) =
                (ctx.clone(), self.runtime.clone(), reconcile_all.clone());
            let follow = follow(Slot::Shadow, ctx, runtime, shadow, updates, reconcile_all);
            follows.0.push(tokio::spawn(follow));
        }
        let follow = follow(
            Slot::Active,
            ctx.clone(),
            self.runtime,
            self.module,
            updates,
            reconcile_all,
        );
        follows.0.push(tokio::spawn(follow));
        Ok(Reconciler {
            ctx,
            reconcile_all: reconcile_all_rx,
            follows,
        })
    }

    /// The reconciler's context, once its kinds resolve.
    async fn discover(
        &self,
        module: Arc<Module>,
        startup: &mut impl Startup,
    ) -> Result<Arc<Context>, Blocked> {
        loop {
            let discovered = Context::discover(
                self.client.clone(),
                self.event_client.clone(),
                &self.settings,
                module.clone(),
                self.metrics.clone(),
            )
            .await;
            let blocked = match discovered {
                Ok(mut ctx) => {
                    ctx.fence = self.fence.clone();
                    ctx.shard = self.member.clone();
                    return Ok(Arc::new(ctx));
                }
                Err(e) => Blocked::Discovery(e),
            };
            if !(blocked.may_pass() && startup.blocked(&blocked).await) {
                return Err(blocked);
            }
            tokio::time::sleep(DISCOVERY_RETRY).await;
        }
    }
}

/// Sends on `reconcile_all` each time the fence opens after admitting nothing (this replica starts to
/// lead, or a late renewal reopens it): the reconciles it held meanwhile are run now.
async fn reconcile_all_on_leading(fence: Fence, reconcile_all: mpsc::UnboundedSender<()>) {
    let mut openings = fence.openings();
    while openings.changed().await.is_ok() {
        if reconcile_all.unbounded_send(()).is_err() {
            return;
        }
    }
}

/// The tasks that follow a reconciler's module sources and its leadership: they end with it, in
/// `run` as in `serve`.
struct Follows(Vec<JoinHandle<()>>);

impl Drop for Follows {
    fn drop(&mut self) {
        self.0.iter().for_each(JoinHandle::abort);
    }
}

/// An assembled reconciler: its context, and its module follows running.
pub struct Reconciler {
    ctx: Arc<Context>,
    reconcile_all: UnboundedReceiver<()>,
    follows: Follows,
}

impl Reconciler {
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The ring leader's part for this reconciler in the ring `joined`: its parents assigned by
    /// labels written through `client` (`serve`: as the reconciler's ServiceAccount), members'
    /// Leases taken through `leases` (the host's own client), both fenced by the leader Lease `fence`.
    pub fn assigner(
        &self,
        joined: &Joined,
        client: Client,
        leases: Client,
        fence: Fence,
    ) -> Assigner {
        let ctx = &self.ctx;
        Assigner {
            client,
            resource: ctx.parent.resource.clone(),
            namespace: ctx.namespace().map(str::to_string),
            selector: (ctx.selection.parent_selector.as_ref()).map(ToString::to_string),
            leases: kube::Api::namespaced(leases, &joined.settings.namespace),
            ring: joined.ring.clone(),
            fence,
            ring_settings: joined.settings.clone(),
            shard_label: ctx.identity.shard_label(),
            drain_label: ctx.identity.drain_label(),
            moved_annotation: ctx.identity.moved_annotation(),
            metrics: ctx.metrics.clone(),
        }
    }

    /// Runs the watches and the controller until `shutdown` (running reconciles finish); `synced` is
    /// called once every cache has listed. The module follows stop when it returns.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + Sync + 'static,
        synced: impl FnOnce() + Send + 'static,
    ) {
        let Reconciler {
            ctx,
            reconcile_all,
            follows,
        } = self;
        tracing::info!(parent = %ctx.parent.gvk, reconciler = %ctx.identity, "controller starting");
        drive(ctx, reconcile_all, shutdown, synced).await;
        drop(follows);
        tracing::info!("controller stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_waiting_can_fix_is_waited_for() {
        let refused = Blocked::Module(ModuleProblem::Refused("not a component".into()));
        assert!(refused.may_pass());
        assert_eq!(refused.reason(), "ModuleRefused");
        let not_served = Blocked::Discovery(DiscoveryError::NotServed {
            gvk: "example.com/v1/MyApp".parse().unwrap(),
            reason: "404".into(),
        });
        assert!(not_served.may_pass());
        assert_eq!(not_served.reason(), "KindNotServed");
        let cluster_child = Blocked::Discovery(DiscoveryError::ClusterScoped(
            "v1/Namespace".parse().unwrap(),
        ));
        assert!(!cluster_child.may_pass());
        assert_eq!(cluster_child.reason(), "InvalidSpec");
        let ended = Blocked::SourceEnded("file m.wasm".into());
        assert!(!ended.may_pass());
        assert_eq!(ended.reason(), "ModuleUnavailable");
    }
}
