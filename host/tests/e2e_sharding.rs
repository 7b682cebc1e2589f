//! Parents sharded over replicas (`run --sharded`, issue 35), on a control plane of its own: hundreds
//! of parents and up to five hosts per test would slow every other test of a shared binary. Each
//! replica records the interval of every reconcile it ran (`reconcile_host::shard::record`), so
//! "exactly one member" and "never two at once" are proved from the replicas' own records, not from
//! timing; the one timing bound is the issue's: a killed replica's parents are served again within
//! the Lease duration plus 5 s. (The killed replica's Lease is then deleted as orphaned: the test
//! waits the minute that takes.)

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use reconcile_host::lease::LEASE_DURATION;
use reconcile_host::names::MEMBER_LABEL;
use reconcile_host::shard::ring::ORPHANED_AFTER;
use serde_json::{Value, json};
use testcluster::{FailureGuard, TestCluster, failure_guard};
use tokio::sync::Mutex;

use common::host::HostProcess;
use common::myapp::*;
use common::restart::{assert_every_parent_converged, converged, wait_converged_while_progressing};
use common::shard::*;

/// One test at a time: each runs up to five replicas and hundreds of parents, and on two shared cores
/// two of them at once would measure each other's load (the kill test's bound above all).
static HEAVY: Mutex<()> = Mutex::const_new(());

/// In-flight creations and patches: a burst, bounded so the API server is not the one measured.
const AT_ONCE: usize = 16;

/// What each test starts from, on the shared control plane (the CRD installed): a namespace of its
/// own named after `name`, a client, and a ring of `count` replicas there. Keep the guard: it
/// reports the control plane's state should the test fail.
async fn ring_in(
    name: &str,
    count: usize,
) -> (FailureGuard<'static>, String, Client, Vec<HostProcess>) {
    let cluster = TestCluster::shared();
    let guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace(name).await.unwrap();
    let client = cluster.client().await.unwrap();
    let replicas = ring_of(cluster, &namespace, count).await;
    (guard, namespace, client, replicas)
}

/// `count` replicas of the ring in `namespace`, members `a`, `b`..., each a member of a ring of
/// `count` before this returns (parents created after are assigned once, to their final member).
async fn ring_of(cluster: &TestCluster, namespace: &str, count: usize) -> Vec<HostProcess> {
    let replicas: Vec<HostProcess> = ('a'..)
        .take(count)
        .map(|letter| replica(cluster, namespace, &member(namespace, letter)))
        .collect();
    wait_ring(&replicas.iter().collect::<Vec<_>>(), count).await;
    replicas
}

/// Waits until every parent of `namespace` has converged, however long hundreds of them take while
/// they keep converging, then checks each and its Deployment.
async fn all_converged(client: &Client, namespace: &str) {
    wait_converged_while_progressing(client, namespace).await;
    assert_every_parent_converged(client, namespace).await;
}

/// Patches the spec of the MyApps `names` with `spec`, `AT_ONCE` at a time, the next batch `pace`
/// after the last: changes that go on for a while (during a handover), not one instant burst.
async fn patch_paced(
    client: &Client,
    namespace: &str,
    names: &[String],
    spec: Value,
    pace: Duration,
) {
    for batch in names.chunks(AT_ONCE) {
        let patches = batch
            .iter()
            .map(|name| patch_spec(client, namespace, name, spec.clone()));
        futures::future::join_all(patches).await;
        tokio::time::sleep(pace).await;
    }
}

#[tokio::test]
async fn three_replicas_share_600_parents_each_reconciled_by_exactly_one() {
    let _heavy = HEAVY.lock().await;
    let (_guard, namespace, client, replicas) = ring_in("shard-600", 3).await;

    create_myapps_at_once(&client, &namespace, 600, AT_ONCE).await;
    let ring = ['a', 'b', 'c'].map(|letter| member(&namespace, letter));
    wait_assigned_to(&client, &namespace, &ring.each_ref().map(String::as_str)).await;
    all_converged(&client, &namespace).await;
    let held = wait_spread(&replicas.iter().collect::<Vec<_>>(), 600).await;
    println!("parents held by each replica: {held:?}");

    // Each parent's records name one member only, the one its label names.
    let records = all_reconciled(&replicas);
    let members = members_by_parent(&records);
    let wrong: Vec<String> = (assignments(&client, &namespace).await.into_iter())
        .filter_map(|(name, label)| {
            let parent = format!("{namespace}/{name}");
            let recorded = members.get(parent.as_str());
            let only_its_own =
                recorded.is_some_and(|m| m.len() == 1 && label.as_deref() == m.first().copied());
            (!only_its_own)
                .then(|| format!("{parent}: labelled {label:?}, reconciled by {recorded:?}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} parents not reconciled by exactly their member: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(20)]
    );
}

#[tokio::test]
async fn scaling_3_to_5_to_2_while_parents_change_never_reconciles_a_parent_twice_at_once() {
    let _heavy = HEAVY.lock().await;
    let (_guard, namespace, client, mut replicas) = ring_in("shard-scale", 3).await;
    let cluster = TestCluster::shared();
    create_myapps_at_once(&client, &namespace, 300, AT_ONCE).await;
    all_converged(&client, &namespace).await;
    // Half the parents change while the ring grows, and change back while it shrinks.
    let changing: Vec<String> = (0..300).step_by(2).map(app_name).collect();
    let pace = Duration::from_millis(500);

    // 3 → 5: the leader drains a share of each old member's parents and assigns them to the new.
    replicas
        .extend(['d', 'e'].map(|letter| replica(cluster, &namespace, &member(&namespace, letter))));
    let all: Vec<&HostProcess> = replicas.iter().collect();
    let grow = async {
        wait_ring(&all, 5).await;
        wait_spread(&all, 300).await
    };
    let (held, ()) = tokio::join!(
        grow,
        patch_paced(&client, &namespace, &changing, json!({"replicas": 2}), pace)
    );
    println!("parents held by each of 5 replicas: {held:?}");

    // 5 → 2: the first three shut down together (the leader, which took its Lease before `d` and
    // `e` started, among them), each finishing its reconciles and releasing its Lease; their parents
    // move to the two left.
    for stopping in &replicas[..3] {
        stopping.shut_down();
    }
    patch_paced(&client, &namespace, &changing, json!({"replicas": 1}), pace).await;
    for stopping in &mut replicas[..3] {
        stopping.terminate();
    }
    let left = [member(&namespace, 'd'), member(&namespace, 'e')];
    wait_assigned_to(&client, &namespace, &left.each_ref().map(String::as_str)).await;
    all_converged(&client, &namespace).await;

    let records = all_reconciled(&replicas);
    let moved = members_by_parent(&records)
        .values()
        .filter(|m| m.len() > 1)
        .count();
    assert!(
        moved > 0,
        "no parent changed member: the scaling proved nothing"
    );
    let overlapping = overlaps(&records);
    assert!(
        overlapping.is_empty(),
        "{} pairs of reconciles of one parent by two members at once (of {} records, {moved} parents moved): {:#?}",
        overlapping.len(),
        records.len(),
        &overlapping[..overlapping.len().min(20)]
    );
}

/// The parents whose shard label names `member`.
async fn held_by(client: &Client, namespace: &str, member: &str) -> Vec<String> {
    (assignments(client, namespace).await.into_iter())
        .filter(|(_, label)| label.as_deref() == Some(member))
        .map(|(name, _)| name)
        .collect()
}

/// Gives each of `held` a new generation and waits until every one is Ready at it: reconciled by
/// a live member.
async fn served_again(client: &Client, namespace: &str, held: &[String]) {
    // A field the guest ignores: a new generation to reconcile, with no Pod to wait for.
    let revision = json!({"revision": 1});
    patch_paced(client, namespace, held, revision, Duration::ZERO).await;
    let api = myapps(client, namespace);
    wait_for("the parents Ready at their new generation", || async {
        let parents = api.list(&ListParams::default()).await.ok()?;
        let pending = (parents.items.iter())
            .filter(|p| held.contains(p.metadata.name.as_ref().unwrap()))
            .filter(|p| !(p.data["spec"]["revision"] == 1 && converged(p)))
            .count();
        (pending == 0).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_killed_replicas_parents_are_served_again_within_the_lease_duration_plus_5s() {
    let _heavy = HEAVY.lock().await;
    let (_guard, namespace, client, mut replicas) = ring_in("shard-kill", 3).await;
    create_myapps_at_once(&client, &namespace, 150, AT_ONCE).await;
    all_converged(&client, &namespace).await;
    wait_spread(&replicas.iter().collect::<Vec<_>>(), 150).await;

    // The ring's leader: the worst case, its leader Lease has to lapse as well as its shard Lease.
    let killed = ring_leader(&client, &namespace).await;
    let leader = ('a'..='c')
        .position(|letter| member(&namespace, letter) == killed)
        .expect("the leader is one of the replicas");
    let held = held_by(&client, &namespace, &killed).await;
    assert!(!held.is_empty(), "the leader holds no parent");

    let killed_at = Instant::now();
    replicas[leader].kill();
    served_again(&client, &namespace, &held).await;
    let served_again = killed_at.elapsed();
    let bound = LEASE_DURATION + Duration::from_secs(5);
    println!(
        "{} parents of the killed leader served again {served_again:?} after the kill (bound {bound:?})",
        held.len()
    );
    assert!(
        served_again <= bound,
        "{} parents served again only after {served_again:?}, more than {bound:?}",
        held.len()
    );

    // Its shard Lease, taken by the new leader and let go once its parents moved, is orphaned a
    // minute after its last renewal and deleted; the live members' Leases stay.
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    let members = wait_for("the killed member's shard Lease deleted", || async {
        let listed = (leases
            .list(&ListParams::default().labels(MEMBER_LABEL))
            .await)
            .ok()?;
        let members: BTreeSet<String> = (listed.items.iter())
            .filter_map(|lease| lease.labels().get(MEMBER_LABEL).cloned())
            .collect();
        (!members.contains(&killed)).then_some(members)
    })
    .await;
    println!(
        "the killed member's Lease deleted {:?} after the kill (orphaned after {ORPHANED_AFTER:?} unrenewed)",
        killed_at.elapsed()
    );
    let live: BTreeSet<String> = ('a'..='c')
        .map(|letter| member(&namespace, letter))
        .filter(|member| member != &killed)
        .collect();
    assert_eq!(members, live);
}

#[test]
fn two_members_reconciling_one_parent_at_once_is_an_overlap_and_a_handover_is_not() {
    let record = |parent: &str, member: &str, start_us, end_us| Reconciled {
        parent: parent.into(),
        member: member.into(),
        start_us,
        end_us,
    };
    let records = [
        // x: a then b, b starting the microsecond after a ended (a handover), then a again during b.
        record("ns/x", "a", 10, 20),
        record("ns/x", "b", 21, 30),
        record("ns/x", "a", 30, 31),
        // y: one member's reconciles may follow each other closely; another's may not touch them.
        record("ns/y", "a", 10, 20),
        record("ns/y", "a", 20, 25),
        record("ns/y", "c", 5, 10),
        // z: the same interval on another parent is no overlap.
        record("ns/z", "b", 10, 20),
    ];
    let found: Vec<_> = (overlaps(&records).into_iter())
        .map(|(a, b)| (a.parent.as_str(), a.member.as_str(), b.member.as_str()))
        .collect();
    assert_eq!(found, [("ns/x", "b", "a"), ("ns/y", "a", "c")]);
}

#[test]
fn record_lines_are_read_from_the_text_log_inside_spans_and_quoted_or_not() {
    let log = "\
2026-12-07T17:00:00.000001Z  INFO reconcile_host::shard::membership: joined the ring
2026-12-07T17:00:00.000002Z DEBUG reconcile{object.ref=MyApp.v1alpha1.example.com/x.ns}: reconcile_host::shard::record: reconciled parent=\"ns/x\" member=\"a\" start_us=10 end_us=20
2026-12-07T17:00:00.000003Z DEBUG reconcile_host::shard::record: released parent=ns/x member=a at_us=25
2026-12-07T17:00:00.000004Z DEBUG reconcile_host::shard::record: reconciled parent=ns/y member=b start_us=30 end_us=40
";
    let parsed = reconciled(log);
    let fields: Vec<_> = (parsed.iter())
        .map(|r| (r.parent.as_str(), r.member.as_str(), r.start_us, r.end_us))
        .collect();
    assert_eq!(fields, [("ns/x", "a", 10, 20), ("ns/y", "b", 30, 40)]);
}

/// A member whose Lease is gone (deleted by hand here; by the orphan rule when another reconciler's
/// parents still named it) cannot write, but its parents move only once its Lease is held by
/// another: the ring's leader makes the Lease anew, held by itself, and moves them.
#[tokio::test]
async fn the_parents_of_a_member_whose_lease_is_deleted_move_once_the_leader_made_it_anew() {
    let _heavy = HEAVY.lock().await;
    let (_guard, namespace, client, mut replicas) = ring_in("shard-lease-gone", 2).await;
    create_myapps_at_once(&client, &namespace, 40, AT_ONCE).await;
    all_converged(&client, &namespace).await;
    wait_spread(&replicas.iter().collect::<Vec<_>>(), 40).await;

    let leader = ring_leader(&client, &namespace).await;
    let other = (('a'..='b').map(|letter| member(&namespace, letter)))
        .position(|member| member != leader)
        .expect("two members");
    let gone = member(&namespace, ['a', 'b'][other]);
    let held = held_by(&client, &namespace, &gone).await;
    assert!(!held.is_empty(), "{gone} holds no parent");

    replicas[other].kill();
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    let selector = format!("{MEMBER_LABEL}={gone}");
    let listed = (leases.list(&ListParams::default().labels(&selector)).await).unwrap();
    assert_eq!(listed.items.len(), 1, "{gone}'s shard Lease");
    let name = listed.items[0].name_any();
    leases.delete(&name, &Default::default()).await.unwrap();
    let deleted_at = Instant::now();

    served_again(&client, &namespace, &held).await;
    println!(
        "{} parents of {gone} served again {:?} after its Lease was deleted",
        held.len(),
        deleted_at.elapsed()
    );
    let remade = leases.get(&name).await.expect("made anew by the leader");
    let holder = remade.spec.and_then(|spec| spec.holder_identity);
    assert_eq!(holder.as_deref(), Some(leader.as_str()));
}
