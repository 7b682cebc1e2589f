//! Platform mode's isolation on the real control plane: a bad module, a missing CRD and a ServiceAccount
//! lacking a verb each fail only their own reconciler, each with its own reason; a namespaced reconciler
//! reaches nothing outside its namespace, whatever its ServiceAccount may do.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::component;
use crate::common::myapp::*;
use crate::common::platform::*;

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
        "the parent's CreateFailed",
        // A new child is created create-only (a POST): without `create` the POST is refused.
        |s| ready_condition(s).is_some_and(|c| c["reason"] == "CreateFailed"),
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
