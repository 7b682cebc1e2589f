//! Conversion through a ClusterReconciler: the platform serves its parent CRD's versions from the
//! module (the faults guest, whose `convert` sets the apiVersion, or fails when an annotation asks),
//! on a replica that does not lead, as the reconciler's ServiceAccount (the certificate Secret and the
//! CRD's caBundle), while the leader reconciles.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::conversion::{GROUP, apply_crd, crds, webhook_rules};
use crate::common::guests::component;
use crate::common::monitoring::has_led;
use crate::common::myapp::wait_for;
use crate::common::platform::*;
use crate::common::ports::free_port;

/// Gadgets: v1 stored, v2 served, both `spec.size`-free objects as far as the faults guest cares.
const PLURAL: &str = "gadgets";

fn gadgets(client: &kube::Client, namespace: &str, version: &str) -> Api<DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk(GROUP, version, "Gadget");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, PLURAL);
    Api::namespaced_with(client.clone(), namespace, &resource)
}

#[tokio::test]
async fn a_cluster_reconciler_serves_its_crds_conversion_from_every_replica() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "conversion";
    let name = "gadgets";
    let crd = format!("{PLURAL}.{GROUP}");

    // Two replicas: the first leads; the CRD's webhook calls the second, a standby.
    let election = ["--leader-election"];
    let leader_port = free_port().to_string();
    let leader_addr = format!("127.0.0.1:{leader_port}");
    let mut leader_args = election.to_vec();
    leader_args.extend(["--conversion-webhook-addr", &leader_addr]);
    let leader = platform_replica(cluster, test, "conversion-leader", &leader_args).await;
    wait_for("the first replica to lead", || async {
        has_led(&leader).then_some(())
    })
    .await;
    let standby_port = free_port();
    let standby_addr = format!("127.0.0.1:{standby_port}");
    let mut standby_args = election.to_vec();
    standby_args.extend(["--conversion-webhook-addr", &standby_addr]);
    let standby = platform_replica(cluster, test, "conversion-standby", &standby_args).await;

    let url = format!("https://localhost:{standby_port}/convert/{name}");
    let conversion = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"], "clientConfig": {"url": url}}});
    apply_crd(&client, PLURAL, "Gadget", conversion).await;

    // The platform team's ServiceAccount: the parents, ConfigMap children (and its module), and the
    // webhook's rules, nothing more.
    let platform = cluster.namespace("gadget-team").await.unwrap();
    let secret = "gadgets-conversion-tls";
    let (crd_rules, secret_rules) = webhook_rules(&crd, secret);
    let mut rules = vec![
        json!({"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]}),
        json!({"apiGroups": [GROUP], "resources": [format!("{PLURAL}/status")], "verbs": ["patch"]}),
        json!({"apiGroups": [""], "resources": ["configmaps"],
               "verbs": ["get", "list", "watch", "create", "patch", "delete"]}),
    ];
    rules.extend(crd_rules.as_array().unwrap().iter().cloned());
    let account = json!({"kind": "ServiceAccount", "name": "gadgets", "namespace": platform});
    let role_ref = |kind: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "gadgets-conversion"});
    kubectl_apply(
        cluster,
        &[
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "gadgets", "namespace": platform}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "gadgets-conversion"}, "rules": rules}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "gadgets-conversion"}, "roleRef": role_ref("ClusterRole"),
                   "subjects": [account]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "gadgets-conversion", "namespace": platform},
                   "rules": secret_rules}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "gadgets-conversion", "namespace": platform},
                   "roleRef": role_ref("Role"), "subjects": [account]}),
        ],
    );
    put_module(
        &client,
        &platform,
        "gadgets-module",
        "faults.wasm",
        &component("guest_faults"),
    )
    .await;
    let reconciler = json!({
        "apiVersion": "reconcile-host.dev/v1alpha1", "kind": "ClusterReconciler",
        "metadata": {"name": name, "labels": {TEST_LABEL: test}},
        "spec": {
            "parent": {"apiVersion": format!("{GROUP}/v1"), "kind": "Gadget"},
            "children": [{"apiVersion": "v1", "kind": "ConfigMap"}],
            "module": {"configMap": {"namespace": platform, "name": "gadgets-module", "key": "faults.wasm"}},
            "serviceAccount": {"namespace": platform, "name": "gadgets"},
            "conversion": {"certificateSecret": secret},
        },
    });
    apply_reconciler(&client, &reconciler).await;

    // The certificate was made and kept as the ServiceAccount, and the CRD trusts its CA.
    let ca_bundle = wait_for("the reconciler's CA in the CRD's caBundle", || async {
        let crd = crds(&client).get(&crd).await.ok()?;
        let webhook = crd.spec.conversion?.webhook?;
        webhook.client_config?.ca_bundle
    })
    .await;
    let kept = Api::<Secret>::namespaced(client.clone(), &platform)
        .get(secret)
        .await
        .unwrap();
    assert_eq!(kept.data.unwrap()["ca.crt"], ca_bundle);

    // The leader reconciles a Gadget written at v1...
    let namespace = cluster.namespace("gadgets").await.unwrap();
    let gadget = |name: &str, annotations: serde_json::Value| {
        serde_json::from_value::<DynamicObject>(json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "Gadget",
            "metadata": {"name": name, "annotations": annotations}, "spec": {"size": 3},
        }))
        .unwrap()
    };
    let created = gadgets(&client, &namespace, "v1")
        .create(&PostParams::default(), &gadget("plain", json!({})))
        .await
        .unwrap();
    let children = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    wait_for("the leader's child of the Gadget", || async {
        children.get("plain-cm").await.ok()
    })
    .await;

    // ... and the standby converts it to v2 with the module.
    let at_v2 = wait_for("the Gadget read at v2", || async {
        gadgets(&client, &namespace, "v2").get("plain").await.ok()
    })
    .await;
    assert_eq!(at_v2.types.unwrap().api_version, format!("{GROUP}/v2"));
    assert_eq!(at_v2.metadata.uid, created.metadata.uid);

    // A conversion the module refuses reaches the client with the module's words.
    let refused = json!({"faults.example.com/convert": "error"});
    gadgets(&client, &namespace, "v1")
        .create(&PostParams::default(), &gadget("refused", refused))
        .await
        .unwrap();
    let error = gadgets(&client, &namespace, "v2")
        .get("refused")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("conversion refused by the faults guest"),
        "{error}"
    );

    assert!(!has_led(&standby));
    assert!(standby.log().contains("serving a conversion webhook route"));
    wait_reconciler(&client, None, name, "the ClusterReconciler Running", |s| {
        ready_is(s, "True", "Running")
    })
    .await;
    drop(leader);
}
