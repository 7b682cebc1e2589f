//! Why a reconciler object's spec cannot be read: below the spec (`spec`) and its module references
//! (`module_ref`), which both refuse by it.

use crate::selector::SelectorError;

/// Why a reconciler object cannot be started; reported as reason `InvalidSpec`.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("spec: {0}")]
    Malformed(String),
    #[error(
        "spec.{field}: `{value}` is not a kind (apiVersion `group/version` or `v1`, kind `Kind`)"
    )]
    Kind { field: &'static str, value: String },
    #[error("spec.{0} must not name a namespace in a namespaced Reconciler: it uses its own")]
    ForeignNamespace(&'static str),
    #[error(
        "spec.{0} is for a ClusterReconciler only: a namespaced Reconciler must not change how a CRD is served to every namespace"
    )]
    ClusterOnly(&'static str),
    #[error("spec.{0} is required")]
    Missing(&'static str),
    #[error("spec.children must name at least one kind")]
    NoChildren,
    #[error("spec.{field}: {error}")]
    Selector {
        field: &'static str,
        error: SelectorError,
    },
    #[error("spec.{0} must set exactly one of configMap and oci")]
    NotOneModuleSource(&'static str),
    #[error("spec.{field}: {error}")]
    Reference { field: &'static str, error: String },
    #[error("spec.{field}: `{value}` is not an object name: {reason}")]
    Name {
        field: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error("spec.{0}: set pullSecretName or pullSecret, not both")]
    TwoPullSecrets(&'static str),
}
