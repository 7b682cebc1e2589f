//! What deploy/ ships, on the real control plane: the kustomization applies, the host runs with exactly
//! the shipped RBAC (as the ServiceAccount, through a TokenRequest token) and the shipped arguments,
//! the metrics move, and a standby takes over from a killed leader (one verb less: e2e_operations/deploy_rbac.rs).
//! On a control plane of its own: applying deploy/ makes the MyApp CRD serve v1beta1 through this
//! test's host (by URL), which the other tests' CRD installs would undo mid-test. `image` runs the
//! image `make image` builds, unpacked, the same way.

#[path = "../common/mod.rs"]
mod common;
mod image;

use std::time::Duration;

use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use common::guests::{component, repo_root};
use common::host::HostProcess;
use common::http;
use common::kubectl::kubectl_ok;
use common::monitoring::has_led;
use common::myapp::*;
use common::ports::free_port;

pub const HOST_NAMESPACE: &str = "reconcile-host-system";

pub fn yaml_documents(file: &str) -> Vec<Value> {
    reconcile_host::render::read_documents(&repo_root().join("deploy").join(file)).unwrap()
}

/// The host's arguments as deploy/deployment.yaml gives them, with the in-cluster paths and ports
/// replaced by local ones (the module at `module`, the webhook on `webhook_port`, its certificate also
/// valid for 127.0.0.1) and the watch narrowed to the test's namespace.
pub fn shipped_args(
    namespace: &str,
    module: &std::path::Path,
    cache: &std::path::Path,
    webhook_port: u16,
) -> Vec<String> {
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
            Some(("--module", _)) => format!("--module={}", module.display()),
            Some(("--cache-dir", _)) => format!("--cache-dir={}", cache.display()),
            Some(("--conversion-webhook-addr", _)) => {
                format!("--conversion-webhook-addr=127.0.0.1:{webhook_port}")
            }
            _ => a,
        })
        .collect();
    local.extend(["--namespace", namespace, "--webhook-dns-name=127.0.0.1"].map(String::from));
    local
}

/// `kubectl apply --server-side -k deploy/` as the README says, once for both tests: the CRD it
/// applies serves v1beta1 through the webhook, which deploy/crd.yaml alone (`install_crd`) does not,
/// and the two would conflict on `.spec.versions`.
pub fn apply_deploy(cluster: &TestCluster) {
    static APPLIED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut applied = APPLIED.lock().unwrap_or_else(|e| e.into_inner());
    if *applied {
        return;
    }
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
    *applied = true;
}

/// Creates the seed's demo-app in `namespace` and waits until the host under test made it Ready.
pub async fn demo_app_converges(client: &kube::Client, namespace: &str, what: &str) {
    let spec = json!({"replicas": 2, "image": "nginx:1.23"});
    create_myapp(client, namespace, "demo-app", spec).await;
    let status = wait_status(client, namespace, "demo-app", what, |st| {
        st["phase"] == "Ready"
    })
    .await;
    assert_eq!(ready_condition(&status).unwrap()["status"], "True");
}

#[tokio::test]
async fn deploy_applies_and_the_host_runs_with_exactly_its_rbac() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    apply_deploy(cluster);
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
    let webhook_port = free_port();
    let args = shipped_args(
        &namespace,
        &component("guest_myapp"),
        cache.path(),
        webhook_port,
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let host = HostProcess::start_with_env(
        &kubeconfig,
        &args,
        &[
            ("POD_NAMESPACE", HOST_NAMESPACE),
            ("POD_NAME", "rbac-test-host"),
        ],
    );

    // The conversion webhook as the ServiceAccount: the certificate Secret made, the CA on the CRD.
    // The Service cannot route to a host outside the cluster, so the CRD is pointed at it by URL
    // (kubectl reads MyApp at its preferred version, v1beta1, through the webhook).
    let ca_bundle = wait_for("the host's caBundle on the CRD", || async {
        let crd = kubectl_ok(cluster, &["get", "crd", "myapps.example.com", "-o", "json"]);
        let crd: Value = serde_json::from_str(&crd).unwrap();
        let bundle = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"];
        bundle.as_str().map(String::from)
    })
    .await;
    assert!(!ca_bundle.is_empty());
    kubectl_ok(
        cluster,
        &[
            "get",
            "secret",
            "reconcile-host-webhook-tls",
            "-n",
            HOST_NAMESPACE,
        ],
    );
    let by_url = json!({"spec": {"conversion": {"webhook": {"clientConfig": {
        "service": null,
        "url": format!("https://127.0.0.1:{webhook_port}/convert"),
    }}}}});
    kubectl_ok(
        cluster,
        &[
            "patch",
            "crd",
            "myapps.example.com",
            "--type=merge",
            "-p",
            &by_url.to_string(),
        ],
    );
    let client = cluster.client().await.unwrap();
    demo_app_converges(&client, &namespace, "demo-app Ready as the ServiceAccount").await;
    assert!(has_led(&host), "leader election runs with the shipped Role");
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

    let beta = wait_for("demo-app read at v1beta1 through the host", || async {
        let out = cluster
            .kubectl()
            .args(["get", "myapps.v1beta1.example.com", "demo-app"])
            .args(["-n", &namespace, "-o", "json"])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).unwrap())
    })
    .await;
    assert_eq!(
        beta["spec"],
        json!({"replicas": 2, "template": {"image": "nginx:1.23"}})
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

#[tokio::test]
async fn a_standby_takes_over_when_the_leader_is_killed() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    apply_deploy(cluster);
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
        let leaders: Vec<usize> = (0..2).filter(|&i| has_led(&hosts[i])).collect();
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
    assert!(!has_led(&hosts[1 - leader]), "two leaders at once");

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
    assert!(has_led(&hosts[1 - leader]));
}
