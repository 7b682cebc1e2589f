//! What the restart tests check once a host has come back: every parent converged on children that
//! are exactly its own; and the shape of a test of the control plane's own faults.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{DynamicObject, ListParams};
use serde_json::{Value, json};
use testcluster::TestCluster;

use super::guests::component;
use super::host::HostProcess;
use super::myapp::{
    TIMEOUT, create_myapp, deployments, install_crd, myapps, ready_condition, wait_for, wait_status,
};

/// A fault of the control plane during a burst: a MyApp host runs on `cluster` (in a namespace named
/// after `what`), 40 parents are created, `fault` is done, 40 more are created with a fresh client (the
/// old one's connections may have gone down with a server), then every parent must converge with
/// none orphaned or duplicated, and the host must still run.
pub async fn converges_through(
    cluster: &TestCluster,
    what: &str,
    fault: impl AsyncFnOnce(&TestCluster),
) {
    install_crd(cluster);
    let namespace = cluster.namespace(what).await.unwrap();
    let client = cluster.client().await.unwrap();
    let module = component("guest_myapp");
    let mut host = HostProcess::myapp(cluster.kubeconfig_path(), &namespace, &module, &[]);
    for i in 0..40 {
        create_myapp(&client, &namespace, &format!("before-{i}"), json!({})).await;
    }
    fault(cluster).await;
    let client = cluster.client().await.unwrap();
    for i in 0..40 {
        create_myapp(&client, &namespace, &format!("after-{i}"), json!({})).await;
    }
    assert_every_parent_converged(&client, &namespace).await;
    assert!(host.is_running(), "the host must outlive {what}");
}

/// Waits until every MyApp of `namespace` is Ready at its current generation (its last change
/// reconciled, not only an earlier one) with all its replicas ready, then checks that the Deployments
/// are one per MyApp, named after it and controlled by it: no orphan, no duplicate.
pub async fn assert_every_parent_converged(client: &Client, namespace: &str) {
    let parents = myapps(client, namespace)
        .list(&ListParams::default())
        .await
        .unwrap();
    for parent in &parents.items {
        let name = parent.metadata.name.as_deref().unwrap();
        let (generation, replicas) = (parent.metadata.generation, spec_replicas(parent));
        let what = format!(
            "{namespace}/{name} Ready at generation {generation:?} with {replicas} ready replicas"
        );
        wait_status(client, namespace, name, &what, |s| {
            converged_at(s, generation, replicas)
        })
        .await;
    }
    let expected: BTreeMap<String, String> = parents
        .items
        .iter()
        .map(|p| {
            let name = p.metadata.name.clone().unwrap();
            (format!("{name}-deploy"), p.metadata.uid.clone().unwrap())
        })
        .collect();
    // A deleted parent's Deployment goes with the garbage collector's next pass: wait for it.
    let api = deployments(client, namespace);
    let owners = wait_for("one Deployment per MyApp, and no other", || {
        let api = api.clone();
        let expected = &expected;
        async move {
            let owners: BTreeMap<String, String> = api
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .map(|d| {
                    let controller = d
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .filter(|o| o.controller == Some(true))
                        .map(|o| o.uid.clone())
                        .collect::<Vec<_>>()
                        .join(",");
                    (d.metadata.name.unwrap(), controller)
                })
                .collect();
            (owners.len() == expected.len()).then_some(owners)
        }
    })
    .await;
    assert_eq!(owners, expected, "Deployment name → controller UID");
}

/// Waits until every MyApp of `namespace` has converged, for as long as more of them converge within
/// each `TIMEOUT`: hundreds of new parents keep a loaded control plane's Deployment controller,
/// scheduler and kwok busy for minutes (600 took over 2 on two shared cores), while a parent stuck
/// for good still fails the test, with the count.
pub async fn wait_converged_while_progressing(client: &Client, namespace: &str) {
    let api = myapps(client, namespace);
    let (mut most, mut since) = (0, Instant::now());
    loop {
        let parents = api.list(&ListParams::default()).await.unwrap().items;
        let done = parents.iter().filter(|p| converged(p)).count();
        if done == parents.len() {
            return;
        }
        if done > most {
            (most, since) = (done, Instant::now());
        }
        assert!(
            since.elapsed() < TIMEOUT,
            "{done} of {} parents of {namespace} converged, and no more for {TIMEOUT:?}",
            parents.len()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Whether `parent`, as read, is converged: its own status says so at its current generation.
pub fn converged(parent: &DynamicObject) -> bool {
    let status = &parent.data["status"];
    converged_at(status, parent.metadata.generation, spec_replicas(parent))
}

/// Whether `status` says Ready at `generation` (its last change reconciled, not only an earlier one)
/// with all `replicas` ready.
fn converged_at(status: &Value, generation: Option<i64>, replicas: i64) -> bool {
    status["phase"] == "Ready"
        && ready_condition(status).is_some_and(|c| c["status"] == "True")
        && status["observedGeneration"].as_i64() == generation
        && status["readyReplicas"].as_i64() == Some(replicas)
}

/// The replicas a MyApp asks for (the guest's default: 1).
fn spec_replicas(parent: &DynamicObject) -> i64 {
    parent.data["spec"]["replicas"].as_i64().unwrap_or(1)
}
