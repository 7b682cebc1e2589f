//! Platform mode with modules from a private OCI registry, on the real control plane: the host runs
//! with exactly the shipped platform RBAC (no right to read Secrets) and reads each team's pull Secret
//! as the team's ServiceAccount. A team's Reconciler whose module is in a registry that wants
//! credentials reconciles demo-app; a retag is swapped in; a Reconciler whose ServiceAccount may not
//! read its Secret says so in its status while the other keeps working; and the CRD refuses a module
//! with both a ConfigMap and a registry.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::{component, digest, myapp_variant_b, repo_root};
use crate::common::kubectl::kubectl_ok;
use crate::common::myapp::*;
use crate::common::platform::*;
use crate::common::registry::Registry;

const TEST: &str = "platform-oci";
const PULL_SECRET: &str = "registry-pull";
const REPOSITORY: &str = "team/myapp";

/// The pull Secret of the example, holding `registry`'s credentials, in `namespace`.
async fn put_pull_secret(client: &kube::Client, namespace: &str, registry: &Registry) {
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(PULL_SECRET.into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_string(),
            ByteString(registry.docker_config().into_bytes()),
        )])),
        ..Default::default()
    };
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    api.patch(
        PULL_SECRET,
        &PatchParams::apply("e2e").force(),
        &Patch::Apply(&secret),
    )
    .await
    .unwrap();
}

/// The example's registry Reconciler in `namespace`, pointed at `reference`.
fn registry_reconciler(namespace: &str, reference: &str) -> Value {
    let mut reconciler =
        reconciler_from("examples/myapp/registry/reconciler.yaml", namespace, TEST);
    reconciler["spec"]["module"]["oci"]["reference"] = json!(reference);
    reconciler
}

fn module_digest_is(status: &Value, module: &std::path::Path) -> bool {
    ready_is(status, "True", "Running") && status["moduleDigest"] == digest(module).as_str()
}

#[tokio::test]
async fn a_teams_reconciler_pulls_its_module_with_its_own_pull_secret() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let team = cluster.namespace("oci-team").await.unwrap();
    let locked_out = cluster.namespace("oci-locked-out").await.unwrap();
    let registry = Registry::with_auth("robot:s3cret");
    let dir = tempfile::tempdir().unwrap();
    let credentials = registry.credentials_file(dir.path());
    let push_flags = ["--oci-credentials", credentials.to_str().unwrap()];
    let (module, variant) = (component("guest_myapp"), myapp_variant_b());
    registry.push(&module, &format!("{REPOSITORY}:stable"), &push_flags);
    let reference = registry.reference(&format!("{REPOSITORY}:stable"));

    let cache = dir.path().join("cache");
    let mut flags = vec![
        "--oci-poll-interval".to_string(),
        "1s".into(),
        "--cache-dir".into(),
        cache.to_str().unwrap().into(),
    ];
    flags.extend(registry.flags());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let host = platform_host(cluster, TEST, &flags).await;

    // The shipped platform RBAC lets the host read no Secret: only the team's ServiceAccount can.
    let host_user = "system:serviceaccount:reconcile-host-system:reconcile-host-platform";
    let can_i = cluster
        .kubectl()
        .args([
            "auth", "can-i", "get", "secrets", "-n", &team, "--as", host_user,
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&can_i.stdout).trim(), "no");

    // The team: its RBAC as the example ships it, the right to get its pull Secret, the Secret.
    apply_team_rbac(cluster, "myapp", &team, |_| {});
    let pull_secret_rbac = "examples/myapp/registry/pull-secret-rbac.yaml";
    apply_rbac_file(cluster, pull_secret_rbac, &team, |_| {});
    put_pull_secret(&client, &team, &registry).await;
    apply_reconciler(&client, &registry_reconciler(&team, &reference)).await;

    let instance = repo_root().join("examples/myapp/myapp-instance.yaml");
    let instance = instance.to_str().unwrap();
    kubectl_ok(cluster, &["apply", "-n", &team, "-f", instance]);
    wait_ready_myapp(&client, &team, "demo-app").await;
    wait_seed_deployment(&client, &team).await;
    wait_reconciler(
        &client,
        Some(&team),
        "myapp",
        "Running the pushed module",
        |s| module_digest_is(s, &module),
    )
    .await;

    // A retag is a hot swap: the status names the new module, demo-app gets the variant's label.
    registry.push(&variant, &format!("{REPOSITORY}:stable"), &push_flags);
    wait_reconciler(
        &client,
        Some(&team),
        "myapp",
        "the variant swapped in",
        |s| module_digest_is(s, &variant),
    )
    .await;
    wait_variant_label(&client, &team).await;

    // Another team has the Secret but its ServiceAccount may not read it: nothing is pulled for it
    // (not even from the cache, where the first team's module is), and its status names the Secret.
    apply_team_rbac(cluster, "myapp", &locked_out, |_| {});
    put_pull_secret(&client, &locked_out, &registry).await;
    apply_reconciler(&client, &registry_reconciler(&locked_out, &reference)).await;
    // (It says `ModuleUnavailable`, waiting for the module, before the first check fails.)
    let secret = format!("Secret {locked_out}/{PULL_SECRET}");
    let message = |s: &Value| condition(s, "Ready").unwrap()["message"].to_string();
    let status = wait_reconciler(
        &client,
        Some(&locked_out),
        "myapp",
        "ModuleUnavailable naming the Secret",
        |s| ready_is(s, "False", "ModuleUnavailable") && message(s).contains(&secret),
    )
    .await;
    assert!(
        message(&status).contains("may not get it"),
        "{status}\n{}",
        host.log()
    );
    assert!(status["moduleDigest"].is_null(), "{status}");
    create_myapp(&client, &team, "after-lockout", json!({"replicas": 1})).await;
    wait_ready_myapp(&client, &team, "after-lockout").await;
    wait_reconciler(&client, Some(&team), "myapp", "still Running", |s| {
        module_digest_is(s, &variant) && s["parents"] == 2
    })
    .await;
}

#[tokio::test]
async fn the_crd_takes_exactly_one_of_a_configmap_and_a_registry() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_platform(cluster);
    let client = cluster.client().await.unwrap();
    let namespace = cluster.namespace("oci-crd").await.unwrap();
    let mut both = registry_reconciler(&namespace, "oci://registry.example.com/team/myapp:v1");
    both["spec"]["module"]["configMap"] = json!({"name": "myapp-module"});
    let mut neither = both.clone();
    neither["spec"]["module"] = json!({});
    for reconciler in [both, neither] {
        let object: DynamicObject = serde_json::from_value(reconciler).unwrap();
        let error = reconcilers(&client, Some(&namespace))
            .patch("myapp", &PatchParams::apply("e2e"), &Patch::Apply(&object))
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("exactly one of configMap and oci"),
            "{error}"
        );
    }
}
