//! A fault-injecting TCP proxy for the integration tests, in the spirit of scylla-proxy.
//!
//! [`FaultProxy::mapper`] plugs into `ClientConfig::builder(..).address_mapper(..)`: the first
//! time the client maps a server address, the proxy binds a listener on `127.0.0.1:0` for it
//! and returns that listener's address instead. Every connection through it is then relayed
//! to the real server, frame by frame, under the control of that upstream's [`ProxyControl`],
//! which the test switches at runtime:
//!
//! - delay every response frame by a chosen time ([`ProxyControl::set_delay`]);
//! - hold every request for a chosen time before the server sees it, as a slow server would
//!   ([`ProxyControl::set_request_delay`]); calls of a client that went away still run;
//! - reset the open connections (RST) ([`ProxyControl::reset_existing`]);
//! - freeze connections half-open: nothing flows either way, the sockets stay open
//!   ([`ProxyControl::freeze_existing`], [`ProxyControl::set_freeze_new`]);
//! - truncate the next response frames and close, or corrupt them
//!   ([`ProxyControl::truncate_next`], [`ProxyControl::cut_answers_where`] by a filter on the
//!   request, [`ProxyControl::corrupt_next`]);
//! - answer chosen calls with a server exception instead of the real response
//!   ([`ProxyControl::inject_exception`] by method, [`ProxyControl::inject_exception_where`]
//!   by a filter on the request);
//! - swallow chosen requests, so they are never answered ([`ProxyControl::swallow_requests`]);
//! - refuse new connections (accepted, then reset at once) ([`ProxyControl::set_refuse`]);
//! - drop chosen *responses*: the server executes the request, the client never hears back
//!   ([`ProxyControl::drop_responses`]);
//! - a black hole: new connections never complete the TCP handshake, as when a host's SYNs
//!   are dropped ([`ProxyControl::set_black_hole`]);
//! - a connection-level exception (a response without a call id, then close), as a server
//!   sends for a rejected connection header ([`ProxyControl::inject_connection_error`]);
//! - per-action exceptions inside a `Multi` response ([`ProxyControl::inject_action_exception`]);
//! - hold every response until switched off, while requests still flow
//!   ([`ProxyControl::hold_responses`]).
//!
//! It also records chosen requests ([`ProxyControl::record`]) and the most requests it has
//! seen outstanding at the server at once ([`ProxyControl::max_outstanding`]).
//!
//! The proxy understands just enough of HBase's framing (hbase-protocol.md §2): the client's
//! preamble and connection header, then `u32 length | varint+RequestHeader | varint+param |
//! cellblock` requests, and `u32 length | varint+ResponseHeader | …` responses. It reads
//! call ids and method names to pair responses with requests.
//!
//! Listeners are on loopback; each relays to its server at the address `HBASE_ADDRESS_MAP`
//! gives it (see [`crate::map_address`]), so the proxy also works in front of a cluster in
//! docker. Every task belongs to the proxy and is aborted when it is dropped; delays are capped
//! at 60 s.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

/// Longest delay the proxy will apply.
const MAX_DELAY: Duration = Duration::from_secs(60);
/// Response frames queued per connection before the proxy stops reading from the server.
const MAX_QUEUED_FRAMES: usize = 4096;

/// How [`ProxyControl::corrupt_next`] damages a response frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Corruption {
    /// The bytes after the length prefix are overwritten with `0xFF` (a garbage header).
    Garbage = 0,
    /// The length prefix claims a frame above the client's limit (2 GiB - 1).
    HugeLength = 1,
    /// The first cell of the cell block gets inconsistent length fields (the frame stays
    /// well-formed). Frames without a cell block are sent as garbage instead.
    CellBlock = 2,
}

/// A request as the proxy saw it.
#[derive(Debug, Clone)]
pub struct RequestInfo {
    /// The call id.
    pub call_id: u32,
    /// The method name, e.g. `"Get"`, `"Multi"`, `"Scan"`.
    pub method: String,
    /// The call's priority from its header (0 when absent).
    pub priority: u32,
    /// The call's server-side timeout in milliseconds from its header (0 when absent).
    pub timeout_ms: u32,
    /// The serialized request message.
    pub param: Bytes,
}

type RequestFilter = Box<dyn Fn(&RequestInfo) -> bool + Send + Sync>;
type Trigger = Box<dyn FnOnce() + Send>;

struct Injection {
    method: String,
    class_name: String,
    server_overloaded: bool,
    remaining: u32,
}

/// A request the server has not answered yet, as one connection's relay tracks it.
struct InFlight {
    method: String,
    /// The request message, kept for `Multi` calls (per-action injection needs their indexes).
    param: Option<Bytes>,
    /// Its response is to be dropped.
    drop_response: bool,
    /// Its response is to be replaced by this exception (class, server overloaded).
    exception: Option<(String, bool)>,
    /// Its response is to be cut in half and the connection closed.
    cut: bool,
    /// Its response is to be held back this long (the late delay when the request was
    /// picked), without holding up the others.
    late: Option<Duration>,
}

/// The runtime switches and counters of one upstream server. Every switch takes effect at
/// once, also on connections already open.
pub struct ProxyControl {
    upstream: String,
    changes: watch::Sender<u64>,
    next_conn: AtomicU64,
    delay_ms: AtomicU64,
    request_delay_ms: AtomicU64,
    refuse: AtomicBool,
    /// The listener is closed: connects are refused by the kernel.
    closed: AtomicBool,
    /// What the accept task has put in place: true once the port is held without a listener,
    /// false once it listens again (see [`ProxyControl::closed_in_place`]).
    closed_state: watch::Sender<bool>,
    /// Actions to run when a request a filter picks arrives (see [`ProxyControl::on_request`]).
    triggers: Mutex<Vec<(RequestFilter, Trigger)>>,
    freeze_new: AtomicBool,
    /// Connections with an id below this are frozen.
    frozen_below: AtomicU64,
    /// Connections with an id below this are reset.
    reset_below: AtomicU64,
    truncate: AtomicU32,
    corrupt: AtomicU32,
    corrupt_kind: AtomicU8,
    inject: Mutex<Option<Injection>>,
    swallow: Mutex<Option<(RequestFilter, u32)>>,
    drop_responses: Mutex<Option<(RequestFilter, u32)>>,
    record: Mutex<Option<(RequestFilter, Vec<RequestInfo>)>>,
    outstanding_filter: Mutex<Option<RequestFilter>>,
    connection_error: Mutex<Option<(String, bool)>>,
    action_exception: Mutex<Option<(String, u32)>>,
    inject_where: Mutex<Option<(RequestFilter, String, bool, u32)>>,
    cut_where: Mutex<Option<(RequestFilter, u32)>>,
    late: Mutex<Option<(RequestFilter, u32)>>,
    late_ms: AtomicU64,
    black_hole: AtomicBool,
    /// The black hole is in place: its listener's accept queue is full.
    black_hole_armed: AtomicBool,
    hold_responses: AtomicBool,
    frozen_ids: Mutex<Vec<u64>>,
    accepted: AtomicU64,
    refused: AtomicU64,
    live: AtomicU64,
    responses: AtomicU64,
    injected: AtomicU64,
    swallowed: AtomicU64,
    damaged: AtomicU64,
    dropped: AtomicU64,
    outstanding: AtomicU64,
    max_outstanding: AtomicU64,
}

impl ProxyControl {
    fn new(upstream: String) -> ProxyControl {
        ProxyControl {
            upstream,
            changes: watch::channel(0).0,
            next_conn: AtomicU64::new(1),
            delay_ms: AtomicU64::new(0),
            request_delay_ms: AtomicU64::new(0),
            refuse: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            closed_state: watch::channel(false).0,
            triggers: Mutex::new(Vec::new()),
            freeze_new: AtomicBool::new(false),
            frozen_below: AtomicU64::new(0),
            reset_below: AtomicU64::new(0),
            truncate: AtomicU32::new(0),
            corrupt: AtomicU32::new(0),
            corrupt_kind: AtomicU8::new(0),
            inject: Mutex::new(None),
            swallow: Mutex::new(None),
            drop_responses: Mutex::new(None),
            record: Mutex::new(None),
            outstanding_filter: Mutex::new(None),
            connection_error: Mutex::new(None),
            action_exception: Mutex::new(None),
            inject_where: Mutex::new(None),
            cut_where: Mutex::new(None),
            late: Mutex::new(None),
            late_ms: AtomicU64::new(0),
            black_hole: AtomicBool::new(false),
            black_hole_armed: AtomicBool::new(false),
            hold_responses: AtomicBool::new(false),
            frozen_ids: Mutex::new(Vec::new()),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            live: AtomicU64::new(0),
            responses: AtomicU64::new(0),
            injected: AtomicU64::new(0),
            swallowed: AtomicU64::new(0),
            damaged: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            outstanding: AtomicU64::new(0),
            max_outstanding: AtomicU64::new(0),
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|v| *v += 1);
    }

    /// The real server, `host:port`.
    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// Delays every response frame by `delay` (capped at 60 s) from when it arrived from
    /// the server. Zero switches the delay off.
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.min(MAX_DELAY).as_millis() as u64, SeqCst);
        self.changed();
    }

    /// Holds every request for `delay` (capped at 60 s) before forwarding it to the server,
    /// in order: the server looks slow. A call held or running when its client disconnects
    /// still reaches the server and runs, and counts as outstanding until it is answered.
    /// Zero switches the delay off.
    pub fn set_request_delay(&self, delay: Duration) {
        self.request_delay_ms
            .store(delay.min(MAX_DELAY).as_millis() as u64, SeqCst);
        self.changed();
    }

    /// While on, new connections are accepted and reset at once.
    pub fn set_refuse(&self, on: bool) {
        self.refuse.store(on, SeqCst);
        self.changed();
    }

    /// While on, the proxy's listener is closed: a client's connect fails at once with
    /// "connection refused" from the kernel, as when nothing listens on a server's port (the
    /// proxy never sees these connects). The port stays held (a socket bound to it, not
    /// listening), so no ephemeral bind or outgoing connect can take it meanwhile. Open
    /// connections are left alone (reset them too). Switched off, the held socket listens
    /// again.
    ///
    /// The switch takes effect in the proxy's accept task: wait for
    /// [`closed_in_place`](Self::closed_in_place) before counting on refusals (a connect
    /// queued before may still be accepted until then), and for
    /// [`listening`](Self::listening) before counting on connects after switching it off.
    pub fn set_closed(&self, on: bool) {
        self.closed.store(on, SeqCst);
        self.changed();
    }

    /// Waits until the listener closed by [`set_closed`](Self::set_closed) is gone: every
    /// connection accepted before is counted (and reached by
    /// [`reset_existing`](Self::reset_existing)), every new connect is refused.
    pub async fn closed_in_place(&self) {
        let mut state = self.closed_state.subscribe();
        // Bounded: the accept task that switches the state may have panicked.
        tokio::time::timeout(Duration::from_secs(30), state.wait_for(|closed| *closed))
            .await
            .expect("the port's switch did not happen within 30 s (its accept task ended?)")
            .expect("the control holds the sender");
    }

    /// Waits until the port listens again after [`set_closed`](Self::set_closed)`(false)` (or
    /// [`clear`](Self::clear)); returns at once when it was never closed.
    pub async fn listening(&self) {
        let mut state = self.closed_state.subscribe();
        // Bounded: the accept task that switches the state may have panicked.
        tokio::time::timeout(Duration::from_secs(30), state.wait_for(|closed| !*closed))
            .await
            .expect("the port's switch did not happen within 30 s (its accept task ended?)")
            .expect("the control holds the sender");
    }

    /// Runs `action` once, when the first request for which `filter` is true arrives (before
    /// it is forwarded to the server). Filters run under the triggers' lock (a filter must not
    /// call `on_request`), the action after it on the connection's relay task: neither may
    /// block; a switch like [`set_closed`](Self::set_closed) is fine.
    pub fn on_request(
        &self,
        filter: impl Fn(&RequestInfo) -> bool + Send + Sync + 'static,
        action: impl FnOnce() + Send + 'static,
    ) {
        lock(&self.triggers).push((Box::new(filter), Box::new(action)));
    }

    /// Runs (and forgets) the first trigger that picks `req`.
    fn fire_triggers(&self, req: &RequestInfo) {
        let action = {
            let mut triggers = lock(&self.triggers);
            let at = triggers.iter().position(|(filter, _)| filter(req));
            at.map(|i| triggers.remove(i).1)
        };
        if let Some(action) = action {
            action();
        }
    }

    /// Waits until no connection to this server is open through the proxy (after
    /// [`reset_existing`](Self::reset_existing) with new ones refused: until every reset was
    /// sent).
    /// Panics after 30 s.
    pub async fn no_live_connections(&self) {
        let gone = tokio::time::timeout(Duration::from_secs(30), async {
            while self.live() > 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(
            gone.is_ok(),
            "{} connection(s) to {} still open after 30 s",
            self.live(),
            self.upstream
        );
    }

    /// Resets (RST) every connection open now.
    pub fn reset_existing(&self) {
        self.reset_below.store(self.next_conn.load(SeqCst), SeqCst);
        self.changed();
    }

    /// Freezes every connection open now: no bytes flow either way, the sockets stay open.
    pub fn freeze_existing(&self) {
        self.frozen_below.store(self.next_conn.load(SeqCst), SeqCst);
        self.changed();
    }

    /// While on, new connections are frozen from the start (until [`ProxyControl::thaw`]).
    pub fn set_freeze_new(&self, on: bool) {
        self.freeze_new.store(on, SeqCst);
        self.changed();
    }

    /// Lets frozen connections flow again and stops freezing new ones.
    pub fn thaw(&self) {
        self.freeze_new.store(false, SeqCst);
        self.frozen_below.store(0, SeqCst);
        self.frozen_ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.changed();
    }

    /// While on, requests flow to the server as usual but its responses are held in the
    /// proxy (queued in order, up to the queue's limit); switching it off delivers them. The
    /// held calls count as outstanding: a test sees what a client sends while it waits.
    pub fn hold_responses(&self, on: bool) {
        self.hold_responses.store(on, SeqCst);
        self.changed();
    }

    /// The next `frames` response frames are cut in half, and their connection closed.
    pub fn truncate_next(&self, frames: u32) {
        self.truncate.store(frames, SeqCst);
        self.changed();
    }

    /// The next `frames` response frames are damaged as `kind` says.
    pub fn corrupt_next(&self, frames: u32, kind: Corruption) {
        self.corrupt_kind.store(kind as u8, SeqCst);
        self.corrupt.store(frames, SeqCst);
        self.changed();
    }

    /// The responses to the next `count` calls of `method` are replaced by an exception of
    /// `class_name` (fully qualified), with `server_overloaded` as given.
    pub fn inject_exception(
        &self,
        method: &str,
        class_name: &str,
        server_overloaded: bool,
        count: u32,
    ) {
        *self.inject.lock().unwrap_or_else(|e| e.into_inner()) = Some(Injection {
            method: method.into(),
            class_name: class_name.into(),
            server_overloaded,
            remaining: count,
        });
        self.changed();
    }

    /// The responses to the next `count` requests for which `filter` is true are replaced by
    /// an exception of `class_name` (fully qualified), with `server_overloaded` as given: as
    /// [`inject_exception`](Self::inject_exception), but only for the calls `filter` picks
    /// (another client's lookups on the same server keep their answers).
    pub fn inject_exception_where(
        &self,
        count: u32,
        filter: impl Fn(&RequestInfo) -> bool + Send + Sync + 'static,
        class_name: &str,
        server_overloaded: bool,
    ) {
        *lock(&self.inject_where) = Some((
            Box::new(filter),
            class_name.into(),
            server_overloaded,
            count,
        ));
        self.changed();
    }

    /// The responses to the next `count` requests for which `filter` is true are cut in half
    /// and their connection closed: as [`truncate_next`](Self::truncate_next), but only for
    /// the calls `filter` picks.
    pub fn cut_answers_where(
        &self,
        count: u32,
        filter: impl Fn(&RequestInfo) -> bool + Send + Sync + 'static,
    ) {
        *lock(&self.cut_where) = Some((Box::new(filter), count));
        self.changed();
    }

    /// The next `count` requests for which `filter` is true are dropped: the server never
    /// sees them and the client never gets an answer.
    pub fn swallow_requests(
        &self,
        count: u32,
        filter: impl Fn(&RequestInfo) -> bool + Send + Sync + 'static,
    ) {
        *self.swallow.lock().unwrap_or_else(|e| e.into_inner()) = Some((Box::new(filter), count));
        self.changed();
    }

    /// The responses to the next `count` requests for which `filter` is true reach the client
    /// `delay` (capped at 60 s) after the server gave them: a server slow for those calls
    /// only. Other responses on the same connection are not held up behind them. Each request
    /// keeps the delay in force when it was picked.
    pub fn answer_late_where(
        &self,
        delay: Duration,
        count: u32,
        filter: impl Fn(&RequestInfo) -> bool + Send + Sync + 'static,
    ) {
        self.late_ms
            .store(delay.min(MAX_DELAY).as_millis() as u64, SeqCst);
        *lock(&self.late) = Some((Box::new(filter), count));
        self.changed();
    }

    /// The next `count` requests for which `filter` is true reach the server, but their
    /// responses are dropped: the server does the work, the client never hears back.
    pub fn drop_responses(
        &self,
        count: u32,
        filter: impl Fn(&RequestInfo) -> bool + Send + Sync + 'static,
    ) {
        *lock(&self.drop_responses) = Some((Box::new(filter), count));
        self.changed();
    }

    /// While on, new connections never complete the TCP handshake: the listener's accept
    /// queue is full, so the kernel drops the client's SYNs and its `connect` hangs. Open
    /// connections are left alone (freeze or reset them too); ones queued, not accepted yet,
    /// are reset.
    ///
    /// The switch takes effect in the proxy's accept task; wait for
    /// [`black_hole_armed`](Self::black_hole_armed) before making the client connect, or its
    /// connect may be accepted before the hole is in place, or take the accept queue's one
    /// slot.
    pub fn set_black_hole(&self, on: bool) {
        self.black_hole.store(on, SeqCst);
        self.changed();
    }

    /// Waits until the black hole switched on by [`set_black_hole`](Self::set_black_hole) is
    /// in place (its accept queue full). Bounded: 30 s turn a bug into a panic.
    pub async fn black_hole_armed(&self) {
        let started = Instant::now();
        while !self.black_hole_armed.load(SeqCst) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the black hole was not armed within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The next response is replaced by a connection-level exception (a response header
    /// without a call id) of `class_name`, with `do_not_retry` as given; then the connection
    /// is closed, as a server does after rejecting a connection header.
    pub fn inject_connection_error(&self, class_name: &str, do_not_retry: bool) {
        *lock(&self.connection_error) = Some((class_name.into(), do_not_retry));
        self.changed();
    }

    /// The next `count` `Multi` responses are replaced by one where every action failed with
    /// `class_name` (a per-action `NameBytesPair` exception, which carries no do-not-retry
    /// flag: only the class says what it is).
    pub fn inject_action_exception(&self, class_name: &str, count: u32) {
        *lock(&self.action_exception) = Some((class_name.into(), count));
        self.changed();
    }

    /// From now on, keeps every request for which `filter` is true (see
    /// [`ProxyControl::recorded`]). Replaces an earlier filter and forgets what it kept.
    pub fn record(&self, filter: impl Fn(&RequestInfo) -> bool + Send + Sync + 'static) {
        *lock(&self.record) = Some((Box::new(filter), Vec::new()));
    }

    /// The requests kept since [`ProxyControl::record`], in the order they reached the server.
    pub fn recorded(&self) -> Vec<RequestInfo> {
        lock(&self.record)
            .as_ref()
            .map(|(_, kept)| kept.clone())
            .unwrap_or_default()
    }

    /// Switches every fault off (frozen connections thaw; exceptions, corruption, truncation,
    /// swallowing, dropped or late responses, refusals, a closed listener, triggers and the
    /// black hole are cancelled; late
    /// responses already held are still delivered when due).
    pub fn clear(&self) {
        self.delay_ms.store(0, SeqCst);
        self.request_delay_ms.store(0, SeqCst);
        self.refuse.store(false, SeqCst);
        self.closed.store(false, SeqCst);
        lock(&self.triggers).clear();
        *lock(&self.late) = None;
        self.late_ms.store(0, SeqCst);
        self.black_hole.store(false, SeqCst);
        self.hold_responses.store(false, SeqCst);
        self.truncate.store(0, SeqCst);
        self.corrupt.store(0, SeqCst);
        *lock(&self.inject) = None;
        *lock(&self.swallow) = None;
        *lock(&self.drop_responses) = None;
        *lock(&self.connection_error) = None;
        *lock(&self.action_exception) = None;
        *lock(&self.inject_where) = None;
        *lock(&self.cut_where) = None;
        self.thaw();
    }

    /// Connections accepted and relayed (refused ones not included).
    pub fn accepted(&self) -> u64 {
        self.accepted.load(SeqCst)
    }

    /// Connections refused.
    pub fn refused(&self) -> u64 {
        self.refused.load(SeqCst)
    }

    /// Connections open now.
    pub fn live(&self) -> u64 {
        self.live.load(SeqCst)
    }

    /// Response frames that reached the client (injected ones included).
    pub fn responses(&self) -> u64 {
        self.responses.load(SeqCst)
    }

    /// Responses replaced by an injected exception.
    pub fn injected(&self) -> u64 {
        self.injected.load(SeqCst)
    }

    /// Requests swallowed.
    pub fn swallowed(&self) -> u64 {
        self.swallowed.load(SeqCst)
    }

    /// Response frames truncated or corrupted.
    pub fn damaged(&self) -> u64 {
        self.damaged.load(SeqCst)
    }

    /// Responses dropped by [`ProxyControl::drop_responses`].
    pub fn dropped(&self) -> u64 {
        self.dropped.load(SeqCst)
    }

    /// Requests received from clients and not answered yet: held by a request delay, running
    /// on the server, or with their response held by a response delay (over all connections).
    pub fn outstanding(&self) -> u64 {
        self.outstanding.load(SeqCst)
    }

    /// The most requests outstanding at the server at once since the proxy started (or since
    /// [`ProxyControl::reset_max_outstanding`]).
    pub fn max_outstanding(&self) -> u64 {
        self.max_outstanding.load(SeqCst)
    }

    /// Restarts [`ProxyControl::max_outstanding`] from the current count.
    pub fn reset_max_outstanding(&self) {
        self.max_outstanding.store(self.outstanding(), SeqCst);
    }

    /// Counts only requests for which `filter` is true as outstanding, from now on (for
    /// connections opened from now on; default: every request).
    pub fn count_outstanding(&self, filter: impl Fn(&RequestInfo) -> bool + Send + Sync + 'static) {
        *lock(&self.outstanding_filter) = Some(Box::new(filter));
    }

    fn counts_as_outstanding(&self, req: &RequestInfo) -> bool {
        lock(&self.outstanding_filter)
            .as_ref()
            .is_none_or(|f| f(req))
    }

    fn note_forwarded(&self) {
        let now = self.outstanding.fetch_add(1, SeqCst) + 1;
        self.max_outstanding.fetch_max(now, SeqCst);
    }

    fn note_answered(&self, n: u64) {
        self.outstanding.fetch_sub(n, SeqCst);
    }

    /// True when the response to `req` is to be dropped (takes one unit of the countdown).
    fn should_drop_response(&self, req: &RequestInfo) -> bool {
        picks(&self.drop_responses, req)
    }

    fn keep_if_recorded(&self, req: &RequestInfo) {
        if let Some((filter, kept)) = lock(&self.record).as_mut() {
            if filter(req) {
                kept.push(req.clone());
            }
        }
    }

    fn take_action_exception(&self) -> Option<String> {
        let mut inject = lock(&self.action_exception);
        let (class, left) = inject.as_mut()?;
        if *left == 0 {
            return None;
        }
        *left -= 1;
        self.injected.fetch_add(1, SeqCst);
        Some(class.clone())
    }

    fn is_frozen(&self, id: u64) -> bool {
        id < self.frozen_below.load(SeqCst)
            || self
                .frozen_ids
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&id)
    }

    fn is_reset(&self, id: u64) -> bool {
        id < self.reset_below.load(SeqCst)
    }

    fn delay(&self) -> Duration {
        Duration::from_millis(self.delay_ms.load(SeqCst))
    }

    fn request_delay(&self) -> Duration {
        Duration::from_millis(self.request_delay_ms.load(SeqCst))
    }

    /// Takes one unit of a countdown, if any is left.
    fn take(counter: &AtomicU32) -> bool {
        counter
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    fn should_swallow(&self, req: &RequestInfo) -> bool {
        let picked = picks(&self.swallow, req);
        if picked {
            self.swallowed.fetch_add(1, SeqCst);
        }
        picked
    }

    /// The exception to answer `req` with, if [`inject_exception_where`](Self::inject_exception_where)
    /// picks it (takes one unit of the countdown).
    fn exception_for(&self, req: &RequestInfo) -> Option<(String, bool)> {
        let mut inject = lock(&self.inject_where);
        let (filter, class, overloaded, left) = inject.as_mut()?;
        if *left == 0 || !filter(req) {
            return None;
        }
        *left -= 1;
        self.injected.fetch_add(1, SeqCst);
        Some((class.clone(), *overloaded))
    }

    /// True when the response to `req` is to be cut (takes one unit of the countdown).
    fn should_cut(&self, req: &RequestInfo) -> bool {
        picks(&self.cut_where, req)
    }

    /// The exception to answer `method` with, if one is to be injected.
    fn injection_for(&self, method: &str) -> Option<(String, bool)> {
        let mut inject = self.inject.lock().unwrap_or_else(|e| e.into_inner());
        let i = inject.as_mut()?;
        if i.remaining == 0 || i.method != method {
            return None;
        }
        i.remaining -= 1;
        self.injected.fetch_add(1, SeqCst);
        Some((i.class_name.clone(), i.server_overloaded))
    }
}

/// True when the countdown `slot` (a filter and the requests it has left to pick) picks `req`;
/// a pick uses up one.
fn picks(slot: &Mutex<Option<(RequestFilter, u32)>>, req: &RequestInfo) -> bool {
    match lock(slot).as_mut() {
        Some((filter, left)) if *left > 0 && filter(req) => {
            *left -= 1;
            true
        }
        _ => false,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Upstream {
    local: String,
    control: Arc<ProxyControl>,
    accept_task: AbortHandle,
}

#[derive(Default)]
struct ProxyInner {
    upstreams: Mutex<HashMap<String, Upstream>>,
}

impl ProxyInner {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Upstream>> {
        self.upstreams.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The proxy address for `upstream`, starting a listener on first use.
    fn local_for(&self, upstream: &str) -> String {
        let mut map = self.lock();
        if let Some(u) = map.get(upstream) {
            return u.local.clone();
        }
        // The server as the client would reach it without the proxy (HBASE_ADDRESS_MAP).
        let target = crate::map_address(upstream);
        // The port reusable by this user's sockets that ask for it, so that `set_closed` can
        // hold it with a socket of its own before the listener goes (see `hold`).
        let socket = tokio::net::TcpSocket::new_v4().expect("a loopback socket");
        socket.set_reuseport(true).expect("SO_REUSEPORT");
        socket
            .bind("127.0.0.1:0".parse().expect("an address"))
            .expect("bind a loopback listener");
        let local = socket.local_addr().expect("local addr").to_string();
        let listener = socket
            .listen(1024)
            .expect("the fault proxy is used from inside a tokio runtime");
        let control = Arc::new(ProxyControl::new(upstream.to_string()));
        let accept_task =
            tokio::spawn(accept_loop(listener, target, control.clone())).abort_handle();
        map.insert(
            upstream.to_string(),
            Upstream {
                local: local.clone(),
                control,
                accept_task,
            },
        );
        local
    }
}

/// A fault-injecting proxy in front of every server the client connects to. Dropping it
/// closes its listeners and every connection through it.
#[derive(Clone, Default)]
pub struct FaultProxy {
    inner: Arc<ProxyInner>,
}

impl Drop for ProxyInner {
    fn drop(&mut self) {
        for u in self.lock().values() {
            u.accept_task.abort();
        }
    }
}

impl FaultProxy {
    /// A proxy with no upstreams yet; they appear as the client maps addresses.
    pub fn new() -> FaultProxy {
        FaultProxy::default()
    }

    /// The address mapper to give `ClientConfigBuilder::address_mapper`.
    pub fn mapper(&self) -> impl Fn(&str) -> String + Send + Sync + 'static {
        let inner = self.inner.clone();
        move |addr: &str| inner.local_for(addr)
    }

    /// The controls of `upstream` (`host:port` as the server advertises it), creating its
    /// listener if the client has not used it yet.
    pub fn control(&self, upstream: &str) -> Arc<ProxyControl> {
        self.inner.local_for(upstream);
        self.inner.lock()[upstream].control.clone()
    }

    /// The controls of every upstream seen so far.
    pub fn controls(&self) -> Vec<Arc<ProxyControl>> {
        self.inner
            .lock()
            .values()
            .map(|u| u.control.clone())
            .collect()
    }

    /// Applies `f` to every upstream seen so far.
    pub fn each(&self, f: impl Fn(&ProxyControl)) {
        for c in self.controls() {
            f(&c);
        }
    }

    /// Connections accepted over all upstreams.
    pub fn accepted(&self) -> u64 {
        self.controls().iter().map(|c| c.accepted()).sum()
    }

    /// Connections open now over all upstreams.
    pub fn live(&self) -> u64 {
        self.controls().iter().map(|c| c.live()).sum()
    }
}

async fn accept_loop(mut listener: TcpListener, upstream: String, ctl: Arc<ProxyControl>) {
    let local = listener.local_addr().expect("listener address");
    let mut conns = JoinSet::new();
    let mut changes = ctl.changes.subscribe();
    loop {
        if ctl.black_hole.load(SeqCst) {
            black_hole(&listener, &ctl, &mut changes).await;
            continue;
        }
        if ctl.closed.load(SeqCst) {
            // Held first, then the listener closed: the port is never free.
            let held = hold(local).await;
            drop(listener);
            ctl.closed_state.send_replace(true);
            while ctl.closed.load(SeqCst) {
                if changes.changed().await.is_err() {
                    return;
                }
            }
            listener = held
                .listen(1024)
                .expect("listen again on the proxy's held port");
            ctl.closed_state.send_replace(false);
            continue;
        }
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let id = ctl.next_conn.fetch_add(1, SeqCst);
                if ctl.refuse.load(SeqCst) {
                    ctl.refused.fetch_add(1, SeqCst);
                    reset(client);
                    continue;
                }
                if ctl.freeze_new.load(SeqCst) {
                    ctl.frozen_ids.lock().unwrap_or_else(|e| e.into_inner()).push(id);
                }
                ctl.accepted.fetch_add(1, SeqCst);
                conns.spawn(relay(ctl.clone(), id, client, upstream.clone()));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = changes.changed() => {}
        }
    }
}

/// A socket bound to `addr` but not listening: once the listener is closed, the kernel refuses
/// connects to the port, and no other socket can take it (SO_REUSEPORT, as the listener has
/// it, binds it beside the listener still open; a socket without it, or an ephemeral bind,
/// cannot share the port). Retried a while should the bind fail all the same (bounded: a bug
/// becomes a message).
async fn hold(addr: std::net::SocketAddr) -> tokio::net::TcpSocket {
    let bind = || -> std::io::Result<tokio::net::TcpSocket> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.set_reuseport(true)?;
        socket.bind(addr)?;
        Ok(socket)
    };
    let started = Instant::now();
    loop {
        match bind() {
            Ok(socket) => return socket,
            Err(e) if started.elapsed() > Duration::from_secs(30) => {
                panic!("could not hold the proxy's port {addr} while closed: {e}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

/// Sets the accept backlog of `listener`, which listens already: Linux changes it in place.
fn set_backlog(listener: &TcpListener, backlog: i32) {
    use std::os::fd::AsRawFd;
    // SAFETY: listen(2) on a socket descriptor the listener owns and keeps open.
    let rc = unsafe { libc::listen(listener.as_raw_fd(), backlog) };
    assert_eq!(
        rc,
        0,
        "listen({backlog}) on the proxy's listener: {}",
        std::io::Error::last_os_error()
    );
}

/// Accepts every connection queued on `listener` now and resets it (RST).
fn reset_queued(listener: &TcpListener) {
    use std::os::fd::{AsRawFd, FromRawFd};
    loop {
        // SAFETY: accept4 on the listener's open descriptor; a descriptor it returns is owned
        // by the std stream made from it, which closes it.
        let fd = unsafe {
            libc::accept4(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) | Some(libc::ECONNABORTED) => continue,
                // EAGAIN: the queue is empty (the listener is non-blocking).
                _ => return,
            }
        }
        let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
        // Not made a tokio stream (it cannot fail inside the runtime): closed with FIN instead.
        if let Ok(stream) = stream
            .set_nonblocking(true)
            .and_then(|()| TcpStream::from_std(stream))
        {
            reset(stream);
        }
    }
}

/// Makes `listener` a black hole until the switch goes off: its accept backlog 0 and the one
/// accept-queue slot that leaves taken by a connection of our own, never accepted. The kernel
/// then drops every SYN to the port, so clients' connects hang in SYN_SENT (no handshake at
/// all). The listener stays open throughout, so no other socket can take the port.
async fn black_hole(
    listener: &TcpListener,
    ctl: &ProxyControl,
    changes: &mut watch::Receiver<u64>,
) {
    let addr = listener.local_addr().expect("listener address");
    // Connections whose handshake completed before the switch and that were not accepted yet
    // are reset, as closing the listener would (they would take the queue's slot): accepted
    // by the system call itself, which tokio's readiness may not have seen yet; again after the
    // backlog shrinks, for one that completed meanwhile.
    reset_queued(listener);
    set_backlog(listener, 0);
    reset_queued(listener);
    // Nothing else connects before the hole is armed (see `set_black_hole`), so the queue's
    // one slot is free and this completes at once; the bound only turns a bug into a message.
    let filler = tokio::time::timeout(Duration::from_secs(30), TcpStream::connect(addr)).await;
    let filler = match filler {
        Ok(Ok(f)) => f,
        other => panic!("the black hole's accept queue could not be filled: {other:?}"),
    };
    ctl.black_hole_armed.store(true, SeqCst);
    while ctl.black_hole.load(SeqCst) {
        if changes.changed().await.is_err() {
            break;
        }
    }
    ctl.black_hole_armed.store(false, SeqCst);
    set_backlog(listener, 1024);
    // The filler came first, so it is accepted first (clients whose SYNs the kernel retries
    // queue behind it); it goes, unrelayed.
    let first = tokio::time::timeout(Duration::from_secs(30), listener.accept()).await;
    let filler_addr = filler.local_addr().ok();
    match first {
        Ok(Ok((accepted, peer))) if Some(peer) == filler_addr => drop(accepted),
        other => panic!("the black hole's filler was not accepted first: {other:?}"),
    }
    drop(filler);
}

/// Closes with RST instead of FIN.
fn reset(stream: TcpStream) {
    // Deprecated because a non-zero linger blocks the thread on drop; a zero linger never
    // blocks: the kernel discards the socket and sends RST.
    #[allow(deprecated)]
    let _ = stream.set_linger(Some(Duration::ZERO));
    drop(stream);
}

struct LiveGuard<'a>(&'a ProxyControl);

impl Drop for LiveGuard<'_> {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, SeqCst);
    }
}

/// A response frame waiting to be sent to the client.
struct Outgoing {
    due: Instant,
    bytes: Bytes,
    /// Close the connection once this is sent.
    close_after: bool,
    /// 1 when this answers a request still counted as outstanding, else 0.
    answers: u64,
    /// A late answer (see [`ProxyControl::answer_late_where`]): queued apart from the others.
    late: bool,
}

async fn relay(ctl: Arc<ProxyControl>, id: u64, client: TcpStream, upstream: String) {
    ctl.live.fetch_add(1, SeqCst);
    let _live = LiveGuard(&ctl);
    let server =
        match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&upstream)).await {
            Ok(Ok(s)) => s,
            _ => {
                reset(client);
                return;
            }
        };
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let mut changes = ctl.changes.subscribe();
    let mut requests = RequestParser::default();
    let mut c_buf = BytesMut::with_capacity(64 * 1024);
    let mut s_buf = BytesMut::with_capacity(64 * 1024);
    let mut methods = InFlightMap {
        ctl: &ctl,
        calls: HashMap::new(),
        undelivered: 0,
    };
    // Requests that do not count as outstanding (see `count_outstanding`).
    let mut untracked: HashMap<u32, InFlight> = HashMap::new();
    // Requests (and the preamble) waiting for their request delay or a thaw, in order.
    let mut held: VecDeque<(Instant, Bytes)> = VecDeque::new();
    let mut out: VecDeque<Outgoing> = VecDeque::new();
    // Late answers, in their own queue: they hold up no other answer.
    let mut late: VecDeque<Outgoing> = VecDeque::new();
    let mut server_done = false;
    let mut cut = false;
    // The client went away: what it sent still runs on the server, nothing goes back.
    let mut client_gone = false;
    let drain_until = Instant::now() + MAX_DELAY;
    loop {
        if ctl.is_reset(id) {
            if let Ok(client) = cr.reunite(cw) {
                reset(client);
            }
            return;
        }
        if client_gone {
            let answers = out.drain(..).chain(late.drain(..)).map(|o| o.answers).sum();
            methods.delivered(answers);
            if (held.is_empty() && methods.calls.is_empty() && untracked.is_empty())
                || server_done
                || Instant::now() > drain_until
            {
                return;
            }
        }
        let frozen = ctl.is_frozen(id);
        if !frozen && out.is_empty() && late.is_empty() && (server_done || cut) {
            let _ = cw.shutdown().await;
            return;
        }
        let due = out.front().map(|o| o.due);
        let late_due = late.front().map(|o| o.due);
        let held_due = held.front().map(|h| h.0);
        tokio::select! {
            r = cr.read_buf(&mut c_buf), if !frozen && !client_gone => {
                if !matches!(r, Ok(n) if n > 0) {
                    client_gone = true;
                    continue;
                }
                let hold_until = Instant::now() + ctl.request_delay();
                for unit in requests.feed(&mut c_buf) {
                    if let Some(req) = &unit.request {
                        if ctl.should_swallow(req) {
                            continue;
                        }
                        ctl.keep_if_recorded(req);
                        ctl.fire_triggers(req);
                        let drop_response = ctl.should_drop_response(req);
                        let in_flight = InFlight {
                            method: req.method.clone(),
                            param: (req.method == "Multi").then(|| req.param.clone()),
                            drop_response,
                            // A response dropped is neither replaced nor cut: those faults'
                            // countdowns are kept for a response that reaches the client.
                            exception: (!drop_response).then(|| ctl.exception_for(req)).flatten(),
                            cut: !drop_response && ctl.should_cut(req),
                            late: (!drop_response && picks(&ctl.late, req))
                                .then(|| Duration::from_millis(ctl.late_ms.load(SeqCst))),
                        };
                        if ctl.counts_as_outstanding(req) {
                            methods.calls.insert(req.call_id, in_flight);
                            ctl.note_forwarded();
                        } else {
                            untracked.insert(req.call_id, in_flight);
                        }
                    }
                    // Frozen since the loop's check (the switch flipped while this read was
                    // waiting): the request waits with the held ones, for the thaw.
                    if held.is_empty() && ctl.request_delay().is_zero() && !ctl.is_frozen(id) {
                        if sw.write_all(&unit.bytes).await.is_err() {
                            return;
                        }
                    } else {
                        held.push_back((hold_until, unit.bytes));
                    }
                }
            }
            _ = tokio::time::sleep_until(held_due.unwrap_or_else(Instant::now)), if !frozen && held_due.is_some() => {
                // Frozen since the loop's check: it stays held until the thaw.
                if ctl.is_frozen(id) {
                    continue;
                }
                let (_, bytes) = held.pop_front().expect("due implies held");
                if sw.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            r = sr.read_buf(&mut s_buf), if !frozen && !server_done && !cut && out.len() < MAX_QUEUED_FRAMES => {
                if !matches!(r, Ok(n) if n > 0) {
                    server_done = true;
                    continue;
                }
                while let Some(frame) = split_frame(&mut s_buf) {
                    let Some(o) = process_response(&ctl, frame, &mut methods, &mut untracked) else {
                        continue;
                    };
                    let close = o.close_after;
                    methods.undelivered += o.answers;
                    if o.late {
                        late.push_back(o);
                    } else {
                        out.push_back(o);
                    }
                    if close {
                        cut = true;
                        break;
                    }
                }
            }
            _ = tokio::time::sleep_until(
                due.into_iter().chain(late_due).min().unwrap_or_else(Instant::now)
            ), if !frozen && (due.is_some() || late_due.is_some()) && !client_gone && !ctl.hold_responses.load(SeqCst) => {
                // Frozen since the loop's check: it stays queued until the thaw.
                if ctl.is_frozen(id) {
                    continue;
                }
                let queue = if due.is_some_and(|d| late_due.is_none_or(|l| d <= l)) {
                    &mut out
                } else {
                    &mut late
                };
                let o = queue.pop_front().expect("due implies queued");
                methods.delivered(o.answers);
                ctl.responses.fetch_add(1, SeqCst);
                if cw.write_all(&o.bytes).await.is_err() {
                    return;
                }
                if o.close_after {
                    let _ = cw.shutdown().await;
                    return;
                }
            }
            _ = changes.changed() => {}
        }
    }
}

/// Splits one complete `u32 length | body` frame off `buf`.
fn split_frame(buf: &mut BytesMut) -> Option<Bytes> {
    if buf.len() < 4 {
        return None;
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if buf.len() < 4 + len {
        buf.reserve((4 + len - buf.len()).min(1 << 20));
        return None;
    }
    Some(buf.split_to(4 + len).freeze())
}

/// The requests one connection has forwarded and the server has not answered; whatever is
/// left when the connection ends no longer counts as outstanding.
struct InFlightMap<'a> {
    ctl: &'a ProxyControl,
    calls: HashMap<u32, InFlight>,
    /// Answers the server gave that are queued (delayed) and not yet delivered.
    undelivered: u64,
}

impl InFlightMap<'_> {
    /// A queued answer was delivered to the client, or given up with its client.
    fn delivered(&mut self, answers: u64) {
        self.undelivered -= answers;
        self.ctl.note_answered(answers);
    }
}

impl Drop for InFlightMap<'_> {
    fn drop(&mut self) {
        self.ctl
            .note_answered(self.calls.len() as u64 + self.undelivered);
    }
}

/// Decides what the client gets for one response frame from the server (nothing, when the
/// response is to be dropped).
fn process_response(
    ctl: &ProxyControl,
    frame: Bytes,
    methods: &mut InFlightMap,
    untracked: &mut HashMap<u32, InFlight>,
) -> Option<Outgoing> {
    let header = response_header(&frame[4..]);
    let call_id = header.as_ref().and_then(|h| h.call_id);
    let tracked = call_id.and_then(|id| methods.calls.remove(&id));
    let answers = tracked.is_some() as u64;
    let in_flight = tracked.or_else(|| call_id.and_then(|id| untracked.remove(&id)));
    let late_by = in_flight.as_ref().and_then(|c| c.late);
    let late = late_by.is_some();
    let due = Instant::now() + late_by.unwrap_or_else(|| ctl.delay());
    if let Some((class, do_not_retry)) = lock(&ctl.connection_error).take() {
        ctl.injected.fetch_add(1, SeqCst);
        return Some(Outgoing {
            due,
            bytes: connection_error_frame(&class, do_not_retry),
            close_after: true,
            answers,
            late,
        });
    }
    if let (Some(call_id), Some(call)) = (call_id, &in_flight) {
        if call.drop_response {
            ctl.dropped.fetch_add(1, SeqCst);
            ctl.note_answered(answers);
            return None;
        }
        if call.cut {
            ctl.damaged.fetch_add(1, SeqCst);
            return Some(Outgoing {
                due,
                bytes: frame.slice(..(frame.len() / 2).max(1)),
                close_after: true,
                answers,
                late,
            });
        }
        if let Some((class, overloaded)) = call
            .exception
            .clone()
            .or_else(|| ctl.injection_for(&call.method))
        {
            return Some(Outgoing {
                due,
                bytes: exception_frame(call_id, &class, overloaded),
                close_after: false,
                answers,
                late,
            });
        }
        if let Some(param) = &call.param {
            if let Some(class) = ctl.take_action_exception() {
                return Some(Outgoing {
                    due,
                    bytes: multi_action_exception_frame(call_id, param, &class),
                    close_after: false,
                    answers,
                    late,
                });
            }
        }
    }
    if ProxyControl::take(&ctl.truncate) {
        ctl.damaged.fetch_add(1, SeqCst);
        let half = frame.len() / 2;
        return Some(Outgoing {
            due,
            bytes: frame.slice(..half.max(1)),
            close_after: true,
            answers,
            late,
        });
    }
    if ProxyControl::take(&ctl.corrupt) {
        ctl.damaged.fetch_add(1, SeqCst);
        let mut f = BytesMut::from(&frame[..]);
        let cellblock_len = header.and_then(|h| h.cellblock_len).unwrap_or(0) as usize;
        match ctl.corrupt_kind.load(SeqCst) {
            1 => f[..4].copy_from_slice(&0x7fff_ffffu32.to_be_bytes()),
            2 if cellblock_len >= 12 => {
                // The cell's total length no longer matches key + value lengths.
                let at = f.len() - cellblock_len;
                f[at + 3] ^= 0x5a;
            }
            _ => {
                let end = f.len().min(4 + 16);
                f[4..end].fill(0xff);
            }
        }
        return Some(Outgoing {
            due,
            bytes: f.freeze(),
            close_after: false,
            answers,
            late,
        });
    }
    Some(Outgoing {
        due,
        bytes: frame,
        close_after: false,
        answers,
        late,
    })
}

/// One unit the proxy forwards to the server: the connection preamble, or a request frame.
struct Unit {
    bytes: Bytes,
    request: Option<RequestInfo>,
}

/// Splits the client's byte stream into the preamble and request frames.
#[derive(Default)]
struct RequestParser {
    preamble_done: bool,
}

impl RequestParser {
    fn feed(&mut self, buf: &mut BytesMut) -> Vec<Unit> {
        let mut units = Vec::new();
        if !self.preamble_done {
            // "HBas" + version + auth, then a u32 length and the ConnectionHeader.
            if buf.len() < 10 {
                return units;
            }
            let len = u32::from_be_bytes([buf[6], buf[7], buf[8], buf[9]]) as usize;
            if buf.len() < 10 + len {
                return units;
            }
            units.push(Unit {
                bytes: buf.split_to(10 + len).freeze(),
                request: None,
            });
            self.preamble_done = true;
        }
        while let Some(frame) = split_frame(buf) {
            let request = parse_request(&frame[4..]);
            units.push(Unit {
                bytes: frame,
                request,
            });
        }
        units
    }
}

fn parse_request(body: &[u8]) -> Option<RequestInfo> {
    let mut pos = 0;
    let header_len = read_varint(body, &mut pos)? as usize;
    let header = body.get(pos..pos + header_len)?;
    pos += header_len;
    let mut call_id = None;
    let mut method = None;
    let (mut priority, mut timeout_ms) = (0, 0);
    for (field, value) in proto_fields(header)? {
        match (field, value) {
            (1, Field::Varint(v)) => call_id = Some(v as u32),
            (3, Field::Bytes(b)) => method = Some(String::from_utf8_lossy(b).into_owned()),
            (6, Field::Varint(v)) => priority = v as u32,
            (7, Field::Varint(v)) => timeout_ms = v as u32,
            _ => {}
        }
    }
    let param_len = read_varint(body, &mut pos)? as usize;
    let param = Bytes::copy_from_slice(body.get(pos..pos + param_len)?);
    Some(RequestInfo {
        call_id: call_id?,
        method: method?,
        priority,
        timeout_ms,
        param,
    })
}

struct ResponseHeaderInfo {
    call_id: Option<u32>,
    cellblock_len: Option<u32>,
}

fn response_header(body: &[u8]) -> Option<ResponseHeaderInfo> {
    let mut pos = 0;
    let header_len = read_varint(body, &mut pos)? as usize;
    let header = body.get(pos..pos + header_len)?;
    let mut info = ResponseHeaderInfo {
        call_id: None,
        cellblock_len: None,
    };
    for (field, value) in proto_fields(header)? {
        match (field, value) {
            (1, Field::Varint(v)) => info.call_id = Some(v as u32),
            (3, Field::Bytes(meta)) => {
                for (f, v) in proto_fields(meta)? {
                    if let (1, Field::Varint(len)) = (f, v) {
                        info.cellblock_len = Some(len as u32);
                    }
                }
            }
            _ => {}
        }
    }
    Some(info)
}

/// A response frame carrying `ExceptionResponse{class_name, stack_trace, do_not_retry=false,
/// server_overloaded}` for `call_id`.
pub fn exception_frame(call_id: u32, class_name: &str, server_overloaded: bool) -> Bytes {
    let mut header = BytesMut::new();
    put_varint_field(&mut header, 1, call_id as u64);
    put_bytes_field(
        &mut header,
        2,
        &exception_response(class_name, false, server_overloaded),
    );
    frame_of(&header, None)
}

/// A response frame without a call id carrying `ExceptionResponse{class_name, stack_trace,
/// do_not_retry}`: a connection-level error.
pub fn connection_error_frame(class_name: &str, do_not_retry: bool) -> Bytes {
    let mut header = BytesMut::new();
    put_bytes_field(
        &mut header,
        2,
        &exception_response(class_name, do_not_retry, false),
    );
    frame_of(&header, None)
}

/// `ExceptionResponse{class_name, stack_trace, do_not_retry, server_overloaded}`.
fn exception_response(class_name: &str, do_not_retry: bool, server_overloaded: bool) -> BytesMut {
    let mut ex = BytesMut::new();
    put_bytes_field(&mut ex, 1, class_name.as_bytes());
    put_bytes_field(
        &mut ex,
        2,
        format!("{class_name}: injected by the test proxy\n\tat proxy").as_bytes(),
    );
    put_varint_field(&mut ex, 5, do_not_retry as u64);
    put_varint_field(&mut ex, 6, server_overloaded as u64);
    ex
}

/// A `MultiResponse` frame for `call_id` in which every action of the request `multi` failed
/// with `class_name` (per-action `NameBytesPair` exceptions, as a region server sends them).
pub fn multi_action_exception_frame(call_id: u32, multi: &[u8], class_name: &str) -> Bytes {
    let mut resp = BytesMut::new();
    for (field, value) in proto_fields(multi).unwrap_or_default() {
        let (1, Field::Bytes(region_action)) = (field, value) else {
            continue;
        };
        let mut result = BytesMut::new();
        for (f, v) in proto_fields(region_action).unwrap_or_default() {
            let (3, Field::Bytes(action)) = (f, v) else {
                continue;
            };
            let index = proto_fields(action)
                .unwrap_or_default()
                .into_iter()
                .find_map(|(f, v)| match (f, v) {
                    (1, Field::Varint(i)) => Some(i),
                    _ => None,
                })
                .unwrap_or(0);
            let mut pair = BytesMut::new();
            put_bytes_field(&mut pair, 1, class_name.as_bytes());
            put_bytes_field(
                &mut pair,
                2,
                format!("{class_name}: injected by the test proxy").as_bytes(),
            );
            let mut roe = BytesMut::new();
            put_varint_field(&mut roe, 1, index);
            put_bytes_field(&mut roe, 3, &pair);
            put_bytes_field(&mut result, 1, &roe);
        }
        put_bytes_field(&mut resp, 1, &result);
    }
    let mut header = BytesMut::new();
    put_varint_field(&mut header, 1, call_id as u64);
    frame_of(&header, Some(&resp))
}

/// `u32 length | varint+header | [varint+message]`.
fn frame_of(header: &[u8], message: Option<&[u8]>) -> Bytes {
    let mut body = BytesMut::new();
    put_varint(&mut body, header.len() as u64);
    body.put_slice(header);
    if let Some(m) = message {
        put_varint(&mut body, m.len() as u64);
        body.put_slice(m);
    }
    let mut frame = BytesMut::with_capacity(4 + body.len());
    frame.put_u32(body.len() as u32);
    frame.put_slice(&body);
    frame.freeze()
}

/// A protobuf field value (wire types 0 and 2; fixed-width ones are skipped).
#[derive(Debug, Clone, Copy)]
pub enum Field<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 2.
    Bytes(&'a [u8]),
    /// Wire types 1 and 5.
    Fixed,
}

/// The top-level fields of a protobuf message, or `None` if it is malformed.
pub fn proto_fields(mut msg: &[u8]) -> Option<Vec<(u32, Field<'_>)>> {
    let mut fields = Vec::new();
    while !msg.is_empty() {
        let mut pos = 0;
        let key = read_varint(msg, &mut pos)?;
        let field = (key >> 3) as u32;
        let value = match key & 7 {
            0 => Field::Varint(read_varint(msg, &mut pos)?),
            2 => {
                let len = read_varint(msg, &mut pos)? as usize;
                let v = msg.get(pos..pos.checked_add(len)?)?;
                pos += len;
                Field::Bytes(v)
            }
            1 => {
                pos += 8;
                Field::Fixed
            }
            5 => {
                pos += 4;
                Field::Fixed
            }
            _ => return None,
        };
        fields.push((field, value));
        msg = msg.get(pos..)?;
    }
    Some(fields)
}

/// The value of a top-level bool field of a protobuf message.
pub fn proto_bool(msg: &[u8], field: u32) -> Option<bool> {
    proto_fields(msg)?
        .into_iter()
        .find_map(|(f, v)| match (f, v) {
            (f, Field::Varint(x)) if f == field => Some(x != 0),
            _ => None,
        })
}

fn read_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn put_varint(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

fn put_varint_field(buf: &mut BytesMut, field: u32, v: u64) {
    put_varint(buf, u64::from(field) << 3);
    put_varint(buf, v);
}

fn put_bytes_field(buf: &mut BytesMut, field: u32, v: &[u8]) {
    put_varint(buf, (u64::from(field) << 3) | 2);
    put_varint(buf, v.len() as u64);
    buf.put_slice(v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;

    #[test]
    fn exception_frame_decodes_with_the_client_decoder() {
        let f = exception_frame(42, "org.apache.hadoop.hbase.CallQueueTooBigException", true);
        let mut body = f.clone();
        let len = body.get_u32() as usize;
        assert_eq!(len, body.len());
        let r = hbase_client::rpc::frame::decode_response(body).unwrap();
        assert_eq!(r.call_id, 42);
        let e = r.body.unwrap_err();
        assert_eq!(e.short_class_name(), "CallQueueTooBigException");
        assert!(e.server_overloaded);
        assert!(!e.do_not_retry);
    }

    #[test]
    fn request_frames_are_parsed() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&hbase_client::rpc::frame::connection_preamble(
            "u",
            hbase_client::rpc::Service::Client,
        ));
        let mut hdr = BytesMut::new();
        put_varint_field(&mut hdr, 1, 300);
        put_bytes_field(&mut hdr, 3, b"Scan");
        let mut param = BytesMut::new();
        put_varint_field(&mut param, 10, 1);
        let mut body = BytesMut::new();
        put_varint(&mut body, hdr.len() as u64);
        body.put_slice(&hdr);
        put_varint(&mut body, param.len() as u64);
        body.put_slice(&param);
        buf.put_u32(body.len() as u32);
        buf.put_slice(&body);
        let whole = buf.clone();
        // Fed in two pieces, split inside the frame.
        let mut p = RequestParser::default();
        let mut part = BytesMut::from(&whole[..whole.len() - 3]);
        let first = p.feed(&mut part);
        assert_eq!(first.len(), 1, "the preamble only");
        part.extend_from_slice(&whole[whole.len() - 3..]);
        let second = p.feed(&mut part);
        assert_eq!(second.len(), 1);
        let req = second[0].request.as_ref().unwrap();
        assert_eq!((req.call_id, req.method.as_str()), (300, "Scan"));
        assert_eq!(proto_bool(&req.param, 10), Some(true));
        assert!(part.is_empty());
    }
}
