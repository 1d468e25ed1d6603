//! `ycsb`: a YCSB-compatible benchmark driver for HBase. The logic is in the library.

fn main() {
    tune_allocator();
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ycsb::main_with_args(args));
}

/// glibc's fast bins off: a buffered writer's mutations are allocated one at a time and their
/// answers free them thousands at a time, and every later large allocation then merged all
/// those fast-bin chunks at once (`malloc_consolidate`, 5% of the update profile). Without fast
/// bins a freed chunk merges when it is freed. Update only, 32 threads, pinned, 4 pairs: 0.95x
/// the CPU per update (0.87-0.97); workload C unchanged (1.00). mimalloc was also tried: 0.84x
/// per update, but 30-40 MiB more RSS and an UPDATE p99 of 11-14 µs against 4-6 (README,
/// "Round 8"). The library leaves the allocator to the application.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any other thread
    // exists.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}
