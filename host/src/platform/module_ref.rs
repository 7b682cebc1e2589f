//! Where a reconciler's module (and shadow module) comes from: a ConfigMap, or an OCI registry
//! (`oci://`) with an optional pull Secret. Exactly one of the two; a namespaced `Reconciler` names only
//! objects of its own namespace. The pull Secret is read by the reconciler's own impersonating client,
//! so a team's Secret is read with the team's rights and the host needs no right to read Secrets.
//!
//! Pulled layers are cached on disk per credentials: a module pulled with a Secret lands in that
//! Secret's partition, and a reconciler reaches it only after reading that same Secret as its own
//! ServiceAccount (which is what pulling it would take); anonymous pulls are kept per namespace. So no
//! team is handed, from the cache, a module it could not pull itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::namespaced_name::NamespacedName;
use super::spec_error::SpecError;
use crate::source::oci::{Credentials, OciReference, OciSettings, OciSource};
use crate::source::{ConfigMapRef, ModuleSource};
use crate::validate::check_name;

/// `spec.module` and `spec.shadowModule`: exactly one of `configMap` and `oci`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModuleSpec {
    #[serde(default)]
    pub config_map: Option<ConfigMapSpec>,
    #[serde(default)]
    pub oci: Option<OciSpec>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct ConfigMapSpec {
    pub name: String,
    /// ClusterReconciler only.
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub key: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OciSpec {
    /// `oci://REGISTRY/REPOSITORY:TAG` (polled) or `...@sha256:DIGEST`.
    pub reference: String,
    /// Reconciler: a dockerconfigjson Secret of its own namespace.
    #[serde(default)]
    pub pull_secret_name: Option<String>,
    /// ClusterReconciler: the Secret with its namespace.
    #[serde(default)]
    pub pull_secret: Option<NamespacedName>,
}

/// A checked module reference, part of a reconciler's `Definition`.
#[derive(Clone, Debug, PartialEq)]
pub enum ModuleRef {
    ConfigMap(ConfigMapRef),
    Oci {
        reference: OciReference,
        pull_secret: Option<NamespacedName>,
    },
}

/// The spec fields a module reference is reported by.
pub(super) struct ModuleFields {
    module: &'static str,
    config_map_namespace: &'static str,
    config_map_name: &'static str,
    reference: &'static str,
    pull_secret_name: &'static str,
    oci: &'static str,
    pull_secret_namespace: &'static str,
}

/// The fields under `$prefix` (`module` or `shadowModule`), spelled out at compile time: `SpecError`
/// names its field as a `&'static str`.
macro_rules! module_fields {
    ($prefix:literal) => {
        ModuleFields {
            module: $prefix,
            config_map_namespace: concat!($prefix, ".configMap.namespace"),
            config_map_name: concat!($prefix, ".configMap.name"),
            reference: concat!($prefix, ".oci.reference"),
            pull_secret_name: concat!($prefix, ".oci.pullSecretName"),
            oci: concat!($prefix, ".oci"),
            pull_secret_namespace: concat!($prefix, ".oci.pullSecret.namespace"),
        }
    };
}

pub(super) const MODULE_FIELDS: ModuleFields = module_fields!("module");
pub(super) const SHADOW_FIELDS: ModuleFields = module_fields!("shadowModule");

impl ModuleRef {
    /// Checks one module field of a reconciler whose own namespace is `own` (none: a
    /// ClusterReconciler, which names namespaces itself).
    pub(super) fn read(
        spec: &ModuleSpec,
        own: Option<&str>,
        fields: &ModuleFields,
    ) -> Result<ModuleRef, SpecError> {
        match (&spec.config_map, &spec.oci) {
            (Some(cm), None) => config_map_ref(cm, own, fields).map(ModuleRef::ConfigMap),
            (None, Some(oci)) => oci_ref(oci, own, fields),
            _ => Err(SpecError::NotOneModuleSource(fields.module)),
        }
    }

    /// The source that follows this module: a ConfigMap watched as the reconciler, or a registry with
    /// the operator's transport settings and the reconciler's pull Secret, read by `client` (the
    /// reconciler's impersonating client) before each check. `cache_dir`: the host's `--cache-dir`.
    pub fn source(
        &self,
        client: &kube::Client,
        oci: &OciSettings,
        cache_dir: Option<&Path>,
        own: Option<&str>,
    ) -> ModuleSource {
        match self {
            ModuleRef::ConfigMap(cm) => ModuleSource::ConfigMap(cm.clone()),
            ModuleRef::Oci {
                reference,
                pull_secret,
            } => {
                let credentials = match pull_secret {
                    Some(secret) => Credentials::Secret {
                        client: client.clone(),
                        namespace: secret.namespace.clone(),
                        name: secret.name.clone(),
                    },
                    None => Credentials::Anonymous,
                };
                ModuleSource::Oci(Arc::new(OciSource {
                    reference: reference.clone(),
                    transport: oci.transport.clone(),
                    credentials,
                    poll_interval: oci.poll_interval,
                    cache_dir: cache_dir
                        .map(|dir| dir.join(cache_partition(pull_secret.as_ref(), own))),
                }))
            }
        }
    }
}

/// The part of the layer cache a reconciler may use, relative to `--cache-dir`: its pull Secret's
/// (`platform/secrets/NAMESPACE/NAME`), or, without one, its namespace's anonymous pulls
/// (`platform/anonymous/NAMESPACE`, `platform/anonymous/_cluster` for ClusterReconcilers; `_` is in
/// no namespace name). Every part is a checked object name, so none names another path.
pub(super) fn cache_partition(pull_secret: Option<&NamespacedName>, own: Option<&str>) -> PathBuf {
    let platform = Path::new("platform");
    match pull_secret {
        Some(secret) => platform
            .join("secrets")
            .join(&secret.namespace)
            .join(&secret.name),
        None => platform.join("anonymous").join(own.unwrap_or("_cluster")),
    }
}

impl std::fmt::Display for ModuleRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModuleRef::ConfigMap(cm) => cm.fmt(f),
            ModuleRef::Oci {
                reference,
                pull_secret: None,
            } => reference.fmt(f),
            ModuleRef::Oci {
                reference,
                pull_secret: Some(secret),
            } => write!(
                f,
                "{reference} (pull Secret {}/{})",
                secret.namespace, secret.name
            ),
        }
    }
}

/// A module's ConfigMap: in the Reconciler's own namespace (`own`), or, for a ClusterReconciler, in
/// the namespace it names.
fn config_map_ref(
    cm: &ConfigMapSpec,
    own: Option<&str>,
    fields: &ModuleFields,
) -> Result<ConfigMapRef, SpecError> {
    let namespace = match own {
        Some(own) if cm.namespace.as_deref().is_some_and(|ns| ns != own) => {
            return Err(SpecError::ForeignNamespace(fields.config_map_namespace));
        }
        Some(own) => own.to_string(),
        None => cm
            .namespace
            .clone()
            .ok_or(SpecError::Missing(fields.config_map_namespace))?,
    };
    if cm.name.is_empty() {
        return Err(SpecError::Missing(fields.config_map_name));
    }
    Ok(ConfigMapRef {
        namespace,
        name: cm.name.clone(),
        key: cm.key.clone(),
    })
}

/// A registry reference and its pull Secret: a Reconciler's in its own namespace (`pullSecretName`),
/// a ClusterReconciler's wherever it names (`pullSecret`).
fn oci_ref(
    oci: &OciSpec,
    own: Option<&str>,
    fields: &ModuleFields,
) -> Result<ModuleRef, SpecError> {
    let reference = oci
        .reference
        .parse::<OciReference>()
        .map_err(|e| SpecError::Reference {
            field: fields.reference,
            error: e.to_string(),
        })?;
    let pull_secret = match (own, &oci.pull_secret_name, &oci.pull_secret) {
        (_, Some(_), Some(_)) => return Err(SpecError::TwoPullSecrets(fields.oci)),
        (Some(own), Some(name), None) => Some(NamespacedName {
            namespace: own.to_string(),
            name: name.clone(),
        }),
        (Some(own), None, Some(secret)) if secret.namespace != own => {
            return Err(SpecError::ForeignNamespace(fields.pull_secret_namespace));
        }
        (None, Some(_), None) => return Err(SpecError::Missing(fields.pull_secret_namespace)),
        (_, None, secret) => secret.clone(),
    };
    if let Some(secret) = &pull_secret {
        for (field, value) in [
            (fields.pull_secret_namespace, &secret.namespace),
            (fields.pull_secret_name, &secret.name),
        ] {
            check_name(value).map_err(|reason| SpecError::Name {
                field,
                value: value.clone(),
                reason,
            })?;
        }
    }
    Ok(ModuleRef::Oci {
        reference,
        pull_secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(namespace: &str, name: &str) -> NamespacedName {
        NamespacedName {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    #[test]
    fn the_layer_cache_is_partitioned_by_credentials() {
        let a = secret("team-a", "registry");
        let partitions = [
            cache_partition(Some(&a), Some("team-a")),
            cache_partition(Some(&secret("team-b", "registry")), Some("team-b")),
            cache_partition(None, Some("team-a")),
            cache_partition(None, Some("team-b")),
            cache_partition(None, None),
        ];
        let distinct: std::collections::BTreeSet<_> = partitions.iter().collect();
        assert_eq!(distinct.len(), partitions.len(), "{partitions:?}");
        assert_eq!(partitions[0], Path::new("platform/secrets/team-a/registry"));
        // A ClusterReconciler that reads the same Secret shares what that Secret pulled.
        assert_eq!(cache_partition(Some(&a), None), partitions[0]);
    }

    #[tokio::test]
    async fn a_registry_module_is_pulled_with_its_secret_into_its_partition() {
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap()))
                .unwrap();
        let module = ModuleRef::Oci {
            reference: "oci://r.io/team-a/myapp:v1".parse().unwrap(),
            pull_secret: Some(secret("team-a", "registry")),
        };
        let oci = OciSettings {
            transport: Default::default(),
            poll_interval: std::time::Duration::from_secs(5),
        };
        let ModuleSource::Oci(source) =
            module.source(&client, &oci, Some(Path::new("/c")), Some("team-a"))
        else {
            panic!("not a registry source");
        };
        assert_eq!(source.credentials.to_string(), "Secret team-a/registry");
        assert_eq!(
            source.cache_dir.as_deref(),
            Some(Path::new("/c/platform/secrets/team-a/registry"))
        );
        assert_eq!(source.poll_interval, oci.poll_interval);
    }
}
