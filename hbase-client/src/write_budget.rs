//! The bound on the bytes all `BufferedMutator`s of one client hold together (the client's
//! `write_buffer_limit`), and the queue of writers waiting for room.
//!
//! Writers are admitted first come, first served: a release wakes only as many waiting
//! writers as the freed bytes admit, from the front of the queue, and a new writer never
//! passes one that is already waiting. (Waking every waiter on every release cost 2.5x the
//! CPU with 10,000 writing tasks, each of them rechecking and going back to sleep.)

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::oneshot;

/// Something holding buffered bytes that it can hand to its flusher on request (a mutator),
/// so that a writer waiting for room never waits for a buffer nobody will send.
pub(crate) trait Flushable: Send + Sync {
    fn cut_buffer(&self);
}

/// The bytes all mutators of one client hold (buffered, or handed to a flush and not yet
/// answered), and their bound.
pub(crate) struct WriteBudget {
    limit: usize,
    state: Mutex<BudgetState>,
    mutators: Mutex<Registered>,
}

/// The mutators of the client, dropped ones pruned now and then.
#[derive(Default)]
struct Registered {
    list: Vec<Weak<dyn Flushable>>,
    /// The list's length at which dropped mutators are pruned next: twice what was left by
    /// the last pruning, so registering costs O(1) amortized (pruning on every registration
    /// made opening 10,000 mutators cost 50 million liveness checks).
    prune_at: usize,
}

#[derive(Default)]
struct BudgetState {
    held: usize,
    in_flight: usize,
    waiters: VecDeque<Waiter>,
    next_waiter: u64,
}

struct Waiter {
    id: u64,
    bytes: usize,
    admitted: oneshot::Sender<()>,
}

impl BudgetState {
    fn fits(&self, limit: usize, bytes: usize) -> bool {
        // One mutation larger than the whole bound passes when nothing else is held.
        self.held == 0 || self.held + bytes <= limit
    }

    /// Admits waiters from the front while the bound has room for them.
    fn admit(&mut self, limit: usize) {
        while let Some(front) = self.waiters.front() {
            if !self.fits(limit, front.bytes) {
                return;
            }
            let w = self.waiters.pop_front().expect("front exists");
            self.held += w.bytes;
            // The waiter removes itself under this lock before it drops its receiver, so it
            // is still listening.
            let _ = w.admitted.send(());
        }
    }
}

/// A place in the budget's queue. Dropped before it was admitted, it leaves the queue;
/// dropped after, it gives the bytes back.
pub(crate) struct Waiting<'a> {
    budget: &'a WriteBudget,
    id: u64,
    bytes: usize,
    admitted: oneshot::Receiver<()>,
    done: bool,
}

impl Waiting<'_> {
    /// Waits until admitted (true), or until `tick` passes (false: still queued).
    pub(crate) async fn admitted_within(&mut self, tick: std::time::Duration) -> bool {
        match tokio::time::timeout(tick, &mut self.admitted).await {
            Ok(_) => {
                self.done = true;
                true
            }
            Err(_) => false,
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let budget = self.budget;
        let mut st = budget.lock();
        if let Some(pos) = st.waiters.iter().position(|w| w.id == self.id) {
            st.waiters.remove(pos);
        } else {
            // Admitted, and cancelled before it noticed.
            st.held = st.held.saturating_sub(self.bytes);
        }
        st.admit(budget.limit);
    }
}

impl WriteBudget {
    pub(crate) fn new(limit: usize) -> WriteBudget {
        WriteBudget {
            limit: limit.max(1),
            state: Mutex::new(BudgetState::default()),
            mutators: Mutex::new(Registered::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BudgetState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn register(&self, mutator: Weak<dyn Flushable>) {
        let mut m = self.mutators.lock().unwrap_or_else(|e| e.into_inner());
        if m.list.len() >= m.prune_at {
            m.list.retain(|w| w.strong_count() > 0);
            m.prune_at = (2 * m.list.len()).max(16);
        }
        m.list.push(mutator);
    }

    /// Takes `bytes` at once when they fit and nobody waits before them; otherwise queues
    /// for them, and also says whether nothing at all is in flight (then only cutting idle
    /// buffers can free room).
    pub(crate) fn take_or_queue(&self, bytes: usize) -> Result<(), (Waiting<'_>, bool)> {
        let mut st = self.lock();
        if st.waiters.is_empty() && st.fits(self.limit, bytes) {
            st.held += bytes;
            return Ok(());
        }
        let (tx, rx) = oneshot::channel();
        st.next_waiter += 1;
        let id = st.next_waiter;
        st.waiters.push_back(Waiter {
            id,
            bytes,
            admitted: tx,
        });
        let nothing_in_flight = st.in_flight == 0;
        Err((
            Waiting {
                budget: self,
                id,
                bytes,
                admitted: rx,
                done: false,
            },
            nothing_in_flight,
        ))
    }

    pub(crate) fn nothing_in_flight(&self) -> bool {
        self.lock().in_flight == 0
    }

    /// Bytes that were buffered are now handed to a flush.
    pub(crate) fn sent(&self, bytes: usize) {
        self.lock().in_flight += bytes;
    }

    /// Bytes that were buffered and are gone (answered, failed, or never sendable). Returns
    /// whether writers still wait with nothing left in flight: no answer will free room for
    /// them, only cutting the idle buffers that hold the budget (see
    /// [`release_and_unstall`](Self::release_and_unstall)).
    pub(crate) fn release(&self, bytes: usize, were_in_flight: bool) -> bool {
        let mut st = self.lock();
        st.held = st.held.saturating_sub(bytes);
        if were_in_flight {
            st.in_flight = st.in_flight.saturating_sub(bytes);
        }
        st.admit(self.limit);
        !st.waiters.is_empty() && st.in_flight == 0
    }

    /// [`release`](Self::release), then, if writers wait with nothing in flight, cuts every
    /// idle buffer, so that their wait ends. The caller holds no mutator's lock.
    pub(crate) fn release_and_unstall(&self, bytes: usize, were_in_flight: bool) {
        if self.release(bytes, were_in_flight) {
            self.flush_idle_buffers();
        }
    }

    /// Bytes held now (buffered or in flight).
    pub(crate) fn held(&self) -> usize {
        self.lock().held
    }

    /// Hands every mutator's buffer to its flusher.
    pub(crate) fn flush_idle_buffers(&self) {
        let mutators: Vec<Arc<dyn Flushable>> = self
            .mutators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .list
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for m in mutators {
            m.cut_buffer();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_admits_waiters_in_order_and_only_as_many_as_fit() {
        let budget = WriteBudget::new(10);
        budget.take_or_queue(8).ok().unwrap();
        let (mut a, _) = budget.take_or_queue(4).err().unwrap();
        let (mut b, _) = budget.take_or_queue(4).err().unwrap();
        let (mut c, _) = budget.take_or_queue(1).err().unwrap();
        // c would fit (8 + 1), but a and b wait before it.
        assert!(a.admitted.try_recv().is_err());
        assert!(c.admitted.try_recv().is_err());
        let _ = budget.release(8, false);
        // 0 held: a (4) and b (4) fit, then c (1): 9.
        assert!(a.admitted.try_recv().is_ok());
        assert!(b.admitted.try_recv().is_ok());
        assert!(c.admitted.try_recv().is_ok());
        a.done = true;
        b.done = true;
        c.done = true;
        assert_eq!(budget.held(), 9);
    }

    #[test]
    fn a_waiter_that_does_not_fit_holds_back_the_ones_after_it() {
        let budget = WriteBudget::new(10);
        budget.take_or_queue(6).ok().unwrap();
        let (mut a, _) = budget.take_or_queue(6).err().unwrap();
        let (mut b, _) = budget.take_or_queue(2).err().unwrap();
        let _ = budget.release(0, false);
        assert!(a.admitted.try_recv().is_err());
        assert!(b.admitted.try_recv().is_err());
        // A new writer queues behind them even though 2 more bytes would fit.
        let (c, _) = budget.take_or_queue(2).err().unwrap();
        drop(c);
        let _ = budget.release(6, false);
        assert!(a.admitted.try_recv().is_ok());
        assert!(b.admitted.try_recv().is_ok());
        a.done = true;
        b.done = true;
        assert_eq!(budget.held(), 8);
    }

    #[test]
    fn a_cancelled_waiter_leaves_the_queue_or_gives_its_bytes_back() {
        let budget = WriteBudget::new(10);
        budget.take_or_queue(10).ok().unwrap();
        let (a, _) = budget.take_or_queue(5).err().unwrap();
        let (mut b, _) = budget.take_or_queue(5).err().unwrap();
        // a leaves before admission: b is next.
        drop(a);
        let _ = budget.release(5, false);
        assert!(b.admitted.try_recv().is_ok());
        assert_eq!(budget.held(), 10);
        // b was admitted but is dropped before it noticed: its bytes come back.
        drop(b);
        assert_eq!(budget.held(), 5);
    }

    struct CountsCuts(std::sync::atomic::AtomicUsize);

    impl Flushable for CountsCuts {
        fn cut_buffer(&self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn the_last_answer_with_writers_waiting_cuts_the_idle_buffers() {
        let budget = WriteBudget::new(10);
        let mutator = Arc::new(CountsCuts(Default::default()));
        let weak: Weak<dyn Flushable> = Arc::downgrade(&mutator) as Weak<dyn Flushable>;
        budget.register(weak);
        // 10 held: 4 cut and in flight, 6 buffered.
        budget.take_or_queue(10).ok().unwrap();
        budget.sent(4);
        let (mut waiting, nothing_in_flight) = budget.take_or_queue(5).err().unwrap();
        assert!(!nothing_in_flight);
        // An answer that leaves something in flight: no cut.
        budget.release_and_unstall(1, true);
        assert_eq!(mutator.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        // The last bytes in flight answered, the writer still waiting (6 + 5 > 10): only the
        // buffers hold the budget now, and they are cut.
        budget.release_and_unstall(3, true);
        assert_eq!(mutator.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(waiting.admitted.try_recv().is_err());
        // Nobody waits: no cut.
        budget.release_and_unstall(6, false);
        assert!(waiting.admitted.try_recv().is_ok());
        waiting.done = true;
        budget.sent(5);
        budget.release_and_unstall(5, true);
        assert_eq!(mutator.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn registering_prunes_dropped_mutators() {
        let budget = WriteBudget::new(10);
        for _ in 0..1000 {
            let m: Arc<dyn Flushable> = Arc::new(CountsCuts(Default::default()));
            budget.register(Arc::downgrade(&m));
        }
        let kept = budget.mutators.lock().unwrap().list.len();
        assert!(kept <= 32, "{kept} dropped mutators still listed");
    }
}
