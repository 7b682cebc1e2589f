//! The kinds a reconciler works with, as the API server serves them, and the caches of its child
//! kinds: the state the observe stage reads, defined apart from the `Context` that holds it so that
//! every stage can name a kind without depending on the whole context.

use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::ApiResource;
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::{Scope, pinned_kind};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};

use super::owner_index::OwnerIndex;
use super::selection::SelectionError;
use crate::kind::Gvk;

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
    #[error("an update strategy names {0}, which is not a child kind (--child)")]
    StrategyOfNoChild(Gvk),
}
/// A child or related kind as the API server serves it: only namespaced kinds are either.
pub async fn resolve_namespaced(
    client: &Client,
    gvk: &Gvk,
) -> Result<ResolvedKind, DiscoveryError> {
    match resolve(client, gvk).await? {
        (kind, Scope::Namespaced) => Ok(kind),
        _ => Err(DiscoveryError::ClusterScoped(gvk.clone())),
    }
}

/// The kind as the API server serves it, and whether its objects are namespaced.
///
/// An API server that cannot answer now (unreachable, restarting, overloaded) is asked again with
/// backoff, without end: a host started during a control plane fault then comes up once it is over,
/// instead of exiting for the kubelet to restart it later. Only an answer ends the wait, and a kind
/// the API server does not serve is an error at once.
pub async fn resolve(client: &Client, gvk: &Gvk) -> Result<(ResolvedKind, Scope), DiscoveryError> {
    let key = GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
    let retries = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(10))
        .with_jitter()
        .without_max_times();
    let (resource, caps) = (|| pinned_kind(client, &key))
        .retry(retries)
        .when(is_transient)
        .notify(|error, delay| {
            tracing::warn!(kind = %gvk, %error, ?delay, "discovery failed; retried");
        })
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

/// Whether `error` says the API server could not answer now rather than that the kind is not served:
/// no connection, a timeout, or a status that asks to come back (429, 5xx).
fn is_transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}
