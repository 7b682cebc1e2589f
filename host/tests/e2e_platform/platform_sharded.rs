//! The platform sharded (`serve --sharded`): two replicas form one ring for all their reconcilers;
//! a team's reconciler's parents are spread over both, each labelled (as the team's ServiceAccount,
//! with the example's Role) for the replica that reconciles it, and reconciled by that replica alone.

use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::monitoring::scrape_when;
use crate::common::myapp::*;
use crate::common::platform::*;
use crate::common::restart::assert_every_parent_converged;

const SHARD_LABEL_PREFIX: &str = "shard.reconcile-host.dev/";

#[tokio::test]
async fn a_sharded_platform_spreads_a_reconcilers_parents_over_its_replicas() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let test = "sharded";
    let team = cluster.namespace("sharded-team").await.unwrap();
    let members = ["sharded-a", "sharded-b"];
    let mut replicas = Vec::new();
    for member in members {
        replicas.push(platform_replica(cluster, test, member, &["--sharded"]).await);
    }
    for replica in &replicas {
        scrape_when(replica, "a ring of both replicas", |s| {
            s.value("reconcile_host_ring_members") == Some(2.0)
        })
        .await;
    }
    add_myapp_reconciler(cluster, &team, test).await;
    for i in 0..20 {
        create_myapp(&client, &team, &format!("app-{i}"), json!({})).await;
    }
    assert_every_parent_converged(&client, &team).await;

    let parents = myapps(&client, &team)
        .list(&Default::default())
        .await
        .unwrap();
    let mut held = [0; 2];
    for parent in &parents.items {
        let name = parent.metadata.name.as_deref().unwrap();
        let labels = parent.metadata.labels.clone().unwrap_or_default();
        let (_, member) = (labels.iter())
            .find(|(key, _)| key.starts_with(SHARD_LABEL_PREFIX))
            .unwrap_or_else(|| panic!("{name} carries no shard label: {labels:?}"));
        let index = (members.iter().position(|m| m == member))
            .unwrap_or_else(|| panic!("{name} is assigned to {member}, no replica"));
        held[index] += 1;
        // Its reconciles were that replica's alone.
        let record = format!("reconciled parent={team}/{name} member=");
        for (other, replica) in replicas.iter().enumerate() {
            assert_eq!(
                replica.log().contains(&record),
                other == index,
                "{name}, assigned to {member}: reconciled by {}?",
                members[other]
            );
        }
    }
    assert!(
        held.iter().all(|&n| n > 0),
        "both replicas hold parents: {held:?}"
    );
}
