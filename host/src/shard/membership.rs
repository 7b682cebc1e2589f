//! This replica's membership of its ring, live: its own shard Lease, held by `lease::Elector` as the
//! leader Lease is (renewed, fenced, stood for again after a loss without ending the process), and
//! the ring as this replica observes it: a reflector on the Leases carrying the ring's label, judged
//! by `ring` on every change and every retry period (a Lease nobody renews changes nothing, yet
//! lapses as time passes).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::ObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::task::JoinHandle;

use super::ring::Ring;
use crate::identity::label_value;
use crate::lease::{Election, Elector, Fence, RETRY_PERIOD, Role};
use crate::names::{LEASE_PREFIX, MEMBER_LABEL, RING_LABEL};
use crate::telemetry::Metrics;

/// Which ring this replica joins, and as whom: plain values, from the flags (`run --sharded`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardSettings {
    /// Where the ring's Leases live.
    pub namespace: String,
    /// The ring's name, a label value: the reconciler's identity label (`run`).
    pub ring: String,
    /// This replica's name in the ring, a label value (and its Lease's holder).
    pub member: String,
}

impl ShardSettings {
    /// The ring `ring` (a label value) in `namespace`, joined as the replica named `identity` (the
    /// Pod's name), written as a label value.
    pub fn new(namespace: String, ring: String, identity: &str) -> ShardSettings {
        ShardSettings {
            namespace,
            ring,
            member: label_value(identity),
        }
    }

    /// The member's Lease: `reconcile-host-<ring>.<member>`, a valid object name for any two label
    /// values (lowercased, `_` as `-`; at most 15 + 63 + 1 + 63 characters).
    pub fn lease_name(&self) -> String {
        self.lease_name_of(&self.member)
    }

    fn lease_name_of(&self, member: &str) -> String {
        let name = format!("{LEASE_PREFIX}{}.{member}", self.ring);
        name.to_lowercase().replace('_', "-")
    }

    /// The labels of `member`'s Lease: its ring and member.
    fn lease_labels(&self, member: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (RING_LABEL.to_string(), self.ring.clone()),
            (MEMBER_LABEL.to_string(), member.to_string()),
        ])
    }

    /// The Lease of another `member` of this ring, named and labelled as its elector makes it, with
    /// no spec: what the ring's leader creates, held by itself, for a member whose Lease is gone.
    pub fn lease_of(&self, member: &str) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(self.lease_name_of(member)),
                labels: Some(self.lease_labels(member)),
                ..ObjectMeta::default()
            },
            spec: None,
        }
    }

    /// The election of the member's own Lease, labelled with its ring and member.
    fn election(&self) -> Election {
        Election {
            namespace: self.namespace.clone(),
            lease: self.lease_name(),
            identity: self.member.clone(),
            labels: self.lease_labels(&self.member),
            role: Role::Member,
        }
    }

    /// The label selector of the ring's Leases.
    fn ring_selector(&self) -> String {
        format!("{RING_LABEL}={}", self.ring)
    }
}

/// What the reconcilers of a replica that joined a ring share: which ring and member (its settings),
/// the fence of its own shard Lease, and the ring as it observes it.
#[derive(Clone)]
pub struct Joined {
    pub settings: ShardSettings,
    pub fence: Fence,
    pub ring: Arc<Mutex<Ring>>,
}

/// This replica in its ring: its own Lease held, the ring observed. Ends with `release`.
pub struct Membership {
    settings: ShardSettings,
    fence: Fence,
    elector: Elector,
    ring: Arc<Mutex<Ring>>,
    observer: JoinHandle<()>,
}

impl Membership {
    /// Joins `settings`' ring through `client` (unfenced: a Lease is what a replica without one
    /// writes), counting in `metrics`.
    pub fn start(settings: &ShardSettings, client: Client, metrics: &Metrics) -> Membership {
        let fence = Fence::closed().counted_in(metrics);
        let election = settings.election();
        tracing::info!(ring = %settings.ring, member = %settings.member, lease = %election.lease, "joining the ring");
        let elector = Elector::start(election, client.clone(), fence.clone(), metrics.clone());
        let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
        let config = watcher::Config::default().labels(&settings.ring_selector());
        let ring = Arc::new(Mutex::new(Ring::default()));
        let observer = tokio::spawn(observe(api, config, ring.clone(), metrics.clone()));
        Membership {
            settings: settings.clone(),
            fence,
            elector,
            ring,
            observer,
        }
    }

    /// Open while this replica holds its own shard Lease: what its reconciles' writes pass.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// What its reconcilers share: who it is in the ring, its fence, the ring it observes.
    pub fn joined(&self) -> Joined {
        Joined {
            settings: self.settings.clone(),
            fence: self.fence.clone(),
            ring: self.ring.clone(),
        }
    }

    /// Leaves the ring: stops observing and frees the Lease (the leader then moves its parents at
    /// once). Call it once the controller has stopped, so that nothing is reconciling meanwhile.
    pub async fn release(self) {
        self.observer.abort();
        self.elector.release().await;
    }
}

/// Keeps `ring` (and the ring size metric) current from the ring's Leases: at every change of them,
/// and every retry period, when a Lease nobody renews may have lapsed.
async fn observe(
    api: Api<Lease>,
    config: watcher::Config,
    ring: Arc<Mutex<Ring>>,
    metrics: Metrics,
) {
    let (store, writer) = reflector::store();
    let mut changes = reflector::reflector(writer, watcher(api, config))
        .default_backoff()
        .touched_objects()
        .boxed();
    let mut tick = tokio::time::interval(RETRY_PERIOD);
    let mut live = Vec::new();
    loop {
        tokio::select! {
            change = changes.next() => match change {
                Some(Err(e)) => tracing::debug!(error = %e, "watching the ring's Leases; retried"),
                Some(Ok(_)) => {}
                None => return,
            },
            _ = tick.tick() => {}
        }
        judge(
            &mut ring.lock().expect("ring lock poisoned"),
            &store,
            &mut live,
            &metrics,
        );
    }
}

/// Observes the ring's Leases in `store` now; logs a change of its `live` members.
fn judge(ring: &mut Ring, store: &Store<Lease>, live: &mut Vec<String>, metrics: &Metrics) {
    let now = Instant::now();
    let leases = store.state();
    ring.observe(leases.iter().map(AsRef::as_ref), now);
    let members: Vec<String> = ring.live(now).into_iter().map(String::from).collect();
    metrics.ring_members(members.len());
    if *live != members {
        tracing::info!(members = ?members, "the ring changed");
        *live = members;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_members_lease_is_named_and_labelled_for_its_ring() {
        let settings = ShardSettings::new("ops".into(), "myapp".into(), "host-7f9c-x2");
        let election = settings.election();
        assert_eq!(election.lease, "reconcile-host-myapp.host-7f9c-x2");
        assert_eq!(election.identity, "host-7f9c-x2");
        assert_eq!(election.role, Role::Member);
        assert_eq!(election.labels[RING_LABEL], "myapp");
        assert_eq!(election.labels[MEMBER_LABEL], "host-7f9c-x2");
        assert_eq!(settings.ring_selector(), "reconcile-host.dev/ring=myapp");
        // Another member's, as the ring's leader makes it when it is gone: named and labelled alike.
        let other = settings.lease_of("host-8a0d-y3");
        assert_eq!(
            other.metadata.name.as_deref(),
            Some("reconcile-host-myapp.host-8a0d-y3")
        );
        let labels = other.metadata.labels.unwrap_or_default();
        assert_eq!(labels[RING_LABEL], "myapp");
        assert_eq!(labels[MEMBER_LABEL], "host-8a0d-y3");
    }

    #[test]
    fn a_long_identity_becomes_a_label_value_and_the_lease_an_object_name() {
        let identity = format!("{}-0", "p".repeat(100));
        let settings = ShardSettings::new("ops".into(), "Ring_A".into(), &identity);
        assert!(settings.member.len() <= 63, "{}", settings.member);
        let lease = settings.lease_name();
        let dns = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
        assert!(lease.len() <= 253 && lease.chars().all(dns), "{lease}");
    }
}
