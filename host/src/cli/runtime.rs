//! The guest runtime's flags, shared by every command that calls a guest.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::guest::{ChildCompiler, Compiler, RuntimeConfig};

/// Limits of each guest call, shared by `render`, `conformance` and `run`.
#[derive(Clone, Debug, Args)]
pub struct RuntimeArgs {
    /// Deadline of one guest call, in milliseconds.
    #[arg(long, env = "RECONCILE_HOST_GUEST_DEADLINE_MS", default_value_t = 1000)]
    pub guest_deadline_ms: u64,
    /// Memory cap of one guest instance, in MiB.
    #[arg(long, env = "RECONCILE_HOST_GUEST_MEMORY_MIB", default_value_t = 64)]
    pub guest_memory_mib: usize,
    /// Linear memory of all guest instances together, in MiB: calls wait for it, up to their deadline.
    /// Keep it plus the host's own memory (~100 MiB) under the container's memory limit.
    #[arg(
        long,
        env = "RECONCILE_HOST_GUEST_MEMORY_BUDGET_MIB",
        default_value_t = 256
    )]
    pub guest_memory_budget_mib: usize,
    /// Cap on what one guest call may return (children + status), in KiB.
    #[arg(
        long,
        env = "RECONCILE_HOST_GUEST_MAX_OUTPUT_KIB",
        default_value_t = 4096
    )]
    pub guest_max_output_kib: usize,
    /// Cap on the status one guest call may return, in KiB: refused before any API call, well inside
    /// what the API server takes for a whole object.
    #[arg(
        long,
        env = "RECONCILE_HOST_GUEST_MAX_STATUS_KIB",
        default_value_t = 64
    )]
    pub guest_max_status_kib: usize,
    /// Directory for compiled modules, so restarts skip compilation.
    #[arg(long, env = "RECONCILE_HOST_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Cap on the memory one module's compile may take, in MiB (0: none). Modules compile in a child
    /// process, which the out-of-memory killer picks first: a module too big to compile fails to
    /// load, the host keeps running. JavaScript and Python guests need about 450 MiB.
    #[arg(
        long,
        env = "RECONCILE_HOST_COMPILE_MEMORY_MIB",
        default_value_t = 1024
    )]
    pub compile_memory_mib: u64,
    /// Cap on the CPU time one module's compile may take, in seconds (0: none). A JavaScript or
    /// Python guest takes 12-15; a module that would keep the compiler busy longer fails to load.
    #[arg(
        long,
        env = "RECONCILE_HOST_COMPILE_CPU_SECONDS",
        default_value_t = 120
    )]
    pub compile_cpu_seconds: u64,
    /// Reuse an instance for this many calls (0: a fresh instance per call, the safe default).
    #[arg(long, env = "RECONCILE_HOST_REUSE_INSTANCE_CALLS", default_value_t = 0)]
    pub reuse_instance_calls: u32,
}

impl RuntimeArgs {
    pub fn config(&self) -> RuntimeConfig {
        RuntimeConfig::default()
            .deadline(Duration::from_millis(self.guest_deadline_ms))
            .memory_limit(self.guest_memory_mib << 20)
            .memory_budget(self.guest_memory_budget_mib << 20)
            .max_output_bytes(self.guest_max_output_kib << 10)
            .max_status_bytes(self.guest_max_status_kib << 10)
            .cache_dir(self.cache_dir.clone())
            .compiler(Compiler::ChildProcess(ChildCompiler::this_executable(
                self.compile_memory_mib,
                self.compile_cpu_seconds,
            )))
            .reuse_instance_calls(self.reuse_instance_calls)
    }
}
