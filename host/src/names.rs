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
/// Label on every shard Lease: the ring it belongs to (its value: the ring's name, a label value).
/// The live Leases carrying it are the ring (`shard::ring`).
pub const RING_LABEL: &str = "reconcile-host.dev/ring";
/// Label on every shard Lease: the member that holds it (a label value), kept when the ring's leader
/// takes the Lease from a member that is gone.
pub const MEMBER_LABEL: &str = "reconcile-host.dev/member";
/// What the shard label's key puts before a reconciler's identity label: a parent carrying
/// `shard.reconcile-host.dev/<reconciler>=<member>` is that member's to reconcile.
pub const SHARD_LABEL_PREFIX: &str = "shard.reconcile-host.dev/";
/// What the drain label's key puts before a reconciler's identity label: the ring's leader asks the
/// member holding a parent to release it (the member then removes both labels).
pub const DRAIN_LABEL_PREFIX: &str = "drain.reconcile-host.dev/";
/// What the moved annotation's key puts before a reconciler's identity label: on a parent that left a
/// member, that member's name, written with its release (or by the ring's leader, with the new label,
/// when the member lapsed). The parent's next member lists its children from the API server only
/// then: they are still labelled for the member it left. A parent that never moved needs no list.
pub const MOVED_ANNOTATION_PREFIX: &str = "moved.reconcile-host.dev/";
/// Label on the children of a sharded reconciler: their parent's UID, by which a member lists the
/// children of a parent that just moved to it (their shard label still names the member it left).
pub const PARENT_UID_LABEL: &str = "reconcile-host.dev/parent-uid";
