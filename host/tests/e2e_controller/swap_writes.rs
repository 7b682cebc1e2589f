//! Writes cost what they change. A hot swap to a new module whose answers are the same as the old
//! one's writes no child and no parent status, though every parent is reconciled by it; and a new
//! parent's status is written once per state it reaches, not again by a reconcile that ran before the
//! cache showed the host's own write.

use std::collections::BTreeMap;

use kube::api::ListParams;
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::{component, digest};
use crate::common::host::HostProcess;
use crate::common::http;
use crate::common::myapp::*;
use crate::common::platform::wait_ready_myapp;

const PARENTS: usize = 20;

/// `wasm` with a custom section appended: another digest, the same code.
fn with_custom_section(wasm: &[u8]) -> Vec<u8> {
    let name = b"reconcile-host-test";
    let payload = b"the same logic under another digest";
    let mut content = vec![name.len() as u8];
    content.extend_from_slice(name);
    content.extend_from_slice(payload);
    let mut out = wasm.to_vec();
    out.push(0); // custom section id
    out.push(u8::try_from(content.len()).unwrap()); // its size, one LEB128 byte
    out.extend(content);
    out
}

async fn resource_versions(client: &kube::Client, namespace: &str) -> BTreeMap<String, String> {
    myapps(client, namespace)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| {
            (
                p.metadata.name.unwrap(),
                p.metadata.resource_version.unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_swap_to_a_module_that_answers_the_same_writes_nothing() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("swap-writes").await.unwrap();
    let client = cluster.client().await.unwrap();
    let modules = tempfile::tempdir().unwrap();
    let module = modules.path().join("module.wasm");
    std::fs::copy(component("guest_myapp"), &module).unwrap();
    let old_digest = digest(&module);
    let host = HostProcess::myapp(cluster.kubeconfig_path(), &namespace, &module, &[]);
    create_myapps(&client, &namespace, PARENTS).await;
    for i in 0..PARENTS {
        wait_ready_myapp(&client, &namespace, &format!("app-{i:02}")).await;
    }

    let addr = host.metrics_addr().unwrap();
    let metric = |name: &'static str, labels: String| {
        let text = http::get(&addr, "/metrics").unwrap().1;
        http::sample(&text, name, &labels)
    };
    let reconciled = || {
        metric(
            "controller_runtime_reconcile_total",
            r#"result="success""#.into(),
        )
    };
    let applied = || {
        metric(
            "reconcile_host_child_applies_total",
            r#"result="applied""#.into(),
        )
    };
    let versions = resource_versions(&client, &namespace).await;
    let (reconciled_before, applied_before) = (reconciled(), applied());

    let same = modules.path().join("same.wasm");
    std::fs::write(&same, with_custom_section(&std::fs::read(&module).unwrap())).unwrap();
    let new_digest = digest(&same);
    assert_ne!(new_digest, old_digest);
    std::fs::rename(&same, &module).unwrap();
    wait_for("every parent reconciled by the new module", || {
        let active = metric(
            "reconcile_host_active_module",
            format!(r#"digest="{new_digest}""#),
        );
        let done = active == 1.0 && reconciled() >= reconciled_before + PARENTS as f64;
        async move { done.then_some(()) }
    })
    .await;

    assert_eq!(
        applied(),
        applied_before,
        "the same answers were applied again"
    );
    assert_eq!(
        resource_versions(&client, &namespace).await,
        versions,
        "a parent was written though its answer did not change"
    );
    let status = wait_ready_myapp(&client, &namespace, "app-00").await;
    assert_eq!(
        status["moduleDigest"], old_digest,
        "the state is still the one the first module made"
    );
}

#[tokio::test]
async fn a_new_parent_costs_one_status_write_per_state_it_reaches() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("status-writes").await.unwrap();
    let client = cluster.client().await.unwrap();
    let module = component("guest_myapp");
    let host = HostProcess::myapp(cluster.kubeconfig_path(), &namespace, &module, &[]);
    create_myapps(&client, &namespace, PARENTS).await;
    for i in 0..PARENTS {
        wait_ready_myapp(&client, &namespace, &format!("app-{i:02}")).await;
    }

    let text = http::get(&host.metrics_addr().unwrap(), "/metrics")
        .unwrap()
        .1;
    let written = http::sample(
        &text,
        "reconcile_host_status_writes_total",
        r#"result="written""#,
    );
    // Each parent reaches at most two statuses, Created then Ready (Ready at once if its Deployment
    // was ready by its first reconcile).
    assert!(
        (PARENTS as f64..=2.0 * PARENTS as f64).contains(&written),
        "{written} status writes for {PARENTS} new parents that each went at most Created, Ready"
    );
}
