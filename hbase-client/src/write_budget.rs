//! The bound on the bytes all `BufferedMutator`s of one client hold together (the client's
//! `write_buffer_limit`), and the queue of writers waiting for room.
//!
//! Writers are admitted first come, first served: a release wakes only as many waiting
//! writers as the freed bytes admit, from the front of the queue, and a new writer never
//! passes one that is already waiting. (Waking every waiter on every release cost 2.5x the
//! CPU with 10,000 writing tasks, each of them rechecking and going back to sleep.)
//!
//! A waiter is an entry in the queue with its task's waker, not a channel: with 10,000
//! writers waiting, a one-shot channel and a recheck timer per waiter were 0.4 us of client
//! CPU per operation of workload A. Only the front waiter can be stalled (the ones behind
//! it are admitted after it), so only the front one watches for a stall; it is told when it
//! becomes the front.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

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
    /// Mirrors whether `state` has waiters, for the dispatchers' check on every pass (see
    /// [`writers_waiting`](Self::writers_waiting)), which must not take the writers' lock.
    waiting: AtomicBool,
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
    /// In the order of their ids (ids only grow, and waiters leave from the front when
    /// admitted or from anywhere when cancelled), so a waiter finds itself by its distance
    /// from the front's id, or else by binary search (see [`BudgetState::position`]).
    waiters: VecDeque<Waiter>,
    next_waiter: u64,
    /// Every waiter up to this id has been admitted or has left: admission is in id order.
    admitted_through: u64,
    /// The front waiter last woken to be told it is the front.
    front_told: u64,
}

struct Waiter {
    id: u64,
    bytes: usize,
    /// Its task, once it has waited.
    waker: Option<Waker>,
}

impl BudgetState {
    fn fits(&self, limit: usize, bytes: usize) -> bool {
        // One mutation larger than the whole bound passes when nothing else is held.
        self.held == 0 || self.held + bytes <= limit
    }

    /// Admits waiters from the front while the bound has room for them, and tells a new
    /// front waiter that it is the front.
    fn admit(&mut self, limit: usize) {
        while let Some(front) = self.waiters.front() {
            if !self.fits(limit, front.bytes) {
                break;
            }
            let w = self.waiters.pop_front().expect("front exists");
            self.held += w.bytes;
            self.admitted_through = w.id;
            if let Some(waker) = w.waker {
                waker.wake();
            }
        }
        if let Some(front) = self.waiters.front_mut() {
            if front.id != self.front_told {
                self.front_told = front.id;
                // One that has not waited yet sees it is the front when it first looks.
                if let Some(waker) = front.waker.take() {
                    waker.wake();
                }
            }
        }
    }

    fn position(&self, id: u64) -> Option<usize> {
        // Ids in the queue are consecutive unless a waiter left from the middle (a cancelled
        // writer): then the id's distance from the front's is its place. A binary search
        // through 10,000 waiters was 0.08 us per update in cache misses.
        let guess = usize::try_from(id.checked_sub(self.waiters.front()?.id)?).ok()?;
        if self.waiters.get(guess).is_some_and(|w| w.id == id) {
            return Some(guess);
        }
        self.waiters.binary_search_by_key(&id, |w| w.id).ok()
    }
}

/// What a waiter waited for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Its bytes are taken.
    Admitted,
    /// It is the front of the queue: the one that watches for a stall.
    Front,
}

/// A place in the budget's queue. Dropped before it was admitted, it leaves the queue;
/// dropped after, it gives the bytes back.
pub(crate) struct Waiting<'a> {
    budget: &'a WriteBudget,
    id: u64,
    bytes: usize,
    done: bool,
    saw_front: bool,
}

impl Waiting<'_> {
    /// Ready when admitted, or (once, with `or_front`) when it is the front of the queue;
    /// otherwise leaves its waker in its queue entry.
    pub(crate) fn poll_admission(
        &mut self,
        cx: &mut Context<'_>,
        or_front: bool,
    ) -> Poll<Admission> {
        let mut st = self.budget.lock();
        if self.id <= st.admitted_through {
            self.done = true;
            return Poll::Ready(Admission::Admitted);
        }
        let Some(pos) = st.position(self.id) else {
            // Not admitted and not queued cannot be: only its own drop removes it otherwise.
            debug_assert!(false, "waiter {} is neither queued nor admitted", self.id);
            self.done = true;
            return Poll::Ready(Admission::Admitted);
        };
        if or_front && !self.saw_front && pos == 0 {
            self.saw_front = true;
            st.front_told = self.id;
            return Poll::Ready(Admission::Front);
        }
        let slot = &mut st.waiters[pos].waker;
        match slot {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Waits until admitted, or until it is the front of the queue.
    pub(crate) async fn admitted_or_front(&mut self) -> Admission {
        std::future::poll_fn(|cx| self.poll_admission(cx, true)).await
    }

    /// Waits until admitted (true), or until `tick` passes (false: still queued).
    pub(crate) async fn admitted_within(&mut self, tick: std::time::Duration) -> bool {
        let admitted = std::future::poll_fn(|cx| self.poll_admission(cx, false));
        tokio::time::timeout(tick, admitted).await.is_ok()
    }
}

#[cfg(test)]
impl Waiting<'_> {
    /// Whether it has been admitted (noticed or not).
    fn is_admitted(&self) -> bool {
        self.id <= self.budget.lock().admitted_through
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let budget = self.budget;
        let mut st = budget.lock();
        if self.id <= st.admitted_through {
            // Admitted, and cancelled before it noticed.
            st.held = st.held.saturating_sub(self.bytes);
        } else if let Some(pos) = st.position(self.id) {
            st.waiters.remove(pos);
        }
        st.admit(budget.limit);
        budget.publish_waiting(&st);
    }
}

impl WriteBudget {
    pub(crate) fn new(limit: usize) -> WriteBudget {
        WriteBudget {
            limit: limit.max(1),
            state: Mutex::new(BudgetState::default()),
            waiting: AtomicBool::new(false),
            mutators: Mutex::new(Registered::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BudgetState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Updates the mirror of whether writers wait (caller holds the state lock, so the
    /// mirror follows the queue's changes in order).
    fn publish_waiting(&self, st: &BudgetState) {
        let waiting = !st.waiters.is_empty();
        if self.waiting.load(Ordering::Relaxed) != waiting {
            self.waiting.store(waiting, Ordering::Relaxed);
        }
    }

    /// Whether writers wait for room now: the client writes faster than its writes are
    /// answered. Read without the lock, so it may lag a change by a moment.
    pub(crate) fn writers_waiting(&self) -> bool {
        self.waiting.load(Ordering::Relaxed)
    }

    /// The bound, in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
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
        st.next_waiter += 1;
        let id = st.next_waiter;
        st.waiters.push_back(Waiter {
            id,
            bytes,
            waker: None,
        });
        self.publish_waiting(&st);
        let nothing_in_flight = st.in_flight == 0;
        Err((
            Waiting {
                budget: self,
                id,
                bytes,
                done: false,
                saw_front: false,
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
        self.publish_waiting(&st);
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
        assert!(!a.is_admitted());
        assert!(!c.is_admitted());
        let _ = budget.release(8, false);
        // 0 held: a (4) and b (4) fit, then c (1): 9.
        assert!(a.is_admitted());
        assert!(b.is_admitted());
        assert!(c.is_admitted());
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
        assert!(!a.is_admitted());
        assert!(!b.is_admitted());
        // A new writer queues behind them even though 2 more bytes would fit.
        let (c, _) = budget.take_or_queue(2).err().unwrap();
        drop(c);
        let _ = budget.release(6, false);
        assert!(a.is_admitted());
        assert!(b.is_admitted());
        a.done = true;
        b.done = true;
        assert_eq!(budget.held(), 8);
    }

    #[test]
    fn writers_waiting_follows_the_queue_through_admission_and_cancellation() {
        let budget = WriteBudget::new(10);
        budget.take_or_queue(10).ok().unwrap();
        assert!(!budget.writers_waiting());
        let (mut a, _) = budget.take_or_queue(5).err().unwrap();
        let (b, _) = budget.take_or_queue(5).err().unwrap();
        assert!(budget.writers_waiting());
        // a is admitted; b still waits.
        let _ = budget.release(5, false);
        assert!(a.is_admitted());
        a.done = true;
        assert!(budget.writers_waiting());
        // b leaves: nobody waits.
        drop(b);
        assert!(!budget.writers_waiting());
        let (c, _) = budget.take_or_queue(5).err().unwrap();
        assert!(budget.writers_waiting());
        let _ = budget.release(5, false);
        assert!(c.is_admitted());
        assert!(!budget.writers_waiting());
        drop(c);
    }

    #[test]
    fn a_cancelled_waiter_leaves_the_queue_or_gives_its_bytes_back() {
        let budget = WriteBudget::new(10);
        budget.take_or_queue(10).ok().unwrap();
        let (a, _) = budget.take_or_queue(5).err().unwrap();
        let (b, _) = budget.take_or_queue(5).err().unwrap();
        // a leaves before admission: b is next.
        drop(a);
        let _ = budget.release(5, false);
        assert!(b.is_admitted());
        assert_eq!(budget.held(), 10);
        // b was admitted but is dropped before it noticed: its bytes come back.
        drop(b);
        assert_eq!(budget.held(), 5);
    }

    /// Counts its wakes.
    struct CountsWakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for CountsWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn counting_waker() -> (Arc<CountsWakes>, std::task::Waker) {
        let count = Arc::new(CountsWakes(Default::default()));
        (count.clone(), std::task::Waker::from(count))
    }

    fn wakes(count: &CountsWakes) -> usize {
        count.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    #[test]
    fn only_the_front_waiter_is_told_to_watch_for_a_stall_and_a_release_wakes_only_whom_it_concerns(
    ) {
        use std::task::{Context, Poll};
        let budget = WriteBudget::new(10);
        budget.take_or_queue(10).ok().unwrap();
        let (mut a, _) = budget.take_or_queue(5).err().unwrap();
        let (mut b, _) = budget.take_or_queue(5).err().unwrap();
        let (mut c, _) = budget.take_or_queue(5).err().unwrap();
        let (a_wakes, a_waker) = counting_waker();
        let (b_wakes, b_waker) = counting_waker();
        let (c_wakes, c_waker) = counting_waker();
        // a is at the front: it alone watches for a stall (a timer); b and c only wait.
        let poll = |w: &mut Waiting<'_>, waker: &std::task::Waker, or_front: bool| {
            w.poll_admission(&mut Context::from_waker(waker), or_front)
        };
        assert_eq!(poll(&mut a, &a_waker, true), Poll::Ready(Admission::Front));
        assert_eq!(poll(&mut b, &b_waker, true), Poll::Pending);
        assert_eq!(poll(&mut c, &c_waker, true), Poll::Pending);
        assert_eq!(poll(&mut a, &a_waker, false), Poll::Pending);
        // 5 bytes back: a is admitted, and b, the new front, is told so; c sleeps on.
        let _ = budget.release(5, false);
        assert_eq!(
            (wakes(&a_wakes), wakes(&b_wakes), wakes(&c_wakes)),
            (1, 1, 0)
        );
        assert_eq!(
            poll(&mut a, &a_waker, false),
            Poll::Ready(Admission::Admitted)
        );
        assert_eq!(poll(&mut b, &b_waker, true), Poll::Ready(Admission::Front));
        assert_eq!(poll(&mut b, &b_waker, false), Poll::Pending);
        // A release that admits nobody wakes nobody.
        let _ = budget.release(0, false);
        assert_eq!(
            (wakes(&a_wakes), wakes(&b_wakes), wakes(&c_wakes)),
            (1, 1, 0)
        );
        // b leaves the queue (its writer cancelled): c is the front now, and is told.
        drop(b);
        assert_eq!(wakes(&c_wakes), 1);
        assert_eq!(poll(&mut c, &c_waker, true), Poll::Ready(Admission::Front));
        assert_eq!(poll(&mut c, &c_waker, false), Poll::Pending);
        let _ = budget.release(5, false);
        assert_eq!(wakes(&c_wakes), 2);
        assert_eq!(
            poll(&mut c, &c_waker, false),
            Poll::Ready(Admission::Admitted)
        );
        assert_eq!(budget.held(), 10);
    }

    #[test]
    fn waiters_behind_one_that_left_from_the_middle_are_still_found_and_woken() {
        use std::task::{Context, Poll};
        let budget = WriteBudget::new(10);
        budget.take_or_queue(10).ok().unwrap();
        let mut queued: Vec<Waiting<'_>> = (0..6)
            .map(|_| budget.take_or_queue(2).err().unwrap().0)
            .collect();
        // The second and fourth leave: ids in the queue are no longer consecutive.
        drop(queued.remove(3));
        drop(queued.remove(1));
        let counted: Vec<_> = (0..queued.len()).map(|_| counting_waker()).collect();
        for (w, (_, waker)) in queued.iter_mut().zip(&counted) {
            let _ = w.poll_admission(&mut Context::from_waker(waker), false);
        }
        // 6 bytes back: the first three left (2 bytes each) are admitted; the last one is
        // the front and is told.
        let _ = budget.release(6, false);
        let woken: Vec<usize> = counted.iter().map(|(c, _)| wakes(c)).collect();
        assert_eq!(woken, vec![1, 1, 1, 1]);
        for (w, (_, waker)) in queued.iter_mut().take(3).zip(&counted) {
            let polled = w.poll_admission(&mut Context::from_waker(waker), false);
            assert_eq!(polled, Poll::Ready(Admission::Admitted));
        }
        let last = &mut queued[3];
        assert!(!last.is_admitted());
        assert_eq!(
            last.poll_admission(&mut Context::from_waker(&counted[3].1), true),
            Poll::Ready(Admission::Front)
        );
        assert_eq!(budget.held(), 10);
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
        assert!(!waiting.is_admitted());
        // Nobody waits: no cut.
        budget.release_and_unstall(6, false);
        assert!(waiting.is_admitted());
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
