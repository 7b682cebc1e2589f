//! The monitoring component (deploy/monitoring/): accepted by the API server beside deploy/ with the
//! prometheus-operator CRDs installed; its alert rules checked and unit-tested by promtool; each alert
//! fired by Prometheus's own engine on the metrics of a real host put in the state it tells of, and
//! none on a healthy one; the Grafana dashboard loaded with Grafana's schema, its every query parsed
//! and reading metrics the host exposes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::{component, repo_root};
use crate::common::host::HostProcess;
use crate::common::kubectl::{apply_crd, kubectl_ok};
use crate::common::monitoring::*;
use crate::common::myapp::*;

#[tokio::test]
async fn the_component_applies_with_the_prometheus_operator_crds() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let crds = tools().join("crds");
    for crd in ["servicemonitors", "prometheusrules"] {
        let file = crds.join(format!("monitoring.coreos.com_{crd}.yaml"));
        apply_crd(cluster, &file, &format!("{crd}.monitoring.coreos.com"));
    }
    std::fs::copy(
        component("guest_myapp"),
        repo_root().join("deploy/module/myapp.wasm"),
    )
    .unwrap();
    // An overlay of the operator's, as the README shows it: deploy/ with the component.
    let overlay = tempfile::tempdir().unwrap();
    let up = "../".repeat(overlay.path().components().count() - 1);
    let deploy = format!("{up}{}", repo_root().join("deploy").display());
    std::fs::write(
        overlay.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             namespace: reconcile-host-system\nresources:\n  - {deploy}\n\
             components:\n  - {deploy}/monitoring\n"
        ),
    )
    .unwrap();
    let overlay = overlay.path().to_str().unwrap();
    let deploy_dir = repo_root().join("deploy");
    let deploy_dir = deploy_dir.display();
    kubectl_ok(
        cluster,
        &["apply", "-f", &format!("{deploy_dir}/namespace.yaml")],
    );
    kubectl_ok(cluster, &["apply", "--server-side", "-k", overlay]);
    let namespace = "reconcile-host-system";
    for object in [
        "servicemonitor/reconcile-host",
        "prometheusrule/reconcile-host",
        "service/reconcile-host-metrics",
        "configmap/reconcile-host-dashboard",
    ] {
        kubectl_ok(cluster, &["get", object, "-n", namespace]);
    }

    // The Service reaches the host's metrics port: its selector matches the pods, its port is theirs.
    let service = &component_file("service.yaml")[0];
    let deployment =
        &reconcile_host::render::read_documents(&repo_root().join("deploy/deployment.yaml"))
            .unwrap()[0];
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (key, value) in service["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&pod_labels[key], value, "the Service selects no host pod");
    }
    let ports = &deployment["spec"]["template"]["spec"]["containers"][0]["ports"];
    let target = &service["spec"]["ports"][0]["targetPort"];
    assert!(
        ports
            .as_array()
            .unwrap()
            .iter()
            .any(|p| &p["name"] == target),
        "the Service's targetPort {target} is no port of the host"
    );
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(
        args.contains("--metrics-addr=0.0.0.0:8080"),
        "the host does not serve metrics where the Service sends: {args}"
    );
}

#[test]
fn the_alert_rules_pass_promtool_check_and_their_unit_tests() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path());
    let checked = run_tool(
        "promtool",
        &[Path::new("check"), Path::new("rules"), &rules],
    );
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = run_tool(
        "promtool",
        &[
            Path::new("test"),
            Path::new("rules"),
            &dir.path().join("alerts.test.yaml"),
        ],
    );
    assert!(tested.contains("SUCCESS"), "{tested}");
    // Every alert has a runbook: a heading of the troubleshooting guide.
    let guide = std::fs::read_to_string(repo_root().join("docs/troubleshooting.md")).unwrap();
    let anchors: Vec<String> = guide
        .lines()
        .filter_map(|l| l.strip_prefix("### ").or_else(|| l.strip_prefix("## ")))
        .map(github_anchor)
        .collect();
    for (alert, rule) in alert_rules() {
        let url = rule["annotations"]["runbook_url"].as_str().unwrap();
        let anchor = url.strip_prefix("docs/troubleshooting.md#").unwrap();
        assert!(
            anchors.iter().any(|a| a == anchor),
            "{alert}'s runbook {url} is no heading of docs/troubleshooting.md"
        );
    }
}

/// The guide backs each row with a test: every `file.rs` and `file.rs::test` it names exists.
#[test]
fn every_test_the_troubleshooting_guide_and_the_readmes_reliability_table_name_exists() {
    let guide = std::fs::read_to_string(repo_root().join("docs/troubleshooting.md")).unwrap();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let reliability = readme.split("\n## Reliability\n").nth(1).unwrap();
    let reliability = reliability.split("\n## ").next().unwrap();
    for (document, text, at_least) in [
        ("the guide", guide.as_str(), 20),
        ("the README", reliability, 10),
    ] {
        let references: Vec<&str> = text
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|code| code.split("::").next().unwrap().ends_with(".rs"))
            .collect();
        assert!(references.len() > at_least, "{document}: {references:?}");
        for reference in references {
            let (file, test) = reference.split_once("::").unwrap_or((reference, ""));
            let source = std::fs::read_to_string(repo_root().join("host/tests").join(file))
                .unwrap_or_else(|_| panic!("{document} names {file}, which is no test file"));
            assert!(
                test.is_empty() || source.contains(&format!("fn {test}(")),
                "{document} names {reference}, which is no test"
            );
        }
    }
}

/// A heading's anchor as GitHub makes it: lowercased, spaces to dashes, punctuation dropped.
fn github_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn labels(pairs: &[(&'static str, &str)]) -> BTreeMap<&'static str, String> {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

#[tokio::test]
async fn each_alert_fires_on_the_metrics_of_a_host_in_its_state_and_none_on_a_healthy_one() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let client = cluster.client().await.unwrap();
    let kubeconfig = cluster.kubeconfig_path();
    let mut groups = Vec::new();

    // Healthy: demo-app reconciled, nothing fails. Then killed: Prometheus can reach no replica.
    let healthy_ns = cluster.namespace("mon-healthy").await.unwrap();
    // Its module is a copy, so that its source can fail later.
    let module_dir = tempfile::tempdir().unwrap();
    let healthy_module = module_dir.path().join("module.wasm");
    std::fs::copy(component("guest_myapp"), &healthy_module).unwrap();
    let mut healthy = HostProcess::myapp(kubeconfig, &healthy_ns, &healthy_module, &[]);
    let before = scrape_when(&healthy, "the healthy host's metrics", |s| {
        s.value("reconcile_host_leader").is_some()
    })
    .await;
    create_myapp(
        &client,
        &healthy_ns,
        "demo-app",
        json!({"replicas": 1, "image": "nginx:1.23"}),
    )
    .await;
    wait_status(&client, &healthy_ns, "demo-app", "demo-app Ready", |st| {
        st["phase"] == "Ready"
    })
    .await;
    let after = scrape_when(&healthy, "demo-app's reconciles counted", |s| {
        s.value(r#"result="success""#).is_some()
    })
    .await;
    groups.push(held_for_an_hour("healthy", &healthy_ns, &before, &after) + &expect_alerts(&[]));
    let healthy_metrics = crate::common::http::get(&healthy.metrics_addr().unwrap(), "/metrics")
        .unwrap()
        .1;
    // Its module's source fails (the file is gone): the module it has keeps serving.
    std::fs::remove_file(&healthy_module).unwrap();
    let unavailable = scrape_when(&healthy, "the module source failing", |s| {
        s.value(r#"reconcile_host_module_unavailable{controller="myapp"}"#) == Some(1.0)
    })
    .await;
    groups.push(
        held_for_an_hour("source failing", &healthy_ns, &after, &unavailable)
            + &expect_alerts(&[(
                "ReconcileHostModuleUnavailable",
                labels(&[("namespace", &healthy_ns), ("controller", "myapp")]),
            )]),
    );
    healthy.kill();
    let down = Scrape::of(&healthy.metrics_addr().unwrap());
    assert!(!down.up, "a killed host still answers");
    groups.push(
        held_for_an_hour("down", &healthy_ns, &after, &down)
            + &expect_alerts(&[("ReconcileHostDown", labels(&[("namespace", &healthy_ns)]))]),
    );

    // Failing: one parent traps, one loops to its deadline on the only worker, and the next module
    // offered is garbage.
    let failing_ns = cluster.namespace("mon-failing").await.unwrap();
    let modules = tempfile::tempdir().unwrap();
    let module = modules.path().join("module.wasm");
    std::fs::copy(component("guest_faults"), &module).unwrap();
    let failing = HostProcess::faults_from(
        kubeconfig,
        &failing_ns,
        &module,
        &["--concurrency", "1", "--guest-deadline-ms", "3000"],
    );
    // Once its first module is loaded: the garbage below must replace a good module, not be the
    // first one a host still starting up reads (then nothing traps or loops).
    let before = scrape_when(&failing, "the failing host's module loaded", |s| {
        s.value("reconcile_host_leader").is_some()
            && s.value("reconcile_host_active_module{").is_some()
    })
    .await;
    create_myapp(&client, &failing_ns, "traps", json!({"fault": "trap"})).await;
    create_myapp(&client, &failing_ns, "loops", json!({"fault": "loop"})).await;
    let garbage = modules.path().join("garbage.wasm");
    std::fs::write(&garbage, b"\0asm garbage").unwrap();
    std::fs::rename(&garbage, &module).unwrap();
    // Taken while the looping parent holds the only worker, once both have failed and the garbage has
    // been refused.
    let controller = r#"controller="myapp""#;
    let after = scrape_when(&failing, "a scrape with every failure", |s| {
        s.value(r#"reason="GuestTrapped""#).is_some()
            && s.value(r#"reason="GuestDeadlineExceeded""#).is_some()
            && s.value(&format!("reconcile_host_failing_parents{{{controller}}}")) == Some(2.0)
            && s.value(&format!("reconcile_host_module_refused{{{controller}}}")) == Some(1.0)
            && s.value(&format!(
                "controller_runtime_active_workers{{{controller}}}"
            )) == Some(1.0)
    })
    .await;
    let myapp = |extra: &[(&'static str, &str)]| {
        let mut all = labels(&[("namespace", &failing_ns), ("controller", "myapp")]);
        all.extend(labels(extra));
        all
    };
    groups.push(
        held_for_an_hour("failing", &failing_ns, &before, &after)
            + &expect_alerts(&[
                ("ReconcileHostReconcileErrors", myapp(&[])),
                ("ReconcileHostParentsNotReady", myapp(&[])),
                ("ReconcileHostModuleRefused", myapp(&[])),
                (
                    "ReconcileHostGuestFailures",
                    myapp(&[("reason", "GuestTrapped")]),
                ),
                (
                    "ReconcileHostGuestFailures",
                    myapp(&[("reason", "GuestDeadlineExceeded")]),
                ),
                ("ReconcileHostWorkQueueSaturated", myapp(&[])),
            ]),
    );

    // No leader: another holder keeps the lease, so this replica waits and reconciles nothing.
    let standby_ns = cluster.namespace("mon-standby").await.unwrap();
    let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("reconcile-host-myapp".into()),
            namespace: Some(standby_ns.clone()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("another-replica".into()),
            lease_duration_seconds: Some(3600),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            ..Default::default()
        }),
    };
    Api::<Lease>::namespaced(client.clone(), &standby_ns)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();
    let standby = HostProcess::myapp(
        kubeconfig,
        &standby_ns,
        &component("guest_myapp"),
        &[
            "--leader-election",
            "--leader-election-namespace",
            &standby_ns,
        ],
    );
    let waiting = scrape_when(&standby, "the standby's metrics", |s| {
        s.value("reconcile_host_leader") == Some(0.0)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let still = scrape_when(&standby, "the standby still waiting", |s| {
        s.value("reconcile_host_leader") == Some(0.0)
    })
    .await;
    groups.push(
        held_for_an_hour("no leader", &standby_ns, &waiting, &still)
            + &expect_alerts(&[(
                "ReconcileHostNoLeader",
                labels(&[("namespace", &standby_ns)]),
            )]),
    );

    let dir = tempfile::tempdir().unwrap();
    write_rules(dir.path());
    let result = promtool_test(dir.path(), &groups);
    assert!(result.contains("SUCCESS"), "{result}");

    // The dashboard, against what the healthy and the failing host exposed.
    let healthy = dir.path().join("healthy.txt");
    std::fs::write(&healthy, healthy_metrics).unwrap();
    let failing_metrics = dir.path().join("failing.txt");
    let addr = failing.metrics_addr().unwrap();
    std::fs::write(
        &failing_metrics,
        crate::common::http::get(&addr, "/metrics").unwrap().1,
    )
    .unwrap();
    let checked = run_tool(
        "dashcheck",
        &[
            &repo_root().join("deploy/monitoring/dashboard.json"),
            &healthy,
            &failing_metrics,
        ],
    );
    assert!(checked.lines().count() >= 8, "{checked}");
}
