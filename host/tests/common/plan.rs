//! `reconcile-host plan` as a process, as a CI job runs it.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `plan` with `args` (and `-o json`) against the cluster of `kubeconfig`: its exit code and its
/// JSON report.
pub fn run(kubeconfig: &Path, args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_reconcile-host"))
        .arg("plan")
        .args(args)
        .args(["-o", "json"])
        .env("KUBECONFIG", kubeconfig)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("plan: {stderr}");
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("plan printed no JSON report ({e}): {stdout}\n{stderr}"));
    (out.status.code().unwrap(), report)
}
