//! The guests' memory budget on the real control plane: many parents whose guest hoards memory, all at
//! once, keep the host's resident memory under the budget plus what it used before, and every other
//! parent still converges.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::json;
use testcluster::{TestCluster, failure_guard};

use crate::common::host::HostProcess;
use crate::common::myapp::*;

const BUDGET_MIB: u64 = 64;
const HOARDERS: usize = 16;
const HEALTHY: usize = 10;

#[tokio::test]
async fn hoarding_guests_on_many_parents_stay_within_the_budget_while_others_converge() {
    let cluster = TestCluster::shared();
    let _guard = failure_guard(cluster);
    install_crd(cluster);
    let namespace = cluster.namespace("budget").await.unwrap();
    let client = cluster.client().await.unwrap();
    let budget = BUDGET_MIB.to_string();
    let host = HostProcess::faults(
        cluster.kubeconfig_path(),
        &namespace,
        &[
            "--concurrency",
            "16",
            "--guest-memory-mib",
            "32",
            "--guest-memory-budget-mib",
            &budget,
            "--guest-deadline-ms",
            "2000",
        ],
    );
    let converged = |name: String| {
        let client = client.clone();
        let namespace = namespace.clone();
        async move {
            wait_status(&client, &namespace, &name, "a healthy parent", |st| {
                st["ok"] == true
            })
            .await;
        }
    };
    for i in 0..HEALTHY {
        create_myapp(&client, &namespace, &format!("before-{i}"), json!({})).await;
    }
    for i in 0..HEALTHY {
        converged(format!("before-{i}")).await;
    }
    let baseline = host.memory("VmRSS");
    host.reset_peak_memory();

    // Sixteen parents whose guest fills its 32 MiB page by page: 512 MiB at once without the budget.
    for i in 0..HOARDERS {
        create_myapp(
            &client,
            &namespace,
            &format!("hoarder-{i}"),
            json!({"fault": "grow"}),
        )
        .await;
    }
    for i in 0..HEALTHY {
        create_myapp(&client, &namespace, &format!("after-{i}"), json!({})).await;
    }
    for i in 0..HOARDERS {
        wait_status(
            &client,
            &namespace,
            &format!("hoarder-{i}"),
            "a hoarder to fail",
            |st| {
                ready_condition(st).is_some_and(|c| {
                    c["status"] == "False"
                        && (c["reason"] == "GuestMemoryLimitExceeded"
                            || c["reason"] == "GuestMemoryBudgetExhausted")
                })
            },
        )
        .await;
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    for i in 0..HEALTHY {
        converged(format!("after-{i}")).await;
        configmaps.get(&format!("after-{i}-cm")).await.unwrap();
    }

    let peak = host.memory("VmHWM");
    let mib = |bytes: u64| bytes >> 20;
    // Besides the budget: each of the pool's memory slots keeps up to 256 KiB resident once used
    // (36 instance slots here, 4 memories each: 36 MiB), and each call has its native stack and
    // bookkeeping. Without the budget, this test peaked at 243 MiB over the baseline.
    let slack = 48 << 20;
    eprintln!(
        "baseline {} MiB, peak {} MiB, budget {BUDGET_MIB} MiB",
        mib(baseline),
        mib(peak)
    );
    assert!(
        peak <= baseline + (BUDGET_MIB << 20) + slack,
        "peak RSS {} MiB over baseline {} MiB + budget {BUDGET_MIB} MiB + slack",
        mib(peak),
        mib(baseline)
    );
}
