//! The `Reconciler` and `ClusterReconciler` objects as the host reads them: their spec, checked and
//! turned into a `Definition` (the settings of one controller, its module source (`module_ref`), the
//! identity it acts as, and its guest limits). Invalid objects are not started; their status says why.

use std::time::Duration;

use kube::api::ApiResource;
use kube::core::{DynamicObject, GroupVersionKind};
use serde::Deserialize;

use super::module_ref::{MODULE_FIELDS, ModuleRef, ModuleSpec, SHADOW_FIELDS};
pub use super::namespaced_name::NamespacedName;
pub use super::spec_error::SpecError;
use crate::controller::{Selection, Settings};
use crate::conversion::SecretRef;
use crate::guest::RuntimeConfig;
use crate::identity::Identity;
use crate::kind::Gvk;
use crate::selector::LabelSelector;
use crate::strategy::{KindStrategy, UpdateStrategy};

/// The API group of the platform's own kinds.
pub const GROUP: &str = "reconcile-host.dev";
pub const VERSION: &str = "v1alpha1";
/// Parents reconciled at once when the spec does not say.
const DEFAULT_CONCURRENCY: u16 = 4;

/// Which of the two kinds an object is: the namespaced one for teams, the cluster-scoped one for admins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    Namespaced,
    Cluster,
}

impl Scope {
    pub fn kind(self) -> &'static str {
        match self {
            Scope::Namespaced => "Reconciler",
            Scope::Cluster => "ClusterReconciler",
        }
    }

    pub fn resource(self) -> ApiResource {
        let plural = match self {
            Scope::Namespaced => "reconcilers",
            Scope::Cluster => "clusterreconcilers",
        };
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(GROUP, VERSION, self.kind()),
            plural,
        )
    }
}

/// Names one reconciler object; its `Display` (`namespace/name`, or `name` for a ClusterReconciler) is
/// the `controller` label of its metrics and the prefix of its logs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub namespace: Option<String>,
    pub name: String,
}

impl Key {
    pub fn of(object: &DynamicObject) -> Key {
        Key {
            namespace: object.metadata.namespace.clone(),
            name: object.metadata.name.clone().unwrap_or_default(),
        }
    }

    pub fn scope(&self) -> Scope {
        match self.namespace {
            Some(_) => Scope::Namespaced,
            None => Scope::Cluster,
        }
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// `spec` of both kinds; the fields that name a namespace exist only on `ClusterReconciler`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    pub parent: KindRef,
    #[serde(default)]
    pub children: Vec<ChildRef>,
    /// The kinds the module may read as related objects (read-only; none: it reads nothing).
    #[serde(default)]
    pub related: Vec<KindRef>,
    pub module: ModuleSpec,
    /// A candidate module called beside `module` and never applied (see `controller::shadow`).
    #[serde(default)]
    pub shadow_module: Option<ModuleSpec>,
    #[serde(default)]
    pub service_account_name: Option<String>,
    /// ClusterReconciler only: the ServiceAccount with its namespace.
    #[serde(default)]
    pub service_account: Option<NamespacedName>,
    #[serde(default)]
    pub finalizer: Option<String>,
    #[serde(default)]
    pub concurrency: Option<u16>,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub reuse_instance_calls: Option<u32>,
    #[serde(default)]
    pub paused: bool,
    /// ClusterReconciler only: where a cluster-scoped parent's children may live, by name.
    #[serde(default)]
    pub child_namespaces: Vec<String>,
    /// ClusterReconciler only: ... and by the namespaces' labels (kubectl syntax).
    #[serde(default)]
    pub child_namespace_selector: Option<String>,
    /// Decorate the parent kind: only parents with these labels (kubectl syntax), no status written.
    #[serde(default)]
    pub parent_selector: Option<String>,
    /// ClusterReconciler only: only the namespaces with these labels (kubectl syntax), for parents and
    /// children alike.
    #[serde(default)]
    pub namespace_selector: Option<String>,
    /// ClusterReconciler only: serve the parent CRD's conversion webhook from the module.
    #[serde(default)]
    pub conversion: Option<ConversionSpec>,
}

/// `spec.conversion`: the parent CRD's versions converted by the module, on the platform's webhook
/// port at `/convert/<reconciler name>`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversionSpec {
    /// The Secret, in the ServiceAccount's namespace, where the host keeps the webhook's CA and
    /// certificate (as the ServiceAccount); default `<reconciler name>-conversion-tls`.
    #[serde(default)]
    pub certificate_secret: Option<String>,
}

/// A child kind, with its update strategy (none: `InPlace`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ChildRef {
    #[serde(flatten)]
    pub kind: KindRef,
    #[serde(default)]
    pub update_strategy: Option<UpdateStrategy>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KindRef {
    pub api_version: String,
    pub kind: String,
}

/// Per-call guest limits; unset ones take the host's defaults (and none may exceed the host's memory).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    #[serde(rename = "memoryMiB", default)]
    pub memory_mib: Option<usize>,
    #[serde(rename = "maxOutputKiB", default)]
    pub max_output_kib: Option<usize>,
}

/// Everything needed to start one reconciler's controller.
#[derive(Clone, Debug, PartialEq)]
pub struct Definition {
    pub settings: Settings,
    pub module: ModuleRef,
    pub shadow_module: Option<ModuleRef>,
    /// `system:serviceaccount:<namespace>:<name>`: every API call of the reconciler is made as it.
    pub user: String,
    /// The Secret of the parent CRD's conversion webhook certificate, if the module converts.
    pub conversion_secret: Option<SecretRef>,
    pub spec: Spec,
}

impl Definition {
    /// Reads and checks `object`'s spec. A namespaced `Reconciler` takes its parents, module and
    /// ServiceAccount from its own namespace and may name no other.
    pub fn read(object: &DynamicObject) -> Result<Definition, SpecError> {
        let key = Key::of(object);
        let spec: Spec =
            serde_json::from_value(object.data.get("spec").cloned().unwrap_or_default())
                .map_err(|e| SpecError::Malformed(e.to_string()))?;
        let parent = gvk(&spec.parent, "parent")?;
        let children = spec
            .children
            .iter()
            .map(|child| gvk(&child.kind, "children"))
            .collect::<Result<Vec<_>, _>>()?;
        if children.is_empty() {
            return Err(SpecError::NoChildren);
        }
        let updates = (spec.children.iter().zip(&children))
            .filter_map(|(child, kind)| {
                let strategy = child.update_strategy.clone()?;
                Some(KindStrategy {
                    kind: kind.clone(),
                    strategy,
                })
            })
            .collect();
        let related = spec
            .related
            .iter()
            .map(|kind| gvk(kind, "related"))
            .collect::<Result<Vec<_>, _>>()?;
        let own = key.namespace.as_deref();
        let module = ModuleRef::read(&spec.module, own, &MODULE_FIELDS)?;
        let shadow_module = match &spec.shadow_module {
            Some(shadow) => Some(ModuleRef::read(shadow, own, &SHADOW_FIELDS)?),
            None => None,
        };
        let (namespace, service_account) = match &key.namespace {
            Some(own) => {
                if spec
                    .service_account
                    .as_ref()
                    .is_some_and(|sa| &sa.namespace != own)
                {
                    return Err(SpecError::ForeignNamespace("serviceAccount.namespace"));
                }
                let name = spec
                    .service_account_name
                    .clone()
                    .or_else(|| spec.service_account.as_ref().map(|sa| sa.name.clone()))
                    .ok_or(SpecError::Missing("serviceAccountName"))?;
                (
                    Some(own.clone()),
                    NamespacedName {
                        namespace: own.clone(),
                        name,
                    },
                )
            }
            None => (
                None,
                spec.service_account
                    .clone()
                    .ok_or(SpecError::Missing("serviceAccount (namespace and name)"))?,
            ),
        };
        let conversion_secret = match (&spec.conversion, own) {
            (None, _) => None,
            (Some(_), Some(_)) => return Err(SpecError::ClusterOnly("conversion")),
            (Some(conversion), None) => Some(SecretRef {
                namespace: service_account.namespace.clone(),
                name: (conversion.certificate_secret.clone())
                    .unwrap_or_else(|| format!("{}-conversion-tls", key.name)),
            }),
        };
        Ok(Definition {
            settings: Settings {
                parent,
                children,
                updates,
                related,
                namespace,
                finalizer: spec.finalizer.clone(),
                concurrency: spec.concurrency.unwrap_or(DEFAULT_CONCURRENCY).max(1),
                // The host's `--resync-period`, set when the reconciler starts.
                resync_period: None,
                // The host's `--adopt-orphans`, likewise.
                adopt_orphans: false,
                selection: selection(&spec, own)?,
                identity: match &key.namespace {
                    Some(namespace) => Identity::reconciler(namespace, &key.name),
                    None => Identity::cluster_reconciler(&key.name),
                },
            },
            module,
            shadow_module,
            user: format!(
                "system:serviceaccount:{}:{}",
                service_account.namespace, service_account.name
            ),
            conversion_secret,
            spec,
        })
    }

    /// The host's defaults with this reconciler's limits on top.
    pub fn runtime_config(&self, defaults: &RuntimeConfig) -> RuntimeConfig {
        let limits = &self.spec.limits;
        let mut config = defaults.clone();
        if let Some(ms) = limits.deadline_ms {
            config = config.deadline(Duration::from_millis(ms));
        }
        if let Some(mib) = limits.memory_mib {
            config = config.memory_limit(mib << 20);
        }
        if let Some(kib) = limits.max_output_kib {
            config = config.max_output_bytes(kib << 10);
        }
        if let Some(calls) = self.spec.reuse_instance_calls {
            config = config.reuse_instance_calls(calls);
        }
        config
    }
}

/// Which parents the reconciler takes and where their children may live. Only a ClusterReconciler may
/// name namespaces (a namespaced one keeps children in its own, and takes no cluster-scoped parent).
fn selection(spec: &Spec, own: Option<&str>) -> Result<Selection, SpecError> {
    if own.is_some() {
        if !spec.child_namespaces.is_empty() {
            return Err(SpecError::ForeignNamespace("childNamespaces"));
        }
        if spec.child_namespace_selector.is_some() {
            return Err(SpecError::ForeignNamespace("childNamespaceSelector"));
        }
        if spec.namespace_selector.is_some() {
            return Err(SpecError::ForeignNamespace("namespaceSelector"));
        }
    }
    let parse = |text: &Option<String>, field| {
        text.as_deref()
            .map(|text| text.parse::<LabelSelector>())
            .transpose()
            .map_err(|error| SpecError::Selector { field, error })
    };
    Ok(Selection {
        child_namespaces: spec.child_namespaces.clone(),
        child_namespace_selector: parse(&spec.child_namespace_selector, "childNamespaceSelector")?,
        parent_selector: parse(&spec.parent_selector, "parentSelector")?,
        namespace_selector: parse(&spec.namespace_selector, "namespaceSelector")?,
    })
}

fn gvk(kind: &KindRef, field: &'static str) -> Result<Gvk, SpecError> {
    format!("{}/{}", kind.api_version, kind.kind)
        .parse()
        .map_err(|_| SpecError::Kind {
            field,
            value: format!("{}/{}", kind.api_version, kind.kind),
        })
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
