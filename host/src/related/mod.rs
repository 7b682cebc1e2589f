//! Related objects: what a module's `related` export selects for a parent, held to the operator's
//! allow-list of readable kinds and to the parent's namespace (`check`), and which objects match
//! (`RelatedSelector::matches`, `select`). One matching function for every caller: the controller
//! over its caches, `render` and `conformance` over the objects of a file, so that a fixture shows what
//! a cluster would give the guest.

mod files;
mod selector;

pub use files::{RelatedError, related_from};
pub use selector::{RelatedSelector, SelectorError, check, select};
