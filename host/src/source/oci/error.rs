//! Why a module could not come from a registry, and how a cause chain is told on one line.

use super::format::{LEGACY_WASM_LAYER_MEDIA_TYPE, MAX_MODULE_BYTES, WASM_LAYER_MEDIA_TYPE};

/// Why a module could not come from a registry; each message names the reference.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("`{0}` is not an OCI reference (oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST): {1}")]
    Reference(String, String),
    #[error("reading the registry credentials {from}: {reason}")]
    Credentials { from: String, reason: String },
    #[error("reading the registry CA certificates {path}: {reason}")]
    CaFile { path: String, reason: String },
    #[error("{action} {reference}: {reason}")]
    Registry {
        action: &'static str,
        reference: String,
        reason: String,
    },
    /// The registry answered, and refused these credentials (401, 403): unlike an outage, a module
    /// cached under them is not served again at a start (`registry::first`).
    #[error("{action} {reference}: the registry refused the credentials: {reason}")]
    Refused {
        action: &'static str,
        reference: String,
        reason: String,
    },
    #[error(
        "{reference}: no wasm layer ({WASM_LAYER_MEDIA_TYPE} or {LEGACY_WASM_LAYER_MEDIA_TYPE}) in the manifest; its layers are {found:?}"
    )]
    NoWasmLayer {
        reference: String,
        found: Vec<String>,
    },
    #[error("{reference}: {count} wasm layers in the manifest, expected one")]
    SeveralWasmLayers { reference: String, count: usize },
    #[error(
        "{reference}: the wasm layer is {size} bytes, more than the {MAX_MODULE_BYTES} allowed"
    )]
    TooLarge { reference: String, size: i64 },
    #[error(
        "{reference}: the wasm layer does not match its digest (expected {expected}, got {actual}): corrupted in the registry or on the way"
    )]
    DigestMismatch {
        reference: String,
        expected: String,
        actual: String,
    },
    #[error("reading {path}: {reason}")]
    Module { path: String, reason: String },
}

/// An error and every cause under it, on one line: a connection failure is only clear with its cause.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
