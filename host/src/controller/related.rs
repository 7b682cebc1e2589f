//! Related objects in the controller: the caches of the kinds the operator allows reconcilers to read
//! (one watch each, started with the controller; none when no kind is allowed), each parent's
//! selection (the module's `related` answer, checked, cached per parent UID, generation, module digest
//! and placement, so a hot swap, a spec change or a namespace that starts or stops taking children asks
//! again), the objects it selects for the request, and the parents a changed object concerns, so that
//! the change reconciles exactly those.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::Client;
use kube::core::DynamicObject;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};

use super::context::{Context, DiscoveryError, ResolvedKind, resolve_namespaced};
use super::error::{ReconcileError, uid_of};
use super::observe::{Observed, request};
use crate::guest::{Module, Request};
use crate::kind::Gvk;
use crate::related::{RelatedSelector, check, select};
use crate::validate::Placement;

/// The readable kinds, their caches, and what each parent selected.
pub struct Related {
    allowed: Vec<Gvk>,
    kinds: Vec<(ResolvedKind, Store<DynamicObject>)>,
    writers: Mutex<Vec<Writer<DynamicObject>>>,
    /// By parent `namespace/name`.
    selections: Mutex<HashMap<String, Selection>>,
}

/// One parent's checked selectors, valid for the parent, module and placement they were computed for.
struct Selection {
    uid: String,
    generation: Option<i64>,
    digest: String,
    /// Where the parent's children could go when checked: the namespaces its selectors may read.
    placement: Placement,
    selectors: Arc<Vec<RelatedSelector>>,
}

impl Related {
    /// Resolves the allowed kinds against discovery (a typo fails here, with the kind named).
    pub async fn discover(client: &Client, allowed: &[Gvk]) -> Result<Related, DiscoveryError> {
        let mut kinds = Vec::new();
        let mut writers = Vec::new();
        for gvk in allowed {
            let kind = resolve_namespaced(client, gvk).await?;
            let writer = Writer::new(kind.resource.clone());
            kinds.push((kind, writer.as_reader()));
            writers.push(writer);
        }
        Ok(Related {
            allowed: allowed.to_vec(),
            kinds,
            writers: Mutex::new(writers),
            selections: Mutex::default(),
        })
    }

    /// Each readable kind with the writer of its cache (once; later calls get nothing).
    pub fn writers(&self) -> Vec<(&ResolvedKind, Writer<DynamicObject>)> {
        let writers = std::mem::take(&mut *self.writers.lock().expect("writers lock poisoned"));
        self.kinds
            .iter()
            .map(|(kind, _)| kind)
            .zip(writers)
            .collect()
    }

    fn cached(
        &self,
        key: &str,
        uid: &str,
        generation: Option<i64>,
        digest: &str,
        placement: &Placement,
    ) -> Option<Arc<Vec<RelatedSelector>>> {
        let selections = self.selections.lock().expect("selections lock poisoned");
        selections
            .get(key)
            .filter(|s| s.uid == uid && s.generation == generation && s.digest == digest)
            .filter(|s| &s.placement == placement)
            .map(|s| s.selectors.clone())
    }

    /// The cached objects `selectors` select, as JSON for the request.
    fn objects(&self, selectors: &[RelatedSelector]) -> Vec<String> {
        let candidates = |selector: &RelatedSelector| {
            let Some((kind, store)) = self
                .kinds
                .iter()
                .find(|(kind, _)| kind.gvk == selector.kind)
            else {
                return Vec::new();
            };
            if selector.names.is_empty() {
                return store.state();
            }
            // By name: a lookup each, not a scan of every object of the kind.
            selector
                .names
                .iter()
                .filter_map(|name| {
                    let reference = ObjectRef::new_with(name, kind.resource.clone())
                        .within(&selector.namespace);
                    store.get(&reference)
                })
                .collect()
        };
        select(selectors, candidates)
            .iter()
            .map(|object| serde_json::to_string(object.as_ref()).expect("objects serialize"))
            .collect()
    }
}

impl Context {
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
                let mut selections = self
                    .related
                    .selections
                    .lock()
                    .expect("selections lock poisoned");
                selections.insert(key.to_string(), selection);
                selectors
            }
        };
        Ok(self.related.objects(&selectors))
    }

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

    /// Calls the module's `related` for `parent` (off the async workers, like a reconcile) and checks
    /// its selectors against the allow-list and `placement`; either failure is counted with its reason.
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
        let allowed = Some(self.related.allowed.as_slice());
        let checked = answer
            .map_err(ReconcileError::Related)
            .and_then(|selectors| Ok(check(&selectors, placement, allowed)?));
        self.metrics
            .guest_call(took, checked.as_ref().err().map(ReconcileError::reason));
        checked
    }

    /// The parents whose cached selection selects `object`: what its change must reconcile. Entries of
    /// parents that no longer exist are dropped on the way.
    pub fn parents_selecting(&self, object: &DynamicObject) -> Vec<ObjectRef<DynamicObject>> {
        let mut selections = self
            .related
            .selections
            .lock()
            .expect("selections lock poisoned");
        selections.retain(|key, _| self.parent_exists(key));
        let parents: Vec<_> = selections
            .iter()
            .filter(|(_, selection)| selection.selectors.iter().any(|s| s.matches(object)))
            .map(|(key, _)| self.parent_ref(key))
            .collect();
        self.metrics.related_triggers(parents.len());
        parents
    }
}

impl Context {
    /// The parents whose cached selection reads in `namespace`: when it starts or stops taking
    /// children, whether they may read there changes too.
    pub fn parents_reading_in(&self, namespace: &str) -> Vec<ObjectRef<DynamicObject>> {
        let selections = self
            .related
            .selections
            .lock()
            .expect("selections lock poisoned");
        selections
            .iter()
            .filter(|(_, selection)| selection.selectors.iter().any(|s| s.namespace == namespace))
            .map(|(key, _)| self.parent_ref(key))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_serves_only_its_parent_generation_module_and_placement() {
        let related = Related {
            allowed: Vec::new(),
            kinds: Vec::new(),
            writers: Mutex::default(),
            selections: Mutex::default(),
        };
        let placement = |namespaces: &[&str]| Placement::Allowed {
            namespaces: namespaces.iter().map(|ns| ns.to_string()).collect(),
            rule: "--child-namespace-selector team".into(),
        };
        let selection = Selection {
            uid: "uid-1".into(),
            generation: Some(2),
            digest: "sha256:a".into(),
            placement: placement(&["team-a"]),
            selectors: Arc::new(Vec::new()),
        };
        related
            .selections
            .lock()
            .unwrap()
            .insert("ns/app".into(), selection);
        let cached = |uid, generation, digest| {
            let placement = placement(&["team-a"]);
            related
                .cached("ns/app", uid, Some(generation), digest, &placement)
                .is_some()
        };
        assert!(cached("uid-1", 2, "sha256:a"));
        let elsewhere = placement(&["team-a", "team-b"]);
        assert!(
            related
                .cached("ns/app", "uid-1", Some(2), "sha256:a", &elsewhere)
                .is_none(),
            "a namespace that starts or stops taking children must ask again"
        );
        assert!(
            !cached("uid-1", 3, "sha256:a"),
            "a spec change must ask again"
        );
        assert!(!cached("uid-1", 2, "sha256:b"), "a hot swap must ask again");
        assert!(
            !cached("uid-2", 2, "sha256:a"),
            "a recreated parent must ask again"
        );
    }
}
