//! The API server stopped and started again during a burst of creations (its own binary: the restart
//! would break the tests that share a control plane with it). The host reconnects, lists again and
//! converges every parent.

mod common;

use std::time::Duration;

use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use common::guests::component;
use common::host::HostProcess;
use common::myapp::*;
use common::restart::assert_every_parent_converged;

#[tokio::test]
async fn the_host_reconnects_after_an_apiserver_restart_and_converges_every_parent() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("apiserver-restart").await.unwrap();
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
    cluster
        .restart_apiserver(Duration::from_secs(3))
        .await
        .unwrap();
    // A fresh client: the old one's connections went down with the server.
    let client = cluster.client().await.unwrap();
    for i in 0..40 {
        create_myapp(&client, &namespace, &format!("after-{i}"), json!({})).await;
    }
    assert_every_parent_converged(&client, &namespace).await;
    assert!(
        host.is_running(),
        "the host must outlive the API server's restart"
    );
}
