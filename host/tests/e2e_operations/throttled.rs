//! The host throttled by the API server: API Priority and Fairness gives its ServiceAccount (alone: no
//! other test's requests match) the smallest share of the server's seats and no queue, so what does
//! not fit is answered 429. The host counts the 429s, backs off (retrying after the server's
//! Retry-After) and converges every parent, with none orphaned or duplicated.

use serde_json::{Value, json};
use testcluster::{TestCluster, failure_guard};

use crate::common::guests::component;
use crate::common::host::HostProcess;
use crate::common::monitoring::scrape_when;
use crate::common::myapp::*;
use crate::common::platform::kubectl_apply;
use crate::common::restart::assert_every_parent_converged;
use crate::deploy_rbac::{limited_kubeconfig, shipped_cluster_role};

/// A priority level of one share and no queue, and a flow schema that sends every request of the
/// ServiceAccount `limited` of `namespace` (the host's) to it, before the defaults match it.
fn throttle(namespace: &str) -> [Value; 2] {
    let name = format!("throttle-{namespace}");
    let level = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "lendablePercent": 0,
            "limitResponse": {"type": "Reject"}}},
    });
    let schema = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": name},
        "spec": {
            "priorityLevelConfiguration": {"name": name},
            "matchingPrecedence": 50,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "ServiceAccount",
                              "serviceAccount": {"name": "limited", "namespace": namespace}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "clusterScope": true, "namespaces": ["*"]}],
            }],
        },
    });
    [level, schema]
}

#[tokio::test]
async fn a_host_throttled_by_priority_and_fairness_counts_the_429s_backs_off_and_converges() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("throttled").await.unwrap();
    let client = cluster.client().await.unwrap();
    let kubeconfig = limited_kubeconfig(cluster, &client, &namespace, shipped_cluster_role()).await;
    kubectl_apply(cluster, &throttle(&namespace));

    let host = HostProcess::myapp(
        &kubeconfig,
        &namespace,
        &component("guest_myapp"),
        &["--concurrency", "64"],
    );
    create_myapps(&client, &namespace, 300).await;
    scrape_when(&host, "the API server's 429 answers counted", |s| {
        s.value("reconcile_host_api_throttled_total")
            .is_some_and(|throttled| throttled > 0.0)
    })
    .await;
    assert_every_parent_converged(&client, &namespace).await;
    let throttled = scrape_when(&host, "the host's metrics", |s| s.up).await;
    eprintln!(
        "429 answers to the host while 300 parents converged: {:?}",
        throttled.value("reconcile_host_api_throttled_total")
    );
}
