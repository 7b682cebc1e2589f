//! Related objects in the controller, as observed: the caches of the kinds the operator allows
//! reconcilers to read (one watch each, started with the controller; none when no kind is allowed),
//! each parent's selection (the module's `related` answer, checked, cached per parent UID, generation,
//! module digest and placement, so a hot swap, a spec change or a namespace that starts or stops
//! taking children asks again), the objects it selects for the request, and the parents a changed
//! object concerns, so that the change reconciles exactly those.
//!
//! Where the rest of "related" lives: the selector rules (allow-list, namespaces, matching) are
//! `crate::related`'s, shared with `render` and `conformance`; the module's `related` export is called
//! in `crate::guest::related`; asking for a parent's selection and putting the objects in its request
//! is the guest stage's (`controller::request`); which reasons a selection is refused for is
//! decided in `controller::decide::related`; the triggers in `observe::triggers`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::Client;
use kube::core::DynamicObject;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};

use super::kinds::{DiscoveryError, ResolvedKind, resolve_namespaced};
use crate::kind::Gvk;
use crate::related::{RelatedSelector, select};
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
pub struct Selection {
    pub uid: String,
    pub generation: Option<i64>,
    pub digest: String,
    /// Where the parent's children could go when checked: the namespaces its selectors may read.
    pub placement: Placement,
    pub selectors: Arc<Vec<RelatedSelector>>,
}

impl Related {
    /// How many objects its caches hold.
    pub fn cached_objects(&self) -> usize {
        self.kinds.iter().map(|(_, store)| store.len()).sum()
    }

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

    /// The selectors of the parent `key`, if a selection is cached for this UID, generation, module
    /// digest and placement.
    pub fn cached(
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
    pub fn objects(&self, selectors: &[RelatedSelector]) -> Vec<String> {
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

impl Related {
    /// The kinds the operator allows modules to read.
    pub fn allowed(&self) -> &[Gvk] {
        &self.allowed
    }

    /// Caches the parent `key`'s checked `selection`.
    pub fn remember(&self, key: &str, selection: Selection) {
        let mut selections = self.selections.lock().expect("selections lock poisoned");
        selections.insert(key.to_string(), selection);
    }

    /// The parents (keys) whose cached selection selects `object`; entries of parents for which
    /// `exists` is false are dropped on the way.
    pub fn selecting(&self, object: &DynamicObject, exists: impl Fn(&str) -> bool) -> Vec<String> {
        let mut selections = self.selections.lock().expect("selections lock poisoned");
        selections.retain(|key, _| exists(key));
        selections
            .iter()
            .filter(|(_, selection)| selection.selectors.iter().any(|s| s.matches(object)))
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// The parents (keys) whose cached selection reads in `namespace`.
    pub fn reading_in(&self, namespace: &str) -> Vec<String> {
        let selections = self.selections.lock().expect("selections lock poisoned");
        selections
            .iter()
            .filter(|(_, selection)| selection.selectors.iter().any(|s| s.namespace == namespace))
            .map(|(key, _)| key.clone())
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
