//! `BufferedMutator`: client-side write buffering (autoflush off).
//!
//! `mutate` appends to a buffer. A full buffer (its byte size, or its mutation count) is cut
//! and queued for the mutator's dispatcher task, which sends queued mutations as `Multi`s to
//! every server concurrently: at most `max_tasks_per_server` requests per server and
//! `max_tasks_per_region` per region (HBase's `hbase.client.max.perserver.tasks` and
//! `perregion.tasks`). A region that does not answer (in transition, its server stopped or
//! frozen) holds back only its own mutations; writes to every other region keep flowing.
//!
//! The dispatcher locates each cut mutation once and places it in its region's queue; a
//! request takes mutations from the front of one server's ready region queues. A region whose
//! request is in flight is not looked at again until that request ends, so a dispatch pass
//! costs what it places and sends, not what waits. A region queue counts against the task
//! limit of the server its region is on as last learned: when a region moves, its queue
//! follows as soon as the client learns the new location (a write to it located anew, or one
//! of its requests ending after it relocated), so it does not wait for the old server's slots.
//!
//! Order: two writes to the same row are applied in the order they were buffered, also
//! across retries. All unanswered writes to a row sit in one region queue (a later write
//! follows an earlier one's queue even if its region moved meanwhile), queues send in order,
//! and a row has at most one request in flight at a time (writes to one row within one
//! request go in buffered order, and a retry resends the failed ones in that order).
//!
//! Memory: `mutate` waits once its buffer is full and the mutator already holds
//! [`PENDING_BUFFERS`] buffers' worth of cut, unanswered mutations, so one mutator holds about
//! five buffers. All mutators of one client also share one bound ([`WriteBudget`], the
//! client's `write_buffer_limit`): bytes count from `mutate` until answered. A `mutate` that
//! would pass the bound cuts its own buffer and waits for answers to release room; when
//! nothing at all is in flight, it cuts every idle buffer, so the wait always ends.
//!
//! Every mutation is acknowledged by HBase or reported back, with its row and error, by
//! `flush`/`close` (as [`Error::MutationsFailed`]) and the optional failure listener; see
//! [`BufferedMutator`] for which errors mean "not applied" and which "unknown".

use std::collections::hash_map::Entry as Slot;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rustc_hash::FxHashMap;
use tokio::sync::Notify;

use crate::error::{Error, FailedMutation, Result};
use crate::ops::{Action, ActionResult, Mutation};
use crate::region::{Location, TableName};
use crate::runtime::caller::CallOptions;
use crate::runtime::locator::Seek;
use crate::runtime::Runtime;
use crate::write_budget::Flushable;
pub(crate) use crate::write_budget::WriteBudget;

/// Called with each mutation that failed for good.
pub type FailureListener = Arc<dyn Fn(&FailedMutation) + Send + Sync>;

/// Buffers' worth of cut and unanswered mutations one mutator holds before `mutate` waits.
pub const PENDING_BUFFERS: usize = 4;

/// Failures kept for `flush`/`close` when [`MutatorConfig::max_failures_kept`] is not set.
pub const DEFAULT_MAX_FAILURES_KEPT: usize = 10_000;

/// Settings of a [`BufferedMutator`]. Unset ones come from the client's
/// [`ClientConfig`](crate::ClientConfig) (and so from `hbase-site.xml`).
#[derive(Clone, Default)]
pub struct MutatorConfig {
    write_buffer_size: Option<usize>,
    max_mutations: Option<usize>,
    periodic_flush: Option<Duration>,
    operation_timeout: Option<Duration>,
    max_failures_kept: Option<usize>,
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
            .field("listener", &self.listener.is_some())
            .finish()
    }
}

impl MutatorConfig {
    /// Bytes buffered before a flush starts (default: the client's
    /// [`write_buffer_size`](crate::ClientConfig::write_buffer_size), 2 MiB unless
    /// `hbase.client.write.buffer` says otherwise).
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
        self.periodic_flush = Some(interval).filter(|d| !d.is_zero());
        self
    }

    /// How long the retries of one request may take before its mutations fail (default: the
    /// client's operation timeout). Time spent queued behind earlier writes does not count.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = Some(timeout.max(Duration::from_millis(1)));
        self
    }

    /// Failures kept between two flushes (default [`DEFAULT_MAX_FAILURES_KEPT`]); more are
    /// counted in [`Error::MutationsFailed`]'s `dropped` (the listener still sees each).
    pub fn max_failures_kept(mut self, failures: usize) -> Self {
        self.max_failures_kept = Some(failures);
        self
    }

    /// Called for every mutation that fails for good, as soon as it does, from the task that
    /// sent it and outside the mutator's locks. A listener that panics is caught (and logged);
    /// the failure is still reported by `flush`/`close`.
    pub fn on_failure(
        mut self,
        listener: impl Fn(&FailedMutation) + Send + Sync + 'static,
    ) -> Self {
        self.listener = Some(Arc::new(listener));
        self
    }
}

/// One mutation from `mutate` until its answer.
struct Entry {
    mutation: Mutation,
    /// Its heap size, computed once in `mutate`: the budget's count, and the multi layer's
    /// for cutting requests.
    bytes: usize,
    /// Where the dispatcher located it, and the region cache's generation before it did:
    /// the request sends it there unless a cached location was dropped since.
    located: Option<(Location, u64)>,
    /// The cut it came in (for `flush`, which waits for the cuts before it).
    cut: u64,
}

/// Failures kept for the next `flush`: bounded, with each long server message kept whole
/// once.
#[derive(Default)]
struct FailureLog {
    kept: Vec<FailedMutation>,
    dropped: u64,
    messages: HashSet<String>,
}

impl FailureLog {
    fn push(&mut self, mut failed: FailedMutation, limit: usize) {
        if self.kept.len() >= limit {
            self.dropped += 1;
            return;
        }
        if let Some(remote) = failed.error.remote_mut() {
            if self.messages.contains(&remote.message) {
                // Repeated: the first copy holds the stack trace; keep its first line here.
                remote.message = remote.first_line().to_string();
            } else if self.messages.len() < limit {
                self.messages.insert(remote.message.clone());
            }
        }
        self.kept.push(failed);
    }

    fn take(&mut self) -> Option<Error> {
        let failures = std::mem::take(&mut self.kept);
        let dropped = std::mem::take(&mut self.dropped);
        self.messages.clear();
        (!failures.is_empty() || dropped > 0)
            .then_some(Error::MutationsFailed { failures, dropped })
    }
}

#[derive(Default)]
struct State {
    buffer: Vec<Entry>,
    buffered_bytes: usize,
    /// Room the buffer reserves on its first write: the size of the last cut.
    next_capacity: usize,
    /// Cut, not yet placed in a region's queue, in buffered order.
    queue: VecDeque<Entry>,
    /// Taken from `queue` by a dispatch pass that is locating them (not placed yet).
    locating: usize,
    /// Bytes cut and not yet answered (queued or in flight).
    cut_bytes: usize,
    /// Cuts made so far, and the unanswered mutations of each cut still open.
    cuts: u64,
    open_cuts: BTreeMap<u64, usize>,
    /// Placed mutations waiting to be sent, per region (see [`RegionQueue`]).
    // These maps are touched several times per mutation, so they hash with FxHash instead of
    // SipHash (about 1,400 instructions per buffered put less). FxHash does not resist chosen
    // keys: an application writing row keys picked by an adversary (say, user-supplied ids)
    // could make many rows collide and each `rows` operation cost O(colliding rows). Region
    // and server names come from the cluster. The writer of the rows is the application
    // itself, so the worst it can do is slow its own mutator; we take the speed.
    regions: FxHashMap<Bytes, RegionQueue>,
    /// Requests in flight per server, and its regions with mutations ready to go.
    servers: FxHashMap<String, ServerQueue>,
    /// Rows with unanswered placed mutations: which region queue holds them all.
    rows: FxHashMap<Bytes, PendingRow>,
    /// Requests formed so far (their ids).
    requests: u64,
    failures: FailureLog,
    /// Failures made under the lock (a buffer cut after the dispatcher was gone), for the
    /// listener, which is called outside it (see [`Core::tell_unheard`]).
    unheard: Vec<FailedMutation>,
    closed: bool,
    /// The last handle is gone: the dispatcher ends once nothing is queued.
    abandoned: bool,
    /// The dispatcher is gone (the runtime shut down): nothing can be sent any more.
    dead: bool,
}

/// The mutations placed for one region (by the location they had when placed), in buffered
/// order. The requests made of them are routed by the multi layer, which sends each action to
/// the location it was placed with only while the region cache has dropped no location since
/// (else it locates every action again), so a queue whose region moved or split still sends
/// to the right servers.
struct RegionQueue {
    /// The server its region is on, as last learned (when the queue was made, when a write
    /// placed in it was located elsewhere, or when one of its requests ended and the location
    /// cache knew better); its task limit applies to the queue's next requests.
    server: String,
    entries: VecDeque<Entry>,
    /// Requests in flight made from this queue.
    tasks: usize,
    /// Listed in its server's `ready`.
    ready: bool,
}

#[derive(Default)]
struct ServerQueue {
    tasks: usize,
    /// Region queues with entries, in the order they became ready.
    ready: VecDeque<Bytes>,
}

/// A row's unanswered mutations after placement: all of them sit in (or were sent from) one
/// region queue, so its writes go out in buffered order even when its region moved between
/// two of them.
struct PendingRow {
    queue: Bytes,
    placed: usize,
    in_flight: usize,
    /// The last request that took one of its writes.
    request: u64,
}

impl State {
    /// Nothing is buffered or waiting to be placed (queued, or being located). Only an idle
    /// mutator frees its emptied maps (see [`shed_empty`]): a busy writer's maps empty between
    /// two of its batches while it fills the next buffer, and freeing them then made each
    /// batch grow them again from nothing.
    fn idle(&self) -> bool {
        self.buffer.is_empty() && self.queue.is_empty() && self.locating == 0
    }

    fn unanswered_before(&self, cut: u64) -> bool {
        self.open_cuts.keys().next().is_some_and(|&c| c <= cut)
    }
}

/// What the dispatcher, the request tasks and the handles share.
struct Core {
    rt: Arc<Runtime>,
    /// The client's bound on what all its mutators hold.
    budget: Arc<WriteBudget>,
    table: TableName,
    listener: Option<FailureListener>,
    opts: CallOptions,
    write_buffer_size: usize,
    max_mutations: usize,
    max_failures_kept: usize,
    tasks_per_server: usize,
    tasks_per_region: usize,
    max_request_size: usize,
    state: Mutex<State>,
    /// Signalled whenever mutations are answered.
    progress: Notify,
    /// Wakes the dispatcher: something was cut, or a request ended.
    wake: Notify,
}

impl Core {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn closed_error(&self, reason: &str) -> Error {
        Error::MutatorClosed {
            table: self.table.to_string(),
            reason: reason.to_string(),
        }
    }

    fn buffer_full(&self, st: &State) -> bool {
        st.buffered_bytes >= self.write_buffer_size || st.buffer.len() >= self.max_mutations
    }

    fn may_cut(&self, st: &State) -> bool {
        st.cut_bytes < self.write_buffer_size.saturating_mul(PENDING_BUFFERS)
    }

    /// Hands the buffer to the dispatcher (caller holds the state lock). Once the dispatcher
    /// is gone, the buffer fails at once instead.
    fn cut(&self, st: &mut State) {
        if st.buffer.is_empty() {
            return;
        }
        st.cuts += 1;
        let cut = st.cuts;
        // The next buffer gets room for as many on its first write (not now: an idle
        // mutator holds no empty buffer's worth of room).
        st.next_capacity = st.buffer.len();
        let mut entries = std::mem::take(&mut st.buffer);
        let bytes = std::mem::take(&mut st.buffered_bytes);
        self.budget.sent(bytes);
        if st.dead {
            tracing::error!(table = %self.table, mutations = entries.len(), "the BufferedMutator's flusher is gone (the runtime shut down); buffered mutations fail, not sent");
            let reason = "its flusher is gone (the runtime shut down); not sent";
            for e in entries {
                let row = e.mutation.row().clone();
                if self.listener.is_some() {
                    st.unheard.push(FailedMutation {
                        row: row.clone(),
                        error: self.closed_error(reason),
                    });
                }
                let failed = FailedMutation {
                    row,
                    error: self.closed_error(reason),
                };
                st.failures.push(failed, self.max_failures_kept);
            }
            self.budget.release(bytes, true);
            return;
        }
        st.cut_bytes += bytes;
        *st.open_cuts.entry(cut).or_default() += entries.len();
        for e in &mut entries {
            e.cut = cut;
        }
        st.queue.extend(entries);
        self.wake.notify_one();
    }

    /// Hands a failure to the listener, if any (caller holds no lock; a panic is caught).
    fn tell(&self, f: &FailedMutation) {
        if let Some(listener) = &self.listener {
            if std::panic::catch_unwind(AssertUnwindSafe(|| listener(f))).is_err() {
                tracing::error!(table = %self.table, row = ?f.row, "the BufferedMutator's failure listener panicked (the failure is still reported by flush/close)");
            }
        }
    }

    /// Cuts the buffer, then tells the listener of what that failed at once (the dispatcher
    /// gone). Takes and releases the state lock.
    fn cut_and_tell(&self) {
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

    /// A mutation's final outcome: counted off, its row and region freed, its failure kept
    /// and handed to the listener (outside the lock, a panic caught).
    fn settle(&self, entry: &Sent, outcome: Result<ActionResult>) {
        let failed = outcome.err().map(|error| FailedMutation {
            row: entry.row.clone(),
            error,
        });
        if let Some(f) = &failed {
            self.tell(f);
        }
        // Its bytes first, so that a `flush` that sees it answered also sees them released.
        self.budget.release(entry.bytes, true);
        {
            let mut st = self.lock();
            if let Some(f) = failed {
                st.failures.push(f, self.max_failures_kept);
            }
            if entry.stage != Stage::Unplaced {
                if let Some(p) = st.rows.get_mut(&entry.row) {
                    p.placed -= 1;
                    if entry.stage == Stage::InFlight {
                        p.in_flight -= 1;
                    }
                    if p.placed == 0 {
                        st.rows.remove(&entry.row);
                        if st.idle() {
                            shed_empty(&mut st.rows);
                        }
                    }
                }
            }
            st.cut_bytes = st.cut_bytes.saturating_sub(entry.bytes);
            if let Some(n) = st.open_cuts.get_mut(&entry.cut) {
                *n -= 1;
                if *n == 0 {
                    st.open_cuts.remove(&entry.cut);
                    if st.open_cuts.is_empty() {
                        // An emptied map keeps its node; a new one holds nothing.
                        st.open_cuts = BTreeMap::new();
                    }
                }
            }
        }
        self.progress.notify_waiters();
    }
}

struct Handle {
    core: Arc<Core>,
}

impl Flushable for Handle {
    fn cut_buffer(&self) {
        self.core.cut_and_tell();
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let core = &self.core;
        let mut st = core.lock();
        if !st.closed && !st.buffer.is_empty() {
            tracing::warn!(
                table = %core.table,
                mutations = st.buffer.len(),
                bytes = st.buffered_bytes,
                "BufferedMutator dropped without close(): its buffer is sent in the background; failures reach only the listener and this log"
            );
        }
        core.cut(&mut st);
        st.abandoned = true;
        drop(st);
        core.tell_unheard();
        core.wake.notify_one();
    }
}

/// Buffers puts and deletes of one table and sends them in batches, to every server
/// concurrently. Cheap to clone; clones share one buffer.
///
/// # What a result means
/// - `mutate` returning `Ok` means buffered, not applied. Every buffered mutation ends
///   acknowledged by HBase or reported failed, with its row, by the next
///   [`flush`](Self::flush) or [`close`](Self::close) ([`Error::MutationsFailed`]) and by the
///   failure listener.
/// - A reported failure of kind [`ErrorKind::OutcomeUnknown`](crate::ErrorKind) means a
///   request carrying the mutation may have reached the server and no answer came: it may or
///   may not be applied (read the row to know). Puts and deletes carry no nonce, so this
///   stays unknown; applying one of them twice is harmless, and the order of writes to one
///   row is kept across retries.
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
/// warning): its failures reach only the listener and the log, and nobody waits for it, so
/// a runtime shut down (a process exiting) before the answers loses it. Call `close`.
#[derive(Clone)]
pub struct BufferedMutator {
    handle: Arc<Handle>,
}

impl BufferedMutator {
    pub(crate) fn new(
        rt: Arc<Runtime>,
        budget: Arc<WriteBudget>,
        table: TableName,
        config: MutatorConfig,
    ) -> BufferedMutator {
        let c = &rt.config;
        let periodic = config.periodic_flush.or(c.write_buffer_periodic_flush);
        let mut opts = rt.defaults.clone();
        if let Some(t) = config.operation_timeout {
            opts.operation_timeout = t;
        }
        let core = Arc::new(Core {
            budget,
            table,
            listener: config.listener,
            opts,
            write_buffer_size: config.write_buffer_size.unwrap_or(c.write_buffer_size),
            max_mutations: config
                .max_mutations
                .or(c.write_buffer_max_mutations)
                .unwrap_or(usize::MAX),
            max_failures_kept: config
                .max_failures_kept
                .unwrap_or(DEFAULT_MAX_FAILURES_KEPT),
            tasks_per_server: c.max_tasks_per_server,
            tasks_per_region: c.max_tasks_per_region,
            max_request_size: c.max_request_size,
            state: Mutex::new(State::default()),
            progress: Notify::new(),
            wake: Notify::new(),
            rt,
        });
        // The guard exists before the task: a task dropped unpolled (its runtime shutting
        // down) still marks the mutator dead, so writes are refused instead of never sent.
        tokio::spawn(dispatcher(DispatcherGuard(core.clone())));
        let handle = Arc::new(Handle { core });
        let flushable: Weak<dyn Flushable> = Arc::downgrade(&handle) as Weak<dyn Flushable>;
        handle.core.budget.register(flushable);
        if let Some(interval) = periodic {
            tokio::spawn(periodic_flusher(Arc::downgrade(&handle), interval));
        }
        BufferedMutator { handle }
    }

    /// The table written to.
    pub fn table(&self) -> &TableName {
        &self.handle.core.table
    }

    /// Buffers a put or delete. Returns at once unless the buffer is full while this mutator
    /// already holds [`PENDING_BUFFERS`] buffers of unanswered mutations, or all mutators of
    /// the client together hold their
    /// [`write_buffer_limit`](crate::ClientConfigBuilder::write_buffer_limit); then it waits
    /// (backpressure). After [`close`](Self::close) it fails with [`Error::MutatorClosed`].
    ///
    /// Dropping the future while it waits (a timeout around it, say) leaves the write out:
    /// not buffered, its room in the budget given back.
    pub async fn mutate(&self, mutation: impl Into<Mutation>) -> Result<()> {
        let mutation = mutation.into();
        let core = &*self.handle.core;
        mutation.validate(core.rt.config.keyvalue_max_size)?;
        let bytes = mutation.heap_size();
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
        let mut entry = Some(Entry {
            mutation,
            bytes,
            cut: 0,
            located: None,
        });
        loop {
            let progress = core.progress.notified();
            {
                let mut st = core.lock();
                if let Some(e) = self.refusal(&st) {
                    return Err(e);
                }
                if core.buffer_full(&st) && core.may_cut(&st) {
                    core.cut(&mut st);
                }
                if !core.buffer_full(&st) {
                    if st.buffer.capacity() == 0 {
                        let room = st.next_capacity;
                        st.buffer.reserve(room);
                    }
                    st.buffer.push(entry.take().expect("pushed once"));
                    st.buffered_bytes += bytes;
                    taken.buffered = true;
                    if core.buffer_full(&st) && core.may_cut(&st) {
                        core.cut(&mut st);
                    }
                    return Ok(());
                }
            }
            progress.await;
        }
    }

    fn refusal(&self, st: &State) -> Option<Error> {
        let core = &self.handle.core;
        if st.closed {
            Some(core.closed_error("closed; the write was not buffered"))
        } else if st.dead {
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
        let budget = &self.handle.core.budget;
        let (mut waiting, mut nothing_in_flight) = match budget.take_or_queue(bytes) {
            Ok(()) => return,
            Err(queued) => queued,
        };
        loop {
            self.cut_batch();
            if nothing_in_flight {
                budget.flush_idle_buffers();
            }
            // Admitted by answers; the tick re-checks for buffers that filled while nothing
            // was in flight.
            if waiting.admitted_within(Duration::from_millis(50)).await {
                return;
            }
            nothing_in_flight = budget.nothing_in_flight();
        }
    }

    /// Hands the buffer to the dispatcher.
    fn cut_batch(&self) {
        self.handle.core.cut_and_tell();
    }

    /// Bytes all mutators of this client hold together (buffered or in flight), counted
    /// against its [`write_buffer_limit`](crate::ClientConfigBuilder::write_buffer_limit).
    pub fn client_buffered_bytes(&self) -> usize {
        self.handle.core.budget.held()
    }

    /// Sends everything buffered and waits until HBase answered all of it (writes buffered
    /// after the call began are not waited for). Returns the mutations that failed since the
    /// last flush as [`Error::MutationsFailed`].
    pub async fn flush(&self) -> Result<()> {
        let core = &*self.handle.core;
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
        self.handle.core.lock().closed = true;
        self.flush().await
    }

    /// Bytes currently buffered and not yet handed to a flush.
    pub fn buffered_bytes(&self) -> usize {
        self.handle.core.lock().buffered_bytes
    }

    /// Mutations cut from the buffer and not yet answered (queued or in flight).
    pub fn unanswered_mutations(&self) -> usize {
        self.handle.core.lock().open_cuts.values().sum()
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
            self.budget.release(self.bytes, false);
        }
    }
}

/// Where a mutation was when it was settled (what settling must count off).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Cut, not yet placed in a region queue.
    Unplaced,
    /// In a region queue.
    Queued,
    /// In a request.
    InFlight,
}

/// A mutation handed to a request: what settling it needs.
struct Sent {
    row: Bytes,
    bytes: usize,
    cut: u64,
    stage: Stage,
}

impl Sent {
    fn of(e: &Entry, stage: Stage) -> Sent {
        Sent {
            row: e.mutation.row().clone(),
            bytes: e.bytes,
            cut: e.cut,
            stage,
        }
    }
}

/// One request: mutations of one server's ready region queues, in each queue's order.
struct Request {
    server: String,
    regions: Vec<Bytes>,
    entries: Vec<Entry>,
}

/// Ends the mutator's sending for good when the dispatcher ends or never ran (the runtime shut
/// down, or a bug panicked it): every queued mutation fails, later cuts fail at once, and
/// later writes are refused.
struct DispatcherGuard(Arc<Core>);

impl Drop for DispatcherGuard {
    fn drop(&mut self) {
        let core = &self.0;
        let queued: Vec<Sent> = {
            let mut st = core.lock();
            if st.abandoned && st.queue.is_empty() && st.regions.is_empty() {
                return;
            }
            st.dead = true;
            let mut queued: Vec<Sent> = st
                .queue
                .drain(..)
                .map(|e| Sent::of(&e, Stage::Unplaced))
                .collect();
            for q in st.regions.values_mut() {
                queued.extend(q.entries.drain(..).map(|e| Sent::of(&e, Stage::Queued)));
                q.ready = false;
            }
            for s in st.servers.values_mut() {
                s.ready.clear();
            }
            queued
        };
        if !queued.is_empty() {
            tracing::error!(table = %core.table, mutations = queued.len(), "the BufferedMutator's flusher ended; queued mutations fail");
        }
        for sent in &queued {
            core.settle(
                sent,
                Err(core.closed_error("its flusher is gone (the runtime shut down); not sent")),
            );
        }
        core.progress.notify_waiters();
    }
}

async fn dispatcher(guard: DispatcherGuard) {
    let core = guard.0.clone();
    loop {
        let woken = core.wake.notified();
        {
            let st = core.lock();
            if st.abandoned && st.queue.is_empty() && st.regions.is_empty() {
                return;
            }
        }
        // Boxed: the pass's state (its lookups' futures) is allocated while it runs, so an
        // idle mutator's task is only this loop's.
        Box::pin(dispatch(&core)).await;
        woken.await;
    }
}

/// One dispatch pass. Newly cut mutations are located once and placed in their region's
/// queue (or, while an earlier write to the same row is unanswered, in that write's queue);
/// then every server with ready queues gets requests while it and their regions have tasks
/// to spare. The work is proportional to the mutations placed and sent, not to what waits:
/// a region that is held back (its task in flight) is not looked at again until its task
/// ends.
async fn dispatch(core: &Arc<Core>) {
    let mut taken = Locating {
        core,
        entries: {
            let mut st = core.lock();
            st.locating = st.queue.len();
            std::mem::take(&mut st.queue)
        },
    };
    if !taken.entries.is_empty() {
        let deadline = Instant::now() + core.opts.rpc_timeout;
        // Read before the lookups: a location dropped while they run moves it.
        let generation = core.rt.locator.cache().generation();
        // Located in place (a second queue of located entries cost another copy of them all).
        for i in 0..taken.entries.len() {
            let row = taken.entries[i].mutation.row();
            let loc = core
                .rt
                .locator
                .seek(&core.table, Seek::Row(row), deadline)
                .await
                .ok();
            taken.entries[i].located = loc.map(|l| (l, generation));
        }
    }
    let requests = {
        let mut st = core.lock();
        let st = &mut *st;
        st.locating = 0;
        while let Some(entry) = taken.entries.pop_front() {
            let loc = entry.located.as_ref().map(|(l, _)| l.clone());
            // Unlocatable now: they queue under the empty name (no region has it); their
            // requests' retries look them up again.
            let region = loc
                .as_ref()
                .map_or_else(Bytes::new, |l| l.region.name.clone());
            // `own`: it goes to its own region's queue (not to an earlier write's elsewhere).
            let (key, own) = match st.rows.get_mut(entry.mutation.row()) {
                Some(p) => {
                    p.placed += 1;
                    (p.queue.clone(), p.queue == region)
                }
                None => {
                    st.rows.insert(
                        entry.mutation.row().clone(),
                        PendingRow {
                            queue: region.clone(),
                            placed: 1,
                            in_flight: 0,
                            request: 0,
                        },
                    );
                    (region, true)
                }
            };
            let q = match st.regions.entry(key.clone()) {
                Slot::Occupied(slot) => {
                    let q = slot.into_mut();
                    // The region's queue from before it moved: it goes where the region is.
                    if let Some(l) = loc.as_ref().filter(|_| own && !key.is_empty()) {
                        if !is_at(&q.server, &l.server) {
                            // This lookup may predate a move that a request's end already
                            // followed: go only where the cache says the region is now.
                            let now = core
                                .rt
                                .locator
                                .cache()
                                .find(&core.table, entry.mutation.row())
                                .filter(|now| now.region.name == key);
                            if let Some(now) = now.filter(|now| !is_at(&q.server, &now.server)) {
                                rehome(&mut st.servers, &key, q, now.server.address());
                            }
                        }
                    }
                    q
                }
                Slot::Vacant(slot) => slot.insert(RegionQueue {
                    server: loc
                        .as_ref()
                        .map_or_else(String::new, |l| l.server.address()),
                    entries: VecDeque::new(),
                    tasks: 0,
                    ready: false,
                }),
            };
            q.entries.push_back(entry);
            if !q.ready {
                list_ready(&mut st.servers, &key, q);
            }
        }
        core.form_requests(st)
    };
    for req in requests {
        // Answerable before the task exists (see `InFlight`).
        let req = InFlight::new(core.clone(), req);
        tokio::spawn(send_request(req));
    }
}

/// Mutations the dispatcher took from the cut queue and has not placed yet. Dropped with some
/// left (the dispatcher task was dropped while it located them, as when its runtime shuts
/// down, or it panicked), it fails them as not sent: nobody else holds them to answer them.
struct Locating<'a> {
    core: &'a Core,
    /// In cut order; the first ones may be located already (`Entry::located`).
    entries: VecDeque<Entry>,
}

impl Drop for Locating<'_> {
    fn drop(&mut self) {
        if self.entries.is_empty() {
            return;
        }
        let core = self.core;
        // The dispatcher is ending: later cuts fail at once (its own guard fails the queues).
        {
            let mut st = core.lock();
            st.dead = true;
            st.locating = 0;
        }
        let left: Vec<Sent> = self
            .entries
            .drain(..)
            .map(|e| Sent::of(&e, Stage::Unplaced))
            .collect();
        tracing::error!(table = %core.table, mutations = left.len(), "the BufferedMutator's flusher ended while locating mutations; they fail");
        for sent in &left {
            core.settle(
                sent,
                Err(core.closed_error("its flusher is gone (the runtime shut down); not sent")),
            );
        }
    }
}

/// Whether `address` (`host:port`) names `server`, without formatting its address.
fn is_at(address: &str, server: &crate::region::ServerName) -> bool {
    address
        .strip_prefix(server.host.as_str())
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|port| port.parse() == Ok(server.port))
}

/// Moves region queue `q` (named `key`) to server `to`, where its region is now: its next
/// requests count against that server's task limit, not the old one's (whose slots may all
/// be held by requests to a frozen server). Requests in flight stay counted where they went,
/// and the queue's order and its region task count do not change, so a row's writes still go
/// one request at a time, in buffered order.
fn rehome(
    servers: &mut FxHashMap<String, ServerQueue>,
    key: &Bytes,
    q: &mut RegionQueue,
    to: String,
) {
    let from = std::mem::replace(&mut q.server, to);
    if q.ready {
        if let Some(old) = servers.get_mut(&from) {
            old.ready.retain(|k| k != key);
        }
        list_ready(servers, key, q);
    }
    forget_if_idle(servers, &from);
}

/// Lists region queue `q` (named `key`) in its server's ready queues.
fn list_ready(servers: &mut FxHashMap<String, ServerQueue>, key: &Bytes, q: &mut RegionQueue) {
    q.ready = true;
    servers
        .entry(q.server.clone())
        .or_default()
        .ready
        .push_back(key.clone());
}

/// Forgets `server` if nothing of it is in flight or ready (a moved region's old server, say).
fn forget_if_idle(servers: &mut FxHashMap<String, ServerQueue>, server: &str) {
    if servers
        .get(server)
        .is_some_and(|s| s.tasks == 0 && s.ready.is_empty())
    {
        servers.remove(server);
    }
}

impl Core {
    /// Requests for every server with ready region queues, within the task limits (caller
    /// holds the state lock; the requests are counted in flight).
    fn form_requests(&self, st: &mut State) -> Vec<Request> {
        let mut requests = Vec::new();
        let State {
            regions,
            servers,
            rows,
            requests: request_ids,
            ..
        } = st;
        for (server, sq) in servers.iter_mut() {
            // Unlocatable mutations have no server to limit them.
            let server_limit = if server.is_empty() {
                usize::MAX
            } else {
                self.tasks_per_server
            };
            // Nor a region: the empty name only collects them, and each of their rows is
            // still never in two requests at once.
            let region_limit = if server.is_empty() {
                usize::MAX
            } else {
                self.tasks_per_region
            };
            while sq.tasks < server_limit && !sq.ready.is_empty() {
                let mut req = Request {
                    server: server.clone(),
                    regions: Vec::new(),
                    entries: Vec::new(),
                };
                *request_ids += 1;
                let id = *request_ids;
                let mut bytes = 0usize;
                while bytes < self.max_request_size {
                    let Some(key) = sq.ready.pop_front() else {
                        break;
                    };
                    let q = regions.get_mut(&key).expect("ready queues exist");
                    if q.tasks >= region_limit {
                        // Listed again when its task ends.
                        q.ready = false;
                        continue;
                    }
                    let before = req.entries.len();
                    while bytes < self.max_request_size {
                        let Some(front) = q.entries.front() else {
                            break;
                        };
                        let p = rows.get_mut(front.mutation.row()).expect("placed rows");
                        if p.in_flight > 0 && p.request != id {
                            // An earlier write to this row is in another request of this
                            // queue (more than one task per region): wait for its answer.
                            break;
                        }
                        p.in_flight += 1;
                        p.request = id;
                        bytes += front.bytes;
                        req.entries
                            .push(q.entries.pop_front().expect("front exists"));
                    }
                    if req.entries.len() > before {
                        q.tasks += 1;
                        req.regions.push(key.clone());
                    }
                    if q.entries.is_empty() || req.entries.len() == before {
                        // Empty, or blocked on a row in flight: listed again when a task of
                        // it ends.
                        q.ready = false;
                    } else {
                        // The request is full; the rest goes in the next one.
                        sq.ready.push_front(key);
                    }
                }
                if req.entries.is_empty() {
                    break;
                }
                sq.tasks += 1;
                requests.push(req);
            }
        }
        requests
    }

    /// A request ended: its server and regions have a task to spare again, and their queues
    /// are ready if they hold mutations.
    fn request_ended(&self, server: &str, request_regions: &[Bytes]) {
        let mut st = self.lock();
        let State {
            regions, servers, ..
        } = &mut *st;
        if let Some(sq) = servers.get_mut(server) {
            sq.tasks -= 1;
        }
        for key in request_regions {
            let Some(q) = regions.get_mut(key) else {
                continue;
            };
            q.tasks -= 1;
            if q.entries.is_empty() {
                if q.tasks == 0 {
                    let server = q.server.clone();
                    regions.remove(key);
                    forget_if_idle(servers, &server);
                }
            } else {
                // Where its next write's region is now, as far as the location cache knows
                // (the request may have just relocated it): a queue whose region moved goes
                // with it. Unlocatable mutations (the empty name) have no server to follow.
                let moved = q
                    .entries
                    .front()
                    .filter(|_| !key.is_empty())
                    .and_then(|e| self.rt.locator.cache().find(&self.table, e.mutation.row()))
                    .filter(|l| !is_at(&q.server, &l.server));
                if let Some(l) = moved {
                    rehome(servers, key, q, l.server.address());
                }
                if !q.ready {
                    list_ready(servers, key, q);
                }
            }
        }
        forget_if_idle(servers, server);
        if st.idle() {
            shed_empty(&mut st.regions);
            shed_empty(&mut st.servers);
        }
    }
}

/// Frees an emptied map's table (when the mutator is [idle](State::idle)). With one mutator
/// per thread and thousands of threads, the tables of idle mutators' emptied maps were most of
/// what each idle mutator held (measured in tests/mutator_memory.rs).
fn shed_empty<K, V>(map: &mut FxHashMap<K, V>) {
    if map.is_empty() && map.capacity() > 0 {
        *map = FxHashMap::default();
    }
}

/// A request handed to its task: it answers for its mutations from before the task is
/// spawned. Dropped, it fails whatever is left without an outcome (as not sent if its task
/// never ran: a task spawned while the runtime shuts down is dropped unpolled; as unknown if
/// it had started), then frees its server and regions.
struct InFlight {
    core: Arc<Core>,
    server: String,
    regions: Vec<Bytes>,
    sent: Vec<Sent>,
    actions: Vec<Action>,
    /// The actions' sizes and locations, for the multi layer (taken when the request starts).
    known: Option<crate::multi::Known>,
    settled: Mutex<Vec<bool>>,
    started: bool,
}

impl InFlight {
    fn new(core: Arc<Core>, req: Request) -> InFlight {
        let n = req.entries.len();
        let mut sent = Vec::with_capacity(n);
        let mut actions = Vec::with_capacity(n);
        // Sizes and locations go to the multi layer, which would otherwise compute both again.
        let generation = core.rt.locator.cache().generation();
        let mut known = crate::multi::Known {
            sizes: Vec::with_capacity(n),
            located: Vec::with_capacity(n),
            generation,
        };
        for e in req.entries {
            sent.push(Sent::of(&e, Stage::InFlight));
            known.sizes.push(e.bytes);
            known
                .located
                .push(e.located.filter(|(_, g)| *g == generation).map(|(l, _)| l));
            actions.push(Action::from(e.mutation));
        }
        InFlight {
            core,
            server: req.server,
            regions: req.regions,
            settled: Mutex::new(vec![false; sent.len()]),
            sent,
            actions,
            known: Some(known),
            started: false,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let core = &self.core;
        let unsettled: Vec<usize> = {
            let settled = self.settled.get_mut().unwrap_or_else(|e| e.into_inner());
            let idxs: Vec<usize> = (0..settled.len()).filter(|&i| !settled[i]).collect();
            for &i in &idxs {
                settled[i] = true;
            }
            idxs
        };
        for i in unsettled {
            let e = if self.started {
                Error::OutcomeUnknown {
                    attempts: 1,
                    last: Box::new(core.closed_error(
                        "its request ended without an answer (the runtime shut down)",
                    )),
                }
            } else {
                core.closed_error("its request never started (the runtime shut down); not sent")
            };
            core.settle(&self.sent[i], Err(e));
        }
        core.request_ended(&self.server, &self.regions);
        core.wake.notify_one();
    }
}

async fn send_request(mut req: InFlight) {
    req.started = true;
    let known = req.known.take();
    let req = &req;
    let core = &req.core;
    let on_outcome = |idx: usize, outcome: Result<ActionResult>| {
        {
            let mut s = req.settled.lock().unwrap_or_else(|e| e.into_inner());
            if std::mem::replace(&mut s[idx], true) {
                return;
            }
        }
        core.settle(&req.sent[idx], outcome);
    };
    crate::multi::run_each(
        &core.rt,
        &core.opts,
        &core.table,
        &req.actions,
        known,
        &on_outcome,
    )
    .await;
}

async fn periodic_flusher(handle: Weak<Handle>, interval: Duration) {
    let mut tick = tokio::time::interval(interval);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(handle) = handle.upgrade() else {
            return;
        };
        let core = &handle.core;
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
    use crate::region::ServerName;

    #[test]
    fn is_at_compares_host_and_port_exactly() {
        let s = ServerName {
            host: "10.0.0.1".into(),
            port: 16020,
            start_code: 7,
        };
        assert!(is_at("10.0.0.1:16020", &s));
        assert!(!is_at("10.0.0.1:1602", &s));
        assert!(!is_at("10.0.0.1:160200", &s));
        assert!(!is_at("10.0.0.10:16020", &s));
        assert!(!is_at("10.0.0.1", &s));
        assert!(!is_at("", &s));
    }
}
