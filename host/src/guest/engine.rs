//! The process-wide wasmtime engine: one per process because compiled code, the instance pool and the
//! epoch clock are shared by every module and every call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::{Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::bindings;
use super::budget::MemoryBudget;
use super::codegen::codegen_config;
use super::config::RuntimeConfig;
use super::state::GuestState;

/// How often the epoch advances; deadlines are counted in these ticks.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Memory reset by `memset` instead of `madvise` when an instance slot is reused. A small guest touches
/// about this much (stack, data, a little heap): keeping it resident avoids a page fault per page on the
/// next call, which is most of what a fresh instance costs.
const KEEP_RESIDENT_BYTES: usize = 256 << 10;

/// Engine, linker and epoch ticker, built once. Cheap to share (`Arc`).
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<GuestState>,
    pub(crate) config: RuntimeConfig,
    pub(crate) budget: Arc<MemoryBudget>,
    ticker: Arc<EpochTicker>,
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Arc<Runtime>> {
        if config.memory_limit > config.memory_budget {
            anyhow::bail!(
                "a guest memory limit of {} MiB exceeds the guests' memory budget of {} MiB",
                config.memory_limit >> 20,
                config.memory_budget >> 20
            );
        }
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(config.max_instances)
            .total_core_instances(config.max_instances * 8)
            .total_memories(config.max_instances * 4)
            .total_tables(config.max_instances * 8)
            .max_memory_size(config.memory_limit)
            .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
            .table_keep_resident(16 << 10)
            .pagemap_scan(match config.reset_written_pages_only {
                true => Enabled::Auto,
                false => Enabled::No,
            });

        let mut wasm = codegen_config();
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm).map_err(|e| anyhow::anyhow!("wasmtime engine: {e:?}"))?;

        let mut linker = Linker::new(&engine);
        // WASI with no capabilities: guests built by ordinary toolchains import it even when they
        // never call it. No preopens, no env, no args, no network; stdio is captured per call.
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking WASI: {e:?}"))?;
        bindings::add_to_linker(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking the log interface: {e:?}"))?;

        Ok(Arc::new(Runtime {
            ticker: EpochTicker::start(engine.clone()),
            engine,
            linker,
            budget: MemoryBudget::new(config.memory_budget),
            config,
        }))
    }

    /// The same engine, instance pool and clock with other per-call limits: how one host gives each
    /// of its reconcilers its own deadline, memory cap and output cap without a second engine (each
    /// costs a pool reservation and a ticker thread). The memory cap cannot exceed the pool's slots.
    pub fn with_limits(self: &Arc<Self>, config: RuntimeConfig) -> anyhow::Result<Arc<Runtime>> {
        if config.memory_limit > self.config.memory_limit {
            anyhow::bail!(
                "a guest memory limit of {} MiB exceeds the host's {} MiB",
                config.memory_limit >> 20,
                self.config.memory_limit >> 20
            );
        }
        Ok(Arc::new(Runtime {
            engine: self.engine.clone(),
            linker: self.linker.clone(),
            config: RuntimeConfig {
                max_instances: self.config.max_instances,
                reset_written_pages_only: self.config.reset_written_pages_only,
                cache_dir: self.config.cache_dir.clone(),
                compiler: self.config.compiler.clone(),
                memory_budget: self.config.memory_budget,
                ..config
            },
            budget: self.budget.clone(),
            ticker: self.ticker.clone(),
        }))
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The memory budget shared by every call of this runtime and of those derived from it.
    pub fn memory_budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// The deadline in epoch ticks, rounded up, plus one: the current tick is already partly over, so
    /// without it a guest could be interrupted up to one tick before its deadline.
    pub(crate) fn deadline_ticks(&self) -> u64 {
        let ticks = self
            .config
            .deadline
            .as_nanos()
            .div_ceil(EPOCH_TICK.as_nanos());
        ticks as u64 + 1
    }
}

/// The thread that advances the engine's epoch; it stops when the last runtime sharing it is dropped.
/// A plain thread, not a tokio task: the clock must tick even when every runtime worker is busy, and
/// `render` and the benchmarks run without tokio.
struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    fn start(engine: Engine) -> Arc<EpochTicker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .expect("spawning the epoch ticker thread");
        Arc::new(EpochTicker { stop })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
