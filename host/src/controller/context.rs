//! What every reconcile shares: the client, the resolved kinds and their caches, the active module,
//! the safety rules, the event recorder, the backoff state and the reconciler's health.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::ApiResource;
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::{Scope, pinned_kind};
use kube::runtime::events::Reporter;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client};

use super::applied::AppliedChildren;
use super::backoff::Backoff;
use super::health::ReconcilerHealth;
use super::namespaces::NamespaceMatches;
use super::owner_index::OwnerIndex;
use super::related::Related;
use super::selection::{Selection, SelectionError};
use super::shadow::Shadow;
use super::written_status::WrittenStatuses;
use super::{MANAGER, Settings};
use crate::guest::Module;
use crate::identity::Identity;
use crate::kind::Gvk;
use crate::telemetry::{Metrics, Recorder};
use crate::validate::{Placement, Rules};

/// A kind as given on the command line, resolved against the API server's discovery.
#[derive(Clone, Debug)]
pub struct ResolvedKind {
    pub gvk: Gvk,
    pub resource: ApiResource,
}

impl ResolvedKind {
    /// `v1/Namespace`: the kind of the cache `--child-namespace-selector` reads.
    pub fn namespace() -> ResolvedKind {
        ResolvedKind {
            gvk: "v1/Namespace".parse().expect("a valid kind"),
            resource: ApiResource::erase::<Namespace>(&()),
        }
    }

    /// The `apiVersion` and `kind` of its objects, which list responses leave out for built-in kinds.
    pub fn type_meta(&self) -> kube::core::TypeMeta {
        kube::core::TypeMeta {
            api_version: self.resource.api_version.clone(),
            kind: self.resource.kind.clone(),
        }
    }
}

/// An allow-listed child kind and the caches of its objects that the host manages.
pub struct ChildKind {
    pub kind: ResolvedKind,
    /// The objects that carry this reconciler's identity: the only ones it may release.
    pub own: ChildCache,
    /// The objects made before children named their reconciler (the managed-by label only). A
    /// reconcile of a parent this reconciler selects observes those its parent controls, so that
    /// its apply names them (they then move to `own`) and its prune may delete them; a parent it
    /// does not select never has them released (`observe`).
    pub legacy: ChildCache,
}

/// One watch's cache of a child kind, and which parent controls what it holds.
pub struct ChildCache {
    pub store: Store<DynamicObject>,
    /// Which of the cached objects each parent controls; the child watch keeps it.
    pub owned: Arc<OwnerIndex>,
}

impl ChildCache {
    fn new(writer: &Writer<DynamicObject>) -> ChildCache {
        ChildCache {
            store: writer.as_reader(),
            owned: Arc::default(),
        }
    }

    /// The cached object of `kind` named `name` in `namespace`.
    pub fn get(
        &self,
        kind: &ResolvedKind,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<DynamicObject>> {
        let key = ObjectRef::new_with(name, kind.resource.clone()).within(namespace);
        self.store.get(&key)
    }
}

impl ChildKind {
    /// The cached object of this kind named `name` in `namespace`, its own or a legacy one.
    pub fn cached(&self, namespace: &str, name: &str) -> Option<Arc<DynamicObject>> {
        (self.own.get(&self.kind, namespace, name))
            .or_else(|| self.legacy.get(&self.kind, namespace, name))
    }

    /// Each of its caches with the writer that fills it: its own, then the legacy one.
    pub fn new(kind: ResolvedKind) -> (ChildKind, [Writer<DynamicObject>; 2]) {
        let writers = [(); 2].map(|()| Writer::new(kind.resource.clone()));
        let child = ChildKind {
            kind,
            own: ChildCache::new(&writers[0]),
            legacy: ChildCache::new(&writers[1]),
        };
        (child, writers)
    }

    /// Both caches, own first.
    pub fn caches(&self) -> [&ChildCache; 2] {
        [&self.own, &self.legacy]
    }
}

/// Why a reconciler's kinds cannot be used; `serve` reports each with its own reason.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("kind {gvk} is not served by the API server: {reason}")]
    NotServed { gvk: Gvk, reason: String },
    #[error("child kind {0} is cluster-scoped; reconcile-host manages namespaced children only")]
    ClusterScoped(Gvk),
    #[error(transparent)]
    Selection(#[from] SelectionError),
}

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
    /// The cluster's Namespaces, for `--child-namespace-selector` (empty without it).
    pub namespaces: Store<DynamicObject>,
    /// Whether each Namespace matched `--child-namespace-selector` when last seen (`namespaces`).
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
            namespace: settings.namespace.clone(),
            module: RwLock::new(module),
            parent_writer: std::sync::Mutex::new(Some(parent_writer)),
            namespace_writer: std::sync::Mutex::new(
                (settings.selection.watches_namespaces()).then_some(namespace_writer),
            ),
            writers: std::sync::Mutex::new(writers),
        })
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
}

/// A child or related kind as the API server serves it: only namespaced kinds are either.
pub(super) async fn resolve_namespaced(
    client: &Client,
    gvk: &Gvk,
) -> Result<ResolvedKind, DiscoveryError> {
    match resolve(client, gvk).await? {
        (kind, Scope::Namespaced) => Ok(kind),
        _ => Err(DiscoveryError::ClusterScoped(gvk.clone())),
    }
}

/// The kind as the API server serves it, and whether its objects are namespaced.
async fn resolve(client: &Client, gvk: &Gvk) -> Result<(ResolvedKind, Scope), DiscoveryError> {
    let key = GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
    let (resource, caps) =
        pinned_kind(client, &key)
            .await
            .map_err(|e| DiscoveryError::NotServed {
                gvk: gvk.clone(),
                reason: e.to_string(),
            })?;
    let kind = ResolvedKind {
        gvk: gvk.clone(),
        resource,
    };
    Ok((kind, caps.scope))
}
