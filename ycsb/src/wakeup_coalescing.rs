//! Wakeup coalescing (`-p wakeupcoalescing.us=N`): when the client's runtime thread has
//! nothing left to run, it sleeps N µs before it parks (waits for the network), so that one wakeup
//! reads the answers of several calls and sends the requests they lead to together. This is
//! what a network card's interrupt coalescing does, in the client.
//!
//! Why: on loopback, and on a virtual machine most of all, a client's CPU per read is mostly
//! the kernel's cost per wakeup (an `epoll_wait` back from idle, a receive, a send, and the
//! peer's half of TCP run inside them), paid once for every 3–5 answers when the thread waits
//! for the next answer at once (README, Rounds 22–23). Sleeping first makes the wakeups
//! fewer and fuller. The cost is latency: an answer that arrives while the thread sleeps
//! waits up to N µs. With many operations in flight against a server that sets the pace,
//! that wait mostly replaces a wait in the server's queue; with few in flight, it adds to
//! every operation. A sleep as long as the server takes to answer every operation in flight
//! empties that queue and leaves the server idle, and even half of it costs throughput (README,
//! Round 37): check the throughput beside the CPU. Off (0) by default.
//!
//! The sleep is a park hook of the runtime: it runs whenever the thread has nothing to run,
//! so it also delays what wakes the runtime from elsewhere (a `-target` run's pacer, the
//! status line's timer). It works only in the runtime built by [`crate::main_with_args`]; a
//! run on another runtime (a library caller's own) is not coalesced, and is told so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The property: µs the runtime sleeps before it parks, 0 (off, the default) to [`MAX_US`].
pub const PROPERTY: &str = "wakeupcoalescing.us";

/// The longest sleep accepted, in µs: longer would only be a slower run.
pub const MAX_US: i64 = 100_000;

/// The sleep of the run in progress, in µs; 0 outside a run that asked for one.
static SLEEP_US: AtomicU64 = AtomicU64::new(0);
/// Sleeps taken since the run's start.
static SLEEPS: AtomicU64 = AtomicU64::new(0);
/// The runtime that has the hook (its id), once [`build_runtime`] built it.
static RUNTIME: Mutex<Option<tokio::runtime::Id>> = Mutex::new(None);

/// Builds `builder`'s runtime with the hook, and records it as the one runs may coalesce on.
/// The hook does nothing until a run on that runtime starts coalescing.
pub fn build_runtime(
    builder: &mut tokio::runtime::Builder,
) -> std::io::Result<tokio::runtime::Runtime> {
    let rt = builder.on_thread_park(before_park).build()?;
    *RUNTIME.lock().unwrap_or_else(|e| e.into_inner()) = Some(rt.handle().id());
    Ok(rt)
}

fn before_park() {
    let us = SLEEP_US.load(Ordering::Relaxed);
    if us > 0 {
        SLEEPS.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_micros(us));
    }
}

/// Coalescing in force until dropped (the end of the run).
#[derive(Debug)]
pub struct Coalescing {
    _private: (),
}

impl Coalescing {
    /// Starts sleeping `us` µs before every park of the current runtime. `None` when `us` is
    /// 0, when the current runtime is not the one with the hook, or when another run of this
    /// process is coalescing already (the sleep and its count are the process's).
    pub fn start(us: u64) -> Option<Coalescing> {
        let current = tokio::runtime::Handle::try_current().ok()?.id();
        if us == 0 || *RUNTIME.lock().unwrap_or_else(|e| e.into_inner()) != Some(current) {
            return None;
        }
        SLEEP_US
            .compare_exchange(0, us, Ordering::Relaxed, Ordering::Relaxed)
            .ok()?;
        SLEEPS.store(0, Ordering::Relaxed);
        Some(Coalescing { _private: () })
    }

    /// Sleeps taken since the start.
    pub fn sleeps(&self) -> u64 {
        SLEEPS.load(Ordering::Relaxed)
    }
}

impl Drop for Coalescing {
    fn drop(&mut self) {
        SLEEP_US.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_runtime_with_the_hook_sleeps_before_it_parks_and_only_while_coalescing() {
        let rt = build_runtime(tokio::runtime::Builder::new_current_thread().enable_all()).unwrap();
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert!(other.block_on(async { Coalescing::start(50) }).is_none());
        let park = || rt.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await });
        let c = rt
            .block_on(async { Coalescing::start(50) })
            .expect("installed");
        assert!(
            rt.block_on(async { Coalescing::start(50) }).is_none(),
            "two at once"
        );
        park();
        let during = c.sleeps();
        drop(c);
        park();
        let after = SLEEPS.load(Ordering::Relaxed);
        assert!(during >= 1, "no sleep while coalescing");
        assert_eq!(after, during, "slept after the end");
        assert!(rt.block_on(async { Coalescing::start(0) }).is_none());
    }
}
