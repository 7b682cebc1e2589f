//! Reconciling the parents a Namespace change concerns (`--child-namespace-selector`).
//!
//! Whether a namespace may hold children is read from its labels at each reconcile, and a parent is
//! reconciled on changes of itself and of its children, not of their namespaces. Without this, a
//! namespace that stopped matching the selector kept its children, unreported, until the parent
//! changed; and a parent refused for a namespace that matches now waited out its backoff (up to five
//! minutes). So a Namespace whose match changes reconciles every parent that controls a child in it,
//! that reads related objects in it (a parent reads only where its children may go), and every parent
//! whose last reconcile failed. Other Namespace changes reconcile nothing.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::core::DynamicObject;
use kube::runtime::reflector::ObjectRef;

use super::context::Context;
use super::owner_index::owners_of;

/// Whether each Namespace matched the selector when last seen.
#[derive(Default)]
pub struct NamespaceMatches {
    last: Mutex<HashMap<String, bool>>,
}

impl NamespaceMatches {
    /// Records whether the namespace `name` matches now; returns whether that changed. A namespace
    /// seen for the first time changed if it matches (children may go there now), not otherwise.
    fn changed(&self, name: &str, matches: bool) -> bool {
        let mut last = self.last.lock().expect("namespace matches lock poisoned");
        let before = match matches {
            true => last.insert(name.to_owned(), true),
            false => last.remove(name),
        };
        before.unwrap_or(false) != matches
    }
}

impl Context {
    /// The parents to reconcile on a change of `namespace`: none unless its match changed.
    pub fn parents_placing_in(&self, namespace: &DynamicObject) -> Vec<ObjectRef<DynamicObject>> {
        let Some(name) = namespace.metadata.name.as_deref() else {
            return Vec::new();
        };
        // A terminating namespace counts as no longer matching: its entry goes, and the parents with
        // children there hear of it.
        let matches = namespace.metadata.deletion_timestamp.is_none()
            && self.selection.selects_namespace(namespace);
        if !self.namespace_matches.changed(name, matches) {
            return Vec::new();
        }
        let mut parents: Vec<_> = self
            .failing_parents()
            .into_iter()
            .map(|(key, _)| self.parent_ref(&key))
            .collect();
        parents.extend(self.parents_reading_in(name));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_change_of_match_counts() {
        let matches = NamespaceMatches::default();
        assert!(!matches.changed("a", false), "first seen, not matching");
        assert!(matches.changed("b", true), "first seen, matching");
        assert!(!matches.changed("b", true), "still matching");
        assert!(matches.changed("b", false), "stopped matching");
        assert!(!matches.changed("b", false), "still not matching");
        assert!(matches.changed("b", true), "matching again");
    }
}
