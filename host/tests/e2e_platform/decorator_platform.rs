//! The namespace decorator as a platform admin's `ClusterReconciler` (`serve`): the host, running as its
//! shipped ServiceAccount and acting as the reconciler's, decorates the Namespaces its `parentSelector`
//! matches; a team's namespaced `Reconciler` asking for Namespace parents is told to be a
//! ClusterReconciler instead; two ClusterReconcilers decorating Namespaces for two teams leave each
//! other's children alone.

use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::decorator::{
    assert_children_stay, children, label, namespaces, quota_owner, wait_children_gone,
    wait_named_children,
};
use crate::common::events::events_now;
use crate::common::guests::component;
use crate::common::platform::{
    TEST_LABEL, apply_reconciler, condition, kubectl_apply, platform_host, put_module,
    wait_reconciler,
};

#[tokio::test]
async fn a_cluster_reconciler_decorates_namespaces_and_a_reconciler_may_not() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "decorator";
    let _host = platform_host(cluster, test, &[]).await;
    let platform = cluster.namespace("deco-admins").await.unwrap();
    let team = platform.clone();
    let name = format!("{platform}-decorator");
    let spec = decorator_spec(cluster, &client, &platform, &name, &team).await;
    let labels = json!({ TEST_LABEL: test });
    let cluster_reconciler = json!({
        "apiVersion": "reconcile-host.dev/v1alpha1", "kind": "ClusterReconciler",
        "metadata": {"name": name, "labels": labels}, "spec": spec,
    });
    apply_reconciler(&client, &cluster_reconciler).await;

    let decorated = cluster.namespace("deco-platform").await.unwrap();
    let api = namespaces(&client);
    label(&api, &decorated, json!({"labels": {"team": team}})).await;
    let uid = api.get(&decorated).await.unwrap().metadata.uid.unwrap();
    assert_eq!(
        quota_owner(&client, &decorated).await,
        (format!("Namespace/{decorated}"), uid)
    );
    // Its status counts the parents it takes, not every Namespace of the cluster.
    wait_reconciler(&client, None, &name, "1 parent", |status| {
        status["parents"] == 1
    })
    .await;
    label(&api, &decorated, json!({"labels": {"team": null}})).await;
    wait_children_gone(&client, &decorated).await;

    // The same as a team's namespaced Reconciler: refused, and told what to use.
    let mut spec = spec;
    let spec_map = spec.as_object_mut().unwrap();
    spec_map.remove("serviceAccount");
    spec_map.insert("serviceAccountName".into(), json!("decorator"));
    spec["module"]["configMap"] = json!({"name": "decorator", "key": "decorator.wasm"});
    let reconciler = json!({
        "apiVersion": "reconcile-host.dev/v1alpha1", "kind": "Reconciler",
        "metadata": {"name": "decorator", "namespace": platform, "labels": labels}, "spec": spec,
    });
    apply_reconciler(&client, &reconciler).await;
    let status = wait_reconciler(
        &client,
        Some(&platform),
        "decorator",
        "InvalidSpec",
        |status| condition(status, "Ready").is_some_and(|c| c["reason"] == "InvalidSpec"),
    )
    .await;
    let message = condition(&status, "Ready").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("v1/Namespace is cluster-scoped")
            && message.contains("use a ClusterReconciler"),
        "{message}"
    );
}

/// A ServiceAccount `decorator` in `platform` with exactly what the example's README lists (the
/// ClusterRole and its binding named `name`), the decorator's module, and the spec of a
/// ClusterReconciler decorating the Namespaces labelled `team=<team>` with them.
async fn decorator_spec(
    cluster: &TestCluster,
    client: &kube::Client,
    platform: &str,
    name: &str,
    team: &str,
) -> serde_json::Value {
    let rules = json!([
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["resourcequotas"],
         "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
         "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
    ]);
    kubectl_apply(
        cluster,
        &[
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "decorator", "namespace": platform}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": "decorator", "namespace": platform}]}),
        ],
    );
    let module = component("guest_namespace_decorator");
    put_module(client, platform, "decorator", "decorator.wasm", &module).await;
    json!({
        "parent": {"apiVersion": "v1", "kind": "Namespace"},
        "children": [{"apiVersion": "v1", "kind": "ResourceQuota"},
                     {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy"}],
        "module": {"configMap": {"name": "decorator", "namespace": platform, "key": "decorator.wasm"}},
        "serviceAccount": {"namespace": platform, "name": "decorator"},
        "parentSelector": format!("team={team}"),
    })
}

/// Two ClusterReconcilers of one host decorating Namespaces for two teams: each acts only on the
/// children that name it (`c.<name>`), so neither releases the other's.
#[tokio::test]
async fn two_cluster_reconcilers_with_disjoint_selectors_keep_each_others_children_for_a_minute() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "two-decorators";
    let _host = platform_host(cluster, test, &[]).await;
    let platform = cluster.namespace("deco-two-admins").await.unwrap();
    let api = namespaces(&client);
    let mut teams = Vec::new();
    for side in ["a", "b"] {
        let team = cluster
            .namespace(&format!("deco-two-{side}"))
            .await
            .unwrap();
        label(&api, &team, json!({"labels": {"team": team}})).await;
        let name = format!("{platform}-{side}");
        let spec = decorator_spec(cluster, &client, &platform, &name, &team).await;
        let cluster_reconciler = json!({
            "apiVersion": "reconcile-host.dev/v1alpha1", "kind": "ClusterReconciler",
            "metadata": {"name": name, "labels": { TEST_LABEL: test }}, "spec": spec,
        });
        apply_reconciler(&client, &cluster_reconciler).await;
        teams.push((team, format!("c.{name}")));
    }
    let mut before = Vec::new();
    for (team, reconciler) in &teams {
        before.push(wait_named_children(&client, team, reconciler).await);
    }
    let (a, b) = (&teams[0].0, &teams[1].0);
    assert_children_stay(&client, &[a, b], 60).await;
    for ((team, _), before) in teams.iter().zip(&before) {
        assert_eq!(&children(&client, team).await, before);
        let released = events_now(&client, "default", team, "Released").await;
        assert!(released.is_empty(), "{team} was released: {released:?}");
    }
}
