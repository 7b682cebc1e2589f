//! Observe: what a reconcile reads, from reflector caches filled by the watches (`sync`): the resolved
//! kinds and child caches (`kinds`), a parent's children through the owner index (`children`,
//! `owner_index`), the parents a reconciler takes and where their children may live (`selection`,
//! `namespaces`), the related objects (`related`), and which parents a change concerns (`triggers`).

pub mod children;
pub mod kinds;
pub mod namespaces;
pub mod owner_index;
pub mod related;
pub mod selection;
pub mod sync;
mod triggers;
