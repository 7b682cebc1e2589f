//! The guest components for tests and benchmarks, built from source on first use: the component build
//! is part of the test build, never a committed file.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ sits in the repo root")
}

/// `<name>.wasm` as the project builds it (`make guests`): the MyApp guest without WASI (see
/// [`no_wasi`]), the others (`guest_faults`, `guest_website`, `guest_configured`) for `wasm32-wasip2`.
pub fn component(name: &str) -> PathBuf {
    if name == "guest_myapp" {
        no_wasi(name)
    } else {
        wasip2(name)
    }
}

/// `<name>.wasm` built for `wasm32-wasip2`, the whole guests workspace once per process: components
/// that import the `wasi:cli`/`wasi:io` interfaces Rust's std links in (no preview1 adapter: Rust
/// 1.95's std for this target imports WASI 0.2 directly).
pub fn wasip2(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| build(&guest_target_dir(), Target::Wasip2, &[]));
    in_dir(dir, name)
}

/// `<name>.wasm` (`guest_myapp` or `guest_faults`) built for `wasm32-unknown-unknown` and linked into a
/// component by the toolchain's `wasm-component-ld`: the contract's `log` is its only import, so a
/// fresh instance has less to link. Built once per process.
pub fn no_wasi(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let extra = ["-p", "guest-myapp", "-p", "guest-faults"];
        build(&guest_target_dir(), Target::NoWasi, &extra)
    });
    in_dir(dir, name)
}

/// The MyApp guest built with its `variant-b` feature: the same logic plus a label, so that a hot swap
/// between the two is visible on every Deployment.
pub fn myapp_variant_b() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    myapp_variant(&DIR, "variant-b")
}

/// The MyApp guest built with its `variant-c` feature: the label only on Deployments of 3 replicas or
/// more, so that it differs from the plain guest on some parents only.
pub fn myapp_variant_c() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    myapp_variant(&DIR, "variant-c")
}

fn myapp_variant(dir: &'static OnceLock<PathBuf>, feature: &str) -> PathBuf {
    let dir = dir.get_or_init(|| {
        let extra = ["-p", "guest-myapp", "--features", feature];
        build(&guest_target_dir().join(feature), Target::NoWasi, &extra)
    });
    in_dir(dir, "guest_myapp")
}

/// The JavaScript MyApp guest (guests/myapp-js), built once per process by its `build.sh`.
pub fn myapp_js() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build_script("myapp-js")).clone()
}

/// The Python MyApp guest (guests/myapp-python), built once per process by its `build.sh`.
pub fn myapp_python() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build_script("myapp-python")).clone()
}

/// The Go MyApp guest (guests/myapp-go, contract 0.2.0 with `convert`), built once per process by its
/// `build.sh` (the Go guest kit, guests/toolchain/go).
pub fn myapp_go() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build_script("myapp-go")).clone()
}

/// The JavaScript ConfiguredApp guest (guests/configured-js, contract 0.2.0 with `related`).
pub fn configured_js() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build_script("configured-js")).clone()
}

/// The Python ConfiguredApp guest (guests/configured-python, contract 0.2.0 with `related`).
pub fn configured_python() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build_script("configured-python"))
        .clone()
}

/// Where tests keep compiled artifacts (`RuntimeConfig::cache_dir`): compiling a JS or Python guest
/// takes seconds, loading its artifact milliseconds.
pub fn artifact_cache() -> PathBuf {
    guest_target_dir().join("compiled")
}

fn guest_target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("RECONCILE_HOST_GUEST_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
        .join("guests")
}

/// How a guest is built into a component.
#[derive(Clone, Copy)]
enum Target {
    /// `wasm32-wasip2`: rustc links through `wasm-component-ld`; std imports WASI 0.2.
    Wasip2,
    /// `wasm32-unknown-unknown` linked by the same `wasm-component-ld` (shipped with rustc): the
    /// component-type section wit-bindgen embeds makes it a component with the contract's imports only.
    NoWasi,
}

impl Target {
    fn triple(self) -> &'static str {
        match self {
            Target::Wasip2 => "wasm32-wasip2",
            Target::NoWasi => "wasm32-unknown-unknown",
        }
    }
}

fn build(target_dir: &Path, target: Target, extra: &[&str]) -> PathBuf {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .args(["build", "--release", "--target", target.triple()])
        .arg("--manifest-path")
        .arg(repo_root().join("guests/Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    if let Target::NoWasi = target {
        cargo.args(["--config", NO_WASI_LINKER]);
    }
    let status = cargo
        .args(extra)
        .status()
        .expect("running cargo to build the guests");
    assert!(status.success(), "building the guest components failed");
    target_dir.join(target.triple()).join("release")
}

/// What `make guests` passes too: link `wasm32-unknown-unknown` cdylibs into components.
const NO_WASI_LINKER: &str = r#"target.wasm32-unknown-unknown.linker="wasm-component-ld""#;

/// Runs `guests/<guest>/build.sh` into `<guest target dir>/scripted/<guest>.wasm`. The script installs
/// its toolchain into a cache outside the repo and skips an unchanged guest.
fn build_script(guest: &str) -> PathBuf {
    let out = guest_target_dir()
        .join("scripted")
        .join(format!("{guest}.wasm"));
    let script = repo_root().join("guests").join(guest).join("build.sh");
    let status = Command::new("bash")
        .arg(&script)
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(status.success(), "{} failed", script.display());
    out
}

fn in_dir(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.wasm"));
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// The directory of test tools built from Go modules (the monitoring tools, the registry): the
/// environment variable `env` (as `make test` sets it), or else what the build `script` prints last.
pub fn go_tools(env: &str, script: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(env) {
        return PathBuf::from(dir);
    }
    let out = Command::new(repo_root().join(script))
        .output()
        .unwrap_or_else(|e| panic!("running {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("the build script prints its directory"),
    )
}

/// The digest the host gives a module file: `sha256:<hex>`.
pub fn digest(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path).unwrap();
    format!("sha256:{:x}", Sha256::digest(&bytes))
}

/// A component whose one function takes Cranelift 64-128 MiB to compile (100,000 statements over 50
/// locals; measured: it fails under a 64 MiB cap and compiles under 128), small enough for a
/// ConfigMap once gzipped (~260 KiB). The MyApp guest compiles under 32 MiB.
pub fn hard_to_compile() -> Vec<u8> {
    let statements: String = (0..100_000)
        .map(|i| {
            format!(
                "(local.set {} (i64.mul (local.get {}) (i64.const {i})))",
                i % 50,
                (i + 7) % 50
            )
        })
        .collect();
    let locals = "i64 ".repeat(50);
    wat::parse_str(format!(
        "(component (core module (func (export \"f\") (param i64) (result i64) (local {locals}) \
         {statements} (local.get 3))))"
    ))
    .expect("valid text format")
}
