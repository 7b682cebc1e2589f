//! The flags that describe one reconciler, shared by `run`, `plan` (which must plan as the host acts)
//! and `serve` (the operator's policy for every reconciler).

use std::time::Duration;

use clap::Args;

use crate::controller::Selection;
use crate::identity::{Identity, parse_run_name};
use crate::kind::Gvk;
use crate::selector::LabelSelector;
use crate::strategy::KindStrategy;

/// The name of a `run` reconciler, shared by `run` and `plan` (which must plan as the host acts).
#[derive(Clone, Debug, Args)]
pub struct NameArgs {
    /// This reconciler's name: each child carries it (label `reconcile-host.dev/reconciler`), and the
    /// host watches, prunes and releases only children that carry it, so that two hosts of one parent
    /// kind (two decorators with different selectors) never act on each other's children. Default:
    /// the parent kind, lowercased, and with `--parent-selector` a hash of the selector
    /// (`namespace-1a2b3c4d`). The default Lease is `reconcile-host-<name>`.
    #[arg(long = "name", env = "RECONCILE_HOST_NAME", value_parser = parse_run_name)]
    pub name: Option<String>,
}

impl NameArgs {
    /// The identity of a `run` reconciler of `parent` that takes the parents `selection` selects.
    pub fn identity(&self, parent: &Gvk, selection: &Selection) -> Identity {
        let selector = selection.parent_selector.as_ref();
        let name = (self.name.clone()).unwrap_or_else(|| Identity::run_default(parent, selector));
        Identity::new(name)
    }
}

/// What the host's operator decides for every reconciler, shared by `run` and `serve`.
#[derive(Clone, Debug, Args)]
pub struct PolicyArgs {
    /// Re-run every parent this often (e.g. `10h`, `30m`, `1h30m`; `0` or unset: never). A safety
    /// net for a missed event, like controller-runtime's SyncPeriod: the watches already reconcile
    /// every change, and each resync calls the guest once per parent.
    #[arg(long = "resync-period", env = "RECONCILE_HOST_RESYNC_PERIOD", value_parser = crate::text::parse_period)]
    period: Option<Duration>,
    /// Let a parent adopt an existing object that nothing controls when its guest names it (default:
    /// refuse with `ChildExists`). The risk: any guest can then take over, rewrite and, through the
    /// ownerReference, get garbage-collected every uncontrolled object of its child kinds in its
    /// namespace, such as one a person created by hand.
    #[arg(long, env = "RECONCILE_HOST_ADOPT_ORPHANS")]
    pub adopt_orphans: bool,
}

impl PolicyArgs {
    /// The period, if there is one.
    pub fn period(&self) -> Option<Duration> {
        self.period.filter(|period| !period.is_zero())
    }
}

/// How a changed desired state reaches existing children, per kind; shared by `run` and `plan`.
#[derive(Clone, Debug, Args)]
pub struct UpdateArgs {
    /// The update strategy of a child kind, `KIND=METHOD[,TYPE=STATUS[/REASON]]...[,deadline=D]`
    /// (repeatable; env: `;`-separated), e.g.
    /// `apps/v1/Deployment=RollingInPlace,Available=True,deadline=10m`. METHOD: OnDelete, Recreate,
    /// InPlace (the default), RollingRecreate, RollingInPlace; the conditions are the status checks a
    /// rolling update waits for, the deadline how long (default 10m) before it stops.
    #[arg(
        long = "update-strategy",
        env = "RECONCILE_HOST_UPDATE_STRATEGIES",
        value_delimiter = ';'
    )]
    pub updates: Vec<KindStrategy>,
}

/// The flags of [`Selection`].
#[derive(Clone, Debug, Args)]
pub struct SelectionArgs {
    /// A namespace the children of a cluster-scoped parent may live in (repeatable; env:
    /// comma-separated). Required for a cluster-scoped parent kind other than Namespace; a Namespace
    /// parent without it keeps its children in itself.
    #[arg(
        long = "child-namespace",
        env = "RECONCILE_HOST_CHILD_NAMESPACES",
        value_delimiter = ','
    )]
    pub child_namespaces: Vec<String>,
    /// The children of a cluster-scoped parent may also live in the namespaces carrying these labels
    /// (kubectl syntax, e.g. `team`); the host then watches Namespaces.
    #[arg(long, env = "RECONCILE_HOST_CHILD_NAMESPACE_SELECTOR")]
    pub child_namespace_selector: Option<LabelSelector>,
    /// Decorate: take only the parents carrying these labels (kubectl syntax, e.g. `team` or
    /// `team in (a,b)`), of a kind the host does not own: it writes no status on them, reports
    /// failures by Event and metrics, and removes the children of a parent that stops matching (after
    /// a finalize call).
    #[arg(long, env = "RECONCILE_HOST_PARENT_SELECTOR")]
    pub parent_selector: Option<LabelSelector>,
    /// Only the namespaces carrying these labels (kubectl syntax): the parents in them (a Namespace
    /// parent: itself) are taken, and a parent whose namespace stops matching is released like a
    /// decorator's; a cluster-scoped parent's children may live only there (with
    /// `--child-namespace`/`--child-namespace-selector`: both must allow it). The host then watches
    /// Namespaces.
    #[arg(
        long,
        env = "RECONCILE_HOST_NAMESPACE_SELECTOR",
        conflicts_with = "namespace"
    )]
    pub namespace_selector: Option<LabelSelector>,
}

impl From<&SelectionArgs> for Selection {
    fn from(args: &SelectionArgs) -> Self {
        Selection {
            child_namespaces: args.child_namespaces.clone(),
            child_namespace_selector: args.child_namespace_selector.clone(),
            parent_selector: args.parent_selector.clone(),
            namespace_selector: args.namespace_selector.clone(),
        }
    }
}
