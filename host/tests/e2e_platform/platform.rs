//! Platform mode (`serve`) on the real control plane: reconcilers declared as objects, run by one host
//! that holds only the shipped platform RBAC and acts as each reconciler's ServiceAccount; added,
//! changed, swapped, paused and deleted live; a ClusterReconciler across namespaces, and bounded by a
//! namespace selector (isolation: e2e_platform/platform_isolation.rs).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::{component, myapp_variant_b};
use crate::common::http;
use crate::common::kubectl::kubectl_ok;
use crate::common::myapp::*;
use crate::common::platform::*;

#[tokio::test]
async fn two_teams_reconcilers_of_different_kinds_run_on_one_host() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let team_a = cluster.namespace("team-a").await.unwrap();
    let team_b = cluster.namespace("team-b").await.unwrap();
    let host = platform_host(cluster, "two-teams", &[]).await;

    add_myapp_reconciler(cluster, &team_a, "two-teams").await;
    add_website_reconciler(cluster, &team_b, "two-teams").await;
    create_myapp(
        &client,
        &team_a,
        "demo-app",
        json!({"replicas": 2, "image": "nginx:1.23"}),
    )
    .await;
    create_website(&client, &team_b).await;

    wait_ready_myapp(&client, &team_a, "demo-app").await;
    let deployment = deployments(&client, &team_a)
        .get("demo-app-deploy")
        .await
        .unwrap();
    assert_eq!(
        replicas_and_image(&deployment),
        (Some(2), Some("nginx:1.23".into()))
    );
    let websites = websites(&client, &team_b);
    wait_for("the Website serving", || async {
        let site = websites.get("docs").await.ok()?;
        (site.data["status"]["phase"] == "Serving").then_some(())
    })
    .await;
    let content: Api<ConfigMap> = Api::namespaced(client.clone(), &team_b);
    assert!(
        content.get("docs-content").await.unwrap().data.unwrap()["index.html"].contains("Team B")
    );
    let services: Api<Service> = Api::namespaced(client.clone(), &team_b);
    services.get("docs").await.unwrap();

    for (namespace, name) in [(&team_a, "myapp"), (&team_b, "website")] {
        let status = wait_reconciler(
            &client,
            Some(namespace),
            name,
            "reconciler Ready, 1 parent",
            |s| ready_is(s, "True", "Running") && s["parents"] == 1 && s["failingParents"] == 0,
        )
        .await;
        assert!(
            status["moduleDigest"]
                .as_str()
                .unwrap()
                .starts_with("sha256:"),
            "{status}"
        );
    }
    let printed = cluster
        .kubectl()
        .args(["get", "reconcilers", "-n", &team_a])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&printed.stdout);
    assert!(
        printed.contains("MyApp") && printed.contains("Running"),
        "{printed}"
    );

    let (_, metrics) = http::get(&host.metrics_addr().unwrap(), "/metrics").unwrap();
    for controller in [format!("{team_a}/myapp"), format!("{team_b}/website")] {
        let series = format!(
            "controller_runtime_reconcile_total{{controller=\"{controller}\",result=\"success\"}}"
        );
        assert!(metrics.contains(&series), "no {series} in:\n{metrics}");
        let module = format!("reconcile_host_active_module{{controller=\"{controller}\"");
        assert!(metrics.contains(&module), "no {module} in:\n{metrics}");
    }
}

#[tokio::test]
async fn reconcilers_are_added_changed_swapped_paused_and_deleted_live() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let team_a = cluster.namespace("live-a").await.unwrap();
    let team_b = cluster.namespace("live-b").await.unwrap();
    let _host = platform_host(cluster, "live", &[]).await;

    // Added to the running host: its parents converge.
    add_website_reconciler(cluster, &team_b, "live").await;
    create_website(&client, &team_b).await;
    let mut reconciler = add_myapp_reconciler(cluster, &team_a, "live").await;
    create_myapp(&client, &team_a, "app", json!({"replicas": 1})).await;
    wait_ready_myapp(&client, &team_a, "app").await;
    let site_deployment = |client: kube::Client, ns: String| async move {
        deployments(&client, &ns).get("docs").await.ok()
    };
    let website_before = wait_for("the Website's Deployment", || {
        site_deployment(client.clone(), team_b.clone())
    })
    .await;

    // A module swap of one reconciler: its children change, the other reconciler's do not.
    put_module(
        &client,
        &team_a,
        "myapp-module",
        "myapp.wasm",
        &myapp_variant_b(),
    )
    .await;
    wait_deployment(&client, &team_a, "app-deploy", "the variant-b label", |d| {
        d.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get("example.com/variant").map(String::as_str) == Some("b"))
    })
    .await;
    let website_after = site_deployment(client.clone(), team_b.clone())
        .await
        .unwrap();
    assert_eq!(
        written_by_host(&website_before),
        written_by_host(&website_after),
        "the other reconciler's child was touched by a swap it has nothing to do with"
    );

    // A changed spec restarts the reconciler with it; it still converges.
    reconciler["spec"]["concurrency"] = json!(2);
    apply_reconciler(&client, &reconciler).await;
    let reconcilers = reconcilers(&client, Some(&team_a));
    let generation = reconcilers
        .get("myapp")
        .await
        .unwrap()
        .metadata
        .generation
        .unwrap();
    wait_reconciler(
        &client,
        Some(&team_a),
        "myapp",
        "the new generation running",
        |s| s["observedGeneration"] == generation && ready_is(s, "True", "Running"),
    )
    .await;
    patch_spec(&client, &team_a, "app", json!({"replicas": 2})).await;
    wait_deployment(&client, &team_a, "app-deploy", "2 replicas", |d| {
        replicas_and_image(d).0 == Some(2)
    })
    .await;

    // Paused: nothing is applied until it resumes.
    reconciler["spec"]["paused"] = json!(true);
    apply_reconciler(&client, &reconciler).await;
    wait_reconciler(&client, Some(&team_a), "myapp", "Paused", |s| {
        ready_is(s, "False", "Paused")
    })
    .await;
    patch_spec(&client, &team_a, "app", json!({"replicas": 3})).await;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let paused = deployments(&client, &team_a)
        .get("app-deploy")
        .await
        .unwrap();
    assert_eq!(
        replicas_and_image(&paused).0,
        Some(2),
        "a paused reconciler applied a change"
    );
    reconciler["spec"]["paused"] = json!(false);
    apply_reconciler(&client, &reconciler).await;
    wait_deployment(
        &client,
        &team_a,
        "app-deploy",
        "3 replicas after resuming",
        |d| replicas_and_image(d).0 == Some(3),
    )
    .await;

    // Deleted: its controller stops and its children stay.
    reconcilers
        .delete("myapp", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("the reconciler gone", || async {
        reconcilers
            .get_opt("myapp")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    patch_spec(&client, &team_a, "app", json!({"replicas": 1})).await;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let left = deployments(&client, &team_a)
        .get("app-deploy")
        .await
        .unwrap();
    assert_eq!(
        replicas_and_image(&left).0,
        Some(3),
        "a deleted reconciler still reconciles"
    );
    // The other team's reconciler runs on.
    wait_reconciler(
        &client,
        Some(&team_b),
        "website",
        "website still Running",
        |s| ready_is(s, "True", "Running"),
    )
    .await;
}

#[tokio::test]
async fn a_cluster_reconciler_serves_parents_in_every_namespace() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "cluster-wide";
    let _host = platform_host(cluster, test, &[]).await;
    let (first, second) = (
        cluster.namespace("anywhere").await.unwrap(),
        cluster.namespace("everywhere").await.unwrap(),
    );
    let myapp = ClusterMyApp::new(cluster, test, "cluster-test.example.com", &[]).await;
    apply_reconciler(&client, &myapp.reconciler).await;

    for namespace in [&first, &second] {
        myapp.create(&client, namespace).await;
        myapp.wait_ready(&client, namespace).await;
    }
    wait_reconciler(
        &client,
        None,
        &myapp.name,
        "the ClusterReconciler Running",
        |s| ready_is(s, "True", "Running") && s["parents"].as_u64() >= Some(2),
    )
    .await;
}

#[tokio::test]
async fn a_cluster_reconciler_takes_only_the_namespaces_its_selector_matches() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "namespace-selector";
    let _host = platform_host(cluster, test, &[]).await;
    let (inside, outside) = (
        cluster.namespace("selected").await.unwrap(),
        cluster.namespace("unselected").await.unwrap(),
    );
    const SELECTED: &str = "example.com/namespace-selector-test";
    let label = |namespace: &str, value: Option<&str>| {
        let labelled = match value {
            Some(value) => format!("{SELECTED}={value}"),
            None => format!("{SELECTED}-"),
        };
        kubectl_ok(
            cluster,
            &["label", "--overwrite", "namespace", namespace, &labelled],
        );
    };
    label(&inside, Some("yes"));
    // The namespace watch is made as the reconciler's ServiceAccount: it needs to list Namespaces.
    let read_namespaces =
        json!({"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]});
    let mut myapp = ClusterMyApp::new(
        cluster,
        test,
        "ns-selector-test.example.com",
        &[read_namespaces],
    )
    .await;
    myapp.reconciler["spec"]["namespaceSelector"] = json!(SELECTED);
    apply_reconciler(&client, &myapp.reconciler).await;
    myapp.create(&client, &inside).await;
    myapp.create(&client, &outside).await;

    // Only the parent in the labelled namespace is taken: the reconciler counts one, and the other
    // has neither status nor Deployment once the first is Ready.
    myapp.wait_ready(&client, &inside).await;
    wait_reconciler(&client, None, &myapp.name, "one parent taken", |s| {
        ready_is(s, "True", "Running") && s["parents"].as_u64() == Some(1)
    })
    .await;
    let untouched = myapp.api(&client, &outside).get("app").await.unwrap();
    assert!(untouched.data.get("status").is_none(), "{untouched:?}");
    assert!(
        deployments(&client, &outside)
            .get_opt("app-deploy")
            .await
            .unwrap()
            .is_none()
    );

    // Labelled: taken. Unlabelled: released, its Deployment deleted, as a decorator's parent is.
    label(&outside, Some("too"));
    myapp.wait_ready(&client, &outside).await;
    let inside_deployment = deployments(&client, &inside)
        .get_opt("app-deploy")
        .await
        .unwrap();
    assert!(
        inside_deployment.is_some(),
        "the taken parent has its Deployment"
    );
    label(&inside, None);
    wait_for("the released parent's Deployment deleted", || async {
        let left = deployments(&client, &inside)
            .get_opt("app-deploy")
            .await
            .unwrap();
        left.is_none().then_some(())
    })
    .await;
    wait_reconciler(&client, None, &myapp.name, "again one parent taken", |s| {
        s["parents"].as_u64() == Some(1)
    })
    .await;
    assert!(
        deployments(&client, &outside)
            .get_opt("app-deploy")
            .await
            .unwrap()
            .is_some()
    );
}

/// A ClusterReconciler of a MyApp kind of its own group (one of every namespace would otherwise also
/// reconcile the other tests' MyApps), with the example's rules (and `extra_rules`) granted
/// cluster-wide to a ServiceAccount of a platform team; the reconciler object is left to apply.
struct ClusterMyApp {
    name: String,
    group: &'static str,
    resource: ApiResource,
    reconciler: serde_json::Value,
}

impl ClusterMyApp {
    async fn new(
        cluster: &TestCluster,
        test: &str,
        group: &'static str,
        extra_rules: &[serde_json::Value],
    ) -> ClusterMyApp {
        let client = cluster.client().await.unwrap();
        let platform = cluster.namespace("platform-team").await.unwrap();
        let mut crd = documents("deploy/crd.yaml").remove(0);
        crd["metadata"]["name"] = json!(format!("myapps.{group}"));
        crd["spec"]["group"] = json!(group);
        kubectl_apply(cluster, &[crd]);
        let established = cluster
            .kubectl()
            .args([
                "wait",
                "--for",
                "condition=established",
                &format!("crd/myapps.{group}"),
            ])
            .output()
            .unwrap();
        assert!(established.status.success());
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, "v1alpha1", "MyApp"),
            "myapps",
        );

        let name = format!("{platform}-myapp");
        let mut role = documents("examples/myapp/reconciler/rbac.yaml")
            .into_iter()
            .find(|d| d["kind"] == "Role")
            .unwrap();
        role["kind"] = json!("ClusterRole");
        role["metadata"] = json!({"name": name});
        let rules = role["rules"].as_array_mut().unwrap();
        for rule in rules.iter_mut() {
            if rule["apiGroups"] == json!(["example.com"]) {
                rule["apiGroups"] = json!([group]);
            }
        }
        rules.extend(extra_rules.iter().cloned());
        kubectl_apply(
            cluster,
            &[
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "myapp", "namespace": platform}}),
                role,
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                   "subjects": [{"kind": "ServiceAccount", "name": "myapp", "namespace": platform}]}),
            ],
        );
        put_module(
            &client,
            &platform,
            "myapp-module",
            "myapp.wasm",
            &component("guest_myapp"),
        )
        .await;
        let mut reconciler = example_reconciler("myapp", &platform, test);
        reconciler["kind"] = json!("ClusterReconciler");
        reconciler["metadata"] = json!({"name": name, "labels": {TEST_LABEL: test}});
        reconciler["spec"]["module"]["configMap"]["namespace"] = json!(platform);
        reconciler["spec"]["serviceAccount"] = json!({"namespace": platform, "name": "myapp"});
        reconciler["spec"]["parent"]["apiVersion"] = json!(format!("{group}/v1alpha1"));
        reconciler["spec"]
            .as_object_mut()
            .unwrap()
            .remove("serviceAccountName");
        ClusterMyApp {
            name,
            group,
            resource,
            reconciler,
        }
    }

    fn api(&self, client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(client.clone(), namespace, &self.resource)
    }

    /// Creates the MyApp `app` in `namespace`.
    async fn create(&self, client: &kube::Client, namespace: &str) {
        let app = json!({"apiVersion": format!("{}/v1alpha1", self.group), "kind": "MyApp", "metadata": {"name": "app"}, "spec": {}});
        (self.api(client, namespace))
            .create(
                &PostParams::default(),
                &serde_json::from_value(app).unwrap(),
            )
            .await
            .unwrap();
    }

    async fn wait_ready(&self, client: &kube::Client, namespace: &str) {
        let api = self.api(client, namespace);
        wait_for("the MyApp Ready", || async {
            let app = api.get("app").await.ok()?;
            (app.data["status"]["phase"] == "Ready").then_some(())
        })
        .await;
    }
}

/// What a write by the host would change on a child: its generation (spec), its labels and the host's
/// managedFields entry. Not the resourceVersion: the cluster's Deployment controller moves it with
/// every status update.
fn written_by_host(
    deployment: &Deployment,
) -> (
    Option<i64>,
    Option<BTreeMap<String, String>>,
    Option<String>,
) {
    let entry = deployment
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|m| m.manager.as_deref() == Some("reconcile-host") && m.subresource.is_none());
    (
        deployment.metadata.generation,
        deployment.metadata.labels.clone(),
        entry.map(|m| format!("{:?} {:?}", m.time, m.fields_v1)),
    )
}
