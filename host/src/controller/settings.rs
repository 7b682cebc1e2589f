//! What defines one reconciler, whether from `run`'s flags or a `Reconciler` object: below the
//! `Context` built from it, so that neither the context nor the entry points depend on each other.

use std::time::Duration;

use super::observe::selection::Selection;
use crate::identity::Identity;
use crate::kind::Gvk;
use crate::strategy::KindStrategy;

/// What defines one reconciler, whether from `run`'s flags or a `Reconciler` object.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub parent: Gvk,
    pub children: Vec<Gvk>,
    /// How a changed desired state reaches the existing children of a kind (default: `InPlace`).
    pub updates: Vec<KindStrategy>,
    /// The kinds a module may read as related objects (separate from `children`, read-only).
    pub related: Vec<Gvk>,
    /// Only parents (and so children) in this namespace; `None`: all namespaces.
    pub namespace: Option<String>,
    pub finalizer: Option<String>,
    pub concurrency: u16,
    /// Re-run every parent this often, as a safety net; `None`: only on changes.
    pub resync_period: Option<Duration>,
    /// Take over existing objects that nothing controls when the guest names them (`--adopt-orphans`).
    pub adopt_orphans: bool,
    /// Which parents it takes (decorators) and where their children may live (cluster-scoped parents).
    pub selection: Selection,
    /// Whose children are its own: they carry this identity, and its caches hold only those.
    pub identity: Identity,
}
