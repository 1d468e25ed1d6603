//! A hint to the CPU to start loading memory that is about to be read.
//!
//! A Multi's buffered puts were written long before it is formed (ycsb's 8 MiB write budget
//! holds about 20,000 YCSB updates), so each put's cells are out of the cache when the request
//! copies them. Copied one after another, every put waits for its own miss; told a few puts ahead,
//! the loads overlap.

/// Asks for `bytes` to be loaded: the cache lines it touches, at most `MAX_LINES` of them from
/// its start. Does nothing on targets other than x86_64.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        const LINE: usize = 64;
        const MAX_LINES: usize = 4;
        if bytes.is_empty() {
            return;
        }
        let start = bytes.as_ptr();
        // From the line `start` is on: a slice not starting on a line touches one more.
        let lead = start as usize % LINE;
        for line in 0..(lead + bytes.len()).div_ceil(LINE).min(MAX_LINES) {
            // SAFETY: a prefetch is a hint; it never faults and changes no memory, whatever the
            // address. `wrapping_*` keeps the pointer arithmetic defined even where the
            // address (the start of `start`'s line, at most 63 bytes before it) is outside
            // `bytes`. SSE is part of the x86_64 baseline.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_sub(lead).wrapping_add(line * LINE).cast(),
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
