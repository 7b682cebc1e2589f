//! Limits and knobs of the guest runtime, with a builder so that callers set only what they change.

use std::path::PathBuf;
use std::time::Duration;

use super::compile::Compiler;

/// How each guest call is bounded and how modules are compiled and cached.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Wall-clock budget of one reconcile call; a guest still running then is interrupted.
    pub deadline: Duration,
    /// Linear memory cap of one instance; growing past it traps.
    pub memory_limit: usize,
    /// Linear memory of all live instances together (see `budget`); only the host's runtime's counts,
    /// the runtimes derived from it share its budget.
    pub memory_budget: usize,
    /// Cap on the bytes a guest may return (children + status), checked before parsing.
    pub max_output_bytes: usize,
    /// Cap on the status a guest may return; a status is one field of the parent, and the API server's
    /// own size error (at ~1.5 MiB for the whole object) would be no message for a user.
    pub max_status_bytes: usize,
    /// Cap on what a guest may write to stdout/stderr and `log` in one call; the rest is dropped.
    pub max_log_bytes: usize,
    /// Where compiled artifacts are kept across restarts; `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// Where modules are compiled: in this process, or in a child process of the reconcile-host binary.
    pub compiler: Compiler,
    /// Instances that may be alive at once (the pooling allocator reserves this many slots).
    pub max_instances: u32,
    /// When an instance ends, reset only the pages it wrote (Linux's `PAGEMAP_SCAN`, where the kernel
    /// has it) instead of every byte of its memory up to `KEEP_RESIDENT_BYTES`: a call never writes
    /// most of its stack or data image. Off only to measure what it saves (`make bench`).
    pub reset_written_pages_only: bool,
    /// Reuse one instance for up to this many calls instead of a fresh one per call (0 = always fresh).
    /// Only for heavy runtimes (JS, Python): a reused instance can carry state from one parent to the next.
    pub reuse_instance_calls: u32,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            deadline: Duration::from_secs(1),
            memory_limit: 64 << 20,
            memory_budget: 256 << 20,
            max_output_bytes: 4 << 20,
            max_status_bytes: 64 << 10,
            max_log_bytes: 64 << 10,
            cache_dir: None,
            compiler: Compiler::InProcess,
            max_instances: 64,
            reset_written_pages_only: true,
            reuse_instance_calls: 0,
        }
    }
}

impl RuntimeConfig {
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = bytes;
        self
    }
    pub fn memory_budget(mut self, bytes: usize) -> Self {
        self.memory_budget = bytes;
        self
    }
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }
    pub fn max_status_bytes(mut self, bytes: usize) -> Self {
        self.max_status_bytes = bytes;
        self
    }
    pub fn cache_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.cache_dir = dir;
        self
    }
    pub fn compiler(mut self, compiler: Compiler) -> Self {
        self.compiler = compiler;
        self
    }
    pub fn max_instances(mut self, count: u32) -> Self {
        self.max_instances = count;
        self
    }
    pub fn reset_written_pages_only(mut self, enabled: bool) -> Self {
        self.reset_written_pages_only = enabled;
        self
    }
    pub fn reuse_instance_calls(mut self, calls: u32) -> Self {
        self.reuse_instance_calls = calls;
        self
    }
}
