//! Hot swap (and the shadow module's follow): each new version of the module is compiled beside the active one and swapped in only if it
//! loads and implements the world; then every parent is reconciled again. A version the other slot
//! already runs (a shadow module promoted) is taken from it, not compiled again. A bad version never
//! replaces a good one: it is logged and reported as a Warning Event, and the old logic keeps serving.

use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};

use crate::controller::Context;
use crate::guest::{Module, Runtime, digest_of};
use crate::source::{ModuleSource, Update, load};
use crate::telemetry::Recorder;

/// Which module a source feeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slot {
    /// The module whose answers are applied.
    Active,
    /// The candidate called beside it and never applied (`shadow`).
    Shadow,
}

/// Loads every version from `updates` into `slot`: a version that does not load never replaces a
/// good one. Every parent is reconciled again after a change, so a new candidate is compared at once.
pub async fn follow(
    slot: Slot,
    ctx: Arc<Context>,
    runtime: Arc<Runtime>,
    source: ModuleSource,
    mut updates: BoxStream<'static, Update>,
    reconcile_all: UnboundedSender<()>,
) {
    while let Some(update) = updates.next().await {
        if slot == Slot::Active {
            ctx.metrics.module_source(update.is_ok());
        }
        let digest = update.as_ref().ok().map(|bytes| digest_of(bytes));
        if slot == Slot::Active && digest.as_deref() == Some(ctx.module().digest()) {
            // The active module again (a source that recovered, a ConfigMap restored): nothing to
            // compile, and nothing is refused any more.
            ctx.health.module_result(None);
            continue;
        }
        let compiled = digest
            .as_deref()
            .and_then(|d| compiled_in_other_slot(&ctx, slot, d));
        let reused = compiled.is_some();
        let loaded = match compiled {
            Some(module) => Ok(module),
            None => load(&runtime, update).await,
        };
        match loaded {
            Ok(module) if slot == Slot::Shadow => {
                tracing::info!(%source, digest = module.digest(), reused, "shadow module loaded");
                ctx.shadow.set_module(module);
                let _ = reconcile_all.unbounded_send(());
            }
            Ok(module) => {
                ctx.health.module_result(None);
                let previous = ctx.swap_module(module.clone());
                ctx.metrics.module_loaded(module.digest(), true);
                tracing::info!(%source, digest = module.digest(), previous = previous.digest(), bytes = module.size(), reused, "module swapped");
                let _ = reconcile_all.unbounded_send(());
            }
            Err(problem) if slot == Slot::Shadow => {
                let error = problem.message().to_string();
                tracing::error!(%source, %error, "new shadow module refused");
                report_module_failure(&ctx.recorder, &source, error).await;
            }
            Err(problem) => {
                ctx.health.module_result(Some(problem.clone()));
                let error = problem.message().to_string();
                if let Some(digest) = &digest {
                    ctx.metrics.module_loaded(digest, false);
                }
                tracing::error!(%source, %error, active = ctx.module().digest(), "new module refused; the active module keeps serving");
                report_module_failure(&ctx.recorder, &source, error).await;
            }
        }
    }
}

/// The other slot's module if it is this very version, so that promoting the shadow module (or
/// shadowing the active one) compiles nothing: compiling is the one part of a swap that the API
/// writes do not bound (0.24 s of the MyApp benchmark's swap at 1000 parents).
fn compiled_in_other_slot(ctx: &Context, slot: Slot, digest: &str) -> Option<Arc<Module>> {
    let other = match slot {
        Slot::Active => ctx.shadow.module(),
        Slot::Shadow => Some(ctx.module()),
    };
    other.filter(|module| module.digest() == digest)
}

/// Reports a refused module as a Warning Event on the ConfigMap it came from, or on the host's Pod
/// (from the downward API's POD_NAME and POD_NAMESPACE) for a file or a registry.
async fn report_module_failure(recorder: &Recorder, source: &ModuleSource, error: String) {
    let regarding = match source {
        ModuleSource::ConfigMap(cm) => Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: Some(cm.namespace.clone()),
            name: Some(cm.name.clone()),
            ..ObjectReference::default()
        }),
        ModuleSource::File(_) | ModuleSource::Oci(_) => {
            match (std::env::var("POD_NAMESPACE"), std::env::var("POD_NAME")) {
                (Ok(namespace), Ok(name)) => Some(ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    namespace: Some(namespace),
                    name: Some(name),
                    ..ObjectReference::default()
                }),
                _ => None,
            }
        }
    };
    let Some(regarding) = regarding else { return };
    let event = Event {
        type_: EventType::Warning,
        reason: "ModuleRefused".into(),
        note: Some(error),
        action: "LoadModule".into(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, &regarding).await {
        tracing::warn!(error = %e, "cannot publish the module failure event");
    }
}
