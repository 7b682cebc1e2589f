//! What every reconcile shares: the client, the resolved kinds and their caches, the active module,
//! the safety rules, the event recorder and the backoff state.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use kube::api::ApiResource;
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::{Scope, pinned_kind};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use kube::{Api, Client};

use super::applied::AppliedChildren;
use super::backoff::Backoff;
use super::{MANAGER, RunArgs};
use crate::guest::Module;
use crate::kind::Gvk;
use crate::telemetry::Metrics;
use crate::validate::Rules;

/// A kind as given on the command line, resolved against the API server's discovery.
#[derive(Clone, Debug)]
pub struct ResolvedKind {
    pub gvk: Gvk,
    pub resource: ApiResource,
}

/// An allow-listed child kind and the cache of its objects that the host manages.
pub struct ChildKind {
    pub kind: ResolvedKind,
    pub store: Store<DynamicObject>,
}

pub struct Context {
    pub client: Client,
    pub parent: ResolvedKind,
    pub children: Vec<ChildKind>,
    pub rules: Rules,
    pub recorder: Recorder,
    pub finalizer: Option<String>,
    pub backoff: Backoff,
    pub metrics: Arc<Metrics>,
    pub applied: AppliedChildren,
    namespace: Option<String>,
    module: RwLock<Arc<Module>>,
    /// The cache writers, handed once to the watchers that fill `children[i].store`.
    writers: std::sync::Mutex<Vec<Writer<DynamicObject>>>,
}

impl Context {
    /// Resolves the parent and child kinds (a typo in a flag fails here, with the kind named).
    pub async fn discover(
        client: Client,
        args: &RunArgs,
        module: Arc<Module>,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Context> {
        let parent = resolve(&client, &args.parent).await?;
        let mut children = Vec::new();
        let mut writers = Vec::new();
        for gvk in &args.children {
            let kind = resolve(&client, gvk).await?;
            let writer = Writer::new(kind.resource.clone());
            children.push(ChildKind {
                kind,
                store: writer.as_reader(),
            });
            writers.push(writer);
        }
        let reporter = Reporter {
            controller: MANAGER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Ok(Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            parent,
            children,
            rules: Rules::new(Some(args.children.clone())),
            finalizer: args.finalizer.clone(),
            backoff: Backoff::new(Duration::from_millis(5), Duration::from_secs(300)),
            metrics,
            applied: AppliedChildren::default(),
            namespace: args.namespace.clone(),
            module: RwLock::new(module),
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

    /// Each child kind with the writer of its cache (once; later calls get nothing).
    pub fn child_writers(&self) -> Vec<(&ResolvedKind, Writer<DynamicObject>)> {
        let writers = std::mem::take(&mut *self.writers.lock().expect("writers lock poisoned"));
        self.children.iter().map(|c| &c.kind).zip(writers).collect()
    }

    pub fn parent_api_all(&self) -> Api<DynamicObject> {
        self.api_all(&self.parent)
    }

    pub fn child_api_all(&self, kind: &ResolvedKind) -> Api<DynamicObject> {
        self.api_all(kind)
    }

    fn api_all(&self, kind: &ResolvedKind) -> Api<DynamicObject> {
        match &self.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &kind.resource),
            None => Api::all_with(self.client.clone(), &kind.resource),
        }
    }

    pub fn api(&self, kind: &ResolvedKind, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &kind.resource)
    }
}

async fn resolve(client: &Client, gvk: &Gvk) -> anyhow::Result<ResolvedKind> {
    let key = GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
    let (resource, caps) = pinned_kind(client, &key)
        .await
        .map_err(|e| anyhow::anyhow!("resolving kind {gvk} with the API server: {e}"))?;
    if caps.scope != Scope::Namespaced {
        anyhow::bail!(
            "kind {gvk} is cluster-scoped; reconcile-host manages namespaced parents and children"
        );
    }
    Ok(ResolvedKind {
        gvk: gvk.clone(),
        resource,
    })
}
