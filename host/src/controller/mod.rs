//! The controller: watches parents and the child kinds they own through kube-runtime, calls the guest
//! for each parent, and applies its answer (`reconcile`), using the reflector caches (`observe`),
//! server-side apply and pruning (`apply`), the status subresource (`status`) and per-object backoff.

mod backoff;
mod claim;
mod context;
mod decide;
mod error;
mod execute;
mod health;
mod observe;
mod reconcile;
mod release;
mod request;
mod settings;

pub use claim::RECORD;
pub use context::Context;
pub use decide::ownership::Claim;
pub use decide::plan::{HostRules, Plan, Prune, Write, plan};
pub use decide::start::{Released, Start, held, release_calls_guest, released, start};
pub use decide::status::{HOST_STATUS_KEYS, READY, guest_part, status_of};
pub use error::{ReconcileError, uid_of};
pub use health::{HealthReport, ReconcilerHealth};
pub use observe::children::{Observed, controlled_by, left_out};
pub use observe::kinds::{ChildCache, ChildKind, DiscoveryError, ResolvedKind};
pub use observe::owner_index::owners_of;
pub use observe::selection::{Selection, SelectionError, parent_key};
pub use observe::sync::{Listed, as_cached, watch_cache};
pub use reconcile::{error_policy, reconcile};
pub use request::request;
pub use settings::Settings;

pub use crate::identity::{MANAGED_BY_LABEL, MANAGER};
