//! The flags of `serve`, turned into the platform's [`ServeOptions`].

use clap::Args;

use super::{HostArgs, OciArgs, PolicyArgs, RuntimeArgs};
use crate::platform::ServeOptions;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Only reconciler objects matching this label selector (several platforms in one cluster).
    #[arg(long, env = "RECONCILE_HOST_RECONCILER_SELECTOR")]
    pub reconciler_selector: Option<String>,
    /// Guest instances alive at once, over all reconcilers (the pool reserves this many slots).
    #[arg(
        long,
        env = "RECONCILE_HOST_MAX_GUEST_INSTANCES",
        default_value_t = 128
    )]
    pub max_guest_instances: u32,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// How every reconciler's `oci://` module is reached and polled: the operator's settings, which
    /// no reconciler can change. Credentials are each reconciler's own pull Secret; the host has none.
    #[command(flatten)]
    pub oci: OciArgs,
    /// Defaults of every reconciler's guest limits; `--guest-memory-mib` is also the most a
    /// reconciler's `spec.limits.memoryMiB` may ask for.
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// Serve the conversion webhooks of ClusterReconcilers with `spec.conversion` on this address
    /// (HTTPS, `POST /convert/<ClusterReconciler name>`, each under its own certificate chosen by the
    /// name its CRD's clientConfig calls).
    #[arg(long, env = "RECONCILE_HOST_CONVERSION_WEBHOOK_ADDR")]
    pub conversion_webhook_addr: Option<std::net::SocketAddr>,
}

impl ServeArgs {
    pub fn options(&self) -> ServeOptions {
        ServeOptions {
            metrics_addr: self.host.metrics_addr,
            leader_election: self.host.leader_election || self.host.sharded,
            sharded: self.host.sharded,
            reconciler_selector: self.reconciler_selector.clone(),
            max_guest_instances: self.max_guest_instances,
            resync_period: self.policy.period(),
            adopt_orphans: self.policy.adopt_orphans,
            oci: self.oci.settings(),
            runtime: self.runtime.config(),
            conversion_addr: self.conversion_webhook_addr,
        }
    }
}
