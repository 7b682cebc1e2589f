//! The floor: no controller, no watch, no cache. A bare client creates each MyApp and, as soon as it
//! exists, writes what a controller would: the Deployment by server-side apply, then the status. The
//! content comes from the same logic, so the bytes written are the same as the contenders'.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::{CONCURRENCY, myapp};

const MANAGER: &str = "bench-floor";

/// Creates the parents (`create` yields each created object, `CONCURRENCY` at a time) and writes
/// their children and status, `CONCURRENCY` at a time, as they come.
pub async fn write_all(
    client: &Client,
    namespace: &str,
    created: impl futures::Stream<Item = anyhow::Result<DynamicObject>>,
) -> anyhow::Result<()> {
    created
        .map(|parent| async move { write(client, namespace, &parent?).await })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<()>()
        .await
}

async fn write(client: &Client, namespace: &str, parent: &DynamicObject) -> anyhow::Result<()> {
    let out = guest_myapp::reconcile(&serde_json::to_string(parent)?, &[], false)
        .map_err(anyhow::Error::msg)?;
    let owner = parent
        .controller_owner_ref(&myapp::myapp_resource())
        .expect("a created object has a uid");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    for child in &out.children {
        let mut child: Value = serde_json::from_str(child)?;
        child["metadata"]["ownerReferences"] = json!([owner]);
        let name = child["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        deployments
            .patch(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(child),
            )
            .await?;
    }
    let status: Value = serde_json::from_str(out.status.as_deref().unwrap_or("{}"))?;
    myapp::myapps(client, namespace)
        .patch_status(
            &parent.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
    Ok(())
}
