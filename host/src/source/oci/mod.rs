//! A module in an OCI registry, `oci://REGISTRY/REPOSITORY:TAG` or `...@sha256:DIGEST`: how JavaScript
//! and Python components (megabytes, too big for a ConfigMap) ship, in the CNCF wasm OCI artifact
//! format (a config of `application/vnd.wasm.config.v0+json`, one `application/wasm` layer) that other
//! wasm tools push and pull too.
//!
//! The wasm layer is checked against its digest and kept on disk by digest (`--cache-dir`), so a
//! restart pulls nothing. A tag is polled: a new manifest digest is pulled and handed to the hot swap,
//! with the keep-last-good rules of every source. A digest reference never changes and is never polled.
//! The pull is the host's, made with the operator's TLS settings and the source's credentials (the
//! operator's file for `run`, a reconciler's own pull Secret in platform mode); the guest has no
//! network.

mod cache;
mod credentials;
mod push;
mod registry;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use futures::stream::BoxStream;
use oci_client::Reference;
use tokio::sync::mpsc;

use super::Update;
pub use credentials::Credentials;
pub use push::{PushArgs, push};
use registry::{Pulled, Registry};

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
const MAX_MODULE_BYTES: u64 = 256 << 20;

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

/// A parsed `oci://` reference.
#[derive(Clone, Debug, PartialEq)]
pub struct OciReference(pub Reference);

impl OciReference {
    /// A digest reference names one immutable module; a tag may move.
    pub fn is_digest(&self) -> bool {
        self.0.digest().is_some()
    }
}

impl FromStr for OciReference {
    type Err = OciError;

    fn from_str(s: &str) -> Result<OciReference, OciError> {
        let rest = s.strip_prefix(SCHEME).unwrap_or(s);
        // A reference without a registry would silently mean Docker Hub: refuse the ambiguity.
        let registry = rest.split('/').next().unwrap_or_default();
        if !rest.contains('/')
            || !(registry.contains('.') || registry.contains(':') || registry == "localhost")
        {
            return Err(OciError::Reference(
                s.into(),
                "name the registry host, e.g. oci://registry.example.com/team/module:v1".into(),
            ));
        }
        Reference::from_str(rest)
            .map(OciReference)
            .map_err(|e| OciError::Reference(s.into(), e.to_string()))
    }
}

impl std::fmt::Display for OciReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SCHEME}{}", self.0.whole())
    }
}

/// The operator's registry credentials (`run` and `push`; not `serve`, where each reconciler names its
/// own pull Secret and the host lends its credentials to no team).
#[derive(Clone, Debug, Default, Args)]
pub struct CredentialsArgs {
    /// Registry credentials: a dockerconfigjson file (`.dockerconfigjson` of a mounted Secret of type
    /// kubernetes.io/dockerconfigjson, or a `~/.docker/config.json`); read again before each pull, so a
    /// rotated Secret is picked up.
    #[arg(long, env = "RECONCILE_HOST_OCI_CREDENTIALS")]
    pub oci_credentials: Option<PathBuf>,
}

impl CredentialsArgs {
    pub fn credentials(&self) -> Credentials {
        Credentials::file(self.oci_credentials.as_deref())
    }
}

/// How the host reaches registries (transport): the operator's decisions, shared by every `oci://`
/// source, `push`, and every reconciler of `serve` (a team cannot turn on plain HTTP).
#[derive(Clone, Debug, Default, Args)]
pub struct RegistryArgs {
    /// A registry (HOST[:PORT]) reached over plain HTTP instead of HTTPS (repeatable; env:
    /// comma-separated). Only for registries on a trusted network: nothing then protects the module
    /// on the way but its digest.
    #[arg(long, env = "RECONCILE_HOST_OCI_PLAIN_HTTP", value_delimiter = ',')]
    pub oci_plain_http: Vec<String>,
    /// CA certificates (PEM) trusted for registries besides the system's, e.g. a private registry's.
    #[arg(long, env = "RECONCILE_HOST_OCI_CA_FILE")]
    pub oci_ca_file: Option<PathBuf>,
}

/// Settings of an `oci://` module source.
#[derive(Clone, Debug, Args)]
pub struct OciArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// How often a tag is checked for a new digest (e.g. `1m`, `30s`); a digest reference is never
    /// polled.
    #[arg(long, env = "RECONCILE_HOST_OCI_POLL_INTERVAL", default_value = "1m", value_parser = crate::cli::parse_period)]
    pub oci_poll_interval: Duration,
}

/// One `oci://` module source: the reference, how to reach it and with which credentials, where pulled
/// layers are kept.
#[derive(Clone, Debug)]
pub struct OciSource {
    pub reference: OciReference,
    pub registry: RegistryArgs,
    pub credentials: Credentials,
    pub poll_interval: Duration,
    /// Where pulled layers go (an `oci/` folder under it): the host's `--cache-dir` for `run`, a
    /// partition of it per credentials in platform mode. Without one, every start pulls.
    pub cache_dir: Option<PathBuf>,
}

impl std::fmt::Display for OciSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.reference.fmt(f)
    }
}

pub fn updates(source: Arc<OciSource>) -> BoxStream<'static, Update> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(follow(source, tx));
    super::stream_of(rx)
}

/// Pulls the module, then polls a tag. An error is yielded once until something changes (a registry
/// down for an hour is one report, not sixty); the first success after an error yields the module
/// again, so that whoever follows the source knows it is healthy.
async fn follow(source: Arc<OciSource>, tx: mpsc::Sender<Update>) {
    let cache = source.cache_dir.as_deref().map(cache::Cache::new);
    let mut current: Option<String> = None;
    let mut failing: Option<String> = None;
    loop {
        let recovering = failing.is_some();
        let result = check(&source, cache.as_ref(), current.as_deref(), recovering).await;
        let update = match result {
            Ok(Some(Pulled { digest, bytes })) => {
                current = Some(digest);
                failing = None;
                Some(Ok(bytes))
            }
            Ok(None) => {
                failing = None;
                None
            }
            Err(e) => {
                let message = e.to_string();
                tracing::debug!(source = %source, error = %message, "registry check failed");
                if failing.as_ref() == Some(&message) {
                    None
                } else {
                    failing = Some(message.clone());
                    Some(Err(message))
                }
            }
        };
        if let Some(update) = update
            && tx.send(update).await.is_err()
        {
            return;
        }
        if current.is_some() && source.reference.is_digest() {
            // Pulled: a digest names one module forever. Keep the stream open.
            tx.closed().await;
            return;
        }
        tokio::time::sleep(source.poll_interval).await;
    }
}

/// One look at the registry (credentials read again): the first module, or a new one behind the tag.
/// `recovering` after an error: the module already had is handed on again (from the cache) once the
/// registry answers, or nothing if that pull fails.
async fn check(
    source: &OciSource,
    cache: Option<&cache::Cache>,
    current: Option<&str>,
    recovering: bool,
) -> Result<Option<Pulled>, OciError> {
    let credentials = source.credentials.read().await?;
    let registry = Registry::connect(&source.registry, credentials)?.with_cache(cache);
    let Some(digest) = current else {
        return registry.first(&source.reference).await;
    };
    let changed = registry.changed(&source.reference, digest).await?;
    if changed.is_some() || !recovering {
        return Ok(changed);
    }
    tracing::info!(source = %source, "the registry answers again");
    Ok(registry.pull(&source.reference, digest).await.ok())
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

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    /// The rule that keeps one team from another's cached modules (platform mode partitions the cache
    /// by credentials): a cache hit is served only from the cache dir it was pulled into, and only
    /// after the source's credentials were read.
    #[tokio::test]
    async fn a_cached_module_is_served_only_from_its_partition_once_the_credentials_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = b"\0asm cached".to_vec();
        let layer = registry::sha256(&bytes);
        let manifest = format!("sha256:{}", "b".repeat(64));
        let team_a = dir.path().join("a");
        let cache = cache::Cache::new(&team_a);
        cache.store_blob(&layer, &bytes);
        cache.store_layer_of(&manifest, &layer);
        // No registry answers there: only the cache can give the module.
        let unreachable = "127.0.0.1:1";
        let source = |cache_dir: &std::path::Path, credentials| {
            Arc::new(OciSource {
                reference: format!("oci://{unreachable}/team/myapp@{manifest}")
                    .parse()
                    .unwrap(),
                registry: RegistryArgs {
                    oci_plain_http: vec![unreachable.into()],
                    ..RegistryArgs::default()
                },
                credentials,
                poll_interval: Duration::from_secs(60),
                cache_dir: Some(cache_dir.to_path_buf()),
            })
        };
        let first = |source| async { updates(source).next().await.unwrap() };
        assert_eq!(
            first(source(&team_a, Credentials::Anonymous)).await,
            Ok(bytes)
        );
        let elsewhere = first(source(&dir.path().join("b"), Credentials::Anonymous)).await;
        assert!(elsewhere.unwrap_err().contains(unreachable));
        let unreadable = Credentials::Secret {
            client: credentials::tests::fake_api(vec![]).await,
            namespace: "team-a".into(),
            name: "registry".into(),
        };
        let error = first(source(&team_a, unreadable)).await.unwrap_err();
        assert!(
            error.contains("Secret team-a/registry: not found"),
            "{error}"
        );
    }

    #[test]
    fn references_parse_with_a_registry_only() {
        let tag: OciReference = "oci://registry.example.com:5000/team/myapp:v1"
            .parse()
            .unwrap();
        assert_eq!(tag.0.registry(), "registry.example.com:5000");
        assert_eq!(tag.0.repository(), "team/myapp");
        assert_eq!(tag.0.tag(), Some("v1"));
        assert!(!tag.is_digest());
        assert_eq!(
            tag.to_string(),
            "oci://registry.example.com:5000/team/myapp:v1"
        );
        let digest = format!("oci://127.0.0.1:5000/myapp@sha256:{}", "a".repeat(64));
        let digest: OciReference = digest.parse().unwrap();
        assert!(digest.is_digest());
        for bad in [
            "oci://myapp:v1",
            "oci://team/myapp:v1",
            "oci://x.io/My App:v1",
        ] {
            assert!(bad.parse::<OciReference>().is_err(), "{bad}");
        }
    }
}
