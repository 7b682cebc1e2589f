//! The native contender: the same MyApp logic (`guest_myapp::reconcile`, linked natively) in a plain
//! kube-runtime Controller, writing what reconcile-host writes for it: the Deployment by server-side
//! apply, owned by the parent and labelled for the child watch, then the status by merge patch when
//! it changed. Run by the benchmark binary itself: `convergence --native-controller NAMESPACE`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::myapp;

const MANAGER: &str = "native-myapp";
const LABEL: &str = "app.kubernetes.io/managed-by";

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
    let selector = watcher::Config::default().labels(&format!("{LABEL}={MANAGER}"));
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

    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let owner = parent
        .controller_owner_ref(&myapp::myapp_resource())
        .ok_or_else(|| failed("the parent has no uid"))?;
    for child in &out.children {
        let mut child: Value = serde_json::from_str(child).map_err(failed)?;
        child["metadata"]["ownerReferences"] = json!([owner]);
        child["metadata"]["labels"][LABEL] = json!(MANAGER);
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
            .await
            .map_err(failed)?;
    }
    if let Some(status) = out.status {
        let status: Value = serde_json::from_str(&status).map_err(failed)?;
        if parent.data.get("status") != Some(&status) {
            myapp::myapps(&ctx.client, &ctx.namespace)
                .patch_status(
                    &parent.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": status })),
                )
                .await
                .map_err(failed)?;
        }
    }
    Ok(Action::await_change())
}
