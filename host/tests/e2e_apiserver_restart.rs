//! The API server stopped and started again during a burst of creations (its own binary: the restart
//! would break the tests that share a control plane with it). The host reconnects, lists again and
//! converges every parent.

mod common;

use std::time::Duration;

use testcluster::{TestCluster, failure_guard};

use common::restart::converges_through;

#[tokio::test]
async fn the_host_reconnects_after_an_apiserver_restart_and_converges_every_parent() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    converges_through(cluster, "apiserver-restart", async |cluster| {
        (cluster.restart_apiserver(Duration::from_secs(3)))
            .await
            .unwrap();
    })
    .await;
}
