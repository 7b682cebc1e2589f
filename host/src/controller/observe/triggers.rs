//! Which parents a change of something other than a parent or its children concerns: a related
//! object (the parents whose selection selects it) and a Namespace (the parents in it, with children
//! or related reads there, and the failing ones, when how it fits the selection changes). The driver
//! turns each into reconciles of exactly those parents.

use kube::core::DynamicObject;
use kube::runtime::reflector::ObjectRef;

use super::super::context::Context;
use super::owner_index::owners_of;

impl Context {
    /// The parents whose cached selection selects `object`: what its change must reconcile. Entries of
    /// parents that no longer exist are dropped on the way.
    pub fn parents_selecting(&self, object: &DynamicObject) -> Vec<ObjectRef<DynamicObject>> {
        let keys = self
            .related
            .selecting(object, |key| self.parent_exists(key));
        let parents: Vec<_> = keys.iter().map(|key| self.parent_ref(key)).collect();
        self.metrics.related_triggers(parents.len());
        parents
    }

    /// The parents whose cached selection reads in `namespace`: when it starts or stops taking
    /// children, whether they may read there changes too.
    pub fn parents_reading_in(&self, namespace: &str) -> Vec<ObjectRef<DynamicObject>> {
        let keys = self.related.reading_in(namespace);
        keys.iter().map(|key| self.parent_ref(key)).collect()
    }

    /// The parents to reconcile on a change of `namespace`: none unless its match changed.
    pub fn parents_placing_in(&self, namespace: &DynamicObject) -> Vec<ObjectRef<DynamicObject>> {
        let Some(name) = namespace.metadata.name.as_deref() else {
            return Vec::new();
        };
        // A terminating namespace fits nothing: its entry goes, and the parents with children there
        // hear of it.
        if !self
            .namespace_matches
            .changed(name, self.selection.fit(namespace))
        {
            return Vec::new();
        }
        let mut parents: Vec<_> = self
            .failing_parents()
            .into_iter()
            .map(|(key, _)| self.parent_ref(&key))
            .collect();
        parents.extend(self.parents_reading_in(name));
        // The parents the namespace selector bounds by this namespace: taken or released now.
        if self.selection.namespace_selector.is_some() {
            let bounded = (self.parents.state().into_iter())
                .filter(|parent| self.selection.scope_of(parent) == Some(name));
            parents
                .extend(bounded.map(|parent| {
                    ObjectRef::from_obj_with(&*parent, self.parent.resource.clone())
                }));
        }
        for cache in self.children.iter().flat_map(|child| child.caches()) {
            let in_namespace = cache.store.state().into_iter();
            let in_namespace =
                in_namespace.filter(|object| object.metadata.namespace.as_deref() == Some(name));
            for object in in_namespace {
                parents.extend(owners_of(
                    &object,
                    &self.parent.resource,
                    self.cluster_scoped,
                ));
            }
        }
        parents
    }
}
