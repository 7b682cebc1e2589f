//! Waiting for the Events the host publishes.

use k8s_openapi::api::core::v1::Event as CoreEvent;
use kube::Client;
use kube::api::{Api, ListParams};

use super::myapp::wait_for;

/// The first Event with `reason` in `namespace` (on the object `name`, if given), once it exists.
pub async fn wait_event(
    client: &Client,
    namespace: &str,
    name: Option<&str>,
    reason: &str,
) -> CoreEvent {
    wait_event_saying(client, namespace, name, reason, "").await
}

/// Waits for a `reason` Event whose message contains `saying` (on `name` if given).
pub async fn wait_event_saying(
    client: &Client,
    namespace: &str,
    name: Option<&str>,
    reason: &str,
    saying: &str,
) -> CoreEvent {
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), namespace);
    let params = match name {
        Some(name) => ListParams::default().fields(&format!("involvedObject.name={name}")),
        None => ListParams::default(),
    };
    wait_for(
        &format!("a {reason} Event on {name:?} saying {saying:?}"),
        || {
            let (events, params) = (events.clone(), params.clone());
            async move {
                let list = events.list(&params).await.ok()?;
                list.items.into_iter().find(|e| {
                    e.reason.as_deref() == Some(reason)
                        && e.message.as_deref().unwrap_or_default().contains(saying)
                })
            }
        },
    )
    .await
}

/// The Events with `reason` on the object `name` in `namespace`, as they are now.
pub async fn events_now(
    client: &Client,
    namespace: &str,
    name: &str,
    reason: &str,
) -> Vec<CoreEvent> {
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().fields(&format!("involvedObject.name={name}"));
    let list = events.list(&params).await.unwrap();
    list.items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .collect()
}
