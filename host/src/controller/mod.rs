//! The controller: watches parents and the child kinds they own through kube-runtime, calls the guest
//! for each parent, and applies its answer (`reconcile`), using the reflector caches (`observe`),
//! server-side apply and pruning (`apply`), the status subresource (`status`) and per-object backoff.

mod applied;
mod apply;
mod backoff;
mod context;
mod create;
mod error;
mod finalizer;
mod health;
mod namespaces;
mod observe;
mod owner_index;
mod ownership;
mod reconcile;
mod related;
mod release;
mod selection;
mod shadow;
mod status;
mod sync;
mod written_status;

use std::time::Duration;

use crate::identity::Identity;
use crate::kind::Gvk;
pub use apply::{apply_body, owner_reference};
pub use context::{ChildCache, ChildKind, Context, DiscoveryError, ResolvedKind};
pub use error::ReconcileError;
pub use health::{HealthReport, ReconcilerHealth};
pub use observe::{Observed, controlled_by, left_out, request};
pub use owner_index::owners_of;
pub use ownership::Claim;
pub use reconcile::{error_policy, reconcile};
pub use selection::{Selection, SelectionError, parent_key};
pub use status::{HOST_STATUS_KEYS, READY, guest_part, status_of};
pub use sync::{Listed, as_cached, watch_cache};

pub use crate::identity::{MANAGED_BY_LABEL, MANAGER};

/// What defines one reconciler, whether from `run`'s flags or a `Reconciler` object.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub parent: Gvk,
    pub children: Vec<Gvk>,
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
