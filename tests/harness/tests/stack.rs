//! Proves the shared test stack is a real control plane, not a bare API server: Deployments become
//! ready through kube-controller-manager, kube-scheduler and kwok; owner references are garbage
//! collected; RBAC is enforced for ServiceAccount tokens from the TokenRequest API.
//!
//! Each test has a positive and a negative side, so that a stack missing a piece fails it.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

/// Generous for a loaded 2-core CI machine; a healthy stack needs a few seconds.
const WAIT: Duration = Duration::from_secs(60);

/// Polls `check` every 200 ms until it returns `Some`, failing after [`WAIT`] with `what`.
async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Result<Option<T>>) -> Result<T> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {WAIT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn deployment(name: &str, replicas: i32, owner: Option<&ConfigMap>) -> Result<Deployment> {
    let owner_references = owner.map(|cm| {
        json!([{
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": cm.metadata.name,
            "uid": cm.metadata.uid,
        }])
    });
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name, "ownerReferences": owner_references },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                // kwok never pulls images: any name will do.
                "spec": { "containers": [{ "name": "app", "image": "example.invalid/app:1" }] },
            },
        },
    }))?)
}

#[tokio::test]
async fn deployment_reaches_ready_replicas_on_the_kwok_node() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    deployment_ready(cluster).await.unwrap();
}

async fn deployment_ready(cluster: &TestCluster) -> Result<()> {
    let ns = cluster.namespace("deployment-ready").await?;
    let client = cluster.client().await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    deployments
        .create(&PostParams::default(), &deployment("web", 2, None)?)
        .await?;

    let ready = eventually("web to report 2 ready replicas", async || {
        let d = deployments.get("web").await?;
        let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0);
        Ok((ready == 2).then_some(ready))
    })
    .await?;
    assert_eq!(ready, 2);

    // The pods behind it were scheduled onto the fake node and run there.
    let pods: Api<Pod> = Api::namespaced(client, &ns);
    let pods = pods.list(&ListParams::default().labels("app=web")).await?;
    assert_eq!(pods.items.len(), 2, "pods of web: {:?}", pods.items);
    for pod in &pods.items {
        let spec = pod.spec.as_ref().context("pod without spec")?;
        assert_eq!(spec.node_name.as_deref(), Some("kwok-node-0"));
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        assert_eq!(phase, Some("Running"));
    }
    Ok(())
}

#[tokio::test]
async fn deleting_the_owner_garbage_collects_the_deployment() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    garbage_collection(cluster).await.unwrap();
}

async fn garbage_collection(cluster: &TestCluster) -> Result<()> {
    let ns = cluster.namespace("garbage-collection").await?;
    let client = cluster.client().await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client, &ns);

    let owner: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "owner" },
    }))?;
    let owner = config_maps.create(&PostParams::default(), &owner).await?;
    deployments
        .create(
            &PostParams::default(),
            &deployment("owned", 1, Some(&owner))?,
        )
        .await?;
    // The control: same namespace, no owner; it must survive.
    deployments
        .create(&PostParams::default(), &deployment("unowned", 1, None)?)
        .await?;
    // Wait for the owned Deployment's ReplicaSet, so the cascade has two levels to delete.
    eventually("a ReplicaSet for owned", async || {
        let list = replica_sets
            .list(&ListParams::default().labels("app=owned"))
            .await?;
        Ok((!list.items.is_empty()).then_some(()))
    })
    .await?;

    config_maps
        .delete("owner", &DeleteParams::background())
        .await?;

    eventually("owned to be garbage collected", async || {
        Ok(deployments.get_opt("owned").await?.is_none().then_some(()))
    })
    .await?;
    eventually("owned's ReplicaSet to be garbage collected", async || {
        let list = replica_sets
            .list(&ListParams::default().labels("app=owned"))
            .await?;
        Ok(list.items.is_empty().then_some(()))
    })
    .await?;
    assert!(
        deployments.get_opt("unowned").await?.is_some(),
        "the Deployment without owner was deleted too"
    );
    Ok(())
}

#[tokio::test]
async fn service_account_without_rbac_is_forbidden() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    rbac_enforced(cluster).await.unwrap();
}

async fn rbac_enforced(cluster: &TestCluster) -> Result<()> {
    let ns = cluster.namespace("rbac").await?;
    let sa_client = cluster.service_account_client(&ns, "nobody").await?;
    let pods: Api<Pod> = Api::namespaced(sa_client, &ns);

    match pods.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "expected Forbidden, got {status:?}");
            // The API server knew who asked: the token authenticated, RBAC refused.
            assert!(
                status
                    .message
                    .contains(&format!("system:serviceaccount:{ns}:nobody")),
                "unexpected message: {}",
                status.message
            );
        }
        other => bail!("listing pods without RBAC should be forbidden, got {other:?}"),
    }

    // The same kubeconfig as a file, as the host under test gets it, is refused by kubectl too.
    let kubeconfig = cluster.service_account_kubeconfig(&ns, "nobody").await?;
    let kubectl = testcluster::binaries::bin_dir()?.join("kubectl");
    let output = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "pods", "-n", &ns])
        .env("KUBECACHEDIR", cluster.dir().join("kubectl-cache-sa"))
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "kubectl as nobody listed pods");
    assert!(stderr.contains("Forbidden"), "kubectl said: {stderr}");

    // Granting the permission makes the same client succeed: RBAC, not a broken token, said no.
    let admin = cluster.client().await?;
    let role: Role = serde_json::from_value(json!({
        "metadata": { "name": "pod-reader" },
        "rules": [{ "apiGroups": [""], "resources": ["pods"], "verbs": ["list"] }],
    }))?;
    Api::<Role>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &role)
        .await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "nobody-reads-pods" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader" },
        "subjects": [{ "kind": "ServiceAccount", "name": "nobody", "namespace": ns }],
    }))?;
    Api::<RoleBinding>::namespaced(admin, &ns)
        .create(&PostParams::default(), &binding)
        .await?;
    eventually("the RoleBinding to let nobody list pods", async || {
        Ok(pods.list(&ListParams::default()).await.ok().map(|_| ()))
    })
    .await?;
    Ok(())
}
