//! A leader paused past its Lease (SIGSTOP: a long GC, a stalled VM) while a standby takes over must
//! write nothing when it wakes, with whatever stale state and queued events it wakes with; it steps
//! down without exiting and serves again as a standby. What it wrote is read from the API server's
//! audit log, by the User-Agent that names each replica, not inferred from timing.

use serde_json::json;
use testcluster::{AuditedWrite, TestCluster, failure_guard};

use crate::common::guests::component;
use crate::common::host::HostProcess;
use crate::common::monitoring::scrape_when;
use crate::common::myapp::*;
use crate::common::platform::wait_ready_myapp;

const LEADER: &str = "reconcile_host_leader";

fn replica(cluster: &TestCluster, namespace: &str, identity: &str) -> HostProcess {
    let election = [
        "--leader-election",
        "--leader-election-namespace",
        namespace,
    ];
    HostProcess::myapp_with_env(
        cluster.kubeconfig_path(),
        namespace,
        &component("guest_myapp"),
        &election,
        &[("POD_NAME", identity)],
    )
}

/// The writes the replica named `identity` made, received by the API server at `since` or later.
fn writes_of(cluster: &TestCluster, identity: &str, since: jiff::Timestamp) -> Vec<AuditedWrite> {
    let agent = format!("({identity})");
    let received = |write: &AuditedWrite| write.received.parse::<jiff::Timestamp>().unwrap();
    (cluster.audited_writes().unwrap().into_iter())
        .filter(|write| write.user_agent.ends_with(&agent) && received(write) >= since)
        .collect()
}

async fn wait_replicas(client: &kube::Client, namespace: &str, replicas: i32, what: &str) {
    wait_deployment(client, namespace, "app-deploy", what, |deployment| {
        replicas_and_image(deployment).0 == Some(replicas)
    })
    .await;
}

#[tokio::test]
async fn a_leader_paused_past_its_lease_writes_nothing_when_it_wakes_and_stands_again() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("fenced-leader").await.unwrap();
    let client = cluster.client().await.unwrap();
    let (first_name, second_name) = (format!("{namespace}-a"), format!("{namespace}-b"));

    let mut first = replica(cluster, &namespace, &first_name);
    scrape_when(&first, "the first replica leading", |s| {
        s.value(LEADER) == Some(1.0)
    })
    .await;
    let mut second = replica(cluster, &namespace, &second_name);
    scrape_when(&second, "the second replica standing by", |s| {
        s.value(LEADER) == Some(0.0)
    })
    .await;
    let started = jiff::Timestamp::now();
    create_myapp(&client, &namespace, "app", json!({"replicas": 1})).await;
    wait_ready_myapp(&client, &namespace, "app").await;
    let led = writes_of(cluster, &first_name, started);
    assert!(
        led.iter().any(|write| write.resource == "deployments"),
        "the leader's writes are audited under its name: {led:#?}"
    );
    assert!(
        writes_of(cluster, &second_name, started)
            .iter()
            .all(|write| write.resource == "leases"),
        "a standby writes nothing but Lease attempts"
    );

    // The leader stops mid-term; the standby takes the Lease once it has seen it unrenewed for the
    // Lease's duration, and converges a change the paused leader has yet to see.
    first.pause();
    let paused = jiff::Timestamp::now();
    patch_spec(&client, &namespace, "app", json!({"replicas": 2})).await;
    wait_replicas(&client, &namespace, 2, "the standby taking over").await;

    // The old leader wakes with a stale cache and the change queued on its watches; another change
    // reaches both replicas while it finds out it lost the Lease.
    first.resume();
    patch_spec(&client, &namespace, "app", json!({"replicas": 3})).await;
    wait_replicas(&client, &namespace, 3, "the new leader converging").await;
    scrape_when(&first, "the old leader stepping down", |s| {
        s.value(LEADER) == Some(0.0)
            && s.value(r#"reconcile_host_lease_transitions_total{transition="lost"}"#) == Some(1.0)
    })
    .await;
    wait_ready_myapp(&client, &namespace, "app").await;
    let stale: Vec<AuditedWrite> = writes_of(cluster, &first_name, paused)
        .into_iter()
        .filter(|write| write.resource != "leases")
        .collect();
    assert!(
        stale.is_empty(),
        "the old leader wrote after it was paused past its Lease: {stale:#?}"
    );
    assert!(
        first.is_running(),
        "losing the Lease must not end the process"
    );

    // It stands again: with the new leader gone (SIGKILL: no release), it takes the Lease back and
    // reconciles, in the same process.
    second.kill();
    patch_spec(&client, &namespace, "app", json!({"replicas": 4})).await;
    wait_replicas(&client, &namespace, 4, "the old leader leading again").await;
    scrape_when(&first, "the old leader leading again", |s| {
        s.value(LEADER) == Some(1.0)
    })
    .await;
}
