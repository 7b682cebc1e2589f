//! End to end on the real control plane: child update strategies. A Fleet (`guests/fleet`) has one
//! Deployment per zone, pinned to the nodes labelled for its zone; kwok makes their pods ready. A
//! zone whose label the kwok node lacks never gets a ready pod: the child that never passes its
//! checks. Each test changes the image and reads, from the Deployments themselves, which children the
//! host updated, recreated or left.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::events::wait_event_saying;
use crate::common::guests::{component, repo_root};
use crate::common::host::HostProcess;
use crate::common::kubectl::apply_crd;
use crate::common::myapp::{deployments, wait_for};

/// The status check of the rolling tests: the Deployment's own rollout completed.
const ROLLED_OUT: &str = "Progressing=True/NewReplicaSetAvailable";

struct Setup {
    client: Client,
    namespace: String,
    _host: HostProcess,
}

/// A host for Fleets in a namespace of its own, with `strategy` for Deployments (none: the default).
async fn setup(prefix: &str, strategy: Option<&str>) -> Setup {
    let cluster = TestCluster::shared();
    apply_crd(
        cluster,
        &repo_root().join("examples/fleet/crd.yaml"),
        "fleets.fleet.example.com",
    );
    let namespace = cluster.namespace(prefix).await.unwrap();
    let module = component("guest_fleet");
    let mut args = vec![
        "--parent",
        "fleet.example.com/v1/Fleet",
        "--child",
        "apps/v1/Deployment",
        "--namespace",
        &namespace,
        "--module",
        module.to_str().unwrap(),
    ];
    let flag = strategy.map(|s| format!("apps/v1/Deployment={s}"));
    if let Some(flag) = &flag {
        args.extend(["--update-strategy", flag]);
    }
    let host = HostProcess::start(cluster.kubeconfig_path(), &args);
    Setup {
        client: cluster.client().await.unwrap(),
        namespace,
        _host: host,
    }
}

impl Setup {
    fn fleets(&self) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("fleet.example.com", "v1", "Fleet");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "fleets");
        Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
    }

    async fn create_fleet(&self, image: &str, zones: &[&str]) {
        let fleet = json!({"apiVersion": "fleet.example.com/v1", "kind": "Fleet",
                           "metadata": {"name": "web"}, "spec": {"image": image, "zones": zones}});
        (self.fleets())
            .create(
                &PostParams::default(),
                &serde_json::from_value(fleet).unwrap(),
            )
            .await
            .unwrap();
    }

    /// Merges `spec` into the Fleet's; returns its new generation.
    async fn patch_fleet(&self, spec: Value) -> i64 {
        let patched = (self.fleets())
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": spec})),
            )
            .await
            .unwrap();
        patched.metadata.generation.unwrap()
    }

    /// Each Deployment of the fleet, by name: its uid and image.
    async fn children(&self) -> BTreeMap<String, (String, String)> {
        let list = deployments(&self.client, &self.namespace)
            .list(&Default::default())
            .await
            .unwrap();
        (list.items.into_iter())
            .filter(|d| d.metadata.deletion_timestamp.is_none())
            .map(|d| {
                let name = d.metadata.name.clone().unwrap();
                let uid = d.metadata.uid.clone().unwrap();
                let image = d.spec.unwrap().template.spec.unwrap().containers[0]
                    .image
                    .clone()
                    .unwrap();
                (name, (uid, image))
            })
            .collect()
    }

    /// The children once `predicate` holds for them.
    async fn wait_children(
        &self,
        what: &str,
        predicate: impl Fn(&BTreeMap<String, (String, String)>) -> bool,
    ) -> BTreeMap<String, (String, String)> {
        wait_for(what, || async {
            let children = self.children().await;
            predicate(&children).then_some(children)
        })
        .await
    }

    /// The Fleet's condition `type_` once it has `reason` for `generation` (or later).
    async fn wait_condition(&self, type_: &str, reason: &str, generation: i64) -> Value {
        wait_for(
            &format!("{type_} {reason} at generation {generation}"),
            || async {
                let fleet = self.fleets().get("web").await.ok()?;
                let conditions = fleet.data["status"]["conditions"].as_array()?.clone();
                let condition = conditions.into_iter().find(|c| c["type"] == type_)?;
                let current = condition["observedGeneration"].as_i64() >= Some(generation);
                (current && condition["reason"] == reason).then_some(condition)
            },
        )
        .await
    }

    /// Waits until the Fleet's status reports `image` (the guest answered for the new spec).
    async fn wait_reconciled(&self, generation: i64) {
        wait_for(
            &format!("the Fleet reconciled at generation {generation}"),
            || async {
                let fleet = self.fleets().get("web").await.ok()?;
                let observed = fleet.data["status"]["observedGeneration"].as_i64()?;
                (observed >= generation).then_some(())
            },
        )
        .await;
    }
}

/// Labels the kwok node for `zone`, so that the Deployment of that zone gets a ready pod.
async fn open_zone(client: &Client, zone: &str) {
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .remove(0);
    let label = format!("fleet.example.com/zone-{zone}");
    let patch = json!({"metadata": {"labels": {label: "true"}}});
    let name = node.metadata.name.unwrap();
    nodes
        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

fn images(children: &BTreeMap<String, (String, String)>) -> Vec<(&str, &str)> {
    (children.iter())
        .map(|(name, (_, image))| (name.as_str(), image.as_str()))
        .collect()
}

#[tokio::test]
async fn in_place_is_the_default_and_updates_every_child_where_it_stands() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let setup = setup("in-place", None).await;
    setup.create_fleet("app:v1", &["a", "b", "c"]).await;
    let before = setup
        .wait_children("three children", |c| c.len() == 3)
        .await;
    setup.patch_fleet(json!({"image": "app:v2"})).await;
    let after = setup
        .wait_children("every child at v2", |c| {
            c.values().all(|(_, image)| image == "app:v2")
        })
        .await;
    for (name, (uid, _)) in &before {
        assert_eq!(&after[name].0, uid, "{name} was updated in place");
    }
}

#[tokio::test]
async fn on_delete_leaves_children_as_they_are_until_someone_deletes_one() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let setup = setup("on-delete", Some("OnDelete")).await;
    setup.create_fleet("app:v1", &["a", "b", "c"]).await;
    setup
        .wait_children("three children", |c| c.len() == 3)
        .await;
    let generation = setup.patch_fleet(json!({"image": "app:v2"})).await;
    setup.wait_reconciled(generation).await;
    let kept = setup.children().await;
    assert_eq!(
        images(&kept),
        [
            ("web-a", "app:v1"),
            ("web-b", "app:v1"),
            ("web-c", "app:v1")
        ]
    );
    deployments(&setup.client, &setup.namespace)
        .delete("web-b", &Default::default())
        .await
        .unwrap();
    let after = setup
        .wait_children("web-b created anew at v2", |c| {
            c.get("web-b")
                .is_some_and(|(uid, image)| uid != &kept["web-b"].0 && image == "app:v2")
        })
        .await;
    assert_eq!(after["web-a"], kept["web-a"]);
    assert_eq!(after["web-c"], kept["web-c"]);
}

#[tokio::test]
async fn recreate_deletes_every_outdated_child_and_creates_it_anew() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let setup = setup("recreate", Some("Recreate")).await;
    setup.create_fleet("app:v1", &["a", "b", "c"]).await;
    let before = setup
        .wait_children("three children", |c| c.len() == 3)
        .await;
    setup.patch_fleet(json!({"image": "app:v2"})).await;
    setup
        .wait_children("every child anew at v2", |c| {
            c.len() == 3
                && (c.iter())
                    .all(|(name, (uid, image))| uid != &before[name].0 && image == "app:v2")
        })
        .await;
    wait_event_saying(
        &setup.client,
        &setup.namespace,
        Some("web"),
        "Recreating",
        "Deployment/web-a",
    )
    .await;
}

/// A rolling update on zones `x` (never ready until opened) and `y` (ready): `x` is updated first and
/// fails its checks, so `y` is held at the old image until the deadline stops the update; opening
/// `x`'s zone lets it pass, and the update moves on to `y`.
async fn rolls_one_child_at_a_time_and_stops_at_one_that_never_passes(method: &str, prefix: &str) {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let strategy = format!("{method},{ROLLED_OUT},deadline=10s");
    let setup = setup(prefix, Some(&strategy)).await;
    let (x, y) = (format!("{prefix}-x"), format!("{prefix}-y"));
    open_zone(&setup.client, &y).await;
    setup.create_fleet("app:v1", &[&x, &y]).await;
    let (x_name, y_name) = (format!("web-{x}"), format!("web-{y}"));
    let before = setup.wait_children("two children", |c| c.len() == 2).await;

    let generation = setup.patch_fleet(json!({"image": "app:v2"})).await;
    let stopped = setup
        .wait_condition("ChildrenUpdated", "ProgressDeadlineExceeded", generation)
        .await;
    assert_eq!(stopped["status"], "False");
    let message = stopped["message"].as_str().unwrap();
    assert!(message.contains(&x_name), "{message}");
    wait_event_saying(
        &setup.client,
        &setup.namespace,
        Some("web"),
        "ProgressDeadlineExceeded",
        &x_name,
    )
    .await;
    let held = setup.children().await;
    assert_eq!(
        held[&x_name].1, "app:v2",
        "the first child by name is updated"
    );
    assert_eq!(
        held[&y_name], before[&y_name],
        "the next waits while the first fails its checks, past the deadline"
    );
    let recreated = method == "RollingRecreate";
    assert_eq!(held[&x_name].0 != before[&x_name].0, recreated);

    open_zone(&setup.client, &x).await;
    let after = setup
        .wait_children("every child at v2", |c| {
            c.len() == 2 && c.values().all(|(_, image)| image == "app:v2")
        })
        .await;
    assert_eq!(after[&y_name].0 != before[&y_name].0, recreated);
    let complete = setup
        .wait_condition("ChildrenUpdated", "UpdateComplete", generation)
        .await;
    assert_eq!(complete["status"], "True");
}

#[tokio::test]
async fn rolling_in_place_updates_one_child_at_a_time_behind_its_status_checks() {
    rolls_one_child_at_a_time_and_stops_at_one_that_never_passes("RollingInPlace", "rip").await;
}

#[tokio::test]
async fn rolling_recreate_recreates_one_child_at_a_time_behind_its_status_checks() {
    rolls_one_child_at_a_time_and_stops_at_one_that_never_passes("RollingRecreate", "rrc").await;
}

/// A stopped update resumes when the desired state changes: here the zone that never passes is
/// dropped, and the rest roll on.
#[tokio::test]
async fn a_stopped_update_resumes_when_the_desired_state_changes() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let strategy = format!("RollingInPlace,{ROLLED_OUT},deadline=10s");
    let setup = setup("resume", Some(&strategy)).await;
    let (x, y) = ("resume-x", "resume-y");
    open_zone(&setup.client, y).await;
    setup.create_fleet("app:v1", &[x, y]).await;
    setup.wait_children("two children", |c| c.len() == 2).await;
    let generation = setup.patch_fleet(json!({"image": "app:v2"})).await;
    setup
        .wait_condition("ChildrenUpdated", "ProgressDeadlineExceeded", generation)
        .await;
    let generation = setup.patch_fleet(json!({"zones": [y]})).await;
    let after = setup
        .wait_children("the zone left at v2", |c| {
            c.len() == 1
                && c.get(&format!("web-{y}"))
                    .is_some_and(|(_, image)| image == "app:v2")
        })
        .await;
    assert_eq!(after.len(), 1);
    setup
        .wait_condition("ChildrenUpdated", "UpdateComplete", generation)
        .await;
}
