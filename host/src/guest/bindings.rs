//! Host-side bindings of the `reconcile:guest` world, generated from `wit/` at build time so that the
//! host and every guest are held to the same contract file.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "reconciler",
});

pub use reconcile::guest::log::Level;

/// The world's name with its version, for messages that say what a refused component should implement.
pub const WORLD: &str = "reconcile:guest/reconciler@0.1.0";
