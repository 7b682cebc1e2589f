//! The watches and the kube-runtime `Controller` of one reconciler: the parent cache, one cache per
//! child kind (only children carrying the managed-by label), and the loop that runs `reconcile` on
//! every parent they trigger, until `shutdown` resolves.

use std::future::Future;
use std::sync::Arc;

use futures::channel::mpsc::UnboundedReceiver;
use futures::{Stream, StreamExt, TryStreamExt};
use kube::Api;
use kube::core::DynamicObject;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::{Controller, WatchStreamExt, watcher};

use super::context::Context;
use super::{MANAGED_BY_LABEL, MANAGER, reconcile};

/// Runs the controller of `ctx` until `shutdown`; `synced` is called once every cache has listed.
/// `reconcile_all` re-runs every parent (a hot swap sends on it).
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
    // Readiness: every cache has listed once. The parent store's own `wait_until_ready` is awaited by
    // the Controller, and kube-runtime wakes only one waiter of a store, so the parent's initial sync is
    // read off its event stream instead; the child stores have no other waiter.
    let (parent_synced, mut parent_synced_rx) = tokio::sync::watch::channel(false);
    let child_stores: Vec<_> = ctx.children.iter().map(|c| c.store.clone()).collect();
    tokio::spawn(async move {
        for store in child_stores {
            if store.wait_until_ready().await.is_err() {
                return;
            }
        }
        if parent_synced_rx.wait_for(|synced| *synced).await.is_ok() {
            synced();
        }
    });
    let parents = cache(
        &ctx,
        parent_writer,
        ctx.parent_api_all(),
        watcher::Config::default(),
    )
    .inspect_ok(move |event| {
        if matches!(event, watcher::Event::InitDone) {
            parent_synced.send_replace(true);
        }
    })
    .applied_objects();
    let mut controller =
        Controller::for_stream_with(parents, parent_reader, ctx.parent.resource.clone())
            .with_config(kube::runtime::controller::Config::default().concurrency(ctx.concurrency))
            .reconcile_all_on(reconcile_all)
            .graceful_shutdown_on(shutdown);
    for (child, writer) in ctx.child_writers() {
        let selector = watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGER}"));
        let stream = cache(&ctx, writer, ctx.child_api_all(child), selector).touched_objects();
        controller = controller.owns_stream_with(stream, child.resource.clone());
    }
    controller
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "reconcile loop");
            }
        })
        .await;
}

/// A watch that fills `writer`'s cache, retries with backoff, and records its errors in the health.
fn cache(
    ctx: &Arc<Context>,
    writer: Writer<DynamicObject>,
    api: Api<DynamicObject>,
    config: watcher::Config,
) -> impl Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static {
    let health = ctx.clone();
    let watch = watcher(api, config)
        .inspect(move |event| {
            health
                .health
                .watch_result(event.as_ref().err().map(|e| e.to_string()));
        })
        .default_backoff()
        .modify(|obj: &mut DynamicObject| obj.metadata.managed_fields = None);
    reflector::reflector(writer, watch)
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
