//! Observed children, read from the reflector caches (found through their owner index): no GET, and
//! no scan of the cache, per reconcile.

use std::sync::Arc;

use kube::core::DynamicObject;

use super::context::{Context, ResolvedKind};
use super::owner_index::controller_uid;
use crate::guest::Request;
use crate::validate::Child;

/// A child the parent owns (controller ownerReference) as the cache last saw it.
pub struct Observed<'a> {
    pub kind: &'a ResolvedKind,
    pub object: Arc<DynamicObject>,
}

impl Observed<'_> {
    pub fn name(&self) -> &str {
        self.object.metadata.name.as_deref().unwrap_or_default()
    }

    /// Whether this is the object `child` names.
    pub fn is(&self, child: &Child) -> bool {
        self.kind.gvk == child.kind
            && self.name() == child.name
            && self.object.metadata.namespace.as_deref() == Some(child.namespace())
    }
}

/// The observed children that no desired child names: what applying `desired` would delete.
pub fn left_out<'o, 'a>(
    observed: &'o [Observed<'a>],
    desired: &'o [Child],
) -> impl Iterator<Item = &'o Observed<'a>> {
    observed
        .iter()
        .filter(|o| !desired.iter().any(|child| o.is(child)))
}

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
    /// Every cached child whose controller ownerReference is the parent with `uid`, in the parent's
    /// `namespace`, or in any namespace for a cluster-scoped parent (`None`).
    pub fn observe(&self, namespace: Option<&str>, uid: &str) -> Vec<Observed<'_>> {
        let mut observed = Vec::new();
        for child in &self.children {
            let owned = child.owned.owned(uid, |child_namespace, name| {
                child
                    .cached(child_namespace, name)
                    .filter(|obj| controlled_by(obj, namespace, uid))
            });
            observed.extend(owned.into_iter().map(|object| Observed {
                kind: &child.kind,
                object,
            }));
        }
        observed
    }
}

/// Whether the controller ownerReference of `object` is the parent with `uid`, and `object` is in the
/// parent's `namespace` (any namespace for a cluster-scoped parent: `None`).
pub fn controlled_by(object: &DynamicObject, namespace: Option<&str>, uid: &str) -> bool {
    namespace.is_none_or(|namespace| object.metadata.namespace.as_deref() == Some(namespace))
        && controls(object, uid)
}

/// Whether the controller ownerReference of `object` is the parent with `uid`.
fn controls(object: &DynamicObject, uid: &str) -> bool {
    controller_uid(object) == Some(uid)
}
