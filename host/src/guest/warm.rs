//! The instance a module keeps warm for reuse (`reuse`): its own file so that the module, which holds
//! the pool, does not depend on the calls that fill and drain it.

use wasmtime::Store;

use super::bindings::Bindings;
use super::state::GuestState;

/// An instance kept alive between calls, retired after a trap or after `reuse_instance_calls` calls.
pub(crate) struct WarmInstance {
    pub(super) store: Store<GuestState>,
    pub(super) bindings: Bindings,
    pub(super) calls: u32,
}
