//! The seed's MyApp on the real cluster: the CRD, MyApp objects and waiting for what the host does.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use testcluster::TestCluster;

use super::guests::repo_root;
use super::kubectl::apply_crd;

pub const TIMEOUT: Duration = Duration::from_secs(90);

pub fn myapp_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1alpha1", "MyApp"),
        "myapps",
    )
}

pub fn myapps(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &myapp_resource())
}

pub fn deployments(client: &Client, namespace: &str) -> Api<Deployment> {
    Api::namespaced(client.clone(), namespace)
}

/// Applies deploy/crd.yaml (idempotent) and waits until the API serves MyApp.
pub fn install_crd(cluster: &TestCluster) {
    apply_crd(
        cluster,
        &repo_root().join("deploy/crd.yaml"),
        "myapps.example.com",
    );
}

pub async fn create_myapp(
    client: &Client,
    namespace: &str,
    name: &str,
    spec: Value,
) -> DynamicObject {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }))
    .unwrap();
    myapps(client, namespace)
        .create(&PostParams::default(), &object)
        .await
        .unwrap()
}

/// Creates `count` MyApps `app-00`, `app-01`... with one replica each.
pub async fn create_myapps(client: &Client, namespace: &str, count: usize) {
    for i in 0..count {
        create_myapp(client, namespace, &app_name(i), json!({"replicas": 1})).await;
    }
}

/// Like `create_myapps`, `at_once` creations in flight: hundreds of parents in seconds, as a burst
/// of users would make them (one after another, 600 take minutes of round trips).
pub async fn create_myapps_at_once(client: &Client, namespace: &str, count: usize, at_once: usize) {
    futures::stream::iter(0..count)
        .for_each_concurrent(at_once, |i| async move {
            create_myapp(client, namespace, &app_name(i), json!({"replicas": 1})).await;
        })
        .await;
}

/// The name `create_myapps` gives its `i`th MyApp.
pub fn app_name(i: usize) -> String {
    format!("app-{i:02}")
}

pub async fn patch_spec(client: &Client, namespace: &str, name: &str, spec: Value) {
    myapps(client, namespace)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .unwrap();
}

/// Polls `check` until it returns `Some`, or panics after `TIMEOUT` with `what`.
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {TIMEOUT:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The MyApp's status once `predicate` holds for it.
pub async fn wait_status(
    client: &Client,
    namespace: &str,
    name: &str,
    what: &str,
    predicate: impl Fn(&Value) -> bool,
) -> Value {
    wait_object_status(&myapps(client, namespace), name, what, predicate).await
}

/// The status of object `name` of `api` once `predicate` holds for it.
pub async fn wait_object_status(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    predicate: impl Fn(&Value) -> bool,
) -> Value {
    wait_for(what, || {
        let predicate = &predicate;
        async move {
            let object = api.get_opt(name).await.ok()??;
            let status = object.data.get("status")?.clone();
            predicate(&status).then_some(status)
        }
    })
    .await
}

/// The Deployment once `predicate` holds for it.
pub async fn wait_deployment(
    client: &Client,
    namespace: &str,
    name: &str,
    what: &str,
    predicate: impl Fn(&Deployment) -> bool,
) -> Deployment {
    let api = deployments(client, namespace);
    wait_for(what, || {
        let api = api.clone();
        let predicate = &predicate;
        async move {
            let deployment = api.get_opt(name).await.ok()??;
            predicate(&deployment).then_some(deployment)
        }
    })
    .await
}

/// The label the MyApp variant guest (`myapp_variant_b`) puts on its Deployments.
pub const VARIANT_LABEL: &str = "example.com/variant";

/// demo-app's Deployment (the seed's examples/myapp/myapp-instance.yaml) once it is there, checked to
/// be what the seed asks for: 3 replicas of nginx:1.23.
pub async fn wait_seed_deployment(client: &Client, namespace: &str) {
    let deployment = wait_deployment(client, namespace, "demo-app-deploy", "it", |_| true).await;
    assert_eq!(
        replicas_and_image(&deployment),
        (Some(3), Some("nginx:1.23".into()))
    );
}

/// Waits until demo-app's Deployment carries the variant guest's label (the variant was swapped in).
pub async fn wait_variant_label(client: &Client, namespace: &str) {
    wait_deployment(
        client,
        namespace,
        "demo-app-deploy",
        "the variant label",
        |d| {
            d.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(VARIANT_LABEL))
        },
    )
    .await;
}

pub fn ready_condition(status: &Value) -> Option<&Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
}

pub fn replicas_and_image(deployment: &Deployment) -> (Option<i32>, Option<String>) {
    let spec = deployment.spec.as_ref();
    let replicas = spec.and_then(|s| s.replicas);
    let image = spec
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone());
    (replicas, image)
}
