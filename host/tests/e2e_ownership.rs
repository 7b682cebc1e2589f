//! The ownership rule on the real control plane: a guest that names an object its parent does not
//! control changes nothing of it. A person's Deployment stays as it was and outlives the parent; the
//! child of another parent stays with the first; adoption of uncontrolled objects is opt-in and
//! reported; pruning deletes only what the parent controls, whatever the labels say.

mod common;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use common::events::wait_event;
use common::guests::component;
use common::host::HostProcess;
use common::myapp::*;

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
