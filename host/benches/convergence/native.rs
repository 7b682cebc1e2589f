//! The native contender: the same MyApp logic (`guest_myapp::reconcile`, linked natively) in a plain
//! kube-runtime Controller, writing what reconcile-host writes for it (`answer::write`). Run by the
//! benchmark binary itself: `convergence --native-controller NAMESPACE`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

use crate::answer::{self, MANAGED_BY};
use crate::myapp;

const MANAGER: &str = "native-myapp";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failed(String);

fn failed(e: impl std::fmt::Display) -> Failed {
    Failed(e.to_string())
}

struct Ctx {
    client: Client,
    namespace: String,
    deployments: Store<Deployment>,
}

pub fn main(namespace: &str) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(namespace))
}

async fn run(namespace: &str) -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let (store, writer) = reflector::store();
    let selector = watcher::Config::default().labels(&format!("{MANAGED_BY}={MANAGER}"));
    let children = reflector::reflector(writer, watcher(deployments, selector)).touched_objects();
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        namespace: namespace.to_owned(),
        deployments: store,
    });
    Controller::new_with(
        myapp::myapps(&client, namespace),
        watcher::Config::default(),
        myapp::myapp_resource(),
    )
    .owns_stream(children)
    .with_config(Config::default().concurrency(16))
    .run(
        reconcile,
        |_, _, _| Action::requeue(Duration::from_secs(1)),
        ctx,
    )
    .for_each(|_| async {})
    .await;
    Ok(())
}

async fn reconcile(parent: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, Failed> {
    let uid = parent.uid().unwrap_or_default();
    let observed: Vec<String> = ctx
        .deployments
        .state()
        .iter()
        .filter(|d| d.owner_references().iter().any(|o| o.uid == uid))
        .map(|d| serde_json::to_string(&**d).map_err(failed))
        .collect::<Result<_, _>>()?;
    let parent_json = serde_json::to_string(&*parent).map_err(failed)?;
    let out = guest_myapp::reconcile(&parent_json, &observed, false).map_err(Failed)?;

    answer::write(&ctx.client, &ctx.namespace, &parent, out, MANAGER)
        .await
        .map_err(failed)?;
    Ok(Action::await_change())
}
