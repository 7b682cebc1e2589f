//! The component glue: the contract's `reconcile` export (0.2.0) over [`crate::reconcile`], with the
//! finalize call logged into the host's log.

wit_bindgen::generate!({
    path: "../../wit",
    world: "reconciler",
});

use reconcile::guest::log::{Level, emit};

struct Component;

impl Guest for Component {
    fn reconcile(req: Request) -> Result<Response, String> {
        let out = crate::reconcile(&req.parent, req.finalizing)?;
        if let Some(message) = &out.log {
            emit(Level::Info, message);
        }
        Ok(Response {
            children: out.children.iter().map(ToString::to_string).collect(),
            status: out.status,
            requeue_after_seconds: None,
            finalized: out.finalized,
        })
    }
}

export!(Component);
