//! The API server stopped for twice the Lease's duration during a burst of creations, and started
//! again (its own binary: the outage would break the tests that share a control plane with it). The
//! leader cannot renew: it steps down, then takes its Lease again, without a restart of the process;
//! it reconnects, lists again and converges every parent.

mod common;

use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use common::guests::component;
use common::host::HostProcess;
use common::monitoring::scrape_when;
use common::myapp::*;
use common::restart::assert_every_parent_converged;
use reconcile_host::lease::LEASE_DURATION;

#[tokio::test]
async fn a_leader_cut_off_past_its_lease_steps_down_leads_again_and_converges_every_parent() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("apiserver-restart").await.unwrap();
    let client = cluster.client().await.unwrap();
    let election = [
        "--leader-election",
        "--leader-election-namespace",
        &namespace,
    ];
    let mut host = HostProcess::myapp(
        cluster.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &election,
    );
    scrape_when(&host, "the host leading", |s| {
        s.value("reconcile_host_leader") == Some(1.0)
    })
    .await;
    for i in 0..40 {
        create_myapp(&client, &namespace, &format!("before-{i}"), json!({})).await;
    }
    cluster.restart_apiserver(LEASE_DURATION * 2).await.unwrap();
    // A fresh client: the old one's connections went down with the server.
    let client = cluster.client().await.unwrap();
    for i in 0..40 {
        create_myapp(&client, &namespace, &format!("after-{i}"), json!({})).await;
    }
    assert_every_parent_converged(&client, &namespace).await;
    assert!(
        host.is_running(),
        "the host must outlive the API server's outage"
    );
    // It stepped down when it could not renew, and took its Lease again: the process never exited.
    let transition = |t| format!(r#"reconcile_host_lease_transitions_total{{transition="{t}"}}"#);
    scrape_when(&host, "the host stepped down and leading again", |s| {
        s.value("reconcile_host_leader") == Some(1.0)
            && s.value(&transition("lost")) == Some(1.0)
            && s.value(&transition("acquired")) == Some(2.0)
    })
    .await;
}
