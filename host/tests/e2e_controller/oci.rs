//! Modules from an OCI registry on the real control plane: the JavaScript MyApp guest (11.5 MiB, more
//! than a ConfigMap holds), pushed with `reconcile-host push` to a real registry, reconciles the seed's
//! demo-app; moving the tag to another module is a hot swap; a corrupted layer behind the tag is
//! refused while the last good module keeps serving; and a restart with the registry down serves the
//! last good module from the disk cache.

use std::path::Path;

use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::{
    artifact_cache, component, digest, myapp_js, myapp_variant_b, repo_root,
};
use crate::common::host::HostProcess;
use crate::common::kubectl::kubectl_ok;
use crate::common::myapp::*;
use crate::common::registry::Registry;

/// Waits until MyApp `name` was last reconciled by the module file `module`, and returns its
/// Deployment's variant label.
async fn reconciled_by(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    module: &Path,
) -> Option<String> {
    let module_digest = digest(module);
    wait_status(
        client,
        namespace,
        name,
        &format!("{name} reconciled by {module_digest}"),
        |st| st["moduleDigest"] == module_digest.as_str() && st["phase"].is_string(),
    )
    .await;
    let deployment = deployments(client, namespace)
        .get(&format!("{name}-deploy"))
        .await
        .unwrap();
    deployment
        .metadata
        .labels
        .unwrap()
        .get(VARIANT_LABEL)
        .cloned()
}

#[tokio::test]
async fn the_javascript_guest_runs_from_a_registry_and_follows_its_tag() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("oci").await.unwrap();
    let client = cluster.client().await.unwrap();
    let mut registry = Registry::start();
    let (js, variant) = (myapp_js(), myapp_variant_b());
    registry.push(&js, "team/myapp:stable", &[]);

    // The artifact cache (compiled modules) and the pulled layers share the host's --cache-dir.
    let cache = artifact_cache();
    let reference = registry.reference("team/myapp:stable");
    let mut flags = vec![
        "--module".to_string(),
        reference,
        "--cache-dir".into(),
        cache.to_str().unwrap().into(),
        "--oci-poll-interval".into(),
        "1s".into(),
    ];
    flags.extend(registry.flags());
    let mut args = vec![
        "--parent",
        "example.com/v1alpha1/MyApp",
        "--child",
        "apps/v1/Deployment",
        "--namespace",
        &namespace,
    ];
    args.extend(flags.iter().map(String::as_str));
    let mut host = HostProcess::start(cluster.kubeconfig_path(), &args);

    // The seed's demo-app, applied as the seed does, reconciled by the JavaScript guest.
    let instance = repo_root().join("examples/myapp/myapp-instance.yaml");
    kubectl_ok(
        cluster,
        &["apply", "-n", &namespace, "-f", instance.to_str().unwrap()],
    );
    let status = wait_status(&client, &namespace, "demo-app", "demo-app Ready", |st| {
        st["phase"] == "Ready"
    })
    .await;
    assert_eq!(
        status["moduleDigest"],
        digest(&js).as_str(),
        "{}",
        host.log()
    );
    wait_seed_deployment(&client, &namespace).await;

    // Moving the tag is a hot swap: the variant's label reaches demo-app's Deployment.
    registry.push(&variant, "team/myapp:stable", &[]);
    wait_variant_label(&client, &namespace).await;
    assert!(
        reconciled_by(&client, &namespace, "demo-app", &variant)
            .await
            .is_some()
    );

    // A corrupted layer behind the tag is refused; the variant keeps serving new parents.
    let candidate = registry.push(&component("guest_myapp"), "team/myapp:candidate", &[]);
    let manifest = candidate.rsplit_once('@').unwrap().1;
    let layer = registry.layer("team/myapp", manifest);
    registry.corrupt(&layer);
    registry.tag("team/myapp", manifest, "stable");
    wait_for("the corrupted module refused", || async {
        let log = host.log();
        (log.contains("new module refused") && log.contains("does not match its digest"))
            .then_some(())
    })
    .await;
    create_myapp(
        &client,
        &namespace,
        "after-corruption",
        json!({"replicas": 1}),
    )
    .await;
    assert!(
        reconciled_by(&client, &namespace, "after-corruption", &variant)
            .await
            .is_some(),
        "{}",
        host.log()
    );

    // A restart while the registry is down: the tag's last good module, from the disk cache.
    host.kill();
    registry.stop();
    let host = HostProcess::start(cluster.kubeconfig_path(), &args);
    create_myapp(&client, &namespace, "after-restart", json!({"replicas": 1})).await;
    assert!(
        reconciled_by(&client, &namespace, "after-restart", &variant)
            .await
            .is_some(),
        "{}",
        host.log()
    );
    assert!(
        host.log()
            .contains("using the module last pulled for this reference")
    );
    // The tag cannot be checked while the registry is down: the metric the alert reads says so.
    let unavailable = r#"reconcile_host_module_unavailable{controller="myapp"} 1"#;
    wait_for("the module source reported unavailable", || async {
        let addr = host.metrics_addr()?;
        let (_, metrics) = crate::common::http::get(&addr, "/metrics").ok()?;
        metrics.contains(unavailable).then_some(())
    })
    .await;
}
