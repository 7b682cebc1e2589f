//! CRD versions on one shared control plane: MyApp moving from v1alpha1 to v1beta1 (it switches the
//! MyApp CRD's storage version, which every other MyApp test would feel) and the conversion webhook
//! of a test CRD of its own group.

#[path = "../common/mod.rs"]
mod common;

mod conversion_webhook;
mod myapp_versions;
