//! A hint to the CPU to start loading memory that is about to be read.
//!
//! A Multi's buffered puts were written long before it is formed (ycsb's 8 MiB write budget
//! holds about 20,000 YCSB updates), so each put's cells are out of the cache when the request
//! copies them. Copied one after another, every put waits for its own miss; told a few puts ahead,
//! the loads overlap.

/// Asks for `bytes` to be loaded, `MAX_LINES` lines' worth from its start (one line short
/// when `bytes` does not start on a line). Does nothing on targets other than x86_64.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        const LINE: usize = 64;
        const MAX_LINES: usize = 4;
        let start = bytes.as_ptr();
        for line in 0..bytes.len().div_ceil(LINE).min(MAX_LINES) {
            // SAFETY: a prefetch is a hint; it never faults and changes no memory, whatever the
            // address. The address is within `bytes` (`line * LINE < bytes.len()`). SSE is
            // part of the x86_64 baseline.
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
