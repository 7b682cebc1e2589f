//! Why loading a module or calling a guest failed, as enums that the controller turns into conditions,
//! Events and metric labels.

use std::time::Duration;

/// A module that cannot become the active logic. The previous module, if any, stays in place.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("module is not a WebAssembly component: {0}")]
    NotAComponent(String),
    #[error("module failed to compile: {0}")]
    Compile(String),
    #[error("module implements none of the worlds {}: {reason}", .worlds.join(", "))]
    WorldMismatch {
        worlds: &'static [&'static str],
        reason: String,
    },
    #[error("cannot read module {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One reconcile call that produced no usable answer. Nothing is applied or pruned after it.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    #[error("guest exceeded its deadline of {0:?} and was interrupted")]
    Deadline(Duration),
    #[error("guest exceeded its memory limit of {limit_bytes} bytes")]
    MemoryLimit { limit_bytes: usize },
    /// `what` is the trap (e.g. an `unreachable` instruction, which is how a Rust panic ends); `said` is
    /// the end of what the guest wrote to stderr, where its panic message or exception is, or, if it
    /// wrote nothing there, its last error-level log line (a guest without WASI has no stderr).
    #[error(
        "the guests' memory budget of {budget_bytes} bytes (--guest-memory-budget-mib), shared by all calls, stayed spent until this call's deadline"
    )]
    MemoryBudget { budget_bytes: usize },
    #[error("guest trapped ({what}){}", if said.is_empty() { String::new() } else { format!(": {said}") })]
    Trap { what: String, said: String },
    #[error("guest returned an error: {0}")]
    Rejected(String),
    #[error("guest output is {size} bytes, more than the limit of {limit} bytes")]
    OutputTooLarge { size: usize, limit: usize },
    #[error(
        "guest status is {size} bytes, more than the limit of {limit} bytes (--guest-max-status-kib)"
    )]
    StatusTooLarge { size: usize, limit: usize },
    #[error("guest output is not valid JSON ({what}): {reason}")]
    InvalidJson { what: String, reason: String },
    #[error("cannot instantiate guest: {0}")]
    Instantiate(String),
    #[error(
        "the module implements {world}, which has no `convert`: build it for reconcile:guest/converting-reconciler@0.2.0 to serve conversions"
    )]
    NoConvert { world: &'static str },
}

impl GuestError {
    /// A short CamelCase word for condition reasons and metric labels.
    pub fn reason(&self) -> &'static str {
        match self {
            GuestError::Deadline(_) => "GuestDeadlineExceeded",
            GuestError::MemoryLimit { .. } => "GuestMemoryLimitExceeded",
            GuestError::MemoryBudget { .. } => "GuestMemoryBudgetExhausted",
            GuestError::Trap { .. } => "GuestTrapped",
            GuestError::Rejected(_) => "GuestRejected",
            GuestError::OutputTooLarge { .. } => "GuestOutputTooLarge",
            GuestError::StatusTooLarge { .. } => "GuestStatusTooLarge",
            GuestError::InvalidJson { .. } => "GuestOutputInvalid",
            GuestError::Instantiate(_) => "GuestInstantiateFailed",
            GuestError::NoConvert { .. } => "GuestCannotConvert",
        }
    }
}
