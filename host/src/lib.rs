//! reconcile-host: a Kubernetes controller host whose reconcile logic is a WebAssembly component.
//!
//! The modules follow the data flow, in layers from the bottom up; a module uses only the ones below
//! it (and its own layer's lower files):
//!
//! 1. `names`, `kind`, `text`: the names the host writes, the kinds it handles, text helpers.
//! 2. `guest`: the runtime that runs the untrusted logic (a WebAssembly component).
//! 3. `validate`, `placement`, `selector`, `related`, `strategy`: the safety rules for its output,
//!    where children may live, label selectors, the related objects it may read, and how a changed
//!    child is updated.
//! 4. `source`: the module and its new versions (file, ConfigMap, OCI registry).
//! 5. `controller`: one reconcile, observed, decided and executed against a cluster.
//! 6. `reconciler`: the reconciler assembled (builder), following new modules, driven, led (leader
//!    election), its webhook, and `run`.
//! 7. `platform` (many reconcilers declared as objects), `conversion` (the parent CRD's conversion
//!    webhook), `plan` (a module's effect as a dry run), `render` and `conformance` (the logic with no
//!    cluster), `migrate` (stored objects after a storage version change).
//! 8. `cli`: the flags of every command; then `main`.
//!
//! Beside them: `identity` names the reconciler that made each child, `telemetry` counts and logs,
//! `memory` keeps the allocator from holding what the host freed, `lease` says who may write (the
//! Lease election and its fence) and `shard` spreads a reconciler's parents over its replicas (the
//! ring of their Leases, the assignment, the handover rules), both below `controller`. `host/tests/import_cycles.rs` keeps
//! the layers honest: it fails on any import cycle between the files of `host/src`.

pub mod atomic_file;
pub mod cli;
pub mod conformance;
pub mod controller;
pub mod conversion;
#[cfg(test)]
mod fuzz;
pub mod guest;
pub mod identity;
pub mod kind;
pub mod lease;
pub mod memory;
pub mod migrate;
pub mod names;
pub mod placement;
pub mod plan;
pub mod platform;
pub mod reconciler;
pub mod related;
pub mod render;
pub mod rule;
pub mod selector;
pub mod shard;
pub mod source;
pub mod strategy;
pub mod telemetry;
pub mod text;
pub mod validate;
