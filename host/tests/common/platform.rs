//! Platform mode on the real cluster: deploy/platform installed, the host in `serve` mode as its own
//! ServiceAccount with exactly the shipped RBAC, and teams' reconcilers applied as objects.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::OnceLock;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use reconcile_host::platform::spec::Scope;
use serde_json::{Value, json};
use testcluster::TestCluster;

use super::guests::{component, repo_root};
use super::host::HostProcess;
use super::kubectl::{kubectl_ok, wait_established};
use super::myapp::{ready_condition, wait_object_status, wait_status};

/// The label that ties a test's reconcilers to the test's own platform host (tests share a cluster).
pub const TEST_LABEL: &str = "reconcile-host.dev/test";
const PLATFORM_NAMESPACE: &str = "reconcile-host-system";

/// Applies `documents` with kubectl, server-side, as a user would.
pub fn kubectl_apply(cluster: &TestCluster, documents: &[Value]) {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": documents});
    let mut child = cluster
        .kubectl()
        .args(["apply", "--server-side", "--force-conflicts", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(list.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The documents of a YAML file of the repo.
pub fn documents(path: &str) -> Vec<Value> {
    reconcile_host::render::read_documents(&repo_root().join(path)).unwrap()
}

/// deploy/platform (CRDs, the host's RBAC) and the examples' parent CRDs, once per test process.
pub fn install_platform(cluster: &TestCluster) {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let platform = repo_root().join("deploy/platform");
        kubectl_ok(
            cluster,
            &["apply", "--server-side", "-k", platform.to_str().unwrap()],
        );
        kubectl_apply(cluster, &documents("deploy/crd.yaml"));
        kubectl_apply(cluster, &documents("examples/website/crd.yaml"));
        for crd in [
            "reconcilers.reconcile-host.dev",
            "clusterreconcilers.reconcile-host.dev",
            "myapps.example.com",
            "websites.example.com",
        ] {
            wait_established(cluster, crd);
        }
    });
}

/// A platform host running as its shipped ServiceAccount, serving only reconcilers labelled `test`.
pub async fn platform_host(cluster: &TestCluster, test: &str, extra: &[&str]) -> HostProcess {
    platform_replica(cluster, test, test, extra).await
}

/// As `platform_host`, as the replica (Pod) `identity`: several of one test take part in one
/// leader election.
pub async fn platform_replica(
    cluster: &TestCluster,
    test: &str,
    identity: &str,
    extra: &[&str],
) -> HostProcess {
    install_platform(cluster);
    let kubeconfig = cluster
        .service_account_kubeconfig(PLATFORM_NAMESPACE, "reconcile-host-platform")
        .await
        .unwrap();
    let selector = format!("{TEST_LABEL}={test}");
    let mut args = vec!["--reconciler-selector", &selector];
    args.extend_from_slice(extra);
    HostProcess::serve(
        &kubeconfig,
        &args,
        &[
            ("POD_NAMESPACE", PLATFORM_NAMESPACE),
            ("POD_NAME", identity),
        ],
    )
}

/// An example's team RBAC (`examples/<example>/reconciler/rbac.yaml`) in `namespace`, each Role rule
/// passed through `edit` first (a test takes a verb away this way).
pub fn apply_team_rbac(
    cluster: &TestCluster,
    example: &str,
    namespace: &str,
    edit: impl FnMut(&mut Value),
) {
    let path = format!("examples/{example}/reconciler/rbac.yaml");
    apply_rbac_file(cluster, &path, namespace, edit);
}

/// The RBAC documents of `path` (a file of the repo) in `namespace`, each Role rule passed through
/// `edit` first.
pub fn apply_rbac_file(
    cluster: &TestCluster,
    path: &str,
    namespace: &str,
    mut edit: impl FnMut(&mut Value),
) {
    let mut docs = documents(path);
    for doc in &mut docs {
        doc["metadata"]["namespace"] = json!(namespace);
        if let Some(subjects) = doc.get_mut("subjects").and_then(Value::as_array_mut) {
            for subject in subjects {
                subject["namespace"] = json!(namespace);
            }
        }
        if let Some(rules) = doc.get_mut("rules").and_then(Value::as_array_mut) {
            rules.iter_mut().for_each(&mut edit);
        }
    }
    kubectl_apply(cluster, &docs);
}

/// Creates or replaces the module ConfigMap `name` with `module` under `key`.
pub async fn put_module(client: &Client, namespace: &str, name: &str, key: &str, module: &Path) {
    let bytes = std::fs::read(module).unwrap();
    put_module_bytes(client, namespace, name, key, bytes).await;
}

pub async fn put_module_bytes(
    client: &Client,
    namespace: &str,
    name: &str,
    key: &str,
    bytes: Vec<u8>,
) {
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        binary_data: Some(BTreeMap::from([(key.to_string(), ByteString(bytes))])),
        ..Default::default()
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    api.patch(name, &PatchParams::apply("e2e").force(), &Patch::Apply(&cm))
        .await
        .unwrap();
}

/// `examples/<example>/reconciler/reconciler.yaml`, in `namespace`, labelled for `test`'s host.
pub fn example_reconciler(example: &str, namespace: &str, test: &str) -> Value {
    let path = format!("examples/{example}/reconciler/reconciler.yaml");
    reconciler_from(&path, namespace, test)
}

/// The Reconciler of `path` (a file of the repo), in `namespace`, labelled for `test`'s host.
pub fn reconciler_from(path: &str, namespace: &str, test: &str) -> Value {
    let mut reconciler = documents(path).remove(0);
    reconciler["metadata"]["namespace"] = json!(namespace);
    reconciler["metadata"]["labels"] = json!({ TEST_LABEL: test });
    reconciler
}

pub fn reconcilers(client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &Scope::Namespaced.resource()),
        None => Api::all_with(client.clone(), &Scope::Cluster.resource()),
    }
}

/// Creates or updates a Reconciler or ClusterReconciler (server-side apply, as kubectl would).
pub async fn apply_reconciler(client: &Client, reconciler: &Value) {
    let object: DynamicObject = serde_json::from_value(reconciler.clone()).unwrap();
    let name = object.metadata.name.clone().unwrap();
    reconcilers(client, object.metadata.namespace.as_deref())
        .patch(
            &name,
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap();
}

/// The reconciler's status once `predicate` holds for it.
pub async fn wait_reconciler(
    client: &Client,
    namespace: Option<&str>,
    name: &str,
    what: &str,
    predicate: impl Fn(&Value) -> bool,
) -> Value {
    wait_object_status(&reconcilers(client, namespace), name, what, predicate).await
}

pub fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Whether `Ready` has `status` ("True"/"False") and `reason`.
pub fn ready_is(status: &Value, ready: &str, reason: &str) -> bool {
    condition(status, "Ready").is_some_and(|c| c["status"] == ready && c["reason"] == reason)
}

pub fn website_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1alpha1", "Website"),
        "websites",
    )
}

pub fn websites(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &website_resource())
}

/// Creates a Website from examples/website/website.yaml in `namespace`.
pub async fn create_website(client: &Client, namespace: &str) -> DynamicObject {
    let mut website = documents("examples/website/website.yaml").remove(0);
    website["metadata"]["namespace"] = json!(namespace);
    let object: DynamicObject = serde_json::from_value(website).unwrap();
    websites(client, namespace)
        .create(&Default::default(), &object)
        .await
        .unwrap()
}

/// Team A's MyApp reconciler in `namespace`: RBAC, module and Reconciler, as the example ships them.
pub async fn add_myapp_reconciler(cluster: &TestCluster, namespace: &str, test: &str) -> Value {
    let client = cluster.client().await.unwrap();
    apply_team_rbac(cluster, "myapp", namespace, |_| {});
    put_module(
        &client,
        namespace,
        "myapp-module",
        "myapp.wasm",
        &component("guest_myapp"),
    )
    .await;
    let reconciler = example_reconciler("myapp", namespace, test);
    apply_reconciler(&client, &reconciler).await;
    reconciler
}

pub async fn add_website_reconciler(cluster: &TestCluster, namespace: &str, test: &str) {
    let client = cluster.client().await.unwrap();
    apply_team_rbac(cluster, "website", namespace, |_| {});
    put_module(
        &client,
        namespace,
        "website-module",
        "website.wasm",
        &component("guest_website"),
    )
    .await;
    apply_reconciler(&client, &example_reconciler("website", namespace, test)).await;
}

pub async fn wait_ready_myapp(client: &kube::Client, namespace: &str, name: &str) -> Value {
    wait_status(
        client,
        namespace,
        name,
        &format!("{namespace}/{name} Ready"),
        |s| s["phase"] == "Ready" && ready_condition(s).is_some_and(|c| c["status"] == "True"),
    )
    .await
}
