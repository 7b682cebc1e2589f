//! Writing the MyApp logic's answer the way a controller does: each child by server-side apply, owned
//! by the parent and labelled with its writer, then the status by merge patch when it changed. The
//! floor and the native controller share it, so that both send the same requests.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::myapp;

/// The label the writer puts on its children (the native controller watches by it).
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

pub async fn write(
    client: &Client,
    namespace: &str,
    parent: &DynamicObject,
    out: guest_myapp::Output,
    manager: &str,
) -> anyhow::Result<()> {
    let owner = parent
        .controller_owner_ref(&myapp::myapp_resource())
        .ok_or_else(|| anyhow::anyhow!("the parent has no uid"))?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    for child in &out.children {
        let mut child: Value = serde_json::from_str(child)?;
        child["metadata"]["ownerReferences"] = json!([owner]);
        child["metadata"]["labels"][MANAGED_BY] = json!(manager);
        let name = child["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        deployments
            .patch(
                &name,
                &PatchParams::apply(manager).force(),
                &Patch::Apply(child),
            )
            .await?;
    }
    if let Some(status) = out.status {
        let status: Value = serde_json::from_str(&status)?;
        if parent.data.get("status") != Some(&status) {
            myapp::myapps(client, namespace)
                .patch_status(
                    &parent.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": status })),
                )
                .await?;
        }
    }
    Ok(())
}

/// The answer as two: its children alone, then its status alone (to write them as separate steps).
pub fn split(out: guest_myapp::Output) -> (guest_myapp::Output, guest_myapp::Output) {
    let status = guest_myapp::Output {
        status: out.status.clone(),
        ..guest_myapp::Output::default()
    };
    let children = guest_myapp::Output {
        status: None,
        ..out
    };
    (children, status)
}
