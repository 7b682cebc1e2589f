//! The flags of `plan`, turned into its [`PlanOptions`]: the kind flags of `run`, or a reconciler
//! object to plan as.

use std::path::PathBuf;

use clap::Args;

use super::value::one_of;
use super::{NameArgs, RuntimeArgs, SelectionArgs, UpdateArgs};
use crate::controller::Settings;
use crate::kind::Gvk;
use crate::plan::{PlanOptions, PlanTarget, parse_namespaced};
use crate::platform::spec::{Key, NamespacedName};
use crate::text::OutputFormat;

#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("reconciler_object")
        .args(["reconciler", "cluster_reconciler"])
        .conflicts_with_all([
            "parent",
            "children",
            "updates",
            "related",
            "namespace",
            "child_namespaces",
            "child_namespace_selector",
            "parent_selector",
            "namespace_selector",
        ]),
))]
pub struct PlanArgs {
    /// The candidate reconciler component (.wasm).
    #[arg(long, short = 'm')]
    pub module: PathBuf,
    /// Plan as the `Reconciler` NAMESPACE/NAME runs on the platform: its parent kind, children,
    /// related kinds, selection and limits come from the object, and every read and dry-run is made as
    /// its ServiceAccount (impersonated, as `serve` does: the caller needs `impersonate` on it).
    /// `--module` stays the candidate.
    #[arg(long, value_name = "NAMESPACE/NAME", value_parser = parse_namespaced)]
    pub reconciler: Option<NamespacedName>,
    /// Plan as the `ClusterReconciler` NAME runs (see --reconciler).
    #[arg(long, value_name = "NAME")]
    pub cluster_reconciler: Option<String>,
    /// The parent kind, GROUP/VERSION/KIND, as the host runs it.
    #[arg(long, required_unless_present = "reconciler_object")]
    pub parent: Option<Gvk>,
    /// A child kind the guest may create, GROUP/VERSION/KIND (repeatable), as the host runs it.
    #[arg(long = "child", required_unless_present = "reconciler_object")]
    pub children: Vec<Gvk>,
    /// A kind the module may read as related objects, GROUP/VERSION/KIND (repeatable), as the host
    /// runs it: each is listed once, and the module's `related` selects from it as from the host's cache.
    #[arg(long = "related")]
    pub related: Vec<Gvk>,
    /// Only parents in this namespace (default: all namespaces).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Plan as a host running with `--adopt-orphans` would act.
    #[arg(long)]
    pub adopt_orphans: bool,
    /// Exit with 3 when any parent would change (default: only failures, exit 2, gate).
    #[arg(long)]
    pub fail_on_change: bool,
    #[arg(long, short = 'o', default_value = "yaml", value_parser = one_of::<OutputFormat>(&OutputFormat::NAMES))]
    pub output: OutputFormat,
    /// Where a cluster-scoped parent's children may live, and which parents a decorator takes, as
    /// the host runs it.
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// The reconciler's name, as the host runs it: the plan sees the children that carry it.
    #[command(flatten)]
    pub name: NameArgs,
    /// The child kinds' update strategies, as the host runs them.
    #[command(flatten)]
    pub updates: UpdateArgs,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

impl PlanArgs {
    /// The reconciler object to plan as, if one is named.
    pub(crate) fn reconciler_key(&self) -> Option<Key> {
        let namespaced = self.reconciler.as_ref().map(|r| Key {
            namespace: Some(r.namespace.clone()),
            name: r.name.clone(),
        });
        let cluster = self.cluster_reconciler.as_ref().map(|name| Key {
            namespace: None,
            name: name.clone(),
        });
        namespaced.or(cluster)
    }

    pub fn options(&self) -> PlanOptions {
        let target = match self.reconciler_key() {
            Some(key) => PlanTarget::Reconciler(key),
            None => PlanTarget::Settings(Box::new(self.settings())),
        };
        PlanOptions {
            module: self.module.clone(),
            target,
            adopt_orphans: self.adopt_orphans,
            fail_on_change: self.fail_on_change,
            output: self.output,
            runtime: self.runtime.config(),
        }
    }

    /// The settings the flags describe (without `--reconciler`; clap requires `--parent` then).
    fn settings(&self) -> Settings {
        let parent = self.parent.clone().expect("clap requires --parent");
        let selection = (&self.selection).into();
        Settings {
            identity: self.name.identity(&parent, &selection),
            parent,
            children: self.children.clone(),
            updates: self.updates.updates.clone(),
            related: self.related.clone(),
            namespace: self.namespace.clone(),
            finalizer: None,
            concurrency: 1,
            resync_period: None,
            adopt_orphans: self.adopt_orphans,
            selection,
        }
    }
}
