//! Sharded MyApp replicas (`run --sharded`, ring `myapp`) and what the sharding tests read from them:
//! the shard label on each parent, the parents each replica says it holds, and the reconcile
//! intervals each replica records in its log (`reconcile_host::shard::record`), from which no-overlap
//! is proved on the replicas' own word rather than on timing.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, ListParams};
use reconcile_host::names::{LEASE_PREFIX, SHARD_LABEL_PREFIX};
use testcluster::TestCluster;

use super::guests::component;
use super::host::HostProcess;
use super::monitoring::{Scrape, scrape_when};
use super::myapp::{myapps, wait_for};

/// The ring's size as a replica sees it.
pub const RING: &str = "reconcile_host_ring_members";
/// 1 while a replica holds its own shard Lease.
pub const MEMBER: &str = "reconcile_host_shard_member";
/// The parents a replica holds now.
pub const PARENTS: &str = "reconcile_host_shard_parents";

/// The log target of the record lines: one per reconcile that called the guest, one per release.
const RECORD_TARGET: &str = "reconcile_host::shard::record: ";

/// The key of the shard label on MyApps (the ring is named after the reconciler, `myapp`).
pub fn shard_label() -> String {
    format!("{SHARD_LABEL_PREFIX}myapp")
}

/// Member `letter` of a test's ring: named after its namespace, so that no two tests' members (or
/// their shard Leases' holders) share a name.
pub fn member(namespace: &str, letter: char) -> String {
    format!("{namespace}-{letter}")
}

/// A sharded MyApp replica in `namespace` (its Leases there too), as the Pod `member`.
pub fn replica(cluster: &TestCluster, namespace: &str, member: &str) -> HostProcess {
    let sharded = ["--sharded", "--leader-election-namespace", namespace];
    HostProcess::myapp_with_env(
        cluster.kubeconfig_path(),
        namespace,
        &component("guest_myapp"),
        &sharded,
        &[("POD_NAME", member)],
    )
}

/// Waits until each of `replicas` holds its shard Lease and sees a ring of `size`.
pub async fn wait_ring(replicas: &[&HostProcess], size: usize) {
    for (i, replica) in replicas.iter().enumerate() {
        let what = format!("replica {i} a member of a ring of {size}");
        scrape_when(replica, &what, |s| {
            s.value(RING) == Some(size as f64) && s.value(MEMBER) == Some(1.0)
        })
        .await;
    }
}

/// Waits until the parents `replicas` hold add up to `total` and each holds some (the ring's leader
/// has spread them and no handover is under way); the count of each.
pub async fn wait_spread(replicas: &[&HostProcess], total: usize) -> Vec<f64> {
    let what = format!("{total} parents spread over {} replicas", replicas.len());
    wait_for(&what, || {
        let held: Option<Vec<f64>> = (replicas.iter())
            .map(|r| Scrape::of(&r.metrics_addr()?).value(PARENTS))
            .collect();
        let held = held.filter(|held| {
            held.iter().all(|&n| n > 0.0) && held.iter().sum::<f64>() == total as f64
        });
        async move { held }
    })
    .await
}

/// The member each MyApp of `namespace` is labelled with (`None`: unassigned), by name.
pub async fn assignments(client: &Client, namespace: &str) -> BTreeMap<String, Option<String>> {
    let key = shard_label();
    let parents = myapps(client, namespace)
        .list(&ListParams::default())
        .await
        .unwrap();
    (parents.items.into_iter())
        .map(|p| {
            let member = p.metadata.labels.and_then(|mut l| l.remove(&key));
            (p.metadata.name.unwrap(), member)
        })
        .collect()
}

/// Waits until every MyApp of `namespace` is labelled with one of `members`; the assignments.
pub async fn wait_assigned_to(
    client: &Client,
    namespace: &str,
    members: &[&str],
) -> BTreeMap<String, String> {
    let what = format!("every parent assigned to one of {members:?}");
    wait_for(&what, || async {
        let assigned = assignments(client, namespace).await;
        (assigned.into_iter())
            .map(|(name, member)| Some((name, member.filter(|m| members.contains(&m.as_str()))?)))
            .collect()
    })
    .await
}

/// The ring's leader: the holder of the reconciler's leader Lease (`--leader-election`'s, named
/// after the reconciler).
pub async fn ring_leader(client: &Client, namespace: &str) -> String {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let lease = leases.get(&format!("{LEASE_PREFIX}myapp")).await.unwrap();
    (lease.spec.and_then(|spec| spec.holder_identity)).expect("the leader Lease is held")
}

/// One reconcile of a parent that called the guest, as its replica recorded it: from `start_us` to
/// `end_us`, microseconds since the Unix epoch on the replica's clock (one machine's clock here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciled {
    /// `namespace/name`.
    pub parent: String,
    pub member: String,
    pub start_us: u64,
    pub end_us: u64,
}

/// The `reconciled` record lines of a replica's text log. A line that names the target but not every
/// field is a change of the record's format: it fails the test rather than being skipped, which
/// would let a check pass on no records.
pub fn reconciled(log: &str) -> Vec<Reconciled> {
    log.lines()
        .filter_map(|line| Some(&line[line.find(RECORD_TARGET)? + RECORD_TARGET.len()..]))
        .filter_map(|record| record.strip_prefix("reconciled "))
        .map(|fields| {
            let fields: BTreeMap<&str, &str> = (fields.split_whitespace())
                .filter_map(|field| field.split_once('='))
                // tracing's text format quotes string values recorded as such.
                .map(|(key, value)| (key, value.trim_matches('"')))
                .collect();
            let field = |key: &str| {
                (fields.get(key).copied())
                    .unwrap_or_else(|| panic!("no {key} in the record {fields:?}"))
            };
            let micros = |key: &str| field(key).parse().unwrap();
            Reconciled {
                parent: field("parent").to_string(),
                member: field("member").to_string(),
                start_us: micros("start_us"),
                end_us: micros("end_us"),
            }
        })
        .collect()
}

/// The records of every replica of `replicas`, together.
pub fn all_reconciled(replicas: &[HostProcess]) -> Vec<Reconciled> {
    (replicas.iter())
        .flat_map(|r| reconciled(&r.log()))
        .collect()
}

/// The members that reconciled each parent, by parent (`namespace/name`).
pub fn members_by_parent(records: &[Reconciled]) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut members: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for record in records {
        (members.entry(&record.parent).or_default()).insert(&record.member);
    }
    members
}

/// Every pair of reconciles of one parent by two different members whose intervals intersect (both
/// ends included: a release and a start in the same microsecond is not a handover that finished).
pub fn overlaps(records: &[Reconciled]) -> Vec<(&Reconciled, &Reconciled)> {
    let mut by_parent: BTreeMap<&str, Vec<&Reconciled>> = BTreeMap::new();
    for record in records {
        (by_parent.entry(&record.parent).or_default()).push(record);
    }
    let mut found = Vec::new();
    for intervals in by_parent.values() {
        for (i, a) in intervals.iter().enumerate() {
            for b in &intervals[i + 1..] {
                let intersect = a.start_us <= b.end_us && b.start_us <= a.end_us;
                if a.member != b.member && intersect {
                    found.push((*a, *b));
                }
            }
        }
    }
    found
}
