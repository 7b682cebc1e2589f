//! A running reconciler, assembled once: `builder` makes one from its settings and module source
//! (for `run` from flags, for `serve` from a `Reconciler` object), `follow` keeps its module (and shadow
//! module) current, `driver` runs its watches and kube-runtime's Controller over the stages in
//! `controller` (on a standby too, its reconciles held until it leads: see `crate::lease`), `webhook`
//! serves the parent CRD's conversion with the same module, and `run` is the `run` command on top of
//! them.

mod builder;
mod driver;
mod follow;
mod run;
mod webhook;

pub use builder::{Blocked, GiveUp, Reconciler, ReconcilerBuilder, Startup, Waiting};
pub use driver::shutdown_signal;
pub use run::{RunOptions, run};
pub use webhook::serve_conversion_route;
