//! The host one RBAC verb short of deploy/rbac.yaml, on the real control plane: each missing verb is
//! a clear failure on the parent (its `Ready` reason, a Warning Event naming the object and
//! `forbidden`), and nothing is half-done: a created child whose fields could not move to the host's
//! apply manager stays marked in the cache and moves on a later reconcile.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use kube::api::{Api, PostParams};
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::events::wait_event;
use crate::common::guests::{component, repo_root};
use crate::common::host::HostProcess;
use crate::common::myapp::*;

pub(crate) fn shipped_cluster_role() -> ClusterRole {
    let role = reconcile_host::render::read_documents(&repo_root().join("deploy/rbac.yaml"))
        .unwrap()
        .into_iter()
        .find(|d| d["kind"] == "ClusterRole")
        .unwrap();
    serde_json::from_value(role).unwrap()
}

/// The shipped ClusterRole less `verb` on `resource` (a rule left with no verb is dropped: it would be
/// invalid).
fn shipped_role_without(resource: &str, verb: &str) -> ClusterRole {
    let mut role = shipped_cluster_role();
    let rules: &mut Vec<PolicyRule> = role.rules.as_mut().unwrap();
    let rule = rules
        .iter_mut()
        .find(|r| r.resources.as_deref() == Some(&[resource.to_string()]))
        .unwrap();
    rule.verbs.retain(|v| v != verb);
    rules.retain(|r| !r.verbs.is_empty());
    role
}

/// A kubeconfig for a ServiceAccount of `namespace` bound to `role` (renamed for the namespace).
pub(crate) async fn limited_kubeconfig(
    cluster: &TestCluster,
    client: &kube::Client,
    namespace: &str,
    mut role: ClusterRole,
) -> std::path::PathBuf {
    let name = format!("reconcile-host-{namespace}");
    role.metadata.name = Some(name.clone());
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "limited", "namespace": namespace}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    cluster
        .service_account_kubeconfig(namespace, "limited")
        .await
        .unwrap()
}

/// The host running as a ServiceAccount bound to the shipped ClusterRole less `verb` on `resource`:
/// the admin client, its namespace and the host.
async fn host_one_verb_less(
    cluster: &TestCluster,
    test: &str,
    resource: &str,
    verb: &str,
) -> (kube::Client, String, HostProcess) {
    install_crd(cluster);
    let namespace = cluster.namespace(test).await.unwrap();
    let client = cluster.client().await.unwrap();
    let role = shipped_role_without(resource, verb);
    let kubeconfig = limited_kubeconfig(cluster, &client, &namespace, role).await;
    let host = HostProcess::myapp(&kubeconfig, &namespace, &component("guest_myapp"), &[]);
    (client, namespace, host)
}

/// [`host_one_verb_less`] with demo-app created: the Warning Event that reports the failure with
/// `reason`.
async fn one_verb_less(
    cluster: &TestCluster,
    test: &str,
    resource: &str,
    verb: &str,
    reason: &str,
) -> (kube::Client, String, HostProcess, CoreEvent) {
    let (client, namespace, host) = host_one_verb_less(cluster, test, resource, verb).await;
    create_myapp(&client, &namespace, "demo-app", json!({"replicas": 1})).await;
    let event = wait_event(&client, &namespace, None, reason).await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    (client, namespace, host, event)
}

#[tokio::test]
async fn one_child_verb_less_is_a_clear_failure() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    // Moving a created child's fields to the host's apply manager (a JSON patch), and every apply
    // after, need `patch`.
    let (client, namespace, _host, _) =
        one_verb_less(cluster, "no-patch", "deployments", "patch", "ApplyFailed").await;
    let status = wait_status(
        &client,
        &namespace,
        "demo-app",
        "Ready=False for lack of patch",
        |st| ready_condition(st).is_some_and(|c| c["status"] == "False"),
    )
    .await;
    let ready = ready_condition(&status).unwrap();
    assert_eq!(ready["reason"], "ApplyFailed");
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.contains("Deployment/demo-app-deploy") && message.contains("forbidden"),
        "{message}"
    );
}

#[tokio::test]
async fn a_child_the_host_may_not_create_is_a_clear_failure() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    // A child no cache holds is created create-only: a POST, which needs `create`.
    let (client, namespace, _host, event) = one_verb_less(
        cluster,
        "no-create",
        "deployments",
        "create",
        "CreateFailed",
    )
    .await;
    let note = event.message.unwrap_or_default();
    assert!(
        note.contains("Deployment/demo-app-deploy") && note.contains("forbidden"),
        "{note}"
    );
    let status = wait_status(&client, &namespace, "demo-app", "Ready=False", |st| {
        ready_condition(st).is_some_and(|c| c["status"] == "False")
    })
    .await;
    assert_eq!(ready_condition(&status).unwrap()["reason"], "CreateFailed");
    assert!(
        deployments(&client, &namespace)
            .get_opt("demo-app-deploy")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_child_the_host_may_not_get_is_a_clear_failure() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    // The host reads an object of a child's name only when its create-only write found the name
    // taken: here by a person's Deployment, outside the host's cache.
    let (client, namespace, _host) =
        host_one_verb_less(cluster, "no-get", "deployments", "get").await;
    let persons: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "demo-app-deploy"},
        "spec": {
            "selector": {"matchLabels": {"app": "demo-app"}},
            "template": {"metadata": {"labels": {"app": "demo-app"}},
                         "spec": {"containers": [{"name": "main", "image": "person/own:1"}]}},
        },
    }))
    .unwrap();
    let persons = deployments(&client, &namespace)
        .create(&PostParams::default(), &persons)
        .await
        .unwrap();
    create_myapp(&client, &namespace, "demo-app", json!({"replicas": 1})).await;
    let event = wait_event(&client, &namespace, None, "ChildLookupFailed").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let note = event.message.unwrap_or_default();
    assert!(
        note.contains("demo-app-deploy") && note.contains("forbidden"),
        "{note}"
    );
    let now = deployments(&client, &namespace)
        .get("demo-app-deploy")
        .await
        .unwrap();
    assert_eq!(
        now.metadata.generation, persons.metadata.generation,
        "nothing is applied when the lookup fails"
    );
    assert!(now.metadata.owner_references.is_none());
}

#[tokio::test]
async fn a_status_the_host_may_not_write_is_reported_as_an_event() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let (_, _, _host, event) = one_verb_less(
        cluster,
        "no-status",
        "myapps/status",
        "patch",
        "ParentUpdateFailed",
    )
    .await;
    let note = event.message.unwrap_or_default();
    assert!(note.contains("forbidden"), "{note}");
}

#[tokio::test]
async fn a_child_the_host_may_not_delete_is_a_clear_failure() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("no-delete").await.unwrap();
    let client = cluster.client().await.unwrap();
    // The shipped role for ConfigMap children (the faults guest's), less `delete`.
    let mut role = shipped_role_without("deployments", "delete");
    let child_rule = role
        .rules
        .as_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r.resources.as_deref() == Some(&["deployments".to_string()]))
        .unwrap();
    child_rule.api_groups = Some(vec![String::new()]);
    child_rule.resources = Some(vec!["configmaps".into()]);
    let kubeconfig = limited_kubeconfig(cluster, &client, &namespace, role).await;
    let _host = HostProcess::faults(&kubeconfig, &namespace, &[]);
    create_myapp(&client, &namespace, "renamed", json!({"fault": "none"})).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    wait_for("renamed-cm created", || {
        let configmaps = configmaps.clone();
        async move { configmaps.get_opt("renamed-cm").await.ok().flatten() }
    })
    .await;

    // The guest now wants another child: the old one is left out, and may not be deleted.
    patch_spec(
        &client,
        &namespace,
        "renamed",
        json!({"fault": "fixed-name:other-cm"}),
    )
    .await;
    let event = wait_event(&client, &namespace, None, "PruneFailed").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let note = event.message.unwrap_or_default();
    assert!(
        note.contains("renamed-cm") && note.contains("forbidden"),
        "{note}"
    );
    let status = wait_status(&client, &namespace, "renamed", "Ready=False", |st| {
        ready_condition(st).is_some_and(|c| c["status"] == "False")
    })
    .await;
    assert_eq!(ready_condition(&status).unwrap()["reason"], "PruneFailed");
    assert!(configmaps.get_opt("renamed-cm").await.unwrap().is_some());
}
