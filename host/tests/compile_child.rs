//! Modules compiled in a child process of the reconcile-host binary, as its commands compile them: the
//! same answers and errors as an in-process compile, a compile over its memory or CPU time cap refused
//! while the host goes on, one compile at a time, and artifacts the host's engine takes from the cache.

mod common;

use std::path::{Path, PathBuf};

use reconcile_host::guest::{ChildCompiler, Compiler, LoadError, Module, Runtime, RuntimeConfig};

fn in_a_child(memory_mib: u64) -> RuntimeConfig {
    with_compiler(env!("CARGO_BIN_EXE_reconcile-host"), memory_mib, 0)
}

fn with_compiler(program: impl Into<PathBuf>, memory_mib: u64, cpu_seconds: u64) -> RuntimeConfig {
    RuntimeConfig::default().compiler(Compiler::ChildProcess(ChildCompiler {
        program: program.into(),
        memory_mib,
        cpu_seconds,
    }))
}

/// Loads `bytes` expecting the compile to be refused; what the refusal says.
fn refused(config: RuntimeConfig, bytes: &[u8]) -> String {
    let err = load(config, bytes).map(|_| ()).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, LoadError::Compile(_)), "{message}");
    message
}

/// An executable shell script `name` in `dir`, standing in for the compiler.
fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&path, executable).unwrap();
    path
}

fn load(config: RuntimeConfig, bytes: &[u8]) -> Result<std::sync::Arc<Module>, LoadError> {
    Module::load(&Runtime::new(config).expect("runtime"), bytes)
}

fn myapp() -> Vec<u8> {
    std::fs::read(common::guests::component("guest_myapp")).unwrap()
}

#[test]
fn a_module_compiled_in_a_child_process_matches_every_fixture() {
    common::conformance::assert_conforms(&common::guests::component("guest_myapp"), in_a_child(0));
}

#[test]
fn a_module_that_does_not_compile_says_why_as_it_would_in_process() {
    let truncated = &myapp()[..100];
    let in_process = load(RuntimeConfig::default(), truncated)
        .map(|_| ())
        .unwrap_err();
    let in_child = load(in_a_child(0), truncated).map(|_| ()).unwrap_err();
    assert!(matches!(in_child, LoadError::Compile(_)), "{in_child}");
    assert_eq!(in_child.to_string(), in_process.to_string());
}

#[test]
fn a_compile_over_its_memory_cap_fails_to_load_and_the_next_one_loads() {
    // The MyApp guest needs more than 16 MiB to compile (about 13 MiB of Cranelift's data alone).
    let message = refused(in_a_child(16), &myapp());
    assert!(
        message.contains("ran out of memory") && message.contains("16 MiB"),
        "{message}"
    );
    load(in_a_child(256), &myapp()).expect("loads with room to compile");
}

#[test]
fn a_child_compiled_artifact_is_cached_for_the_hosts_engine() {
    let cache = tempfile::tempdir().unwrap();
    let cached = |compiler: Compiler| {
        RuntimeConfig::default()
            .cache_dir(Some(cache.path().to_path_buf()))
            .compiler(compiler)
    };
    let first = load(cached(in_a_child(0).compiler), &myapp()).expect("compiles in a child");
    // No compiler at all now: the module can only come from the artifact the child made.
    let unable = ChildCompiler {
        program: PathBuf::from("/nonexistent/reconcile-host"),
        memory_mib: 0,
        cpu_seconds: 0,
    };
    let err = load(
        in_a_child(0).compiler(Compiler::ChildProcess(unable.clone())),
        &myapp(),
    )
    .map(|_| ())
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot start the compiler process"),
        "{err}"
    );
    let second = load(cached(Compiler::ChildProcess(unable)), &myapp()).expect("from the cache");
    assert_eq!(first.digest(), second.digest());
}

#[test]
fn a_compiler_killed_by_the_kernel_is_reported_as_out_of_memory_and_the_next_one_loads() {
    // What the OOM killer does to a compile that outgrows the container: SIGKILL, nothing said.
    let dir = tempfile::tempdir().unwrap();
    let killed = script(dir.path(), "killed-compiler", "#!/bin/sh\nkill -9 $$\n");
    let message = load(with_compiler(killed, 0, 0), &myapp())
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("killed (SIGKILL)") && message.contains("out-of-memory killer"),
        "{message}"
    );
    load(in_a_child(0), &myapp()).expect("the next compile loads");
}

#[test]
fn a_compile_over_its_cpu_time_cap_fails_to_load_and_the_next_one_loads() {
    // The JavaScript guest takes about 15 s of CPU to compile.
    let js = std::fs::read(common::guests::myapp_js()).unwrap();
    let compiler = with_compiler(env!("CARGO_BIN_EXE_reconcile-host"), 0, 1);
    let message = refused(compiler, &js);
    assert!(
        message.contains("used up its CPU time") && message.contains("1 s"),
        "{message}"
    );
    load(in_a_child(0), &myapp()).expect("the next compile loads");
}

#[test]
fn compiles_in_one_process_take_turns() {
    // Two loads at once, each with a compiler that logs when it starts and ends: the second
    // starts only after the first has ended.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let text = format!(
        "#!/bin/sh\necho start >> {log}\nsleep 0.5\necho end >> {log}\nexit 1\n",
        log = log.display()
    );
    let logging = script(dir.path(), "logging-compiler", &text);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            let config = with_compiler(logging.clone(), 0, 0);
            scope.spawn(move || load(config, &myapp()).map(|_| ()).unwrap_err());
        }
    });
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log, "start\nend\nstart\nend\n");
}
