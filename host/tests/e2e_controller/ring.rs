//! Sharded replicas (`run --sharded`) join one ring: each holds a shard Lease of its own, labelled
//! with the ring and its member name, and every replica sees the same live members. A replica killed
//! (SIGKILL: no release) leaves the ring once its Lease has gone unrenewed for its duration; one shut
//! down (SIGTERM) releases its Lease and leaves at once. A parent is assigned to one member, which
//! labels its children for its own caches (the tests of the handover are in `e2e_sharding`).

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::host::HostProcess;
use crate::common::monitoring::scrape_when;
use crate::common::myapp::*;
use crate::common::platform::wait_ready_myapp;
use crate::common::shard::{MEMBER, RING, member, replica};

/// Each shard Lease of the ring `myapp` in `namespace`: (its member label, its holder).
async fn ring_leases(client: &kube::Client, namespace: &str) -> Vec<(String, Option<String>)> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let selector = ListParams::default().labels("reconcile-host.dev/ring=myapp");
    let mut leases: Vec<_> = (api.list(&selector).await.unwrap().items.into_iter())
        .map(|lease| {
            let labels = lease.metadata.labels.unwrap_or_default();
            let holder = lease.spec.and_then(|spec| spec.holder_identity);
            (labels["reconcile-host.dev/member"].clone(), holder)
        })
        .collect();
    leases.sort();
    leases
}

async fn wait_ring(host: &HostProcess, members: f64, what: &str) {
    scrape_when(host, what, |s| s.value(RING) == Some(members)).await;
}

#[tokio::test]
async fn sharded_replicas_see_one_ring_that_a_killed_or_stopped_replica_leaves() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("ring").await.unwrap();
    let client = cluster.client().await.unwrap();
    let names: Vec<String> = ['a', 'b', 'c'].map(|x| member(&namespace, x)).to_vec();
    let mut replicas: Vec<HostProcess> = (names.iter())
        .map(|name| replica(cluster, &namespace, name))
        .collect();
    for replica in &replicas {
        scrape_when(replica, "each replica a member of a ring of three", |s| {
            s.value(RING) == Some(3.0) && s.value(MEMBER) == Some(1.0)
        })
        .await;
    }
    let held: Vec<_> = (names.iter())
        .map(|name| (name.clone(), Some(name.clone())))
        .collect();
    assert_eq!(
        ring_leases(&client, &namespace).await,
        held,
        "one Lease per replica, labelled with the ring and its member, held by it"
    );

    // A parent is assigned to a member, which labels its children for its own caches.
    create_myapp(&client, &namespace, "app", json!({"replicas": 1})).await;
    wait_ready_myapp(&client, &namespace, "app").await;
    let parent = myapps(&client, &namespace).get("app").await.unwrap();
    let member =
        parent.metadata.labels.unwrap_or_default()["shard.reconcile-host.dev/myapp"].clone();
    assert!(names.contains(&member), "{member} is no member");
    let child = deployments(&client, &namespace)
        .get("app-deploy")
        .await
        .unwrap();
    let labels = child.metadata.labels.unwrap_or_default();
    assert_eq!(labels["shard.reconcile-host.dev/myapp"], member);
    assert_eq!(
        Some(&labels["reconcile-host.dev/parent-uid"]),
        parent.metadata.uid.as_ref()
    );

    // Killed: its Lease stays held by it, unrenewed, and the others see it leave once it lapsed.
    replicas[2].kill();
    wait_ring(&replicas[0], 2.0, "the killed replica leaving a's ring").await;
    wait_ring(&replicas[1], 2.0, "the killed replica leaving b's ring").await;
    // Its Lease stays (held by it, or taken by the ring's leader if it held a parent).
    let leases = ring_leases(&client, &namespace).await;
    assert_eq!(leases[2].0, names[2], "a killed replica releases nothing");

    // Shut down: it releases its Lease on the way out, and leaves the ring at once.
    replicas[1].terminate();
    let leases = ring_leases(&client, &namespace).await;
    assert_eq!(
        leases[1],
        (names[1].clone(), None),
        "a replica shut down frees its Lease"
    );
    wait_ring(&replicas[0], 1.0, "the stopped replica leaving a's ring").await;
    assert!(
        replicas[0].is_running(),
        "the ring changing must not end a member"
    );
}
