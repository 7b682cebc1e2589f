//! The `remember` fault: leaves a marker in every kind of linear memory a guest has, and counts the
//! markers an earlier call left, so that the host's tests can tell a fresh instance from one that
//! carries what the last parent's call wrote.

use std::sync::Mutex;

/// Static data with a non-zero initial value: it lives in the module's data image, which resetting an
/// instance must restore rather than zero.
static IMAGE: Mutex<[u8; 64]> = Mutex::new([b'.'; 64]);

/// Heap memory past the initial memory and past what the host keeps resident between instances
/// (`KEEP_RESIDENT_BYTES`, 256 KiB), so that the instance must grow its memory to hold it.
const HEAP_BYTES: usize = 512 << 10;

/// How many copies of `marker` the linear memory holds besides `marker` itself, then leaves copies of
/// it in the data image and on the heap, most of them in memory grown for them.
pub(crate) fn count_then_leave(marker: &[u8]) -> usize {
    let seen = copies_in_memory(marker);
    let mut image = IMAGE.lock().unwrap();
    image[..marker.len().min(64)].copy_from_slice(&marker[..marker.len().min(64)]);
    let mut heap = marker.repeat(HEAP_BYTES / marker.len().max(1));
    heap.shrink_to_fit();
    std::mem::forget(heap);
    seen
}

/// Counts the places in linear memory that hold `marker`, other than `marker`'s own bytes.
fn copies_in_memory(marker: &[u8]) -> usize {
    let end = linear_memory_end();
    let own = marker.as_ptr() as usize;
    // Address 0 is never data (the stack starts above it); reading from 1 keeps the pointers non-null.
    (1..end.saturating_sub(marker.len()))
        .filter(|&address| address != own)
        .filter(|&address| {
            // SAFETY: every address below `memory_size` is in bounds; the bytes are only read, one at
            // a time, volatile so that the compiler does not assume what they hold.
            (0..marker.len()).all(|i| unsafe {
                core::ptr::read_volatile((address + i) as *const u8) == marker[i]
            })
        })
        .count()
}

/// Where linear memory ends.
#[cfg(target_arch = "wasm32")]
fn linear_memory_end() -> usize {
    core::arch::wasm32::memory_size::<0>() * (64 << 10)
}

/// Built natively (the guests' `cargo test`), the crate has no linear memory to scan.
#[cfg(not(target_arch = "wasm32"))]
fn linear_memory_end() -> usize {
    0
}
