//! kubectl against the test cluster, as a user runs it.

use std::path::Path;

use testcluster::TestCluster;

/// Runs kubectl; its stdout, or a panic with its stderr if it failed.
pub fn kubectl_ok(cluster: &TestCluster, args: &[&str]) -> String {
    let out = cluster.kubectl().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl {args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Applies the CRD in `file` server-side and waits until `name` is established.
pub fn apply_crd(cluster: &TestCluster, file: &Path, name: &str) {
    kubectl_ok(
        cluster,
        &["apply", "--server-side", "-f", file.to_str().unwrap()],
    );
    wait_established(cluster, name);
}

/// Waits until the CRD `name` is established (its kind is served).
pub fn wait_established(cluster: &TestCluster, name: &str) {
    let crd = format!("crd/{name}");
    kubectl_ok(
        cluster,
        &[
            "wait",
            "--for",
            "condition=established",
            "--timeout=60s",
            &crd,
        ],
    );
}
