//! The floor: no controller, no watch, no cache. A bare client creates each MyApp and, as soon as it
//! exists, writes what a controller would: the Deployment by server-side apply, then the status. The
//! content comes from the same logic, so the bytes written are the same as the contenders'.
//!
//! The checked floor sends, besides, the two requests reconcile-host's rules added for a new child
//! before its children were created create-only (issue 34): the GET that finds out whether something
//! else already has the child's name (its cache holds only the objects it labelled), and the
//! `Created` Event. reconcile-host now sends a POST and a managedFields PATCH where this sends the GET
//! and the apply (the report prints both counts). Between the two floors is what those rules cost;
//! between the checked floor and reconcile-host, what the controller itself costs (watches, queue,
//! caches).

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};

use crate::{CONCURRENCY, VARIANT_LABEL, answer, myapp};

const MANAGER: &str = "bench-floor";

/// Which requests the floor sends per parent.
#[derive(Clone, Copy)]
pub enum Floor {
    /// The child's apply and the status.
    Bare,
    /// A GET of the child's name, the apply, a `Created` Event and the status.
    Checked,
}

/// Creates the parents (`create` yields each created object, `CONCURRENCY` at a time) and writes
/// their children and status, `CONCURRENCY` at a time, as they come.
pub async fn write_all(
    client: &Client,
    namespace: &str,
    created: impl futures::Stream<Item = anyhow::Result<DynamicObject>>,
    floor: Floor,
) -> anyhow::Result<()> {
    let recorder = Recorder::new(client.clone(), Reporter::from(MANAGER));
    let recorder = &recorder;
    created
        .map(|parent| async move { write(client, namespace, &parent?, floor, recorder).await })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<()>()
        .await
}

async fn write(
    client: &Client,
    namespace: &str,
    parent: &DynamicObject,
    floor: Floor,
    recorder: &Recorder,
) -> anyhow::Result<()> {
    let out = guest_myapp::reconcile(&serde_json::to_string(parent)?, &[], false)
        .map_err(anyhow::Error::msg)?;
    let Floor::Checked = floor else {
        return answer::write(client, namespace, parent, out, MANAGER).await;
    };
    let name = format!(
        "{}-deploy",
        parent.metadata.name.as_deref().unwrap_or_default()
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    anyhow::ensure!(deployments.get_opt(&name).await?.is_none(), "{name} exists");
    let note = format!("created Deployment/{name}");
    write_with_event(client, namespace, parent, out, ("Created", note), recorder).await
}

/// The child's apply, then the parent's Event (`reason`, `note`) and status at once, as
/// reconcile-host sends them.
async fn write_with_event(
    client: &Client,
    namespace: &str,
    parent: &DynamicObject,
    out: guest_myapp::Output,
    (reason, note): (&str, String),
    recorder: &Recorder,
) -> anyhow::Result<()> {
    let (apply, status) = answer::split(out);
    answer::write(client, namespace, parent, apply, MANAGER).await?;
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: "Reconcile".into(),
        secondary: None,
    };
    let reference = parent.object_ref(&myapp::myapp_resource());
    let (published, written) = futures::join!(
        recorder.publish(&event, &reference),
        answer::write(client, namespace, parent, status, MANAGER)
    );
    published?;
    written
}

/// The hot swap's floor: what a swap that changes every child must write, sent directly. Each parent's
/// Deployment is applied again with the second module's label, then its status is written naming the
/// new module, `CONCURRENCY` at a time. The checked floor also posts the `Updated` Event that
/// reconcile-host's rules add for a changed child, beside the status.
pub async fn rewrite_all(client: &Client, namespace: &str, floor: Floor) -> anyhow::Result<()> {
    let parents = myapp::myapps(client, namespace)
        .list(&Default::default())
        .await?;
    let recorder = Recorder::new(client.clone(), Reporter::from(MANAGER));
    let recorder = &recorder;
    futures::stream::iter(parents.items)
        .map(|parent| async move {
            let mut out = guest_myapp::reconcile(&serde_json::to_string(&parent)?, &[], false)
                .map_err(anyhow::Error::msg)?;
            for child in &mut out.children {
                let mut object: serde_json::Value = serde_json::from_str(child)?;
                object["metadata"]["labels"][VARIANT_LABEL] = "b".into();
                *child = object.to_string();
            }
            if let Some(status) = &mut out.status {
                let mut object: serde_json::Value = serde_json::from_str(status)?;
                object["moduleDigest"] = "variant-b".into();
                *status = object.to_string();
            }
            match floor {
                Floor::Bare => answer::write(client, namespace, &parent, out, MANAGER).await,
                Floor::Checked => {
                    let name = parent.metadata.name.as_deref().unwrap_or_default();
                    let note = format!("updated Deployment/{name}-deploy");
                    write_with_event(client, namespace, &parent, out, ("Updated", note), recorder)
                        .await
                }
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<()>()
        .await
}
