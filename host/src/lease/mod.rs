//! Who may write: a replica's part in a Lease election and the fence that follows it. A replica that
//! holds its Lease writes until a renew deadline shorter than the Lease; one that loses it, or cannot
//! renew in time, steps down without exiting (its clients refuse writes, its caches stay warm) and
//! stands again. With one replica and no election the fence is always open.

mod client;
mod elector;
mod fence;
mod watched;

pub use client::connect;
pub use elector::{Election, Elector, RENEW_DEADLINE, RETRY_PERIOD, Role, claimed};
pub use fence::{Fence, FencedWrite, is_fenced};
pub use watched::{LEASE_DURATION, Watched, duration};

use crate::telemetry::Metrics;

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

/// This process's right to write: an election's, or, without one, always.
pub struct Leadership {
    fence: Fence,
    elector: Option<Elector>,
}

impl Leadership {
    /// Stands in `election` through `client` (unfenced) if there is one; else leads at once, alone.
    pub fn start(
        election: Option<Election>,
        client: kube::Client,
        metrics: &Metrics,
    ) -> Leadership {
        metrics.leading(election.is_none());
        match election {
            None => Leadership {
                fence: Fence::open().counted_in(metrics),
                elector: None,
            },
            Some(election) => {
                let fence = Fence::closed().counted_in(metrics);
                let elector = Elector::start(election, client, fence.clone(), metrics.clone());
                Leadership {
                    fence,
                    elector: Some(elector),
                }
            }
        }
    }

    /// The fence every writing client and reconciler of this process follows.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// Stops standing; frees the Lease if held (a clean shutdown hands over at once).
    pub async fn release(self) {
        if let Some(elector) = self.elector {
            elector.release().await;
        }
    }
}
