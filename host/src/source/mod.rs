//! Where the reconciler module comes from, and how a new version is noticed: a mounted file (a ConfigMap
//! volume or any other) or a ConfigMap read through the API. Each source yields the module's bytes
//! whenever they change; `crate::controller::swap` compiles and swaps them in.

mod configmap;
mod file;

use std::path::PathBuf;
use std::str::FromStr;

use futures::stream::BoxStream;

pub use configmap::ConfigMapRef;

/// The bytes of a module version, or why the source could not produce one.
pub type Update = Result<Vec<u8>, String>;

#[derive(Clone, Debug)]
pub enum ModuleSource {
    File(PathBuf),
    ConfigMap(ConfigMapRef),
}

impl ModuleSource {
    /// Every version of the module, starting with the current one.
    pub fn updates(&self, client: Option<kube::Client>) -> BoxStream<'static, Update> {
        match self {
            ModuleSource::File(path) => file::updates(path.clone()),
            ModuleSource::ConfigMap(cm) => configmap::updates(
                client.expect("a ConfigMap source needs a client"),
                cm.clone(),
            ),
        }
    }
}

impl std::fmt::Display for ModuleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModuleSource::File(path) => write!(f, "file {}", path.display()),
            ModuleSource::ConfigMap(cm) => write!(f, "ConfigMap {cm}"),
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
