//! Compiled artifacts on disk. Compiling is expensive (60 ms for a Rust guest, seconds for JS and
//! Python ones): compile once per module and engine, then a restart maps the artifact in milliseconds.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::compile::Compiled;

/// Artifacts keyed by the module digest and the engine's compatibility hash (wasmtime version and every
/// setting that changes generated code, such as epoch interruption), so a stale artifact is never used.
pub(crate) struct ArtifactCache<'a> {
    dir: PathBuf,
    engine: &'a Engine,
    engine_key: String,
}

impl<'a> ArtifactCache<'a> {
    pub(crate) fn new(dir: &Path, engine: &'a Engine) -> ArtifactCache<'a> {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        ArtifactCache {
            dir: dir.to_path_buf(),
            engine,
            engine_key: format!("{:016x}", hasher.finish()),
        }
    }

    fn path(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir.join(format!("{hex}-{}.cwasm", self.engine_key))
    }

    /// The cached component, or `None` (absent, or refused by wasmtime: then it is recompiled).
    pub(crate) fn load(&self, digest: &str) -> Option<Component> {
        let path = self.path(digest);
        if !path.exists() {
            return None;
        }
        // SAFETY: only files this host wrote (under its own key, renamed into place whole) are loaded,
        // and wasmtime checks the artifact's engine compatibility before using it.
        match unsafe { Component::deserialize_file(self.engine, &path) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %format!("{e:#}"), "ignoring unusable compiled artifact");
                None
            }
        }
    }

    /// Writes the artifact whole (`atomic_file`), so a reader never sees half a file.
    /// A failure only costs a recompile next time, so it is logged, not returned.
    pub(crate) fn store(&self, digest: &str, compiled: &Compiled) {
        let path = self.path(digest);
        let result = (|| -> anyhow::Result<()> {
            let bytes = compiled.artifact().map_err(|e| anyhow::anyhow!("{e:#}"))?;
            crate::atomic_file::write(&path, &bytes)?;
            Ok(())
        })();
        if let Err(e) = result {
            tracing::warn!(path = %path.display(), error = %e, "cannot cache compiled artifact");
        }
    }
}
