//! What every reconcile shares: the client, the resolved kinds and their caches, the active module,
//! the safety rules, the event recorder, the backoff state and the reconciler's health.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::ApiResource;
use kube::core::DynamicObject;
use kube::discovery::Scope;
use kube::runtime::events::Reporter;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client};

use super::backoff::Backoff;
use super::decide::ownership;
use super::decide::plan::HostRules;
use super::decide::shadow::Shadow;
use super::execute::applied::AppliedChildren;
use super::execute::written_status::WrittenStatuses;
use super::health::ReconcilerHealth;
use super::observe::children::{Caches, Observed, observe_children};
use super::observe::kinds::{ChildKind, DiscoveryError, ResolvedKind, resolve, resolve_namespaced};
use super::observe::namespaces::NamespaceMatches;
use super::observe::related::Related;
use super::observe::selection::Selection;
use super::settings::Settings;
use crate::guest::Module;
use crate::identity::{Identity, MANAGER};
use crate::lease::Fence;
use crate::shard::Member;
use crate::strategy::KindStrategy;
use crate::telemetry::{Metrics, Recorder};
use crate::validate::{Child, Placement, Rules};

/// The state of one reconciler, which every stage reads: built once (`discover`), shared by the
/// controller's reconciles, `plan` and the module follower. The state of each component (caches,
/// memories, backoff) is defined in its own file below this one; what needs the whole context lives
/// in the stage files above it.
pub struct Context {
    /// Every read, watch and write of this reconciler (in `serve`, impersonating its ServiceAccount).
    pub client: Client,
    pub parent: ResolvedKind,
    /// Whether parents are cluster-scoped: their children's ownerReferences then name no namespace.
    pub cluster_scoped: bool,
    /// The cache of every parent this reconciler watches.
    pub parents: Store<DynamicObject>,
    pub children: Vec<ChildKind>,
    /// The kinds parents may read, their caches and each parent's selection.
    pub related: Related,
    /// The cluster's Namespaces, for `--child-namespace-selector` and `--namespace-selector` (empty
    /// without them).
    pub namespaces: Store<DynamicObject>,
    /// How each Namespace fitted the selection when last seen (`namespaces`).
    pub namespace_matches: NamespaceMatches,
    pub rules: Rules,
    pub recorder: Recorder,
    pub finalizer: Option<String>,
    pub backoff: Backoff,
    pub metrics: Metrics,
    pub applied: AppliedChildren,
    pub written_status: WrittenStatuses,
    pub health: ReconcilerHealth,
    /// The candidate module run beside the active one, if any.
    pub shadow: Shadow,
    pub concurrency: u16,
    pub resync_period: Option<Duration>,
    /// Whether a parent may adopt an object nothing controls (see `ownership`).
    pub adopt_orphans: bool,
    /// Which parents it takes and where their children may live.
    pub selection: Selection,
    /// What its children carry, and so what its caches hold.
    pub identity: Identity,
    /// The update strategies of its child kinds (those not listed: `InPlace`).
    pub updates: Vec<KindStrategy>,
    /// Whether this replica may write now: a reconcile starts only while it admits (`reconcile`).
    pub fence: Fence,
    /// This replica in the reconciler's ring, if sharded: it reconciles only the parents assigned to
    /// it (`shard`), and its caches hold only those and their children.
    pub shard: Option<Arc<Member>>,
    namespace: Option<String>,
    module: RwLock<Arc<Module>>,
    /// The cache writers, handed once to the watchers that fill `parents` and the children's caches
    /// (`children[i].own`, `children[i].legacy`).
    parent_writer: std::sync::Mutex<Option<Writer<DynamicObject>>>,
    namespace_writer: std::sync::Mutex<Option<Writer<DynamicObject>>>,
    writers: std::sync::Mutex<Vec<[Writer<DynamicObject>; 2]>>,
}

impl Context {
    /// The parent `namespace/name` (`name` if cluster-scoped), as the controller queues it.
    pub fn parent_ref(&self, key: &str) -> ObjectRef<DynamicObject> {
        match key.split_once('/') {
            Some((namespace, name)) => {
                ObjectRef::new_with(name, self.parent.resource.clone()).within(namespace)
            }
            None => ObjectRef::new_with(key, self.parent.resource.clone()),
        }
    }

    /// Whether the parent `key` is in the parent cache.
    pub fn parent_exists(&self, key: &str) -> bool {
        self.parents.get(&self.parent_ref(key)).is_some()
    }

    /// How many objects its caches hold: parents, children (both caches of each kind), related
    /// objects and namespaces. What should stay flat under churn.
    pub fn cached_objects(&self) -> usize {
        let children: usize = (self.children.iter())
            .flat_map(|child| child.caches())
            .map(|cache| cache.store.len())
            .sum();
        self.parents.len() + children + self.related.cached_objects() + self.namespaces.len()
    }

    /// The parents whose last reconcile failed and that still exist, with the reason.
    pub fn failing_parents(&self) -> Vec<(String, String)> {
        self.health.failing_live(|key| self.parent_exists(key))
    }

    /// Resolves the parent and child kinds (a typo in a flag fails here, with the kind named).
    /// Events go through `event_client`: the host's own identity, which alone may publish them.
    pub async fn discover(
        client: Client,
        event_client: Client,
        settings: &Settings,
        module: Arc<Module>,
        metrics: Metrics,
    ) -> Result<Context, DiscoveryError> {
        let (parent, scope) = resolve(&client, &settings.parent).await?;
        let cluster_scoped = scope == Scope::Cluster;
        let namespace = settings.namespace.as_deref();
        (settings.selection).check(&settings.parent, cluster_scoped, namespace)?;
        let unknown = (settings.updates.iter()).find(|u| !settings.children.contains(&u.kind));
        if let Some(update) = unknown {
            return Err(DiscoveryError::StrategyOfNoChild(update.kind.clone()));
        }
        let parent_writer = Writer::new(parent.resource.clone());
        let mut children = Vec::new();
        let mut writers = Vec::new();
        for gvk in &settings.children {
            let (child, child_writers) = ChildKind::new(resolve_namespaced(&client, gvk).await?);
            children.push(child);
            writers.push(child_writers);
        }
        let related = Related::discover(&client, &settings.related).await?;
        let namespace_writer = Writer::new(ApiResource::erase::<Namespace>(&()));
        let reporter = Reporter {
            controller: MANAGER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Ok(Context {
            recorder: Recorder::new(event_client, reporter),
            client,
            parent,
            cluster_scoped,
            parents: parent_writer.as_reader(),
            children,
            related,
            namespaces: namespace_writer.as_reader(),
            namespace_matches: NamespaceMatches::default(),
            rules: Rules::new(Some(settings.children.clone())),
            finalizer: settings.finalizer.clone(),
            backoff: Backoff::new(Duration::from_millis(5), Duration::from_secs(300)),
            metrics,
            applied: AppliedChildren::default(),
            written_status: WrittenStatuses::default(),
            health: ReconcilerHealth::default(),
            shadow: Shadow::default(),
            concurrency: settings.concurrency,
            resync_period: settings.resync_period,
            adopt_orphans: settings.adopt_orphans,
            selection: settings.selection.clone(),
            identity: settings.identity.clone(),
            updates: settings.updates.clone(),
            fence: Fence::open(),
            shard: None,
            namespace: settings.namespace.clone(),
            module: RwLock::new(module),
            parent_writer: std::sync::Mutex::new(Some(parent_writer)),
            namespace_writer: std::sync::Mutex::new(
                (settings.selection.watches_namespaces()).then_some(namespace_writer),
            ),
            writers: std::sync::Mutex::new(writers),
        })
    }

    /// The one namespace it watches (`None`: all, or a cluster-scoped parent kind).
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The active module; a hot swap replaces it between calls, never during one.
    pub fn module(&self) -> Arc<Module> {
        self.module.read().expect("module lock poisoned").clone()
    }

    /// Makes `module` the active logic for every call that starts from now on; returns the previous one.
    pub fn swap_module(&self, module: Arc<Module>) -> Arc<Module> {
        std::mem::replace(
            &mut *self.module.write().expect("module lock poisoned"),
            module,
        )
    }

    /// The writer of the parent cache (once; later calls get nothing).
    pub fn parent_writer(&self) -> Option<Writer<DynamicObject>> {
        self.parent_writer
            .lock()
            .expect("writers lock poisoned")
            .take()
    }

    /// The writer of the Namespace cache, if the selection needs one (once; later calls get nothing).
    pub fn namespace_writer(&self) -> Option<Writer<DynamicObject>> {
        let mut writer = self.namespace_writer.lock().expect("writers lock poisoned");
        writer.take()
    }

    /// Whether this reconciler takes `parent`: its selectors, with its Namespace's labels from the
    /// cache.
    pub fn selects(&self, parent: &DynamicObject) -> bool {
        self.passed_over(parent).is_none()
    }

    /// The selector `parent` fails (see [`Selection::passed_over`]).
    pub fn passed_over(&self, parent: &DynamicObject) -> Option<String> {
        let namespace = (self.selection.scope_of(parent)).and_then(|name| {
            let key = ObjectRef::new_with(name, ApiResource::erase::<Namespace>(&()));
            self.namespaces.get(&key)
        });
        self.selection.passed_over(parent, namespace.as_deref())
    }

    /// Where the children of `parent` may live.
    pub fn placement(&self, parent: &DynamicObject) -> Placement {
        self.selection.placement(parent, &self.namespaces.state())
    }

    /// Each child kind with the writers of its caches, own then legacy (once; later calls get nothing).
    pub fn child_writers(&self) -> Vec<(&ChildKind, [Writer<DynamicObject>; 2])> {
        let writers = std::mem::take(&mut *self.writers.lock().expect("writers lock poisoned"));
        self.children.iter().zip(writers).collect()
    }

    /// `kind` in every namespace this reconciler watches.
    pub fn api_all(&self, kind: &ResolvedKind) -> Api<DynamicObject> {
        match &self.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &kind.resource),
            None => Api::all_with(self.client.clone(), &kind.resource),
        }
    }

    pub fn api(&self, kind: &ResolvedKind, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &kind.resource)
    }

    /// The parent kind where `parent` lives: its namespace, or the cluster.
    pub fn parent_api(&self, parent: &DynamicObject) -> Api<DynamicObject> {
        match &parent.metadata.namespace {
            Some(namespace) => self.api(&self.parent, namespace),
            None => Api::all_with(self.client.clone(), &self.parent.resource),
        }
    }
    /// The children a reconcile of the parent with `uid` acts on, when this reconciler selects it:
    /// every cached child whose controller ownerReference is that parent, in the parent's
    /// `namespace` (any namespace for a cluster-scoped parent: `None`), its own and the legacy ones
    /// (made before children named their reconciler: the apply names them, the prune may delete them).
    pub fn observe(&self, namespace: Option<&str>, uid: &str) -> Vec<Observed<'_>> {
        observe_children(&self.children, namespace, uid, Caches::OwnAndLegacy)
    }

    /// The children a release of the parent with `uid` deletes: only those carrying this
    /// reconciler's identity. A legacy child of a parent it does not select may be another
    /// reconciler's (two decorators of one kind): it is left to the one that selects its parent.
    pub fn observe_own(&self, namespace: Option<&str>, uid: &str) -> Vec<Observed<'_>> {
        observe_children(&self.children, namespace, uid, Caches::Own)
    }

    /// The cached object of the kind and name `child` names, its own or a legacy one: what the
    /// ownership rule decides on.
    pub fn cached(&self, child: &Child) -> Option<Arc<DynamicObject>> {
        self.child_kind(child)
            .cached(child.namespace(), &child.name)
    }

    /// The allow-listed kind of a validated child.
    pub fn child_kind(&self, child: &Child) -> &ChildKind {
        self.children
            .iter()
            .find(|c| c.kind.gvk == child.kind)
            .expect("validated children are of allow-listed kinds")
    }

    /// How conditions and Events name a child (see [`ownership::child_id`]).
    pub fn child_id(&self, child: &Child) -> String {
        ownership::child_id(child, self.cluster_scoped)
    }

    /// [`Context::child_id`] of a child the parent already has.
    pub fn observed_id(&self, observed: &Observed<'_>) -> String {
        ownership::observed_id(observed, self.cluster_scoped)
    }

    /// The host's rules for `parent`, as the decision takes them.
    pub fn host_rules(&self, parent: &DynamicObject) -> HostRules<'_> {
        HostRules {
            placement: self.placement(parent),
            rules: &self.rules,
            identity: &self.identity,
            adopt_orphans: self.adopt_orphans,
            cluster_scoped: self.cluster_scoped,
            decorates: self.selection.decorates(),
            finalizer: self.finalizer.as_deref(),
            updates: &self.updates,
            now: k8s_openapi::jiff::Timestamp::now(),
            member: self.shard.as_deref(),
        }
    }

    /// How many parents this reconciler takes: the cached ones its selectors match.
    pub fn parents_taken(&self) -> usize {
        match self.selection.passes_over_some() {
            false => self.parents.len(),
            true => (self.parents.state().iter())
                .filter(|p| self.selects(p))
                .count(),
        }
    }
}
