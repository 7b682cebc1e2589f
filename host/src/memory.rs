//! How the host keeps glibc's allocator from holding memory it no longer uses (a no-op on other C
//! libraries, whose allocators do not keep per-thread arenas this way). Measured at 1000 MyApps in
//! `make bench` (see the README's Performance section).
//!
//! - A compile: Cranelift allocates some 13 MiB of transient data compiling even a small Rust guest, on
//!   the blocking thread that loads the module. glibc keeps what is freed in that thread's arena, where
//!   the rest of the host (its caches fill on the runtime's workers, in other arenas) never reuses it,
//!   so without a trim the compile at start stayed resident for the life of the process.
//! - Arenas: glibc gives a contending thread an arena of its own, up to 8 per core, and each keeps its
//!   freed memory. Guest calls run on tokio's blocking threads, one per call in flight (16 by
//!   default), so the host's small allocations were spread over up to 16 arenas, each holding free
//!   pages the others could not use. One arena per core is enough threads running at once to allocate
//!   without waiting on each other.

/// Returns the free pages of every malloc arena to the system (glibc's `malloc_trim`): after a compile.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointers and locks each arena itself: callable from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Caps glibc's malloc arenas at one per core, unless `MALLOC_ARENA_MAX` is set (glibc reads it
/// itself: the way to trade memory back for less allocator contention). Called before the runtime's
/// threads start.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` takes no pointers; it only sets a limit that later arena creation reads.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}
