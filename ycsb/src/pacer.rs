//! Precise waits for `-target` pacing.
//!
//! tokio's timer wheel has 1 ms slots, so a task paced with `tokio::time::sleep_until` wakes
//! up to a millisecond late, and YCSB's intended latency (measured from the deadline) then
//! averages about a millisecond even when the operation takes none. Java's `parkNanos` wakes
//! within the kernel's timer slack (50 µs by default).
//!
//! Here the coarse part of a wait (all but the last 2 ms) stays on tokio's timer; the rest is
//! handed to one pacer thread that keeps every pending deadline in a heap, sleeps on a condition
//! variable with its timer slack set to 1 ns (Linux), and wakes each task at its deadline, or a
//! little ahead of it ([`SPIN_AHEAD`]) when the caller can afford to spin: the task then yields
//! to the other tasks of its worker until the deadline passes, so the last stretch costs no
//! thread wake-up. Spinning costs CPU in proportion to the rate (60 µs per operation), so the
//! runner spins only at low total rates ([`spin_ahead_for`]); at high rates the workers are
//! busy anyway and a wake-up is a queue push. One thread serves every client task, so 10,000
//! paced tasks cost one sleeping thread, not 10,000 spinning ones.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The part of a wait left to tokio's (millisecond) timer.
const COARSE_MARGIN: Duration = Duration::from_millis(2);
/// How long before its deadline a spinning wait is woken, to yield until the deadline passes.
pub const SPIN_AHEAD: Duration = Duration::from_micros(60);

/// The spin-ahead for a run paced at `ops_per_sec` in total: [`SPIN_AHEAD`] while spinning
/// costs at most 10% of a core (up to about 1,660 operations per second), else none.
pub fn spin_ahead_for(ops_per_sec: f64) -> Duration {
    if ops_per_sec * SPIN_AHEAD.as_secs_f64() <= 0.1 {
        SPIN_AHEAD
    } else {
        Duration::ZERO
    }
}

struct Entry {
    deadline: Instant,
    seq: u64,
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

struct Queued(Arc<Entry>);

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    // BinaryHeap is a max-heap: the earliest deadline must compare greatest.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.0.deadline, other.0.seq).cmp(&(self.0.deadline, self.0.seq))
    }
}

struct Pacer {
    queue: Mutex<BinaryHeap<Queued>>,
    changed: Condvar,
    seq: AtomicU64,
}

fn pacer() -> &'static Pacer {
    static PACER: OnceLock<&'static Pacer> = OnceLock::new();
    PACER.get_or_init(|| {
        let p: &'static Pacer = Box::leak(Box::new(Pacer {
            queue: Mutex::new(BinaryHeap::new()),
            changed: Condvar::new(),
            seq: AtomicU64::new(0),
        }));
        std::thread::Builder::new()
            .name("ycsb-pacer".into())
            .spawn(move || p.run())
            .expect("spawn the pacer thread");
        p
    })
}

impl Pacer {
    fn add(&self, entry: Arc<Entry>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let earliest = q.peek().map(|e| e.0.deadline);
        let deadline = entry.deadline;
        q.push(Queued(entry));
        if earliest.is_none_or(|e| deadline < e) {
            self.changed.notify_one();
        }
    }

    fn run(&self) {
        fine_timer_slack();
        let mut due: Vec<Arc<Entry>> = Vec::new();
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = Instant::now();
            while q.peek().is_some_and(|e| e.0.deadline <= now) {
                due.push(q.pop().expect("peeked").0);
            }
            if !due.is_empty() {
                drop(q);
                for e in due.drain(..) {
                    e.fired.store(true, Ordering::Release);
                    if let Some(w) = e.waker.lock().unwrap_or_else(|p| p.into_inner()).take() {
                        w.wake();
                    }
                }
                q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                continue;
            }
            match q.peek().map(|e| e.0.deadline) {
                None => q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    q = self
                        .changed
                        .wait_timeout(q, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

/// Asks the kernel to wake this thread's timed waits on time (default slack: 50 µs).
#[cfg(target_os = "linux")]
fn fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only changes this thread's
    // timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

#[cfg(not(target_os = "linux"))]
fn fine_timer_slack() {}

struct PreciseWait {
    entry: Option<Arc<Entry>>,
    /// When to be woken (the deadline, less the spin-ahead).
    deadline: Instant,
}

impl Future for PreciseWait {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        match &self.entry {
            Some(e) => {
                if e.fired.load(Ordering::Acquire) {
                    return Poll::Ready(());
                }
                *e.waker.lock().unwrap_or_else(|p| p.into_inner()) = Some(cx.waker().clone());
                // Fired between the check and storing the waker: do not sleep.
                if e.fired.load(Ordering::Acquire) {
                    return Poll::Ready(());
                }
            }
            None => {
                let p = pacer();
                let entry = Arc::new(Entry {
                    deadline: self.deadline,
                    seq: p.seq.fetch_add(1, Ordering::Relaxed),
                    fired: AtomicBool::new(false),
                    waker: Mutex::new(Some(cx.waker().clone())),
                });
                self.entry = Some(entry.clone());
                p.add(entry);
            }
        }
        Poll::Pending
    }
}

/// Waits until `deadline`, waking within microseconds of it (never before), spinning for the
/// last `spin_ahead` (see [`spin_ahead_for`]).
pub async fn sleep_until(deadline: Instant, spin_ahead: Duration) {
    let now = Instant::now();
    if deadline <= now {
        return;
    }
    if deadline - now > COARSE_MARGIN {
        tokio::time::sleep_until((deadline - COARSE_MARGIN).into()).await;
    }
    PreciseWait {
        entry: None,
        deadline: deadline.checked_sub(spin_ahead).unwrap_or(deadline),
    }
    .await;
    while Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn never_wakes_before_the_deadline() {
        let mut tasks = Vec::new();
        for i in 0..200u64 {
            tasks.push(tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_micros(50 + (i * 37) % 5000);
                let spin = if i % 2 == 0 {
                    SPIN_AHEAD
                } else {
                    Duration::ZERO
                };
                sleep_until(deadline, spin).await;
                Instant::now() >= deadline
            }));
        }
        for t in tasks {
            assert!(t.await.unwrap());
        }
        // A deadline in the past returns at once.
        sleep_until(Instant::now() - Duration::from_secs(1), SPIN_AHEAD).await;
    }
}
