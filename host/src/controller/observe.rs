//! Observed children, read from the reflector caches: no GET per reconcile.

use std::sync::Arc;

use kube::core::DynamicObject;

use super::context::{Context, ResolvedKind};

/// A child the parent owns (controller ownerReference) as the cache last saw it.
pub struct Observed<'a> {
    pub kind: &'a ResolvedKind,
    pub object: Arc<DynamicObject>,
}

impl Observed<'_> {
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or_default()
    }
}

impl Context {
    /// Every cached child whose controller ownerReference is the parent with `uid`, in `namespace`.
    pub fn observe(&self, namespace: &str, uid: &str) -> Vec<Observed<'_>> {
        let mut observed = Vec::new();
        for child in &self.children {
            let owned = child
                .store
                .state_filter(|obj| controlled_by(obj, namespace, uid));
            observed.extend(owned.into_iter().map(|object| Observed {
                kind: &child.kind,
                object,
            }));
        }
        observed
    }
}

/// Whether `object` is in `namespace` and its controller ownerReference is the parent with `uid`.
pub fn controlled_by(object: &DynamicObject, namespace: &str, uid: &str) -> bool {
    object.metadata.namespace.as_deref() == Some(namespace)
        && object
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid && o.controller == Some(true))
}
