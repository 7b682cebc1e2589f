//! A reference to a namespaced object by namespace and name, as the reconciler specs spell one (the
//! ServiceAccount, a registry's pull secret): below the spec and the module references, which both
//! read it.

use serde::Deserialize;

/// An object of a namespace, named.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct NamespacedName {
    pub namespace: String,
    pub name: String,
}
