//! The watches and the kube-runtime `Controller` of one reconciler: the parent cache, two caches per
//! child kind (the children carrying its identity, and those from before children named their
//! reconciler), and the loop that runs `reconcile` on every parent they trigger, until `shutdown`
//! resolves.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc::UnboundedReceiver;
use futures::{FutureExt, Stream, StreamExt};
use kube::api::ApiResource;
use kube::core::DynamicObject;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};

use crate::controller::{
    Context, Listed, ResolvedKind, error_policy, owners_of, reconcile, watch_cache,
};
use crate::identity::Identity;

/// Runs the controller of `ctx` until `shutdown`; `synced` is called once every cache has listed.
/// `reconcile_all` re-runs every parent (a hot swap sends on it, and so does the resync period).
///
/// No reconcile reads a cache before its first list: the parent watch starts only once every child
/// cache has listed, and kube-runtime's Controller holds reconciles until the parent cache has. Later
/// lists (a reconnect, 410 Gone) keep serving the previous complete list until they land (`sync`).
pub async fn drive(
    ctx: Arc<Context>,
    reconcile_all: UnboundedReceiver<()>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    synced: impl FnOnce() + Send + 'static,
) {
    let parent_writer = ctx
        .parent_writer()
        .expect("a context is driven once: its parent cache writer is taken");
    let parent_reader = parent_writer.as_reader();
    // Two watches per child kind, filtered by the API server: the children that carry this
    // reconciler's identity, and the legacy ones that carry no reconciler's (see `observe`). A
    // member of a ring watches only the children labelled for it, and those no member labelled yet
    // (`shard::Member`).
    let selectors = match &ctx.shard {
        None => [ctx.identity.own_children(), Identity::unnamed_children()],
        Some(member) => [
            member.own_children(&ctx.identity),
            member.unsharded_children(),
        ],
    };
    let mut children_listed = Vec::new();
    let mut child_streams = Vec::new();
    for (child, writers) in ctx.child_writers() {
        for ((writer, cache), selector) in writers.into_iter().zip(child.caches()).zip(&selectors) {
            let listed = Listed::new();
            children_listed.push(listed.clone());
            let index = Some(cache.owned.clone());
            let config = watcher::Config::default().labels(selector);
            let stream = watch_cache(&ctx, &child.kind, writer, config, listed, index);
            child_streams.push((stream, child.kind.resource.clone()));
        }
    }
    // The related caches gate the parent watch like the child caches: a reconcile never reads one
    // before its first list.
    let mut related_streams = Vec::new();
    for (kind, writer) in ctx.related.writers() {
        let listed = Listed::new();
        children_listed.push(listed.clone());
        let stream = watch_cache(&ctx, kind, writer, Default::default(), listed, None);
        related_streams.push((stream, kind.resource.clone()));
    }
    // The Namespace cache of `--child-namespace-selector`: listed before any parent is reconciled,
    // like the child caches. A change of a namespace's match reconciles the parents it concerns (`namespaces`).
    let namespace_stream = ctx.namespace_writer().map(|writer| {
        let listed = Listed::new();
        children_listed.push(listed.clone());
        let kind = ResolvedKind::namespace();
        watch_cache(&ctx, &kind, writer, Default::default(), listed, None)
    });
    let all_children_listed = {
        let children_listed = children_listed.clone();
        async move { futures::future::join_all(children_listed.iter().map(Listed::wait)).await }
    };
    let parent_listed = Listed::new();
    let parents = {
        let (ctx, parent_listed) = (ctx.clone(), parent_listed.clone());
        // A member of a ring watches only the parents assigned to it.
        let config = match &ctx.shard {
            None => watcher::Config::default(),
            Some(member) => watcher::Config::default().labels(&member.parents()),
        };
        async move {
            all_children_listed.await;
            watch_cache(
                &ctx,
                &ctx.parent,
                parent_writer,
                config,
                parent_listed,
                None,
            )
        }
        .flatten_stream()
    };
    tokio::spawn(async move {
        children_listed.push(parent_listed);
        futures::future::join_all(children_listed.iter().map(Listed::wait)).await;
        synced();
    });
    ctx.metrics.max_concurrent_reconciles(ctx.concurrency);
    let weak = Arc::downgrade(&ctx);
    ctx.metrics.count_failing_parents(Box::new(move || {
        weak.upgrade().map_or(0, |ctx| ctx.failing_parents().len())
    }));
    if ctx.shard.is_some() {
        let parents = ctx.parents.clone();
        ctx.metrics
            .count_shard_parents(Box::new(move || parents.len()));
    }
    let weak = Arc::downgrade(&ctx);
    ctx.metrics.count_cached_objects(Box::new(move || {
        weak.upgrade().map_or(0, |ctx| ctx.cached_objects())
    }));
    let mut controller =
        Controller::for_stream_with(parents, parent_reader, ctx.parent.resource.clone())
            .with_config(kube::runtime::controller::Config::default().concurrency(ctx.concurrency))
            .reconcile_all_on(with_resync(reconcile_all, ctx.resync_period))
            .graceful_shutdown_on(shutdown);
    for (stream, resource) in child_streams {
        let owners = owners(ctx.parent.resource.clone(), ctx.cluster_scoped);
        controller = controller.watches_stream_with(stream, owners, resource);
    }
    if let Some(stream) = namespace_stream {
        let resource = ResolvedKind::namespace().resource;
        let mapper = weakly(&ctx, Context::parents_placing_in);
        controller = controller.watches_stream_with(stream, mapper, resource);
    }
    for (stream, resource) in related_streams {
        let mapper = weakly(&ctx, Context::parents_selecting);
        controller = controller.watches_stream_with(stream, mapper, resource);
    }
    controller
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "reconcile loop");
            }
        })
        .await;
}

/// A watch's trigger that asks the context which parents an object concerns (held weakly: a trigger
/// keeps no reconciler's state alive).
fn weakly(
    ctx: &Arc<Context>,
    parents: fn(&Context, &DynamicObject) -> Vec<ObjectRef<DynamicObject>>,
) -> impl Fn(DynamicObject) -> Vec<ObjectRef<DynamicObject>> + Send + Sync + 'static {
    let weak = Arc::downgrade(ctx);
    move |object| {
        weak.upgrade()
            .map(|ctx| parents(&ctx, &object))
            .unwrap_or_default()
    }
}

/// The parents a child's ownerReferences name, as the child watch's trigger.
fn owners(
    parent: ApiResource,
    cluster_scoped: bool,
) -> impl Fn(DynamicObject) -> Vec<ObjectRef<DynamicObject>> + Send + Sync + 'static {
    move |child| owners_of(&child, &parent, cluster_scoped)
}

/// `reconcile_all`, and a tick every `period` if there is one: a safety net that re-runs every parent
/// in case an event was missed, not what keeps parents converged.
fn with_resync(
    reconcile_all: UnboundedReceiver<()>,
    period: Option<Duration>,
) -> impl Stream<Item = ()> + Send + 'static {
    let ticks = match period {
        Some(period) => {
            let start = tokio::time::Instant::now() + period;
            let interval = tokio::time::interval_at(start, period);
            futures::stream::unfold(interval, |mut interval| async move {
                interval.tick().await;
                Some(((), interval))
            })
            .left_stream()
        }
        None => futures::stream::pending().right_stream(),
    };
    futures::stream::select(reconcile_all, ticks)
}

/// Resolves on SIGTERM or ctrl-c.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
