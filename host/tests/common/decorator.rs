//! The namespace decorator on the real cluster: labelling parents, and waiting for its children.

use k8s_openapi::api::core::v1::{Namespace, ResourceQuota};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::json;

use super::myapp::wait_for;

/// Merge-patches the labels and annotations of the cluster-scoped object `name`.
pub async fn label(api: &Api<DynamicObject>, name: &str, metadata: serde_json::Value) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": metadata })),
    )
    .await
    .unwrap();
}

pub fn namespaces(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &ApiResource::erase::<Namespace>(&()))
}

/// The controller ownerReference of the decorator's quota in `namespace`, once it exists.
pub async fn quota_owner(client: &Client, namespace: &str) -> (String, String) {
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), namespace);
    let quota = wait_for(&format!("team-quota in {namespace}"), || {
        let quotas = quotas.clone();
        async move { quotas.get_opt("team-quota").await.ok().flatten() }
    })
    .await;
    let owner = quota
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .find(|o| o.controller == Some(true))
        .expect("the quota has a controller ownerReference");
    (format!("{}/{}", owner.kind, owner.name), owner.uid)
}

/// Waits until `namespace` holds neither of the decorator's children.
pub async fn wait_children_gone(client: &Client, namespace: &str) {
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), namespace);
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), namespace);
    wait_for(&format!("no decorator children in {namespace}"), || {
        let (quotas, policies) = (quotas.clone(), policies.clone());
        async move {
            let quota = quotas.get_opt("team-quota").await.ok()?;
            let policy = policies.get_opt("team-isolation").await.ok()?;
            (quota.is_none() && policy.is_none()).then_some(())
        }
    })
    .await;
}
