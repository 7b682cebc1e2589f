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

/// Whether each Namespace matched the selector when last seen.
#[derive(Default)]
pub struct NamespaceMatches {
    last: Mutex<HashMap<String, bool>>,
}

impl NamespaceMatches {
    /// Records whether the namespace `name` matches now; returns whether that changed. A namespace
    /// seen for the first time changed if it matches (children may go there now), not otherwise.
    pub fn changed(&self, name: &str, matches: bool) -> bool {
        let mut last = self.last.lock().expect("namespace matches lock poisoned");
        let before = match matches {
            true => last.insert(name.to_owned(), true),
            false => last.remove(name),
        };
        before.unwrap_or(false) != matches
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
