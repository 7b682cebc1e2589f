//! etcd stopped and started again during a burst of creations (its own binary: the restart would
//! break the tests that share a control plane with it). The API server answers errors meanwhile (its
//! own etcd watches resume where they were); the host retries and converges every parent, with none
//! orphaned or duplicated.

mod common;

use std::time::Duration;

use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use common::guests::component;
use common::host::HostProcess;
use common::myapp::*;
use common::restart::assert_every_parent_converged;

#[tokio::test]
async fn the_host_converges_every_parent_through_an_etcd_restart_during_a_burst() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("etcd-restart").await.unwrap();
    let client = cluster.client().await.unwrap();
    let mut host = HostProcess::myapp(
        cluster.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &[],
    );
    for i in 0..40 {
        create_myapp(&client, &namespace, &format!("before-{i}"), json!({})).await;
    }
    cluster.restart_etcd(Duration::from_secs(5)).await.unwrap();
    let client = cluster.client().await.unwrap();
    for i in 0..40 {
        create_myapp(&client, &namespace, &format!("after-{i}"), json!({})).await;
    }
    assert_every_parent_converged(&client, &namespace).await;
    assert!(host.is_running(), "the host must outlive etcd's restart");
}
