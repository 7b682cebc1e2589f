//! What deploy/ ships, on the real control plane: the kustomization applies, the host runs with exactly
//! the shipped RBAC (as the ServiceAccount, through a TokenRequest token) and the shipped arguments,
//! one verb less fails clearly, the metrics move, and a standby takes over from a killed leader.

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use common::guests::{component, repo_root};
use common::host::HostProcess;
use common::http;
use common::kubectl::kubectl_ok;
use common::myapp::*;

const HOST_NAMESPACE: &str = "reconcile-host-system";

fn yaml_documents(file: &str) -> Vec<Value> {
    reconcile_host::render::read_documents(&repo_root().join("deploy").join(file)).unwrap()
}

/// The host's arguments as deploy/deployment.yaml gives them, with the in-cluster paths and port
/// replaced by local ones and the watch narrowed to the test's namespace.
fn shipped_args(namespace: &str, cache: &std::path::Path) -> Vec<String> {
    let deployment = &yaml_documents("deployment.yaml")[0];
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap();
    let mut local: Vec<String> = args
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        // `run` and the metrics port are the fixture's to set.
        .filter(|a| a != "run" && !a.starts_with("--metrics-addr"))
        .map(|a| match a.split_once('=') {
            Some(("--module", _)) => format!("--module={}", component("guest_myapp").display()),
            Some(("--cache-dir", _)) => format!("--cache-dir={}", cache.display()),
            _ => a,
        })
        .collect();
    local.extend(["--namespace".to_string(), namespace.to_string()]);
    local
}

fn shipped_cluster_role() -> ClusterRole {
    let role = yaml_documents("rbac.yaml")
        .into_iter()
        .find(|d| d["kind"] == "ClusterRole")
        .unwrap();
    serde_json::from_value(role).unwrap()
}

#[tokio::test]
async fn deploy_applies_and_the_host_runs_with_exactly_its_rbac() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    std::fs::copy(
        component("guest_myapp"),
        repo_root().join("deploy/module/myapp.wasm"),
    )
    .unwrap();
    let deploy = repo_root().join("deploy");
    let deploy = deploy.to_str().unwrap();
    kubectl_ok(
        cluster,
        &["apply", "-f", &format!("{deploy}/namespace.yaml")],
    );
    // Server-side apply, as the README says: client-side apply would copy the module into the
    // last-applied annotation, which is capped at 256 KiB.
    kubectl_ok(
        cluster,
        &["apply", "--server-side", "--dry-run=server", "-k", deploy],
    );
    kubectl_ok(cluster, &["apply", "--server-side", "-k", deploy]);
    kubectl_ok(
        cluster,
        &[
            "wait",
            "--for",
            "condition=established",
            "crd/myapps.example.com",
        ],
    );
    let module_cm = kubectl_ok(
        cluster,
        &[
            "get",
            "configmap",
            "myapp-module",
            "-n",
            HOST_NAMESPACE,
            "-o",
            "json",
        ],
    );
    assert!(
        module_cm.contains("binaryData"),
        "the module ships as binary data"
    );

    let namespace = cluster.namespace("rbac").await.unwrap();
    let kubeconfig = cluster
        .service_account_kubeconfig(HOST_NAMESPACE, "reconcile-host")
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let args = shipped_args(&namespace, cache.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let host = HostProcess::start_with_env(
        &kubeconfig,
        &args,
        &[
            ("POD_NAMESPACE", HOST_NAMESPACE),
            ("POD_NAME", "rbac-test-host"),
        ],
    );

    let client = cluster.client().await.unwrap();
    create_myapp(
        &client,
        &namespace,
        "demo-app",
        json!({"replicas": 2, "image": "nginx:1.23"}),
    )
    .await;
    let status = wait_status(
        &client,
        &namespace,
        "demo-app",
        "demo-app Ready as the ServiceAccount",
        |st| st["phase"] == "Ready",
    )
    .await;
    assert_eq!(ready_condition(&status).unwrap()["status"], "True");
    assert!(
        host.log().contains("acquired leadership"),
        "leader election runs with the shipped Role"
    );
    let describe = kubectl_ok(
        cluster,
        &["describe", "myapp", "demo-app", "-n", &namespace],
    );
    assert!(
        describe.contains("created Deployment/demo-app-deploy"),
        "{describe}"
    );
    assert!(
        !host.log().contains("forbidden"),
        "the shipped RBAC was not enough:\n{}",
        host.log()
    );

    // The endpoints the probes and Prometheus use.
    let addr = host
        .metrics_addr()
        .expect("the host logs its metrics address");
    assert_eq!(http::get(&addr, "/healthz").unwrap().0, 200);
    assert_eq!(http::get(&addr, "/readyz").unwrap().0, 200);
    let success = r#"controller="myapp",result="success""#;
    let before = http::sample(
        &http::get(&addr, "/metrics").unwrap().1,
        "controller_runtime_reconcile_total",
        success,
    );
    assert!(before > 0.0, "no successful reconcile counted");
    create_myapp(&client, &namespace, "second", json!({"replicas": 1})).await;
    wait_status(&client, &namespace, "second", "second reconciled", |st| {
        st.get("phase").is_some()
    })
    .await;
    let metrics = http::get(&addr, "/metrics").unwrap().1;
    assert!(
        http::sample(&metrics, "controller_runtime_reconcile_total", success) > before,
        "{metrics}"
    );
    assert!(
        http::sample(
            &metrics,
            "reconcile_host_guest_call_duration_seconds_count",
            ""
        ) > 0.0,
        "{metrics}"
    );
    assert!(
        metrics.contains("reconcile_host_active_module{controller=\"myapp\",digest=\"sha256:"),
        "{metrics}"
    );
}

/// The host running as a ServiceAccount bound to the shipped ClusterRole less `verb` on `resource`,
/// with demo-app created: its namespace, and the Warning Event that reports the failure with `reason`.
async fn one_verb_less(
    cluster: &TestCluster,
    test: &str,
    resource: &str,
    verb: &str,
    reason: &str,
) -> (kube::Client, String, HostProcess, CoreEvent) {
    install_crd(cluster);
    let namespace = cluster.namespace(test).await.unwrap();
    let client = cluster.client().await.unwrap();
    let mut role = shipped_cluster_role();
    let name = format!("reconcile-host-{namespace}");
    role.metadata.name = Some(name.clone());
    let rules: &mut Vec<PolicyRule> = role.rules.as_mut().unwrap();
    let rule = rules
        .iter_mut()
        .find(|r| r.resources.as_deref() == Some(&[resource.to_string()]))
        .unwrap();
    rule.verbs.retain(|v| v != verb);
    // A rule left with no verb is invalid: drop it.
    rules.retain(|r| !r.verbs.is_empty());
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
    let kubeconfig = cluster
        .service_account_kubeconfig(&namespace, "limited")
        .await
        .unwrap();
    let host = HostProcess::myapp(&kubeconfig, &namespace, &component("guest_myapp"), &[]);
    create_myapp(&client, &namespace, "demo-app", json!({"replicas": 1})).await;
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), &namespace);
    let event = wait_for(&format!("a {reason} Event"), || {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some(reason))
        }
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    (client, namespace, host, event)
}

#[tokio::test]
async fn one_child_verb_less_is_a_clear_failure() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    // Server-side apply needs `patch`.
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
async fn a_child_the_host_may_not_get_is_a_clear_failure() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    // The ownership rule looks up a child not yet in the cache by name.
    let (client, namespace, _host, event) =
        one_verb_less(cluster, "no-get", "deployments", "get", "ChildLookupFailed").await;
    let note = event.message.unwrap_or_default();
    assert!(
        note.contains("demo-app-deploy") && note.contains("forbidden"),
        "{note}"
    );
    assert!(
        deployments(&client, &namespace)
            .get_opt("demo-app-deploy")
            .await
            .unwrap()
            .is_none(),
        "nothing is applied when the lookup fails"
    );
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
async fn a_standby_takes_over_when_the_leader_is_killed() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("leader").await.unwrap();
    let client = cluster.client().await.unwrap();
    let election = [
        "--leader-election",
        "--leader-election-namespace",
        namespace.as_str(),
    ];
    let module = component("guest_myapp");
    let mut hosts = [
        HostProcess::myapp(cluster.kubeconfig_path(), &namespace, &module, &election),
        HostProcess::myapp(cluster.kubeconfig_path(), &namespace, &module, &election),
    ];
    let leader = wait_for("a leader", || {
        let leaders: Vec<usize> = (0..2)
            .filter(|&i| hosts[i].log().contains("acquired leadership"))
            .collect();
        async move { (leaders.len() == 1).then(|| leaders[0]) }
    })
    .await;
    create_myapp(&client, &namespace, "first", json!({"replicas": 1})).await;
    wait_deployment(
        &client,
        &namespace,
        "first-deploy",
        "the leader to reconcile",
        |_| true,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !hosts[1 - leader].log().contains("acquired leadership"),
        "two leaders at once"
    );

    hosts[leader].kill();
    create_myapp(&client, &namespace, "second", json!({"replicas": 1})).await;
    // The lease lasts 10 s: a standby must lead and reconcile well within 20 s of the kill.
    let takeover = tokio::time::timeout(
        Duration::from_secs(20),
        wait_deployment(
            &client,
            &namespace,
            "second-deploy",
            "the standby to take over",
            |_| true,
        ),
    )
    .await;
    assert!(
        takeover.is_ok(),
        "the standby did not reconcile within 20 s of the leader's death"
    );
    assert!(hosts[1 - leader].log().contains("acquired leadership"));
}
