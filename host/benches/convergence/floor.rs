//! The floor: no controller, no watch, no cache. A bare client creates each MyApp and, as soon as it
//! exists, writes what a controller would: the Deployment by server-side apply, then the status. The
//! content comes from the same logic, so the bytes written are the same as the contenders'.

use futures::{StreamExt, TryStreamExt};
use kube::Client;
use kube::api::DynamicObject;

use crate::{CONCURRENCY, answer};

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
    answer::write(client, namespace, parent, out, MANAGER).await
}
