//! `reconcile-host plan` on the real control plane: over 50 live parents, an identical module plans no
//! change, the variant module plans exactly the change it makes (a label on every Deployment), a parent
//! the module cannot reconcile is reported failing, and the cluster is left as it was. A decorator of
//! Namespaces (a cluster-scoped kind) is planned too: the child it would create again in the
//! Namespace, and the children it would delete once a Namespace loses its label. A plan as a platform
//! `Reconciler` (`--reconciler`) reads and dry-runs as its ServiceAccount: what that account may not do
//! fails the plan.

use std::path::Path;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ResourceQuota;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::decorator::{label, namespaces, quota_owner};
use crate::common::guests::{component, myapp_variant_b};
use crate::common::host::HostProcess;
use crate::common::myapp::*;
use crate::common::platform::{
    add_myapp_reconciler, apply_team_rbac, platform_host, wait_ready_myapp,
};

const PARENTS: usize = 50;
const VARIANT_LABEL: &str = "example.com/variant";

/// Runs `plan` with `module` over `namespace`; its exit code and its JSON report.
fn plan(kubeconfig: &Path, namespace: &str, module: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec![
        "--parent",
        "example.com/v1alpha1/MyApp",
        "--child",
        "apps/v1/Deployment",
    ];
    args.extend([
        "--namespace",
        namespace,
        "--module",
        module.to_str().unwrap(),
    ]);
    args.extend_from_slice(extra);
    crate::common::plan::run(kubeconfig, &args)
}

/// Each Deployment's name, generation and labels: what a write of the plan would have changed.
async fn deployments_state(client: &kube::Client, namespace: &str) -> Vec<(String, Option<i64>)> {
    let list = deployments(client, namespace)
        .list(&ListParams::default())
        .await
        .unwrap();
    for deployment in &list.items {
        assert!(
            !deployment.labels().contains_key(VARIANT_LABEL),
            "plan wrote to {}",
            deployment.name_any()
        );
    }
    let mut state: Vec<_> = list
        .items
        .iter()
        .map(|d| (d.name_any(), d.metadata.generation))
        .collect();
    state.sort();
    state
}

#[tokio::test]
async fn plan_shows_what_a_module_would_change_and_writes_nothing() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("plan").await.unwrap();
    let client = cluster.client().await.unwrap();
    let kubeconfig = cluster.kubeconfig_path();
    let module_a = component("guest_myapp");
    let host = HostProcess::myapp(kubeconfig, &namespace, &module_a, &[]);
    for i in 0..PARENTS {
        let spec = json!({"replicas": 1, "image": "nginx:1.23"});
        create_myapp(&client, &namespace, &format!("app-{i:02}"), spec).await;
    }
    for i in 0..PARENTS {
        // Converged: the pods are ready and the guest has said so (phase Ready).
        wait_status(&client, &namespace, &format!("app-{i:02}"), "Ready", |st| {
            st["phase"] == "Ready" && ready_condition(st).is_some_and(|c| c["status"] == "True")
        })
        .await;
    }
    // The host stops: nothing but the plan could write to the children from here on.
    drop(host);
    let before = deployments_state(&client, &namespace).await;
    assert_eq!(before.len(), PARENTS);

    let (code, report) = plan(kubeconfig, &namespace, &module_a, &["--fail-on-change"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["summary"],
        json!({"unchanged": PARENTS, "changed": 0, "failing": 0, "deleting": 0})
    );
    assert_eq!(report["parents"], json!([]));

    let (code, report) = plan(kubeconfig, &namespace, &myapp_variant_b(), &[]);
    assert_eq!(code, 0, "changes alone do not fail the plan");
    assert_eq!(report["summary"]["changed"], PARENTS);
    let (code, report) = plan(
        kubeconfig,
        &namespace,
        &myapp_variant_b(),
        &["--fail-on-change"],
    );
    assert_eq!(code, 3);
    let parents = report["parents"].as_array().unwrap();
    assert_eq!(parents.len(), PARENTS);
    eprintln!(
        "one parent of the variant plan:\n{}",
        serde_json::to_string_pretty(&parents[0]).unwrap()
    );
    for parent in parents {
        let name = parent["parent"]
            .as_str()
            .unwrap()
            .split('/')
            .nth(1)
            .unwrap();
        assert_eq!(parent["verdict"], "changed");
        assert_eq!(parent["changed"].as_array().unwrap().len(), 1, "{parent}");
        let change = &parent["changed"][0];
        assert_eq!(change["child"], format!("Deployment/{name}-deploy"));
        assert_eq!(
            change["patch"],
            json!([{"op": "add", "path": "/metadata/labels/example.com~1variant", "value": "b"}]),
            "exactly the label, nothing the API server or a write would add"
        );
        assert!(parent.get("created").is_none() && parent.get("deleted").is_none());
    }
    assert_eq!(deployments_state(&client, &namespace).await, before);
}

#[tokio::test]
async fn plan_reports_the_parents_that_would_fail_and_the_children_it_would_create() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("plan-fail").await.unwrap();
    let client = cluster.client().await.unwrap();
    // No host runs: `fresh` has no Deployment yet; `taken` names a Deployment a person made.
    create_myapp(&client, &namespace, "fresh", json!({"replicas": 2})).await;
    create_myapp(&client, &namespace, "taken", json!({"replicas": 1})).await;
    let persons: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "taken-deploy"},
        "spec": {
            "selector": {"matchLabels": {"app": "taken"}},
            "template": {"metadata": {"labels": {"app": "taken"}},
                         "spec": {"containers": [{"name": "main", "image": "person/own:1"}]}},
        },
    }))
    .unwrap();
    deployments(&client, &namespace)
        .create(&PostParams::default(), &persons)
        .await
        .unwrap();

    let (code, report) = plan(
        cluster.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &[],
    );
    assert_eq!(code, 2, "a failing parent fails the plan: {report}");
    assert_eq!(report["summary"]["failing"], 1);
    assert_eq!(report["summary"]["changed"], 1);
    let by_name = |name: &str| {
        report["parents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["parent"] == format!("{namespace}/{name}"))
            .unwrap()
            .clone()
    };
    let taken = by_name("taken");
    assert_eq!(taken["verdict"], "failing");
    assert_eq!(taken["error"]["reason"], "ChildExists");
    let fresh = by_name("fresh");
    let created = &fresh["created"][0];
    assert_eq!(created["metadata"]["name"], "fresh-deploy");
    assert_eq!(created["spec"]["replicas"], 2);
    assert!(
        created["spec"]["progressDeadlineSeconds"].is_number(),
        "the API server's defaults are in the plan: {created}"
    );
    let status_ops = fresh["status"].as_array().unwrap();
    assert!(
        status_ops.iter().any(|op| op["path"] == "/phase"),
        "{fresh}"
    );
    assert!(
        deployments(&client, &namespace)
            .get_opt("fresh-deploy")
            .await
            .unwrap()
            .is_none(),
        "the dry-run created nothing"
    );
}

#[tokio::test]
async fn plan_covers_a_decorator_of_namespaces() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let kubeconfig = cluster.kubeconfig_path();
    // A selector value of its own: other tests decorate Namespaces of this cluster too.
    let team = cluster.namespace("plan-deco-team").await.unwrap();
    let labelled = cluster.namespace("plan-deco").await.unwrap();
    label(
        &namespaces(&client),
        &labelled,
        json!({"labels": {"team": team}}),
    )
    .await;
    let module = component("guest_namespace_decorator");
    let selector = format!("team={team}");
    let args = [
        "--parent",
        "v1/Namespace",
        "--parent-selector",
        &selector,
        "--child",
        "v1/ResourceQuota",
        "--child",
        "networking.k8s.io/v1/NetworkPolicy",
        "--module",
        module.to_str().unwrap(),
    ];
    let host = HostProcess::start(kubeconfig, &args);
    quota_owner(&client, &labelled).await;
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &labelled);
    wait_for("team-isolation", || {
        let policies = policies.clone();
        async move { policies.get_opt("team-isolation").await.ok().flatten() }
    })
    .await;
    drop(host);
    // The plan of our Namespace, if it lists it: Namespaces of other tests may be in it too.
    let ours = |report: &Value| {
        report["parents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["parent"] == labelled.as_str())
            .cloned()
    };

    let (code, report) = crate::common::plan::run(kubeconfig, &args);
    assert_eq!(code, 0, "{report}");
    assert_eq!(ours(&report), None, "as the host left it: {report}");

    policies
        .delete("team-isolation", &DeleteParams::default())
        .await
        .unwrap();
    let (_, report) = crate::common::plan::run(kubeconfig, &args);
    let plan = ours(&report).unwrap_or_else(|| panic!("{report}"));
    assert_eq!(plan["verdict"], "changed", "{plan}");
    let created = &plan["created"][0];
    assert_eq!(created["kind"], "NetworkPolicy", "{plan}");
    assert_eq!(created["metadata"]["namespace"], labelled.as_str());
    assert!(
        plan.get("status").is_none(),
        "a decorator writes no status: {plan}"
    );

    label(
        &namespaces(&client),
        &labelled,
        json!({"labels": {"team": null}}),
    )
    .await;
    let (_, report) = crate::common::plan::run(kubeconfig, &args);
    let plan = ours(&report).unwrap_or_else(|| panic!("{report}"));
    assert_eq!(plan["verdict"], "changed", "{plan}");
    assert_eq!(
        plan["deleted"],
        json!([format!("ResourceQuota/{labelled}/team-quota")]),
        "finalized by the module, then its children deleted: {plan}"
    );
    assert!(plan.get("created").is_none(), "{plan}");
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), &labelled);
    assert!(
        quotas.get_opt("team-quota").await.unwrap().is_some(),
        "the plan deleted nothing"
    );
    assert!(
        policies.get_opt("team-isolation").await.unwrap().is_none(),
        "the plan created nothing"
    );
}

/// Whether `user` may `verb` `resource` in `namespace`, as the API server's authorizer says now.
fn may(cluster: &TestCluster, user: &str, verb: &str, resource: &str, namespace: &str) -> bool {
    let args = [
        "auth", "can-i", verb, resource, "-n", namespace, "--as", user,
    ];
    let out = cluster.kubectl().args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

/// Team A's RBAC in `team` as shipped, but without `verb` on `resource`; returns once the API server's
/// authorizer refuses it to `user`.
async fn revoke(cluster: &TestCluster, team: &str, user: &str, resource: &str, verb: &str) {
    apply_team_rbac(cluster, "myapp", team, |rule| {
        if rule["resources"]
            .as_array()
            .is_some_and(|resources| resources.contains(&json!(resource)))
        {
            let verbs = rule["verbs"].as_array_mut().unwrap();
            verbs.retain(|v| v != verb);
        }
    });
    wait_for(
        &format!("{user} refused {verb} {resource}"),
        || async move { (!may(cluster, user, verb, resource, team)).then_some(()) },
    )
    .await;
}

#[tokio::test]
async fn plan_as_a_reconciler_reports_what_its_service_account_may_not_do() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let kubeconfig = cluster.kubeconfig_path();
    let test = "plan-as-reconciler";
    let team = cluster.namespace("plan-team").await.unwrap();
    // Team A's reconciler converges its parent on the platform, then the platform stops: from here on
    // only the plan could write to the child.
    let host = platform_host(cluster, test, &[]).await;
    add_myapp_reconciler(cluster, &team, test).await;
    let spec = json!({"replicas": 1, "image": "nginx:1.23"});
    create_myapp(&client, &team, "web", spec).await;
    wait_ready_myapp(&client, &team, "web").await;
    drop(host);
    let user = format!("system:serviceaccount:{team}:myapp-reconciler");
    let module = component("guest_myapp");
    let reconciler = format!("{team}/myapp");
    let as_reconciler = [
        "--reconciler",
        &reconciler,
        "--module",
        module.to_str().unwrap(),
    ];

    // Granted as shipped: the plan as the reconciler is clean.
    let gate = [&as_reconciler[..], &["--fail-on-change"]].concat();
    let (code, report) = crate::common::plan::run(kubeconfig, &gate);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["summary"],
        json!({"unchanged": 1, "changed": 0, "failing": 0, "deleting": 0})
    );

    // Without `patch` on Deployments the dry-run apply is forbidden to it: the parent fails, as the
    // reconciler would, where a plan with the caller's rights sees nothing wrong.
    revoke(cluster, &team, &user, "deployments", "patch").await;
    let (code, report) = crate::common::plan::run(kubeconfig, &as_reconciler);
    assert_eq!(code, 2, "{report}");
    let parent = &report["parents"][0];
    assert_eq!(parent["parent"], format!("{team}/web"), "{report}");
    assert_eq!(parent["verdict"], "failing", "{report}");
    assert_eq!(parent["error"]["reason"], "ApplyFailed", "{report}");
    let message = parent["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&user) && message.contains("patch"),
        "{message}"
    );
    let (code, report) = plan(kubeconfig, &team, &module, &[]);
    assert_eq!(code, 0, "as the caller: {report}");
    assert_eq!(report["summary"]["failing"], 0, "as the caller: {report}");

    // Without `list` on the parent kind it has nothing to plan: the plan fails, saying why.
    revoke(cluster, &team, &user, "myapps", "list").await;
    let out = crate::common::plan::output(kubeconfig, &as_reconciler);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("listing the parents")
            && stderr.contains(&user)
            && stderr.contains("forbidden"),
        "{stderr}"
    );
}
