//! What the restart tests check once a host has come back: every parent converged on children that
//! are exactly its own.

use std::collections::BTreeMap;

use kube::Client;
use kube::api::ListParams;

use super::myapp::{deployments, myapps, wait_for};
use super::platform::wait_ready_myapp;

/// Waits until every MyApp of `namespace` is Ready with all its replicas ready, then checks that the
/// Deployments are one per MyApp, named after it and controlled by it: no orphan, no duplicate.
pub async fn assert_every_parent_converged(client: &Client, namespace: &str) {
    let parents = myapps(client, namespace)
        .list(&ListParams::default())
        .await
        .unwrap();
    for parent in &parents.items {
        let name = parent.metadata.name.as_deref().unwrap();
        let status = wait_ready_myapp(client, namespace, name).await;
        let replicas = parent.data["spec"]["replicas"].as_i64().unwrap_or(1);
        assert_eq!(status["readyReplicas"], replicas, "{name}: {status}");
    }
    let expected: BTreeMap<String, String> = parents
        .items
        .iter()
        .map(|p| {
            let name = p.metadata.name.clone().unwrap();
            (format!("{name}-deploy"), p.metadata.uid.clone().unwrap())
        })
        .collect();
    // A deleted parent's Deployment goes with the garbage collector's next pass: wait for it.
    let api = deployments(client, namespace);
    let owners = wait_for("one Deployment per MyApp, and no other", || {
        let api = api.clone();
        let expected = &expected;
        async move {
            let owners: BTreeMap<String, String> = api
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .map(|d| {
                    let controller = d
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .filter(|o| o.controller == Some(true))
                        .map(|o| o.uid.clone())
                        .collect::<Vec<_>>()
                        .join(",");
                    (d.metadata.name.unwrap(), controller)
                })
                .collect();
            (owners.len() == expected.len()).then_some(owners)
        }
    })
    .await;
    assert_eq!(owners, expected, "Deployment name → controller UID");
}
