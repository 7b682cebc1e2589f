//! The parent CRD's conversion webhook (`crate::conversion`), served with the active module: every
//! replica converts with the module it keeps current, so a hot swap changes the conversion too. Each
//! review is counted by result, and a failed one is told on the CRD in a Warning Event. `run` serves
//! its parent CRD on a port of its own; `serve` adds each ClusterReconciler's CRD as a route of one
//! shared port.

use std::sync::Arc;
use std::time::Instant;

use kube::Client;

use crate::controller::Context;
use crate::conversion::{
    self, Converter, CrdEvents, Observer, Outcome, RouteSettings, Routes, ServedRoute,
    WebhookSettings,
};

/// Guest calls the webhook may make at once, beyond the reconciles': instance slots to reserve, and
/// the reviews the webhook runs at once (one instance each; more wait, then are answered busy).
pub(super) const CONVERSION_INSTANCES: u32 = 8;

/// Starts `run`'s webhook.
pub(super) async fn serve_conversion(
    settings: &WebhookSettings,
    client: Client,
    ctx: &Arc<Context>,
) -> anyhow::Result<()> {
    let (converter, observer) = converter_of(ctx, &client, &settings.crd).await;
    let slots = CONVERSION_INSTANCES as usize;
    let addr = conversion::start(settings, client, converter, observer, slots).await?;
    tracing::info!(%addr, "conversion webhook ready");
    Ok(())
}

/// Adds a ClusterReconciler's route to `serve`'s shared webhook port; served while the result lives.
/// `client` reads the Secret and keeps the CRD's caBundle, on every replica.
pub async fn serve_conversion_route(
    routes: &Arc<Routes>,
    settings: &RouteSettings,
    client: Client,
    ctx: &Arc<Context>,
) -> anyhow::Result<ServedRoute> {
    let (converter, observer) = converter_of(ctx, &client, &settings.crd).await;
    let slots = CONVERSION_INSTANCES as usize;
    conversion::start_route(routes, settings, client, converter, observer, slots).await
}

/// The converter (the active module's `convert`, counted as a guest call) and the observer (metrics
/// and Warning Events on CRD `crd`, read as `client`) of a reconciler's webhook.
async fn converter_of(ctx: &Arc<Context>, client: &Client, crd: &str) -> (Converter, Observer) {
    let module = ctx.module();
    if !module.converts() {
        tracing::warn!(
            world = module.world(),
            "the module has no `convert`: every conversion will fail until a module with one is swapped in"
        );
    }
    let module_of = ctx.clone();
    let converter: Converter = Arc::new(move |object, to| {
        let started = Instant::now();
        let result = module_of.module().convert(object, to);
        let failure = result.as_ref().err().map(|e| e.reason());
        module_of.metrics.guest_call(started.elapsed(), failure);
        result.map_err(|e| e.to_string())
    });
    let metrics = ctx.metrics.clone();
    let events = CrdEvents::new(ctx.recorder.clone(), client.clone(), crd).await;
    let observer: Observer = Arc::new(move |outcome: &Outcome| {
        metrics.conversion(outcome.result);
        events.tell(outcome);
    });
    (converter, observer)
}
