//! The flags of the host process, shared by `run` and `serve`: where it serves health and metrics,
//! and whether its replicas elect a leader.

use std::net::SocketAddr;

use clap::Args;

#[derive(Clone, Debug, Args)]
pub struct HostArgs {
    /// Address of /healthz, /readyz and /metrics (port 0: any free port, logged).
    #[arg(
        long,
        env = "RECONCILE_HOST_METRICS_ADDR",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_addr: SocketAddr,
    /// Elect a leader among replicas on a Lease; only the leader reconciles (`run`: the Lease of
    /// `--leader-election-id`; `serve`: `reconcile-host-platform`).
    #[arg(long, env = "RECONCILE_HOST_LEADER_ELECTION")]
    pub leader_election: bool,
    /// Spread the parents over the replicas: each holds a shard Lease of its own (labelled
    /// `reconcile-host.dev/ring`, in the leader election's namespace) and reconciles only the parents
    /// the ring's leader assigns it (label `shard.reconcile-host.dev/<reconciler>`). Implies
    /// `--leader-election` (the leader assigns). `run`: a ring per reconciler; `serve`: one ring for
    /// the platform, the labels written as each reconciler's ServiceAccount.
    #[arg(long, env = "RECONCILE_HOST_SHARDED")]
    pub sharded: bool,
}
