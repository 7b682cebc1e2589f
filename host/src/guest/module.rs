//! A loaded reconciler module: compiled (or taken from the artifact cache), checked against the world,
//! and pre-instantiated so that each call only has to create a store and an instance.

use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::bindings::{Linked, WORLDS};
use super::cache::ArtifactCache;
use super::engine::Runtime;
use super::error::LoadError;
use super::warm::WarmInstance;

/// The active logic. Linking and type-checking happen once here, not per call: `Linked` is the
/// component with its imports resolved against the world it implements, ready to instantiate in
/// microseconds.
pub struct Module {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) linked: Linked,
    digest: String,
    size: usize,
    /// Instances kept between calls in reuse mode (empty otherwise).
    pub(crate) warm: Mutex<Vec<WarmInstance>>,
}

impl Module {
    /// Compiles `bytes` (or loads the cached artifact for them) and checks that it implements the world.
    pub fn load(runtime: &Arc<Runtime>, bytes: &[u8]) -> Result<Arc<Module>, LoadError> {
        if !wasmparser_is_component(bytes) {
            return Err(LoadError::NotAComponent(describe_header(bytes)));
        }
        let digest = digest_of(bytes);
        let cache = runtime
            .config
            .cache_dir
            .as_deref()
            .map(|dir| ArtifactCache::new(dir, &runtime.engine));
        let component = match cache.as_ref().and_then(|c| c.load(&digest)) {
            Some(component) => component,
            None => {
                let compiled = runtime.config.compiler.compile(&runtime.engine, bytes)?;
                if let Some(cache) = &cache {
                    cache.store(&digest, &compiled);
                }
                compiled.component
            }
        };
        let mismatch = |reasons: Vec<String>| LoadError::WorldMismatch {
            worlds: &WORLDS,
            reason: format!(
                "{}; the component has {}",
                reasons.join("; "),
                describe_world(&component, &runtime.engine)
            ),
        };
        let instance = runtime
            .linker
            .instantiate_pre(&component)
            .map_err(|e| mismatch(vec![format!("{e:#}")]))?;
        let linked = Linked::new(instance).map_err(mismatch)?;
        Ok(Arc::new(Module {
            runtime: runtime.clone(),
            linked,
            digest,
            size: bytes.len(),
            warm: Mutex::new(Vec::new()),
        }))
    }

    /// Reads and loads a module file.
    pub fn load_file(
        runtime: &Arc<Runtime>,
        path: &std::path::Path,
    ) -> Result<Arc<Module>, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Module::load(runtime, &bytes)
    }

    /// `sha256:<hex>` of the module bytes: which logic produced a given state.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The first 12 hex digits of the digest, for labels and annotations.
    pub fn short_digest(&self) -> &str {
        &self.digest["sha256:".len().."sha256:".len() + 12]
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// The contract world the module implements, e.g. `reconcile:guest/reconciler@0.1.0`.
    pub fn world(&self) -> &'static str {
        self.linked.world()
    }

    /// Whether the module exports `convert`, so that it can back a CRD conversion webhook.
    pub fn converts(&self) -> bool {
        self.linked.converts()
    }

    /// Whether the module exports `related`, so that its parents get related objects.
    pub fn relates(&self) -> bool {
        self.linked.relates()
    }
}

/// `sha256:<hex>` of module bytes, the identity of a module version everywhere it is shown.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A component starts with `\0asm`, a version field and layer 1; a core module has layer 0.
fn wasmparser_is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[6..8] == [1, 0]
}

fn describe_header(bytes: &[u8]) -> String {
    if bytes.len() >= 8 && bytes[..4] == *b"\0asm" {
        "it is a core wasm module; build a component (e.g. the wasm32-wasip2 target, wasm32-unknown-unknown linked by wasm-component-ld, or `wasm-tools component new`)".into()
    } else {
        format!(
            "it does not start with the wasm magic bytes ({} bytes)",
            bytes.len()
        )
    }
}

/// Lists what a component imports and exports, to show next to what the world expects.
fn describe_world(component: &Component, engine: &wasmtime::Engine) -> String {
    let ty = component.component_type();
    let imports: Vec<_> = ty
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let exports: Vec<_> = ty
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    format!(
        "imports [{}] and exports [{}]",
        imports.join(", "),
        exports.join(", ")
    )
}

#[cfg(test)]
mod fuzz_tests {
    use std::sync::OnceLock;

    use proptest::prelude::*;

    use super::*;
    use crate::guest::RuntimeConfig;

    fn runtime() -> &'static Arc<Runtime> {
        static RUNTIME: OnceLock<Arc<Runtime>> = OnceLock::new();
        RUNTIME.get_or_init(|| Runtime::new(RuntimeConfig::default().max_instances(2)).unwrap())
    }

    /// Bytes a module source may hand on: anything, or the wasm magic with a component's or a core
    /// module's header and anything after it, so that the compiler's own checks are reached.
    fn module_bytes() -> impl Strategy<Value = Vec<u8>> {
        let tail = proptest::collection::vec(any::<u8>(), 0..512);
        prop_oneof![
            tail.clone(),
            (tail, any::<bool>()).prop_map(|(tail, component)| {
                let layer: &[u8] = if component {
                    &[0x0d, 0x00, 0x01, 0x00]
                } else {
                    &[1, 0, 0, 0]
                };
                [b"\0asm".as_slice(), layer, &tail].concat()
            }),
        ]
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any bytes are a module or a refusal with a reason; the host never panics on them.
        #[test]
        fn fuzz_module_bytes_load_or_are_refused(bytes in module_bytes()) {
            if let Err(error) = Module::load(runtime(), &bytes) {
                prop_assert!(!error.to_string().is_empty());
            }
        }
    }
}
