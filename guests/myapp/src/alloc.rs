//! The allocator of the component built without WASI (`wasm32-unknown-unknown`): talc, fed first with
//! the end of the initial linear memory, then with pages from `memory.grow`.
//!
//! Rust's default there (dlmalloc) takes every byte from `memory.grow` and leaves the rest of the
//! initial memory unused, so every fresh instance grew its memory for its first allocation, which in
//! the host is a page-protection change and fresh page faults on every call: measured, a fresh call
//! took 16-18 µs with dlmalloc and 9.8-10.8 µs with this.
//! wasi-libc's allocator (the `wasm32-wasip2` build) starts at `__heap_base` too, and a MyApp call fits
//! in what is left of the initial 2 pages.

use core::alloc::Layout;
use core::arch::wasm32::{memory_grow, memory_size};
use core::ptr::NonNull;

use talc::base::Talc;
use talc::base::binning::Binning;
use talc::cell::TalcSyncCell;
use talc::source::Source;
use talc::wasm::WasmBinning;

const PAGE: usize = 64 << 10;

#[global_allocator]
static TALC: TalcSyncCell<InitialThenGrow, WasmBinning> =
    TalcSyncCell::new_wasm(InitialThenGrow { end: None });

unsafe extern "C" {
    /// Where the linker ends the stack and the static data: the heap may start here.
    static __heap_base: u8;
}

/// The heap's memory: the initial memory after `__heap_base`, extended by `memory.grow` as needed.
#[derive(Debug)]
pub struct InitialThenGrow {
    /// The end of the heap, once claimed.
    end: Option<NonNull<u8>>,
}

// SAFETY: `acquire` touches the allocator only through `talc`, allocates nothing, and claims memory
// that nothing else uses: past the static data and stack, or just grown.
unsafe impl Source for InitialThenGrow {
    fn acquire<B: Binning>(talc: &mut Talc<Self, B>, layout: Layout) -> Result<(), ()> {
        let memory_end = memory_size::<0>() * PAGE;
        if talc.source.end.is_none() {
            let base = (&raw const __heap_base).cast_mut();
            let size = memory_end.saturating_sub(base as usize);
            // SAFETY: [__heap_base, end of memory) belongs to no static, no stack and no other heap.
            talc.source.end = unsafe { talc.claim(base, size) };
            if talc.source.end.is_some() {
                return Ok(());
            }
        }
        // Enough for the allocation with its alignment and the allocator's bookkeeping.
        let pages = (layout.size() + layout.align() + 256).div_ceil(PAGE);
        let previous = memory_grow::<0>(pages);
        if previous == usize::MAX {
            return Err(());
        }
        let base = (previous * PAGE) as *mut u8;
        let new_end = base.wrapping_add(pages * PAGE);
        talc.source.end = match talc.source.end {
            // SAFETY: the heap ends where memory ended, and the memory after it was just grown.
            Some(end) if end.as_ptr() == base => Some(unsafe { talc.extend(end, new_end) }),
            // SAFETY: freshly grown memory, used by nothing else.
            _ => unsafe { talc.claim(base, pages * PAGE) },
        };
        if talc.source.end.is_none() {
            return Err(());
        }
        Ok(())
    }
}
