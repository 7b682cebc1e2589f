//! Related objects on the platform (`serve`): team C's `Reconciler` from `examples/configured/reconciler`
//! (RBAC, `spec.related`, the module in a ConfigMap), run by the platform host as its ServiceAccount.
//! The ConfiguredApp reads the ConfigMap it names through the reconciler's own caches, an edit rolls its
//! Deployment, and a selection of a kind the Reconciler does not list is refused on that parent.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::{component, repo_root};
use crate::common::kubectl::apply_crd;
use crate::common::myapp::{ready_condition, wait_deployment, wait_object_status};
use crate::common::platform::{
    apply_reconciler, apply_team_rbac, example_reconciler, platform_host, put_module, ready_is,
    wait_reconciler,
};

const HASH: &str = "example.com/config-hash";

fn hash_of(deployment: &Deployment) -> Option<String> {
    let template = deployment.spec.as_ref()?.template.metadata.as_ref()?;
    template.annotations.as_ref()?.get(HASH).cloned()
}

#[tokio::test]
async fn a_teams_reconciler_reads_the_related_kinds_its_spec_lists() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "related-platform";
    let _host = platform_host(cluster, test, &[]).await;
    apply_crd(
        cluster,
        &repo_root().join("examples/configured/crd.yaml"),
        "configuredapps.example.com",
    );
    let team = cluster.namespace("team-related").await.unwrap();
    apply_team_rbac(cluster, "configured", &team, |_| {});
    let module = component("guest_configured");
    put_module(
        &client,
        &team,
        "configured-module",
        "configured.wasm",
        &module,
    )
    .await;
    apply_reconciler(&client, &example_reconciler("configured", &team, test)).await;
    wait_reconciler(&client, Some(&team), "configured", "Running", |s| {
        ready_is(s, "True", "Running")
    })
    .await;

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &team);
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "shop-config"}, "data": {"greeting": "hello"}});
    let config_map = serde_json::from_value(config_map).unwrap();
    config_maps
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    let gvk = GroupVersionKind::gvk("example.com", "v1alpha1", "ConfiguredApp");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "configuredapps");
    let apps: Api<DynamicObject> = Api::namespaced_with(client.clone(), &team, &resource);
    let create = |name: &str, spec: Value| {
        let app = json!({"apiVersion": "example.com/v1alpha1", "kind": "ConfiguredApp",
            "metadata": {"name": name}, "spec": spec});
        let app: DynamicObject = serde_json::from_value(app).unwrap();
        let apps = apps.clone();
        async move { apps.create(&PostParams::default(), &app).await.unwrap() }
    };
    create(
        "shop",
        json!({"image": "nginx:1.27", "configMapName": "shop-config", "replicas": 0}),
    )
    .await;
    wait_object_status(&apps, "shop", "shop with its ConfigMap", |s| {
        s["configMap"] == "Found" && ready_condition(s).is_some_and(|c| c["status"] == "True")
    })
    .await;
    let has_hash = |d: &Deployment| hash_of(d).is_some_and(|hash| hash != "missing");
    let before = wait_deployment(&client, &team, "shop", "shop's Deployment", has_hash).await;
    let before = hash_of(&before).unwrap();

    // An edit reaches the parent through the reconciler's related cache.
    let edit = json!({"data": {"greeting": "bonjour"}});
    config_maps
        .patch("shop-config", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    wait_deployment(&client, &team, "shop", "shop's new config hash", |d| {
        hash_of(d).is_some_and(|hash| hash != before && hash != "missing")
    })
    .await;

    // The Reconciler lists only ConfigMaps: reading from another namespace is refused on that parent.
    let elsewhere = json!({"image": "nginx:1.27", "configMapName": "shop-config",
        "configMapNamespace": "kube-system"});
    create("nosy", elsewhere).await;
    let status = wait_object_status(&apps, "nosy", "a refused selection", |s| {
        ready_condition(s).is_some_and(|c| c["reason"] == "RelatedNotAllowed")
    })
    .await;
    let message = ready_condition(&status).unwrap()["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("namespace kube-system"), "{message}");
}
