//! The dispatcher all `BufferedMutator`s of one client and table share: it places every
//! mutator's cut mutations in shared region queues and sends them as `Multi`s, within one set
//! of task limits (per server and per region), so the writes of many mutators share requests.
//!
//! With one dispatcher per mutator, 10,000 writer threads each holding a sliver of the
//! client's write budget sent 10,000 streams of one- or two-row Multis (1.2 rows a call,
//! measured at 10,000 threads against 72 at 128): every row paid a request, a task and a WAL
//! sync. Shared, the writes that arrive while a region's request is in flight wait in its
//! queue and leave together in the next one.
//!
//! The dispatcher knows nothing of buffers, flushes or listeners: each mutation carries its
//! [`Owner`], which is told the mutation's outcome. Of the write budget it reads one thing,
//! whether writers wait for room, to decide when a small request is worth waiting on (see
//! [`lingers`]).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rustc_hash::FxHashMap;
use tokio::sync::Notify;

use super::last_writes::{LastWrites, QueueId, Seq};
use crate::error::{Error, Result};
use crate::multi::RequestLimits;
use crate::ops::{Action, ActionResult, Mutation};
use crate::region::{Location, TableName};
use crate::runtime::caller::CallOptions;
use crate::runtime::locator::Seek;
use crate::runtime::Runtime;
use crate::write_budget::WriteBudget;

/// Who a mutation is answered to (its mutator): told every outcome, once per mutation.
pub(super) trait Owner: Send + Sync + Sized + 'static {
    /// `mutation` gives the mutation (a clone, or the one taken from a queue that fails); it
    /// is asked for only when the mutation failed (reading it means reading the mutation,
    /// which a large request's answer would otherwise not touch again, and cloning a put
    /// copies its cells).
    fn answered(
        self: &Arc<Self>,
        sent: &Sent<Self>,
        mutation: &mut dyn FnMut() -> Mutation,
        outcome: Result<ActionResult>,
    );

    /// Starts loading what `answered` will read and write (see `prefetch.rs`); a hint only.
    fn prefetch(&self) {}
}

/// One cut mutation, from its cut until its answer.
pub(super) struct Entry<O> {
    pub(super) mutation: Mutation,
    /// Its budgeted size (`BufferedMutator::budgeted_size`), computed once in `mutate`: the
    /// budget's count. (`mutate` refuses a mutation larger than a request frame can carry,
    /// 2 GiB, so it fits.) Requests are cut by its heap size, Java's count, which a put keeps.
    pub(super) bytes: u32,
    /// Where the dispatcher located it: the request sends it there unless a cached location
    /// was dropped since it was located.
    pub(super) located: Option<Location>,
    /// The region cache's generation read before it was located, its low 32 bits. Two
    /// generations 2^32 drops apart look alike; a request would then try a stale location
    /// first, and its server's refusal makes the multi layer look the region up again.
    // 32 bits (and the owner's thin pointer) keep an entry within 128 bytes, which the
    // compiler moves inline: at 144 every move was a `memmove` call, and an entry moves five
    // times (3-5% of a buffered update's cycles at 32 writers, `perf`).
    pub(super) generation: u32,
    /// The cut it came in (its owner's count, for `flush`).
    pub(super) cut: u64,
    pub(super) owner: Arc<O>,
    /// Its number, given when it is placed (0 before).
    pub(super) seq: Seq,
    /// The number of the last write to its row placed before it, when that one went to the
    /// same queue and may be unanswered (0: none): a request that does not hold that write
    /// takes this one only once it is answered.
    pub(super) prev: Seq,
}

/// A mutation handed on for its answer: what settling it needs. (Not its row: a clone of the
/// row key, taken for every mutation and dropped with its answer, cost two atomic operations on
/// a cold buffer's header per mutation; the mutation is read when it failed.)
pub(super) struct Sent<O> {
    pub(super) bytes: usize,
    pub(super) cut: u64,
    owner: Arc<O>,
}

impl<O: Owner> Sent<O> {
    fn of(e: &Entry<O>) -> Sent<O> {
        Sent {
            bytes: e.bytes as usize,
            cut: e.cut,
            owner: e.owner.clone(),
        }
    }

    /// Starts loading the owner's state that its answer reads and writes (see `prefetch.rs`):
    /// with thousands of mutators, each answer's owner is out of the cache.
    #[inline]
    fn prefetch_owner(&self) {
        self.owner.prefetch();
    }
}

/// A dispatcher's table and operation timeout.
type DispatchKey = (TableName, Duration);

/// The client's dispatchers, one per table and operation timeout (the timeout is per request,
/// so mutators with different ones cannot share requests). `O` is the mutations' owner type:
/// generic rather than a trait object, so that an entry holds a thin pointer to its owner.
pub(super) struct Dispatchers<O> {
    live: Mutex<FxHashMap<DispatchKey, Weak<Dispatch<O>>>>,
}

impl<O> Default for Dispatchers<O> {
    fn default() -> Self {
        Dispatchers {
            live: Mutex::default(),
        }
    }
}

impl<O: Owner> Dispatchers<O> {
    /// The running dispatcher of `table` with `opts`' operation timeout, joined by one more
    /// mutator (which must [`leave`](Dispatch::leave) it), or a new one started on the
    /// current runtime.
    pub(super) fn join(
        &self,
        rt: &Arc<Runtime>,
        budget: &Arc<WriteBudget>,
        table: &TableName,
        opts: CallOptions,
    ) -> Arc<Dispatch<O>> {
        let key = (table.clone(), opts.operation_timeout);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = live.get(&key).and_then(Weak::upgrade) {
            if d.try_join() {
                return d;
            }
        }
        let d = Dispatch::start(rt.clone(), budget.clone(), table.clone(), opts);
        live.retain(|_, w| w.strong_count() > 0);
        live.insert(key, Arc::downgrade(&d));
        d
    }
}

/// One table's shared dispatcher.
pub(super) struct Dispatch<O> {
    pub(super) rt: Arc<Runtime>,
    pub(super) table: TableName,
    opts: CallOptions,
    tasks_per_server: usize,
    tasks_per_region: usize,
    limits: RequestLimits,
    /// The client's write budget: whether writers wait for room (see [`lingers`]).
    budget: Arc<WriteBudget>,
    state: Mutex<State<O>>,
    /// Mirrors `State::dead` for the writers' refusal check, which must not take the shared
    /// lock on every `mutate`.
    dead: AtomicBool,
    /// Wakes the dispatcher: something was cut, a request ended, or a mutator left.
    wake: Notify,
}

struct State<O> {
    /// Cut, not yet placed in a region's queue, in cut order.
    queue: VecDeque<Entry<O>>,
    /// Taken from `queue` by a dispatch pass that is locating them (not placed yet).
    locating: usize,
    /// Placed mutations waiting to be sent, per region (see [`RegionQueue`]).
    // These maps are touched several times per mutation, so they hash with FxHash instead of
    // SipHash (about 1,400 instructions per buffered put less). FxHash does not resist chosen
    // keys: an application writing row keys picked by an adversary (say, user-supplied ids)
    // could make many rows collide, so that each `last_writes` lookup probes O(colliding rows)
    // and rows of one full hash share a record (their writes then wait behind each other's).
    // Region and server names come from the cluster. The writer of the rows is the application
    // itself, so the worst it can do is slow its own writes; we take the speed.
    regions: FxHashMap<Bytes, RegionQueue<O>>,
    /// Requests in flight per server, and its regions with mutations ready to go.
    servers: FxHashMap<String, ServerQueue>,
    /// Each row's last placed write: its queue and number.
    last_writes: LastWrites,
    /// Mutations placed so far (the last one's number).
    placed: Seq,
    /// Region queues made so far (the last one's id).
    queues_made: QueueId,
    /// The name of each region queue in `regions`, by id.
    queue_names: FxHashMap<QueueId, Bytes>,
    /// Mutators that joined and have not left.
    writers: usize,
    /// The dispatcher returned (no writer left, nothing unanswered): it takes no one again.
    ended: bool,
    /// The dispatcher is gone without ending (the runtime shut down, or a bug panicked it):
    /// nothing can be sent any more.
    dead: bool,
}

// By hand: a derived `Default` would ask the owner type for one.
impl<O> Default for State<O> {
    fn default() -> Self {
        State {
            queue: VecDeque::new(),
            locating: 0,
            regions: FxHashMap::default(),
            servers: FxHashMap::default(),
            last_writes: LastWrites::default(),
            placed: 0,
            queues_made: 0,
            queue_names: FxHashMap::default(),
            writers: 0,
            ended: false,
            dead: false,
        }
    }
}

impl<O> State<O> {
    /// Nothing waits to be placed (queued, or being located). Only then are emptied maps
    /// freed (see [`shed_empty`]): while writes flow, the maps empty between two batches,
    /// and freeing them then made each batch grow them again from nothing.
    fn idle(&self) -> bool {
        self.queue.is_empty() && self.locating == 0
    }
}

/// The mutations placed for one region (by the location they had when placed), in buffered
/// order. The requests made of them are routed by the multi layer, which sends each action to
/// the location it was placed with only while the region cache has dropped no location since
/// (else it locates every action again), so a queue whose region moved or split still sends
/// to the right servers.
struct RegionQueue<O> {
    /// This queue's id (a queue made again under the same name gets another).
    id: QueueId,
    /// The server its region is on, as last learned (when the queue was made, when a write
    /// placed in it was located elsewhere, or when one of its requests ended and the location
    /// cache knew better); its task limit applies to the queue's next requests.
    server: String,
    /// A location whose server is `server` (its region's, as located when the queue was made
    /// or last found there): a write located at that same location is placed without
    /// comparing addresses again (`is_at` parses a port: about 150 instructions a put).
    /// Cleared when the queue moves.
    confirmed: Option<Location>,
    /// In placement order (their numbers ascending).
    entries: VecDeque<Entry<O>>,
    /// The memory `entries` hold (their budgeted sizes, the budget's count).
    bytes: usize,
    /// Requests in flight made from this queue.
    tasks: usize,
    /// The number of the first mutation of each of them.
    in_flight_firsts: Vec<Seq>,
    /// Listed in its server's `ready`.
    ready: bool,
}

impl<O> RegionQueue<O> {
    /// The first mutation number of this queue that is not answered yet, `next` (the next
    /// number to be given) if none: every mutation it holds, queued or in a request, has a
    /// number from there on, and it has had every earlier one it held answered (a request
    /// ends only when all its mutations are answered).
    fn answered_below(&self, next: Seq) -> Seq {
        let queued = self.entries.front().map_or(next, |e| e.seq);
        self.in_flight_firsts.iter().fold(queued, |b, &f| b.min(f))
    }
}

#[derive(Default)]
struct ServerQueue {
    tasks: usize,
    /// Since when its next request has been held back to grow (see [`lingers`]).
    holding_since: Option<Instant>,
    /// Region queues with entries, in the order they became ready.
    ready: VecDeque<Bytes>,
}

/// One request: mutations of one server's ready region queues, in each queue's order.
struct Request<O> {
    server: String,
    /// Its queues, each with the number of its first mutation taken.
    regions: Vec<(Bytes, Seq)>,
    entries: Vec<Entry<O>>,
}

impl<O: Owner> Dispatch<O> {
    fn start(
        rt: Arc<Runtime>,
        budget: Arc<WriteBudget>,
        table: TableName,
        opts: CallOptions,
    ) -> Arc<Dispatch<O>> {
        let c = &rt.config;
        let d = Arc::new(Dispatch {
            tasks_per_server: c.max_tasks_per_server,
            tasks_per_region: c.max_tasks_per_region,
            limits: RequestLimits::of(c),
            budget,
            rt,
            table,
            opts,
            state: Mutex::new(State {
                writers: 1,
                ..State::default()
            }),
            dead: AtomicBool::new(false),
            wake: Notify::new(),
        });
        // The guard exists before the task: a task dropped unpolled (its runtime shutting
        // down) still marks the dispatcher dead, so writes are refused instead of never sent.
        tokio::spawn(dispatcher(DispatcherGuard(d.clone())));
        d
    }

    fn lock(&self) -> MutexGuard<'_, State<O>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn try_join(&self) -> bool {
        let mut st = self.lock();
        if st.ended || st.dead {
            return false;
        }
        st.writers += 1;
        true
    }

    /// A mutator is gone: once none is left and nothing is unanswered, the dispatcher ends.
    pub(super) fn leave(&self) {
        self.lock().writers -= 1;
        self.wake.notify_one();
    }

    /// Whether the dispatcher is gone (nothing can be sent any more).
    pub(super) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    pub(super) fn closed_error(&self, reason: &str) -> Error {
        Error::MutatorClosed {
            table: self.table.to_string(),
            reason: reason.to_string(),
        }
    }

    /// Queues one cut (every entry of `buffered`, drained) for sending. False once the
    /// dispatcher is gone: `buffered` is left as it was, for its owner to fail.
    pub(super) fn submit<T>(
        &self,
        buffered: &mut Vec<T>,
        to_entry: impl FnMut(T) -> Entry<O>,
    ) -> bool {
        {
            let mut st = self.lock();
            if st.dead {
                return false;
            }
            st.queue.extend(buffered.drain(..).map(to_entry));
        }
        self.wake.notify_one();
        true
    }

    /// A mutation's final outcome, told to its owner. Nothing of the dispatcher's own is
    /// counted off: its queues know which of their mutations are answered.
    fn settle(
        &self,
        sent: &Sent<O>,
        mutation: &mut dyn FnMut() -> Mutation,
        outcome: Result<ActionResult>,
    ) {
        sent.owner.answered(sent, mutation, outcome);
    }
}

/// Ends the dispatcher's sending for good when it ends without having finished (the runtime
/// shut down, or a bug panicked it): every queued mutation fails, later cuts fail at once,
/// and later writes are refused.
struct DispatcherGuard<O: Owner>(Arc<Dispatch<O>>);

impl<O: Owner> Drop for DispatcherGuard<O> {
    fn drop(&mut self) {
        let d = &self.0;
        let queued: Vec<(Sent<O>, Mutation)> = {
            let mut st = d.lock();
            if st.ended {
                return;
            }
            st.dead = true;
            d.dead.store(true, Ordering::Release);
            let taken = |e: Entry<O>| (Sent::of(&e), e.mutation);
            let mut queued: Vec<(Sent<O>, Mutation)> = st.queue.drain(..).map(taken).collect();
            for q in st.regions.values_mut() {
                queued.extend(q.entries.drain(..).map(taken));
                q.bytes = 0;
                q.ready = false;
            }
            for s in st.servers.values_mut() {
                s.ready.clear();
            }
            queued
        };
        if !queued.is_empty() {
            tracing::error!(table = %d.table, mutations = queued.len(), "the BufferedMutator's flusher ended; queued mutations fail");
        }
        for (sent, mutation) in queued {
            let mut mutation = Some(mutation);
            d.settle(
                &sent,
                &mut || mutation.take().expect("asked for once"),
                Err(d.closed_error("its flusher is gone (the runtime shut down); not sent")),
            );
        }
    }
}

async fn dispatcher<O: Owner>(guard: DispatcherGuard<O>) {
    let d = guard.0.clone();
    loop {
        let woken = d.wake.notified();
        {
            let mut st = d.lock();
            if st.writers == 0 && st.idle() && st.regions.is_empty() {
                st.ended = true;
                return;
            }
        }
        // Boxed: the pass's state (its lookups' futures) is allocated while it runs, so an
        // idle dispatcher's task is only this loop's.
        // A server held back to let its request grow (see `lingers`) is looked at again when
        // its hold ends, whatever else happens by then.
        match Box::pin(dispatch(&d)).await {
            Some(hold_ends) => {
                let _ = tokio::time::timeout_at(hold_ends.into(), woken).await;
            }
            None => woken.await,
        }
    }
}

/// One dispatch pass. Newly cut mutations are located once and placed in their region's
/// queue (or, while an earlier write to the same row is unanswered, in that write's queue);
/// then every server with ready queues gets requests while it and their regions have tasks
/// to spare (unless it is held back to let its request grow, see [`lingers`]). The work is
/// proportional to the mutations placed and sent, not to what waits: a region that is held
/// back (its task in flight) is not looked at again until its task ends, and a server held
/// back costs a sum over its ready regions. Returns when the earliest hold ends, if any.
async fn dispatch<O: Owner>(d: &Arc<Dispatch<O>>) -> Option<Instant> {
    let mut taken = Locating {
        d,
        entries: {
            let mut st = d.lock();
            st.locating = st.queue.len();
            std::mem::take(&mut st.queue)
        },
    };
    if !taken.entries.is_empty() {
        // The lookups of one pass share one short wait (after it, a later one answers from
        // the cache or gives up at once, unless a free lookup turn lets it start a meta
        // lookup, which goes on in the background); see `PASS_LOOKUP_WAIT`.
        let deadline = Instant::now() + PASS_LOOKUP_WAIT.min(d.opts.rpc_timeout);
        // Read before the lookups: a location dropped while they run moves it.
        let generation = d.rt.locator.cache().generation();
        // Located in place (a second queue of located entries cost another copy of them all),
        // from the cache a chunk at a time under one lock (bounded, so that a large cut does
        // not hold back locations being cached), then by lookups for the rest.
        for chunk in taken.entries.make_contiguous().chunks_mut(LOCATE_CHUNK) {
            d.rt.locator.find_cached(
                &d.table,
                chunk.iter_mut(),
                |e| e.mutation.row(),
                |e, loc| {
                    e.located = Some(loc);
                    e.generation = generation as u32;
                },
            );
        }
        for i in 0..taken.entries.len() {
            if taken.entries[i].located.is_some() {
                continue;
            }
            let row = taken.entries[i].mutation.row();
            let loc =
                d.rt.locator
                    .seek(&d.table, Seek::Row(row), deadline)
                    .await
                    .ok();
            taken.entries[i].located = loc;
            taken.entries[i].generation = generation as u32;
        }
    }
    let (requests, hold_ends) = {
        let mut st = d.lock();
        let st = &mut *st;
        st.locating = 0;
        while let Some(entry) = taken.entries.pop_front() {
            d.place(st, entry);
        }
        d.form_requests(st)
    };
    for req in requests {
        // Answerable before the task exists (see `InFlight`).
        let req = InFlight::new(d.clone(), req);
        tokio::spawn(send_request(req));
    }
    hold_ends
}

/// How long a dispatch pass waits for the lookups of rows it finds no cached region for.
/// While it waits, it places nothing, and so sends nothing new to any region, also to those
/// whose locations are cached. A row whose lookup takes longer (`hbase:meta` slow or not
/// answering) is placed unlocated, and its request's retries look it up again, within the
/// operation's deadline, in a task of their own (the lookup itself goes on meanwhile and
/// caches what it finds): it holds back only its own writes. A lookup usually takes a
/// millisecond or two.
const PASS_LOOKUP_WAIT: Duration = Duration::from_secs(1);

/// Rows a dispatch pass locates from the cache under one hold of its lock.
const LOCATE_CHUNK: usize = 256;

/// Mutations the dispatcher took from the cut queue and has not placed yet. Dropped with some
/// left (the dispatcher task was dropped while it located them, as when its runtime shuts
/// down, or it panicked), it fails them as not sent: nobody else holds them to answer them.
struct Locating<'a, O: Owner> {
    d: &'a Dispatch<O>,
    /// In cut order; the first ones may be located already (`Entry::located`).
    entries: VecDeque<Entry<O>>,
}

impl<O: Owner> Drop for Locating<'_, O> {
    fn drop(&mut self) {
        if self.entries.is_empty() {
            return;
        }
        let d = self.d;
        // The dispatcher is ending: later cuts fail at once (its own guard fails the queues).
        {
            let mut st = d.lock();
            st.dead = true;
            d.dead.store(true, Ordering::Release);
            st.locating = 0;
        }
        let left: Vec<(Sent<O>, Mutation)> = self
            .entries
            .drain(..)
            .map(|e| (Sent::of(&e), e.mutation))
            .collect();
        tracing::error!(table = %d.table, mutations = left.len(), "the BufferedMutator's flusher ended while locating mutations; they fail");
        for (sent, mutation) in left {
            let mut mutation = Some(mutation);
            d.settle(
                &sent,
                &mut || mutation.take().expect("asked for once"),
                Err(d.closed_error("its flusher is gone (the runtime shut down); not sent")),
            );
        }
    }
}

/// Whether two names are equal, without comparing their bytes when they are one buffer (a
/// region's name, cloned from its location).
fn same_bytes(a: &Bytes, b: &Bytes) -> bool {
    (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b
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
fn rehome<O>(
    servers: &mut FxHashMap<String, ServerQueue>,
    key: &Bytes,
    q: &mut RegionQueue<O>,
    to: String,
) {
    let from = std::mem::replace(&mut q.server, to);
    q.confirmed = None;
    if q.ready {
        if let Some(old) = servers.get_mut(&from) {
            old.ready.retain(|k| k != key);
        }
        list_ready(servers, key, q);
    }
    forget_if_idle(servers, &from);
}

/// Lists region queue `q` (named `key`) in its server's ready queues.
fn list_ready<O>(
    servers: &mut FxHashMap<String, ServerQueue>,
    key: &Bytes,
    q: &mut RegionQueue<O>,
) {
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

/// Rows a request to a server should carry before it is sent while writers wait for room:
/// a region server spends about 280-420 us of CPU on a `Multi` beyond its rows (measured on
/// this project's HBase 2.6 with update-only runs at 512 threads: 27.5-34.5 us per update
/// with 16 KiB requests, about 19 rows each, against 12.8-13.0 with 4 MiB ones), so 256 rows
/// keep that under 2 us a row.
const LINGER_ROWS: usize = 256;

/// The longest a server's next request is held back to grow.
const LINGER: Duration = Duration::from_millis(50);

/// What a server's next request would carry now, and how long it has been held back.
#[derive(Clone, Copy, Debug)]
struct Batch {
    rows: usize,
    /// The memory its mutations hold (their budgeted sizes, the budget's count).
    bytes: usize,
    /// Their heap sizes, Java's count (a request's size is counted so).
    heap: usize,
    waited: Duration,
}

/// Whether a server's next request waits to grow instead of leaving now (asked only while
/// writers wait for room in the write budget, the server has no request in flight and
/// another server has one).
///
/// With thousands of writers the budget is always short: rows reach the dispatcher one
/// waiting writer at a time, and a server that answers fast was sent a `Multi` of a few
/// dozen rows the moment its last one ended (1,000-3,500 such calls to one server in a 25 s
/// run of workload A at 10,000 threads, against 30-80 at 512), each paying the server's fixed
/// cost per request. Nobody waits on one request then: the writers wait for room, which the server's CPU
/// frees faster when it spends less per request. Held at most `LINGER` (the dispatcher
/// runs a pass when the earliest hold ends, even if nothing else happens), and never when
/// nothing else is in flight. A quarter of what a request could carry is enough: a quarter of
/// the request size (`request_heap`, Java's count, compared with the batch's heap sizes) or of
/// the whole budget (`budget`, memory, compared with the memory the batch holds); so is
/// `LINGER_ROWS` rows, or a request's `row_bound`.
fn lingers(b: Batch, request_heap: usize, budget: usize, row_bound: usize) -> bool {
    b.rows < LINGER_ROWS.min(row_bound)
        && b.heap < request_heap / 4
        && b.bytes < budget / 4
        && b.waited < LINGER
}

impl<O: Owner> Dispatch<O> {
    /// Places one located (or unlocatable) mutation in its region's queue, or in the queue of
    /// an earlier unanswered write to its row (caller holds the state lock).
    fn place(&self, st: &mut State<O>, mut entry: Entry<O>) {
        // The queue's name is borrowed from the location, not cloned: a clone and its drop
        // are two atomic operations on the name's shared header per mutation (with the
        // queue map's key, 7.9% of a buffered update's cycles at 32 writers, `perf`). The
        // location goes back into the entry when it is queued.
        let located = entry.located.take();
        let loc = located.as_ref();
        // Unlocatable now: they queue under the empty name (no region has it); their
        // requests' retries look them up again.
        let unlocated = Bytes::new();
        let region = loc.map_or(&unlocated, |l| &l.region.name);
        let State {
            regions,
            servers,
            last_writes,
            placed,
            queues_made,
            queue_names,
            ..
        } = st;
        *placed += 1;
        let seq = *placed;
        entry.seq = seq;
        // The row's only lookup: its last write, and whether that one is still unanswered.
        let last = last_writes.of(LastWrites::hash(entry.mutation.row()), || {
            regions
                .values()
                .map(|q| (q.id, q.answered_below(seq)))
                .collect()
        });
        let last_queue = queue_names.get(&last.queue);
        // `own`: it goes to its own region's queue (not to an earlier write's elsewhere).
        let (key, own): (Cow<'_, Bytes>, bool) = match last_queue {
            Some(name) if same_bytes(name, region) => {
                // After its row's last write, in the same queue (which may have had it
                // answered).
                entry.prev = last.seq;
                (Cow::Borrowed(region), true)
            }
            Some(name)
                if regions
                    .get(name)
                    .is_some_and(|q| last.seq >= q.answered_below(seq)) =>
            {
                // Its row's last write went to another queue (its region moved or split
                // since) and is unanswered: this one goes after it, where it is.
                entry.prev = last.seq;
                (Cow::Owned(name.clone()), false)
            }
            _ => (Cow::Borrowed(region), true),
        };
        let q = match regions.get_mut(&**key) {
            Some(q) => {
                // The region's queue from before it moved: it goes where the region is.
                if let Some(l) = loc.filter(|_| own && !key.is_empty()) {
                    let confirmed = q.confirmed.as_ref().is_some_and(|c| Arc::ptr_eq(c, l));
                    if confirmed {
                        // Located where the queue is known to be.
                    } else if is_at(&q.server, &l.server) {
                        q.confirmed = Some(l.clone());
                    } else {
                        // This lookup may predate a move that a request's end already
                        // followed: go only where the cache says the region is now.
                        let now = self
                            .rt
                            .locator
                            .cache()
                            .find(&self.table, entry.mutation.row())
                            .filter(|now| now.region.name == *key);
                        if let Some(now) = now.filter(|now| !is_at(&q.server, &now.server)) {
                            rehome(servers, &key, q, now.server.address());
                        }
                    }
                }
                q
            }
            None => {
                *queues_made += 1;
                queue_names.insert(*queues_made, (*key).clone());
                regions.entry((*key).clone()).or_insert(RegionQueue {
                    id: *queues_made,
                    server: loc.map_or_else(String::new, |l| l.server.address()),
                    confirmed: loc.filter(|_| !key.is_empty()).cloned(),
                    entries: VecDeque::new(),
                    bytes: 0,
                    tasks: 0,
                    in_flight_firsts: Vec::new(),
                    ready: false,
                })
            }
        };
        last.queue = q.id;
        last.seq = seq;
        q.bytes += entry.bytes as usize;
        if !q.ready {
            list_ready(servers, &key, q);
        }
        entry.located = located;
        q.entries.push_back(entry);
    }

    /// Requests for every server with ready region queues, within the task limits, but for
    /// servers held back to let their request grow (caller holds the state lock; the requests
    /// are counted in flight). Also returns when the earliest hold ends, if any.
    fn form_requests(&self, st: &mut State<O>) -> (Vec<Request<O>>, Option<Instant>) {
        let mut requests = Vec::new();
        let mut hold_ends: Option<Instant> = None;
        // How many of each of a request's queues go in (from its front), and their bytes.
        let mut taken: Vec<(usize, usize)> = Vec::new();
        let State {
            regions, servers, ..
        } = st;
        // Read once a pass, and only while writers wait (the clock and the sum are the only
        // costs this adds to a pass otherwise): the requests in flight, and the time.
        let pressed = self.budget.writers_waiting().then(|| {
            (
                servers.values().map(|s| s.tasks).sum::<usize>(),
                Instant::now(),
            )
        });
        for (server, sq) in servers.iter_mut() {
            if let Some((_, now)) = pressed.filter(|&(in_flight, _)| {
                in_flight > 0 && !server.is_empty() && sq.tasks == 0 && !sq.ready.is_empty()
            }) {
                let (rows, bytes) = sq
                    .ready
                    .iter()
                    .filter_map(|k| regions.get(k))
                    .fold((0, 0), |(r, b), q| (r + q.entries.len(), b + q.bytes));
                // Java's count, which the queues do not keep: read only while the rows are
                // too few to leave anyway (under LINGER_ROWS), and only while writers wait.
                let heap = if rows < LINGER_ROWS {
                    sq.ready
                        .iter()
                        .filter_map(|k| regions.get(k))
                        .flat_map(|q| q.entries.iter())
                        .map(|e| e.mutation.heap_size())
                        .fold(0usize, usize::saturating_add)
                } else {
                    usize::MAX
                };
                let since = *sq.holding_since.get_or_insert(now);
                let batch = Batch {
                    rows,
                    bytes,
                    heap,
                    waited: now.saturating_duration_since(since),
                };
                if lingers(
                    batch,
                    self.limits.bytes,
                    self.budget.limit(),
                    self.limits.rows,
                ) {
                    let ends = since + LINGER;
                    hold_ends = Some(hold_ends.map_or(ends, |e| e.min(ends)));
                    continue;
                }
            }
            sq.holding_since = None;
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
                let mut bytes = 0usize;
                let mut rows = 0usize;
                taken.clear();
                while bytes < self.limits.bytes && rows < self.limits.rows {
                    let Some(key) = sq.ready.pop_front() else {
                        break;
                    };
                    let q = regions.get_mut(&key).expect("ready queues exist");
                    if q.tasks >= region_limit {
                        // Listed again when its task ends.
                        q.ready = false;
                        continue;
                    }
                    let mut take = 0;
                    let mut take_bytes = 0;
                    let mut full = false;
                    // This request takes the queue's mutations from `first` on. The queue's
                    // other requests in flight (more than one task per region) hold some
                    // of those numbered from `in_flight` up to `first`.
                    let first = q.entries.front().map_or(0, |e| e.seq);
                    let in_flight = q.answered_below(first);
                    for e in q.entries.iter() {
                        // The sender's rule, so the sender does not cut this request again. A
                        // request's size is counted as Java's request controller counts it
                        // (`hbase.client.max.perrequest.heapsize`): by heap sizes, Java's figure
                        // (kept in a put as its cells were added, so no reading of its cells).
                        let size = e.mutation.heap_size();
                        if !self.limits.admit(bytes, rows, size) {
                            full = true;
                            break;
                        }
                        if e.prev >= in_flight && e.prev < first {
                            // An earlier write to this row may be in another request of this
                            // queue: wait for its answer.
                            break;
                        }
                        bytes += size;
                        take_bytes += e.bytes as usize;
                        take += 1;
                        rows += 1;
                    }
                    if take > 0 {
                        q.tasks += 1;
                        q.in_flight_firsts.push(first);
                        req.regions.push((key.clone(), first));
                        taken.push((take, take_bytes));
                    }
                    if full {
                        // The request is full (its size need not be reached: the next entry
                        // did not fit); the rest goes in the next one.
                        sq.ready.push_front(key);
                        break;
                    } else {
                        // All taken, or blocked on a row in flight: listed again when a task
                        // of it ends.
                        q.ready = false;
                    }
                }
                if req.regions.is_empty() {
                    break;
                }
                // Moved once counted, into a vector of their exact number: pushed one at a
                // time, it grew by doubling and copied its entries each time (about 300
                // instructions a buffered put at 32 threads).
                req.entries = Vec::with_capacity(taken.iter().map(|t| t.0).sum());
                for ((key, _), &(take, take_bytes)) in req.regions.iter().zip(&taken) {
                    let q = regions.get_mut(key).expect("taken queues exist");
                    req.entries.extend(q.entries.drain(..take));
                    q.bytes -= take_bytes;
                }
                sq.tasks += 1;
                requests.push(req);
            }
        }
        (requests, hold_ends)
    }

    /// A request ended: its server and regions have a task to spare again, and their queues
    /// are ready if they hold mutations.
    fn request_ended(&self, server: &str, request_regions: &[(Bytes, Seq)]) {
        let mut st = self.lock();
        let State {
            regions,
            servers,
            queue_names,
            ..
        } = &mut *st;
        if let Some(sq) = servers.get_mut(server) {
            sq.tasks -= 1;
        }
        for (key, first) in request_regions {
            let Some(q) = regions.get_mut(key) else {
                continue;
            };
            q.tasks -= 1;
            if let Some(i) = q.in_flight_firsts.iter().position(|f| f == first) {
                q.in_flight_firsts.swap_remove(i);
            }
            if q.entries.is_empty() {
                if q.tasks == 0 {
                    let server = q.server.clone();
                    queue_names.remove(&q.id);
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
            if st.regions.is_empty() {
                // No queue: every recorded write is answered.
                st.last_writes.shed();
                shed_empty(&mut st.queue_names);
            }
        }
    }
}

/// Frees an emptied map's table (when the dispatcher is [idle](State::idle)).
fn shed_empty<K, V>(map: &mut FxHashMap<K, V>) {
    if map.is_empty() && map.capacity() > 0 {
        *map = FxHashMap::default();
    }
}

/// A request handed to its task: it answers for its mutations from before the task is
/// spawned. Dropped, it fails whatever is left without an outcome (as not sent if its task
/// never ran: a task spawned while the runtime shuts down is dropped unpolled; as unknown if
/// it had started), then frees its server and regions.
struct InFlight<O: Owner> {
    d: Arc<Dispatch<O>>,
    server: String,
    regions: Vec<(Bytes, Seq)>,
    sent: Vec<Sent<O>>,
    actions: Vec<Action>,
    /// The actions' sizes and locations, for the multi layer (taken when the request starts).
    known: Option<crate::multi::Known>,
    settled: Mutex<Vec<bool>>,
    started: bool,
}

impl<O: Owner> InFlight<O> {
    fn new(d: Arc<Dispatch<O>>, req: Request<O>) -> InFlight<O> {
        let n = req.entries.len();
        let mut sent = Vec::with_capacity(n);
        let mut actions = Vec::with_capacity(n);
        // Sizes and locations go to the multi layer, which would otherwise compute both again.
        let generation = d.rt.locator.cache().generation();
        let mut known = crate::multi::Known {
            // `mutate` refuses what fails validation; nothing else enters the queues.
            validated: true,
            sizes: Vec::with_capacity(n),
            located: Vec::with_capacity(n),
            generation,
        };
        for e in req.entries {
            known.sizes.push(e.mutation.heap_size());
            known
                .located
                .push(e.located.filter(|_| e.generation == generation as u32));
            actions.push(Action::from(e.mutation));
            // The owner moved, not cloned: a clone here and the entry's drop of its own were
            // two atomic operations on the mutator's count per mutation, out of the cache
            // with thousands of writers.
            sent.push(Sent {
                bytes: e.bytes as usize,
                cut: e.cut,
                owner: e.owner,
            });
        }
        InFlight {
            d,
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

impl<O: Owner> Drop for InFlight<O> {
    fn drop(&mut self) {
        let d = &self.d;
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
                    last: Box::new(d.closed_error(
                        "its request ended without an answer (the runtime shut down)",
                    )),
                }
            } else {
                d.closed_error("its request never started (the runtime shut down); not sent")
            };
            d.settle(&self.sent[i], &mut || held(&self.actions[i]), Err(e));
        }
        d.request_ended(&self.server, &self.regions);
        d.wake.notify_one();
        drop_prefetching(std::mem::take(&mut self.actions));
    }
}

/// A request's action as the mutation its mutator was given (a clone), for reporting its
/// failure. A request made here holds only what a mutator buffers: puts and deletes.
fn held(action: &Action) -> Mutation {
    action
        .to_mutation()
        .expect("a mutator's request holds only puts and deletes")
}

/// How many actions ahead of the one being dropped [`drop_prefetching`] asks for memory.
const DROP_AHEAD: usize = 8;

/// How far ahead of the outcome being settled the owner of another is loaded
/// (`Sent::prefetch_owner`).
const SETTLE_AHEAD: usize = 8;

/// Drops a request's actions, each after asking for what dropping the one `DROP_AHEAD` later
/// touches: freeing a put's buffer reads the allocator's bookkeeping beside it, out of the
/// cache by the answer (the write budget holds thousands of puts), so one after another each
/// free would wait for its own miss (freeing was about 10% of a buffered update's cycles,
/// `perf`, 32 writers).
fn drop_prefetching(actions: Vec<Action>) {
    let mut actions = actions.into_iter();
    for a in actions.as_slice().iter().take(DROP_AHEAD) {
        a.prefetch_for_drop();
    }
    while let Some(a) = actions.next() {
        if let Some(ahead) = actions.as_slice().get(DROP_AHEAD - 1) {
            ahead.prefetch_for_drop();
        }
        drop(a);
    }
}

async fn send_request<O: Owner>(mut req: InFlight<O>) {
    req.started = true;
    let known = req.known.take();
    let req = &req;
    let d = &req.d;
    let on_outcome = |idx: usize, outcome: Result<ActionResult>| {
        // Outcomes come in index order, region by region (the order the request was formed
        // in), so the owner `SETTLE_AHEAD` later is likely the one settled soon after.
        if let Some(ahead) = req.sent.get(idx + SETTLE_AHEAD) {
            ahead.prefetch_owner();
        }
        {
            let mut s = req.settled.lock().unwrap_or_else(|e| e.into_inner());
            if std::mem::replace(&mut s[idx], true) {
                return;
            }
        }
        d.settle(&req.sent[idx], &mut || held(&req.actions[idx]), outcome);
    };
    crate::multi::run_each(&d.rt, &d.opts, &d.table, &req.actions, known, &on_outcome).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::ServerName;

    #[test]
    fn dropping_with_prefetch_drops_every_action_once_at_any_length() {
        for n in [
            0,
            1,
            DROP_AHEAD - 1,
            DROP_AHEAD,
            DROP_AHEAD + 1,
            3 * DROP_AHEAD + 5,
        ] {
            let row = Bytes::from(b"shared-row".to_vec());
            let actions: Vec<Action> = (0..n)
                .map(|i| {
                    let put = crate::ops::Put::new(row.clone()).add("f", "q", vec![0u8; i]);
                    Action::from(Mutation::from(put))
                })
                .collect();
            assert_eq!(row.is_unique(), n == 0);
            drop_prefetching(actions);
            assert!(
                row.is_unique(),
                "{n} actions: a row reference outlived the drop"
            );
        }
    }

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

    #[test]
    fn a_small_request_lingers_until_it_has_enough_rows_or_bytes_or_has_waited_long_enough() {
        let (request, budget, rows) = (4 << 20, 256 << 20, 2048);
        let small = Batch {
            rows: 40,
            bytes: 40 * 300,
            heap: 40 * 400,
            waited: Duration::from_millis(5),
        };
        assert!(lingers(small, request, budget, rows));
        // Enough rows.
        assert!(!lingers(
            Batch {
                rows: LINGER_ROWS,
                ..small
            },
            request,
            budget,
            rows
        ));
        // Few rows, but large ones: a quarter of what a request can carry, by Java's count
        // (their memory, less, does not decide it).
        assert!(!lingers(
            Batch {
                heap: request / 4,
                ..small
            },
            request,
            budget,
            rows
        ));
        assert!(lingers(
            Batch {
                bytes: request / 4,
                ..small
            },
            request,
            budget,
            rows
        ));
        // A budget smaller than the request size bounds what can ever be ready: a quarter of
        // it, by memory, is enough.
        assert!(!lingers(small, request, small.bytes * 4, rows));
        assert!(lingers(small, request, small.heap * 4, rows));
        // A request full by rows (a row cap below LINGER_ROWS) leaves.
        assert!(!lingers(small, request, budget, small.rows));
        // Held long enough.
        assert!(!lingers(
            Batch {
                waited: LINGER,
                ..small
            },
            request,
            budget,
            rows
        ));
    }
}
