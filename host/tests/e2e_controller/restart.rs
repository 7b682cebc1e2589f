//! A host that restarts, or dies, must pick up where it left off: no reconcile on a half-filled
//! cache, and no parent left with a status that its children contradict.

use kube::Client;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::component;
use crate::common::host::HostProcess;
use crate::common::myapp::*;
use crate::common::platform::wait_ready_myapp;
use crate::common::restart::assert_every_parent_converged;

fn myapp_host(cluster: &TestCluster, namespace: &str) -> HostProcess {
    HostProcess::myapp(
        cluster.kubeconfig_path(),
        namespace,
        &component("guest_myapp"),
        &[],
    )
}

/// What a host that died before it saw its Deployments become ready leaves behind.
async fn make_status_stale(client: &Client, namespace: &str, name: &str) {
    let stale = json!({"status": {"phase": "Created", "readyReplicas": 0, "conditions": null}});
    myapps(client, namespace)
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&stale))
        .await
        .unwrap();
}

/// Before the fix, the Deployments listed at start-up had no `kind` (list responses omit it for
/// built-in kinds), so the guest saw no Deployment and every parent stayed `Created` for good.
#[tokio::test]
async fn parents_whose_children_are_ready_before_the_host_starts_get_their_status_on_first_start() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("restart-ready").await.unwrap();
    let client = cluster.client().await.unwrap();
    let names: Vec<String> = (0..20).map(|i| format!("app-{i}")).collect();

    let mut first = myapp_host(cluster, &namespace);
    for name in &names {
        create_myapp(&client, &namespace, name, json!({"replicas": 1})).await;
    }
    for name in &names {
        wait_ready_myapp(&client, &namespace, name).await;
    }
    first.kill();
    for name in &names {
        make_status_stale(&client, &namespace, name).await;
    }

    let _second = myapp_host(cluster, &namespace);
    assert_every_parent_converged(&client, &namespace).await;
}

/// The host killed twice during a burst of creations, a parent deleted and one changed while it is
/// down: once it is back, every parent converges on exactly its own children.
#[tokio::test]
async fn a_host_killed_during_a_burst_converges_every_parent_when_it_returns() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("restart-burst").await.unwrap();
    let client = cluster.client().await.unwrap();

    let mut host = myapp_host(cluster, &namespace);
    for i in 0..120 {
        create_myapp(&client, &namespace, &format!("app-{i}"), json!({})).await;
        if i == 30 || i == 90 {
            host.kill();
        }
        if i == 60 {
            host = myapp_host(cluster, &namespace);
        }
    }
    myapps(&client, &namespace)
        .delete("app-3", &DeleteParams::default())
        .await
        .unwrap();
    patch_spec(&client, &namespace, "app-5", json!({"replicas": 2})).await;
    make_status_stale(&client, &namespace, "app-7").await;

    let _host = myapp_host(cluster, &namespace);
    assert_every_parent_converged(&client, &namespace).await;
}
