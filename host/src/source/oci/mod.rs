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
mod digest;
mod error;
mod format;
mod push;
mod reference;
mod registry;
mod settings;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use tokio::sync::mpsc;

use super::update::{Update, stream_of};
pub use credentials::Credentials;
pub use error::OciError;
pub(crate) use error::chain;
pub use format::{
    LEGACY_WASM_LAYER_MEDIA_TYPE, SCHEME, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
};
pub use push::{PushOptions, push};
pub use reference::OciReference;
use registry::{Pulled, Registry};
pub use settings::{OciSettings, Transport};

/// One `oci://` module source: the reference, how to reach it and with which credentials, where pulled
/// layers are kept.
#[derive(Clone, Debug)]
pub struct OciSource {
    pub reference: OciReference,
    pub transport: Transport,
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
    stream_of(rx)
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
    let registry = Registry::connect(&source.transport, credentials)?.with_cache(cache);
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
        let layer = digest::sha256(&bytes);
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
                transport: Transport {
                    plain_http: vec![unreachable.into()],
                    ..Transport::default()
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
}
