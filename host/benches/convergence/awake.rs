//! Keeping the cores awake while measuring. This is what benchmark rigs do when they turn off CPU
//! idle states. On a virtual machine, a vCPU with nothing to run halts, and the next wakeup pays
//! for the halt. The cost lands on whoever runs next, as more CPU time for the same work.
//!
//! Measured on the 2-vCPU machine this benchmark was tuned on, 1000 MyApps:
//! - reconcile-host's guest call took 130 µs per reconcile with the cores left to halt, and 63-84 µs
//!   with them kept awake.
//! - The API server spent 11.6-12.0 s on reconcile-host's requests, against 7.0-7.6 s for the checked
//!   floor's identical requests. Kept awake: 6.6-7.9 s against 6.6-8.1 s.
//!
//! A controller's pipeline (watch event, reconcile, request, watch event) wakes more processes, more
//! often, than the floor's writer. So leaving the cores to halt charged the host for the machine.
//!
//! Each core gets a spinner process under `SCHED_IDLE`: it runs only when nothing else wants that
//! core, and any other process preempts it at once. Its CPU time is not counted with anyone's.
//! `RECONCILE_HOST_BENCH_KEEP_AWAKE=0` measures without spinners.

use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, Result};

/// The spinners; dropping this stops them.
pub struct KeepAwake(Vec<Child>);

/// The flag that makes the benchmark binary a spinner.
pub const FLAG: &str = "--keep-awake";

impl KeepAwake {
    /// One spinner per core, unless `RECONCILE_HOST_BENCH_KEEP_AWAKE=0`.
    pub fn start() -> Result<Option<KeepAwake>> {
        if !enabled() {
            return Ok(None);
        }
        let me = std::env::current_exe()?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spinners = (0..cores)
            .map(|_| {
                Command::new(&me)
                    .arg(FLAG)
                    .stdin(Stdio::null())
                    .spawn()
                    .context("starting a spinner")
            })
            .collect::<Result<_>>()?;
        Ok(Some(KeepAwake(spinners)))
    }
}

/// Whether the cores are kept awake (the report says which).
pub fn enabled() -> bool {
    std::env::var("RECONCILE_HOST_BENCH_KEEP_AWAKE").map_or(true, |v| v != "0")
}

/// The report's first line: whether the cores were kept awake.
pub fn described() -> &'static str {
    if enabled() {
        "The cores are kept awake by idle-priority spinners, whose CPU is counted nowhere (RECONCILE_HOST_BENCH_KEEP_AWAKE=0 to measure without)."
    } else {
        "The cores are left to halt when idle (RECONCILE_HOST_BENCH_KEEP_AWAKE=0): on a virtual machine, each wakeup's cost falls on whoever runs next."
    }
}

impl Drop for KeepAwake {
    fn drop(&mut self) {
        for spinner in &mut self.0 {
            let _ = spinner.kill();
            let _ = spinner.wait();
        }
    }
}

/// A benchmark's `main`: the spinner when this process was started as one (`FLAG`), else `run` on
/// a multi-threaded runtime.
pub fn main_or_spin(run: impl std::future::Future<Output = Result<()>>) -> Result<()> {
    if std::env::args().nth(1).as_deref() == Some(FLAG) {
        return spin();
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run)
}

/// The spinner: lowest scheduling class, dies with the benchmark, spins.
pub fn spin() -> Result<()> {
    let parent = std::os::unix::process::parent_id();
    // SAFETY: plain system calls on the calling thread; `param` outlives the call.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        anyhow::ensure!(
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0,
            "SCHED_IDLE: {}",
            std::io::Error::last_os_error()
        );
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    // Plain arithmetic, not `spin_loop`: its PAUSE instruction tells the hypervisor that this vCPU
    // waits on a lock, and the hypervisor then deschedules it, as if it had halted.
    let mut count = 0u64;
    // The benchmark may have died before the death signal was armed.
    while std::os::unix::process::parent_id() == parent {
        for _ in 0..10_000_000 {
            count = std::hint::black_box(count.wrapping_add(1));
        }
    }
    Ok(())
}
