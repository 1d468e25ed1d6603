//! The floor for client-added latency (`benches/latency/run`): the round trip of a trivial
//! TCP echo over loopback on this machine, blocking sockets on two threads, no framing, no
//! allocation. The request is `ECHO_REQUEST` bytes (default 100, about a get's request) and the
//! reply `ECHO_REPLY` bytes (default 1,200, about a 10 × 100 B row's response). Prints the
//! round-trip percentiles in microseconds after `ECHO_WARMUP` round trips (default 2,000)
//! over `ECHO_OPS` (default 20,000). With `ECHO_SERVER_CPU=N` the echo thread runs on CPU N
//! only, so that a pinned run (client on one core, HBase on the other) measures the same
//! cross-core round trip as the client's calls to HBase, not a same-core ping-pong.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

/// Restricts the calling thread to CPU `cpu` (Linux `sched_setaffinity` on thread id 0, i.e.
/// this thread only).
fn pin_this_thread(cpu: usize) {
    // SAFETY: `set` is a plain bitmask on the stack; the call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(
            rc,
            0,
            "sched_setaffinity to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if std::env::args().any(|a| a == "--bench" || a == "--list")
        && std::env::var("ECHO_OPS").is_err()
    {
        println!("echo: run benches/latency/run for the loopback floor");
        return;
    }
    let (req, rep) = (env_or("ECHO_REQUEST", 100), env_or("ECHO_REPLY", 1200));
    let (warmup, ops) = (env_or("ECHO_WARMUP", 2_000), env_or("ECHO_OPS", 20_000));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().unwrap();
    let server_cpu = std::env::var("ECHO_SERVER_CPU").ok().map(|v| {
        v.parse::<usize>()
            .expect("ECHO_SERVER_CPU must be a CPU number")
    });
    let server = std::thread::spawn(move || {
        if let Some(cpu) = server_cpu {
            pin_this_thread(cpu);
        }
        let (mut s, _) = listener.accept().expect("accept");
        s.set_nodelay(true).unwrap();
        let (mut inb, out) = (vec![0u8; req], vec![b'r'; rep]);
        while s.read_exact(&mut inb).is_ok() {
            if s.write_all(&out).is_err() {
                break;
            }
        }
    });
    let mut c = TcpStream::connect(addr).expect("connect");
    c.set_nodelay(true).unwrap();
    let (out, mut inb) = (vec![b'q'; req], vec![0u8; rep]);
    let mut samples = Vec::with_capacity(ops);
    let mut cpu_before = (0.0, 0.0);
    for i in 0..warmup + ops {
        if i == warmup {
            cpu_before = thread_cpu();
        }
        let t = Instant::now();
        c.write_all(&out).unwrap();
        c.read_exact(&mut inb).unwrap();
        if i >= warmup {
            samples.push(t.elapsed().as_nanos() as u64);
        }
    }
    let cpu_after = thread_cpu();
    drop(c);
    server.join().unwrap();
    // The client thread's own CPU (one blocking write and one read a round trip, and the
    // kernel's work for them): the floor for a client's CPU per call on this machine.
    let (user, sys) = (
        (cpu_after.0 - cpu_before.0) / ops as f64,
        (cpu_after.1 - cpu_before.1) / ops as f64,
    );
    samples.sort_unstable();
    let at =
        |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)] as f64 / 1e3;
    let mean = samples.iter().sum::<u64>() as f64 / samples.len() as f64 / 1e3;
    println!(
        "echo request={req} reply={rep} ops={ops} mean_us={mean:.1} p50_us={:.1} p99_us={:.1} client_cpu_us={:.2} client_user_us={user:.2} client_sys_us={sys:.2}",
        at(0.50),
        at(0.99),
        user + sys,
    );
}

/// The calling thread's user and system CPU so far, in microseconds (`RUSAGE_THREAD`).
fn thread_cpu() -> (f64, f64) {
    // SAFETY: `usage` is a plain struct on the stack that getrusage fills.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
        usage
    };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    (us(usage.ru_utime), us(usage.ru_stime))
}
