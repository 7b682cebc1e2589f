//! One conversation with a registry: resolve a tag, pull a module's manifest and wasm layer (checked
//! against its digest, kept in the disk cache), with the operator's credentials, CA certificates and
//! plain-HTTP exceptions.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use super::cache::Cache;
use super::digest::sha256;
use super::format::MAX_MODULE_BYTES;
use super::{
    LEGACY_WASM_LAYER_MEDIA_TYPE, OciError, OciReference, Transport, WASM_LAYER_MEDIA_TYPE, chain,
};

/// A module version as pulled: its manifest digest (what a tag points at) and the wasm bytes.
pub struct Pulled {
    pub digest: String,
    pub bytes: Vec<u8>,
}

/// A client with what the operator configured and the source's credentials, built afresh for each
/// check so that rotated credentials count.
pub struct Registry {
    pub(super) client: Client,
    credentials: BTreeMap<String, RegistryAuth>,
    cache: Option<Cache>,
}

impl Registry {
    pub fn connect(
        transport: &Transport,
        credentials: BTreeMap<String, RegistryAuth>,
    ) -> Result<Registry, OciError> {
        // reqwest is built on rustls without a provider of its own: use ring, as kube does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let protocol = match transport.plain_http.as_slice() {
            [] => ClientProtocol::Https,
            hosts => ClientProtocol::HttpsExcept(hosts.to_vec()),
        };
        let extra_root_certificates = match &transport.ca_file {
            Some(path) => read_certificates(path)?,
            None => Vec::new(),
        };
        let config = ClientConfig {
            protocol,
            extra_root_certificates,
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(60)),
            user_agent: concat!("reconcile-host/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let client = Client::try_from(config).map_err(|e| OciError::CaFile {
            path: display(transport.ca_file.as_deref()),
            reason: chain(&e),
        })?;
        Ok(Registry {
            client,
            credentials,
            cache: None,
        })
    }

    pub fn with_cache(mut self, cache: Option<&Cache>) -> Registry {
        self.cache = cache.cloned();
        self
    }

    /// The credentials for a reference's registry; anonymous if the source has none.
    pub fn auth(&self, reference: &Reference) -> RegistryAuth {
        self.credentials
            .get(reference.resolve_registry())
            .cloned()
            .unwrap_or(RegistryAuth::Anonymous)
    }

    /// The module at start. The registry is asked first, for a digest the cache holds too: a cached
    /// module is served again only if the registry accepts these credentials (then a cached layer is
    /// not pulled again), or does not answer at all, so that a restart during an outage keeps the
    /// last good module (for a tag, the digest it had at the last pull). A registry that refuses the
    /// credentials (revoked, or never good for this repository) gets no cached module served: the
    /// cache must not outlive the right to pull.
    pub async fn first(&self, reference: &OciReference) -> Result<Option<Pulled>, OciError> {
        let error = match self.resolve(reference).await {
            Ok(digest) => return self.pull(reference, &digest).await.map(Some),
            Err(error @ OciError::Refused { .. }) => return Err(error),
            Err(error) => error,
        };
        let cached = match reference.0.digest() {
            Some(digest) => self.cached(digest),
            None => self.cached_tag(reference),
        };
        match cached {
            Some(pulled) => {
                tracing::warn!(%reference, %error, digest = pulled.digest, "the registry does not answer; using the module last pulled for this reference, from the cache");
                Ok(Some(pulled))
            }
            None => Err(error),
        }
    }

    /// The tag's module if it moved away from `current`, `None` if it did not.
    pub async fn changed(
        &self,
        reference: &OciReference,
        current: &str,
    ) -> Result<Option<Pulled>, OciError> {
        let digest = self.resolve(reference).await?;
        if digest == current {
            return Ok(None);
        }
        tracing::info!(%reference, from = current, to = digest, "the tag moved; pulling");
        self.pull(reference, &digest).await.map(Some)
    }

    /// The manifest digest a reference names now.
    async fn resolve(&self, reference: &OciReference) -> Result<String, OciError> {
        let image = &reference.0;
        self.client
            .fetch_manifest_digest(image, &self.auth(image))
            .await
            .map_err(|e| registry_error("resolving", reference, e))
    }

    /// The module of one manifest: from the cache if it holds it, else pulled, checked and cached.
    pub async fn pull(&self, reference: &OciReference, digest: &str) -> Result<Pulled, OciError> {
        let cache = self.cache.as_ref();
        if let Some(pulled) = self.cached(digest) {
            let bytes = pulled.bytes.len();
            tracing::info!(%reference, digest, bytes, "module found in the cache");
            self.remember_tag(reference, digest);
            return Ok(pulled);
        }
        let image = Reference::with_digest(
            reference.0.registry().to_string(),
            reference.0.repository().to_string(),
            digest.to_string(),
        );
        let auth = self.auth(&image);
        let started = std::time::Instant::now();
        let (manifest, _) = self
            .client
            .pull_image_manifest(&image, &auth)
            .await
            .map_err(|e| registry_error("pulling the manifest of", reference, e))?;
        let layer = wasm_layer(reference, &manifest.layers)?;
        let bytes = match cache.and_then(|c| c.blob(&layer.digest)) {
            Some(bytes) => bytes,
            None => {
                let mut bytes = Vec::with_capacity(layer.size.max(0) as usize);
                self.client
                    .pull_blob(&image, layer, &mut bytes)
                    .await
                    .map_err(|e| match e {
                        OciDistributionError::DigestError(_) => OciError::DigestMismatch {
                            reference: reference.to_string(),
                            expected: layer.digest.clone(),
                            actual: sha256(&bytes),
                        },
                        e => registry_error("pulling the wasm layer of", reference, e),
                    })?;
                // The client checks the digest too; this check does not depend on it.
                let actual = sha256(&bytes);
                if actual != layer.digest {
                    return Err(OciError::DigestMismatch {
                        reference: reference.to_string(),
                        expected: layer.digest.clone(),
                        actual,
                    });
                }
                if let Some(cache) = cache {
                    cache.store_blob(&layer.digest, &bytes);
                }
                bytes
            }
        };
        if let Some(cache) = cache {
            cache.store_layer_of(digest, &layer.digest);
        }
        self.remember_tag(reference, digest);
        tracing::info!(%reference, digest, layer = layer.digest, bytes = bytes.len(), elapsed_ms = started.elapsed().as_millis() as u64, "module pulled");
        Ok(Pulled {
            digest: digest.to_string(),
            bytes,
        })
    }

    fn remember_tag(&self, reference: &OciReference, digest: &str) {
        if let (Some(cache), false) = (&self.cache, reference.is_digest()) {
            cache.store_tag(&reference.to_string(), digest);
        }
    }

    /// The module the tag had at the last pull, if the cache holds it.
    fn cached_tag(&self, reference: &OciReference) -> Option<Pulled> {
        let digest = self.cache.as_ref()?.tag(&reference.to_string())?;
        self.cached(&digest)
    }

    /// The module of manifest `digest`, if the cache holds it.
    fn cached(&self, digest: &str) -> Option<Pulled> {
        let cache = self.cache.as_ref()?;
        let bytes = cache.blob(&cache.layer_of(digest)?)?;
        Some(Pulled {
            digest: digest.to_string(),
            bytes,
        })
    }
}

/// The one wasm layer of a manifest.
fn wasm_layer<'m>(
    reference: &OciReference,
    layers: &'m [OciDescriptor],
) -> Result<&'m OciDescriptor, OciError> {
    let wasm: Vec<&OciDescriptor> = layers
        .iter()
        .filter(|l| [WASM_LAYER_MEDIA_TYPE, LEGACY_WASM_LAYER_MEDIA_TYPE].contains(&&*l.media_type))
        .collect();
    match wasm.as_slice() {
        [layer] if layer.size < 0 || layer.size as u64 > MAX_MODULE_BYTES => {
            Err(OciError::TooLarge {
                reference: reference.to_string(),
                size: layer.size,
            })
        }
        [layer] => Ok(layer),
        [] => Err(OciError::NoWasmLayer {
            reference: reference.to_string(),
            found: layers.iter().map(|l| l.media_type.clone()).collect(),
        }),
        several => Err(OciError::SeveralWasmLayers {
            reference: reference.to_string(),
            count: several.len(),
        }),
    }
}

pub(super) fn registry_error(
    action: &'static str,
    reference: &OciReference,
    error: OciDistributionError,
) -> OciError {
    let hint = match error {
        OciDistributionError::UnauthorizedError { .. } => {
            " (the registry wants credentials the host was not given: see --oci-credentials, or the reconciler's pull Secret)"
        }
        _ => "",
    };
    let (reference, reason) = (reference.to_string(), format!("{}{hint}", chain(&error)));
    if refuses_credentials(&error) {
        OciError::Refused {
            action,
            reference,
            reason,
        }
    } else {
        OciError::Registry {
            action,
            reference,
            reason,
        }
    }
}

/// Whether the registry answered that these credentials may not pull (401 or 403, however the client
/// surfaced it), as opposed to not answering or failing otherwise.
fn refuses_credentials(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => true,
        OciDistributionError::ServerError { code, .. } => matches!(code, 401 | 403),
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|e| matches!(e.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)),
        _ => false,
    }
}

fn display(path: Option<&Path>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
}

/// Each certificate of a PEM file.
fn read_certificates(path: &Path) -> Result<Vec<Certificate>, OciError> {
    let error = |reason: String| OciError::CaFile {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    const END: &str = "-----END CERTIFICATE-----";
    let certificates: Vec<Certificate> = text
        .split_inclusive(END)
        .filter(|block| block.contains(END))
        .map(|block| Certificate {
            encoding: CertificateEncoding::Pem,
            data: block.trim_start().as_bytes().to_vec(),
        })
        .collect();
    if certificates.is_empty() {
        return Err(error("no PEM certificate in it".into()));
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_bounded_wasm_layer_is_taken() {
        let reference: OciReference = "oci://r.io/m:v1".parse().unwrap();
        let layer = |media_type: &str, size| OciDescriptor {
            media_type: media_type.into(),
            size,
            ..OciDescriptor::default()
        };
        let tar = layer("application/vnd.oci.image.layer.v1.tar", 10);
        let wasm = layer(WASM_LAYER_MEDIA_TYPE, 10);
        let legacy = layer(LEGACY_WASM_LAYER_MEDIA_TYPE, 10);
        let huge = layer(WASM_LAYER_MEDIA_TYPE, 1 << 40);
        assert!(wasm_layer(&reference, &[tar.clone(), wasm.clone()]).is_ok());
        assert!(wasm_layer(&reference, std::slice::from_ref(&legacy)).is_ok());
        let err =
            |layers: &[OciDescriptor]| wasm_layer(&reference, layers).unwrap_err().to_string();
        assert!(err(std::slice::from_ref(&tar)).contains("no wasm layer"));
        assert!(err(&[wasm, legacy]).contains("2 wasm layers"));
        assert!(err(&[huge]).contains("more than"));
    }
}

#[cfg(test)]
mod fuzz_tests {
    use oci_client::manifest::OciImageManifest;
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;

    /// The fields of an image manifest, for the fuzz target's objects.
    const MANIFEST_KEYS: &[&str] = &[
        "schemaVersion",
        "mediaType",
        "config",
        "layers",
        "digest",
        "size",
        "annotations",
        "urls",
        "artifactType",
    ];

    /// A manifest's layer list: mostly of the media types that matter, with any size.
    fn layers() -> impl Strategy<Value = Vec<Value>> {
        let media_type = prop_oneof![
            Just(WASM_LAYER_MEDIA_TYPE.to_string()),
            Just(LEGACY_WASM_LAYER_MEDIA_TYPE.to_string()),
            crate::fuzz::text("a-z./+-"),
        ];
        let layer = (media_type, any::<i64>(), crate::fuzz::text("a-f0-9:sha"))
            .prop_map(|(media_type, size, digest)| {
                serde_json::json!({"mediaType": media_type, "size": size, "digest": digest})
            });
        proptest::collection::vec(layer, 0..4)
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any manifest the client parses gives one bounded wasm layer or a clear refusal: the host
        /// never sizes a download by a size it did not bound.
        #[test]
        fn fuzz_manifests_give_one_bounded_wasm_layer_or_refuse(
            mut manifest in crate::fuzz::object(MANIFEST_KEYS),
            layers in layers(),
            structured in any::<bool>(),
        ) {
            if structured {
                manifest["schemaVersion"] = 2.into();
                manifest["config"] = serde_json::json!({
                    "mediaType": crate::source::oci::WASM_CONFIG_MEDIA_TYPE,
                    "digest": "sha256:00", "size": 2,
                });
                manifest["layers"] = Value::Array(layers);
            }
            let Ok(manifest) = serde_json::from_value::<OciImageManifest>(manifest) else {
                return Ok(());
            };
            let reference: OciReference = "oci://r.io/m:v1".parse().unwrap();
            if let Ok(layer) = wasm_layer(&reference, &manifest.layers) {
                prop_assert!(layer.size >= 0 && layer.size as u64 <= MAX_MODULE_BYTES);
                prop_assert!(
                    [WASM_LAYER_MEDIA_TYPE, LEGACY_WASM_LAYER_MEDIA_TYPE].contains(&&*layer.media_type)
                );
            }
        }
    }
}
