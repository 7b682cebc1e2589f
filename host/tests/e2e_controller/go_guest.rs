//! The Go MyApp guest (guests/myapp-go, built by the Go guest kit) on the real control plane, from both
//! sources a module of its size can come from: pushed to a real OCI registry with `reconcile-host push`,
//! and gzipped into a ConfigMap (3.4 MiB of wasm, under 1 MiB gzipped). Each time the seed's demo-app
//! gets its Deployment and its Ready status from the Go guest.

use kube::api::{Api, PostParams};
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::{artifact_cache, digest, myapp_go, repo_root};
use crate::common::host::HostProcess;
use crate::common::kubectl::kubectl_ok;
use crate::common::myapp::*;
use crate::common::registry::Registry;
use crate::hotswap::{gzip, module_configmap};

/// What a ConfigMap holds at most (the API server's limit on its data).
const CONFIGMAP_LIMIT: usize = 1 << 20;

/// Applies the seed's demo-app in `namespace` and waits until the Go guest made it Ready.
async fn seed_ready_by_go_guest(cluster: &TestCluster, namespace: &str, host: &HostProcess) {
    let client = cluster.client().await.unwrap();
    let instance = repo_root().join("examples/myapp/myapp-instance.yaml");
    kubectl_ok(
        cluster,
        &["apply", "-n", namespace, "-f", instance.to_str().unwrap()],
    );
    let status = wait_status(&client, namespace, "demo-app", "demo-app Ready", |st| {
        st["phase"] == "Ready"
    })
    .await;
    assert_eq!(
        status["moduleDigest"],
        digest(&myapp_go()).as_str(),
        "{}",
        host.log()
    );
    wait_seed_deployment(&client, namespace).await;
}

#[tokio::test]
async fn the_go_guest_reconciles_the_seed_from_a_registry_and_from_a_configmap() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let go = myapp_go();
    let cache = artifact_cache();
    let cache = cache.to_str().unwrap();

    // From a registry.
    let namespace = cluster.namespace("go-oci").await.unwrap();
    let registry = Registry::start();
    registry.push(&go, "team/myapp-go:stable", &[]);
    let reference = registry.reference("team/myapp-go:stable");
    let mut args = vec![
        "--parent",
        "example.com/v1alpha1/MyApp",
        "--child",
        "apps/v1/Deployment",
        "--namespace",
        &namespace,
        "--module",
        &reference,
        "--cache-dir",
        cache,
    ];
    let registry_flags = registry.flags();
    args.extend(registry_flags.iter().map(String::as_str));
    let host = HostProcess::start(cluster.kubeconfig_path(), &args);
    seed_ready_by_go_guest(cluster, &namespace, &host).await;
    drop(host);

    // From a ConfigMap, gzipped.
    let namespace = cluster.namespace("go-configmap").await.unwrap();
    let gzipped = gzip(&std::fs::read(&go).unwrap());
    assert!(
        gzipped.len() < CONFIGMAP_LIMIT,
        "the Go guest gzipped is {} bytes, more than a ConfigMap holds",
        gzipped.len()
    );
    let client = cluster.client().await.unwrap();
    Api::namespaced(client, &namespace)
        .create(&PostParams::default(), &module_configmap(gzipped))
        .await
        .unwrap();
    let source = format!("{namespace}/logic/module.wasm");
    let host = HostProcess::myapp_from_configmap(
        cluster.kubeconfig_path(),
        &namespace,
        &source,
        &["--cache-dir", cache],
    );
    seed_ready_by_go_guest(cluster, &namespace, &host).await;
}
