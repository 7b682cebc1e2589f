//! The namespace decorator on the real cluster: labelling parents, waiting for its children, and
//! watching that they stay.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, ResourceQuota};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use reconcile_host::identity::{MANAGED_BY_LABEL, MANAGER, RECONCILER_LABEL};
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

/// The decorator's children in `namespace` (its ResourceQuotas and NetworkPolicies carrying the
/// managed-by label), by `Kind/name`: their UID and the value of the reconciler label, if any.
pub async fn children(
    client: &Client,
    namespace: &str,
) -> BTreeMap<String, (String, Option<String>)> {
    let params = ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGER}"));
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), namespace);
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), namespace);
    let quotas = quotas.list(&params).await.unwrap().items;
    let policies = policies.list(&params).await.unwrap().items;
    let metadata = quotas
        .into_iter()
        .map(|q| ("ResourceQuota", q.metadata))
        .chain(policies.into_iter().map(|p| ("NetworkPolicy", p.metadata)));
    metadata
        .map(|(kind, metadata)| {
            let label = metadata.labels.unwrap_or_default().remove(RECONCILER_LABEL);
            let id = format!("{kind}/{}", metadata.name.unwrap());
            (id, (metadata.uid.unwrap(), label))
        })
        .collect()
}

/// Waits until `namespace` holds exactly the decorator's two children, both named by `reconciler`.
pub async fn wait_named_children(
    client: &Client,
    namespace: &str,
    reconciler: &str,
) -> BTreeMap<String, (String, Option<String>)> {
    wait_for(
        &format!("the children in {namespace} named {reconciler}"),
        || async move {
            let children = children(client, namespace).await;
            let named = children.len() == 2
                && children
                    .values()
                    .all(|(_, label)| label.as_deref() == Some(reconciler));
            named.then_some(children)
        },
    )
    .await
}

/// Checks every second for `seconds` that each namespace holds exactly the children it held at the
/// start (same UIDs, same reconciler label): none deleted, re-created or taken by another reconciler.
pub async fn assert_children_stay(client: &Client, namespaces: &[&str], seconds: u32) {
    let mut before = Vec::new();
    for namespace in namespaces {
        before.push(children(client, namespace).await);
    }
    for second in 0..seconds {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        for (namespace, before) in namespaces.iter().zip(&before) {
            let now = children(client, namespace).await;
            assert_eq!(
                &now, before,
                "the children in {namespace} changed after {second} s"
            );
        }
    }
}

/// A ResourceQuota `name` in the Namespace `namespace`, controlled by it, as the host made children
/// before they named their reconciler: the managed-by label only.
pub async fn legacy_quota(client: &Client, namespace: &str, name: &str) -> ResourceQuota {
    let uid = namespaces(client)
        .get(namespace)
        .await
        .unwrap()
        .metadata
        .uid;
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": { MANAGED_BY_LABEL: MANAGER },
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace", "name": namespace,
                                          "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"hard": {"pods": "1"}},
    }))
    .unwrap();
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), namespace);
    quotas.create(&PostParams::default(), &quota).await.unwrap()
}
