//! Reconciling the parents a Namespace change concerns (`--child-namespace-selector`,
//! `--namespace-selector`).
//!
//! How a namespace fits the selection is read from its labels at each reconcile, and a parent is
//! reconciled on changes of itself and of its children, not of their namespaces. Without this, a
//! namespace that stopped matching the child selector kept its children, unreported, until the parent
//! changed; a parent refused for a namespace that matches now waited out its backoff (up to five
//! minutes); and a parent whose namespace left the reconciler's scope was never released. So a
//! Namespace whose fit changes reconciles every parent that controls a child in it, that reads related
//! objects in it (a parent reads only where its children may go), that lives in it (or is it), and
//! every parent whose last reconcile failed. Other Namespace changes reconcile nothing.

use std::collections::HashMap;
use std::sync::Mutex;

use super::selection::NamespaceFit;

/// How each Namespace fitted the selection when last seen.
#[derive(Default)]
pub struct NamespaceMatches {
    last: Mutex<HashMap<String, NamespaceFit>>,
}

impl NamespaceMatches {
    /// Records how the namespace `name` fits now; returns whether that changed. A namespace seen for
    /// the first time changed if it fits in any way (children may go there, or its parents are in
    /// scope now), not otherwise.
    pub fn changed(&self, name: &str, fit: NamespaceFit) -> bool {
        let mut last = self.last.lock().expect("namespace matches lock poisoned");
        let before = match fit == NamespaceFit::default() {
            false => last.insert(name.to_owned(), fit),
            true => last.remove(name),
        };
        before.unwrap_or_default() != fit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_change_of_fit_counts() {
        let matches = NamespaceMatches::default();
        let none = NamespaceFit::default();
        let children = NamespaceFit {
            takes_children: true,
            in_scope: false,
        };
        let both = NamespaceFit {
            takes_children: true,
            in_scope: true,
        };
        assert!(!matches.changed("a", none), "first seen, not matching");
        assert!(matches.changed("b", children), "first seen, matching");
        assert!(!matches.changed("b", children), "still matching");
        assert!(matches.changed("b", both), "in scope now");
        assert!(matches.changed("b", none), "stopped matching");
        assert!(!matches.changed("b", none), "still not matching");
        assert!(matches.changed("b", children), "matching again");
    }
}
