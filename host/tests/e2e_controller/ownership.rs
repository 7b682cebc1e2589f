//! The ownership rule on the real control plane: a guest that names an object its parent does not
//! control changes nothing of it. A person's Deployment stays as it was and outlives the parent; the
//! child of another parent stays with the first; adoption of uncontrolled objects is opt-in and
//! reported; pruning deletes only what the parent controls, whatever the labels say. A child no cache
//! holds is created create-only: an object made after the host looked is refused, not taken over, and
//! what the host created is its apply manager's, so a field the module drops goes.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::events::wait_event;
use crate::common::guests::{component, myapp_variant_c};
use crate::common::host::HostProcess;
use crate::common::myapp::*;

const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// A Deployment `<parent>-deploy` as a person makes it with `kubectl create` (with the selector the
/// MyApp guest would give it), optionally carrying the host's label (which must not make it the
/// host's) or a controller ownerReference.
fn persons_deployment(parent: &str, labels: Value, owner: Option<Value>) -> Deployment {
    let name = format!("{parent}-deploy");
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "ownerReferences": owner.into_iter().collect::<Vec<_>>()},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": parent}},
            "template": {
                "metadata": {"labels": {"app": parent}},
                "spec": {"containers": [{"name": "main", "image": "person/own:1"}]},
            },
        },
    }))
    .unwrap()
}

/// The parent's `Ready=False` condition once it has `reason`.
async fn wait_refused(client: &Client, namespace: &str, parent: &str, reason: &str) -> Value {
    let status = wait_status(
        client,
        namespace,
        parent,
        &format!("{parent}: {reason}"),
        |st| ready_condition(st).is_some_and(|c| c["status"] == "False" && c["reason"] == reason),
    )
    .await;
    ready_condition(&status).unwrap().clone()
}

/// Asserts that the person's Deployment is as created: same generation (spec untouched), same labels
/// and ownerReferences (none, unless it had some), and no field written by the host. (Its resourceVersion moves: the cluster's
/// Deployment controller writes its status.)
async fn assert_untouched(client: &Client, namespace: &str, before: &Deployment) {
    let now = deployments(client, namespace)
        .get(&before.name_any())
        .await
        .unwrap();
    assert_eq!(now.metadata.generation, before.metadata.generation);
    assert_eq!(now.labels(), before.labels());
    assert_eq!(now.owner_references(), before.owner_references());
    let managers: Vec<_> = now
        .managed_fields()
        .iter()
        .map(|m| m.manager.clone())
        .collect();
    assert!(
        !managers
            .iter()
            .any(|m| m.as_deref() == Some("reconcile-host")),
        "the host wrote to it: {managers:?}"
    );
    assert_eq!(
        now.spec.unwrap().template.spec.unwrap().containers[0].image,
        Some("person/own:1".into())
    );
}

#[tokio::test]
async fn a_persons_deployment_named_by_a_guest_stays_exactly_as_it_was_and_outlives_the_parent() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("persons").await.unwrap();
    let client = cluster.client().await.unwrap();
    let _host = HostProcess::myapp(
        cluster.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &[],
    );
    let api = deployments(&client, &namespace);
    // One outside the host's cache (looked up with a GET), one inside it through the label a guest
    // could set on anything it names: neither is the host's.
    let mut persons = Vec::new();
    for (name, labels) in [
        ("plain", json!({})),
        ("labelled", json!({ MANAGED_BY: "reconcile-host" })),
    ] {
        let deployment = persons_deployment(name, labels, None);
        persons.push(
            api.create(&PostParams::default(), &deployment)
                .await
                .unwrap(),
        );
    }
    for parent in ["plain", "labelled", "control"] {
        create_myapp(&client, &namespace, parent, json!({"replicas": 1})).await;
    }

    for parent in ["plain", "labelled"] {
        let ready = wait_refused(&client, &namespace, parent, "ChildExists").await;
        let message = ready["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("Deployment/{parent}-deploy")),
            "{message}"
        );
        let event = wait_event(&client, &namespace, Some(parent), "ChildExists").await;
        assert_eq!(event.type_.as_deref(), Some("Warning"));
    }
    wait_status(&client, &namespace, "control", "control Ready", |st| {
        ready_condition(st).is_some_and(|c| c["status"] == "True")
    })
    .await;
    for before in &persons {
        assert_untouched(&client, &namespace, before).await;
    }

    // Deleting the parents garbage-collects the control's Deployment, and only that.
    for parent in ["plain", "labelled", "control"] {
        myapps(&client, &namespace)
            .delete(parent, &DeleteParams::foreground())
            .await
            .unwrap();
    }
    wait_for("the control's Deployment collected", || {
        let api = api.clone();
        async move {
            api.get_opt("control-deploy")
                .await
                .ok()?
                .is_none()
                .then_some(())
        }
    })
    .await;
    wait_for("the parents gone", || {
        let parents = myapps(&client, &namespace);
        async move {
            let list = parents.list(&ListParams::default()).await.ok()?;
            list.items.is_empty().then_some(())
        }
    })
    .await;
    for before in &persons {
        assert_untouched(&client, &namespace, before).await;
    }
}

#[tokio::test]
async fn two_parents_naming_one_child_the_first_keeps_it_and_prune_spares_what_is_not_controlled() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("rivals").await.unwrap();
    let client = cluster.client().await.unwrap();
    let _host = HostProcess::faults(cluster.kubeconfig_path(), &namespace, &[]);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    // A person's ConfigMap carrying the host's label: in the cache, but controlled by no parent.
    let bystander: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "bystander", "labels": { MANAGED_BY: "reconcile-host" }},
        "data": {"mine": "yes"},
    }))
    .unwrap();
    let bystander = configmaps
        .create(&PostParams::default(), &bystander)
        .await
        .unwrap();

    let first = create_myapp(
        &client,
        &namespace,
        "first",
        json!({"fault": "fixed-name:shared"}),
    )
    .await;
    wait_status(&client, &namespace, "first", "first Ready", |st| {
        ready_condition(st).is_some_and(|c| c["status"] == "True")
    })
    .await;
    let shared = configmaps.get("shared").await.unwrap();
    assert_eq!(shared.owner_references()[0].uid, first.uid().unwrap());

    create_myapp(
        &client,
        &namespace,
        "second",
        json!({"fault": "fixed-name:shared"}),
    )
    .await;
    let ready = wait_refused(&client, &namespace, "second", "ChildOwnedByOther").await;
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.contains("ConfigMap/shared") && message.contains("MyApp/first"),
        "the refusal names the child and its controller: {message}"
    );
    wait_event(&client, &namespace, Some("second"), "ChildOwnedByOther").await;
    let after = configmaps.get("shared").await.unwrap();
    assert_eq!(after.resource_version(), shared.resource_version());
    assert_eq!(after.owner_references().len(), 1);
    assert_eq!(after.owner_references()[0].uid, first.uid().unwrap());
    let first_status = myapps(&client, &namespace).get("first").await.unwrap();
    assert_eq!(
        ready_condition(&first_status.data["status"]).unwrap()["status"],
        "True"
    );

    // Both parents drop `shared` for their own `<name>-cm`: each prunes what it controls, and only
    // that. The second never controlled `shared`, the bystander has the label but no controller.
    for parent in ["first", "second"] {
        patch_spec(&client, &namespace, parent, json!({"fault": "none"})).await;
    }
    for parent in ["first", "second"] {
        wait_for(&format!("{parent}-cm"), || {
            let configmaps = configmaps.clone();
            async move { configmaps.get_opt(&format!("{parent}-cm")).await.ok()? }
        })
        .await;
    }
    wait_for("shared pruned by its controller", || {
        let configmaps = configmaps.clone();
        async move {
            configmaps
                .get_opt("shared")
                .await
                .ok()?
                .is_none()
                .then_some(())
        }
    })
    .await;
    let still = configmaps.get("bystander").await.unwrap();
    assert_eq!(still.resource_version(), bystander.resource_version());
}

#[tokio::test]
async fn adoption_is_opt_in_reported_and_never_of_a_controlled_object() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("adopt").await.unwrap();
    let client = cluster.client().await.unwrap();
    let _host = HostProcess::myapp(
        cluster.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &["--adopt-orphans"],
    );
    let api = deployments(&client, &namespace);
    api.create(
        &PostParams::default(),
        &persons_deployment("orphan", json!({}), None),
    )
    .await
    .unwrap();
    // Controlled by a ConfigMap (it must exist, or garbage collection would take the Deployment).
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let holder = configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "holder"}})).unwrap(),
        )
        .await
        .unwrap();
    let controlled = api
        .create(
            &PostParams::default(),
            &persons_deployment(
                "held",
                json!({}),
                Some(
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "holder",
                            "uid": holder.uid().unwrap(), "controller": true}),
                ),
            ),
        )
        .await
        .unwrap();

    let orphan = create_myapp(
        &client,
        &namespace,
        "orphan",
        json!({"replicas": 3, "image": "nginx:1.23"}),
    )
    .await;
    create_myapp(&client, &namespace, "held", json!({"replicas": 1})).await;

    let adopted = wait_deployment(&client, &namespace, "orphan-deploy", "adopted", |d| {
        d.owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && Some(&o.uid) == orphan.uid().as_ref())
    })
    .await;
    assert_eq!(
        replicas_and_image(&adopted),
        (Some(3), Some("nginx:1.23".into()))
    );
    let event = wait_event(&client, &namespace, Some("orphan"), "Adopted").await;
    assert!(
        event
            .message
            .unwrap_or_default()
            .contains("Deployment/orphan-deploy"),
    );

    let ready = wait_refused(&client, &namespace, "held", "ChildOwnedByOther").await;
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("ConfigMap/holder"),
        "{ready}"
    );
    assert_untouched(&client, &namespace, &controlled).await;
}

/// The takeover window, made deterministic: the host pauses (its test-only hook) after its caches
/// showed no object of the child's name and before its write, and a person creates one then. The
/// create-only write fails and the parent is refused as if the object had been there before; a
/// forced apply at that point (the host before create-only writes) would have taken the first one over
/// and tried to add a second controller to the other.
#[tokio::test]
async fn an_object_made_between_the_hosts_look_and_its_write_is_refused_not_taken_over() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("window").await.unwrap();
    let client = cluster.client().await.unwrap();
    let pause = tempfile::tempdir().unwrap();
    let _host = HostProcess::myapp_with_env(
        cluster.kubeconfig_path(),
        &namespace,
        &component("guest_myapp"),
        &[],
        &[(
            "RECONCILE_HOST_TEST_PAUSE_BEFORE_CREATE",
            pause.path().to_str().unwrap(),
        )],
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let holder = configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "holder"}})).unwrap(),
        )
        .await
        .unwrap();
    let held_by = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "holder",
                         "uid": holder.uid().unwrap(), "controller": true});
    let api = deployments(&client, &namespace);
    for (parent, owner, reason) in [
        ("plain", None, "ChildExists"),
        ("held", Some(held_by), "ChildOwnedByOther"),
    ] {
        create_myapp(&client, &namespace, parent, json!({"replicas": 1})).await;
        let file = |suffix: &str| {
            let name = format!("{namespace}.{parent}-deploy.{suffix}");
            pause.path().join(name)
        };
        let paused = file("paused");
        wait_for(
            &format!("the host paused before creating {parent}-deploy"),
            || {
                let paused = paused.clone();
                async move { paused.exists().then_some(()) }
            },
        )
        .await;
        let persons = api
            .create(
                &PostParams::default(),
                &persons_deployment(parent, json!({}), owner),
            )
            .await
            .unwrap();
        std::fs::write(file("release"), b"").unwrap();

        let ready = wait_refused(&client, &namespace, parent, reason).await;
        let message = ready["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("Deployment/{parent}-deploy")),
            "{message}"
        );
        wait_event(&client, &namespace, Some(parent), reason).await;
        assert_untouched(&client, &namespace, &persons).await;
    }
}

/// A child the host created create-only (a POST, whose fields the API server records under an
/// `Update` entry) belongs to the host's apply manager: a field the module stops returning is removed
/// by the next apply. The variant-c MyApp module labels Deployments of 3 replicas or more only.
#[tokio::test]
async fn a_field_the_module_drops_is_removed_from_a_child_it_created() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("dropped").await.unwrap();
    let client = cluster.client().await.unwrap();
    let host = HostProcess::myapp(
        cluster.kubeconfig_path(),
        &namespace,
        &myapp_variant_c(),
        &[],
    );
    create_myapp(&client, &namespace, "shrinking", json!({"replicas": 3})).await;
    let labelled = |d: &Deployment| d.labels().contains_key(VARIANT_LABEL);
    let created = wait_deployment(
        &client,
        &namespace,
        "shrinking-deploy",
        "the variant label",
        labelled,
    )
    .await;
    wait_status(&client, &namespace, "shrinking", "shrinking Ready", |st| {
        ready_condition(st).is_some_and(|c| c["status"] == "True")
    })
    .await;
    // The reconcile that created it moved its fields to the host's apply manager before it reported
    // Ready; the echo of that move (a child change) applied nothing again.
    let now = deployments(&client, &namespace)
        .get("shrinking-deploy")
        .await
        .unwrap();
    let hosts: Vec<_> = now
        .managed_fields()
        .iter()
        .filter(|m| m.manager.as_deref() == Some("reconcile-host"))
        .map(|m| m.operation.clone().unwrap_or_default())
        .collect();
    assert_eq!(hosts, ["Apply"], "{:?}", now.managed_fields());
    let addr = host.metrics_addr().unwrap();
    let metrics = crate::common::http::get(&addr, "/metrics").unwrap().1;
    let applies = |result: &str| {
        crate::common::http::sample(
            &metrics,
            "reconcile_host_child_applies_total",
            &format!(r#"result="{result}""#),
        )
    };
    assert_eq!(applies("fields_taken"), 1.0, "{metrics}");

    patch_spec(&client, &namespace, "shrinking", json!({"replicas": 2})).await;
    let shrunk = wait_deployment(
        &client,
        &namespace,
        "shrinking-deploy",
        "2 replicas without the variant label",
        |d| d.spec.as_ref().and_then(|s| s.replicas) == Some(2) && !labelled(d),
    )
    .await;
    assert_eq!(
        shrunk.uid(),
        created.uid(),
        "the same Deployment, not a new one"
    );
}
