//! What a wasm OCI artifact is: the scheme of its references, its media types, the largest layer taken.

/// The scheme that makes a module location a registry reference.
pub const SCHEME: &str = "oci://";
/// The wasm OCI artifact format's config media type (CNCF TAG Runtime, wasm-oci).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The wasm OCI artifact format's layer media type: the component itself.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer media type of the older wasm-to-oci format (Kubewarden policies), also accepted.
pub const LEGACY_WASM_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// Layers larger than this are refused before they are pulled (the same bound as a ConfigMap's
/// decompressed module).
pub(super) const MAX_MODULE_BYTES: u64 = 256 << 20;
