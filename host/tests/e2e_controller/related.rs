//! End to end on the real control plane: related objects. The ConfiguredApp guest (`guests/configured`,
//! world `relating-reconciler`) selects the ConfigMap its parent's spec names; the host reads it from
//! its cache, hands it to `reconcile`, and reconciles exactly the parents that selected an object that
//! changed. Selectors outside the operator's allow-list or the parent's namespace are refused on that
//! parent alone. `plan` hands the module the same related objects, listed live.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::events::wait_event;
use crate::common::guests::{component, repo_root};
use crate::common::host::HostProcess;
use crate::common::http::{get, sample};
use crate::common::kubectl::apply_crd;
use crate::common::myapp::{ready_condition, wait_deployment, wait_object_status};

const HASH: &str = "example.com/config-hash";

struct Setup {
    cluster: &'static TestCluster,
    client: Client,
    namespace: String,
    host: HostProcess,
}

/// A host for ConfiguredApps in a namespace of its own, allowed to read `related` kinds.
async fn setup(prefix: &str, related: &[&str]) -> Setup {
    let cluster = TestCluster::shared();
    apply_crd(
        cluster,
        &repo_root().join("examples/configured/crd.yaml"),
        "configuredapps.example.com",
    );
    let namespace = cluster.namespace(prefix).await.unwrap();
    let module = component("guest_configured");
    let mut args = vec![
        "--parent",
        "example.com/v1alpha1/ConfiguredApp",
        "--child",
        "apps/v1/Deployment",
        "--namespace",
        &namespace,
        "--module",
        module.to_str().unwrap(),
    ];
    for kind in related {
        args.extend(["--related", kind]);
    }
    let host = HostProcess::start(cluster.kubeconfig_path(), &args);
    Setup {
        client: cluster.client().await.unwrap(),
        cluster,
        namespace,
        host,
    }
}

impl Setup {
    fn apps(&self) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("example.com", "v1alpha1", "ConfiguredApp");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "configuredapps");
        Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    async fn create_app(&self, name: &str, spec: Value) {
        let app = serde_json::from_value(json!({
            "apiVersion": "example.com/v1alpha1", "kind": "ConfiguredApp",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap();
        self.apps()
            .create(&PostParams::default(), &app)
            .await
            .unwrap();
    }

    async fn create_config_map(&self, name: &str, greeting: &str) {
        let config_map = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"greeting": greeting},
        }))
        .unwrap();
        self.config_maps()
            .create(&PostParams::default(), &config_map)
            .await
            .unwrap();
    }

    /// The app's status once its Ready condition has `ready` and `predicate` holds.
    async fn wait_app(&self, name: &str, what: &str, predicate: impl Fn(&Value) -> bool) -> Value {
        wait_object_status(&self.apps(), name, what, predicate).await
    }

    /// The Deployment once the deployment controller has seen its latest generation: nothing the
    /// cluster does changes it afterwards (no replicas).
    async fn settled_deployment(&self, name: &str) -> Deployment {
        wait_deployment(
            &self.client,
            &self.namespace,
            name,
            "a settled Deployment",
            |d| d.status.as_ref().and_then(|s| s.observed_generation) == d.metadata.generation,
        )
        .await
    }

    /// The message of `app`'s `Ready` condition once it says `RelatedNotAllowed`.
    async fn refused(&self, app: &str) -> String {
        let status = self
            .wait_app(app, "a refused selection", |status| {
                ready_condition(status).is_some_and(|c| c["reason"] == "RelatedNotAllowed")
            })
            .await;
        ready_condition(&status).unwrap()["message"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn metric(&self, metric: &str, labels: &str) -> f64 {
        let addr = self
            .host
            .metrics_addr()
            .expect("the host logs its metrics address");
        let (_, body) = get(&addr, "/metrics").unwrap();
        sample(&body, metric, labels)
    }
}

fn hash_of(deployment: &Deployment) -> Option<String> {
    deployment
        .spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(HASH)
        .cloned()
}

fn found(status: &Value) -> bool {
    status["configMap"] == "Found" && ready_condition(status).is_some_and(|c| c["status"] == "True")
}

#[tokio::test]
async fn a_config_map_edit_rolls_its_parent_and_no_other() {
    let s = setup("related-edit", &["v1/ConfigMap"]).await;
    let _guard = failure_guard(s.cluster);
    for (app, config_map) in [("a", "config-a"), ("b", "config-b")] {
        s.create_config_map(config_map, "hello").await;
        let spec = json!({"image": "nginx:1.27", "configMapName": config_map, "replicas": 0});
        s.create_app(app, spec).await;
    }
    s.wait_app("a", "a with its ConfigMap", found).await;
    s.wait_app("b", "b with its ConfigMap", found).await;
    let a_before = hash_of(&s.settled_deployment("a").await).unwrap();
    let b_before = s.settled_deployment("b").await;
    let b_status = s.apps().get("b").await.unwrap();
    let triggers = "reconcile_host_related_triggers_total";
    let triggered = s.metric(triggers, "");

    let edit = json!({"data": {"greeting": "bonjour"}});
    s.config_maps()
        .patch("config-a", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    let a_after = wait_deployment(&s.client, &s.namespace, "a", "a's new config hash", |d| {
        hash_of(d).is_some_and(|hash| hash != a_before)
    })
    .await;
    let a_status = s.apps().get("a").await.unwrap().data["status"].clone();
    assert_eq!(
        a_status["configHash"].as_str(),
        hash_of(&a_after).as_deref()
    );

    // The edit queued exactly one parent: the mapper found a and only a.
    assert_eq!(
        s.metric(triggers, ""),
        triggered + 1.0,
        "parents queued by one edit"
    );
    let b_after = s.settled_deployment("b").await;
    assert_eq!(hash_of(&b_after), hash_of(&b_before));
    assert_eq!(
        b_after.metadata.resource_version, b_before.metadata.resource_version,
        "b's Deployment was written"
    );
    let b_now = s.apps().get("b").await.unwrap();
    assert_eq!(
        b_now.metadata.resource_version,
        b_status.metadata.resource_version
    );
}

#[tokio::test]
async fn a_missing_config_map_is_a_status_until_it_is_created() {
    let s = setup("related-missing", &["v1/ConfigMap"]).await;
    let _guard = failure_guard(s.cluster);
    let spec = json!({"image": "nginx:1.27", "configMapName": "later", "replicas": 0});
    s.create_app("c", spec).await;
    let missing = s
        .wait_app("c", "c reconciled without its ConfigMap", |status| {
            status["configMap"] == "Missing"
                && ready_condition(status).is_some_and(|c| c["status"] == "True")
        })
        .await;
    assert_eq!(missing["configHash"], "missing");

    s.create_config_map("later", "hello").await;
    let status = s.wait_app("c", "c with its new ConfigMap", found).await;
    assert_ne!(status["configHash"], "missing");
    let deployment = s.settled_deployment("c").await;
    assert_eq!(
        hash_of(&deployment).as_ref(),
        status["configHash"].as_str().map(String::from).as_ref()
    );
}

#[tokio::test]
async fn a_selector_of_another_namespace_is_refused_on_its_parent_alone() {
    let s = setup("related-namespace", &["v1/ConfigMap"]).await;
    let _guard = failure_guard(s.cluster);
    s.create_config_map("mine", "hello").await;
    let elsewhere = json!({"image": "nginx:1.27", "configMapName": "mine",
                           "configMapNamespace": "kube-system", "replicas": 0});
    s.create_app("nosy", elsewhere).await;
    s.create_app(
        "fine",
        json!({"image": "nginx:1.27", "configMapName": "mine", "replicas": 0}),
    )
    .await;

    let message = s.refused("nosy").await;
    assert!(
        message.contains("kube-system") && message.contains("may only read its own"),
        "{message}"
    );
    let event = wait_event(&s.client, &s.namespace, Some("nosy"), "RelatedNotAllowed").await;
    assert!(event.message.unwrap_or_default().contains("kube-system"));
    assert!(s.metric("reconcile_host_guest_failures_total", "RelatedNotAllowed") >= 1.0);
    let none = Api::<Deployment>::namespaced(s.client.clone(), &s.namespace)
        .get_opt("nosy")
        .await
        .unwrap();
    assert!(none.is_none(), "a refused parent got a Deployment");
    s.wait_app("fine", "the other parent reconciled", found)
        .await;
}

#[tokio::test]
async fn a_kind_the_operator_did_not_allow_is_refused_naming_the_allow_list() {
    let s = setup("related-allow", &[]).await;
    let _guard = failure_guard(s.cluster);
    s.create_config_map("settings", "hello").await;
    s.create_app(
        "app",
        json!({"image": "nginx:1.27", "configMapName": "settings", "replicas": 0}),
    )
    .await;
    let message = s.refused("app").await;
    assert!(
        message.contains("v1/ConfigMap")
            && message.contains("allowed: none")
            && message.contains("--related"),
        "{message}"
    );
    let mut s = s;
    assert!(
        s.host.is_running(),
        "the host stopped on a refused selector"
    );
}

/// Runs `plan` with the ConfiguredApp guest over `s`'s namespace, as the host there runs it, plus
/// `extra`: its exit code and its JSON report.
fn plan(s: &Setup, extra: &[&str]) -> (i32, Value) {
    let module = component("guest_configured");
    let mut args = vec!["--parent", "example.com/v1alpha1/ConfiguredApp"];
    args.extend(["--child", "apps/v1/Deployment", "--namespace", &s.namespace]);
    args.extend(["--module", module.to_str().unwrap()]);
    args.extend_from_slice(extra);
    crate::common::plan::run(s.cluster.kubeconfig_path(), &args)
}

#[tokio::test]
async fn plan_hands_the_module_the_related_objects_the_host_would() {
    let mut s = setup("related-plan", &["v1/ConfigMap"]).await;
    let _guard = failure_guard(s.cluster);
    s.create_config_map("config-web", "hello").await;
    let spec = json!({"image": "nginx:1.27", "configMapName": "config-web", "replicas": 0});
    s.create_app("web", spec).await;
    s.wait_app("web", "web with its ConfigMap", found).await;
    let hash = hash_of(&s.settled_deployment("web").await).unwrap();
    // The host stops: from here on only an edit the plan must see changes anything.
    s.host.kill();

    // The module sees the ConfigMap as the host handed it over: nothing would change.
    let (code, report) = plan(&s, &["--related", "v1/ConfigMap"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["summary"]["unchanged"], 1, "{report}");

    // An edit of the ConfigMap is a new hash on the pod template, as the host would apply it.
    let edit = json!({"data": {"greeting": "bonjour"}});
    s.config_maps()
        .patch("config-web", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    let (code, report) = plan(&s, &["--related", "v1/ConfigMap"]);
    assert_eq!(code, 0, "{report}");
    let parent = &report["parents"][0];
    assert_eq!(parent["verdict"], "changed", "{report}");
    let patch = &parent["changed"][0]["patch"];
    let new_hash = patch
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["path"] == "/spec/template/metadata/annotations/example.com~1config-hash")
        .unwrap_or_else(|| panic!("no new config hash in {patch}"))["value"]
        .clone();
    assert!(
        new_hash != hash.as_str() && new_hash != "missing",
        "{new_hash}"
    );

    // Without the kind allowed, the plan refuses the selection as the host would.
    let (code, report) = plan(&s, &[]);
    assert_eq!(code, 2, "{report}");
    let parent = &report["parents"][0];
    assert_eq!(parent["verdict"], "failing", "{report}");
    assert_eq!(parent["error"]["reason"], "RelatedNotAllowed", "{report}");
}

/// Reads are bounded like writes: a cluster-scoped parent (a Tenant) reads related objects only in the
/// namespaces its children may go to (`--child-namespace`). The ConfiguredApp guest puts a Tenant's
/// Deployment in `spec.namespace` and reads the ConfigMap `spec.configMapNamespace` names.
#[tokio::test]
async fn a_cluster_scoped_parent_reads_only_where_its_children_may_go() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let crd = repo_root().join("examples/namespace-decorator/tenant-crd.yaml");
    apply_crd(cluster, &crd, "tenants.example.com");
    let allowed = cluster.namespace("related-tenant").await.unwrap();
    let outside = cluster.namespace("related-outside").await.unwrap();
    for namespace in [&allowed, &outside] {
        let config_map = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings"}, "data": {"greeting": "hello"},
        }))
        .unwrap();
        Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &config_map)
            .await
            .unwrap();
    }
    // A decorator (a Tenant has no status subresource) of the Tenants labelled for this test only.
    let selector = format!("related-e2e={allowed}");
    let module = component("guest_configured");
    let args = [
        "--parent",
        "example.com/v1alpha1/Tenant",
        "--parent-selector",
        &selector,
        "--child",
        "apps/v1/Deployment",
        "--related",
        "v1/ConfigMap",
        "--child-namespace",
        &allowed,
        "--module",
        module.to_str().unwrap(),
    ];
    let _host = HostProcess::start(cluster.kubeconfig_path(), &args);

    let gvk = GroupVersionKind::gvk("example.com", "v1alpha1", "Tenant");
    let tenants: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "tenants"),
    );
    let tenant = |name: &str, reads: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1alpha1", "kind": "Tenant",
            "metadata": {"name": name, "labels": {"related-e2e": allowed}},
            "spec": {"image": "nginx:1.27", "replicas": 0, "namespace": allowed,
                     "configMapName": "settings", "configMapNamespace": reads},
        }))
        .unwrap()
    };
    let (inside, nosy) = (format!("{allowed}-inside"), format!("{allowed}-nosy"));
    for (name, reads) in [(&inside, &allowed), (&nosy, &outside)] {
        tenants
            .create(&PostParams::default(), &tenant(name, reads))
            .await
            .unwrap();
    }

    // Where its children may go, it reads: the Deployment carries the ConfigMap's hash.
    wait_deployment(
        &client,
        &allowed,
        &inside,
        "a Deployment with the hash",
        |d| hash_of(d).is_some_and(|hash| hash != "missing"),
    )
    .await;
    // Elsewhere, the selection is refused and nothing is applied.
    let refused = wait_event(&client, "default", Some(&nosy), "RelatedNotAllowed").await;
    let message = refused.message.unwrap_or_default();
    assert!(
        message.contains(&format!("namespace {outside}"))
            && message.contains(&format!("--child-namespace {allowed}")),
        "{message}"
    );
    let none = Api::<Deployment>::namespaced(client.clone(), &allowed)
        .get_opt(&nosy)
        .await
        .unwrap();
    assert!(none.is_none(), "a refused parent got a Deployment");
    for name in [inside, nosy] {
        tenants
            .delete(&name, &kube::api::DeleteParams::background())
            .await
            .unwrap();
    }
}
