//! The component glue: the contract's `reconcile` and `convert` exports over [`crate::reconcile`] and
//! [`crate::convert()`] (world `converting-reconciler`).
//!
//! Nothing is logged on success (this is the hot path); an error is also logged at `warn`. The request's
//! `related` objects are not read: MyApp depends on none.
//!
//! The component is built without WASI (`wasm32-unknown-unknown`, see `make guests`): it has no stderr,
//! so a panic's message goes to the host through the log at `error` level, which the host reports as
//! what the trapped guest said.

wit_bindgen::generate!({
    path: "../../wit",
    world: "converting-reconciler",
});

use reconcile::guest::log::{Level, emit};

struct Component;

impl Guest for Component {
    fn reconcile(req: Request) -> Result<Response, String> {
        report_panics();
        let out = crate::reconcile(&req.parent, &req.children, req.finalizing).map_err(warn)?;
        Ok(Response {
            children: out.children,
            status: out.status,
            requeue_after_seconds: out.requeue_after_seconds,
            finalized: out.finalized,
        })
    }

    fn convert(object: String, to_api_version: String) -> Result<String, String> {
        report_panics();
        crate::convert(&object, &to_api_version).map_err(warn)
    }
}

/// Sends a panic's message (`panicked at <file>:<line>:<column>:` and the message) to the log at
/// `error`, once per instance: with `panic = "abort"` the panic then traps.
fn report_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| std::panic::set_hook(Box::new(|info| emit(Level::Error, &info.to_string()))));
}

/// Logs an error at `warn` and passes it on.
fn warn(message: String) -> String {
    emit(Level::Warn, &message);
    message
}

export!(Component);
