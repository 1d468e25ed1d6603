//! A hint to the CPU to start loading memory that is about to be read.
//!
//! A Multi's buffered puts were written long before it is formed (ycsb's 8 MiB write budget
//! holds about 20,000 YCSB updates), so each put's cells are out of the cache when the request
//! copies them. Copied one after another, every put waits for its own miss; told a few puts ahead,
//! the loads overlap. The same holds when the answered puts are freed: freeing reads and writes
//! the allocator's bookkeeping beside each buffer, out of the cache by then too. And with
//! thousands of mutators, the one each answer is settled to is out of the cache as well.

/// Asks for `bytes` to be loaded: the cache lines it touches, at most `MAX_LINES` of them from
/// its start. Does nothing on targets other than x86_64.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    prefetch_lines(bytes.as_ptr(), bytes.len());
}

/// Asks for `object` to be loaded, as [`prefetch`] does for bytes (its size read through its
/// vtable when it is a trait object).
#[inline(always)]
pub(crate) fn prefetch_object<T: ?Sized>(object: &T) {
    prefetch_lines(
        (object as *const T).cast::<u8>(),
        std::mem::size_of_val(object),
    );
}

/// The cache lines the `len` bytes at `start` touch, at most `MAX_LINES` of them from the
/// first.
#[inline(always)]
fn prefetch_lines(start: *const u8, len: usize) {
    const MAX_LINES: usize = 4;
    if len == 0 {
        return;
    }
    // From the line `start` is on: a range not starting on a line touches one more.
    let lead = start as usize % LINE;
    for line in 0..(lead + len).div_ceil(LINE).min(MAX_LINES) {
        prefetch_line(start.wrapping_sub(lead).wrapping_add(line * LINE));
    }
}

/// Asks for the allocator's bookkeeping around the heap buffer `capacity` bytes long at
/// `start` to be loaded: most of what freeing it reads and writes (not the links of free
/// neighbours it merges with, which are elsewhere). For glibc's allocator that is the
/// buffer's own header (the 8 bytes before it) and first bytes (a freed chunk's links), and
/// the size field of the chunk after it (freeing merges with a free neighbour), which lies
/// somewhere in the 16 bytes from the buffer's end. Other allocators keep other bookkeeping;
/// for them this loads lines that freeing may not need, which costs little.
#[inline(always)]
pub(crate) fn prefetch_for_free(start: *const u8, capacity: usize) {
    if capacity == 0 {
        return;
    }
    prefetch_span(start.wrapping_sub(8), 16);
    prefetch_span(start.wrapping_add(capacity), 16);
}

/// Asks for the one or two lines holding the `len` bytes (1 to a line's worth) at `at`.
#[inline(always)]
fn prefetch_span(at: *const u8, len: usize) {
    debug_assert!((1..=LINE).contains(&len));
    prefetch_line(at);
    let last = at.wrapping_add(len - 1);
    if last as usize / LINE != at as usize / LINE {
        prefetch_line(last);
    }
}

const LINE: usize = 64;

/// Asks for the cache line holding `at` to be loaded. Does nothing on targets other than
/// x86_64.
#[inline(always)]
fn prefetch_line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults and changes no memory, whatever the
    // address (callers compute addresses with `wrapping_*`, so the arithmetic is defined even
    // outside an allocation). SSE is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
