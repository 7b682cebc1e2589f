//! The guest stage: the request for one parent (it, the children it controls and the related objects
//! it selects) and the call of the module, off the async workers. The selection of related objects is
//! asked of the module here, once per parent, generation, module and placement (`observe::related`
//! caches it), and checked by the decision (`decide::related`).

use std::sync::Arc;

use kube::core::DynamicObject;

use super::context::Context;
use super::decide::related::checked_selection;
use super::error::{ReconcileError, uid_of};
use super::observe::children::Observed;
use super::observe::related::Selection;
use crate::guest::{Answer, Module, Request};
use crate::related::RelatedSelector;
use crate::validate::Placement;

/// The guest's request for `parent`: it and the children it controls, as JSON.
pub fn request(parent: &DynamicObject, observed: &[Observed<'_>], finalizing: bool) -> Request {
    Request {
        parent: serde_json::to_string(parent).expect("objects serialize"),
        children: observed
            .iter()
            .map(|o| serde_json::to_string(o.object.as_ref()).expect("objects serialize"))
            .collect(),
        related: Vec::new(),
        finalizing,
    }
}

impl Context {
    /// The request for `parent` with its related objects. While finalizing, a failed selection is
    /// logged and the request goes without: a broken `related` must not keep a parent from being deleted.
    pub async fn request_with_related(
        &self,
        parent: &DynamicObject,
        key: &str,
        observed: &[Observed<'_>],
        finalizing: bool,
        module: &Arc<Module>,
    ) -> Result<Request, ReconcileError> {
        let mut request = request(parent, observed, finalizing);
        let uid = uid_of(parent)?;
        request.related = match self.related_objects(parent, key, uid, module).await {
            Ok(related) => related,
            Err(e) if finalizing => {
                tracing::warn!(parent = %key, error = %e, "finalizing without related objects");
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        Ok(request)
    }

    /// Calls `module` for the parent `key` and returns its answer.
    pub async fn call_guest(
        &self,
        key: &str,
        module: Arc<Module>,
        request: Request,
    ) -> Result<Answer, ReconcileError> {
        let tag = key.to_string();
        // Guest calls are CPU-bound and may run up to their deadline: keep them off the async workers.
        let (answer, took) = tokio::task::spawn_blocking(move || {
            let start = std::time::Instant::now();
            (module.call(&tag, &request), start.elapsed())
        })
        .await?;
        self.metrics
            .guest_call(took, answer.as_ref().err().map(|e| e.reason()));
        Ok(answer?)
    }

    /// The related objects of `parent` (`key` is `namespace/name`) for `module`'s request: none, at no
    /// cost, for a module without `related`; else its selection (cached, or asked for and checked),
    /// which reads only where the parent's children may go.
    async fn related_objects(
        &self,
        parent: &DynamicObject,
        key: &str,
        uid: &str,
        module: &Arc<Module>,
    ) -> Result<Vec<String>, ReconcileError> {
        if !module.relates() {
            return Ok(Vec::new());
        }
        let generation = parent.metadata.generation;
        let placement = self.placement(parent);
        let cached = self
            .related
            .cached(key, uid, generation, module.digest(), &placement);
        let selectors = match cached {
            Some(selectors) => selectors,
            None => {
                let selectors = Arc::new(self.select(parent, key, module, &placement).await?);
                let selection = Selection {
                    uid: uid.to_string(),
                    generation,
                    digest: module.digest().to_string(),
                    placement,
                    selectors: selectors.clone(),
                };
                self.related.remember(key, selection);
                selectors
            }
        };
        Ok(self.related.objects(&selectors))
    }

    /// Calls the module's `related` for `parent` (off the async workers, like a reconcile) and has its
    /// selectors checked against the allow-list and `placement`; either failure is counted with its
    /// reason.
    async fn select(
        &self,
        parent: &DynamicObject,
        key: &str,
        module: &Arc<Module>,
        placement: &Placement,
    ) -> Result<Vec<RelatedSelector>, ReconcileError> {
        let (module, tag) = (module.clone(), key.to_string());
        let text = serde_json::to_string(parent).expect("objects serialize");
        let (answer, took) = tokio::task::spawn_blocking(move || {
            let start = std::time::Instant::now();
            (module.related(&tag, &text), start.elapsed())
        })
        .await?;
        let checked = checked_selection(answer, placement, self.related.allowed());
        self.metrics
            .guest_call(took, checked.as_ref().err().map(ReconcileError::reason));
        checked
    }
}
