//! reconcile-host: a Kubernetes controller host whose reconcile logic is a WebAssembly component.
//!
//! The modules follow the data flow: `guest` runs the logic, `validate` holds its output to the safety
//! rules, `render` and `conformance` run both without a cluster, `source` follows new versions of the
//! module, `controller` applies the result to a cluster, `conversion` serves the parent CRD's
//! conversion webhook with the same module, `migrate` rewrites stored objects after a storage version
//! change, and `platform` runs many controllers declared as objects; `identity` names the reconciler
//! that made each child; `memory` keeps the allocator from holding
//! what the host freed.

pub mod cli;
pub mod conformance;
pub mod controller;
pub mod conversion;
pub mod guest;
pub mod identity;
pub mod kind;
pub mod memory;
pub mod migrate;
pub mod placement;
pub mod plan;
pub mod platform;
pub mod related;
pub mod render;
pub mod rule;
pub mod selector;
pub mod source;
pub mod telemetry;
pub mod text;
pub mod validate;
