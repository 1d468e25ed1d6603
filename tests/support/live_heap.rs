//! A global allocator that counts the bytes live on the heap and their high-water mark, so a
//! memory test measures what the client holds instead of arguing it from the code.
//!
//! Each test binary that measures declares its own allocator (Rust allows one per binary):
//!
//! ```text
//! #[global_allocator]
//! static HEAP: hbase_it::live_heap::LiveBytes = hbase_it::live_heap::LiveBytes;
//! ```
//!
//! The counts are of the whole process: a binary that measures runs one measurement at a
//! time, so no other test's allocations mix into a count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes it has handed out and not yet taken back.
pub struct LiveBytes;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed to `System` unchanged; the counters only observe sizes.
unsafe impl GlobalAlloc for LiveBytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

/// Bytes live on the heap now (zero unless [`LiveBytes`] is the binary's allocator).
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a measurement: the peak restarts from what is live now, which is returned.
pub fn start() -> usize {
    let base = live();
    PEAK.store(base, Ordering::Relaxed);
    base
}

/// The heap's high-water mark since [`start`] returned `base`, above `base`.
pub fn peak_above(base: usize) -> usize {
    PEAK.load(Ordering::Relaxed).saturating_sub(base)
}
