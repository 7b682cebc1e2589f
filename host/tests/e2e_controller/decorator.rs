//! End to end on the real control plane: the namespace decorator (guests/namespace-decorator) run by
//! reconcile-host as a decorator of Namespaces (`--parent-selector`), and of a cluster-scoped custom
//! kind whose children live in the namespaces the host allows (`--child-namespace`,
//! `--child-namespace-selector`).
//!
//! Each test selects on a `team` value of its own: the host watches every Namespace of the shared
//! cluster, and takes only the ones its selector matches. Two hosts decorating Namespaces for two
//! teams, and children from before children named their reconciler, show that each host acts only on
//! its own children.

use k8s_openapi::api::core::v1::ResourceQuota;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind};
use reconcile_host::identity::Identity;
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::decorator::{
    assert_children_stay, children, label, legacy_quota, namespaces, quota_owner,
    wait_children_gone, wait_named_children,
};
use crate::common::events::{events_now, wait_event};
use crate::common::guests::{component, repo_root};
use crate::common::host::HostProcess;
use crate::common::http;
use crate::common::kubectl::apply_crd;
use crate::common::myapp::wait_for;

const CHILDREN: [&str; 2] = ["v1/ResourceQuota", "networking.k8s.io/v1/NetworkPolicy"];

/// A decorator host for `parent` selecting `team=<team>`, with `extra` flags.
fn start_host(cluster: &TestCluster, parent: &str, team: &str, extra: &[&str]) -> HostProcess {
    let module = component("guest_namespace_decorator");
    let selector = format!("team={team}");
    let mut args = vec!["--parent", parent, "--parent-selector", &selector];
    for child in CHILDREN {
        args.extend(["--child", child]);
    }
    args.extend(["--module", module.to_str().unwrap()]);
    args.extend_from_slice(extra);
    HostProcess::start(cluster.kubeconfig_path(), &args)
}

#[tokio::test]
async fn labelled_namespaces_get_their_children_until_the_label_goes() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let team = cluster.namespace("deco-team").await.unwrap();
    let host = start_host(cluster, "v1/Namespace", &team, &[]);
    let labelled = cluster.namespace("deco-labelled").await.unwrap();
    let plain = cluster.namespace("deco-plain").await.unwrap();
    let api = namespaces(&client);
    label(&api, &labelled, json!({"labels": {"team": team}})).await;

    // The children appear, controlled by the Namespace itself.
    let uid = api.get(&labelled).await.unwrap().metadata.uid.unwrap();
    assert_eq!(
        quota_owner(&client, &labelled).await,
        (format!("Namespace/{labelled}"), uid)
    );
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &labelled);
    let policy = wait_for("team-isolation", || {
        let policies = policies.clone();
        async move { policies.get_opt("team-isolation").await.ok().flatten() }
    })
    .await;
    let from = serde_json::to_value(&policy.spec.unwrap().ingress.unwrap()[0]).unwrap();
    assert_eq!(
        from["from"][0]["namespaceSelector"]["matchLabels"]["team"],
        team.as_str()
    );

    // Converged, the host does not loop on its own writes: two touches of the parent cost exactly two
    // guest calls, and neither the Namespace nor its children were written by the host meanwhile.
    let addr = host.metrics_addr().unwrap();
    let calls = || {
        let text = http::get(&addr, "/metrics").unwrap().1;
        http::sample(
            &text,
            "reconcile_host_guest_call_duration_seconds_count",
            "",
        )
    };
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), &labelled);
    let quota_version = quotas
        .get("team-quota")
        .await
        .unwrap()
        .metadata
        .resource_version;
    // The reconciles that the children's creation set off (their echoes) may still be running: start
    // counting once the count has held still for a second.
    let mut before = calls();
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let now = calls();
        if now == before {
            break;
        }
        before = now;
    }
    for touch in 1..=2 {
        label(
            &api,
            &labelled,
            json!({"annotations": {"example.com/touch": touch.to_string()}}),
        )
        .await;
        let want = before + f64::from(touch);
        wait_for(&format!("guest call {want}"), || async move {
            (calls() >= want).then_some(())
        })
        .await;
    }
    assert_eq!(
        calls(),
        before + 2.0,
        "the host called the guest more often than the parent changed"
    );
    assert_eq!(
        quotas
            .get("team-quota")
            .await
            .unwrap()
            .metadata
            .resource_version,
        quota_version,
        "an unchanged answer was applied again"
    );
    let annotations = api
        .get(&labelled)
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap_or_default();
    assert!(
        annotations.keys().all(|k| k == "example.com/touch"),
        "the host wrote on a Namespace it decorates: {annotations:?}"
    );

    // An unlabelled namespace gets nothing.
    let plain_quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), &plain);
    assert!(plain_quotas.get_opt("team-quota").await.unwrap().is_none());

    // A child the guest puts in another namespace is refused, and the rule says why.
    let astray = cluster.namespace("deco-astray").await.unwrap();
    let annotation = json!({"namespace-decorator.example.com/namespace": plain});
    label(
        &api,
        &astray,
        json!({"labels": {"team": team}, "annotations": annotation}),
    )
    .await;
    let refused = wait_event(&client, "default", Some(&astray), "InvalidGuestOutput").await;
    let note = refused.message.unwrap_or_default();
    assert!(
        note.contains(&format!("namespace `{plain}`"))
            && note.contains(&format!("Namespace `{astray}` must be in it")),
        "{note}"
    );
    assert!(plain_quotas.get_opt("team-quota").await.unwrap().is_none());

    // The label goes: the finalize call, then the children go.
    label(&api, &labelled, json!({"labels": {"team": null}})).await;
    wait_children_gone(&client, &labelled).await;
    let released = wait_event(&client, "default", Some(&labelled), "Released").await;
    assert!(
        released
            .message
            .unwrap_or_default()
            .contains("2 children deleted")
    );
    assert!(
        host.log().contains(&format!("finalized {labelled}")),
        "the guest was not called to finalize"
    );
}

fn tenants(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", "v1alpha1", "Tenant");
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "tenants"),
    )
}

#[tokio::test]
async fn a_cluster_scoped_parent_has_children_only_where_allowed_and_hears_when_that_changes() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let crd = repo_root().join("examples/namespace-decorator/tenant-crd.yaml");
    apply_crd(cluster, &crd, "tenants.example.com");
    let team = cluster.namespace("tenant-team").await.unwrap();
    let allowed = cluster.namespace("tenant-allowed").await.unwrap();
    let other = cluster.namespace("tenant-other").await.unwrap();
    let labelled = cluster.namespace("tenant-labelled").await.unwrap();
    let label_value = json!({"labels": {"tenant-e2e": team}});
    label(&namespaces(&client), &labelled, label_value).await;
    let parent = "example.com/v1alpha1/Tenant";
    let namespace_selector = format!("tenant-e2e={team}");
    let extra = [
        "--child-namespace",
        &allowed,
        "--child-namespace-selector",
        &namespace_selector,
    ];
    let _host = start_host(cluster, parent, &team, &extra);

    let api = tenants(&client);
    let tenant = |name: &str, namespace: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1alpha1", "kind": "Tenant",
            "metadata": {"name": name, "labels": {"team": team},
                         "annotations": {"namespace-decorator.example.com/namespace": namespace}},
        }))
        .unwrap()
    };
    let (good, bad) = (format!("{team}-good"), format!("{team}-bad"));
    let by_label = format!("{team}-by-label");
    let created = api
        .create(&Default::default(), &tenant(&good, &allowed))
        .await
        .unwrap();
    api.create(&Default::default(), &tenant(&bad, &other))
        .await
        .unwrap();
    let selected = api
        .create(&Default::default(), &tenant(&by_label, &labelled))
        .await
        .unwrap();
    assert_eq!(
        quota_owner(&client, &labelled).await,
        (format!("Tenant/{by_label}"), selected.metadata.uid.unwrap())
    );

    assert_eq!(
        quota_owner(&client, &allowed).await,
        (format!("Tenant/{good}"), created.metadata.uid.unwrap())
    );
    // Its children of one name may live in several namespaces: the Event names the child's.
    let event = wait_event(&client, "default", Some(&good), "Created").await;
    let note = event.message.unwrap_or_default();
    assert_eq!(note, format!("created ResourceQuota/{allowed}/team-quota"));
    let refused = wait_event(&client, "default", Some(&bad), "InvalidGuestOutput").await;
    let note = refused.message.unwrap_or_default();
    assert!(
        note.contains(&format!(
            "namespace `{other}`, which is not allowed (--child-namespace {allowed} or --child-namespace-selector {namespace_selector})"
        )),
        "{note}"
    );

    // A namespace that stops matching the selector reconciles the parent with a child there at once
    // (not when the parent next changes): the child is refused on the parent, and kept.
    let unlabel = json!({"labels": {"tenant-e2e": null}});
    label(&namespaces(&client), &labelled, unlabel).await;
    let refused = wait_event(&client, "default", Some(&by_label), "InvalidGuestOutput").await;
    let note = refused.message.unwrap_or_default();
    assert!(
        note.contains(&format!("namespace `{labelled}`, which is not allowed")),
        "{note}"
    );
    assert_eq!(
        quota_owner(&client, &labelled).await.0,
        format!("Tenant/{by_label}")
    );

    // Garbage collection follows the ownerReference of a namespaced child to its cluster-scoped owner.
    api.delete(&good, &DeleteParams::background())
        .await
        .unwrap();
    wait_children_gone(&client, &allowed).await;
    for name in [bad, by_label] {
        api.delete(&name, &DeleteParams::background())
            .await
            .unwrap();
    }
}

/// The name a `run` decorator of Namespaces selecting `team=<team>` gives its children by default.
fn default_name(team: &str) -> String {
    let selector = format!("team={team}").parse().unwrap();
    Identity::run_default(&"v1/Namespace".parse().unwrap(), Some(&selector))
}

/// Two hosts decorating Namespaces, one for `team=a`, one for `team=b`: before children named their
/// reconciler, each saw the other's children, found their parents unselected, and released them (a
/// finalize call, then a delete) while the other re-created them, about every 10 ms.
#[tokio::test]
async fn two_decorators_with_disjoint_selectors_keep_each_others_children_for_a_minute() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let api = namespaces(&client);
    let a = cluster.namespace("deco-two-a").await.unwrap();
    let b = cluster.namespace("deco-two-b").await.unwrap();
    for team in [&a, &b] {
        label(&api, team, json!({"labels": {"team": team}})).await;
    }
    let _host_a = start_host(cluster, "v1/Namespace", &a, &[]);
    let _host_b = start_host(cluster, "v1/Namespace", &b, &[]);

    let (name_a, name_b) = (default_name(&a), default_name(&b));
    assert_ne!(name_a, name_b);
    let children_a = wait_named_children(&client, &a, &name_a).await;
    let children_b = wait_named_children(&client, &b, &name_b).await;
    assert_children_stay(&client, &[&a, &b], 60).await;
    assert_eq!(children(&client, &a).await, children_a);
    assert_eq!(children(&client, &b).await, children_b);
    for namespace in [&a, &b] {
        let released = events_now(&client, "default", namespace, "Released").await;
        assert!(
            released.is_empty(),
            "{namespace} was released: {released:?}"
        );
    }
}

/// Children made before children named their reconciler carry the managed-by label only: the host
/// whose selector takes their parent names them on its next reconcile (the same objects, not new
/// ones) and prunes those its module left out; a host that does not select their parent never
/// releases them.
#[tokio::test]
async fn a_child_from_before_names_is_taken_by_the_decorator_selecting_its_parent_only() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    let client = cluster.client().await.unwrap();
    let api = namespaces(&client);
    let a = cluster.namespace("deco-legacy-a").await.unwrap();
    let b = cluster.namespace("deco-legacy-b").await.unwrap();
    let mut legacy = Vec::new();
    for team in [&a, &b] {
        label(&api, team, json!({"labels": {"team": team}})).await;
        let quota = legacy_quota(&client, team, "team-quota").await;
        let stale = legacy_quota(&client, team, "stale-quota").await;
        legacy.push((quota, stale));
    }
    let quotas =
        |namespace: &str| -> Api<ResourceQuota> { Api::namespaced(client.clone(), namespace) };

    // The host for team a alone: it names a's quota (same UID), prunes a's stale one...
    let _host_a = start_host(cluster, "v1/Namespace", &a, &[]);
    let named = wait_named_children(&client, &a, &default_name(&a)).await;
    assert_eq!(
        named["ResourceQuota/team-quota"].0,
        legacy[0].0.metadata.uid.clone().unwrap()
    );
    wait_for("a's stale quota pruned", || async {
        quotas(&a)
            .get_opt("stale-quota")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    wait_event(&client, "default", Some(&a), "Deleted").await;
    // ... and leaves b's alone, though its parent, which it does not select, controls them. The old
    // host released them at its first reconcile of b, in the first second after its caches listed.
    tokio::time::sleep(std::time::Duration::from_secs(10)).await;
    for before in [&legacy[1].0, &legacy[1].1] {
        let name = before.metadata.name.as_deref().unwrap();
        let now = quotas(&b).get(name).await.unwrap();
        assert_eq!(
            now.metadata.resource_version, before.metadata.resource_version,
            "the host for team a touched {name} in {b}"
        );
    }
    assert!(
        events_now(&client, "default", &b, "Released")
            .await
            .is_empty()
    );

    // The host for team b takes b's.
    let _host_b = start_host(cluster, "v1/Namespace", &b, &[]);
    let named = wait_named_children(&client, &b, &default_name(&b)).await;
    assert_eq!(
        named["ResourceQuota/team-quota"].0,
        legacy[1].0.metadata.uid.clone().unwrap()
    );
    wait_for("b's stale quota pruned", || async {
        quotas(&b)
            .get_opt("stale-quota")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    for namespace in [&a, &b] {
        assert!(
            events_now(&client, "default", namespace, "Released")
                .await
                .is_empty()
        );
    }
}
