//! Where a parent's children may live. A namespaced parent's children stay in its namespace; a
//! cluster-scoped parent's go to the namespaces the operator allowed (`--child-namespace`), and each
//! must name one; a Namespace parent with no allow-list keeps its children in itself. Each refusal
//! names the rule that applies, so that the guest's author knows which one to follow.

use std::collections::BTreeSet;

use crate::rule::Rule;

/// Where a parent's children may live, and so which rule refuses a child elsewhere.
#[derive(Clone, Debug, PartialEq)]
pub enum Placement {
    /// A namespaced parent's namespace; a child may leave its namespace out.
    ParentNamespace(String),
    /// The Namespace that is the parent (a Namespace parent without an allow-list); may be left out.
    ParentItself(String),
    /// A cluster-scoped parent's allowed namespaces; each child must name one.
    Allowed {
        namespaces: BTreeSet<String>,
        /// What allowed them, for the refusal's message (e.g. `--child-namespace team-a, team-b`).
        rule: String,
    },
}

impl Placement {
    /// The namespace of a child that names `given` (or none), or the rule it breaks.
    pub(crate) fn namespace_of(&self, given: Option<&str>) -> Result<String, Rule> {
        match (self, given) {
            (Placement::ParentNamespace(ns) | Placement::ParentItself(ns), None) => Ok(ns.clone()),
            (Placement::ParentNamespace(ns) | Placement::ParentItself(ns), Some(given))
                if given == ns =>
            {
                Ok(ns.clone())
            }
            (Placement::ParentNamespace(ns), Some(given)) => Err(Rule::OtherNamespace {
                namespace: given.to_string(),
                parent: ns.clone(),
            }),
            (Placement::ParentItself(ns), Some(given)) => Err(Rule::OutsideParentNamespace {
                namespace: given.to_string(),
                parent: ns.clone(),
            }),
            (Placement::Allowed { rule, .. }, None) => Err(Rule::NoNamespace {
                allowed: rule.clone(),
            }),
            (Placement::Allowed { namespaces, .. }, Some(given)) if namespaces.contains(given) => {
                Ok(given.to_string())
            }
            (Placement::Allowed { rule, .. }, Some(given)) => Err(Rule::NamespaceNotAllowed {
                namespace: given.to_string(),
                allowed: rule.clone(),
            }),
        }
    }
}
