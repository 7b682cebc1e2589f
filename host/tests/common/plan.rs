//! `reconcile-host plan` as a process, as a CI job runs it.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `plan` with `args` (and `-o json`) against the cluster of `kubeconfig`, as it ends.
pub fn output(kubeconfig: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_reconcile-host"))
        .arg("plan")
        .args(args)
        .args(["-o", "json"])
        .env("KUBECONFIG", kubeconfig)
        .output()
        .unwrap();
    eprintln!("plan: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Runs `plan` with `args` (and `-o json`) against the cluster of `kubeconfig`: its exit code and its
/// JSON report.
pub fn run(kubeconfig: &Path, args: &[&str]) -> (i32, Value) {
    let out = output(kubeconfig, args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("plan printed no JSON report ({e}): {stdout}\n{stderr}"));
    (out.status.code().unwrap(), report)
}
