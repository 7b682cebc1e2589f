//! Shadow modules on the real control plane: a candidate that differs on some parents is reported on
//! those only (metric and Event naming the JSON pointer) while the cluster stays as the active module
//! made it; promotion (the candidate made active) applies it; a candidate that fails fails only itself;
//! and a `Reconciler` object's `shadowModule` does the same in platform mode.

use k8s_openapi::api::core::v1::Event as CoreEvent;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::{component, myapp_variant_c};
use crate::common::host::HostProcess;
use crate::common::http;
use crate::common::myapp::*;
use crate::common::platform::{
    apply_reconciler, apply_team_rbac, example_reconciler, platform_host, put_module,
    wait_ready_myapp,
};

const VARIANT_LABEL: &str = "example.com/variant";
const EACH: usize = 4;

/// Waits until the host's shadow gauge of `controller` reads `[agrees, differs, failing]` parents.
async fn wait_shadow(host: &HostProcess, controller: &str, want: [usize; 3]) {
    let addr = host.metrics_addr().unwrap();
    wait_for(&format!("shadow parents {want:?}"), || {
        let addr = addr.clone();
        async move {
            let (_, metrics) = http::get(&addr, "/metrics").ok()?;
            let got = ["agrees", "differs", "failing"].map(|result| {
                let labels = format!("controller=\"{controller}\",result=\"{result}\"");
                http::sample(&metrics, "reconcile_host_shadow_parents", &labels) as usize
            });
            (got == want).then_some(())
        }
    })
    .await;
}

/// Waits until the host's shadow gauge of `controller` counts any parent: the shadow module is loaded.
async fn wait_shadow_loaded(host: &HostProcess, controller: &str) {
    let addr = host.metrics_addr().unwrap();
    wait_for("the shadow module's first verdict", || {
        let addr = addr.clone();
        async move {
            let (_, metrics) = http::get(&addr, "/metrics").ok()?;
            let counted: f64 = ["agrees", "differs", "failing"]
                .map(|result| {
                    let labels = format!("controller=\"{controller}\",result=\"{result}\"");
                    http::sample(&metrics, "reconcile_host_shadow_parents", &labels)
                })
                .iter()
                .sum();
            (counted > 0.0).then_some(())
        }
    })
    .await;
}

/// Annotates the MyApp `name`, which reconciles it without changing what it asks for.
async fn touch(client: &kube::Client, namespace: &str, name: &str) {
    use kube::api::{Patch, PatchParams};
    let patch = json!({"metadata": {"annotations": {"example.com/touched": "1"}}});
    myapps(client, namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

/// The variant label of each Deployment, by name.
async fn variant_labels(client: &kube::Client, namespace: &str) -> Vec<(String, Option<String>)> {
    let list = deployments(client, namespace)
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut labels: Vec<_> = list
        .items
        .iter()
        .map(|d| (d.name_any(), d.labels().get(VARIANT_LABEL).cloned()))
        .collect();
    labels.sort();
    labels
}

/// No Deployment carries the variant label only a shadow module sets.
async fn assert_nothing_of_the_shadow_applied(client: &kube::Client, namespace: &str) {
    assert!(
        variant_labels(client, namespace)
            .await
            .iter()
            .all(|(_, variant)| variant.is_none()),
        "the shadow's answers are never applied"
    );
}

#[tokio::test]
async fn a_shadow_module_is_compared_on_live_parents_never_applied_and_promoted_by_a_swap() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("shadow").await.unwrap();
    let client = cluster.client().await.unwrap();
    let (module, key) = ("logic", "module.wasm");
    put_module(&client, &namespace, module, key, &component("guest_myapp")).await;
    put_module(&client, &namespace, "candidate", key, &myapp_variant_c()).await;
    let active = format!("{namespace}/{module}/{key}");
    let candidate = format!("{namespace}/candidate/{key}");
    let host = HostProcess::myapp_from_configmap(
        cluster.kubeconfig_path(),
        &namespace,
        &active,
        &["--shadow-module-configmap", &candidate],
    );
    // The candidate labels Deployments of 3 replicas or more: it differs on the big parents only.
    for (size, replicas) in [("small", 1), ("big", 3)] {
        for i in 0..EACH {
            let spec = json!({ "replicas": replicas });
            create_myapp(&client, &namespace, &format!("{size}-{i}"), spec).await;
        }
    }
    wait_shadow(&host, "myapp", [EACH, EACH, 0]).await;

    // The metric counts a verdict before its Event is posted: wait for as many Events as verdicts.
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), &namespace);
    let (differs, named) = wait_for("a ShadowDiffers Event per differing parent", || {
        let events = events.clone();
        async move {
            let differs = events
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some("ShadowDiffers"))
                .collect::<Vec<_>>();
            let mut named: Vec<_> = differs
                .iter()
                .filter_map(|e| e.involved_object.name.clone())
                .collect();
            named.sort();
            named.dedup();
            (named.len() >= EACH).then_some((differs, named))
        }
    })
    .await;
    assert_eq!(
        named,
        (0..EACH).map(|i| format!("big-{i}")).collect::<Vec<_>>()
    );
    let note = differs[0].message.clone().unwrap_or_default();
    assert!(
        note.contains("-deploy/metadata/labels/example.com~1variant"),
        "the Event names the first differing pointer: {note}"
    );
    assert_nothing_of_the_shadow_applied(&client, &namespace).await;

    // Promotion: the candidate becomes the active module, taken compiled from the shadow slot. Its
    // answers are applied, and the shadow (the same module now) agrees everywhere.
    put_module(&client, &namespace, module, key, &myapp_variant_c()).await;
    wait_shadow(&host, "myapp", [2 * EACH, 0, 0]).await;
    let swapped = host.log();
    let swapped = swapped.lines().find(|l| l.contains("module swapped"));
    assert!(
        swapped.is_some_and(|line| line.contains("reused=true")),
        "the promoted module was compiled again: {swapped:?}"
    );
    let labels = variant_labels(&client, &namespace).await;
    for (name, variant) in labels {
        let want = name.starts_with("big-").then(|| "c".to_string());
        assert_eq!(variant, want, "{name}");
    }

    // A candidate that gives no usable answer (the faults guest answers a ConfigMap, which the host
    // refuses, and loops on a parent that asks it to) fails on every parent and nothing else: the
    // active module keeps reconciling, the looping parent included.
    put_module(
        &client,
        &namespace,
        "candidate",
        key,
        &component("guest_faults"),
    )
    .await;
    let looper = json!({"replicas": 1, "fault": "loop"});
    create_myapp(&client, &namespace, "looper", looper).await;
    wait_shadow(&host, "myapp", [0, 0, 2 * EACH + 1]).await;
    wait_ready_myapp(&client, &namespace, "looper").await;
    patch_spec(&client, &namespace, "small-0", json!({"replicas": 2})).await;
    wait_deployment(&client, &namespace, "small-0-deploy", "2 replicas", |d| {
        d.spec.as_ref().and_then(|s| s.replicas) == Some(2)
    })
    .await;
    assert!(
        host.log().contains("GuestDeadlineExceeded"),
        "the looping candidate hit its deadline"
    );
}

#[tokio::test]
async fn a_reconciler_object_runs_its_shadow_module_beside_its_module() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let client = cluster.client().await.unwrap();
    let namespace = cluster.namespace("shadow-platform").await.unwrap();
    let host = platform_host(cluster, "shadow", &[]).await;
    // The team lets its reconciler read the candidate's ConfigMap too.
    apply_team_rbac(cluster, "myapp", &namespace, |rule| {
        if let Some(names) = rule["resourceNames"].as_array_mut() {
            names.push(json!("myapp-candidate"));
        }
    });
    let key = "myapp.wasm";
    put_module(
        &client,
        &namespace,
        "myapp-module",
        key,
        &component("guest_myapp"),
    )
    .await;
    put_module(
        &client,
        &namespace,
        "myapp-candidate",
        key,
        &myapp_variant_c(),
    )
    .await;
    let mut reconciler = example_reconciler("myapp", &namespace, "shadow");
    reconciler["spec"]["shadowModule"] =
        json!({"configMap": {"name": "myapp-candidate", "key": key}});
    apply_reconciler(&client, &reconciler).await;
    create_myapp(&client, &namespace, "small", json!({"replicas": 1})).await;
    create_myapp(&client, &namespace, "big", json!({"replicas": 3})).await;

    // The shadow module may load after a parent converged, and such a parent was once seen never to
    // get a verdict (CI, 2026-12-06: an open race, see the issue notes): wait for the shadow to give
    // one verdict, then touch both parents so that each is compared.
    let controller = format!("{namespace}/myapp");
    wait_shadow_loaded(&host, &controller).await;
    for name in ["small", "big"] {
        touch(&client, &namespace, name).await;
    }
    wait_shadow(&host, &controller, [1, 1, 0]).await;
    wait_ready_myapp(&client, &namespace, "big").await;
    assert_nothing_of_the_shadow_applied(&client, &namespace).await;
}
