//! One conformance suite for reconcilers in any language: the MyApp guests in Rust, Go, JavaScript and
//! Python against the same fixtures (guests/myapp/fixtures), and so the ConfiguredApp guests (contract 0.2.0,
//! related objects: guests/configured/fixtures), each with a fresh instance per call and with one
//! reused instance (where state left over from one parent would show in the next answer). The JS and
//! Python guests are built from source on first use by their `build.sh` (the Go one too), like the Rust
//! ones by cargo. The Rust and Go guests also implement MyApp v1beta1 and `convert`
//! (guests/myapp/fixtures-v1beta1).

mod common;

use std::path::Path;
use std::process::Command;

use common::conformance::{
    assert_conforms, assert_conforms_to, myapp_fixtures, myapp_v1beta1_fixtures,
};
use common::guests::{
    artifact_cache, component, configured_js, configured_python, myapp_go, myapp_js, myapp_python,
};
use reconcile_host::guest::{Module, Request, Runtime, RuntimeConfig};
use serde_json::json;

/// Both call modes, with the compiled artifact cached across test runs.
fn assert_conforms_fresh_and_reused(component: &Path, config: RuntimeConfig) {
    let config = config.cache_dir(Some(artifact_cache()));
    assert_conforms(component, config.clone());
    assert_conforms(component, config.reuse_instance_calls(100));
}

#[test]
fn rust_guest_conforms() {
    assert_conforms_fresh_and_reused(&component("guest_myapp"), RuntimeConfig::default());
}

#[test]
fn rust_guest_conforms_to_v1beta1_and_converts_both_ways() {
    assert_conforms_to_v1beta1(&component("guest_myapp"));
}

#[test]
fn go_guest_conforms() {
    assert_conforms_fresh_and_reused(&myapp_go(), RuntimeConfig::default());
}

#[test]
fn go_guest_conforms_to_v1beta1_and_converts_both_ways() {
    assert_conforms_to_v1beta1(&myapp_go());
}

/// The Go runtime collects garbage by itself when an allocation crosses its heap goal, and collecting
/// calls WASI imports, which a component may not do in `cabi_realloc`, where the host allocates each
/// call's arguments (one call per string of a list): a reused instance trapped ("cannot leave component
/// instance"), here at call 778, until the kit's `reconcilekit` moved collections to the start of an
/// export. 2000 calls with a 64 KiB parent allocate ~250 MiB: many collections, and a memory that stays
/// bounded under the instance's cap.
#[test]
fn go_guest_answers_many_large_calls_in_one_reused_instance() {
    const NOTE: usize = 64 << 10;
    let config = RuntimeConfig::default()
        .cache_dir(Some(artifact_cache()))
        .reuse_instance_calls(u32::MAX);
    let runtime = Runtime::new(config).unwrap();
    let module = Module::load_file(&runtime, &myapp_go()).unwrap();
    let parent = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
        "metadata": {"name": "big", "namespace": "default",
                     "annotations": {"note": "x".repeat(NOTE)}},
        "spec": {"replicas": 2}
    });
    let request = Request {
        parent: parent.to_string(),
        children: vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "big-deploy", "namespace": "default"},
                   "status": {"readyReplicas": 2}})
            .to_string(),
        ],
        related: Vec::new(),
        finalizing: false,
    };
    for call in 0..2000 {
        let response = module
            .call_raw("big", &request)
            .unwrap_or_else(|e| panic!("call {call}: {e}"));
        assert_eq!(response.children.len(), 1, "call {call}");
        let status = response.status.unwrap_or_default();
        assert!(
            status.contains(r#""phase":"Ready""#),
            "call {call}: {status}"
        );
    }
    let memory = runtime.memory_budget().used();
    assert!(
        memory < 32 << 20,
        "the reused instance holds {memory} bytes"
    );
}

/// All the v1beta1 cases, the 8 conversions among them, with a fresh instance per call.
fn assert_conforms_to_v1beta1(component: &Path) {
    let config = RuntimeConfig::default().cache_dir(Some(artifact_cache()));
    let report = assert_conforms_to(&myapp_v1beta1_fixtures(), component, config);
    let conversions = report
        .cases
        .iter()
        .filter(|case| case.name.starts_with("convert-"))
        .count();
    assert_eq!((report.cases.len(), conversions), (11, 8), "{report}");
}

/// The ConfiguredApp guests in Rust, JavaScript and Python, fresh and reused, against one set of cases.
fn assert_configured_conforms(component: &Path) {
    let fixtures = common::guests::repo_root().join("guests/configured/fixtures");
    let config = RuntimeConfig::default().cache_dir(Some(artifact_cache()));
    for config in [config.clone(), config.reuse_instance_calls(100)] {
        let report = assert_conforms_to(&fixtures, component, config);
        assert_eq!(report.cases.len(), 5, "{report}");
    }
}

#[test]
fn configured_guest_gets_the_related_objects_its_selector_matches() {
    assert_configured_conforms(&component("guest_configured"));
}

#[test]
fn javascript_configured_guest_selects_and_reads_related_objects_as_the_rust_one() {
    assert_configured_conforms(&configured_js());
}

#[test]
fn python_configured_guest_selects_and_reads_related_objects_as_the_rust_one() {
    assert_configured_conforms(&configured_python());
}

#[test]
fn javascript_guest_conforms() {
    assert_conforms_fresh_and_reused(&myapp_js(), RuntimeConfig::default());
}

#[test]
fn python_guest_conforms() {
    assert_conforms_fresh_and_reused(&myapp_python(), RuntimeConfig::default());
}

fn conformance_command(module: &Path) -> std::process::Output {
    conformance_command_on(module, &myapp_fixtures())
}

fn conformance_command_on(module: &Path, fixtures: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_reconcile-host"))
        .arg("conformance")
        .arg("--module")
        .arg(module)
        .arg("--fixtures")
        .arg(fixtures)
        .args(["--child", "apps/v1/Deployment"])
        .output()
        .expect("running reconcile-host conformance")
}

#[test]
fn the_command_passes_a_conforming_guest() {
    let out = conformance_command(&component("guest_myapp"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("  ok    demo-app"), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("6 passed, 0 failed"),
        "{stdout}"
    );
}

#[test]
fn the_command_fails_a_guest_with_other_rules_and_says_where() {
    // The faults guest answers a ConfigMap for any parent, and never an error.
    let out = conformance_command(&component("guest_faults"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("0 passed, 6 failed"), "{stdout}");
    assert!(
        stdout
            .contains(r#"FAIL  demo-app: children at /0/apiVersion: expected "apps/v1", got "v1""#),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL  invalid-empty-image: expected the guest to return an error"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("6 of 6 cases failed"), "{stderr}");
}

#[test]
fn the_command_fails_a_conversion_that_differs_and_says_where() {
    // The faults guest's convert only sets apiVersion: the image stays at spec.image.
    let out = conformance_command_on(&component("guest_faults"), &myapp_v1beta1_fixtures());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            "FAIL  convert-demo-app-up: converted object at /spec/image: unexpected \"nginx:alpine\""
        ) || stdout.contains("FAIL  convert-demo-app-up: converted object at /spec/template: missing"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL  convert-unknown-version: expected the guest to return an error"),
        "{stdout}"
    );
}
