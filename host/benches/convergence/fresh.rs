//! A fresh control plane for each measurement. The API server and etcd slow down as they hold more
//! objects: a contender measured after others, on a cluster that still holds their thousands of
//! MyApps, Deployments, ReplicaSets and Pods, paid for them (the last one measured paid the most API
//! server CPU per parent, in run order). So no measurement shares a control plane with another.

use std::path::Path;

use anyhow::Result;
use testcluster::TestCluster;

use crate::myapp;
use crate::spawn::Spawner;

/// Starts a control plane with the MyApp CRD and a namespace named after `what`, runs `measure` on
/// it, and stops it.
pub async fn on_fresh_cluster<T, F>(what: &str, logs: &Path, measure: F) -> Result<T>
where
    F: AsyncFnOnce(&kube::Client, &TestCluster, &str, &Spawner) -> Result<T>,
{
    let cluster = TestCluster::start().await?;
    myapp::install_crd(&cluster);
    let client = cluster.client().await?;
    let ns = cluster.namespace(what).await?;
    let spawn = Spawner::new(&cluster, logs);
    measure(&client, &cluster, &ns, &spawn).await
}
