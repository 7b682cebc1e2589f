//! End to end on the real control plane: the seed's MyApp reconciled by reconcile-host running the
//! MyApp guest as a separate process. Each test has its own namespace and its own host.

use std::path::Path;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use reconcile_host::guest::digest_of;
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::events::{events_now, wait_event_saying};
use crate::common::guests::{artifact_cache, component, myapp_js, myapp_python, repo_root};
use crate::common::host::HostProcess;
use crate::common::myapp::*;

struct Setup {
    cluster: &'static TestCluster,
    client: kube::Client,
    namespace: String,
    host: HostProcess,
}

impl Drop for Setup {
    /// On failure, what the namespace held: usually says at once which step did not happen.
    fn drop(&mut self) {
        if std::thread::panicking() {
            for args in [
                ["get", "myapp,deploy,rs,pods", "-o", "wide"],
                ["get", "events", "--sort-by", ".lastTimestamp"],
            ] {
                if let Ok(out) = self
                    .cluster
                    .kubectl()
                    .args(args)
                    .args(["-n", &self.namespace])
                    .output()
                {
                    eprintln!(
                        "---- kubectl {} ----\n{}{}",
                        args.join(" "),
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
    }
}

async fn setup(prefix: &str, extra: &[&str]) -> Setup {
    setup_with(prefix, &component("guest_myapp"), extra).await
}

/// A host running `module` for MyApp in a namespace of its own.
async fn setup_with(prefix: &str, module: &Path, extra: &[&str]) -> Setup {
    let cluster = TestCluster::shared();
    install_crd(cluster);
    let namespace = cluster.namespace(prefix).await.unwrap();
    let host = HostProcess::myapp(cluster.kubeconfig_path(), &namespace, module, extra);
    Setup {
        client: cluster.client().await.unwrap(),
        cluster,
        namespace,
        host,
    }
}

#[tokio::test]
async fn demo_app_gets_its_deployment_created_then_ready() {
    let s = setup("demo", &[]).await;
    let _guard = failure_guard(s.cluster);
    // Every version of demo-app from here on, through a watch from the current resourceVersion: a
    // poll can miss `Created` when the pods turn ready within one interval.
    let api = myapps(&s.client, &s.namespace);
    let from = api
        .list(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();

    // The seed's own manifest, applied with kubectl as the seed does.
    let out = s
        .cluster
        .kubectl()
        .args(["apply", "-n", &s.namespace, "-f"])
        .arg(repo_root().join("examples/myapp/myapp-instance.yaml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Record the phases as they come: Created first (no ready Deployment yet), then Ready.
    let watch = WatchParams::default().fields("metadata.name=demo-app");
    let mut events = api.watch(&watch, &from).await.unwrap().boxed();
    let mut phases: Vec<String> = Vec::new();
    let record = async {
        while phases.last().map(String::as_str) != Some("Ready") {
            let object = match events.next().await {
                Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => object,
                Some(Ok(_)) => continue,
                other => panic!("the watch of demo-app ended: {other:?}"),
            };
            let phase = object.data["status"]["phase"].as_str();
            if phase.is_some() && phases.last().map(String::as_str) != phase {
                phases.extend(phase.map(String::from));
            }
        }
    };
    if tokio::time::timeout(TIMEOUT, record).await.is_err() {
        panic!("demo-app not Ready in time; phases seen: {phases:?}");
    }
    assert_eq!(
        phases.first().map(String::as_str),
        Some("Created"),
        "phases seen: {phases:?}"
    );

    let deployment = deployments(&s.client, &s.namespace)
        .get("demo-app-deploy")
        .await
        .unwrap();
    assert_eq!(
        replicas_and_image(&deployment),
        (Some(3), Some("nginx:1.23".into()))
    );
    let owner = &deployment.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("MyApp", "demo-app", Some(true))
    );
    assert_eq!(
        deployment.metadata.labels.as_ref().unwrap()["app.kubernetes.io/managed-by"],
        "reconcile-host"
    );
    assert_eq!(deployment.status.as_ref().unwrap().ready_replicas, Some(3));

    let status = api.get("demo-app").await.unwrap().data["status"].clone();
    assert_eq!(status["replicas"], 3);
    assert_eq!(status["readyReplicas"], 3);
    assert_eq!(status["observedGeneration"], 1);
    assert!(
        status["moduleDigest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(ready_condition(&status).unwrap()["status"], "True");
}

#[tokio::test]
async fn spec_changes_are_followed_by_the_deployment() {
    let s = setup("follow", &[]).await;
    let _guard = failure_guard(s.cluster);
    create_myapp(
        &s.client,
        &s.namespace,
        "web",
        json!({"replicas": 1, "image": "nginx:1.23"}),
    )
    .await;
    wait_deployment(
        &s.client,
        &s.namespace,
        "web-deploy",
        "the first Deployment",
        |d| replicas_and_image(d) == (Some(1), Some("nginx:1.23".into())),
    )
    .await;

    patch_spec(&s.client, &s.namespace, "web", json!({"replicas": 2})).await;
    wait_deployment(&s.client, &s.namespace, "web-deploy", "replicas 2", |d| {
        replicas_and_image(d).0 == Some(2)
    })
    .await;

    patch_spec(
        &s.client,
        &s.namespace,
        "web",
        json!({"image": "nginx:1.25"}),
    )
    .await;
    wait_deployment(
        &s.client,
        &s.namespace,
        "web-deploy",
        "image nginx:1.25",
        |d| replicas_and_image(d) == (Some(2), Some("nginx:1.25".into())),
    )
    .await;
    let status = wait_status(
        &s.client,
        &s.namespace,
        "web",
        "observedGeneration 3",
        |st| st["observedGeneration"] == 3,
    )
    .await;
    assert_eq!(status["replicas"], 2);
}

/// A reconcile whose answer changes nothing (the cluster updating the Deployment's status, the host's
/// own status patch) does not apply the child again: a no-op apply still costs the API server a write.
#[tokio::test]
async fn an_answer_that_changes_nothing_is_not_applied_again() {
    let s = setup("noop", &[]).await;
    let _guard = failure_guard(s.cluster);
    create_myapp(&s.client, &s.namespace, "quiet", json!({"replicas": 1})).await;
    // `Ready` is written by a reconcile that saw the ready Deployment, the same answer as before.
    wait_status(&s.client, &s.namespace, "quiet", "Ready", |st| {
        st["phase"] == "Ready"
    })
    .await;
    let addr = wait_for("the metrics address", || async { s.host.metrics_addr() }).await;
    let metrics = crate::common::http::get(&addr, "/metrics").unwrap().1;
    let applies = |result: &str| {
        crate::common::http::sample(
            &metrics,
            "reconcile_host_child_applies_total",
            &format!(r#"result="{result}""#),
        )
    };
    assert!(applies("applied") >= 1.0, "{metrics}");
    assert!(applies("skipped") >= 1.0, "{metrics}");
}

#[tokio::test]
async fn drift_is_reverted_and_a_deleted_deployment_is_recreated() {
    let s = setup("drift", &[]).await;
    let _guard = failure_guard(s.cluster);
    create_myapp(
        &s.client,
        &s.namespace,
        "steady",
        json!({"replicas": 2, "image": "nginx:1.23"}),
    )
    .await;
    let api = deployments(&s.client, &s.namespace);
    let first = wait_deployment(
        &s.client,
        &s.namespace,
        "steady-deploy",
        "the Deployment",
        |_| true,
    )
    .await;

    // A hand edit by someone else (another field manager).
    api.patch(
        "steady-deploy",
        &PatchParams::apply("kubectl-edit").force(),
        &Patch::Apply(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 7}}),
        ),
    )
    .await
    .unwrap();
    wait_deployment(
        &s.client,
        &s.namespace,
        "steady-deploy",
        "the edit to be reverted",
        |d| replicas_and_image(d).0 == Some(2) && d.metadata.generation > first.metadata.generation,
    )
    .await;

    api.delete("steady-deploy", &DeleteParams::default())
        .await
        .unwrap();
    let recreated = wait_deployment(
        &s.client,
        &s.namespace,
        "steady-deploy",
        "the Deployment to be recreated",
        |d| d.metadata.uid != first.metadata.uid,
    )
    .await;
    assert_eq!(
        replicas_and_image(&recreated),
        (Some(2), Some("nginx:1.23".into()))
    );
}

#[tokio::test]
async fn deleting_the_myapp_garbage_collects_its_deployment() {
    let s = setup("gc", &[]).await;
    let _guard = failure_guard(s.cluster);
    create_myapp(
        &s.client,
        &s.namespace,
        "short-lived",
        json!({"replicas": 1}),
    )
    .await;
    wait_deployment(
        &s.client,
        &s.namespace,
        "short-lived-deploy",
        "the Deployment",
        |_| true,
    )
    .await;
    myapps(&s.client, &s.namespace)
        .delete("short-lived", &DeleteParams::default())
        .await
        .unwrap();
    let api = deployments(&s.client, &s.namespace);
    wait_for("the Deployment to be garbage-collected", || {
        let api = api.clone();
        async move {
            api.get_opt("short-lived-deploy")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn a_rejected_spec_is_reported_while_other_myapps_converge() {
    let s = setup("reject", &[]).await;
    let _guard = failure_guard(s.cluster);
    create_myapp(
        &s.client,
        &s.namespace,
        "broken",
        json!({"replicas": 1, "image": ""}),
    )
    .await;
    create_myapp(
        &s.client,
        &s.namespace,
        "fine",
        json!({"replicas": 1, "image": "nginx:1.23"}),
    )
    .await;

    let status = wait_status(
        &s.client,
        &s.namespace,
        "broken",
        "Ready=False on broken",
        |st| ready_condition(st).is_some_and(|c| c["status"] == "False"),
    )
    .await;
    let ready = ready_condition(&status).unwrap();
    assert_eq!(ready["reason"], "GuestRejected");
    assert!(
        ready["message"].as_str().unwrap().contains("image"),
        "{ready}"
    );
    wait_status(
        &s.client,
        &s.namespace,
        "fine",
        "fine to become Ready",
        |st| st["phase"] == "Ready",
    )
    .await;
    assert!(
        deployments(&s.client, &s.namespace)
            .get_opt("broken-deploy")
            .await
            .unwrap()
            .is_none(),
        "nothing may be applied for a rejected spec"
    );

    let events: Api<CoreEvent> = Api::namespaced(s.client.clone(), &s.namespace);
    let warning = wait_for("a Warning Event on broken", || {
        let events = events.clone();
        async move {
            let list = events
                .list(&ListParams::default().fields("involvedObject.name=broken"))
                .await
                .ok()?;
            list.items
                .into_iter()
                .find(|e| e.type_.as_deref() == Some("Warning"))
        }
    })
    .await;
    assert_eq!(warning.reason.as_deref(), Some("GuestRejected"));

    // Fixing the spec heals it.
    patch_spec(
        &s.client,
        &s.namespace,
        "broken",
        json!({"image": "nginx:1.23"}),
    )
    .await;
    wait_status(&s.client, &s.namespace, "broken", "broken to heal", |st| {
        ready_condition(st).is_some_and(|c| c["status"] == "True")
    })
    .await;
}

#[tokio::test]
async fn kubectl_shows_columns_and_events() {
    let s = setup("kubectl", &[]).await;
    let _guard = failure_guard(s.cluster);
    create_myapp(
        &s.client,
        &s.namespace,
        "demo-app",
        json!({"replicas": 3, "image": "nginx:1.23"}),
    )
    .await;
    wait_status(&s.client, &s.namespace, "demo-app", "Ready", |st| {
        st["phase"] == "Ready"
    })
    .await;

    let out = s
        .cluster
        .kubectl()
        .args(["get", "myapp", "-n", &s.namespace])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "REPLICAS", "IMAGE", "PHASE", "READY", "AGE"],
        "{table}"
    );
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[..5],
        ["demo-app", "3", "nginx:1.23", "Ready", "True"],
        "{table}"
    );

    let out = s
        .cluster
        .kubectl()
        .args(["describe", "myapp", "demo-app", "-n", &s.namespace])
        .output()
        .unwrap();
    let describe = String::from_utf8_lossy(&out.stdout);
    assert!(describe.contains("Events:"), "{describe}");
    assert!(
        describe.contains("created Deployment/demo-app-deploy"),
        "{describe}"
    );
}

#[tokio::test]
async fn the_finalizer_holds_the_parent_until_the_guest_has_finalized() {
    let s = setup("finalize", &["--finalizer", "example.com/cleanup"]).await;
    let _guard = failure_guard(s.cluster);
    create_myapp(&s.client, &s.namespace, "held", json!({"replicas": 1})).await;
    let api = myapps(&s.client, &s.namespace);
    wait_for("the finalizer to be added", || {
        let api = api.clone();
        async move {
            let object = api.get("held").await.ok()?;
            object
                .metadata
                .finalizers?
                .contains(&"example.com/cleanup".to_string())
                .then_some(())
        }
    })
    .await;
    wait_deployment(
        &s.client,
        &s.namespace,
        "held-deploy",
        "the Deployment",
        |_| true,
    )
    .await;

    api.delete("held", &DeleteParams::default()).await.unwrap();
    wait_for("the MyApp to be finalized and gone", || {
        let api = api.clone();
        async move { api.get_opt("held").await.unwrap().is_none().then_some(()) }
    })
    .await;
    // The guest's finalizing answer (no children) was carried out while the finalizer held the
    // parent: the host deleted the Deployment itself (the garbage collector only would after).
    wait_event_saying(
        &s.client,
        &s.namespace,
        Some("held"),
        "Deleted",
        "deleted Deployment/held-deploy",
    )
    .await;
    // A parent finalized and gone is no failure, even to a reconcile that still had it cached.
    let failed = events_now(&s.client, &s.namespace, "held", "ParentUpdateFailed").await;
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The MyApp logic written in another language runs in the same host, with the same flags: a Deployment
/// from the guest's answer, then phase Ready from its status, stamped with that module's digest.
async fn another_language_runs_myapp(prefix: &str, module: &Path, extra: &[&str]) {
    let cache = artifact_cache();
    let mut flags = vec!["--cache-dir", cache.to_str().unwrap()];
    flags.extend_from_slice(extra);
    let s = setup_with(prefix, module, &flags).await;
    let _guard = failure_guard(s.cluster);
    create_myapp(
        &s.client,
        &s.namespace,
        "polyglot",
        json!({"replicas": 2, "image": "nginx:1.23"}),
    )
    .await;
    let deployment = wait_deployment(
        &s.client,
        &s.namespace,
        "polyglot-deploy",
        "the Deployment",
        |_| true,
    )
    .await;
    assert_eq!(
        replicas_and_image(&deployment),
        (Some(2), Some("nginx:1.23".into()))
    );
    assert_eq!(
        deployment.metadata.labels.as_ref().unwrap()["app"],
        "polyglot"
    );
    let status = wait_status(&s.client, &s.namespace, "polyglot", "phase Ready", |st| {
        st["phase"] == "Ready"
    })
    .await;
    assert_eq!(status["readyReplicas"], 2);
    assert_eq!(ready_condition(&status).unwrap()["status"], "True");
    let digest = digest_of(&std::fs::read(module).unwrap());
    assert_eq!(status["moduleDigest"], digest.as_str());
}

#[tokio::test]
async fn a_javascript_guest_runs_myapp() {
    // The defaults fit: the JS guest needs ~10 MiB of memory and a few milliseconds per fresh call.
    another_language_runs_myapp("js", &myapp_js(), &[]).await;
}

#[tokio::test]
async fn a_python_guest_runs_myapp_with_reused_instances() {
    // A fresh Python instance costs milliseconds: heavy runtimes may opt into instance reuse.
    another_language_runs_myapp(
        "python",
        &myapp_python(),
        &["--reuse-instance-calls", "100"],
    )
    .await;
}
