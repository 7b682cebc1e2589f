//! Platform mode (`serve`) on the real control plane: reconcilers declared as objects, run by one host
//! that holds only the shipped platform RBAC and acts as each reconciler's ServiceAccount; added,
//! changed, paused and deleted live; each failure reported on its own reconciler only.

mod common;

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use common::guests::{component, myapp_variant_b};
use common::http;
use common::myapp::*;
use common::platform::*;

/// Team A's MyApp reconciler in `namespace`: RBAC, module and Reconciler, as the example ships them.
async fn add_myapp_reconciler(cluster: &TestCluster, namespace: &str, test: &str) -> Value {
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

async fn add_website_reconciler(cluster: &TestCluster, namespace: &str, test: &str) {
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

async fn wait_ready_myapp(client: &kube::Client, namespace: &str, name: &str) -> Value {
    wait_status(
        client,
        namespace,
        name,
        &format!("{namespace}/{name} Ready"),
        |s| s["phase"] == "Ready" && ready_condition(s).is_some_and(|c| c["status"] == "True"),
    )
    .await
}

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
        website_before.metadata.resource_version, website_after.metadata.resource_version,
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
async fn each_failure_is_reported_on_its_own_reconciler_only() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "failures";
    let _host = platform_host(cluster, test, &[]).await;
    let healthy = cluster.namespace("healthy").await.unwrap();
    add_myapp_reconciler(cluster, &healthy, test).await;

    // A module that is not a component.
    let bad_module = cluster.namespace("bad-module").await.unwrap();
    apply_team_rbac(cluster, "myapp", &bad_module, |_| {});
    put_module_bytes(
        &client,
        &bad_module,
        "myapp-module",
        "myapp.wasm",
        b"not wasm".to_vec(),
    )
    .await;
    apply_reconciler(&client, &example_reconciler("myapp", &bad_module, test)).await;

    // A parent kind no CRD serves.
    let no_crd = cluster.namespace("no-crd").await.unwrap();
    add_myapp_reconciler(cluster, &no_crd, test).await;
    let mut missing = example_reconciler("myapp", &no_crd, test);
    missing["spec"]["parent"]["kind"] = json!("NoSuchKind");
    apply_reconciler(&client, &missing).await;

    // A ServiceAccount that may not create Deployments, and one that may not watch them.
    let no_create = cluster.namespace("no-create").await.unwrap();
    apply_team_rbac(cluster, "myapp", &no_create, |rule| {
        drop_verb(rule, "deployments", "create")
    });
    put_module(
        &client,
        &no_create,
        "myapp-module",
        "myapp.wasm",
        &component("guest_myapp"),
    )
    .await;
    apply_reconciler(&client, &example_reconciler("myapp", &no_create, test)).await;
    let no_watch = cluster.namespace("no-watch").await.unwrap();
    apply_team_rbac(cluster, "myapp", &no_watch, |rule| {
        drop_verb(rule, "deployments", "watch")
    });
    put_module(
        &client,
        &no_watch,
        "myapp-module",
        "myapp.wasm",
        &component("guest_myapp"),
    )
    .await;
    apply_reconciler(&client, &example_reconciler("myapp", &no_watch, test)).await;

    for namespace in [&healthy, &no_create, &no_watch] {
        create_myapp(&client, namespace, "app", json!({})).await;
    }

    let status = wait_reconciler(&client, Some(&bad_module), "myapp", "ModuleRefused", |s| {
        ready_is(s, "False", "ModuleRefused")
    })
    .await;
    assert!(
        condition(&status, "Ready").unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("component"),
        "{status}"
    );
    let status = wait_reconciler(&client, Some(&no_crd), "myapp", "KindNotServed", |s| {
        ready_is(s, "False", "KindNotServed")
    })
    .await;
    assert!(
        condition(&status, "Ready").unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("NoSuchKind"),
        "{status}"
    );
    let status = wait_reconciler(&client, Some(&no_create), "myapp", "ParentsFailing", |s| {
        s["failingParents"] == 1
            && condition(s, "Degraded").is_some_and(|c| c["reason"] == "ParentsFailing")
    })
    .await;
    assert!(ready_is(&status, "True", "Running"), "{status}");
    let parent = wait_status(
        &client,
        &no_create,
        "app",
        "the parent's ApplyFailed",
        |s| ready_condition(s).is_some_and(|c| c["reason"] == "ApplyFailed"),
    )
    .await;
    assert!(
        ready_condition(&parent).unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("forbidden"),
        "{parent}"
    );
    wait_reconciler(&client, Some(&no_watch), "myapp", "WatchFailed", |s| {
        ready_is(s, "False", "WatchFailed")
    })
    .await;

    // None of it reached the healthy reconciler.
    wait_ready_myapp(&client, &healthy, "app").await;
    let status = wait_reconciler(&client, Some(&healthy), "myapp", "healthy Running", |s| {
        ready_is(s, "True", "Running") && s["failingParents"] == 0
    })
    .await;
    assert!(condition(&status, "Degraded").is_none(), "{status}");
}

/// Takes `verb` out of the rule for `resource`.
fn drop_verb(rule: &mut Value, resource: &str, verb: &str) {
    let names_resource = rule["resources"]
        .as_array()
        .is_some_and(|r| r.iter().any(|r| r == resource));
    if names_resource {
        rule["verbs"].as_array_mut().unwrap().retain(|v| v != verb);
    }
}

#[tokio::test]
async fn a_namespaced_reconciler_reaches_nothing_outside_its_namespace() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "confined";
    let _host = platform_host(cluster, test, &[]).await;
    let own = cluster.namespace("confined").await.unwrap();
    let other = cluster.namespace("elsewhere").await.unwrap();

    // Its ServiceAccount may do anything to MyApps and ConfigMaps in every namespace: only the host's
    // rule keeps it in its own.
    let account = format!("{own}-faults");
    kubectl_apply(
        cluster,
        &[
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "faults", "namespace": own}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": account},
               "rules": [{"apiGroups": ["example.com"], "resources": ["myapps", "myapps/status", "myapps/finalizers"], "verbs": ["*"]},
                         {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": account},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": account},
               "subjects": [{"kind": "ServiceAccount", "name": "faults", "namespace": own}]}),
        ],
    );
    put_module(
        &client,
        &own,
        "faults-module",
        "faults.wasm",
        &component("guest_faults"),
    )
    .await;
    apply_reconciler(
        &client,
        &json!({
            "apiVersion": "reconcile-host.dev/v1alpha1", "kind": "Reconciler",
            "metadata": {"name": "faults", "namespace": own, "labels": {TEST_LABEL: test}},
            "spec": {
                "parent": {"apiVersion": "example.com/v1alpha1", "kind": "MyApp"},
                "children": [{"apiVersion": "v1", "kind": "ConfigMap"}],
                "module": {"configMap": {"name": "faults-module"}},
                "serviceAccountName": "faults",
            },
        }),
    )
    .await;

    create_myapp(&client, &own, "good", json!({})).await;
    create_myapp(
        &client,
        &own,
        "escapee",
        json!({"fault": "other-namespace"}),
    )
    .await;
    create_myapp(&client, &other, "foreign", json!({})).await;

    wait_status(&client, &own, "good", "its own parent reconciled", |s| {
        s["ok"] == true
    })
    .await;
    let refused = wait_status(&client, &own, "escapee", "the escape refused", |s| {
        ready_condition(s).is_some_and(|c| c["status"] == "False")
    })
    .await;
    assert!(
        ready_condition(&refused).unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("kube-system"),
        "{refused}"
    );
    let kube_system: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let escaped = kube_system
        .list(&ListParams::default().labels("app.kubernetes.io/managed-by=reconcile-host"))
        .await
        .unwrap();
    assert!(
        escaped.items.is_empty(),
        "a child was written to kube-system"
    );

    // The parent in another namespace is not even seen.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let foreign = myapps(&client, &other).get("foreign").await.unwrap();
    assert!(
        foreign.data.get("status").is_none(),
        "a parent outside the namespace was reconciled: {foreign:?}"
    );
    let others: Api<ConfigMap> = Api::namespaced(client.clone(), &other);
    let children = others
        .list(&ListParams::default().labels("app.kubernetes.io/managed-by=reconcile-host"))
        .await
        .unwrap();
    assert!(children.items.is_empty());
}

#[tokio::test]
async fn a_cluster_reconciler_serves_parents_in_every_namespace() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "cluster-wide";
    let _host = platform_host(cluster, test, &[]).await;
    let platform = cluster.namespace("platform-team").await.unwrap();
    let (first, second) = (
        cluster.namespace("anywhere").await.unwrap(),
        cluster.namespace("everywhere").await.unwrap(),
    );
    // A MyApp kind of its own group: a reconciler of every namespace would otherwise also reconcile
    // the other tests' MyApps.
    const GROUP: &str = "cluster-test.example.com";
    let mut crd = documents("deploy/crd.yaml").remove(0);
    crd["metadata"]["name"] = json!(format!("myapps.{GROUP}"));
    crd["spec"]["group"] = json!(GROUP);
    kubectl_apply(cluster, &[crd]);
    let established = cluster
        .kubectl()
        .args([
            "wait",
            "--for",
            "condition=established",
            &format!("crd/myapps.{GROUP}"),
        ])
        .output()
        .unwrap();
    assert!(established.status.success());
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(GROUP, "v1alpha1", "MyApp"),
        "myapps",
    );

    // The example's rules, granted cluster-wide to a ServiceAccount of the platform team.
    let name = format!("{platform}-myapp");
    let mut role = documents("examples/myapp/reconciler/rbac.yaml")
        .into_iter()
        .find(|d| d["kind"] == "Role")
        .unwrap();
    role["kind"] = json!("ClusterRole");
    role["metadata"] = json!({"name": name});
    for rule in role["rules"].as_array_mut().unwrap() {
        if rule["apiGroups"] == json!(["example.com"]) {
            rule["apiGroups"] = json!([GROUP]);
        }
    }
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
    reconciler["spec"]["parent"]["apiVersion"] = json!(format!("{GROUP}/v1alpha1"));
    reconciler["spec"]
        .as_object_mut()
        .unwrap()
        .remove("serviceAccountName");
    apply_reconciler(&client, &reconciler).await;

    for namespace in [&first, &second] {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let app = json!({"apiVersion": format!("{GROUP}/v1alpha1"), "kind": "MyApp", "metadata": {"name": "app"}, "spec": {}});
        api.create(
            &PostParams::default(),
            &serde_json::from_value(app).unwrap(),
        )
        .await
        .unwrap();
        wait_for("the MyApp Ready", || async {
            let app = api.get("app").await.ok()?;
            (app.data["status"]["phase"] == "Ready").then_some(())
        })
        .await;
    }
    wait_reconciler(&client, None, &name, "the ClusterReconciler Running", |s| {
        ready_is(s, "True", "Running") && s["parents"].as_u64() >= Some(2)
    })
    .await;
}
