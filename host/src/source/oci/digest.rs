//! The digest that names a blob in a registry and in the cache.

use sha2::{Digest, Sha256};

/// `sha256:` and the hex of the SHA-256 of `bytes`, as a registry names a blob.
pub(super) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}
