//! etcd stopped and started again during a burst of creations (its own binary: the restart would
//! break the tests that share a control plane with it). The API server answers errors meanwhile (its
//! own etcd watches resume where they were); the host retries and converges every parent, with none
//! orphaned or duplicated.

mod common;

use std::time::Duration;

use testcluster::{TestCluster, failure_guard};

use common::restart::converges_through;

#[tokio::test]
async fn the_host_converges_every_parent_through_an_etcd_restart_during_a_burst() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    converges_through(cluster, "etcd-restart", async |cluster| {
        cluster.restart_etcd(Duration::from_secs(5)).await.unwrap();
    })
    .await;
}
