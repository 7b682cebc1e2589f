//! Watches that expire during a burst (its own binary and control plane: the API server runs without
//! its watch cache, so that a resumed watch reaches etcd). Each second etcd is compacted to its
//! current revision and every connection of the host is cut: each watch the host resumes from its
//! last resourceVersion finds that history gone (410 Gone) and must list again. The host counts the
//! expired watches, lists again and converges every parent, with none orphaned or duplicated.

mod common;

use std::time::Duration;

use kube::api::DeleteParams;
use serde_json::json;
use testcluster::{ClusterOptions, TestCluster, failure_guard};

use common::guests::component;
use common::host::HostProcess;
use common::monitoring::scrape_when;
use common::myapp::*;
use common::restart::assert_every_parent_converged;

const EXPIRED: &str = r#"reconcile_host_watch_errors_total{controller="myapp",reason="expired"}"#;

#[tokio::test]
async fn watches_expired_by_compaction_during_a_burst_are_listed_again_and_every_parent_converges()
{
    let options = ClusterOptions::default().apiserver_arg("--watch-cache=false");
    let cluster = TestCluster::start_with(options).await.unwrap();
    let _guard = failure_guard(&cluster);
    install_crd(&cluster);
    let namespace = cluster.namespace("watch-expiry").await.unwrap();
    let client = cluster.client().await.unwrap();
    let link = cluster.link().unwrap();
    let mut host = HostProcess::myapp(
        link.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &[],
    );
    create_myapps(&client, &namespace, 10).await;
    assert_every_parent_converged(&client, &namespace).await;

    // Ten waves of changes, each followed by a compaction and a cut: what the host resumes watching
    // from is always history etcd no longer has.
    for wave in 0..10 {
        for i in 0..6 {
            let name = format!("wave-{wave}-{i}");
            create_myapp(&client, &namespace, &name, json!({"replicas": 1})).await;
        }
        patch_spec(
            &client,
            &namespace,
            &format!("app-{wave:02}"),
            json!({"replicas": 2}),
        )
        .await;
        if wave % 3 == 0 {
            let gone = format!("wave-{wave}-0");
            myapps(&client, &namespace)
                .delete(&gone, &DeleteParams::default())
                .await
                .unwrap();
        }
        cluster.compact_etcd().unwrap();
        link.cut();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    assert_every_parent_converged(&client, &namespace).await;
    scrape_when(&host, "the host counting its expired watches", |s| {
        s.value(EXPIRED).is_some_and(|expired| expired >= 1.0)
    })
    .await;
    assert!(
        host.is_running(),
        "the host must outlive its expired watches"
    );
}
