//! The per-call store data: a WASI context with no capabilities, the memory limiter, and the log
//! routing that tags every guest line with the parent being reconciled.

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::{Level, LevelV0_1, log, log_v0_1, types, types_v0_1};
use super::budget::Reservation;
use super::stdio::CapturedOutput;
use crate::text::truncate;

/// Everything a guest may touch from the host, rebuilt for every call so that nothing leaks between
/// parents. Building it costs about a microsecond.
pub struct GuestState {
    /// No capabilities; `None` until the guest's first WASI call.
    wasi: Option<WasiCtx>,
    table: ResourceTable,
    pub(crate) memory: MemoryCap,
    stdout: CapturedOutput,
    stderr: CapturedOutput,
    /// Which parent this call is for, so that guest log lines can be traced back to it.
    tag: String,
    log_budget: usize,
    max_log_bytes: usize,
    /// The call's last `error`-level log line (at most [`MAX_LAST_ERROR`] bytes): what a guest without
    /// stderr (built without WASI) said before it trapped, e.g. its panic message.
    pub(crate) last_error: String,
}

/// How much of the last error-level log line is kept for the trap message.
const MAX_LAST_ERROR: usize = 4096;

/// A memory limiter: the instance's own cap, then the host-wide budget. It remembers which refused, so
/// that the trap it causes is reported as what it is.
pub(crate) struct MemoryCap {
    pub(crate) limit: usize,
    pub(crate) exceeded: bool,
    pub(crate) reservation: Reservation,
    pub(crate) budget_exhausted: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.exceeded = true;
            return Err(wasmtime::format_err!(
                "guest memory limit of {} bytes exceeded",
                self.limit
            ));
        }
        if !self.reservation.grow(desired.saturating_sub(current)) {
            self.budget_exhausted = true;
            return Err(wasmtime::format_err!(
                "the guests' memory budget of {} bytes stayed spent until the deadline",
                self.reservation.budget()
            ));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

impl GuestState {
    pub(crate) fn new(
        tag: String,
        memory_limit: usize,
        reservation: Reservation,
        max_log_bytes: usize,
    ) -> GuestState {
        let stdout = CapturedOutput::new(max_log_bytes);
        let stderr = CapturedOutput::new(max_log_bytes);
        GuestState {
            wasi: None,
            table: ResourceTable::new(),
            memory: MemoryCap {
                limit: memory_limit,
                exceeded: false,
                reservation,
                budget_exhausted: false,
            },
            stdout,
            stderr,
            tag,
            log_budget: max_log_bytes,
            max_log_bytes,
            last_error: String::new(),
        }
    }

    /// Readies a reused instance's state for a call for another parent, within `deadline`.
    pub fn retag(&mut self, tag: String, deadline: std::time::Duration) {
        self.memory.reservation.rearm(deadline);
        self.tag = tag;
        self.log_budget = self.max_log_bytes;
        self.last_error.clear();
    }

    /// Moves what the guest printed during the call into the host's log, one event per line, and
    /// returns what it wrote to stderr (where a panicking guest says why).
    pub fn flush_stdio(&mut self) -> String {
        let mut stderr = String::new();
        for (stream, output) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let drained = output.drain();
            let text = String::from_utf8_lossy(&drained.kept);
            for line in text.lines() {
                tracing::info!(target: "guest", parent = %self.tag, stream, "{line}");
            }
            if drained.dropped > 0 {
                tracing::warn!(target: "guest", parent = %self.tag, stream, dropped_bytes = drained.dropped,
                    "guest output over {} bytes in one call; dropped the rest", self.max_log_bytes);
            }
            if stream == "stderr" {
                stderr = text.into_owned();
            }
        }
        stderr
    }
}

impl WasiView for GuestState {
    /// The WASI context, built on the guest's first WASI call (about a microsecond): a guest built
    /// without WASI, or one that never calls it, does not pay for it.
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let (stdout, stderr) = (&self.stdout, &self.stderr);
        let wasi = self.wasi.get_or_insert_with(|| {
            WasiCtxBuilder::new()
                .stdout(stdout.clone())
                .stderr(stderr.clone())
                .allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false)
                .build()
        });
        WasiCtxView {
            ctx: wasi,
            table: &mut self.table,
        }
    }
}

impl log::Host for GuestState {
    fn emit(&mut self, level: Level, message: String) {
        if level == Level::Error {
            // Kept even past the log budget: it is bounded, and it may be the only word on a trap.
            self.last_error = truncate(message.clone(), MAX_LAST_ERROR);
        }
        if self.log_budget == 0 {
            return;
        }
        if message.len() > self.log_budget {
            self.log_budget = 0;
            tracing::warn!(target: "guest", parent = %self.tag, "guest log budget exhausted; dropping the rest");
            return;
        }
        self.log_budget -= message.len();
        let parent = &self.tag;
        match level {
            Level::Trace => tracing::trace!(target: "guest", %parent, "{message}"),
            Level::Debug => tracing::debug!(target: "guest", %parent, "{message}"),
            Level::Info => tracing::info!(target: "guest", %parent, "{message}"),
            Level::Warn => tracing::warn!(target: "guest", %parent, "{message}"),
            Level::Error => tracing::error!(target: "guest", %parent, "{message}"),
        }
    }
}

/// A 0.1.0 guest's log goes the same way: the interface did not change, only its version.
impl log_v0_1::Host for GuestState {
    fn emit(&mut self, level: LevelV0_1, message: String) {
        let level = match level {
            LevelV0_1::Trace => Level::Trace,
            LevelV0_1::Debug => Level::Debug,
            LevelV0_1::Info => Level::Info,
            LevelV0_1::Warn => Level::Warn,
            LevelV0_1::Error => Level::Error,
        };
        log::Host::emit(self, level, message)
    }
}

/// The `types` interfaces have no functions; the generated bindings still ask for their (empty) host
/// traits.
impl types::Host for GuestState {}
impl types_v0_1::Host for GuestState {}
