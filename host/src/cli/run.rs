//! The flags of `run`, turned into the reconciler's [`RunOptions`].

use clap::Args;

use super::{
    ConversionArgs, CredentialsArgs, HostArgs, NameArgs, OciArgs, PolicyArgs, RuntimeArgs,
    SelectionArgs, UpdateArgs,
};
use crate::controller::Settings;
use crate::identity::{Identity, LEASE_PREFIX};
use crate::kind::Gvk;
use crate::lease;
use crate::reconciler::RunOptions;
use crate::shard::ShardSettings;
use crate::source::{ConfigMapRef, ModuleLocation, ModuleSource};

#[derive(Debug, Args)]
#[group(id = "module-source", required = true, multiple = false)]
pub struct RunArgs {
    /// The parent kind to watch, GROUP/VERSION/KIND, e.g. example.com/v1alpha1/MyApp.
    #[arg(long, env = "RECONCILE_HOST_PARENT")]
    pub parent: Gvk,
    /// A child kind the guest may create, GROUP/VERSION/KIND (repeatable; env: comma-separated).
    #[arg(
        long = "child",
        env = "RECONCILE_HOST_CHILDREN",
        value_delimiter = ',',
        required = true
    )]
    pub children: Vec<Gvk>,
    /// A kind the guest may read as related objects, GROUP/VERSION/KIND (repeatable; env:
    /// comma-separated). Each is watched (the host needs get, list and watch on it); a module's
    /// selector of another kind is refused on its parent.
    #[arg(
        long = "related",
        env = "RECONCILE_HOST_RELATED",
        value_delimiter = ','
    )]
    pub related: Vec<Gvk>,
    /// The reconciler component: a .wasm file (typically a mounted ConfigMap), watched; or
    /// `oci://REGISTRY/REPOSITORY:TAG` (polled) or `@sha256:DIGEST` in a registry. Hot-swapped.
    #[arg(long, env = "RECONCILE_HOST_MODULE", group = "module-source")]
    pub module: Option<ModuleLocation>,
    /// The reconciler component in a ConfigMap's binaryData (raw or gzip), NAMESPACE/NAME[/KEY];
    /// watched through the API and hot-swapped.
    #[arg(long, env = "RECONCILE_HOST_MODULE_CONFIGMAP", group = "module-source")]
    pub module_configmap: Option<ConfigMapRef>,
    /// A finalizer to hold parents until the guest answers `finalized` during deletion.
    #[arg(long, env = "RECONCILE_HOST_FINALIZER")]
    pub finalizer: Option<String>,
    /// Parents reconciled at once.
    #[arg(long, env = "RECONCILE_HOST_CONCURRENCY", default_value_t = 16)]
    pub concurrency: u16,
    #[command(flatten)]
    pub host: HostArgs,
    /// Namespace of the Lease (default: POD_NAMESPACE, else `default`).
    #[arg(long, env = "RECONCILE_HOST_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease (default: reconcile-host-<name>, see `--name`).
    #[arg(long, env = "RECONCILE_HOST_LEADER_ELECTION_ID")]
    pub leader_election_id: Option<String>,
    /// Only parents in this namespace (default: all namespaces).
    #[arg(long, env = "RECONCILE_HOST_NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub name: NameArgs,
    /// A candidate module (a .wasm file or an `oci://` reference) called beside the active one on
    /// every reconcile and never applied; where it answers differently, the parent gets a
    /// `ShadowDiffers` Event. Watched and hot-swapped like `--module`.
    #[arg(long, env = "RECONCILE_HOST_SHADOW_MODULE")]
    pub shadow_module: Option<ModuleLocation>,
    /// The candidate module in a ConfigMap's binaryData, NAMESPACE/NAME[/KEY] (see `--shadow-module`).
    #[arg(
        long,
        env = "RECONCILE_HOST_SHADOW_MODULE_CONFIGMAP",
        conflicts_with = "shadow_module"
    )]
    pub shadow_module_configmap: Option<ConfigMapRef>,
    #[command(flatten)]
    pub updates: UpdateArgs,
    #[command(flatten)]
    pub selection: SelectionArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub conversion: ConversionArgs,
    #[command(flatten)]
    pub oci: OciArgs,
    #[command(flatten)]
    pub oci_credentials: CredentialsArgs,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

impl RunArgs {
    pub fn settings(&self) -> Settings {
        let selection = (&self.selection).into();
        Settings {
            identity: self.name.identity(&self.parent, &selection),
            parent: self.parent.clone(),
            children: self.children.clone(),
            updates: self.updates.updates.clone(),
            related: self.related.clone(),
            namespace: self.namespace.clone(),
            finalizer: self.finalizer.clone(),
            concurrency: self.concurrency,
            resync_period: self.policy.period(),
            adopt_orphans: self.policy.adopt_orphans,
            selection,
        }
    }

    /// What the controller runs with: the module sources resolved with the registry settings and
    /// credentials, the election named.
    pub fn options(&self) -> RunOptions {
        let settings = self.settings();
        let oci = self.oci.settings();
        let of = |location| {
            let credentials = self.oci_credentials.credentials();
            let cache_dir = self.runtime.cache_dir.as_deref();
            ModuleSource::of(location, &oci, credentials, cache_dir)
        };
        let source = match (&self.module, &self.module_configmap) {
            (Some(location), _) => of(location),
            (None, Some(cm)) => ModuleSource::ConfigMap(cm.clone()),
            (None, None) => unreachable!("clap requires a module source"),
        };
        let shadow_source = match (&self.shadow_module, &self.shadow_module_configmap) {
            (Some(location), _) => Some(of(location)),
            (None, Some(cm)) => Some(ModuleSource::ConfigMap(cm.clone())),
            (None, None) => None,
        };
        let shard = self.host.sharded.then(|| {
            let ring = settings.identity.label().to_string();
            ShardSettings::new(self.lease_namespace(), ring, &lease::identity())
        });
        let election = (self.host.leader_election || self.host.sharded).then(|| {
            lease::Election::leader(
                self.lease_namespace(),
                self.lease(&settings.identity),
                lease::identity(),
            )
        });
        RunOptions {
            settings,
            source,
            shadow_source,
            metrics_addr: self.host.metrics_addr,
            election,
            shard,
            conversion: self.conversion.webhook(),
            runtime: self.runtime.config(),
        }
    }

    /// Where the Leases live: `--leader-election-namespace`, else the Pod's namespace.
    fn lease_namespace(&self) -> String {
        (self.leader_election_namespace.clone()).unwrap_or_else(lease::namespace)
    }

    /// The Lease of the leader election: `--leader-election-id`, else named after the reconciler, so
    /// that two hosts of one kind with different names (decorators) do not contend for one Lease.
    pub(crate) fn lease(&self, identity: &Identity) -> String {
        (self.leader_election_id.clone())
            .unwrap_or_else(|| format!("{LEASE_PREFIX}{}", identity.name()))
    }
}
