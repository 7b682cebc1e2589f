//! The component glue: the contract's `reconcile` export (0.2.0) over [`crate::reconcile`].

wit_bindgen::generate!({
    path: "../../wit",
    world: "reconciler",
});

struct Component;

impl Guest for Component {
    fn reconcile(req: Request) -> Result<Response, String> {
        let (children, status) = crate::reconcile(&req.parent)?;
        Ok(Response {
            children: children.iter().map(ToString::to_string).collect(),
            status: Some(status.to_string()),
            requeue_after_seconds: None,
            finalized: false,
        })
    }
}

export!(Component);
