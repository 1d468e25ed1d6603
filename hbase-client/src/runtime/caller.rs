//! The one retrying caller: locate, connect, call, classify, recover, back off, all under one
//! operation deadline. Every operation that retries — single-row calls, batch rounds, scans,
//! admin and master calls, the table-state check — runs its attempts through
//! [`Operation::retry`]; what an error means comes from the exception table
//! (`error::exceptions`).
//!
//! The contract it gives writes: a write is acknowledged, or it fails with an error whose kind
//! says what happened. [`ErrorKind::OutcomeUnknown`](crate::ErrorKind::OutcomeUnknown) when an
//! attempt may have been applied and no later attempt could tell; any other kind when no
//! attempt was applied. A non-idempotent write (increment, append, check-and-mutate, row
//! mutations with increments or appends) carries a nonce from before its first attempt, so the
//! region server applies it once however often it is sent; after an unanswered attempt it is
//! retried only on the same server, whose nonce memory knows it.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::exceptions::{self, CacheAction, MasterAction, PauseClass, Retry, Verdict};
use crate::error::{Error, ErrorKind, Result};
use crate::region::{Location, RegionLocation, ServerName, TableName};
use crate::rpc::connection::{CallError, Delivery, RpcConnection};
use crate::rpc::frame::{RequestMeta, ResponseBody, Service};
use crate::runtime::config::ClientConfig;
use crate::runtime::locator::Seek;
use crate::runtime::retry::RetryPolicy;
use crate::runtime::stats::ServerCounters;
use crate::runtime::Runtime;

/// Priority of master and region-server admin calls (HBase's ADMIN_QOS).
pub(crate) const ADMIN_PRIORITY: u32 = 100;

/// How an operation calls: its deadlines, priority and retry policy.
#[derive(Clone, Debug)]
pub(crate) struct CallOptions {
    /// All attempts of one operation together.
    pub(crate) operation_timeout: Duration,
    /// One RPC (also sent to the server as the call's deadline).
    pub(crate) rpc_timeout: Duration,
    /// Request priority of data calls (0 = normal).
    pub(crate) priority: u32,
    pub(crate) policy: Arc<dyn RetryPolicy>,
}

impl CallOptions {
    pub(crate) fn from_config(config: &ClientConfig) -> CallOptions {
        CallOptions {
            operation_timeout: config.operation_timeout,
            rpc_timeout: config.rpc_timeout,
            priority: 0,
            policy: config.retry_policy(),
        }
    }
}

/// What a retry can do to an operation's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Idempotency {
    /// Reads: nothing to apply twice, and an outcome is never unknown.
    Read,
    /// Writes that are harmless to apply twice (puts, deletes that name their versions).
    Idempotent,
    /// Writes that must apply once, guarded by a nonce: retried after an unanswered attempt
    /// only on the server that got it.
    Nonce,
    /// Writes that must apply once with nothing to guard them (a delete of a column's newest
    /// version): never retried after an attempt that may have been applied.
    AtMostOnce,
    /// A scan: reads, and a lost scanner is reopened rather than given up on.
    Scan,
}

/// Where an attempt goes.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// The region `seek` names in `table`, on the data service of its server.
    Region(&'a TableName, Seek<'a>),
    /// The active master.
    Master,
    /// One region server's admin service.
    Server(&'a ServerName),
}

/// A resolved target: the server, the region (for data calls) and a connection.
pub(crate) struct Endpoint {
    /// The server, unless it is the region's (`loc`).
    other_server: Option<ServerName>,
    pub(crate) loc: Option<Location>,
    pub(crate) conn: Arc<RpcConnection>,
    priority: u32,
    to_master: bool,
}

/// What a failure says something about.
#[derive(Clone, Copy)]
pub(crate) enum Place<'a> {
    /// These regions (of one server).
    Regions(&'a [Location]),
    /// A server (connecting to it failed).
    Server(&'a ServerName),
    /// The master.
    Master,
    /// Nothing cached (the locator handles meta's own location).
    Nowhere,
}

impl Endpoint {
    fn place(&self) -> Place<'_> {
        match &self.loc {
            _ if self.to_master => Place::Master,
            Some(loc) => Place::Regions(std::slice::from_ref(loc)),
            None => Place::Server(self.server()),
        }
    }

    /// The server called.
    pub(crate) fn server(&self) -> &ServerName {
        match (&self.other_server, &self.loc) {
            (Some(s), _) => s,
            (None, Some(loc)) => &loc.server,
            (None, None) => unreachable!("an endpoint names its server"),
        }
    }
}

/// One attempt of an operation that keeps state between attempts (a scan's position).
pub(crate) trait Attempt {
    type Output;
    fn attempt(&mut self, op: &Operation<'_>) -> impl Future<Output = Result<Self::Output>> + Send;
}

/// A stateless attempt: a closure returning a fresh future each time.
struct Fresh<F>(F);

impl<F, Fut, T> Attempt for Fresh<F>
where
    F: FnMut() -> Fut + Send,
    Fut: Future<Output = Result<T>> + Send,
{
    type Output = T;
    fn attempt(&mut self, _op: &Operation<'_>) -> impl Future<Output = Result<T>> + Send {
        (self.0)()
    }
}

/// One operation: its deadline, how many attempts it made, and what its failed attempts
/// leave uncertain.
pub(crate) struct Operation<'a> {
    rt: &'a Runtime,
    opts: &'a CallOptions,
    idempotency: Idempotency,
    started: Instant,
    /// The deadline, in nanoseconds after `started` (a scan moves it on as it makes progress).
    deadline_nanos: AtomicU64,
    /// The table whose state to check once when its regions stay unavailable.
    table: Option<&'a TableName>,
    failures: AtomicU32,
    table_checked: AtomicBool,
    /// For a write: the first attempt that got no answer, its server and error.
    unanswered: Mutex<Option<(String, Error)>>,
}

impl<'a> Operation<'a> {
    pub(crate) fn new(rt: &'a Runtime, opts: &'a CallOptions, idempotency: Idempotency) -> Self {
        Operation {
            rt,
            opts,
            idempotency,
            started: Instant::now(),
            deadline_nanos: AtomicU64::new(
                opts.operation_timeout.as_nanos().min(u64::MAX as u128) as u64
            ),
            table: None,
            failures: AtomicU32::new(0),
            table_checked: AtomicBool::new(false),
            unanswered: Mutex::new(None),
        }
    }

    /// Checks `table`'s state (once) when its regions stay unavailable, and fails with
    /// [`Error::TableDisabled`] if it is disabled.
    pub(crate) fn on_table(mut self, table: &'a TableName) -> Self {
        self.table = Some(table);
        self
    }

    /// Ends at `deadline` if that comes before the operation timeout.
    pub(crate) fn until(self, deadline: Instant) -> Self {
        let nanos = deadline.saturating_duration_since(self.started).as_nanos() as u64;
        self.deadline_nanos.fetch_min(nanos, Ordering::Relaxed);
        self
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.started + Duration::from_nanos(self.deadline_nanos.load(Ordering::Relaxed))
    }

    /// The operation made progress (a scan delivered rows): the failures before count no
    /// more, and it has a whole operation timeout again.
    pub(crate) fn progressed(&self) {
        self.failures.store(0, Ordering::Relaxed);
        self.answered();
    }

    /// A server answered one of the operation's calls without moving it on for its caller (a
    /// scan's heartbeat, or a piece of a row not complete yet): it has a whole operation
    /// timeout again from now, as Java's scanner gives every `next` call a timeout of its
    /// own. Its failures still count, unlike after [`progressed`](Self::progressed): a server
    /// that answers between failures without the scan moving on cannot keep it retrying
    /// forever.
    pub(crate) fn answered(&self) {
        let until = self.started.elapsed() + self.opts.operation_timeout;
        self.deadline_nanos.store(
            until.as_nanos().min(u64::MAX as u128) as u64,
            Ordering::Relaxed,
        );
    }

    /// Runs `attempt` until it succeeds or the operation gives up.
    pub(crate) async fn retry<T, F, Fut>(&self, attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut + Send,
        Fut: Future<Output = Result<T>> + Send,
    {
        self.retry_with(&mut Fresh(attempt)).await
    }

    /// The retry loop: an attempt, and after a failure, backoff or the final error.
    pub(crate) async fn retry_with<A: Attempt>(&self, attempt: &mut A) -> Result<A::Output> {
        loop {
            match attempt.attempt(self).await {
                Ok(v) => return Ok(v),
                Err(e) => self.backoff_or_fail(e).await?,
            }
        }
    }

    /// An endpoint for data calls on `conn` to `server`, covering several regions.
    pub(crate) fn data_endpoint(&self, server: ServerName, conn: Arc<RpcConnection>) -> Endpoint {
        Endpoint {
            other_server: Some(server),
            loc: None,
            conn,
            priority: self.opts.priority,
            to_master: false,
        }
    }

    /// The server, region and connection an attempt at `target` uses.
    pub(crate) async fn resolve(&self, target: Target<'_>) -> Result<Endpoint> {
        let rt = self.rt;
        let (other_server, service, loc, priority) = match target {
            Target::Region(table, seek) => {
                // The cache first, outside the lookup's future: nearly every attempt ends here.
                let loc = match rt.locator.cached(table, seek) {
                    Some(loc) => loc,
                    None => rt.locator.seek(table, seek, self.deadline()).await?,
                };
                (None, Service::Client, Some(loc), self.opts.priority)
            }
            Target::Master => (
                Some(rt.master(self.deadline()).await?),
                Service::Master,
                None,
                ADMIN_PRIORITY,
            ),
            Target::Server(s) => (Some(s.clone()), Service::Admin, None, ADMIN_PRIORITY),
        };
        let server = match (&other_server, &loc) {
            (Some(s), _) => s,
            (None, Some(loc)) => &loc.server,
            (None, None) => unreachable!("a target names a server"),
        };
        if self.idempotency == Idempotency::Nonce {
            let moved = self
                .lock_unanswered()
                .as_ref()
                .and_then(|(at, e)| (*at != server.address()).then(|| (at.clone(), e.duplicate())));
            if let Some((at, e)) = moved {
                // Another server does not know the nonce: sending it there could apply the
                // operation a second time.
                tracing::debug!(%at, now = %server, "not retrying a non-idempotent write elsewhere");
                return Err(self.unknown(e));
            }
        }
        let to_master = matches!(target, Target::Master);
        // The open connection first, outside the connect-and-wait future.
        let conn = match rt.pool.open(server, service) {
            Some(conn) => Ok(conn),
            None => rt.pool.get(server, service, self.deadline()).await,
        };
        match conn {
            Ok(conn) => Ok(Endpoint {
                other_server,
                loc,
                conn,
                priority,
                to_master,
            }),
            Err(e) => {
                let place = if to_master {
                    Place::Master
                } else {
                    Place::Server(server)
                };
                self.observe(&e, place, Delivery::NotSent);
                Err(e)
            }
        }
    }

    /// One call on `ep`, bounded by the RPC timeout and the operation deadline. A failure is
    /// classified and its stale cache entries dropped before it is returned.
    pub(crate) async fn call<M: prost::Message>(
        &self,
        ep: &Endpoint,
        method: &'static str,
        req: &M,
        cellblock: Option<&[u8]>,
    ) -> Result<ResponseBody> {
        self.call_raw(ep, ep.place(), method, req, cellblock)
            .await
            .map_err(|failed| {
                if failed.delivery == Delivery::Unknown {
                    self.note_unanswered(ep.server(), &failed.error);
                }
                failed.error
            })
    }

    /// [`Operation::call`] for a call covering several regions (`place`), whose delivery
    /// the caller tracks itself (a batch tracks each action).
    pub(crate) async fn call_raw<M: prost::Message>(
        &self,
        ep: &Endpoint,
        place: Place<'_>,
        method: &'static str,
        req: &M,
        cellblock: Option<&[u8]>,
    ) -> std::result::Result<ResponseBody, CallError> {
        let now = Instant::now();
        let remaining = self.deadline().saturating_duration_since(now);
        let timeout = self
            .opts
            .rpc_timeout
            .min(remaining)
            .max(Duration::from_millis(1));
        let meta = RequestMeta {
            method,
            timeout_ms: timeout.as_millis().min(u32::MAX as u128) as u32,
            priority: ep.priority,
        };
        let result = ep.conn.call(meta, req, cellblock, now, timeout).await;
        if let Err(failed) = &result {
            self.observe(&failed.error, place, failed.delivery);
        }
        result
    }

    /// Reading the answer of a call on `ep` (for `place`) failed with `e`. An answer that
    /// cannot be read (`Error::Protocol`) says nothing of what the server did, so a write's
    /// attempt may have been applied, as when no answer came (a Multi whose answer cannot be
    /// read fails its actions the same way); an exception found in an answer is an answer.
    pub(crate) fn answer_failed(&self, ep: &Endpoint, place: Place<'_>, e: &Error) {
        let delivery = match e {
            Error::Protocol(_) => Delivery::Unknown,
            _ => Delivery::Answered,
        };
        self.observe(e, place, delivery);
        if delivery == Delivery::Unknown {
            self.note_unanswered(ep.server(), e);
        }
    }

    /// Applies what `e` says about `place` to the location cache (and for the master, to the
    /// master the client calls), and counts it.
    pub(crate) fn observe(&self, e: &Error, place: Place<'_>, delivery: Delivery) -> Verdict {
        let rt = self.rt;
        let verdict = exceptions::verdict(e);
        // A call that never left the client says nothing about its region or its master.
        let says_nothing = delivery == Delivery::NotSent && matches!(e, Error::Timeout { .. });
        let cache = if says_nothing {
            CacheAction::Keep
        } else {
            verdict.cache
        };
        let counters = match place {
            Place::Regions(locs) => locs.first().map(|l| rt.stats().server(&l.server.address())),
            Place::Server(s) => Some(rt.stats().server(&s.address())),
            Place::Master | Place::Nowhere => None,
        };
        if let (Some(c), true) = (&counters, verdict.retry != Retry::No) {
            ServerCounters::add(&c.retries, 1);
            rt.stats().retried(e);
        }
        let region_cache = rt.locator.cache();
        match (cache, place) {
            // The exception table decides, apart from the region cache: a master's answer that
            // drops a region's location (PleaseHoldException) still came from the master meant.
            (_, Place::Master) => {
                if verdict.master == MasterAction::Forget && !says_nothing {
                    rt.forget_master();
                }
            }
            (CacheAction::Keep, _) | (_, Place::Nowhere) => {}
            (CacheAction::DropServer, Place::Regions(locs)) => {
                if let Some(l) = locs.first() {
                    region_cache.invalidate_server(&l.server);
                }
            }
            (CacheAction::DropServer, Place::Server(s)) => region_cache.invalidate_server(s),
            (CacheAction::DropRegion | CacheAction::MovedTo, Place::Regions(locs)) => {
                for loc in locs {
                    if let Some(c) = &counters {
                        ServerCounters::add(&c.relocations, 1);
                    }
                    region_cache.invalidate(loc);
                    if cache == CacheAction::MovedTo {
                        self.install_moved(loc, e);
                    }
                }
            }
            (CacheAction::DropRegion | CacheAction::MovedTo, Place::Server(_)) => {}
        }
        verdict
    }

    /// For a RegionMovedException, caches the region at its new server right away.
    fn install_moved(&self, loc: &Location, e: &Error) {
        let moved_to = e.remote().and_then(|r| r.moved_to.as_deref());
        let Some((host, port)) = moved_to.and_then(|m| m.rsplit_once(':')) else {
            return;
        };
        if let Ok(port) = port.parse() {
            let server = ServerName {
                host: host.to_string(),
                port,
                start_code: 0,
            };
            let region = loc.region.clone();
            self.rt
                .locator
                .cache()
                .insert(Arc::new(RegionLocation { region, server }));
        }
    }

    fn lock_unanswered(&self) -> std::sync::MutexGuard<'_, Option<(String, Error)>> {
        self.unanswered.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A write attempt on `server` got no answer: it may have been applied.
    fn note_unanswered(&self, server: &ServerName, e: &Error) {
        if matches!(self.idempotency, Idempotency::Read | Idempotency::Scan) {
            return;
        }
        let mut unanswered = self.lock_unanswered();
        if unanswered.is_none() {
            *unanswered = Some((server.address(), e.duplicate()));
        }
    }

    /// The error of the first attempt of this write that went unanswered.
    pub(crate) fn unanswered_error(&self) -> Option<Error> {
        self.lock_unanswered().as_ref().map(|(_, e)| e.duplicate())
    }

    /// True when an attempt of this write may have been applied.
    pub(crate) fn maybe_applied(&self) -> bool {
        self.lock_unanswered().is_some()
    }

    /// The error of a write that an earlier attempt may have applied.
    pub(crate) fn unknown(&self, last: Error) -> Error {
        if matches!(last, Error::OutcomeUnknown { .. }) {
            return last;
        }
        Error::OutcomeUnknown {
            attempts: self.failures.load(Ordering::Relaxed).max(1),
            last: Box::new(last),
        }
    }

    /// After a failed attempt: waits out the pause before the next one, or returns the error
    /// the operation ends with.
    pub(crate) async fn backoff_or_fail(&self, e: Error) -> Result<()> {
        let verdict = exceptions::verdict(&e);
        // A server that asks for the rest at once (a RetryImmediatelyException: a Multi
        // answered in slices, MultiActionResultTooLarge) did not fail the attempt: as Java's
        // batch caller does, the next goes now, and the count of failed attempts, which
        // bounds the retries and sets the later pauses, stays (tests/retries_java.rs, 20
        // slices: Java's 21 attempts succeed, and ours; ours stopped at 16 when each counted).
        let immediate = verdict.retry == Retry::Yes && verdict.pause == PauseClass::Immediate;
        let attempts = if immediate {
            self.failures.load(Ordering::Relaxed) + 1
        } else {
            self.failures.fetch_add(1, Ordering::Relaxed) + 1
        };
        let retry = match verdict.retry {
            Retry::Yes => true,
            Retry::ReopenScanner => self.idempotency == Idempotency::Scan,
            Retry::No => false,
        };
        // Sent again, a write with no nonce to guard it could be applied twice.
        if !retry || (self.idempotency == Idempotency::AtMostOnce && self.maybe_applied()) {
            return Err(self.final_error(e));
        }
        // A region that stays unavailable may belong to a disabled table: ask the master
        // once per operation (as the Java client does on every error).
        if let Some(table) = self.table {
            if verdict.kind == ErrorKind::RegionMoved
                && attempts >= 2
                && !self.table_checked.swap(true, Ordering::Relaxed)
                && Box::pin(self.rt.table_disabled(table, self.deadline())).await
            {
                return Err(self.final_error(Error::TableDisabled(table.to_string())));
            }
        }
        let Some(pause) = self.opts.policy.next_pause(attempts, &e) else {
            return Err(self.final_error(Error::RetriesExhausted {
                attempts,
                last: Box::new(e),
            }));
        };
        // A pause past the deadline (or too long to add to the clock: a policy's or a
        // server's number) ends the operation now.
        if Instant::now()
            .checked_add(pause)
            .is_none_or(|resume| resume >= self.deadline())
        {
            let what = match self.table {
                Some(t) => format!("operation on {t}"),
                None => "operation".to_string(),
            };
            return Err(self.final_error(Error::Timeout {
                what: format!("{what} after {attempts} attempts (last error: {e})"),
                after: self.opts.operation_timeout,
            }));
        }
        tracing::debug!(attempts, error = %e, ?pause, "retrying");
        tokio::time::sleep(pause).await;
        Ok(())
    }

    /// The error the operation ends with: `e`, or an unknown outcome if an attempt may have
    /// been applied.
    pub(crate) fn final_error(&self, e: Error) -> Error {
        if self.maybe_applied() {
            self.unknown(e)
        } else {
            e
        }
    }
}
