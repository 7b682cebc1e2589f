//! The component glue: the contract's `reconcile` export over [`crate::reconcile`].
//!
//! Nothing is logged on success (this is the hot path); an error is also logged at `warn`.

wit_bindgen::generate!({
    path: "../../wit",
    world: "reconciler",
});

use reconcile::guest::log::{Level, emit};

struct Component;

impl Guest for Component {
    fn reconcile(req: Request) -> Result<Response, String> {
        match crate::reconcile(&req.parent, &req.children, req.finalizing) {
            Ok(out) => Ok(Response {
                children: out.children,
                status: out.status,
                requeue_after_seconds: out.requeue_after_seconds,
                finalized: out.finalized,
            }),
            Err(message) => {
                emit(Level::Warn, &message);
                Err(message)
            }
        }
    }
}

export!(Component);
