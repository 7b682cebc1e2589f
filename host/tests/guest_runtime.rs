//! The real guest components through the runtime: the MyApp guest against its fixtures, and purpose-built
//! faulty guests, each of which must end in a clear error within its deadline while the next call works.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use reconcile_host::guest::{
    Answer, GuestError, LoadError, Module, Request, Runtime, RuntimeConfig,
};
use reconcile_host::validate::{Rule, Rules, validate};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_millis(300);

fn runtime(config: RuntimeConfig) -> Arc<Runtime> {
    Runtime::new(config).expect("runtime")
}

/// The faults guest with a 300 ms deadline and a 32 MiB memory cap.
fn faults() -> Arc<Module> {
    faults_with(
        RuntimeConfig::default()
            .deadline(DEADLINE)
            .memory_limit(32 << 20),
    )
}

fn faults_with(config: RuntimeConfig) -> Arc<Module> {
    Module::load_file(&runtime(config), &common::guests::component("guest_faults"))
        .expect("faults guest loads")
}

fn parent(fault: Option<&str>) -> Value {
    let mut parent = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "MyApp",
        "metadata": {"name": "victim", "namespace": "team-a", "uid": "1234"},
        "spec": {}
    });
    if let Some(fault) = fault {
        parent["spec"]["fault"] = json!(fault);
    }
    parent
}

fn call_fault(module: &Module, fault: &str) -> Result<Answer, GuestError> {
    module.call("team-a/victim", &Request::for_parent(&parent(Some(fault))))
}

fn rules() -> Rules {
    Rules::new(Some(vec!["v1/ConfigMap".parse().unwrap()]))
}

/// After any fault the same module must still serve a healthy parent.
fn assert_next_call_works(module: &Module) {
    let answer = module
        .call("team-a/healthy", &Request::for_parent(&parent(None)))
        .expect("the next call works");
    assert_eq!(answer.children[0]["metadata"]["name"], "victim-cm");
    assert_eq!(answer.status.unwrap()["ok"], true);
}

#[test]
fn myapp_guest_matches_every_fixture() {
    common::conformance::assert_conforms(
        &common::guests::component("guest_myapp"),
        RuntimeConfig::default(),
    );
}

#[test]
fn a_panic_is_reported_with_what_the_guest_said_and_the_next_call_works() {
    let module = faults();
    let err = call_fault(&module, "panic:spec.size must be positive").unwrap_err();
    let GuestError::Trap { what, said } = &err else {
        panic!("not a trap: {err}");
    };
    assert!(what.contains("unreachable"), "{what}");
    assert!(said.contains("spec.size must be positive"), "{said}");
    let message = err.to_string();
    assert!(
        !message.contains("backtrace") && !message.contains("0x"),
        "no wasm backtrace in what users read: {message}"
    );
    assert_next_call_works(&module);
}

#[test]
fn a_guest_without_wasi_says_why_it_panicked_through_its_log() {
    let config = RuntimeConfig::default()
        .deadline(DEADLINE)
        .memory_limit(32 << 20);
    let module = Module::load_file(&runtime(config), &common::guests::no_wasi("guest_faults"))
        .expect("faults guest without WASI loads");
    let err = call_fault(&module, "panic:spec.size must be positive").unwrap_err();
    let GuestError::Trap { what, said } = &err else {
        panic!("not a trap: {err}");
    };
    assert!(what.contains("unreachable"), "{what}");
    assert!(
        said.starts_with("panicked at ") && said.contains("spec.size must be positive"),
        "{said}"
    );
    assert_next_call_works(&module);
}

#[test]
fn the_myapp_guest_imports_the_contract_only_and_its_wasip2_build_still_conforms() {
    let engine = wasmtime::Engine::default();
    let bytes = std::fs::read(common::guests::component("guest_myapp")).unwrap();
    let component = wasmtime::component::Component::new(&engine, &bytes).unwrap();
    let imports: Vec<String> = component
        .component_type()
        .imports(&engine)
        .map(|(name, _)| name.to_string())
        .collect();
    assert!(
        imports
            .iter()
            .all(|name| name.starts_with("reconcile:guest/")),
        "{imports:?}"
    );
    // Guests built for wasm32-wasip2 (WASI imports, linked with no capabilities) are served as before.
    common::conformance::assert_conforms(
        &common::guests::wasip2("guest_myapp"),
        RuntimeConfig::default(),
    );
}

#[test]
fn an_oversized_status_is_refused_with_its_size() {
    let module = faults();
    let err = call_fault(&module, "big-status").unwrap_err();
    assert!(
        matches!(err, GuestError::StatusTooLarge { size, limit: 65536 } if size > 100 << 10),
        "{err}"
    );
    assert!(err.to_string().contains("--guest-max-status-kib"), "{err}");
}

#[test]
fn an_endless_loop_is_interrupted_at_its_deadline() {
    let module = faults();
    let start = Instant::now();
    let err = call_fault(&module, "loop").unwrap_err();
    let elapsed = start.elapsed();
    assert!(
        matches!(err, GuestError::Deadline(d) if d == DEADLINE),
        "{err}"
    );
    assert!(
        elapsed >= DEADLINE,
        "interrupted after {elapsed:?}, before its deadline"
    );
    assert!(
        elapsed < DEADLINE * 10,
        "not interrupted near its deadline: {elapsed:?}"
    );
    assert_next_call_works(&module);
}

#[test]
fn unbounded_allocation_hits_the_memory_cap() {
    // A deadline far from reach: on a loaded machine, filling 32 MiB can outlast 300 ms of wall time,
    // and this test is about the memory cap.
    let module = faults_with(
        RuntimeConfig::default()
            .deadline(Duration::from_secs(10))
            .memory_limit(32 << 20),
    );
    let err = call_fault(&module, "grow").unwrap_err();
    assert!(
        matches!(err, GuestError::MemoryLimit { limit_bytes } if limit_bytes == 32 << 20),
        "{err}"
    );
    assert!(err.to_string().contains("memory limit"), "{err}");
    assert_next_call_works(&module);
}

#[test]
fn invalid_json_is_refused() {
    let module = faults();
    let err = call_fault(&module, "invalid-json").unwrap_err();
    assert!(
        matches!(err, GuestError::InvalidJson { ref what, .. } if what == "child 0"),
        "{err}"
    );
    assert_next_call_works(&module);
}

#[test]
fn oversized_output_is_refused_before_parsing() {
    // The guest needs room to build its 8 MiB answer: the default 64 MiB cap.
    let module = faults_with(RuntimeConfig::default().deadline(DEADLINE));
    let err = call_fault(&module, "oversized").unwrap_err();
    assert!(
        matches!(err, GuestError::OutputTooLarge { limit, .. } if limit == 4 << 20),
        "{err}"
    );
    assert_next_call_works(&module);
}

#[test]
fn forbidden_children_are_refused_by_validation() {
    let module = faults();
    type BrokenRule = fn(&Rule) -> bool;
    let cases: [(&str, BrokenRule); 4] = [
        (
            "cluster-role-binding",
            |r| matches!(r, Rule::KindNotAllowed { kind, .. } if kind == "ClusterRoleBinding"),
        ),
        (
            "other-namespace",
            |r| matches!(r, Rule::OtherNamespace { namespace, .. } if namespace == "kube-system"),
        ),
        ("bad-name", |r| matches!(r, Rule::InvalidName { .. })),
        ("many-children", |r| matches!(r, Rule::TooMany { .. })),
    ];
    for (fault, expected) in cases {
        let answer = call_fault(&module, fault).unwrap_or_else(|e| panic!("{fault}: {e}"));
        let err = validate(&answer, "team-a", &rules()).expect_err(fault);
        assert!(expected(&err.rule), "{fault}: {err}");
    }
    assert_next_call_works(&module);
}

#[test]
fn the_guest_cannot_open_files() {
    let module = faults();
    let err = call_fault(&module, "open-file").unwrap_err();
    assert!(
        matches!(err, GuestError::Rejected(ref m) if m.contains("open failed")),
        "{err}"
    );
}

#[test]
fn the_guest_sees_no_environment_and_no_arguments() {
    // SAFETY: set before any thread of this test reads the environment; other tests never read it.
    unsafe { std::env::set_var("RECONCILE_HOST_SECRET", "must-not-leak") };
    let module = faults();
    let status = call_fault(&module, "read-env").unwrap().status.unwrap();
    assert_eq!(
        status["env"],
        json!([]),
        "the guest saw the host's environment"
    );
    assert_eq!(status["args"], json!([]));
}

#[test]
fn guest_logging_does_not_disturb_the_answer() {
    let module = faults();
    let answer = call_fault(&module, "log").unwrap();
    assert_eq!(answer.children.len(), 1);
}

/// Output past the per-call cap is dropped, not turned into a failed write (which `println!` makes a
/// trap); a reused instance gets its whole cap back on every call.
#[test]
fn a_guest_flooding_stdout_still_answers_call_after_call() {
    for reuse in [0, 10] {
        let module = faults_with(RuntimeConfig::default().reuse_instance_calls(reuse));
        for call in 0..3 {
            let answer = call_fault(&module, "flood")
                .unwrap_or_else(|e| panic!("reuse {reuse}, call {call}: {e}"));
            assert_eq!(answer.status.unwrap()["ok"], true);
        }
        assert_next_call_works(&module);
    }
}

#[test]
fn a_component_of_another_world_is_refused_with_what_is_missing() {
    let rt = runtime(RuntimeConfig::default());
    let other =
        wat::parse_str(r#"(component (import "other:thing/api@1.0.0" (instance)))"#).unwrap();
    let err = Module::load(&rt, &other).err().expect("refused");
    assert!(matches!(err, LoadError::WorldMismatch { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("reconcile:guest/reconciler@0.1.0"),
        "{message}"
    );
    assert!(message.contains("other:thing/api@1.0.0"), "{message}");

    let empty = wat::parse_str("(component)").unwrap();
    let message = Module::load(&rt, &empty)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        message.contains("reconcile"),
        "should name the missing export: {message}"
    );
}

#[test]
fn non_components_are_refused_clearly() {
    let rt = runtime(RuntimeConfig::default());
    let core = wat::parse_str("(module)").unwrap();
    assert!(
        matches!(Module::load(&rt, &core), Err(LoadError::NotAComponent(m)) if m.contains("core wasm module"))
    );
    assert!(matches!(
        Module::load(&rt, b"#!/bin/sh\necho hi\n"),
        Err(LoadError::NotAComponent(_))
    ));
}

#[test]
fn compiled_artifacts_are_cached_and_reused() {
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(RuntimeConfig::default().cache_dir(Some(cache.path().to_path_buf())));
    let path = common::guests::component("guest_myapp");
    let first = Module::load_file(&rt, &path).unwrap();
    let artifacts: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(artifacts.len(), 1, "one artifact per module: {artifacts:?}");
    assert!(
        artifacts[0]
            .to_string_lossy()
            .contains(first.digest().trim_start_matches("sha256:"))
    );

    // A corrupt artifact is ignored and replaced, never trusted.
    std::fs::write(&artifacts[0], b"garbage").unwrap();
    let second = Module::load_file(&rt, &path).unwrap();
    assert_eq!(first.digest(), second.digest());
    assert!(
        std::fs::metadata(&artifacts[0]).unwrap().len() > 1000,
        "the artifact was rewritten"
    );
    let parent = json!({"apiVersion": "example.com/v1alpha1", "kind": "MyApp", "metadata": {"name": "x", "namespace": "d"}, "spec": {}});
    assert_eq!(
        second
            .call("d/x", &Request::for_parent(&parent))
            .unwrap()
            .children
            .len(),
        1
    );
}

/// How many copies of its marker for `text` a `remember` call found, left there by earlier calls.
fn copies_left_before(module: &Module, text: &str) -> u64 {
    let answer = call_fault(module, &format!("remember:{text}")).expect("remember answers");
    answer.status.unwrap()["seen"].as_u64().unwrap()
}

#[test]
fn a_fresh_instance_holds_nothing_an_earlier_call_wrote() {
    // Both ways of resetting an ended instance's memory, both builds of the guest: the marker left
    // in static data, on the heap and in grown memory is gone for the next call.
    for reset_written_pages_only in [true, false] {
        let config = RuntimeConfig::default()
            .deadline(DEADLINE)
            .reset_written_pages_only(reset_written_pages_only);
        let runtime = runtime(config);
        for guest in [
            common::guests::component("guest_faults"),
            common::guests::no_wasi("guest_faults"),
        ] {
            let module = Module::load_file(&runtime, &guest).expect("faults guest loads");
            for call in 0..3 {
                assert_eq!(
                    copies_left_before(&module, "team-a's secret"),
                    0,
                    "call {call} of {} (reset_written_pages_only: {reset_written_pages_only})",
                    guest.display()
                );
            }
        }
    }
    // The check can fail: an instance that is reused keeps what the last call left.
    let reused = faults_with(
        RuntimeConfig::default()
            .deadline(DEADLINE)
            .reuse_instance_calls(10),
    );
    assert_eq!(copies_left_before(&reused, "team-a's secret"), 0);
    assert!(copies_left_before(&reused, "team-a's secret") > 0);
}

#[test]
fn reused_instances_serve_many_calls_and_are_dropped_after_a_trap() {
    let module = faults_with(
        RuntimeConfig::default()
            .deadline(DEADLINE)
            .reuse_instance_calls(100),
    );
    for _ in 0..5 {
        assert_next_call_works(&module);
    }
    assert!(matches!(
        call_fault(&module, "trap"),
        Err(GuestError::Trap { .. })
    ));
    assert_next_call_works(&module);
}
