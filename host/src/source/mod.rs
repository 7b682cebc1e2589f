//! Where the reconciler module comes from, and how a new version is noticed: a mounted file (a ConfigMap
//! volume or any other), a ConfigMap read through the API, or an OCI registry (`oci://`, polled). Each
//! source yields the module's bytes whenever they change; `crate::reconciler`'s follow compiles and swaps
//! them in.

mod configmap;
mod file;
mod load;
pub mod oci;
mod update;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use futures::stream::BoxStream;

pub use configmap::ConfigMapRef;
pub use load::{ModuleProblem, load};
use oci::{Credentials, OciReference, OciSettings, OciSource};
pub use update::Update;

#[derive(Clone, Debug)]
pub enum ModuleSource {
    File(PathBuf),
    ConfigMap(ConfigMapRef),
    Oci(Arc<OciSource>),
}

/// What `--module` names: a file, or `oci://REGISTRY/REPOSITORY:TAG` (or `@sha256:DIGEST`).
#[derive(Clone, Debug, PartialEq)]
pub enum ModuleLocation {
    File(PathBuf),
    Oci(OciReference),
}

impl FromStr for ModuleLocation {
    type Err = String;

    fn from_str(s: &str) -> Result<ModuleLocation, String> {
        if s.starts_with(oci::SCHEME) {
            s.parse()
                .map(ModuleLocation::Oci)
                .map_err(|e| e.to_string())
        } else {
            Ok(ModuleLocation::File(PathBuf::from(s)))
        }
    }
}

impl ModuleSource {
    /// The source of a location, with the registry settings, credentials and module cache an `oci://`
    /// one uses.
    pub fn of(
        location: &ModuleLocation,
        oci: &OciSettings,
        credentials: Credentials,
        cache_dir: Option<&std::path::Path>,
    ) -> ModuleSource {
        match location {
            ModuleLocation::File(path) => ModuleSource::File(path.clone()),
            ModuleLocation::Oci(reference) => ModuleSource::Oci(Arc::new(OciSource {
                reference: reference.clone(),
                transport: oci.transport.clone(),
                credentials,
                poll_interval: oci.poll_interval,
                cache_dir: cache_dir.map(PathBuf::from),
            })),
        }
    }

    /// Every version of the module, starting with the current one.
    pub fn updates(&self, client: Option<kube::Client>) -> BoxStream<'static, Update> {
        match self {
            ModuleSource::File(path) => file::updates(path.clone()),
            ModuleSource::ConfigMap(cm) => configmap::updates(
                client.expect("a ConfigMap source needs a client"),
                cm.clone(),
            ),
            ModuleSource::Oci(source) => oci::updates(source.clone()),
        }
    }
}

impl std::fmt::Display for ModuleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModuleSource::File(path) => write!(f, "file {}", path.display()),
            ModuleSource::ConfigMap(cm) => write!(f, "ConfigMap {cm}"),
            ModuleSource::Oci(source) => source.fmt(f),
        }
    }
}

impl FromStr for ConfigMapRef {
    type Err = String;

    fn from_str(s: &str) -> Result<ConfigMapRef, String> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [namespace, name] | [namespace, name, _]
                if !namespace.is_empty() && !name.is_empty() =>
            {
                Ok(ConfigMapRef {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                    key: parts.get(2).map(|k| k.to_string()),
                })
            }
            _ => Err(format!("`{s}` is not NAMESPACE/NAME[/KEY]")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_location_is_a_registry_reference_only_with_the_oci_scheme() {
        assert_eq!(
            "myapp.wasm".parse::<ModuleLocation>().unwrap(),
            ModuleLocation::File("myapp.wasm".into())
        );
        assert!(matches!(
            "oci://registry.example.com/team/myapp:v1".parse::<ModuleLocation>(),
            Ok(ModuleLocation::Oci(_))
        ));
        let error = "oci://myapp".parse::<ModuleLocation>().unwrap_err();
        assert!(error.contains("name the registry host"), "{error}");
    }
}
