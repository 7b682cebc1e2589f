//! `reconcile-host push MODULE.wasm oci://...`: publishes a module in the CNCF wasm OCI artifact format
//! (config `application/vnd.wasm.config.v0+json`, one `application/wasm` layer), which the host's
//! `oci://` source pulls and other wasm tools understand. The config carries no timestamp: the same
//! module pushed twice has the same manifest digest, so a re-push is not a new version.

use std::collections::BTreeMap;
use std::path::PathBuf;

use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};

use super::digest::sha256;
use super::registry::{Registry, registry_error};
use super::{
    Credentials, OciError, OciReference, Transport, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
};

/// What to push where, and how to reach the registry.
#[derive(Debug)]
pub struct PushOptions {
    /// The component (.wasm).
    pub module: PathBuf,
    /// Where to, `oci://REGISTRY/REPOSITORY:TAG`.
    pub reference: OciReference,
    pub transport: Transport,
    pub credentials: Credentials,
}

/// Pushes the module and prints its digest reference (the immutable form, for production).
pub fn push(args: &PushOptions, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.module).map_err(|e| OciError::Module {
        path: args.module.display().to_string(),
        reason: e.to_string(),
    })?;
    // A component: the wasm magic, then layer 1 (a core module has layer 0).
    if !(bytes.starts_with(b"\0asm") && bytes.get(6..8) == Some(&[1, 0])) {
        return Err(OciError::Module {
            path: args.module.display().to_string(),
            reason: "not a WebAssembly component".into(),
        }
        .into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let digest = runtime.block_on(upload(args, bytes.clone()))?;
    let pinned = format!(
        "oci://{}/{}@{digest}",
        args.reference.0.registry(),
        args.reference.0.repository()
    );
    writeln!(
        out,
        "pushed {} ({} bytes, layer {})\n{pinned}",
        args.reference,
        bytes.len(),
        sha256(&bytes)
    )?;
    Ok(())
}

async fn upload(args: &PushOptions, bytes: Vec<u8>) -> Result<String, OciError> {
    let reference = &args.reference;
    let image = &reference.0;
    let credentials = args.credentials.read().await?;
    let registry = Registry::connect(&args.transport, credentials)?;
    let auth = registry.auth(image);
    let title = args
        .module
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "module.wasm".into());
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [sha256(&bytes)],
    });
    let config = Config::new(
        serde_json::to_vec(&config).expect("JSON"),
        WASM_CONFIG_MEDIA_TYPE.into(),
        None,
    );
    let layer = ImageLayer::new(
        bytes,
        WASM_LAYER_MEDIA_TYPE.into(),
        Some(BTreeMap::from([(
            "org.opencontainers.image.title".to_string(),
            title,
        )])),
    );
    let layers = [layer];
    let mut manifest = OciImageManifest::build(&layers, &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.into());
    registry
        .client
        .push(image, &layers, config, &auth, Some(manifest))
        .await
        .map_err(|e| registry_error("pushing", reference, e))?;
    registry
        .client
        .fetch_manifest_digest(image, &auth)
        .await
        .map_err(|e| registry_error("resolving", reference, e))
}
