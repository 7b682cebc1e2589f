//! Finds the control-plane binaries: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
//! kubectl and kwok.
//!
//! They are built from Go modules by `tests/controlplane/build.sh` into a cache outside the repo (never
//! committed); the script prints the cache directory on its last stdout line and returns at once when
//! everything is cached. `RECONCILE_HOST_CONTROLPLANE_BIN` overrides the lookup, for CI caches or for
//! trying other builds.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

/// Environment variable naming a directory that already holds the binaries.
pub const BIN_DIR_ENV: &str = "RECONCILE_HOST_CONTROLPLANE_BIN";

/// Every binary the stack needs, checked up front so a missing one fails with a clear message.
const REQUIRED: [&str; 6] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
];

/// The build script, found relative to this crate so it works from any working directory.
pub fn build_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../controlplane/build.sh")
}

/// Directory holding the binaries; resolved once per process, because running the build script
/// costs a hash of the wrapper modules even when everything is cached.
pub fn bin_dir() -> Result<PathBuf> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| resolve().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(anyhow::Error::msg)
}

fn resolve() -> Result<PathBuf> {
    let dir = match std::env::var_os(BIN_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => run_build_script()?,
    };
    for name in REQUIRED {
        let path = dir.join(name);
        if !path.is_file() {
            bail!(
                "control-plane binary {} is missing (from {}; run {} or set {BIN_DIR_ENV})",
                path.display(),
                if std::env::var_os(BIN_DIR_ENV).is_some() {
                    BIN_DIR_ENV
                } else {
                    "build.sh"
                },
                build_script().display()
            );
        }
    }
    Ok(dir)
}

fn run_build_script() -> Result<PathBuf> {
    let script = build_script();
    // Progress and build failures go to stderr, which the test output shows; stdout carries the path.
    let output = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !output.status.success() {
        bail!("{} failed with {}", script.display(), output.status);
    }
    let stdout = String::from_utf8(output.stdout).context("build.sh printed non-UTF-8")?;
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
    match last {
        Some(line) => Ok(PathBuf::from(line.trim())),
        None => bail!("{} printed no binary directory", script.display()),
    }
}
