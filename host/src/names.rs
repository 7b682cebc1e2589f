//! The names the host writes on what it makes (field manager, labels, annotations, Lease names), at
//! the bottom of the layers: every part that writes or selects by them reads them here, and this file
//! reads nothing. `identity` re-exports them beside the per-reconciler names it derives.

/// The field manager of every apply, and the value of the managed-by label on children.
pub const MANAGER: &str = "reconcile-host";
/// Label the host puts on every child, whichever reconciler made it.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Label naming the reconciler that made a child (its value: `Identity::label`); its caches select
/// on it.
pub const RECONCILER_LABEL: &str = "reconcile-host.dev/reconciler";
/// Annotation with the reconciler's full name, on children whose label is a shortened form of it.
pub const RECONCILER_ANNOTATION: &str = "reconcile-host.dev/reconciler";
/// Annotation with the digest of the desired state a child was last written with, on the children of
/// a kind with an update strategy other than `InPlace`: what tells an outdated child from a current one.
pub const DESIRED_ANNOTATION: &str = "reconcile-host.dev/desired";
/// What the default Lease name puts before a `run` name.
pub const LEASE_PREFIX: &str = "reconcile-host-";
