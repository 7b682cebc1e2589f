//! Leader election on a coordination.k8s.io Lease: with several replicas only the leader reconciles,
//! and a standby takes over once the leader's lease expires (a killed leader) or is released (a leader
//! shut down cleanly). Losing the lease ends the process, as controller-runtime does: a former leader
//! must never reconcile beside the new one.

use std::time::Duration;

use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;

use crate::telemetry::Metrics;

/// How long a lease lasts without renewal: a standby takes over at most this long after a leader dies.
const LEASE_SECONDS: u64 = 10;
/// How long before expiry the leader renews.
const GRACE_SECONDS: u64 = 3;

/// Where the lease lives and who we are.
#[derive(Clone, Debug)]
pub struct Election {
    pub namespace: String,
    pub lease: String,
    pub identity: String,
}

/// Held while this process leads; dropping it releases the lease.
pub struct Leadership {
    state: watch::Receiver<bool>,
}

/// Takes part in `election` if there is one, and returns once this process may reconcile; the
/// `reconcile_host_leader` gauge says which it is meanwhile. Losing the lease later ends the process.
pub async fn lead(
    election: Option<Election>,
    client: Client,
    metrics: &Metrics,
) -> anyhow::Result<()> {
    let mut leading = lead_in_background(election, client, metrics);
    leading.wait_for(|leads| *leads).await?;
    Ok(())
}

/// Takes part in `election` in the background (`serve`, whose every replica serves conversions and
/// follows modules while only the leader reconciles): the receiver turns true once this process leads
/// (at once without an election). Losing the lease later, or failing to take part, ends the process.
pub fn lead_in_background(
    election: Option<Election>,
    client: Client,
    metrics: &Metrics,
) -> watch::Receiver<bool> {
    let (leading, receiver) = watch::channel(election.is_none());
    metrics.leading(election.is_none());
    if let Some(election) = election {
        let metrics = metrics.clone();
        tokio::spawn(async move {
            match election.acquire(client).await {
                Ok(leadership) => {
                    metrics.leading(true);
                    leading.send_replace(true);
                    exit_on_loss(leadership).await;
                }
                Err(e) => {
                    tracing::error!(error = %e, "taking part in the leader election; exiting");
                    std::process::exit(1);
                }
            }
        });
    }
    receiver
}

impl Election {
    /// Waits until this process holds the lease.
    pub async fn acquire(&self, client: Client) -> anyhow::Result<Leadership> {
        let manager = LeaseManagerBuilder::new(client, &self.lease)
            .with_namespace(&self.namespace)
            .with_identity(&self.identity)
            .with_duration(LEASE_SECONDS)
            .with_grace(GRACE_SECONDS)
            .build()
            .await?;
        let (mut state, _task) = manager.watch().await;
        tracing::info!(lease = %format!("{}/{}", self.namespace, self.lease), identity = %self.identity, "waiting for leadership");
        while !*state.borrow_and_update() {
            state
                .changed()
                .await
                .map_err(|_| anyhow::anyhow!("the lease manager stopped"))?;
        }
        tracing::info!(identity = %self.identity, "acquired leadership");
        Ok(Leadership { state })
    }
}

impl Leadership {
    /// Resolves when the lease is lost (or cannot be renewed any more).
    pub async fn lost(mut self) {
        loop {
            if self.state.changed().await.is_err() || !*self.state.borrow() {
                return;
            }
        }
    }
}

/// The namespace of the host's Lease: the Pod's own (downward API `POD_NAMESPACE`), else `default`.
pub fn namespace() -> String {
    std::env::var("POD_NAMESPACE").unwrap_or_else(|_| "default".into())
}

/// This process's identity: the Pod name where the downward API gives one, else host and pid.
pub fn identity() -> String {
    std::env::var("POD_NAME").unwrap_or_else(|_| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        format!("{}-{}", host.trim(), std::process::id())
    })
}

/// Exits the process when leadership is lost: the safe default, the Deployment restarts it as a standby.
pub async fn exit_on_loss(leadership: Leadership) {
    leadership.lost().await;
    tracing::error!("lost leadership; exiting so that only the new leader reconciles");
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::process::exit(1);
}
