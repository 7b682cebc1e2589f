//! Waiting for convergence by watching, not polling. Listing every parent twice a second cost the API
//! server work in proportion to the parents at every poll: at 10,000 parents a load of its own, which
//! made every contender look superlinear. A watch costs it one event per change, as one more
//! controller would, and sees the last parent converge the moment it does.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{Result, anyhow};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

use crate::{VARIANT_LABEL, myapp};

/// Longest wait for any one measurement.
const GIVE_UP: Duration = Duration::from_secs(1800);

/// Until `n` parents of the namespace have a status phase and `n` Deployments exist.
pub async fn converged(client: &Client, namespace: &str, n: usize) -> Result<()> {
    let what = format!("{n} parents converged");
    wait_for(&what, client, namespace, n, n, |_| true).await
}

/// Until `n` Deployments of the namespace carry the second module's label.
pub async fn labelled(client: &Client, namespace: &str, n: usize) -> Result<()> {
    let what = "every Deployment on the new module";
    wait_for(what, client, namespace, 0, n, |deployment| {
        deployment.labels().get(VARIANT_LABEL).map(String::as_str) == Some("b")
    })
    .await
}

/// One change seen: whether it is a parent, its name, and whether it counts.
type Seen = (bool, String, bool);

async fn wait_for(
    what: &str,
    client: &Client,
    namespace: &str,
    parents: usize,
    children: usize,
    child_counts: impl Fn(&PartialObjectMeta<Deployment>) -> bool + Send + 'static,
) -> Result<()> {
    let parent_events = watcher(myapp::myapps(client, namespace), Default::default())
        .default_backoff()
        .applied_objects()
        .map_ok(|p| {
            (
                true,
                p.name_any(),
                p.data.pointer("/status/phase").is_some(),
            )
        });
    let deployments: Api<PartialObjectMeta<Deployment>> =
        Api::namespaced(client.clone(), namespace);
    let child_events = watcher(deployments, Default::default())
        .default_backoff()
        .applied_objects()
        .map_ok(move |d| (false, d.name_any(), child_counts(&d)));
    let mut events = futures::stream::select(parent_events.boxed(), child_events.boxed());
    let (mut with_status, mut counted) = (HashSet::new(), HashSet::new());
    let wait = async {
        while with_status.len() < parents || counted.len() < children {
            let (is_parent, name, counts): Seen = match events.next().await {
                Some(Ok(seen)) => seen,
                // A watch error is retried with backoff by the watcher itself.
                Some(Err(_)) => continue,
                None => return Err(anyhow!("the watch ended waiting for {what}")),
            };
            let set = if is_parent {
                &mut with_status
            } else {
                &mut counted
            };
            if counts {
                set.insert(name);
            } else {
                set.remove(&name);
            }
        }
        Ok(())
    };
    tokio::time::timeout(GIVE_UP, wait)
        .await
        .map_err(|_| anyhow!("gave up after {GIVE_UP:?} waiting for {what}"))?
}
