//! The component glue: the contract's `reconcile` and `convert` exports over [`crate::reconcile`] and
//! [`crate::convert()`] (world `converting-reconciler`).
//!
//! Nothing is logged on success (this is the hot path); an error is also logged at `warn`. The request's
//! `related` objects are not read: MyApp depends on none.

wit_bindgen::generate!({
    path: "../../wit",
    world: "converting-reconciler",
});

use reconcile::guest::log::{Level, emit};

struct Component;

impl Guest for Component {
    fn reconcile(req: Request) -> Result<Response, String> {
        let out = crate::reconcile(&req.parent, &req.children, req.finalizing).map_err(warn)?;
        Ok(Response {
            children: out.children,
            status: out.status,
            requeue_after_seconds: out.requeue_after_seconds,
            finalized: out.finalized,
        })
    }

    fn convert(object: String, to_api_version: String) -> Result<String, String> {
        crate::convert(&object, &to_api_version).map_err(warn)
    }
}

/// Logs an error at `warn` and passes it on.
fn warn(message: String) -> String {
    emit(Level::Warn, &message);
    message
}

export!(Component);
