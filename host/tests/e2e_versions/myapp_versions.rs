//! MyApp from v1alpha1 to v1beta1 on the real control plane, with the conversion in the guest and the
//! webhook served by the host: objects read at either version unchanged, parents reconciled whichever
//! version they were written in, a module swap that changes the conversion live, a failing conversion
//! that the client sees while the stored objects stay readable, a conversion that changes metadata
//! refused with a Warning Event on the CRD, and the storage migration. Not on the control plane of
//! the other MyApp tests: it switches the CRD's storage version, which every one of them would feel.

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::events::wait_event_saying;
use crate::common::guests::component;
use crate::common::host::HostProcess;
use crate::common::http;
use crate::common::myapp::*;
use crate::common::ports::free_port;

const CRD: &str = "myapps.example.com";

fn at(client: &kube::Client, namespace: &str, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", version, "MyApp");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "myapps");
    Api::namespaced_with(client.clone(), namespace, &resource)
}

async fn get(client: &kube::Client, namespace: &str, version: &str, name: &str) -> Value {
    let object = at(client, namespace, version).get(name).await.unwrap();
    serde_json::to_value(object).unwrap()
}

/// The CRD's conversion stanza: the host's webhook at `port`, or none.
async fn set_conversion(client: &kube::Client, port: Option<u16>) {
    let conversion = match port {
        Some(port) => json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": format!("https://127.0.0.1:{port}/convert")},
        }}),
        None => json!({"strategy": "None", "webhook": null}),
    };
    let patch = json!({"spec": {"conversion": conversion}});
    crds(client)
        .patch(CRD, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// Applies a JSON patch to the CRD's versions (deploy/crd.yaml: v1alpha1 first, v1beta1 second).
async fn patch_versions(client: &kube::Client, ops: Value) {
    let ops: json_patch::Patch = serde_json::from_value(ops).unwrap();
    crds(client)
        .patch(CRD, &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .unwrap();
}

fn crds(client: &kube::Client) -> Api<CustomResourceDefinition> {
    Api::all(client.clone())
}

/// Waits until the CRD's webhook carries a caBundle (the host's).
async fn wait_ca_bundle(client: &kube::Client) {
    wait_for("the host's caBundle on the CRD", || async {
        let crd = crds(client).get(CRD).await.ok()?;
        let webhook = crd.spec.conversion?.webhook?;
        webhook.client_config?.ca_bundle.map(drop)
    })
    .await;
}

/// Waits until demo-app, read at v1beta1, has `value` at `pointer`: the API server converts with a
/// module or a conversion setting that changed a moment ago.
async fn wait_demo_app_at_v1beta1(
    client: &kube::Client,
    namespace: &str,
    what: &str,
    pointer: &str,
    value: &str,
) {
    wait_for(what, || async {
        let demo = at(client, namespace, "v1beta1")
            .get("demo-app")
            .await
            .ok()?;
        (demo.data.pointer(pointer)? == value).then_some(())
    })
    .await;
}

/// `kubectl get` of `name` at `version`: its error output if it fails.
fn kubectl_get_error(cluster: &TestCluster, namespace: &str, version: &str, name: &str) -> String {
    let resource = format!("myapps.{version}.example.com");
    let out = cluster
        .kubectl()
        .args(["get", &resource, name, "-n", namespace, "-o", "json"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "kubectl get {resource} {name} worked"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Puts `guest` at `path` whole (written beside it, then renamed), as a deployment tool would.
fn replace_module(path: &Path, guest: &str) {
    let staging = path.with_extension("staging");
    std::fs::copy(component(guest), &staging).unwrap();
    std::fs::rename(&staging, path).unwrap();
}

#[tokio::test]
async fn myapp_moves_from_v1alpha1_to_v1beta1_through_the_hosts_webhook() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let client = cluster.client().await.unwrap();
    let namespace = cluster.namespace("versions").await.unwrap();
    let port = free_port();
    // As deploy/kustomization.yaml does: v1beta1 served, with the host's webhook by URL here.
    set_conversion(&client, Some(port)).await;
    let serve = json!([{"op": "replace", "path": "/spec/versions/1/served", "value": true}]);
    patch_versions(&client, serve).await;

    let modules = tempfile::tempdir().unwrap();
    let module = modules.path().join("module.wasm");
    replace_module(&module, "guest_myapp");
    let secret = format!("{namespace}/myapp-webhook-tls");
    let addr = format!("127.0.0.1:{port}");
    let host = HostProcess::myapp(
        cluster.kubeconfig_path(),
        &namespace,
        &module,
        &[
            "--conversion-webhook-addr",
            &addr,
            "--conversion-crd",
            CRD,
            "--webhook-cert-secret",
            &secret,
        ],
    );
    wait_ca_bundle(&client).await;

    // Created at v1alpha1 (the storage version), read at v1beta1 and back, unchanged.
    let spec = json!({"replicas": 2, "image": "nginx:1.27"});
    create_myapp(&client, &namespace, "demo-app", spec.clone()).await;
    let beta = wait_for("demo-app served at v1beta1", || async {
        at(&client, &namespace, "v1beta1")
            .get("demo-app")
            .await
            .ok()
    })
    .await;
    assert_eq!(
        beta.data["spec"],
        json!({"replicas": 2, "template": {"image": "nginx:1.27"}})
    );
    let alpha = get(&client, &namespace, "v1alpha1", "demo-app").await;
    assert_eq!(alpha["spec"], spec);
    assert_eq!(alpha["metadata"]["uid"], json!(beta.metadata.uid));
    assert!(alpha["metadata"]["annotations"].is_null(), "{alpha}");
    let what = "demo-app's Deployment";
    wait_deployment(&client, &namespace, "demo-app-deploy", what, |d| {
        replicas_and_image(d) == (Some(2), Some("nginx:1.27".into()))
    })
    .await;

    // Created at v1beta1 with what v1alpha1 cannot hold: the host (watching v1alpha1) still applies
    // it, read through the annotation that keeps it.
    let resources = json!({"requests": {"cpu": "100m"}, "limits": {"memory": "64Mi"}});
    let sized: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1beta1", "kind": "MyApp",
        "metadata": {"name": "sized", "namespace": namespace},
        "spec": {"replicas": 1, "template": {"image": "nginx:1.27", "resources": resources}},
    }))
    .unwrap();
    at(&client, &namespace, "v1beta1")
        .create(&PostParams::default(), &sized)
        .await
        .unwrap();
    let what = "sized's Deployment with the v1beta1 resources";
    wait_deployment(&client, &namespace, "sized-deploy", what, |d| {
        let container = &d
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0];
        serde_json::to_value(&container.resources).unwrap() == resources
    })
    .await;
    let alpha = get(&client, &namespace, "v1alpha1", "sized").await;
    assert_eq!(alpha["spec"]["image"], "nginx:1.27");
    assert!(
        alpha["metadata"]["annotations"]["myapp.example.com/v1beta1-template"].is_string(),
        "{alpha}"
    );
    let beta = get(&client, &namespace, "v1beta1", "sized").await;
    assert_eq!(beta["spec"]["template"]["resources"], resources);
    assert!(beta["metadata"]["annotations"].is_null(), "{beta}");

    // A swap changes the conversion live: the faults guest's convert only sets apiVersion.
    replace_module(&module, "guest_faults");
    wait_demo_app_at_v1beta1(
        &client,
        &namespace,
        "the faults guest's conversion",
        "/spec/image",
        "nginx:1.27",
    )
    .await;
    // A conversion that fails reaches the client with the guest's message; the object stays readable
    // at the version it is stored in, and the other objects at either version.
    for (fault, said) in [
        ("error", "conversion refused by the faults guest"),
        ("wrong-uid", "uid"),
    ] {
        let annotate = json!({"metadata": {"annotations": {"faults.example.com/convert": fault}}});
        at(&client, &namespace, "v1alpha1")
            .patch(
                "demo-app",
                &PatchParams::default(),
                &Patch::Merge(&annotate),
            )
            .await
            .unwrap();
        let error = kubectl_get_error(cluster, &namespace, "v1beta1", "demo-app");
        assert!(
            error.contains(said) && error.contains("demo-app"),
            "{error}"
        );
        get(&client, &namespace, "v1alpha1", "demo-app").await;
        get(&client, &namespace, "v1beta1", "sized").await;
    }
    // A conversion may change the version and the content, not the metadata: one that adds a label,
    // or drops a finalizer, is refused naming the field, and a Warning Event on the CRD tells it.
    let finalizers = |object: &Value| object["metadata"]["finalizers"].clone();
    let before = finalizers(&get(&client, &namespace, "v1alpha1", "demo-app").await);
    let mut held = before.as_array().cloned().unwrap_or_default();
    held.push(json!("faults.example.com/hold"));
    for (fault, field, held) in [
        (
            "add-label",
            r#"metadata.labels["faults.example.com/converted"]"#,
            before.clone(),
        ),
        ("drop-finalizers", "metadata.finalizers", json!(held)),
    ] {
        let patch = json!({"metadata": {
            "annotations": {"faults.example.com/convert": fault}, "finalizers": held,
        }});
        at(&client, &namespace, "v1alpha1")
            .patch("demo-app", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        let error = kubectl_get_error(cluster, &namespace, "v1beta1", "demo-app");
        let said = format!(
            "converting MyApp {namespace}/demo-app to example.com/v1beta1: the converter changed {field}"
        );
        assert!(error.contains(&said), "{fault}: {error}");
        let event = wait_event_saying(
            &client,
            "default",
            Some(CRD),
            "ConversionMetadataChanged",
            &said,
        )
        .await;
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        let regarding = event.involved_object;
        assert_eq!(regarding.kind.as_deref(), Some("CustomResourceDefinition"));
        assert_eq!(
            regarding.uid,
            crds(&client).get(CRD).await.unwrap().metadata.uid
        );
        // Nothing was stored with the metadata the converter made.
        let stored = get(&client, &namespace, "v1alpha1", "demo-app").await;
        assert!(
            stored["metadata"]["labels"]
                .get("faults.example.com/converted")
                .is_none(),
            "{stored}"
        );
    }
    let release = json!({"metadata": {"finalizers": before}});
    at(&client, &namespace, "v1alpha1")
        .patch("demo-app", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    let metrics_addr = host.metrics_addr().unwrap();
    let (_, metrics) = http::get(&metrics_addr, "/metrics").unwrap();
    for result in [
        "ConverterFailed",
        "ConversionInvalid",
        "ConversionMetadataChanged",
        "success",
    ] {
        let labels = format!("result=\"{result}\"");
        assert!(
            http::sample(&metrics, "reconcile_host_conversions_total", &labels) >= 1.0,
            "{result}: {metrics}"
        );
    }
    let refused = r#"reason="GuestRejected""#;
    assert!(
        http::sample(&metrics, "reconcile_host_guest_failures_total", refused) >= 1.0,
        "{metrics}"
    );
    replace_module(&module, "guest_myapp");
    wait_demo_app_at_v1beta1(
        &client,
        &namespace,
        "the MyApp guest's conversion again",
        "/spec/template/image",
        "nginx:1.27",
    )
    .await;

    // Storage moves to v1beta1. Until the migration, demo-app is still stored at v1alpha1: with the
    // conversion off, the API server serves it at v1beta1 as stored, image at spec.image.
    let storage = json!([
        {"op": "replace", "path": "/spec/versions/0/storage", "value": false},
        {"op": "replace", "path": "/spec/versions/1/storage", "value": true},
    ]);
    patch_versions(&client, storage).await;
    let gvk = GroupVersionKind::gvk("example.com", "v1beta1", "MyApp");
    let stored = ApiResource::from_gvk_with_plural(&gvk, "myapps");
    reconcile_host::migrate::wait_for_storage_version(&client, &stored)
        .await
        .unwrap();
    // (The API server takes a moment to serve the CRD's new conversion: poll for its effect.)
    set_conversion(&client, None).await;
    wait_demo_app_at_v1beta1(
        &client,
        &namespace,
        "demo-app served as stored, at spec.image",
        "/spec/image",
        "nginx:1.27",
    )
    .await;
    set_conversion(&client, Some(port)).await;
    // The host puts its caBundle back on the stanza it was removed with.
    wait_ca_bundle(&client).await;
    wait_demo_app_at_v1beta1(
        &client,
        &namespace,
        "demo-app converted by the module again",
        "/spec/template/image",
        "nginx:1.27",
    )
    .await;
    // A parent written now is stored at v1beta1 while demo-app is still stored at v1alpha1: the host,
    // watching v1alpha1, reconciles both.
    create_myapp(&client, &namespace, "after", json!({"image": "nginx:1.28"})).await;
    let what = "after's Deployment, from a parent stored at v1beta1";
    wait_deployment(&client, &namespace, "after-deploy", what, |d| {
        replicas_and_image(d) == (Some(1), Some("nginx:1.28".into()))
    })
    .await;
    let spec = json!({"replicas": 3, "image": "nginx:1.27"});
    patch_spec(&client, &namespace, "demo-app", spec).await;
    let what = "demo-app's Deployment, from a parent stored at v1alpha1";
    wait_deployment(&client, &namespace, "demo-app-deploy", what, |d| {
        replicas_and_image(d) == (Some(3), Some("nginx:1.27".into()))
    })
    .await;

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reconcile-host"))
        .args(["migrate-storage", "--crd", CRD])
        .env("KUBECONFIG", cluster.kubeconfig_path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Only sized is still stored at v1alpha1: after was created, and demo-app written, since the switch.
    assert!(
        stdout.contains("1 objects rewritten at v1beta1, 2 already stored so"),
        "{stdout}"
    );
    let crd = crds(&client).get(CRD).await.unwrap();
    assert_eq!(
        crd.status.unwrap().stored_versions.unwrap(),
        ["v1beta1"],
        "storedVersions trimmed"
    );

    // Every object is now stored at v1beta1: with the conversion off again, each reads as a v1beta1
    // object, and nothing was lost.
    drop(host);
    set_conversion(&client, None).await;
    // A write at v1alpha1 succeeds only once the API server no longer calls the (stopped) webhook.
    wait_for("the API server without the webhook", || async {
        let probe = serde_json::from_value(json!({
            "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
            "metadata": {"name": "probe", "namespace": namespace},
        }))
        .unwrap();
        let api = at(&client, &namespace, "v1alpha1");
        api.create(&PostParams::default(), &probe).await.ok()
    })
    .await;
    let all = at(&client, &namespace, "v1beta1")
        .list(&Default::default())
        .await
        .unwrap();
    let specs: Vec<(String, Value)> = all
        .items
        .iter()
        .filter(|o| o.metadata.name.as_deref() != Some("probe"))
        .map(|o| (o.metadata.name.clone().unwrap(), o.data["spec"].clone()))
        .collect();
    assert_eq!(
        specs,
        [
            (
                "after".to_string(),
                json!({"template": {"image": "nginx:1.28"}})
            ),
            (
                "demo-app".to_string(),
                json!({"replicas": 3, "template": {"image": "nginx:1.27"}})
            ),
            (
                "sized".to_string(),
                json!({"replicas": 1, "template": {"image": "nginx:1.27", "resources": resources}})
            ),
        ]
    );
}
