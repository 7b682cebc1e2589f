//! End to end on the real control plane: the namespace decorator (guests/namespace-decorator) run by
//! reconcile-host as a decorator of Namespaces (`--parent-selector`), and of a cluster-scoped custom
//! kind whose children live in the namespaces the host allows (`--child-namespace`,
//! `--child-namespace-selector`).
//!
//! Each test selects on a `team` value of its own: the host watches every Namespace of the shared
//! cluster, and takes only the ones its selector matches.

mod common;

use k8s_openapi::api::core::v1::ResourceQuota;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind};
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use common::decorator::{label, namespaces, quota_owner, wait_children_gone};
use common::events::wait_event;
use common::guests::{component, repo_root};
use common::host::HostProcess;
use common::http;
use common::kubectl::apply_crd;
use common::myapp::wait_for;

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
