//! One TCP connection to one server, carrying many concurrent calls.
//!
//! Callers encode their request straight into a shared outbox and wait for their answer by
//! call id: the call map holds each waiting caller's waker, and the reader leaves the answer in
//! the map of replies for the caller to take (no channel allocated per call). A writer task
//! flushes whatever has accumulated in one write (so concurrent small calls coalesce), and a
//! reader task splits the input into frames and completes calls in whatever order the server
//! answers.
//!
//! The connection owns the server's health as this client sees it:
//! - A call that times out (or whose future is dropped) fails alone. If its bytes are still in
//!   the outbox, or held unwritten by a writer the kernel stopped accepting from, they are
//!   dropped: a call its caller gave up on is never sent later. Its outcome is then known
//!   ([`Delivery::NotSent`]); otherwise it may have reached the server
//!   ([`Delivery::Unknown`]). A call of a write that failed on a plain TCP connection before
//!   the socket took all of its frame was not sent either (the server acts on whole frames).
//!   That is known only when the writer meets the failure first: a caller the reader's close
//!   woke while the writer held its frame settles as unknown.
//! - A call in flight holds one permit of the server's in-flight cap (shared by every
//!   connection to the server, old and new) until the server answers, even after its caller
//!   gave up: the server may still be working on it. Such an orphaned permit is released when
//!   the answer comes, at the latest the call's own timeout later (by then the server has
//!   started it or dropped it unrun), and never later than a read timeout. When the
//!   connection closes, a call still in the outbox gives its permit back as its caller
//!   settles; the others keep theirs for a read timeout after the close (an orphan's, then,
//!   up to that).
//! - The connection is declared dead only on an I/O error, a corrupt frame, a
//!   connection-level exception, or when it reads nothing for the read timeout while calls
//!   are outstanding (or, while a call with a longer timeout of its own waits, for that
//!   timeout). A connection-level refusal of the client's credentials fails every
//!   call with [`Error::Authentication`], which is never retried.
//!
//! Setting up the transport and authenticating is [`Security::establish`]'s job (TCP, TLS,
//! the preamble, SASL, the connection header); it hands over a reader, a writer and, for a
//! Kerberos connection, the SASL session. With integrity or privacy the writer seals what it
//! takes from the outbox into wrapped tokens, and the reader unwraps what it reads before
//! splitting frames.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::compression::{self, CellBlockCompression};
use super::frame::{self, RequestMeta, ResponseBody, Service};
use super::read_room::ReadRoom;
use super::sasl::SaslSession;
use super::secure::{Reader, Security, Writer};
use crate::error::{exceptions, Error, Result};
use crate::runtime::stats::ServerCounters;

/// Whether a failed call's request can have reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Its bytes never left the client: the server cannot have seen it.
    NotSent,
    /// The server answered it (with an exception): it knows what it did.
    Answered,
    /// It was written (or may have been) and no answer came.
    Unknown,
}

/// A failed call, and whether its request can have reached the server.
#[derive(Debug)]
pub(crate) struct CallError {
    pub(crate) error: Error,
    pub(crate) delivery: Delivery,
}

impl CallError {
    fn not_sent(error: Error) -> CallError {
        CallError {
            error,
            delivery: Delivery::NotSent,
        }
    }
}

/// What the reader (or a closing connection) hands a waiting caller.
enum Reply {
    /// The response.
    Body(ResponseBody),
    /// The server answered the call with an exception.
    Exception(Error),
    /// The connection closed before an answer came.
    Closed(Error),
    /// The call's deadline passed without an answer (told by the reader's check).
    TimedOut,
}

/// One call waiting for its answer.
struct Entry {
    /// The caller's waker while it waits to be told; `None` once it was told (its reply is in
    /// [`Pending::replies`]) or gave up (the call is orphaned).
    waker: Option<Waker>,
    /// Its place under the server's in-flight cap, held until the server answers (given
    /// back when the entry is dropped; never read).
    _permit: OwnedSemaphorePermit,
    /// For an orphaned call: when to stop waiting for the server's answer.
    orphaned_until: Option<Instant>,
    /// When its caller stops waiting. The reader's check tells the caller then, unless the
    /// caller keeps a timer of its own (its deadline came before the check's next tick).
    deadline: Instant,
    /// The call's own timeout, as its header tells the server (which drops the call unrun
    /// once it has waited that long in its queue): how long an orphan keeps its place, and,
    /// when longer than the read timeout, how long the connection may be silent while it
    /// waits.
    timeout: Duration,
    /// The caller keeps a timer of its own: the check need not run at its deadline.
    own_timer: bool,
}

/// Hashes a call id with one multiplication (Fibonacci hashing): ids are small sequential
/// numbers the client picks, so SipHash's defence against chosen keys buys nothing here and
/// costs two hashes (insert, remove) per call.
#[derive(Default)]
struct CallIdHasher(u64);

impl std::hash::Hasher for CallIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }
    fn write_u32(&mut self, id: u32) {
        self.write_u64(u64::from(id));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type CallMap = HashMap<u32, Entry, std::hash::BuildHasherDefault<CallIdHasher>>;
type ReplyMap = HashMap<u32, Reply, std::hash::BuildHasherDefault<CallIdHasher>>;

struct Pending {
    /// The calls waiting for an answer, each holding its place under the cap. After a close,
    /// the calls not settled yet, and those the server may still be running (dropped a read
    /// timeout after the close).
    calls: CallMap,
    /// What callers were told and have not taken yet (taken by [`ReplyWait`], or dropped when
    /// the caller gives up). A call's reply is here only after its entry left `calls` or
    /// stopped waiting, so `calls` alone says what is outstanding.
    replies: ReplyMap,
    /// Set once the connection is unusable; later calls fail at once with this error.
    closed: Option<Error>,
    /// When `calls` last became non-empty (silence before that is idleness, not a fault).
    busy_since: Instant,
    /// The reader's read-timeout check found no call outstanding and stopped ticking; the
    /// next call wakes it (`Shared::busy`). An idle connection costs no timer wakeups.
    watchdog_parked: bool,
    /// When the check runs next, while it ticks: a call due by then is timed out by it, so the
    /// call needs no timer of its own (`None` while parked, or before its first tick).
    watch_at: Option<Instant>,
}

/// A request frame in the outbox (offsets into the outbox buffer).
#[derive(Debug, Clone, Copy)]
struct Frame {
    call_id: u32,
    start: usize,
    end: usize,
}

/// Encoded requests not yet taken by the writer, the calls given up while the writer held
/// their frames, and the calls the writer took but failed to send.
#[derive(Default)]
struct Outbox {
    buf: BytesMut,
    frames: Vec<Frame>,
    cancelled: Vec<u32>,
    /// Calls of the batch whose write failed (closing the connection) that the transport had
    /// not taken whole: never sent, though the writer held them.
    write_failed: Vec<u32>,
}

impl Outbox {
    /// Removes `call_id`'s frame if it is still here: true when it was, or when the writer
    /// took it and failed to send it (never sent either way).
    fn remove(&mut self, call_id: u32) -> bool {
        if let Some(i) = self.frames.iter().position(|f| f.call_id == call_id) {
            cut_frame(&mut self.buf, &mut self.frames, i);
            return true;
        }
        if let Some(i) = self.write_failed.iter().position(|&id| id == call_id) {
            self.write_failed.swap_remove(i);
            return true;
        }
        self.cancelled.push(call_id);
        false
    }
}

/// Cuts frame `i` out of `buf`, moving the frames after it down.
fn cut_frame(buf: &mut BytesMut, frames: &mut Vec<Frame>, i: usize) {
    let Frame { start, end, .. } = frames.remove(i);
    let len = end - start;
    buf.copy_within(end.., start);
    buf.truncate(buf.len() - len);
    for f in &mut frames[i..] {
        f.start -= len;
        f.end -= len;
    }
}

/// How a connection is set up.
pub(crate) struct ConnectionParams {
    /// `host:port`, already mapped.
    pub(crate) addr: String,
    /// The server's host name as the cluster advertises it (before mapping): the `_HOST` of
    /// its Kerberos principal.
    pub(crate) host: String,
    /// The client's security (TLS, Kerberos), shared by all its connections.
    pub(crate) security: Arc<Security>,
    pub(crate) user: String,
    pub(crate) service: Service,
    pub(crate) connect_timeout: Duration,
    /// Silence (nothing read) with calls outstanding after which the connection is dead.
    pub(crate) read_timeout: Duration,
    pub(crate) counters: Arc<ServerCounters>,
    pub(crate) compression: CellBlockCompression,
    /// The server's in-flight cap, shared by all its connections.
    pub(crate) in_flight: Arc<Semaphore>,
}

struct Shared {
    addr: String,
    counters: Arc<ServerCounters>,
    compression: CellBlockCompression,
    read_timeout: Duration,
    /// How often the reader checks, while calls are outstanding, for a read timeout, for
    /// callers whose deadline passed and for overdue orphans.
    tick: Duration,
    pending: Mutex<Pending>,
    outbox: Mutex<Outbox>,
    out_ready: Notify,
    /// Wakes the reader's parked read-timeout check: a call started on an idle connection.
    busy: Notify,
    closed: AtomicBool,
    next_call_id: AtomicU32,
    /// Answers the reader's last read completed (callers woken at once, about to send).
    last_burst: AtomicUsize,
    in_flight: Arc<Semaphore>,
    /// The SASL session of a Kerberos connection whose frames travel wrapped (integrity or
    /// privacy); `None` when they travel as they are.
    wrapping: Option<Arc<SaslSession>>,
    /// Set until the first bytes after a SASL exchange were read: a server that rejected the
    /// client's last SASL token answers with a SASL error reply instead of a frame.
    sasl_reply_possible: AtomicBool,
    /// The connection authenticated with SASL (Kerberos), not SIMPLE.
    sasl: bool,
    /// A write that fails sent none of the bytes it was given (see
    /// [`Established::write_failure_sends_nothing`]).
    write_failure_sends_nothing: bool,
}

impl Shared {
    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_outbox(&self) -> std::sync::MutexGuard<'_, Outbox> {
        self.outbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when every call waiting for an answer on this connection is still in the outbox
    /// (none is at the server, so no answer can wake a caller that sends again soon).
    fn all_calls_queued(&self) -> bool {
        let queued = self.lock_outbox().frames.len();
        self.lock_pending().calls.len() <= queued
    }

    /// Marks the connection dead and fails every call in flight with `error`.
    ///
    /// The calls keep their places under the cap here: each caller, told, settles its call
    /// ([`abandon`](Shared::abandon)), and one whose request never left the client gives its
    /// place back then. That is decided by the outbox alone, under its lock, at the moment
    /// the caller settles, so no order of close, caller and writer can count a call that is
    /// still queued (or not queued yet) as written. The places of calls that may have reached
    /// the server are held for a read timeout more (the server may still be running them, and
    /// a replacement connection must not add to them), then released.
    fn close(self: &Arc<Self>, error: Error) {
        let mut wake = Vec::new();
        let hold_places = {
            let mut p = self.lock_pending();
            let first = p.closed.is_none();
            if first {
                tracing::debug!(addr = %self.addr, %error, "connection closed");
                p.closed = Some(error.duplicate());
            }
            let Pending { calls, replies, .. } = &mut *p;
            for (&call_id, entry) in calls.iter_mut() {
                if let Some(waker) = entry.waker.take() {
                    replies.insert(call_id, Reply::Closed(error.duplicate()));
                    wake.push(waker);
                }
            }
            // Held places are released once, after the first close; none held, nothing to do.
            first && !calls.is_empty()
        };
        self.closed.store(true, Ordering::Release);
        if hold_places {
            self.release_places_after_read_timeout();
        }
        wake.into_iter().for_each(Waker::wake);
        self.out_ready.notify_one();
    }

    /// After a close: drops, a read timeout from now, the calls still held (their places
    /// under the cap). No call is added after a close.
    fn release_places_after_read_timeout(self: &Arc<Self>) {
        /// Drops the calls still held when it is dropped: after its wait, or at once if the
        /// task holding it is dropped unpolled (its runtime shutting down).
        struct Release(Arc<Shared>);
        impl Drop for Release {
            fn drop(&mut self) {
                let calls = std::mem::take(&mut self.0.lock_pending().calls);
                drop(calls);
            }
        }
        let release = Release(self.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let until = Instant::now() + self.read_timeout;
                rt.spawn(async move {
                    tokio::time::sleep_until(until).await;
                    drop(release);
                });
            }
            // No runtime to wait on: released now.
            Err(_) => drop(release),
        }
    }

    /// The caller of `call_id` gave up: drops its request if it was not sent, else leaves the
    /// call to the server (orphaned: its permit stays taken until the answer comes or a read
    /// timeout passes). Says which.
    fn abandon(&self, call_id: u32) -> Delivery {
        let unsent = self.lock_outbox().remove(call_id);
        let mut p = self.lock_pending();
        // A reply it was told and did not take (it gave up as the answer came): nobody will.
        p.replies.remove(&call_id);
        if unsent {
            ServerCounters::add(&self.counters.abandoned_unsent, 1);
            p.calls.remove(&call_id);
            return Delivery::NotSent;
        }
        if let Some(entry) = p.calls.get_mut(&call_id) {
            entry.waker = None;
            // The server starts a call it took off its queue in time, or drops it unanswered
            // once it waited its timeout there: after another timeout (a read timeout at
            // most) its place is given back (a call started late may still be running then).
            // Before, every orphan held its place for a read timeout (twice the client's RPC
            // timeout): calls with a short timeout of their own that the server dropped could
            // fill the cap for minutes.
            entry.orphaned_until = Some(Instant::now() + entry.timeout.min(self.read_timeout));
        }
        Delivery::Unknown
    }

    /// The reader's periodic check: tells the callers whose deadline passed, releases orphans
    /// whose answer is overdue, and says whether the connection is dead (nothing read for the
    /// read timeout while calls are outstanding), busy (with the time of the next check: a tick
    /// later, or the next caller's deadline if that comes first) or idle (no call outstanding:
    /// the check parks until the next call wakes it; decided under the lock that call takes,
    /// so no call can slip past it).
    fn watchdog(&self, now: Instant, last_read: Instant, tick: Duration) -> Watch {
        let mut due = Vec::new();
        let watch = {
            let mut p = self.lock_pending();
            p.calls
                .retain(|_, e| e.orphaned_until.is_none_or(|until| now < until));
            if p.calls.is_empty() {
                p.watchdog_parked = true;
                p.watch_at = None;
                return Watch::Idle;
            }
            let mut next = now + tick;
            // The read timeout never cuts a waiting call short of its own timeout: a table
            // may set an RPC timeout longer than the client's read timeout.
            let mut silence_allowed = self.read_timeout;
            let Pending { calls, replies, .. } = &mut *p;
            for (&call_id, e) in calls.iter_mut() {
                if e.waker.is_none() {
                    continue;
                }
                silence_allowed = silence_allowed.max(e.timeout);
                if e.deadline <= now {
                    due.extend(e.waker.take());
                    replies.insert(call_id, Reply::TimedOut);
                } else if !e.own_timer {
                    next = next.min(e.deadline);
                }
            }
            p.watch_at = Some(next);
            let quiet_since = last_read.max(p.busy_since);
            if now.duration_since(quiet_since) < silence_allowed {
                Watch::Busy(next)
            } else {
                // A connection the writer already closed (its calls held for their places) is
                // not a read timeout of the server's.
                if p.closed.is_none() {
                    ServerCounters::add(&self.counters.read_timeouts, 1);
                }
                Watch::Dead(self.read_timed_out(p.calls.len()))
            }
        };
        // Outside the lock: each woken caller takes its reply and settles its call (`abandon`),
        // which takes the pending lock.
        due.into_iter().for_each(Waker::wake);
        watch
    }

    /// The next check after the reader's check was woken from parking by a new call: a tick
    /// from now, or that call's deadline if it comes first.
    fn unpark_watchdog(&self, tick: Duration) -> Instant {
        let mut p = self.lock_pending();
        let mut next = Instant::now() + tick;
        for e in p.calls.values() {
            if e.waker.is_some() && !e.own_timer {
                next = next.min(e.deadline);
            }
        }
        p.watch_at = Some(next);
        next
    }

    /// The error that closes a connection on which nothing was read for the read timeout.
    fn read_timed_out(&self, outstanding: usize) -> Error {
        // A timeout (no answer came in time), which closes the connection.
        Error::Timeout {
            what: format!(
                "reading from {} with {outstanding} calls outstanding (the read timeout: the connection is closed)",
                self.addr,
            ),
            after: self.read_timeout,
        }
    }
}

/// What the reader's read-timeout check found.
enum Watch {
    /// Calls are outstanding and answers are not overdue: check again at this time.
    Busy(Instant),
    /// No call outstanding: the check is parked until a call starts.
    Idle,
    /// Nothing read for the read timeout with calls outstanding.
    Dead(Error),
}

/// A live connection to one server for one service. Dropping the last handle closes it.
pub(crate) struct RpcConnection {
    shared: Arc<Shared>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Drop for RpcConnection {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

/// Settles a call whose caller gives up before its answer (a dropped future).
struct CallGuard<'a> {
    shared: &'a Shared,
    call_id: u32,
    settled: bool,
}

impl CallGuard<'_> {
    /// Drops the call before any of it reached the outbox (its request could not be made):
    /// it fails as not sent, its place under the cap given back.
    fn unsent(mut self, error: Error) -> CallError {
        self.settled = true;
        let mut p = self.shared.lock_pending();
        p.calls.remove(&self.call_id);
        // Told already if the connection closed meanwhile.
        p.replies.remove(&self.call_id);
        CallError::not_sent(error)
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.shared.abandon(self.call_id);
        }
    }
}

/// A caller's wait for the reply to its call: woken through the waker its entry holds, it
/// takes the reply from [`Pending::replies`].
///
/// Its first poll does not look: it comes in the same poll of the caller's task that
/// registered the entry's waker (`RpcConnection::call` has no await between the two), so a
/// reply that comes meanwhile has woken that very waker and the next poll finds it. An await
/// added between them would break this: the waker registered could then be a stale one.
struct ReplyWait<'a> {
    shared: &'a Shared,
    call_id: u32,
    /// Set until the first poll.
    first_poll: bool,
}

impl std::future::Future for ReplyWait<'_> {
    type Output = Reply;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        if std::mem::take(&mut self.first_poll) {
            return Poll::Pending;
        }
        let mut p = self.shared.lock_pending();
        if let Some(reply) = p.replies.remove(&self.call_id) {
            return Poll::Ready(reply);
        }
        match p
            .calls
            .get_mut(&self.call_id)
            .and_then(|e| e.waker.as_mut())
        {
            Some(waker) => {
                if !waker.will_wake(cx.waker()) {
                    *waker = cx.waker().clone();
                }
                Poll::Pending
            }
            // Every path that takes a waiting caller's entry or waker leaves it a reply.
            None => Poll::Ready(Reply::Closed(Error::ConnectionClosed {
                addr: self.shared.addr.clone(),
                reason: "the call ended without a reply".into(),
            })),
        }
    }
}

impl RpcConnection {
    /// Connects to `params.addr` with the client's security and sends the preamble, the SASL
    /// exchange (Kerberos) and the connection header, all within the connect timeout.
    pub(crate) async fn connect(params: ConnectionParams) -> Result<RpcConnection> {
        let addr = params.addr.as_str();
        let setup = params.security.establish(
            addr,
            &params.host,
            params.service,
            &params.user,
            params.compression.codec_class(),
        );
        let established = match tokio::time::timeout(params.connect_timeout, setup).await {
            Ok(Ok(established)) => established,
            // An I/O failure while setting up is a failed connect (the server is unreachable
            // or hung up), not a failure of a connection in use.
            Ok(Err(Error::Connection { addr, source })) => {
                return Err(Error::Connect { addr, source })
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(Error::Connect {
                    addr: addr.to_string(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no connection within {:?}", params.connect_timeout),
                    ),
                })
            }
        };
        let (rd, wr) = (established.reader, established.writer);
        let sasl = established.sasl;
        let tick = check_interval(params.read_timeout);
        let shared = Arc::new(Shared {
            addr: addr.to_string(),
            counters: params.counters,
            compression: params.compression,
            read_timeout: params.read_timeout,
            tick,
            pending: Mutex::new(Pending {
                calls: CallMap::default(),
                replies: ReplyMap::default(),
                closed: None,
                busy_since: Instant::now(),
                watchdog_parked: false,
                watch_at: Some(Instant::now() + tick),
            }),
            outbox: Mutex::new(Outbox {
                buf: BytesMut::with_capacity(64 * 1024),
                ..Default::default()
            }),
            out_ready: Notify::new(),
            busy: Notify::new(),
            closed: AtomicBool::new(false),
            next_call_id: AtomicU32::new(0),
            last_burst: AtomicUsize::new(0),
            in_flight: params.in_flight,
            sasl_reply_possible: AtomicBool::new(sasl.is_some()),
            sasl: sasl.is_some(),
            wrapping: sasl.filter(|s| s.wraps()),
            write_failure_sends_nothing: established.write_failure_sends_nothing,
        });
        let reader = tokio::spawn(read_loop(shared.clone(), rd));
        let writer = tokio::spawn(write_loop(shared.clone(), wr));
        tracing::debug!(addr, service = params.service.name(), "connected");
        Ok(RpcConnection {
            shared,
            reader,
            writer,
        })
    }

    /// False once the connection failed or was closed; the pool then makes a new one.
    pub(crate) fn is_open(&self) -> bool {
        !self.shared.closed.load(Ordering::Acquire)
    }

    /// Sends one call and waits for its response, at most `timeout` from `now` (the caller's
    /// reading of the clock, taken once for both; the wait for a place under the server's
    /// in-flight cap included).
    pub(crate) async fn call(
        &self,
        meta: RequestMeta<'_>,
        param: &impl prost::Message,
        cellblock: Option<&[u8]>,
        now: std::time::Instant,
        timeout: Duration,
    ) -> std::result::Result<ResponseBody, CallError> {
        let shared = &*self.shared;
        let now = Instant::from_std(now);
        let deadline = now + timeout;
        let timed_out = |queued: &str| Error::Timeout {
            what: format!("{} call to {}{queued}", meta.method, shared.addr),
            after: timeout,
        };
        // When the call is registered: `now`, unless it first waited for a place under the cap
        // (the connection's silence is measured from when it has a call outstanding).
        let mut registered = now;
        // Beyond the cap, wait here (FIFO) rather than overflow the server's call queue.
        let permit = match shared.in_flight.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let acquire = shared.in_flight.clone().acquire_owned();
                match tokio::time::timeout_at(deadline, acquire).await {
                    Ok(Ok(permit)) => {
                        registered = Instant::now();
                        permit
                    }
                    Ok(Err(_)) => unreachable!("the in-flight semaphore is never closed"),
                    Err(_) => {
                        return Err(CallError::not_sent(timed_out(" (queued in the client)")))
                    }
                }
            }
        };
        let call_id = shared.next_call_id.fetch_add(1, Ordering::Relaxed) & 0x7fff_ffff;
        // The waker of the task polling this call now, which also polls the wait below: no
        // await in between yields, so the reader can wake it from the moment it is registered.
        let waker = std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
        let (wake_watchdog, own_timer) = {
            let mut p = shared.lock_pending();
            if let Some(e) = &p.closed {
                return Err(CallError::not_sent(e.duplicate()));
            }
            let mut wake = false;
            if p.calls.is_empty() {
                p.busy_since = registered;
                wake = std::mem::take(&mut p.watchdog_parked);
            }
            let own_timer = needs_own_timer(p.watch_at, deadline, wake);
            p.calls.insert(
                call_id,
                Entry {
                    waker: Some(waker),
                    _permit: permit,
                    orphaned_until: None,
                    deadline,
                    timeout,
                    own_timer,
                },
            );
            (wake, own_timer)
        };
        if wake_watchdog {
            shared.busy.notify_one();
        }
        let mut guard = CallGuard {
            shared,
            call_id,
            settled: false,
        };
        let compressed;
        let cellblock = match (shared.compression, cellblock) {
            (CellBlockCompression::Snappy, Some(raw)) => match compression::compress_snappy(raw) {
                Ok(c) => {
                    compressed = c;
                    Some(&compressed[..])
                }
                Err(e) => return Err(guard.unsent(e)),
            },
            (_, cellblock) => cellblock,
        };
        let sent = {
            let mut out = shared.lock_outbox();
            let start = out.buf.len();
            if let Err(e) = frame::encode_request(&mut out.buf, call_id, meta, param, cellblock) {
                drop(out);
                return Err(guard.unsent(e));
            }
            let end = out.buf.len();
            out.frames.push(Frame {
                call_id,
                start,
                end,
            });
            end - start
        };
        // Counted before the writer is told, so a call is never seen written but not counted.
        let c = &shared.counters;
        ServerCounters::add(&c.calls, 1);
        ServerCounters::add(&c.bytes_sent, sent as u64);
        if meta.method == "Multi" {
            ServerCounters::add(&c.multi_calls, 1);
        }
        shared.out_ready.notify_one();
        let wait = ReplyWait {
            shared,
            call_id,
            first_poll: true,
        };
        let reply = if own_timer {
            tokio::time::timeout_at(deadline, wait)
                .await
                .unwrap_or(Reply::TimedOut)
        } else {
            wait.await
        };
        guard.settled = true;
        let result = match reply {
            Reply::Body(body) => Ok(body),
            Reply::Exception(error) => Err(CallError {
                error,
                delivery: Delivery::Answered,
            }),
            Reply::Closed(error) => Err(CallError {
                delivery: shared.abandon(call_id),
                error,
            }),
            Reply::TimedOut => Err(CallError {
                delivery: shared.abandon(call_id),
                error: timed_out(""),
            }),
        };
        if result.is_err() {
            ServerCounters::add(&c.errors, 1);
        }
        result
    }
}

async fn write_loop(shared: Arc<Shared>, wr: Writer) {
    let mut wr = wr;
    // The frame list handed back and forth with the outbox, so a batch allocates none.
    let mut spare: Vec<Frame> = Vec::new();
    loop {
        shared.out_ready.notified().await;
        // Let the other runnable tasks go first: a caller's notify puts this task in the
        // scheduler's next-to-run slot, so without the yield every call is its own send();
        // after it, the calls those tasks encode go out in the same write. Unless every call
        // of this connection is already in the outbox (one caller at a time, as at low
        // concurrency) and the last read answered at most one: then no answer is about to make
        // another caller send, and the yield would only cost a poll of the I/O driver (an
        // epoll_wait with no timeout) and a wakeup of the other worker (a futex pair) per
        // call (benches/syscalls/run: workload C, 1 thread, 5.7 -> 3.1 system calls per read).
        if !shared.all_calls_queued() || shared.last_burst.load(Ordering::Relaxed) > 1 {
            run_after_ready_tasks().await;
        }
        loop {
            if shared.closed.load(Ordering::Acquire) {
                let _ = wr.shutdown().await;
                return;
            }
            let (mut batch, mut frames) = {
                let mut out = shared.lock_outbox();
                if out.buf.is_empty() {
                    break;
                }
                let frames = std::mem::replace(&mut out.frames, std::mem::take(&mut spare));
                (out.buf.split(), frames)
            };
            let written = match shared.wrapping.as_deref() {
                None => write_batch(&shared, &mut wr, &mut batch, &mut frames).await,
                Some(sasl) => write_sealed(&shared, &mut wr, sasl, &mut batch, &mut frames).await,
            };
            {
                let mut out = shared.lock_outbox();
                out.cancelled.clear();
                // Recorded before the close wakes their callers: a frame the transport did
                // not take whole cannot have run at the server (it acts on whole frames only),
                // so its caller is told it was not sent and may send it again.
                if let (Err(failed), true) = (&written, shared.write_failure_sends_nothing) {
                    let untaken = frames.iter().filter(|f| f.end > failed.taken);
                    out.write_failed.extend(untaken.map(|f| f.call_id));
                }
            }
            frames.clear();
            spare = frames;
            if let Err(failed) = written {
                shared.close(Error::Connection {
                    addr: shared.addr.clone(),
                    source: failed.error,
                });
                return;
            }
        }
    }
}

/// Lets the tasks that are already runnable go first, without polling the I/O driver: the
/// task wakes itself, which puts it at the back of its worker's run queue.
/// `tokio::task::yield_now` instead defers the task until the worker has polled the driver,
/// which costs an `epoll_wait` with no timeout per yielding tick; under a slow server most of
/// those found nothing (workload C, 32 threads, pinned: 29k of 46k in 10 s).
async fn run_after_ready_tasks() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await
}

/// A batch's write failed.
struct WriteFailed {
    error: std::io::Error,
    /// Bytes of the batch (as cut) the transport took before it failed; of the frames beyond,
    /// it took none or a part only.
    taken: usize,
}

impl WriteFailed {
    /// The error of a write that failed with `taken` bytes of the batch taken (for `map_err`).
    fn at(taken: usize) -> impl FnOnce(std::io::Error) -> WriteFailed {
        move |error| WriteFailed { error, taken }
    }
}

/// Writes `batch` (request frames `frames`). While the transport accepts nothing (the server
/// is not reading), frames whose callers gave up and of which no byte is written yet are
/// dropped.
async fn write_batch(
    shared: &Shared,
    wr: &mut Writer,
    batch: &mut BytesMut,
    frames: &mut Vec<Frame>,
) -> Result<(), WriteFailed> {
    let mut written = 0;
    while written < batch.len() {
        let n = match try_write(wr, &batch[written..]).await {
            Some(n) => n.map_err(WriteFailed::at(written))?,
            None => {
                drop_cancelled(shared, batch, frames, written);
                if written == batch.len() {
                    break;
                }
                wr.write(&batch[written..])
                    .await
                    .map_err(WriteFailed::at(written))?
            }
        };
        if n == 0 {
            return Err(WriteFailed {
                error: std::io::ErrorKind::WriteZero.into(),
                taken: written,
            });
        }
        written += n;
    }
    // TLS keeps what the socket did not take yet; a plain socket has nothing to flush.
    wr.flush().await.map_err(WriteFailed::at(written))
}

/// With integrity or privacy: seals `batch` piece by piece into wrapped tokens and writes
/// them. A piece is sealed only when the one before it is written, so while the server is not
/// reading, frames not sealed yet are still dropped when their callers give up.
async fn write_sealed(
    shared: &Shared,
    wr: &mut Writer,
    sasl: &SaslSession,
    batch: &mut BytesMut,
    frames: &mut Vec<Frame>,
) -> Result<(), WriteFailed> {
    let mut sealed_upto = 0;
    let mut token = BytesMut::new();
    // A token written in part cannot be unwrapped: the server takes only whole tokens.
    while sealed_upto < batch.len() {
        drop_cancelled(shared, batch, frames, sealed_upto);
        if sealed_upto == batch.len() {
            break;
        }
        let end = batch.len().min(sealed_upto + SEAL_PIECE);
        token.clear();
        sasl.seal(&batch[sealed_upto..end], &mut token)
            .map_err(|e| WriteFailed {
                error: std::io::Error::other(e.to_string()),
                taken: sealed_upto,
            })?;
        wr.write_all(&token)
            .await
            .map_err(WriteFailed::at(sealed_upto))?;
        sealed_upto = end;
    }
    wr.flush().await.map_err(WriteFailed::at(sealed_upto))
}

/// Plaintext bytes sealed into one wrapped token: enough to amortise a GSS_Wrap, small enough
/// that a blocked server leaves most of a large batch unsealed (and so still cancellable).
const SEAL_PIECE: usize = 64 * 1024;

/// One write if the transport takes bytes now; `None` if it would wait.
async fn try_write(wr: &mut Writer, buf: &[u8]) -> Option<std::io::Result<usize>> {
    std::future::poll_fn(
        |cx| match std::pin::Pin::new(&mut *wr).poll_write(cx, buf) {
            std::task::Poll::Ready(r) => std::task::Poll::Ready(Some(r)),
            std::task::Poll::Pending => std::task::Poll::Ready(None),
        },
    )
    .await
}

/// Cuts out of `batch` the frames whose callers gave up and that start at or after `from`
/// (nothing of them has left the client).
fn drop_cancelled(shared: &Shared, batch: &mut BytesMut, frames: &mut Vec<Frame>, from: usize) {
    let cancelled = std::mem::take(&mut shared.lock_outbox().cancelled);
    for call_id in cancelled {
        let unstarted = frames
            .iter()
            .position(|f| f.call_id == call_id && f.start >= from);
        if let Some(i) = unstarted {
            cut_frame(batch, frames, i);
            ServerCounters::add(&shared.counters.abandoned_unsent, 1);
        }
    }
}

/// Whether a call due at `deadline` needs a timer of its own, the reader's check being due at
/// `watch_at` (`None`: not known) or woken by this very call (`woke`: it was parked).
///
/// The check times a call out if it runs by the call's deadline: it does when it is due
/// before it, and when this call wakes it (it then runs by the earliest deadline). Only a
/// deadline sooner than the check needs a timer of the caller's own: registering one per call
/// cost about 600 instructions of a get (benches/instructions) and a timer wheel's lock.
fn needs_own_timer(watch_at: Option<Instant>, deadline: Instant, woke: bool) -> bool {
    match watch_at {
        _ if woke => false,
        Some(at) => deadline < at,
        None => true,
    }
}

/// How often the reader's check runs while calls are outstanding: a quarter of the read
/// timeout, between 50 ms and 1 s (callers' deadlines are met exactly: the check also runs at
/// the earliest of them).
fn check_interval(read_timeout: Duration) -> Duration {
    (read_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

async fn read_loop(shared: Arc<Shared>, mut rd: Reader) {
    // The reader also times out callers (its check): however it ends (a panic, or its task
    // dropped with the runtime it ran on while callers on another runtime wait), the
    // connection closes and fails them instead of leaving them waiting forever.
    struct CloseOnDrop<'a>(&'a Arc<Shared>);
    impl Drop for CloseOnDrop<'_> {
        fn drop(&mut self) {
            if !self.0.closed.load(Ordering::Acquire) {
                self.0.close(Error::ConnectionClosed {
                    addr: self.0.addr.clone(),
                    reason: "the connection's reader ended".into(),
                });
            }
        }
    }
    let _guard = CloseOnDrop(&shared);
    let error = read_frames(&shared, &mut rd).await;
    shared.close(error);
}

/// Reads and dispatches frames until the connection fails; returns why it did.
async fn read_frames(shared: &Shared, rd: &mut Reader) -> Error {
    let mut buf = BytesMut::with_capacity(ReadRoom::MIN);
    let mut room = ReadRoom::new();
    // With wrapping, what the socket gives goes here first and is unwrapped into `buf`.
    let mut wrapped = BytesMut::new();
    let tick = shared.tick;
    // When something was last read, as the check sees it: the time of the first check that
    // found reads made since the one before (so a read timeout is noticed at most two ticks
    // late, never early). Reading the clock on every read cost about 70 instructions of a
    // call.
    let mut last_read = Instant::now();
    let (mut reads, mut reads_checked) = (0u64, 0u64);
    let first_check = shared.lock_pending().watch_at.unwrap_or(last_read + tick);
    let check = tokio::time::sleep_until(first_check);
    tokio::pin!(check);
    // The check found no call outstanding and waits for `shared.busy` instead of ticking.
    let mut parked = false;
    loop {
        let mut answered = 0;
        while buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if len > frame::MAX_FRAME_LEN {
                return Error::Protocol(format!("response frame of {len} bytes is too large"));
            }
            if buf.len() < 4 + len {
                room.fit(&mut buf, 4 + len);
                break;
            }
            room.saw(4 + len);
            buf.advance(4);
            ServerCounters::add(&shared.counters.bytes_received, 4 + len as u64);
            let dispatched = frame::decode_response(buf.split_to(len).freeze())
                .and_then(|r| dispatch(shared, r));
            if let Err(e) = dispatched {
                return e;
            }
            answered += 1;
        }
        if answered > 0 {
            shared.last_burst.store(answered, Ordering::Relaxed);
        }
        let target = if shared.wrapping.is_some() {
            &mut wrapped
        } else {
            room.make(&mut buf);
            &mut buf
        };
        let read = tokio::select! {
            read = rd.read_buf(target) => read,
            _ = &mut check, if !parked => {
                let now = Instant::now();
                if reads != reads_checked {
                    reads_checked = reads;
                    last_read = now;
                }
                match shared.watchdog(now, last_read, tick) {
                    Watch::Dead(dead) => return dead,
                    Watch::Idle => parked = true,
                    Watch::Busy(next) => check.as_mut().reset(next),
                }
                continue;
            }
            _ = shared.busy.notified(), if parked => {
                parked = false;
                check.as_mut().reset(shared.unpark_watchdog(tick));
                continue;
            }
        };
        match read {
            Ok(0) => {
                return Error::ConnectionClosed {
                    addr: shared.addr.clone(),
                    reason: "server closed the connection".into(),
                }
            }
            Ok(_) => {
                reads += 1;
                if let Err(e) = fill(shared, &mut wrapped, &mut buf) {
                    return e;
                }
            }
            Err(source) => {
                return Error::Connection {
                    addr: shared.addr.clone(),
                    source,
                }
            }
        }
    }
}

/// After a read: recognises a late SASL error reply as the first bytes of a Kerberos
/// connection, and unwraps the complete tokens of `wrapped` into `buf` when frames travel
/// wrapped.
fn fill(shared: &Shared, wrapped: &mut BytesMut, buf: &mut BytesMut) -> Result<()> {
    if shared.sasl_reply_possible.load(Ordering::Relaxed) {
        let first = if shared.wrapping.is_some() {
            &*wrapped
        } else {
            &*buf
        };
        if first.len() >= 8 {
            shared.sasl_reply_possible.store(false, Ordering::Relaxed);
            if let Some(e) = super::sasl::late_sasl_error(first, &shared.addr) {
                return Err(e);
            }
        }
    }
    match &shared.wrapping {
        Some(sasl) => sasl.open_into(wrapped, buf),
        None => Ok(()),
    }
}

fn dispatch(shared: &Shared, response: frame::Response) -> Result<()> {
    if response.call_id == u32::MAX {
        // A connection-level error (bad header, unsupported codec, rejected authentication):
        // the server closes next. It fails every call, with the server's flags intact.
        return Err(match response.body {
            Err(exception) if exceptions::refuses_credentials(&exception) => {
                Error::Authentication {
                    server: Some(shared.addr.clone()),
                    message: format!(
                        "the server refused the connection: {exception}{}",
                        if shared.sasl {
                            ""
                        } else {
                            " (a secured cluster needs ClientConfig::kerberos)"
                        }
                    ),
                }
            }
            Err(exception) => Error::Remote {
                server: shared.addr.clone(),
                exception,
            },
            Ok(_) => Error::Protocol("response without call id".into()),
        });
    }
    // A cell block that fails to decompress is told to its caller and closes the connection.
    let (reply, failed) = match response.body {
        Err(exception) => {
            let error = Error::Remote {
                server: shared.addr.clone(),
                exception,
            };
            (Reply::Exception(error), None)
        }
        Ok(mut body)
            if shared.compression == CellBlockCompression::Snappy && !body.cellblock.is_empty() =>
        {
            match compression::decompress_snappy(&body.cellblock) {
                Ok(raw) => {
                    body.cellblock = raw;
                    (Reply::Body(body), None)
                }
                Err(e) => (Reply::Closed(e.duplicate()), Some(e)),
            }
        }
        Ok(body) => (Reply::Body(body), None),
    };
    // The reply goes to a caller that waits. No entry: the caller gave up and its answer is
    // overdue (or came a read timeout after the connection closed), or the id was never ours;
    // an entry without a waker: the caller was already told (timed out by the check, or the
    // connection closed) or gave up. Then the answer is dropped. The entry (its place under
    // the cap) is dropped after the lock, as is the wakeup.
    let (entry, waker) = {
        let mut p = shared.lock_pending();
        let mut entry = p.calls.remove(&response.call_id);
        let waker = entry.as_mut().and_then(|e| e.waker.take());
        if waker.is_some() {
            p.replies.insert(response.call_id, reply);
        }
        (entry, waker)
    };
    drop(entry);
    if let Some(waker) = waker {
        waker.wake();
    }
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_shared(read_timeout: Duration) -> Shared {
        test_shared_with_cap(read_timeout, 8)
    }

    fn test_shared_with_cap(read_timeout: Duration, cap: usize) -> Shared {
        Shared {
            addr: "test:1".into(),
            counters: Arc::default(),
            compression: CellBlockCompression::None,
            read_timeout,
            tick: check_interval(read_timeout),
            pending: Mutex::new(Pending {
                calls: CallMap::default(),
                replies: ReplyMap::default(),
                closed: None,
                busy_since: Instant::now(),
                watchdog_parked: false,
                watch_at: None,
            }),
            outbox: Mutex::new(Outbox::default()),
            out_ready: Notify::new(),
            busy: Notify::new(),
            closed: AtomicBool::new(false),
            next_call_id: AtomicU32::new(0),
            last_burst: AtomicUsize::new(0),
            in_flight: Arc::new(Semaphore::new(cap)),
            wrapping: None,
            sasl_reply_possible: AtomicBool::new(false),
            sasl: false,
            write_failure_sends_nothing: true,
        }
    }

    /// A caller's waker that counts its wakeups.
    #[derive(Default)]
    struct Woken(AtomicUsize);

    impl std::task::Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Woken {
        fn times(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// Registers call `id` as `call` does, its caller's waker counting wakeups.
    fn add_call(shared: &Shared, id: u32, deadline: Instant) -> Arc<Woken> {
        let woken = Arc::new(Woken::default());
        add_call_with(shared, id, deadline, Waker::from(woken.clone()));
        woken
    }

    /// Registers call `id` as `call` does, with the caller's `waker`.
    fn add_call_with(shared: &Shared, id: u32, deadline: Instant, waker: Waker) {
        let permit = shared.in_flight.clone().try_acquire_owned().unwrap();
        shared.lock_pending().calls.insert(
            id,
            Entry {
                waker: Some(waker),
                _permit: permit,
                orphaned_until: None,
                deadline,
                timeout: deadline.saturating_duration_since(Instant::now()),
                own_timer: false,
            },
        );
    }

    /// A caller that runs the moment it is woken (as it may on another worker): it takes its
    /// reply and settles its call.
    struct SettlesOnWake {
        shared: Arc<Shared>,
        call_id: u32,
    }

    impl std::task::Wake for SettlesOnWake {
        fn wake(self: Arc<Self>) {
            assert!(matches!(
                told(&self.shared, self.call_id),
                Some(Reply::Closed(_))
            ));
            self.shared.abandon(self.call_id);
        }
    }

    #[tokio::test]
    async fn a_closing_connection_frees_the_place_of_an_unsent_call_whose_caller_runs_at_once() {
        let shared = Arc::new(test_shared_with_cap(Duration::from_secs(60), 2));
        let deadline = Instant::now() + Duration::from_secs(60);
        for call_id in [1, 2] {
            let shared2 = shared.clone();
            let caller = Waker::from(Arc::new(SettlesOnWake {
                shared: shared2,
                call_id,
            }));
            add_call_with(&shared, call_id, deadline, caller);
        }
        // Call 1 was written; call 2 is still in the outbox.
        shared.lock_outbox().frames.push(Frame {
            call_id: 2,
            start: 0,
            end: 0,
        });
        shared.close(Error::ConnectionClosed {
            addr: "test:1".into(),
            reason: "closed by the test".into(),
        });
        // Call 2 never left the client: its place is free at once. Call 1's stays taken for a
        // read timeout (the server may still be running it).
        assert_eq!(shared.in_flight.available_permits(), 1);
        assert!(shared.lock_pending().replies.is_empty());
        assert!(shared.lock_outbox().frames.is_empty());
    }

    fn closed_by_the_test() -> Error {
        Error::ConnectionClosed {
            addr: "test:1".into(),
            reason: "closed by the test".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_queued_after_its_connection_closed_gives_its_place_back_when_it_settles() {
        let shared = Arc::new(test_shared_with_cap(Duration::from_secs(60), 1));
        // The caller registered its call; the connection closes before it queues the frame
        // (`call` takes the pending lock and the outbox lock one after the other).
        let woken = add_call(&shared, 1, Instant::now() + Duration::from_secs(60));
        shared.close(closed_by_the_test());
        shared.lock_outbox().frames.push(Frame {
            call_id: 1,
            start: 0,
            end: 0,
        });
        // Told, the caller settles: its request never left the client.
        assert_eq!(woken.times(), 1);
        assert!(matches!(told(&shared, 1), Some(Reply::Closed(_))));
        assert_eq!(shared.abandon(1), Delivery::NotSent);
        assert_eq!(shared.in_flight.available_permits(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_written_call_keeps_its_place_a_read_timeout_after_its_connection_closed() {
        let read_timeout = Duration::from_secs(60);
        let shared = Arc::new(test_shared_with_cap(read_timeout, 2));
        // Call 1 was written, call 2 is still in the outbox.
        add_call(&shared, 1, Instant::now() + Duration::from_secs(60));
        add_call(&shared, 2, Instant::now() + Duration::from_secs(60));
        shared.lock_outbox().frames.push(Frame {
            call_id: 2,
            start: 0,
            end: 0,
        });
        shared.close(closed_by_the_test());
        // The callers settle after the close.
        for id in [1, 2] {
            assert!(matches!(told(&shared, id), Some(Reply::Closed(_))));
        }
        assert_eq!(shared.abandon(1), Delivery::Unknown);
        assert_eq!(shared.abandon(2), Delivery::NotSent);
        assert_eq!(shared.in_flight.available_permits(), 1);
        // The server may still run call 1: a replacement connection must not add to it
        // until a read timeout has passed.
        tokio::time::sleep(read_timeout - Duration::from_millis(1)).await;
        assert_eq!(shared.in_flight.available_permits(), 1);
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(shared.in_flight.available_permits(), 2);
    }

    /// What the caller of `id` was told, taken as its wait takes it.
    fn told(shared: &Shared, id: u32) -> Option<Reply> {
        shared.lock_pending().replies.remove(&id)
    }

    #[test]
    fn the_check_times_out_due_callers_and_runs_next_at_the_earliest_deadline() {
        let shared = test_shared(Duration::from_secs(60));
        let tick = shared.tick;
        assert_eq!(tick, Duration::from_secs(1));
        let now = Instant::now();
        let due = add_call(&shared, 1, now - Duration::from_millis(1));
        let soon = add_call(&shared, 2, now + Duration::from_millis(300));
        let later = add_call(&shared, 3, now + Duration::from_secs(5));
        match shared.watchdog(now, now, tick) {
            Watch::Busy(next) => assert_eq!(next, now + Duration::from_millis(300)),
            _ => panic!("calls are outstanding and answers not overdue"),
        }
        assert!(matches!(told(&shared, 1), Some(Reply::TimedOut)));
        assert_eq!((due.times(), soon.times(), later.times()), (1, 0, 0));
        assert!(told(&shared, 2).is_none() && told(&shared, 3).is_none());
        // The timed-out call stays until its caller settles it (it may still be unsent).
        assert_eq!(shared.lock_pending().calls.len(), 3);
        assert_eq!(shared.abandon(1), Delivery::Unknown);
        // Later, with only far deadlines left, the check runs again a tick later.
        let then = now + Duration::from_millis(300);
        match shared.watchdog(then, then, tick) {
            Watch::Busy(next) => assert_eq!(next, then + tick),
            _ => panic!("calls are outstanding"),
        }
        assert!(matches!(told(&shared, 2), Some(Reply::TimedOut)));
        assert_eq!((soon.times(), later.times()), (1, 0));
        assert!(told(&shared, 3).is_none());
        assert_eq!(shared.lock_pending().watch_at, Some(then + tick));
    }

    fn answer(call_id: u32, message: &'static [u8]) -> frame::Response {
        frame::Response {
            call_id,
            body: Ok(ResponseBody {
                message: bytes::Bytes::from_static(message),
                cellblock: bytes::Bytes::new(),
            }),
        }
    }

    #[test]
    fn an_answer_wakes_its_caller_once_frees_its_place_and_is_taken_once() {
        let shared = test_shared_with_cap(Duration::from_secs(60), 1);
        let caller = add_call(&shared, 5, Instant::now() + Duration::from_secs(60));
        assert_eq!(shared.in_flight.available_permits(), 0);
        dispatch(&shared, answer(5, b"ok")).unwrap();
        assert_eq!(caller.times(), 1);
        assert!(shared.lock_pending().calls.is_empty());
        assert_eq!(shared.in_flight.available_permits(), 1);
        match told(&shared, 5) {
            Some(Reply::Body(body)) => assert_eq!(&body.message[..], b"ok"),
            _ => panic!("the caller was not given its answer"),
        }
        assert!(told(&shared, 5).is_none());
        // A second answer to the same id (or one nobody waits for) is dropped.
        dispatch(&shared, answer(5, b"again")).unwrap();
        assert!(told(&shared, 5).is_none());
        assert_eq!(caller.times(), 1);
    }

    #[test]
    fn a_caller_that_gives_up_as_its_answer_comes_leaves_no_reply_behind() {
        let shared = test_shared(Duration::from_secs(60));
        add_call(&shared, 6, Instant::now() + Duration::from_secs(60));
        dispatch(&shared, answer(6, b"late")).unwrap();
        // Its own timer fired first: it settles the call, and the reply goes with it.
        assert_eq!(shared.abandon(6), Delivery::Unknown);
        let p = shared.lock_pending();
        assert!(p.replies.is_empty() && p.calls.is_empty());
    }

    #[tokio::test]
    async fn a_call_gets_the_answer_the_reader_leaves_for_it() {
        let shared = Arc::new(test_shared(Duration::from_secs(60)));
        let call = spawn_get(test_connection(&shared));
        // The call is registered and its frame is in the outbox; the reader answers it.
        let call_id = queued_call(&shared).await;
        shared.lock_outbox().frames.clear();
        dispatch(&shared, answer(call_id, b"row")).unwrap();
        assert_eq!(&call.await.unwrap().unwrap().message[..], b"row");
        let p = shared.lock_pending();
        assert!(p.replies.is_empty() && p.calls.is_empty());
    }

    #[tokio::test]
    async fn a_closing_connection_tells_a_waiting_call_that_was_never_sent() {
        let shared = Arc::new(test_shared(Duration::from_secs(60)));
        let call = spawn_get(test_connection(&shared));
        queued_call(&shared).await;
        shared.close(Error::ConnectionClosed {
            addr: "test:1".into(),
            reason: "closed by the test".into(),
        });
        match call.await.unwrap() {
            Err(CallError {
                error: Error::ConnectionClosed { reason, .. },
                delivery: Delivery::NotSent,
            }) => assert_eq!(reason, "closed by the test"),
            other => panic!("expected closed, not sent: {other:?}"),
        }
        assert!(shared.lock_pending().replies.is_empty());
        assert_eq!(shared.in_flight.available_permits(), 8);
    }

    #[test]
    fn a_reader_dropped_with_its_runtime_fails_the_callers() {
        let shared = Arc::new(test_shared(Duration::from_secs(60)));
        let waiting = add_call(&shared, 1, Instant::now() + Duration::from_secs(60));
        // The server never answers (the other end stays open), and the reader's runtime goes.
        let (ours, _server) = tokio::io::duplex(64);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::spawn(read_loop(shared.clone(), Box::new(ours)));
            tokio::task::yield_now().await;
        });
        drop(rt);
        assert!(shared.closed.load(Ordering::Acquire));
        assert_eq!(waiting.times(), 1);
        match told(&shared, 1) {
            Some(Reply::Closed(Error::ConnectionClosed { reason, .. })) => {
                assert!(reason.contains("reader ended"), "{reason}")
            }
            _ => panic!("the caller was not told: it would wait forever"),
        }
        // The runtime that could have held the call's place for a read timeout is gone: the
        // place is given back now, not when the last handle on the connection goes.
        assert_eq!(shared.in_flight.available_permits(), 8);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_its_writer_closed_is_not_counted_as_a_read_timeout() {
        let read_timeout = Duration::from_secs(60);
        let shared = Arc::new(test_shared(read_timeout));
        let start = Instant::now();
        add_call(&shared, 1, start + Duration::from_secs(30));
        // The writer fails; the reader goes on and its check finds the silence.
        shared.close(closed_by_the_test());
        let later = start + read_timeout + Duration::from_secs(1);
        assert!(matches!(
            shared.watchdog(later, start, shared.tick),
            Watch::Dead(_)
        ));
        assert_eq!(shared.counters.read_timeouts.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_call_that_waited_for_the_cap_counts_silence_from_when_it_got_a_place() {
        let shared = Arc::new(test_shared_with_cap(Duration::from_secs(60), 0));
        let call = spawn_get(test_connection(&shared));
        // The call waits for a place under the cap; one frees up later.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let freed = Instant::now();
        shared.in_flight.add_permits(1);
        while shared.lock_pending().calls.is_empty() {
            tokio::task::yield_now().await;
        }
        // Silence before the call had a place is not the server's: it must not count toward
        // the read timeout (which would close the connection early).
        assert!(shared.lock_pending().busy_since >= freed);
        call.abort();
    }

    /// A written call whose caller gave up at its own short timeout gives its place back a
    /// timeout later (the server started it by then, or dropped it unrun: HBase's
    /// `CallRunner` drops a call that waited its timeout in the queue, and never answers it),
    /// not a read timeout later.
    #[tokio::test(start_paused = true)]
    async fn an_orphan_gives_its_place_back_after_its_own_timeout() {
        let shared = Arc::new(test_shared_with_cap(Duration::from_secs(120), 1));
        let call = spawn_get_within(test_connection(&shared), Duration::from_millis(200));
        queued_call(&shared).await;
        // Written: the writer took it.
        {
            let mut out = shared.lock_outbox();
            out.frames.clear();
            out.buf.clear();
        }
        let failed = call.await.unwrap().unwrap_err();
        assert_eq!(failed.delivery, Delivery::Unknown);
        assert_eq!(shared.in_flight.available_permits(), 0);
        tokio::time::sleep(Duration::from_millis(150)).await;
        let now = Instant::now();
        shared.watchdog(now, now, shared.tick);
        assert_eq!(shared.in_flight.available_permits(), 0, "released too soon");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = Instant::now();
        shared.watchdog(now, now, shared.tick);
        assert_eq!(shared.in_flight.available_permits(), 1);
    }

    /// A waiting call with a timeout of its own longer than the read timeout (a table's RPC
    /// timeout) keeps a silent connection open until its timeout; calls within the read
    /// timeout do not widen it.
    #[test]
    fn a_call_with_a_long_timeout_of_its_own_keeps_a_silent_connection() {
        let shared = test_shared(Duration::from_secs(2));
        let start = Instant::now();
        add_call(&shared, 1, start + Duration::from_secs(10));
        let at = start + Duration::from_millis(2500);
        assert!(matches!(
            shared.watchdog(at, start, shared.tick),
            Watch::Busy(_)
        ));
        // Silent for its whole timeout: dead.
        assert!(matches!(
            shared.watchdog(start + Duration::from_millis(10_100), start, shared.tick),
            Watch::Dead(_)
        ));
        // A call with a timeout of 1 s leaves the read timeout of 2 s as it is.
        let shared = test_shared(Duration::from_secs(2));
        add_call(&shared, 2, start + Duration::from_secs(1));
        assert!(matches!(
            shared.watchdog(start + Duration::from_millis(2100), start, shared.tick),
            Watch::Dead(_)
        ));
    }

    /// An empty Get on `conn`, with 30 s to go, in a task of its own.
    fn spawn_get(
        conn: RpcConnection,
    ) -> tokio::task::JoinHandle<std::result::Result<ResponseBody, CallError>> {
        spawn_get_within(conn, Duration::from_secs(30))
    }

    /// An empty Get on `conn` with `timeout` to go, in a task of its own.
    fn spawn_get_within(
        conn: RpcConnection,
        timeout: Duration,
    ) -> tokio::task::JoinHandle<std::result::Result<ResponseBody, CallError>> {
        tokio::spawn(async move {
            let meta = RequestMeta {
                method: "Get",
                timeout_ms: timeout.as_millis() as u32,
                priority: 0,
            };
            let param = hbase_proto::GetRequest::default();
            let now = std::time::Instant::now();
            conn.call(meta, &param, None, now, timeout).await
        })
    }

    /// Waits until a call's frame is in the outbox (its caller registered and waits); its id.
    async fn queued_call(shared: &Shared) -> u32 {
        loop {
            if let Some(frame) = shared.lock_outbox().frames.first() {
                return frame.call_id;
            }
            tokio::task::yield_now().await;
        }
    }

    /// A connection on `shared` with no transport: what is sent stays in its outbox.
    fn test_connection(shared: &Arc<Shared>) -> RpcConnection {
        RpcConnection {
            shared: shared.clone(),
            reader: tokio::spawn(async {}),
            writer: tokio::spawn(async {}),
        }
    }

    #[tokio::test]
    async fn a_request_too_long_for_a_frame_fails_unsent_and_leaves_nothing_behind() {
        let shared = Arc::new(test_shared_with_cap(Duration::from_secs(60), 1));
        let conn = test_connection(&shared);
        let meta = RequestMeta {
            method: "Multi",
            timeout_ms: 0,
            priority: 0,
        };
        let param = hbase_proto::CellBlockMeta { length: Some(1) };
        // Zeroed pages, never touched: the frame is refused before any copy.
        let huge = vec![0u8; frame::MAX_REQUEST_LEN];
        let now = std::time::Instant::now();
        match conn
            .call(meta, &param, Some(&huge), now, Duration::from_secs(30))
            .await
        {
            Err(CallError {
                error: Error::InvalidInput(_),
                delivery: Delivery::NotSent,
            }) => {}
            other => panic!("expected InvalidInput, not sent: {other:?}"),
        }
        assert!(shared.lock_pending().calls.is_empty());
        assert!(shared.lock_outbox().buf.is_empty());
        assert_eq!(shared.in_flight.available_permits(), 1);
    }

    #[test]
    fn a_call_due_before_the_check_keeps_a_timer_of_its_own() {
        let now = Instant::now();
        let check = now + Duration::from_secs(1);
        assert!(needs_own_timer(
            Some(check),
            now + Duration::from_millis(200),
            false
        ));
        assert!(!needs_own_timer(
            Some(check),
            now + Duration::from_secs(2),
            false
        ));
        // It woke the parked check, which then runs by the earliest deadline.
        assert!(!needs_own_timer(
            None,
            now + Duration::from_millis(200),
            true
        ));
        // Not known when the check runs: keep a timer.
        assert!(needs_own_timer(None, now + Duration::from_secs(2), false));
    }

    #[test]
    fn the_check_parks_when_no_call_is_outstanding_and_unparks_by_the_earliest_deadline() {
        let shared = test_shared(Duration::from_secs(60));
        let now = Instant::now();
        assert!(matches!(
            shared.watchdog(now, now, shared.tick),
            Watch::Idle
        ));
        assert_eq!(shared.lock_pending().watch_at, None);
        add_call(&shared, 7, Instant::now() + Duration::from_millis(100));
        let next = shared.unpark_watchdog(shared.tick);
        assert!(next <= Instant::now() + Duration::from_millis(100));
        assert_eq!(shared.lock_pending().watch_at, Some(next));
    }

    /// A plain TCP connection the peer reset before the call was written: the write(2) that
    /// carried the call fails whole, so the call was not sent (CI saw an increment reported
    /// unknown after a reset the reader had not read yet). Over a transport whose failed write
    /// may have sent part of what it took (TLS), the same call stays unknown.
    #[tokio::test]
    async fn a_call_whose_write_failed_whole_on_a_reset_connection_was_not_sent() {
        for sends_nothing in [true, false] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
                .await
                .unwrap();
            let (server, _) = listener.accept().await.unwrap();
            // Linger 0: the close resets the connection.
            server.set_zero_linger().unwrap();
            drop(server);
            let (mut rd, wr) = client.into_split();
            // The reset has arrived (the client's next write fails), but no reader of the
            // connection's has seen it: the writer meets it first.
            let mut byte = [0u8; 1];
            assert!(rd.read(&mut byte).await.is_err());
            let mut shared = test_shared(Duration::from_secs(60));
            shared.write_failure_sends_nothing = sends_nothing;
            let shared = Arc::new(shared);
            add_call(&shared, 1, Instant::now() + Duration::from_secs(60));
            {
                let mut out = shared.lock_outbox();
                out.buf.extend_from_slice(b"a request frame");
                let end = out.buf.len();
                out.frames.push(Frame {
                    call_id: 1,
                    start: 0,
                    end,
                });
            }
            shared.out_ready.notify_one();
            write_loop(shared.clone(), Box::new(wr)).await;
            assert!(shared.closed.load(Ordering::Acquire));
            let expected = if sends_nothing {
                Delivery::NotSent
            } else {
                Delivery::Unknown
            };
            assert_eq!(shared.abandon(1), expected, "sends_nothing={sends_nothing}");
        }
    }

    #[test]
    fn cutting_a_frame_keeps_the_others_intact() {
        let mut out = Outbox::default();
        for (id, bytes) in [(1u32, &b"aaa"[..]), (2, b"bb"), (3, b"cccc")] {
            let start = out.buf.len();
            out.buf.extend_from_slice(bytes);
            out.frames.push(Frame {
                call_id: id,
                start,
                end: out.buf.len(),
            });
        }
        assert!(out.remove(2));
        assert_eq!(&out.buf[..], b"aaacccc");
        assert_eq!((out.frames[1].start, out.frames[1].end), (3, 7));
        // Not here (taken by the writer, or written): remembered as cancelled.
        assert!(!out.remove(9));
        assert_eq!(out.cancelled, vec![9]);
        assert!(out.remove(1) && out.remove(3));
        assert!(out.buf.is_empty() && out.frames.is_empty());
    }
}
