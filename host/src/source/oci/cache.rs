//! Pulled modules on disk, under `<cache-dir>/oci/`, so that a restart pulls nothing: wasm layers by
//! digest (`blobs/`, checked again when read), which layer each manifest holds (`manifests/`; both are
//! content-addressed, so never stale), and the digest each tag had at its last pull (`tags/`, used only
//! when the registry does not answer at start). Failures to write are logged, never fatal: the cache
//! only saves pulls.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::digest::sha256;

#[derive(Clone, Debug)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    pub fn new(cache_dir: &Path) -> Cache {
        Cache {
            root: cache_dir.join("oci"),
        }
    }

    /// A cached layer, if its bytes still match its digest (a damaged file is removed).
    pub fn blob(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.path("blobs", digest)?;
        let bytes = std::fs::read(&path).ok()?;
        if sha256(&bytes) != digest {
            tracing::warn!(path = %path.display(), "cached module does not match its digest; removed");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(bytes)
    }

    pub fn store_blob(&self, digest: &str, bytes: &[u8]) {
        if let Some(path) = self.path("blobs", digest) {
            write(&path, bytes);
        }
    }

    /// The wasm layer digest of a manifest pulled before.
    pub fn layer_of(&self, manifest: &str) -> Option<String> {
        read_digest(&self.path("manifests", manifest)?)
    }

    pub fn store_layer_of(&self, manifest: &str, layer: &str) {
        if let Some(path) = self.path("manifests", manifest) {
            write(&path, layer.as_bytes());
        }
    }

    /// The manifest digest a tag (`oci://...:TAG`) had at its last pull.
    pub fn tag(&self, reference: &str) -> Option<String> {
        read_digest(&self.tag_path(reference))
    }

    pub fn store_tag(&self, reference: &str, manifest: &str) {
        write(&self.tag_path(reference), manifest.as_bytes());
    }

    fn tag_path(&self, reference: &str) -> PathBuf {
        self.root
            .join("tags")
            .join(format!("{:x}", Sha256::digest(reference.as_bytes())))
    }

    /// `<root>/<kind>/<algorithm>/<hex>`; `None` for a digest that is not `algorithm:hex` (it comes
    /// from a registry and must not name another path).
    fn path(&self, kind: &str, digest: &str) -> Option<PathBuf> {
        let (algorithm, hex) = digest.split_once(':')?;
        let valid = |s: &str, extra: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || extra.contains(c))
        };
        (valid(algorithm, "+._-") && valid(hex, ""))
            .then(|| self.root.join(kind).join(algorithm).join(hex))
    }
}

fn read_digest(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.trim().to_string()).filter(|d| d.contains(':'))
}

/// Writes whole (`atomic_file`): a reader never sees half a file.
fn write(path: &Path, bytes: &[u8]) {
    if let Err(e) = crate::atomic_file::write(path, bytes) {
        tracing::warn!(path = %path.display(), error = %e, "cannot write to the module cache");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_kept_by_digest_and_checked_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let bytes = b"\0asm module".to_vec();
        let digest = sha256(&bytes);
        cache.store_blob(&digest, &bytes);
        assert_eq!(cache.blob(&digest), Some(bytes));
        cache.store_layer_of("sha256:aa", &digest);
        assert_eq!(cache.layer_of("sha256:aa"), Some(digest.clone()));
        cache.store_tag("oci://r.io/m:v1", "sha256:aa");
        assert_eq!(cache.tag("oci://r.io/m:v1").as_deref(), Some("sha256:aa"));
        assert_eq!(cache.tag("oci://r.io/m:v2"), None);

        let path = cache.path("blobs", &digest).unwrap();
        std::fs::write(&path, b"damaged").unwrap();
        assert_eq!(cache.blob(&digest), None);
        assert!(!path.exists());
        assert_eq!(cache.path("blobs", "sha256:../../etc"), None);
        assert_eq!(cache.path("blobs", "nodigest"), None);
    }
}
