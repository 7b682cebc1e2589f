//! The component glue: the contract's `reconcile` export over [`crate::reconcile`].

wit_bindgen::generate!({
    path: "../../wit/v0.1.0",
    world: "reconciler",
});

struct Component;

impl Guest for Component {
    fn reconcile(req: Request) -> Result<Response, String> {
        let out = crate::reconcile(&req.parent, &req.children, req.finalizing)?;
        Ok(Response {
            children: out.children,
            status: out.status,
            requeue_after_seconds: None,
            finalized: out.finalized,
        })
    }
}

export!(Component);
