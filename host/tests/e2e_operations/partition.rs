//! The leader cut off from the API server for twice its Lease while parents change (a network
//! partition between the host and the API server, which stays up for everyone else: see
//! `testcluster::Link`). The leader cannot renew: it stops writing at its renew deadline and steps
//! down; once the network heals it takes its Lease again, in the same process, lists again and
//! converges every parent, including those created while it could not see them. And a host started
//! while it cannot reach the API server waits for it, instead of exiting.

use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::component;
use crate::common::host::HostProcess;
use crate::common::monitoring::scrape_when;
use crate::common::myapp::*;
use crate::common::restart::assert_every_parent_converged;
use reconcile_host::lease::LEASE_DURATION;

#[tokio::test]
async fn a_leader_partitioned_past_its_lease_steps_down_leads_again_and_converges_every_parent() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("partition").await.unwrap();
    let client = cluster.client().await.unwrap();
    let link = cluster.link().unwrap();
    let election = [
        "--leader-election",
        "--leader-election-namespace",
        &namespace,
    ];
    let mut host = HostProcess::myapp(
        link.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &election,
    );
    scrape_when(&host, "the host leading", |s| {
        s.value("reconcile_host_leader") == Some(1.0)
    })
    .await;
    for i in 0..20 {
        create_myapp(&client, &namespace, &format!("before-{i}"), json!({})).await;
    }
    // The host up and reconciling before the partition: a start cut off is the test below.
    assert_every_parent_converged(&client, &namespace).await;

    link.partition();
    for i in 0..20 {
        create_myapp(&client, &namespace, &format!("during-{i}"), json!({})).await;
    }
    patch_spec(&client, &namespace, "before-0", json!({"replicas": 2})).await;
    tokio::time::sleep(LEASE_DURATION * 2).await;
    let transition = |t| format!(r#"reconcile_host_lease_transitions_total{{transition="{t}"}}"#);
    scrape_when(&host, "the partitioned leader stepping down", |s| {
        s.value("reconcile_host_leader") == Some(0.0) && s.value(&transition("lost")) == Some(1.0)
    })
    .await;
    link.heal();

    for i in 0..20 {
        create_myapp(&client, &namespace, &format!("after-{i}"), json!({})).await;
    }
    assert_every_parent_converged(&client, &namespace).await;
    assert!(
        host.is_running(),
        "the host must outlive a partition from the API server"
    );
    scrape_when(&host, "the host leading again", |s| {
        s.value("reconcile_host_leader") == Some(1.0)
            && s.value(&transition("lost")) == Some(1.0)
            && s.value(&transition("acquired")) == Some(2.0)
    })
    .await;
}

#[tokio::test]
async fn a_host_started_while_the_api_server_is_unreachable_waits_for_it_and_converges() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("start-partitioned").await.unwrap();
    let client = cluster.client().await.unwrap();
    for i in 0..5 {
        create_myapp(&client, &namespace, &format!("app-{i}"), json!({})).await;
    }
    let link = cluster.link().unwrap();
    link.down();
    let mut host = HostProcess::myapp(
        link.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &[],
    );
    wait_for("the host retrying its discovery", || {
        let log = host.log();
        async move { log.contains("discovery failed; retried").then_some(()) }
    })
    .await;
    assert!(
        host.is_running(),
        "a host that cannot reach the API server must wait for it, not exit"
    );
    link.heal();
    assert_every_parent_converged(&client, &namespace).await;
}
