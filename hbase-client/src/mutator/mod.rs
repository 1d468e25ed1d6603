//! `BufferedMutator`: client-side write buffering (autoflush off).
//!
//! `mutate` appends to the mutator's own buffer. A full buffer (its mutations' heap sizes by
//! Java's count, [`Mutation::heap_size`], or its mutation count) is cut and handed to the
//! dispatcher that every mutator of the client writing to the same table (with the same
//! operation timeout) shares ([`dispatch`]). It places the cut
//! mutations of all of them in shared region queues and sends them as `Multi`s to every
//! server concurrently: at most `max_tasks_per_server` requests per server and
//! `max_tasks_per_region` per region (HBase's `hbase.client.max.perserver.tasks` and
//! `perregion.tasks`), counted for the client and table, not per mutator, so the writes of
//! many mutators leave in the same requests. A region that does not answer (in transition,
//! its server stopped or frozen) holds back only its own mutations; writes to every other
//! region keep flowing. So does a row whose region cannot be looked up (`hbase:meta` slow or
//! not answering): the dispatcher waits at most a second for lookups, then leaves the row to
//! its request's retries.
//!
//! The dispatcher locates each cut mutation once and places it in its region's queue; a
//! request takes mutations from the front of one server's ready region queues. A region whose
//! request is in flight is not looked at again until that request ends, so a dispatch pass
//! costs what it places and sends, not what waits. While writers wait for room in the write
//! budget and other requests are in flight, a server with nothing in flight gets its next
//! request only once it has gathered 256 rows (or a quarter of a request's bytes) or 50 ms
//! have passed (a region server's cost per request is large; see `dispatch::lingers`).
//!
//! A region queue counts against the task limit of the server its region is on as last
//! learned: when a region moves, its queue follows as soon as the client learns the new
//! location (a write to it located anew, or one of its requests ending after it relocated), so
//! it does not wait for the old server's slots.
//!
//! Order: two writes to the same row are applied in the order they were cut, also across
//! retries (for one mutator, the order they were buffered). All unanswered writes to a row sit
//! in one region queue (a later write follows an earlier one's queue even if its region moved
//! meanwhile), queues send in order, and a row has at most one request in flight at a time
//! (writes to one row within one request go in order, and a retry resends the failed ones in
//! that order).
//!
//! Memory: `mutate` waits once its buffer is full and the mutator's cut, unanswered
//! mutations already hold the memory of [`PENDING_BUFFERS`] buffers like its last cut (a
//! buffer fills by Java's count, the mutations are counted by the memory they hold; the write
//! buffer's size is turned into memory at the last cut's ratio), so one mutator holds about
//! five buffers' worth: four cut and the one filling. All mutators of one client also share
//! one bound ([`WriteBudget`], the client's `write_buffer_limit`): bytes count from `mutate` until answered. A `mutate` that
//! would pass the bound cuts its own buffer and waits for answers to release room; when
//! nothing at all is in flight, it cuts every idle buffer, so the wait always ends.
//!
//! Every mutation is acknowledged by HBase or reported back to its own mutator, as the put or
//! delete it was and its error ([`FailedMutation`]), by `flush`/`close` (as
//! [`Error::MutationsFailed`]) and the optional failure listener. The mutation is still held
//! when it fails (a request keeps its actions until it ends), so a failure carries a clone of
//! it: a delete's keys, a put's cells copied once, on the failure path only, and only when a
//! listener takes it or the mutator keeps it (up to
//! [`max_failures_kept`](MutatorConfig::max_failures_kept) failures holding up to
//! [`max_failure_bytes_kept`](MutatorConfig::max_failure_bytes_kept)). Kept failures hold their
//! mutations outside the write budget until `flush`/`close` returns them. See
//! [`BufferedMutator`] for which errors mean "not applied" and which "unknown".

mod dispatch;
mod last_writes;
mod open_cuts;

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use crate::error::{Error, FailedMutation, Result};
use crate::ops::{ActionResult, Mutation};
use crate::region::TableName;
use crate::runtime::config::capped;
use crate::runtime::Runtime;
pub(crate) use crate::write_budget::WriteBudget;
use crate::write_budget::{Admission, Flushable};
use dispatch::Owner;
use open_cuts::OpenCuts;

/// The client's dispatchers of mutations, one per table and operation timeout (see
/// [`dispatch`]).
#[derive(Default)]
pub(crate) struct Dispatchers(dispatch::Dispatchers<Writer>);
/// A table's dispatcher, whose mutations' owners are mutators.
type Dispatch = dispatch::Dispatch<Writer>;
type Entry = dispatch::Entry<Writer>;
type Sent = dispatch::Sent<Writer>;

/// Called with each mutation that failed for good.
pub type FailureListener = Arc<dyn Fn(&FailedMutation) + Send + Sync>;

/// Buffers' worth of cut and unanswered mutations one mutator holds before `mutate` waits.
pub const PENDING_BUFFERS: usize = 4;

/// How often a writer waiting for room in the client's write budget checks that something is
/// in flight (else it cuts every idle buffer, so that its wait ends).
const STALL_RECHECK: Duration = Duration::from_secs(1);

/// Failures kept for `flush`/`close` when [`MutatorConfig::max_failures_kept`] is not set.
pub const DEFAULT_MAX_FAILURES_KEPT: usize = 10_000;

/// Bytes of failed mutations kept for `flush`/`close` when
/// [`MutatorConfig::max_failure_bytes_kept`] is not set: 64 MiB. A mass failure of small puts
/// (YCSB's rows, about 1.2 KB each) reaches the count bound first; of large puts, this one.
pub const DEFAULT_MAX_FAILURE_BYTES_KEPT: usize = 64 * 1024 * 1024;

/// Settings of a [`BufferedMutator`]. Unset ones come from the client's
/// [`ClientConfig`](crate::ClientConfig) (and so from `hbase-site.xml`).
#[derive(Clone, Default)]
pub struct MutatorConfig {
    write_buffer_size: Option<usize>,
    max_mutations: Option<usize>,
    periodic_flush: Option<Duration>,
    operation_timeout: Option<Duration>,
    max_failures_kept: Option<usize>,
    max_failure_bytes_kept: Option<usize>,
    listener: Option<FailureListener>,
}

impl std::fmt::Debug for MutatorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutatorConfig")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_mutations", &self.max_mutations)
            .field("periodic_flush", &self.periodic_flush)
            .field("operation_timeout", &self.operation_timeout)
            .field("max_failures_kept", &self.max_failures_kept)
            .field("max_failure_bytes_kept", &self.max_failure_bytes_kept)
            .field("listener", &self.listener.is_some())
            .finish()
    }
}

impl MutatorConfig {
    /// The buffer's size: once the buffered mutations' heap sizes ([`Mutation::heap_size`],
    /// Java's `Mutation.heapSize()`) add up to more, a flush starts, as in Java's
    /// `BufferedMutator`, which flushes after as many mutations (default: the client's
    /// [`write_buffer_size`](crate::ClientConfig::write_buffer_size), 2 MiB unless
    /// `hbase.client.write.buffer` says otherwise). The memory a buffered mutation holds here
    /// is counted apart ([`BufferedMutator::budgeted_size`]).
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.write_buffer_size = Some(bytes.max(1));
        self
    }

    /// Mutations buffered before a flush starts, whatever their size (default: the client's
    /// [`write_buffer_max_mutations`](crate::ClientConfig::write_buffer_max_mutations), none
    /// unless `hbase.client.write.buffer.maxmutations` says).
    pub fn max_mutations(mut self, mutations: usize) -> Self {
        self.max_mutations = Some(mutations.max(1));
        self
    }

    /// Also flush whatever is buffered every `interval` (default: the client's
    /// [`write_buffer_periodic_flush`](crate::ClientConfig::write_buffer_periodic_flush),
    /// off unless `hbase.client.write.buffer.periodicflush.timeout.ms` says).
    pub fn periodic_flush(mut self, interval: Duration) -> Self {
        self.periodic_flush = Some(capped(interval)).filter(|d| !d.is_zero());
        self
    }

    /// How long the retries of one request may take before its mutations fail (default: the
    /// client's operation timeout). Time spent queued behind earlier writes does not count.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = Some(capped(timeout).max(Duration::from_millis(1)));
        self
    }

    /// Failures kept between two flushes (default [`DEFAULT_MAX_FAILURES_KEPT`]); more are
    /// counted in [`Error::MutationsFailed`]'s `dropped` (the listener still sees each).
    ///
    /// A kept failure holds its whole mutation (a put's cells, copied), as Java's
    /// `RetriesExhaustedWithDetailsException` holds its rows, until `flush` or `close`
    /// returns it; that memory is not counted in the client's
    /// [`write_buffer_limit`](crate::ClientConfig::write_buffer_limit). So a mass failure of
    /// large puts would hold up to this many of them, but for
    /// [`max_failure_bytes_kept`](Self::max_failure_bytes_kept), which bounds their bytes. A
    /// failure past either bound is counted, not copied.
    pub fn max_failures_kept(mut self, failures: usize) -> Self {
        self.max_failures_kept = Some(failures);
        self
    }

    /// Bytes of mutations the kept failures may hold between two flushes (default
    /// [`DEFAULT_MAX_FAILURE_BYTES_KEPT`]): a failure is kept while the mutations kept before
    /// it hold less (so the last one kept may pass it by its own size); later ones are
    /// counted in [`Error::MutationsFailed`]'s `dropped`, not copied. Java's
    /// `BufferedMutator` keeps every failed row until it reports them; this bound is ours, so
    /// that a mass failure of large puts cannot hold gigabytes.
    pub fn max_failure_bytes_kept(mut self, bytes: usize) -> Self {
        self.max_failure_bytes_kept = Some(bytes);
        self
    }

    /// Called for every mutation that fails for good, as soon as it does, from the task that
    /// sent it and outside the mutator's locks. It is given the mutation itself (the `Put` or
    /// `Delete`, [`FailedMutation::mutation`]) and its error. A listener that panics is caught
    /// (and logged); the failure is still reported by `flush`/`close`.
    pub fn on_failure(
        mut self,
        listener: impl Fn(&FailedMutation) + Send + Sync + 'static,
    ) -> Self {
        self.listener = Some(Arc::new(listener));
        self
    }
}

/// Failures kept for the next `flush`: bounded in number and in the bytes of their mutations,
/// with each long server message kept whole once.
#[derive(Default)]
struct FailureLog {
    kept: Vec<FailedMutation>,
    /// Memory the kept failures' mutations hold.
    kept_bytes: usize,
    dropped: u64,
    messages: HashSet<String>,
}

/// How many failures a mutator keeps, and how many bytes of mutations they may hold.
#[derive(Clone, Copy)]
struct KeptBound {
    failures: usize,
    bytes: usize,
}

impl FailureLog {
    fn push(&mut self, failed: FailedMutation, bound: KeptBound) {
        self.keep(bound, || failed);
    }

    /// Keeps the failure `make` builds, or, when the failures kept already reach the bound (in
    /// number, or in the bytes their mutations hold), only counts it, without calling `make`:
    /// a failure's mutation is a clone of the request's, and a mass failure would otherwise
    /// copy every failed put's cells to drop them.
    fn keep(&mut self, bound: KeptBound, make: impl FnOnce() -> FailedMutation) {
        if self.kept.len() >= bound.failures || self.kept_bytes >= bound.bytes {
            self.dropped += 1;
            return;
        }
        let mut failed = make();
        if let Some(remote) = failed.error.remote_mut() {
            if self.messages.contains(&remote.message) {
                // Repeated: the first copy holds the stack trace; keep its summary here (the
                // first line, and the root cause when that line lacks it).
                remote.message = remote.summary();
            } else if self.messages.len() < bound.failures {
                self.messages.insert(remote.message.clone());
            }
        }
        self.kept_bytes = self
            .kept_bytes
            .saturating_add(failed.mutation().memory_size());
        self.kept.push(failed);
    }

    fn take(&mut self) -> Option<Error> {
        let failures = std::mem::take(&mut self.kept);
        let dropped = std::mem::take(&mut self.dropped);
        self.kept_bytes = 0;
        self.messages.clear();
        (!failures.is_empty() || dropped > 0)
            .then_some(Error::MutationsFailed { failures, dropped })
    }
}

/// The memory `PENDING_BUFFERS` full buffers hold, for a cut of `bytes` (memory, the budget's
/// count) whose heap sizes, Java's count, add up to `heap`: the write buffer's size (Java's
/// count, what fills a buffer) turned into memory at that cut's ratio. Once per cut, so that
/// no answer needs a mutation's heap size to count it off.
fn pending_bound(bytes: usize, heap: usize, write_buffer_size: usize) -> usize {
    let buffers = write_buffer_size as u128 * PENDING_BUFFERS as u128;
    let bound = buffers.saturating_mul(bytes as u128) / heap.max(1) as u128;
    usize::try_from(bound).unwrap_or(usize::MAX)
}

/// What a mutator holds for a write besides the mutation itself: the fields of its dispatch
/// entry beside the mutation, and a buffer slot's worth of room (a writer's buffer grows by
/// doubling, so beside each slot there may be as much room again). The same for every kind of
/// mutation.
const BOOKKEEPING: usize = std::mem::size_of::<Entry>() - std::mem::size_of::<Mutation>()
    + std::mem::size_of::<Buffered>();

// An entry moves five times between its cut and its request; within 128 bytes the compiler
// moves it inline, past that each move is a `memmove` call (see `Entry::generation`).
const _: () = assert!(std::mem::size_of::<Entry>() <= 128);

/// A mutation's budgeted size as its entry holds it (32 bits), or the error that refuses it:
/// a mutation that holds more than the largest request frame
/// ([`MAX_REQUEST_LEN`](crate::rpc::frame::MAX_REQUEST_LEN), 2 GiB) is refused when it is
/// buffered rather than when its request is formed.
fn entry_bytes(bytes: usize) -> Result<u32> {
    let max = crate::rpc::frame::MAX_REQUEST_LEN;
    if bytes > max {
        return Err(Error::InvalidInput(format!(
            "a mutation of {bytes} bytes (its budgeted size) is more than a request frame can carry ({max} bytes)"
        )));
    }
    // Below 2^31.
    Ok(bytes as u32)
}

/// One mutation in a mutator's buffer (not cut yet).
struct Buffered {
    mutation: Mutation,
    /// Its budgeted size ([`BufferedMutator::budgeted_size`]), computed once in `mutate`: the
    /// budget's count (requests are cut by the heap size a put keeps).
    bytes: u32,
}

#[derive(Default)]
struct State {
    buffer: Vec<Buffered>,
    /// The buffer's budgeted sizes ([`BufferedMutator::budgeted_size`]): memory held.
    buffered_bytes: usize,
    /// The buffer's heap sizes by Java's count ([`Mutation::heap_size`]): what fills it.
    buffered_heap: usize,
    /// Room the buffer reserves on its first write: the size of the last cut.
    next_capacity: usize,
    /// Bytes cut and not yet answered (queued or in flight): memory, the budget's count.
    cut_bytes: usize,
    /// The most `cut_bytes` may be for a full buffer to be cut without waiting: the memory of
    /// `PENDING_BUFFERS` buffers like the last one cut ([`pending_bound`]).
    pending_bound: usize,
    /// Cuts made so far, and the unanswered mutations of each cut still open.
    cuts: u64,
    open_cuts: OpenCuts,
    failures: FailureLog,
    /// Failures made under the lock (a buffer cut after the dispatcher was gone), for the
    /// listener, which is called outside it (see [`Writer::tell_unheard`]).
    unheard: Vec<FailedMutation>,
    closed: bool,
    /// The last handle is gone without `close`: no `flush` can come, so a failure is logged
    /// (without a listener) rather than kept.
    dropped: bool,
}

impl State {
    fn unanswered_before(&self, cut: u64) -> bool {
        self.open_cuts.any_up_to(cut)
    }
}

/// One mutator: its buffer, its cuts' accounting and its failures. What the handles, the
/// shared dispatcher (as each mutation's [`Owner`]) and the request tasks share.
struct Writer {
    dispatch: Arc<Dispatch>,
    /// The client's bound on what all its mutators hold.
    budget: Arc<WriteBudget>,
    listener: Option<FailureListener>,
    write_buffer_size: usize,
    max_mutations: usize,
    kept_bound: KeptBound,
    state: Mutex<State>,
    /// Signalled whenever mutations of this mutator are answered.
    progress: Notify,
}

impl Writer {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn table(&self) -> &TableName {
        &self.dispatch.table
    }

    fn closed_error(&self, reason: &str) -> Error {
        self.dispatch.closed_error(reason)
    }

    fn buffer_full(&self, st: &State) -> bool {
        // Java's `BufferedMutatorImpl` flushes once the heap sizes add up to more than its
        // write buffer's size; so does this, so that both flush after as many mutations.
        st.buffered_heap > self.write_buffer_size || st.buffer.len() >= self.max_mutations
    }

    /// Whether a full buffer is cut now rather than waiting: while the mutator's cut,
    /// unanswered mutations hold less memory than `PENDING_BUFFERS` buffers like its last cut
    /// (see [`pending_bound`]). Memory compared with memory: a buffer fills by Java's count.
    fn may_cut(&self, st: &State) -> bool {
        st.cut_bytes == 0 || st.cut_bytes < st.pending_bound
    }

    /// Cuts the buffer if it is full and the earlier cuts leave it room (`may_cut`): the one
    /// rule for a write that fills the buffer and for an answer that gives room back. Whether
    /// it cut.
    fn cut_if_due(self: &Arc<Self>, st: &mut State) -> bool {
        let due = self.buffer_full(st) && self.may_cut(st);
        if due {
            self.cut(st);
        }
        due
    }

    /// Hands the buffer to the dispatcher (caller holds the state lock). Once the dispatcher
    /// is gone, the buffer fails at once instead.
    fn cut(self: &Arc<Self>, st: &mut State) {
        if st.buffer.is_empty() {
            return;
        }
        st.cuts += 1;
        let cut = st.cuts;
        let n = st.buffer.len();
        // The next buffer gets room for as many on its first write (not now: an idle
        // mutator holds no empty buffer's worth of room).
        st.next_capacity = n;
        let mut buffered = std::mem::take(&mut st.buffer);
        let bytes = std::mem::take(&mut st.buffered_bytes);
        let heap = std::mem::take(&mut st.buffered_heap);
        st.pending_bound = pending_bound(bytes, heap, self.write_buffer_size);
        self.budget.sent(bytes);
        // Counted before the dispatcher sees them: their answers (which take this lock, held
        // here) count them off.
        st.cut_bytes += bytes;
        st.open_cuts.open(cut, n);
        let owner = self.clone();
        let to_entry = |b: Buffered| Entry {
            mutation: b.mutation,
            bytes: b.bytes,
            located: None,
            generation: 0,
            cut,
            owner: owner.clone(),
            seq: 0,
            prev: 0,
        };
        if self.dispatch.submit(&mut buffered, to_entry) {
            return;
        }
        st.cut_bytes -= bytes;
        st.open_cuts.close(cut);
        tracing::error!(table = %self.table(), mutations = n, "the BufferedMutator's flusher is gone (the runtime shut down); buffered mutations fail, not sent");
        let reason = "its flusher is gone (the runtime shut down); not sent";
        for b in buffered {
            if self.listener.is_some() {
                st.unheard.push(FailedMutation::new(
                    b.mutation.clone(),
                    self.closed_error(reason),
                ));
            }
            let failed = FailedMutation::new(b.mutation, self.closed_error(reason));
            st.failures.push(failed, self.kept_bound);
        }
        // Under this mutator's lock: no unstalling here (it cuts every mutator, this one too).
        let _ = self.budget.release(bytes, true);
    }

    /// A mutation that failed for good: with a listener, the failure is built (the mutation
    /// cloned) for it, outside the lock, then kept; without one, it is built only if the log
    /// has room for it (see `FailureLog::keep`). Apart from `answered`, whose every call
    /// would otherwise move the failure's error and mutation through its frame.
    #[cold]
    #[inline(never)]
    fn failed(&self, mutation: &mut dyn FnMut() -> Mutation, error: Error) {
        if self.listener.is_some() {
            let f = FailedMutation::new(mutation(), error);
            self.tell(&f);
            let mut st = self.lock();
            if !st.dropped {
                st.failures.push(f, self.kept_bound);
            }
            return;
        }
        let mut st = self.lock();
        if st.dropped {
            drop(st);
            self.log_unreported(&FailedMutation::new(mutation(), error));
        } else {
            st.failures
                .keep(self.kept_bound, || FailedMutation::new(mutation(), error));
        }
    }

    /// Logs a failure of a mutator dropped without `close` and without a listener: nobody
    /// else can be told.
    fn log_unreported(&self, f: &FailedMutation) {
        tracing::error!(table = %self.table(), row = ?f.row(), error = %f.error, "a write of a BufferedMutator dropped without close() failed");
    }

    /// Hands a failure to the listener, if any (caller holds no lock; a panic is caught).
    fn tell(&self, f: &FailedMutation) {
        if let Some(listener) = &self.listener {
            if std::panic::catch_unwind(AssertUnwindSafe(|| listener(f))).is_err() {
                tracing::error!(table = %self.table(), row = ?f.row(), "the BufferedMutator's failure listener panicked (the failure is still reported by flush/close)");
            }
        }
    }

    /// Cuts the buffer, then tells the listener of what that failed at once (the dispatcher
    /// gone). Takes and releases the state lock.
    fn cut_and_tell(self: &Arc<Self>) {
        self.cut(&mut self.lock());
        self.tell_unheard();
    }

    /// Tells the listener of failures made under the lock (caller holds no lock).
    fn tell_unheard(&self) {
        if self.listener.is_none() {
            return;
        }
        let unheard = std::mem::take(&mut self.lock().unheard);
        for f in &unheard {
            self.tell(f);
        }
    }
}

impl Owner for Writer {
    /// The lines an answer touches: the state behind the lock (its open cuts and counts), the
    /// lock's waiters' `Notify` and the budget's handle, wherever the compiler placed them
    /// (the whole mutator is larger than the prefetch's four lines).
    fn prefetch(&self) {
        crate::prefetch::prefetch_object(&self.state);
        crate::prefetch::prefetch_object(&self.progress);
        crate::prefetch::prefetch_object(&self.budget);
    }

    /// A mutation's final outcome: counted off, its failure kept and handed to the listener
    /// (outside the lock, a panic caught). A buffer that filled while the earlier cuts held
    /// its room (`may_cut`) is cut by the answer that gives the room back: the write that
    /// filled it returned, and no other may come.
    fn answered(
        self: &Arc<Self>,
        sent: &Sent,
        mutation: &mut dyn FnMut() -> Mutation,
        outcome: Result<ActionResult>,
    ) {
        // The failure is kept before the cut is counted answered, so that a `flush` that sees
        // it answered also finds it.
        if let Err(error) = outcome {
            self.failed(mutation, error);
        }
        // Its bytes first, so that a `flush` that sees it answered also sees them released.
        self.budget.release_and_unstall(sent.bytes, true);
        let cut = {
            let mut st = self.lock();
            st.cut_bytes = st.cut_bytes.saturating_sub(sent.bytes);
            st.open_cuts.answered(sent.cut);
            self.cut_if_due(&mut st)
        };
        if cut {
            self.tell_unheard();
        }
        self.progress.notify_waiters();
    }
}

struct Handle {
    writer: Arc<Writer>,
}

impl Flushable for Handle {
    fn cut_buffer(&self) {
        self.writer.cut_and_tell();
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let w = &self.writer;
        let mut st = w.lock();
        st.dropped = true;
        let unanswered = st.open_cuts.unanswered();
        if !st.closed && (!st.buffer.is_empty() || unanswered > 0) {
            tracing::warn!(
                table = %w.table(),
                mutations = st.buffer.len(),
                bytes = st.buffered_bytes,
                unanswered,
                "BufferedMutator dropped without close(): its buffer is sent in the background; failures reach only the listener and this log"
            );
        }
        // Failures kept for a `flush` that can no longer come (a listener heard them).
        let unreported = st.failures.take();
        w.cut(&mut st);
        drop(st);
        if let (None, Some(Error::MutationsFailed { failures, dropped })) =
            (&w.listener, unreported)
        {
            for f in &failures {
                w.log_unreported(f);
            }
            if dropped > 0 {
                tracing::error!(table = %w.table(), failed = dropped, "more writes of a BufferedMutator dropped without close() failed (beyond the failures it keeps)");
            }
        }
        w.tell_unheard();
        w.dispatch.leave();
    }
}

/// Buffers puts and deletes of one table and sends them in batches, to every server
/// concurrently. Cheap to clone; clones share one buffer.
///
/// # What a result means
/// - `mutate` returning `Ok` means buffered, not applied. Every buffered mutation ends
///   acknowledged by HBase or reported failed, as the [`FailedMutation`] that names the put
///   or delete, by the next
///   [`flush`](Self::flush) or [`close`](Self::close) ([`Error::MutationsFailed`]) and by the
///   failure listener.
/// - A reported failure of kind [`ErrorKind::OutcomeUnknown`](crate::ErrorKind) means a
///   request carrying the mutation may have reached the server and no answer came: it may or
///   may not be applied (read the row to know). Puts and deletes carry no nonce, so this
///   stays unknown; applying one of them twice is harmless, and the order of writes to one
///   row is kept across retries. The exception, a delete of a column's newest version
///   without a timestamp (a second application would delete the next version), is not sent
///   again after such a request: it fails with this kind.
/// - Every other failure kind means HBase did not apply it: refused by the server (a
///   do-not-retry exception such as a missing family), never sent (invalid, or the mutator
///   closed: [`Error::MutatorClosed`]), or retries and time ran out on requests that were all
///   answered with errors.
/// - A `mutate` after `close` (or racing it) returns [`Error::MutatorClosed`]; nothing is
///   buffered.
/// - If the runtime running the mutator's tasks shuts down (or its dispatcher panics), every
///   unanswered write is still reported, to a `flush` awaited elsewhere too: one never sent
///   (buffered, queued, being located, or in a request whose task never ran) as
///   [`Error::MutatorClosed`], one in a request that had started as
///   [`ErrorKind::OutcomeUnknown`](crate::ErrorKind); later writes fail with
///   [`Error::MutatorClosed`].
///
/// # Dropping without `close`
/// Dropping the last handle sends what is still buffered in the background (and logs a
/// warning): its failures reach only the listener, or without one the log (each at
/// `ERROR`, with its row; so do failures kept for a `flush` that never came), and nobody
/// waits for it, so a runtime shut down (a process exiting) before the answers loses it.
/// Call `close`.
///
/// A failure listener that holds a clone of its mutator keeps the mutator alive: dropping
/// the other handles then sends nothing. Such a mutator must be closed.
#[derive(Clone)]
pub struct BufferedMutator {
    handle: Arc<Handle>,
}

impl BufferedMutator {
    pub(crate) fn new(
        rt: &Arc<Runtime>,
        budget: Arc<WriteBudget>,
        dispatchers: &Dispatchers,
        table: TableName,
        config: MutatorConfig,
    ) -> BufferedMutator {
        let c = &rt.config;
        let periodic = config.periodic_flush.or(c.write_buffer_periodic_flush);
        let mut opts = rt.defaults.clone();
        if let Some(t) = config.operation_timeout {
            opts.operation_timeout = t;
        }
        let writer = Arc::new(Writer {
            dispatch: dispatchers.0.join(rt, &budget, &table, opts),
            budget,
            listener: config.listener,
            write_buffer_size: config.write_buffer_size.unwrap_or(c.write_buffer_size),
            max_mutations: config
                .max_mutations
                .or(c.write_buffer_max_mutations)
                .unwrap_or(usize::MAX),
            kept_bound: KeptBound {
                failures: config
                    .max_failures_kept
                    .unwrap_or(DEFAULT_MAX_FAILURES_KEPT),
                bytes: config
                    .max_failure_bytes_kept
                    .unwrap_or(DEFAULT_MAX_FAILURE_BYTES_KEPT),
            },
            state: Mutex::new(State::default()),
            progress: Notify::new(),
        });
        let handle = Arc::new(Handle { writer });
        let flushable: Weak<dyn Flushable> = Arc::downgrade(&handle) as Weak<dyn Flushable>;
        handle.writer.budget.register(flushable);
        if let Some(interval) = periodic {
            tokio::spawn(periodic_flusher(Arc::downgrade(&handle), interval));
        }
        BufferedMutator { handle }
    }

    /// The bytes `mutation` counts against the client's write budget
    /// ([`write_buffer_limit`](crate::ClientConfigBuilder::write_buffer_limit)) while it is
    /// buffered or in flight: the memory it holds and the mutator's bookkeeping for it. (The
    /// mutator's own buffer fills by Java's count instead, [`Mutation::heap_size`], so that it
    /// flushes where Java's does.) While it is buffered, an upper bound of the memory the process
    /// holds for it (`tests/mutator_memory.rs` measures both). Once it is sent, its encoded
    /// request is held too, which the budget does not count (the heap's peak is a small
    /// multiple of the budget; the same test bounds it).
    pub fn budgeted_size(mutation: &Mutation) -> usize {
        mutation.memory_size() + BOOKKEEPING
    }

    /// The table written to.
    pub fn table(&self) -> &TableName {
        self.handle.writer.table()
    }

    /// Buffers a put or delete. Returns at once unless the buffer is full while this mutator
    /// already holds [`PENDING_BUFFERS`] buffers of unanswered mutations, or all mutators of
    /// the client together hold their
    /// [`write_buffer_limit`](crate::ClientConfigBuilder::write_buffer_limit); then it waits
    /// (backpressure). After [`close`](Self::close) it fails with [`Error::MutatorClosed`].
    ///
    /// Dropping the future while it waits (a timeout around it, say) leaves the write out:
    /// not buffered, its room in the budget given back.
    ///
    /// A mutation that fails validation, or whose [budgeted size](Self::budgeted_size) is more
    /// than a request frame can carry (2 GiB), is refused with [`Error::InvalidInput`].
    pub async fn mutate(&self, mutation: impl Into<Mutation>) -> Result<()> {
        let mutation = mutation.into();
        let core = &self.handle.writer;
        mutation.validate(core.dispatch.rt.config.keyvalue_max_size)?;
        let bytes = Self::budgeted_size(&mutation);
        let bytes32 = entry_bytes(bytes)?;
        let heap = mutation.heap_size();
        if let Some(e) = self.refusal(&core.lock()) {
            return Err(e);
        }
        self.take_budget(bytes).await;
        // The bytes are this call's until the write is buffered: a `mutate` refused, or
        // dropped while it waits for room (a caller's timeout), gives them back.
        let mut taken = Taken {
            budget: &core.budget,
            bytes,
            buffered: false,
        };
        let mut entry = Some(Buffered {
            mutation,
            bytes: bytes32,
        });
        loop {
            let progress = core.progress.notified();
            {
                let mut st = core.lock();
                if let Some(e) = self.refusal(&st) {
                    return Err(e);
                }
                core.cut_if_due(&mut st);
                if !core.buffer_full(&st) {
                    if st.buffer.capacity() == 0 {
                        let room = st.next_capacity;
                        st.buffer.reserve(room);
                    }
                    st.buffer.push(entry.take().expect("pushed once"));
                    st.buffered_bytes += bytes;
                    st.buffered_heap = st.buffered_heap.saturating_add(heap);
                    taken.buffered = true;
                    core.cut_if_due(&mut st);
                    return Ok(());
                }
            }
            progress.await;
        }
    }

    fn refusal(&self, st: &State) -> Option<Error> {
        let core = &self.handle.writer;
        if st.closed {
            Some(core.closed_error("closed; the write was not buffered"))
        } else if core.dispatch.is_dead() {
            Some(core.closed_error(
                "its flusher is gone (the runtime shut down); the write was not buffered",
            ))
        } else {
            None
        }
    }

    /// Waits until the client's write budget has room for `bytes` (first come, first
    /// served), cutting this buffer (and, when nothing is in flight anywhere, every idle one)
    /// so that room comes back.
    async fn take_budget(&self, bytes: usize) {
        let budget = &self.handle.writer.budget;
        let (mut waiting, nothing_in_flight) = match budget.take_or_queue(bytes) {
            Ok(()) => return,
            Err(queued) => queued,
        };
        // This writer's own buffer goes out, so that its answer frees room.
        self.cut_batch();
        if nothing_in_flight {
            budget.flush_idle_buffers();
        }
        // Admitted by answers, in queue order. Writers behind the front only wait: the
        // front one is admitted before them, so only it can be stalled.
        if waiting.admitted_or_front().await == Admission::Admitted {
            return;
        }
        loop {
            // When the last bytes in flight are answered while writers wait, that answer
            // cuts the idle buffers (`release_and_unstall`). The front writer re-checks for
            // a write buffered just after such a cut (nothing in flight again, and no answer
            // to come): when it becomes the front, and then on a long tick.
            if budget.nothing_in_flight() {
                budget.flush_idle_buffers();
            }
            if waiting.admitted_within(STALL_RECHECK).await {
                return;
            }
        }
    }

    /// Hands the buffer to the dispatcher.
    fn cut_batch(&self) {
        self.handle.writer.cut_and_tell();
    }

    /// Bytes all mutators of this client hold together (buffered or in flight), counted
    /// against its [`write_buffer_limit`](crate::ClientConfigBuilder::write_buffer_limit).
    pub fn client_buffered_bytes(&self) -> usize {
        self.handle.writer.budget.held()
    }

    /// Sends everything buffered and waits until HBase answered all of it (writes buffered
    /// after the call began are not waited for). Returns the mutations that failed since the
    /// last flush as [`Error::MutationsFailed`].
    pub async fn flush(&self) -> Result<()> {
        let core = &self.handle.writer;
        let upto = {
            let mut st = core.lock();
            core.cut(&mut st);
            st.cuts
        };
        core.tell_unheard();
        loop {
            let progress = core.progress.notified();
            {
                let mut st = core.lock();
                if !st.unanswered_before(upto) {
                    return st.failures.take().map_or(Ok(()), Err);
                }
            }
            progress.await;
        }
    }

    /// Refuses further mutations (a `mutate` racing `close` either made it into the buffer
    /// before, and is sent, or fails with [`Error::MutatorClosed`]), then flushes.
    pub async fn close(&self) -> Result<()> {
        self.handle.writer.lock().closed = true;
        self.flush().await
    }

    /// Bytes currently buffered and not yet handed to a flush, as the write budget counts
    /// them (their [`budgeted_size`](Self::budgeted_size)s: memory held).
    pub fn buffered_bytes(&self) -> usize {
        self.handle.writer.lock().buffered_bytes
    }

    /// The heap sizes of the mutations buffered and not yet handed to a flush, by Java's count
    /// ([`Mutation::heap_size`]): what fills the buffer up to its
    /// [`write_buffer_size`](MutatorConfig::write_buffer_size), as Java's `BufferedMutatorImpl`
    /// counts its current write buffer size.
    pub fn buffered_heap_size(&self) -> usize {
        self.handle.writer.lock().buffered_heap
    }

    /// Mutations cut from the buffer and not yet answered (queued or in flight).
    pub fn unanswered_mutations(&self) -> usize {
        self.handle.writer.lock().open_cuts.unanswered()
    }
}

/// Budget bytes a `mutate` took for a write it has not buffered yet; given back on drop
/// unless the write was buffered (the buffer's bytes are released when answered).
struct Taken<'a> {
    budget: &'a WriteBudget,
    bytes: usize,
    buffered: bool,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if !self.buffered {
            self.budget.release_and_unstall(self.bytes, false);
        }
    }
}

async fn periodic_flusher(handle: Weak<Handle>, interval: Duration) {
    let mut tick = tokio::time::interval(interval);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(handle) = handle.upgrade() else {
            return;
        };
        let core = &handle.writer;
        let mut st = core.lock();
        if st.closed {
            return;
        }
        core.cut(&mut st);
        drop(st);
        core.tell_unheard();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Put;

    /// A failure past the log's limit is counted without building it (its mutation is not
    /// cloned); one within it is kept.
    #[test]
    fn a_failure_past_the_kept_limit_is_not_built() {
        let mut log = FailureLog::default();
        let mut built = 0;
        let bound = KeptBound {
            failures: 2,
            bytes: usize::MAX,
        };
        for _ in 0..5 {
            log.keep(bound, || {
                built += 1;
                FailedMutation::new(
                    Put::new("r").add("f", "q", "v").into(),
                    Error::InvalidInput("refused".into()),
                )
            });
        }
        assert_eq!(built, 2);
        match log.take() {
            Some(Error::MutationsFailed { failures, dropped }) => {
                assert_eq!((failures.len(), dropped), (2, 3));
            }
            other => panic!("expected MutationsFailed, got {other:?}"),
        }
    }

    /// The byte bound: failures are kept while those kept before hold less than it (the last
    /// one kept may pass it), later ones counted without being built; a flush that returns
    /// them starts the count again.
    #[test]
    fn failures_are_kept_while_their_bytes_are_under_the_bound() {
        let put = || Put::new("r").add("f", "q", vec![0u8; 1000]);
        let one = Mutation::from(put()).memory_size();
        let bound = KeptBound {
            failures: usize::MAX,
            bytes: 2 * one + 1,
        };
        let mut log = FailureLog::default();
        let mut built = 0;
        let mut fail = |log: &mut FailureLog| {
            log.keep(bound, || {
                built += 1;
                FailedMutation::new(put().into(), Error::InvalidInput("refused".into()))
            })
        };
        for _ in 0..5 {
            fail(&mut log);
        }
        let kept = |log: &mut FailureLog| match log.take() {
            Some(Error::MutationsFailed { failures, dropped }) => (failures.len(), dropped),
            other => panic!("expected MutationsFailed, got {other:?}"),
        };
        // 0 and `one` bytes kept before the first two, `2 * one` (under the bound) before
        // the third, which takes the count past it.
        assert_eq!(kept(&mut log), (3, 2));
        fail(&mut log);
        assert_eq!(kept(&mut log), (1, 0));
        assert_eq!(built, 4);
    }

    /// The bound on cut bytes is memory: buffers like the last cut, whose memory is less than
    /// its Java count (a YCSB put: about half), allow as many buffers as their heap, no more.
    #[test]
    fn the_pending_bound_is_four_buffers_of_memory() {
        let wbs = 2 << 20;
        // A cut of 880 puts of 2,384 bytes by Java's count, 1,200 bytes of memory each.
        let bound = pending_bound(880 * 1200, 880 * 2384, wbs);
        let buffers = bound as f64 / (wbs as f64 * 1200.0 / 2384.0);
        assert!((buffers - PENDING_BUFFERS as f64).abs() < 0.01, "{buffers}");
        // Java's count above memory or below it, and no cut heap at all: no overflow.
        assert_eq!(pending_bound(100, 100, wbs), wbs * PENDING_BUFFERS);
        assert_eq!(pending_bound(usize::MAX, 1, usize::MAX), usize::MAX);
        assert_eq!(pending_bound(0, 0, wbs), 0);
    }

    #[test]
    fn a_mutation_larger_than_a_request_frame_is_refused() {
        let max = crate::rpc::frame::MAX_REQUEST_LEN;
        assert_eq!(entry_bytes(0).unwrap(), 0);
        assert_eq!(entry_bytes(max).unwrap() as usize, max);
        for too_large in [max + 1, u32::MAX as usize, usize::MAX] {
            match entry_bytes(too_large) {
                Err(Error::InvalidInput(m)) => {
                    assert!(m.contains(&too_large.to_string()), "{m}")
                }
                other => panic!("expected InvalidInput, got {other:?}"),
            }
        }
    }
}
