//! The conversion webhook's test setup: a test CRD applied as its operator would, and a
//! ServiceAccount with only the RBAC the webhook needs.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use testcluster::TestCluster;

use super::myapp::wait_for;

/// The test CRDs' group.
pub const GROUP: &str = "conversion-test.example.com";

/// CRD `plural.GROUP`, v1 stored and v2 served (each with a status subresource, which a reconciler
/// writes), with `conversion`, applied as its operator would.
pub async fn apply_crd(client: &kube::Client, plural: &str, kind: &str, conversion: Value) {
    let version = |name: &str, field: &str| {
        json!({"name": name, "served": true, "storage": name == "v1", "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {field: {"type": "integer"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            },
        }}, "subresources": {"status": {}}})
    };
    let name = format!("{plural}.{GROUP}");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [version("v1", "size"), version("v2", "count")],
            "conversion": conversion,
        },
    });
    let params = PatchParams::apply("e2e-operator").force();
    crds(client)
        .patch(&name, &params, &Patch::Apply(crd))
        .await
        .unwrap();
    wait_for(&format!("{name} established"), || async {
        let crd = crds(client).get(&name).await.ok()?;
        let conditions = crd.status?.conditions?;
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
            .then_some(())
    })
    .await;
}

pub fn crds(client: &kube::Client) -> Api<CustomResourceDefinition> {
    Api::all(client.clone())
}

pub fn widgets(client: &kube::Client, namespace: &str, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, version, "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// The RBAC the webhook needs: the CRD's caBundle (cluster-wide, that one CRD) and the certificate
/// Secret (its namespace; `create` cannot be limited to a name).
pub fn webhook_rules(crd: &str, secret: &str) -> (Value, Value) {
    let crd_rules = json!([{
        "apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
        "resourceNames": [crd], "verbs": ["get", "list", "watch", "patch"],
    }]);
    let secret_rules = json!([
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [secret],
         "verbs": ["get", "update"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
    ]);
    (crd_rules, secret_rules)
}

/// A client for a ServiceAccount of `namespace` with only `webhook_rules`.
pub async fn webhook_client(
    cluster: &TestCluster,
    admin: &kube::Client,
    namespace: &str,
    crd: &str,
    secret: &str,
) -> kube::Client {
    let (crd_rules, secret_rules) = webhook_rules(crd, secret);
    let name = format!("conversion-{namespace}");
    let subjects = json!([{"kind": "ServiceAccount", "name": "webhook", "namespace": namespace}]);
    let role: ClusterRole =
        serde_json::from_value(json!({"metadata": {"name": name}, "rules": crd_rules})).unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name}, "subjects": subjects,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let role: Role =
        serde_json::from_value(json!({"metadata": {"name": "webhook"}, "rules": secret_rules}))
            .unwrap();
    Api::<Role>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "webhook"}, "subjects": subjects,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "webhook"},
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    cluster
        .service_account_client(namespace, "webhook")
        .await
        .unwrap()
}
