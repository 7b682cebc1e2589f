//! The component glue: the contract's `related` and `reconcile` exports (world
//! `relating-reconciler`) over [`crate::related`] and [`crate::reconcile`].

wit_bindgen::generate!({
    path: "../../wit",
    world: "relating-reconciler",
});

struct Component;

impl Guest for Component {
    fn related(parent: String) -> Result<Vec<Selector>, String> {
        Ok(crate::related(&parent)?
            .into_iter()
            .map(|wanted| Selector {
                api_version: "v1".into(),
                kind: wanted.kind.into(),
                namespace: wanted.namespace,
                names: vec![wanted.name],
                label_selector: None,
            })
            .collect())
    }

    fn reconcile(req: Request) -> Result<Response, String> {
        crate::reconcile(&req.parent, &req.related, req.finalizing).map(response)
    }
}

/// The logic's output in the contract's shape; this guest never asks to be requeued.
fn response(out: crate::Output) -> Response {
    let crate::Output {
        children,
        status,
        finalized,
    } = out;
    Response {
        children,
        status,
        requeue_after_seconds: None,
        finalized,
    }
}

export!(Component);
