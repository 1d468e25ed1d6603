//! A hint to the CPU to start loading memory that is about to be read.
//!
//! A Multi's buffered puts were written long before it is formed (an 8 MiB write budget holds
//! about 20,000 of them), so each put's cells are out of the cache when the request copies
//! them. Copied one after another, every put waits for its own miss; told a few puts ahead,
//! the loads overlap.

/// Asks for the first `MAX_LINES` cache lines of `bytes` to be loaded. Does nothing on
/// targets without a prefetch instruction here.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        const LINE: usize = 64;
        const MAX_LINES: usize = 4;
        let start = bytes.as_ptr();
        for line in 0..bytes.len().div_ceil(LINE).min(MAX_LINES) {
            // SAFETY: a prefetch is a hint; it never faults and changes no memory, whatever the
            // address. `wrapping_add` stays within (or one past) `bytes`, so no pointer
            // arithmetic overflows. SSE is part of the x86_64 baseline.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(line * LINE).cast(),
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
