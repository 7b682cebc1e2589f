//! Turning a module's bytes into machine code, in this process or in a child process.
//!
//! The host's commands compile in a child (`reconcile-host compile-module`), because compiling is the
//! one step of loading a module whose cost the module decides:
//! - Cranelift's memory is the compile's, not the host's. A small Rust guest left some 12 MiB resident
//!   in the host (its transient data, and the compiler's code paged in); a JavaScript or Python guest
//!   needs about 400 MiB while it compiles.
//! - A module that makes the compiler run out of memory ends a child, not the host with every
//!   reconciler in it: the child asks the kernel's OOM killer to pick it first, and its own
//!   allocations are capped (`--compile-memory-mib`).
//! - A module that keeps the compiler busy for minutes ends its child when its CPU time is up
//!   (`--compile-cpu-seconds`), instead of burning the cores the reconcilers need.
//! - The host compiles one module at a time: a host starting with several JavaScript reconcilers
//!   would otherwise hold several compiles' memory at once. Each compile uses every core already.
//!
//! The child's artifact is what the artifact cache would hold, checked by wasmtime against this
//! engine when it is loaded. Library users (tests, benchmarks) compile in their own process: only the
//! reconcile-host binary has the `compile-module` command.

use std::borrow::Cow;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use wasmtime::Engine;
use wasmtime::component::Component;

use super::codegen::codegen_config;
use super::error::LoadError;

/// The hidden command of the reconcile-host binary that compiles one module (stdin to stdout).
pub const COMPILE_COMMAND: &str = "compile-module";

/// How modules are compiled. In-process unless a reconcile-host binary can do it for us.
#[derive(Clone, Debug, Default)]
pub enum Compiler {
    #[default]
    InProcess,
    ChildProcess(ChildCompiler),
}

/// A child process of the reconcile-host binary, `program`, that compiles with at most `memory_mib` of
/// data and `cpu_seconds` of CPU time (0: no cap of its own).
#[derive(Clone, Debug)]
pub struct ChildCompiler {
    pub program: PathBuf,
    pub memory_mib: u64,
    pub cpu_seconds: u64,
}

/// Held while a child compiles: one compile at a time in this process (see the module doc).
static ONE_COMPILE_AT_A_TIME: Mutex<()> = Mutex::new(());

impl ChildCompiler {
    /// This very executable as the compiler. Through `/proc/self/exe` where there is one, so that a
    /// binary replaced on disk by an upgrade still compiles with the version that will run the code.
    pub fn this_executable(memory_mib: u64, cpu_seconds: u64) -> ChildCompiler {
        let proc_self = PathBuf::from("/proc/self/exe");
        let program = if proc_self.exists() {
            proc_self
        } else {
            std::env::current_exe().unwrap_or(proc_self)
        };
        ChildCompiler {
            program,
            memory_mib,
            cpu_seconds,
        }
    }
}

/// A compiled module, and its serialized artifact when the compile produced one.
pub(crate) struct Compiled {
    pub(crate) component: Component,
    artifact: Option<Vec<u8>>,
}

impl Compiled {
    /// The bytes the artifact cache stores.
    pub(crate) fn artifact(&self) -> wasmtime::Result<Cow<'_, [u8]>> {
        match &self.artifact {
            Some(bytes) => Ok(Cow::Borrowed(bytes)),
            None => self.component.serialize().map(Cow::Owned),
        }
    }
}

impl Compiler {
    pub(crate) fn compile(&self, engine: &Engine, bytes: &[u8]) -> Result<Compiled, LoadError> {
        match self {
            Compiler::InProcess => {
                let component = Component::new(engine, bytes);
                // Failed or not, the compile's transient memory is free now.
                crate::memory::release_freed_memory();
                Ok(Compiled {
                    component: component.map_err(|e| LoadError::Compile(format!("{e:#}")))?,
                    artifact: None,
                })
            }
            Compiler::ChildProcess(child) => {
                let artifact = child.run(bytes)?;
                // SAFETY: the artifact comes from our own binary's `compile-module` over a pipe we
                // opened, as trusted as the artifact cache's files; wasmtime checks that it was made
                // for this engine's settings.
                let component =
                    unsafe { Component::deserialize(engine, &artifact) }.map_err(|e| {
                        LoadError::Compile(format!(
                            "the compiler process's artifact is unusable: {e:#}"
                        ))
                    })?;
                Ok(Compiled {
                    component,
                    artifact: Some(artifact),
                })
            }
        }
    }
}

impl ChildCompiler {
    /// Runs the child on `bytes`; its artifact, or why there is none.
    fn run(&self, bytes: &[u8]) -> Result<Vec<u8>, LoadError> {
        // A compile that panicked poisoned nothing this lock guards.
        let _turn = ONE_COMPILE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut child = Command::new(&self.program)
            .args([
                COMPILE_COMMAND,
                "--memory-mib",
                &self.memory_mib.to_string(),
                "--cpu-seconds",
                &self.cpu_seconds.to_string(),
            ])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                LoadError::Compile(format!(
                    "cannot start the compiler process {}: {e}",
                    self.program.display()
                ))
            })?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        // Written from a second thread: the child may fail before it has read everything, and its
        // output is read meanwhile. A write error only means the child ended; its status says why.
        let output = std::thread::scope(|scope| {
            scope.spawn(move || stdin.write_all(bytes));
            child.wait_with_output()
        })
        .map_err(|e| LoadError::Compile(format!("waiting for the compiler process: {e}")))?;
        if output.status.success() {
            return Ok(output.stdout);
        }
        let said = String::from_utf8_lossy(&output.stderr);
        Err(LoadError::Compile(self.failure(output.status, said.trim())))
    }

    /// What a failed child's exit status and stderr mean for the user.
    fn failure(&self, status: std::process::ExitStatus, said: &str) -> String {
        use std::os::unix::process::ExitStatusExt;
        if said.contains("memory allocation of") || said.contains("out of memory") {
            let cap = match self.memory_mib {
                0 => String::new(),
                mib => format!(" (its cap is {mib} MiB, --compile-memory-mib)"),
            };
            return format!("the compiler ran out of memory{cap}");
        }
        let said = said.strip_prefix("error: ").unwrap_or(said);
        match status.signal() {
            Some(libc::SIGXCPU) => format!(
                "the compiler used up its CPU time (its cap is {} s, --compile-cpu-seconds)",
                self.cpu_seconds
            ),
            Some(libc::SIGKILL) => "the compiler process was killed (SIGKILL), most likely by the \
                out-of-memory killer: the module needs more memory to compile than the host's container \
                has to spare"
                .into(),
            Some(signal) => format!("the compiler process died of signal {signal}: {said}"),
            None if said.is_empty() => format!("the compiler process failed ({status})"),
            None => said.to_string(),
        }
    }
}

/// The child's side: compiles the module on stdin for an engine like the host's and writes the
/// artifact to stdout; a compile error goes to stderr, worded as an in-process compile would be.
pub fn compile_stdin_to_stdout(memory_mib: u64, cpu_seconds: u64) -> anyhow::Result<()> {
    volunteer_for_the_oom_killer();
    limit(libc::RLIMIT_DATA, memory_mib.saturating_mul(1 << 20))
        .map_err(|e| anyhow::anyhow!("setting the compiler's memory cap: {e}"))?;
    // The kernel sends SIGXCPU when the CPU time is up, and SIGKILL a second later if the process
    // is still there.
    limit(libc::RLIMIT_CPU, cpu_seconds)
        .map_err(|e| anyhow::anyhow!("setting the compiler's CPU time cap: {e}"))?;
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    let engine = Engine::new(&codegen_config()).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let artifact = Component::new(&engine, &bytes)
        .and_then(|component| component.serialize())
        .map_err(|e| anyhow::anyhow!("{e:#}"))?;
    std::io::stdout().lock().write_all(&artifact)?;
    Ok(())
}

/// The kernel's OOM killer picks the process with the highest score first; a compile is the one to
/// lose. Raising one's own score needs no privilege; where it cannot be written, nothing changes.
fn volunteer_for_the_oom_killer() {
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
}

/// Caps this process's `resource` at `value` (0: no cap): `RLIMIT_DATA` (heap and anonymous
/// mappings, not code) in bytes, `RLIMIT_CPU` in seconds, the hard limit one unit above the soft one.
fn limit(resource: libc::__rlimit_resource_t, value: u64) -> std::io::Result<()> {
    if value == 0 {
        return Ok(());
    }
    let limit = libc::rlimit {
        rlim_cur: value as libc::rlim_t,
        rlim_max: value.saturating_add(1) as libc::rlim_t,
    };
    // SAFETY: `setrlimit` reads the struct we pass and nothing else.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
