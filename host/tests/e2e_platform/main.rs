//! The end-to-end tests of the platform (`serve`), on one shared control plane: each test's platform
//! host serves only the Reconciler objects labelled with its test's name.

#[path = "../common/mod.rs"]
mod common;

mod decorator_platform;
mod platform;
mod platform_conversion;
mod platform_isolation;
mod platform_oci;
mod platform_sharded;
mod related_platform;
