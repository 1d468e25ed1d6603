//! Running many actions of one table as `Multi` RPCs, each with a `RegionAction` per region:
//! in every round, each server's actions go in requests of at most `max_request_size` bytes
//! and `max_request_rows` actions, within the per-server and per-region task limits. A round
//! is one attempt of the runtime's retrying caller: failed actions are retried (after
//! relocation) in later rounds; actions that succeeded, or failed for good, are never sent
//! again.
//!
//! Each increment and append gets a nonce before the first round and keeps it in every round
//! (`MultiRequest.nonceGroup` and its own `MutationProto.nonce`), so the server applies it once.
//! Each write remembers whether a round left it unanswered: if it finally fails, its outcome
//! is unknown; an increment or append is then retried only on the server that got it.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use rustc_hash::FxHashMap;

use crate::error::exceptions::{PauseClass, Retry};
use crate::error::{Error, ErrorKind, Result};
use crate::multi_request::MultiRequestWriter;
use crate::multi_response::{Answer, RegionResult};
use crate::ops::{region_specifier, result_from_proto, Action, ActionResult, RowResult};
use crate::region::{Location, ServerName, TableName};
use crate::rpc::cellblock::CellBlockReader;
use crate::rpc::connection::Delivery;
use crate::rpc::frame::Service;
use crate::runtime::caller::{Attempt, CallOptions, Idempotency, Operation, Place};
use crate::runtime::locator::Seek;
use crate::runtime::{new_nonce, Runtime};

/// How many actions ahead of the one being encoded a request starts loading a put's cells
/// (each load takes about as long as encoding a few puts).
const PREFETCH_AHEAD: usize = 8;

/// Runs `actions` against `table`; returns one outcome per action, in order.
pub(crate) async fn run(
    rt: &Runtime,
    opts: &CallOptions,
    table: &TableName,
    actions: &[Action],
) -> Vec<Result<ActionResult>> {
    let outcomes: std::sync::Mutex<Vec<Option<Result<ActionResult>>>> =
        std::sync::Mutex::new((0..actions.len()).map(|_| None).collect());
    run_each(rt, opts, table, actions, None, &|idx, outcome| {
        outcomes.lock().unwrap_or_else(|e| e.into_inner())[idx] = Some(outcome);
    })
    .await;
    outcomes
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(Error::Protocol("action left without an outcome".into()))))
        .collect()
}

/// Called once per action (by index) as soon as its outcome is final: acknowledged, failed
/// for good, or given up on.
pub(crate) type OnOutcome<'a> = &'a (dyn Fn(usize, Result<ActionResult>) + Sync);

/// What the caller already knows of its actions (the buffered mutator validated and sized
/// each one in `mutate` and located it when it placed it), so that the batch neither
/// validates, sizes nor locates them again.
pub(crate) struct Known {
    /// Every action passed [`Action::validate`] with this runtime's `keyvalue_max_size`
    /// (checking a put's cells a second time was about 430 instructions a buffered put).
    pub(crate) validated: bool,
    /// Each action's size for cutting requests: its heap size by Java's count
    /// ([`Action::heap_size`]), read by the buffered mutator's dispatcher as it cut the
    /// request (the same figure, so the two cuts agree).
    pub(crate) sizes: Vec<usize>,
    /// Each action's location (`None`: not located), used in the first round if the region
    /// cache's generation is still `generation`, i.e. no cached location was dropped since
    /// (else every action is located again).
    pub(crate) located: Vec<Option<Location>>,
    pub(crate) generation: u64,
}

/// Runs `actions`, handing each outcome to `on_outcome` as soon as it is final (an action
/// whose region answered at once is reported while others still retry).
pub(crate) async fn run_each(
    rt: &Runtime,
    opts: &CallOptions,
    table: &TableName,
    actions: &[Action],
    known: Option<Known>,
    on_outcome: OnOutcome<'_>,
) {
    let mut batch = Batch::new(rt, table, actions, known, on_outcome);
    // The batch tracks each write's delivery itself; the operation paces the rounds.
    let op = Operation::new(rt, opts, Idempotency::Read).on_table(table);
    if batch.pending.is_empty() {
        return;
    }
    if let Err(end) = op.retry_with(&mut batch).await {
        batch.give_up(&end);
    }
}

/// One action's state across rounds.
struct Tracked {
    nonce: Option<u64>,
    /// The error of its last failed round (boxed, as the next field: an `Error` is large,
    /// most actions never fail, and a batch holds one `Tracked` per action while in flight).
    last: Option<Box<Error>>,
    /// A round that left this write unanswered: the server and the error.
    unanswered: Option<Box<(String, Error)>>,
}

/// How much one `Multi` request carries (`max_request_size`, `max_request_rows`): the one rule
/// by which both the sender here and the mutator's dispatcher cut requests. A dispatcher's
/// request cut by another rule would be cut again here, and its parts sent at once, two
/// writes of one row with them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequestLimits {
    pub(crate) bytes: usize,
    pub(crate) rows: usize,
}

impl RequestLimits {
    pub(crate) fn of(config: &crate::ClientConfig) -> RequestLimits {
        RequestLimits {
            bytes: config.max_request_size,
            rows: config.max_request_rows.max(1),
        }
    }

    /// Whether an action of `size` bytes still goes in a request holding `rows` actions of
    /// `bytes` bytes: the first always does, however large.
    pub(crate) fn admit(&self, bytes: usize, rows: usize, size: usize) -> bool {
        rows < self.rows && (bytes == 0 || bytes + size <= self.bytes)
    }
}

struct Batch<'a> {
    rt: &'a Runtime,
    table: &'a TableName,
    actions: &'a [Action],
    tracked: Vec<Tracked>,
    /// Each action's size, for cutting requests at `max_request_size`: its heap size
    /// ([`Action::heap_size`]), or the caller's figure ([`Known::sizes`]).
    sizes: Vec<usize>,
    /// The caller's locations for the first round, and the cache generation they hold for.
    hints: Option<(Vec<Option<Location>>, u64)>,
    on_outcome: OnOutcome<'a>,
    /// Actions still to send, in the caller's order (so two writes to one row are sent in
    /// that order in every round).
    pending: Vec<usize>,
}

/// An action that failed in a round: its index, the error and, for a failed call, the server
/// and whether the call can have reached it.
type Failed = (usize, Error, Option<(String, Delivery)>);

/// One region's actions of a round on their way to its server.
struct RegionQueue {
    loc: Location,
    /// Not sent yet, in the caller's order.
    idxs: VecDeque<usize>,
    /// Its requests in flight.
    tasks: usize,
    /// In the server's ready list.
    listed: bool,
}

/// A region and the indexes of its actions.
type RegionGroup = (Location, Vec<usize>);

/// One request of a round to one server: its regions, each with the indexes of its actions.
struct ServerBatch {
    server: ServerName,
    regions: Vec<RegionGroup>,
}

impl Attempt for Batch<'_> {
    type Output = ();

    fn attempt(&mut self, op: &Operation<'_>) -> impl Future<Output = Result<()>> + Send {
        self.round(op)
    }
}

impl<'a> Batch<'a> {
    fn new(
        rt: &'a Runtime,
        table: &'a TableName,
        actions: &'a [Action],
        known: Option<Known>,
        on_outcome: OnOutcome<'a>,
    ) -> Batch<'a> {
        let mut pending = Vec::with_capacity(actions.len());
        if known.as_ref().is_some_and(|k| k.validated) {
            pending.extend(0..actions.len());
        } else {
            for (i, action) in actions.iter().enumerate() {
                match action.validate(rt.config.keyvalue_max_size) {
                    Ok(()) => pending.push(i),
                    Err(e) => on_outcome(i, Err(e)),
                }
            }
        }
        let tracked = actions
            .iter()
            .map(|a| Tracked {
                nonce: a.needs_nonce().then(new_nonce),
                last: None,
                unanswered: None,
            })
            .collect();
        let (sizes, hints) = match known {
            Some(k) if k.sizes.len() == actions.len() && k.located.len() == actions.len() => {
                (k.sizes, Some((k.located, k.generation)))
            }
            _ => (actions.iter().map(Action::heap_size).collect(), None),
        };
        Batch {
            rt,
            table,
            actions,
            tracked,
            sizes,
            hints,
            on_outcome,
            pending,
        }
    }

    /// One round: every pending action sent once. Fails (with the error that sets the pause)
    /// when actions are left to retry.
    async fn round(&mut self, op: &Operation<'_>) -> Result<()> {
        let mut failed: Vec<(usize, Error)> = Vec::new();
        // The caller's locations serve the first round only, and only while no cached
        // location was dropped since they were found.
        let generation = self.rt.locator.cache().generation();
        let hints = self
            .hints
            .take()
            .filter(|(_, g)| *g == generation)
            .map(|(located, _)| located);
        let by_server = self.group_by_server(op, hints, &mut failed).await;
        // Every server at once; within each, requests as the task limits allow.
        let sends = by_server
            .into_iter()
            .map(|(server, regions)| self.send_to_server(op, server, regions));
        let results: Vec<_> = futures_util::future::join_all(sends).await;
        for results in results {
            for (idx, e, delivery) in results {
                if let Some((server, Delivery::Unknown)) = &delivery {
                    let t = &mut self.tracked[idx];
                    if self.actions[idx].is_write() && t.unanswered.is_none() {
                        t.unanswered = Some(Box::new((server.clone(), e.duplicate())));
                    }
                }
                failed.push((idx, e));
            }
        }
        self.pending.clear();
        let mut pacing: Option<Error> = None;
        for (idx, e) in failed {
            let verdict = crate::error::exceptions::verdict(&e);
            if verdict.retry != Retry::Yes {
                let e = self.unknown_if_unanswered(idx, e);
                (self.on_outcome)(idx, Err(e));
                continue;
            }
            if pacing.as_ref().is_none_or(|p| paces_harder(&e, p)) {
                pacing = Some(e.duplicate());
            }
            self.tracked[idx].last = Some(Box::new(e));
            self.pending.push(idx);
        }
        // Failures arrive per server and per region; the next round sends them in the
        // caller's order again.
        self.pending.sort_unstable();
        match pacing {
            None => Ok(()),
            Some(e) => {
                tracing::debug!(table = %self.table, retrying = self.pending.len(), error = %e, "batch round had failures");
                Err(e)
            }
        }
    }

    /// The pending actions' regions, grouped by server, the servers and each server's regions
    /// in the order of their first pending action (so the caller's order decides which region
    /// goes first);
    /// actions that cannot be located (or must not go where they are now) fail this round.
    /// `hints` are locations the caller found (by action index).
    async fn group_by_server(
        &self,
        op: &Operation<'_>,
        hints: Option<Vec<Option<Location>>>,
        failed: &mut Vec<(usize, Error)>,
    ) -> Vec<(ServerName, Vec<RegionGroup>)> {
        let mut by_server: Vec<(ServerName, Vec<RegionGroup>)> = Vec::new();
        // Where each server is in `by_server`. FxHash: server and region names come from the
        // cluster, not from users.
        let mut servers: FxHashMap<ServerName, usize> = FxHashMap::default();
        // Where each region is in its server's list. Keyed by server too: a region another
        // task relocates while this round locates its actions is then found on two servers,
        // and one server's position must never index another's list.
        let mut slot: FxHashMap<(ServerName, Bytes), usize> = FxHashMap::default();
        // Actions of one region mostly come one after another (the mutator sends region
        // queues): the previous action's location and slots are tried first, by pointer (the
        // same location is the same server and region), without hashing its server.
        let mut last: Option<(Location, usize, usize)> = None;
        for &idx in &self.pending {
            let hint = hints.as_ref().and_then(|h| h[idx].clone());
            let loc = match hint {
                Some(loc) => loc,
                None => {
                    let row = self.actions[idx].row();
                    match self
                        .rt
                        .locator
                        .seek(self.table, Seek::Row(row), op.deadline())
                        .await
                    {
                        Ok(loc) => loc,
                        Err(e) => {
                            failed.push((idx, e));
                            continue;
                        }
                    }
                }
            };
            // After a round that may have applied it, a write sent again could be applied
            // twice: one that no nonce guards (a newest-version delete), anywhere; one with a
            // nonce, on another server than the one that got it (only that one knows it).
            if let Some((at, e)) = self.tracked[idx].unanswered.as_deref() {
                let nonce_unknown_there =
                    self.tracked[idx].nonce.is_some() && *at != loc.server.address();
                if nonce_unknown_there || self.actions[idx].applies_once() {
                    failed.push((
                        idx,
                        Error::OutcomeUnknown {
                            attempts: 1,
                            last: Box::new(e.duplicate()),
                        },
                    ));
                    continue;
                }
            }
            if let Some((l, s, at)) = &last {
                if Arc::ptr_eq(l, &loc) {
                    by_server[*s].1[*at].1.push(idx);
                    continue;
                }
            }
            let s = *servers.entry(loc.server.clone()).or_insert_with(|| {
                by_server.push((loc.server.clone(), Vec::new()));
                by_server.len() - 1
            });
            let regions = &mut by_server[s].1;
            let key = (loc.server.clone(), loc.region.name.clone());
            let at = match slot.get(&key) {
                Some(&at) => {
                    regions[at].1.push(idx);
                    at
                }
                None => {
                    slot.insert(key, regions.len());
                    regions.push((loc.clone(), vec![idx]));
                    regions.len() - 1
                }
            };
            last = Some((loc, s, at));
        }
        by_server
    }

    /// Sends one server's share of a round as requests of at most `max_request_size` bytes and
    /// `max_request_rows` actions (a region's actions may span requests; a single larger
    /// action goes alone), at most `max_tasks_per_server` in flight to the server and
    /// `max_tasks_per_region` for any one region (HBase's `hbase.client.max.perserver.tasks`
    /// and `perregion.tasks`, as in Java's AsyncProcess). Each request is formed when a task is
    /// free, from the front of the
    /// regions that have one to spare: a region busy with its limit waits, and a later region
    /// goes instead. A region's actions are sent in the caller's order.
    async fn send_to_server(
        &self,
        op: &Operation<'_>,
        server: ServerName,
        regions: Vec<RegionGroup>,
    ) -> Vec<Failed> {
        use futures_util::stream::{FuturesUnordered, StreamExt};
        let config = &self.rt.config;
        let (server_limit, region_limit) = (
            config.max_tasks_per_server.max(1),
            config.max_tasks_per_region.max(1),
        );
        let limits = RequestLimits::of(config);
        let mut queues: Vec<RegionQueue> = regions
            .into_iter()
            .map(|(loc, idxs)| RegionQueue {
                loc,
                idxs: idxs.into(),
                tasks: 0,
                listed: true,
            })
            .collect();
        // Regions with actions left, listed once each; one at its task limit is taken off
        // when met and listed again when one of its requests ends.
        let mut ready: VecDeque<usize> = (0..queues.len()).collect();
        let mut in_flight = FuturesUnordered::new();
        let mut out = Vec::new();
        loop {
            while in_flight.len() < server_limit {
                let mut batch = ServerBatch {
                    server: server.clone(),
                    regions: Vec::new(),
                };
                let mut used: Vec<usize> = Vec::new();
                let mut bytes = 0usize;
                let mut rows = 0usize;
                while let Some(r) = ready.pop_front() {
                    let q = &mut queues[r];
                    if q.tasks >= region_limit {
                        q.listed = false;
                        continue;
                    }
                    let mut part = Vec::new();
                    while let Some(&idx) = q.idxs.front() {
                        let size = self.sizes[idx];
                        if !limits.admit(bytes, rows, size) {
                            break;
                        }
                        bytes += size;
                        rows += 1;
                        part.push(idx);
                        q.idxs.pop_front();
                    }
                    if !part.is_empty() {
                        q.tasks += 1;
                        used.push(r);
                        batch.regions.push((q.loc.clone(), part));
                    }
                    if q.idxs.is_empty() {
                        q.listed = false;
                    } else {
                        // The request is full; the rest of this region goes in a later one.
                        ready.push_front(r);
                        break;
                    }
                }
                if batch.regions.is_empty() {
                    break;
                }
                in_flight.push(async move { (self.send(op, batch).await, used) });
            }
            let Some((results, used)) = in_flight.next().await else {
                break;
            };
            out.extend(results);
            for r in used {
                let q = &mut queues[r];
                q.tasks -= 1;
                if !q.idxs.is_empty() && !q.listed {
                    q.listed = true;
                    ready.push_back(r);
                }
            }
        }
        out
    }

    /// Sends one server's Multi: each action answered with success is reported to the
    /// caller's `on_outcome` as its answer is read; the failed ones are returned (with, for a
    /// failed call, whether it can have reached the server).
    async fn send(&self, op: &Operation<'_>, batch: ServerBatch) -> Vec<Failed> {
        // Room for every cell up front (exactly), so the block does not grow by doubling and
        // copying what it holds.
        let room: usize = batch
            .regions
            .iter()
            .flat_map(|(_, idxs)| idxs)
            .map(|&idx| self.actions[idx].cellblock_len())
            .sum();
        let mut cellblock = BytesMut::with_capacity(room);
        // Encoded action by action: the request's prost structs would be held until the
        // answer (see multi_request.rs).
        let mut writer = MultiRequestWriter::default();
        let actions: usize = batch.regions.iter().map(|(_, idxs)| idxs.len()).sum();
        // Each action's index, and whether its answer is only "done" (a put or a delete),
        // noted while the action is at hand: reading the action again when its answer comes
        // cost a cache miss per result in a large request.
        let mut order: Vec<(usize, bool)> = Vec::with_capacity(actions);
        let mut nonces = false;
        // The actions a few ahead of the one being encoded, across regions (at 10,000 writers a
        // request's region runs are short).
        let mut ahead = batch
            .regions
            .iter()
            .flat_map(|(_, idxs)| idxs)
            .skip(PREFETCH_AHEAD);
        for (loc, idxs) in &batch.regions {
            writer.region(&region_specifier(&loc.region.name));
            for &idx in idxs {
                // The cells of a put a few ahead start loading while this one is copied.
                if let Some(&next) = ahead.next() {
                    self.actions[next].prefetch_cells();
                }
                let nonce = self.tracked[idx].nonce;
                nonces |= nonce.is_some();
                let action = &self.actions[idx];
                let index = order.len() as u32;
                match action.encode_cells(&mut cellblock) {
                    Some(m) => writer.mutation(index, &m, nonce),
                    None => writer.action(&action.to_proto(index, nonce, &mut cellblock)),
                }
                order.push((idx, matches!(action, Action::Put(_) | Action::Delete(_))));
            }
        }
        let nonce_group = nonces.then_some(self.rt.nonce_group);
        let req = writer.finish(nonce_group);
        let server = batch.server.address();
        let fail_all = |e: &Error, delivery: Delivery| {
            order
                .iter()
                .map(|&(i, _)| (i, e.duplicate(), Some((server.clone(), delivery))))
                .collect::<Vec<_>>()
        };
        let locs: Vec<Location> = batch.regions.iter().map(|(l, _)| l.clone()).collect();
        let conn = match self
            .rt
            .pool
            .get(&batch.server, Service::Client, op.deadline())
            .await
        {
            Ok(c) => c,
            Err(e) => {
                op.observe(&e, Place::Server(&batch.server), Delivery::NotSent);
                return fail_all(&e, Delivery::NotSent);
            }
        };
        let ep = op.data_endpoint(batch.server.clone(), conn);
        let cb = (!cellblock.is_empty()).then_some(&cellblock[..]);
        let body = match op
            .call_raw(&ep, Place::Regions(&locs), "Multi", &req, cb)
            .await
        {
            Ok(body) => body,
            Err(failed) => return fail_all(&failed.error, failed.delivery),
        };
        // Read in place, each action's result when its turn comes (see multi_response.rs).
        let region_results = match crate::multi_response::region_results(&body.message) {
            Ok(r) => r,
            Err(e) => return fail_all(&e, Delivery::Unknown),
        };
        read_answers(
            &batch.regions,
            &order,
            region_results,
            CellBlockReader::new(body.cellblock),
            &server,
            &mut |e, loc| {
                op.observe(
                    e,
                    Place::Regions(std::slice::from_ref(loc)),
                    Delivery::Answered,
                );
            },
            self.on_outcome,
        )
    }

    /// A write that an unanswered round may have applied fails as an unknown outcome.
    fn unknown_if_unanswered(&self, idx: usize, e: Error) -> Error {
        match &self.tracked[idx].unanswered {
            Some(_) if !matches!(e, Error::OutcomeUnknown { .. }) => Error::OutcomeUnknown {
                attempts: 1,
                last: Box::new(e),
            },
            _ => e,
        }
    }

    /// The operation ended with `end` (retries or time ran out, or the table is disabled):
    /// every action still pending fails, with its own last error inside.
    fn give_up(&mut self, end: &Error) {
        for idx in std::mem::take(&mut self.pending) {
            let last = self.tracked[idx].last.take();
            let e = match (end, last) {
                (Error::RetriesExhausted { attempts, .. }, Some(last)) => Error::RetriesExhausted {
                    attempts: *attempts,
                    last,
                },
                (Error::Timeout { after, .. }, Some(last)) => Error::Timeout {
                    what: format!("batch on {} (last error: {last})", self.table),
                    after: *after,
                },
                (end, _) => end.duplicate(),
            };
            (self.on_outcome)(idx, Err(self.unknown_if_unanswered(idx, e)));
        }
    }
}

/// True when `e` calls for a longer pause than `than` (overloaded servers first), or the same
/// pause but says a region is unavailable (which lets the table-state check run).
fn paces_harder(e: &Error, than: &Error) -> bool {
    let rank = |e: &Error| {
        let v = crate::error::exceptions::verdict(e);
        let pause = match v.pause {
            PauseClass::Overloaded => 3,
            PauseClass::Throttled => 2,
            PauseClass::Normal => 1,
            PauseClass::Immediate => 0,
        };
        (pause, v.kind == ErrorKind::RegionMoved)
    };
    rank(e) > rank(than)
}

/// Maps a Multi's answer to its actions (`order`: each action's index into the caller's
/// actions, and whether it answers only "done"; `regions`: the request's regions, each with its
/// run of `order`). Each success goes to `on_outcome` as it is read; the failures are returned.
/// `observe` sees each exception with the region it came from.
fn read_answers(
    regions: &[RegionGroup],
    order: &[(usize, bool)],
    region_results: Vec<RegionResult>,
    mut cells: CellBlockReader,
    server: &str,
    observe: &mut dyn FnMut(&Error, &Location),
    on_outcome: OnOutcome<'_>,
) -> Vec<Failed> {
    // Successes are reported here, as they are read; only failures go back to the round.
    let mut out = Vec::new();
    let mut region_start = 0usize;
    // A result that cannot be decoded, or whose cells cannot be read: the ones after it
    // (whose cells would be out of step) are not read, and every action not yet answered
    // has an unknown outcome (the server answered; what it answered cannot be known).
    let mut unreadable: Option<Error> = None;
    for ((loc, idxs), rar) in regions.iter().zip(region_results) {
        // This region's actions are `order[region_start..region_start + idxs.len()]`.
        let start = region_start;
        region_start += idxs.len();
        if let Some(e) = &unreadable {
            let unknown = Some((server.to_string(), Delivery::Unknown));
            out.extend(idxs.iter().map(|&i| (i, e.duplicate(), unknown.clone())));
            continue;
        }
        if let Some(ex) = rar.exception {
            let e = Error::from_action_exception(server, ex);
            observe(&e, loc);
            out.extend(idxs.iter().map(|&i| (i, e.duplicate(), None)));
            continue;
        }
        let mut seen = vec![false; idxs.len()];
        for answer in rar.results() {
            let (index, result, exception) = match answer {
                // A put's or delete's answer: an empty row, no cells to read.
                Ok(Answer::Empty(index)) => (Some(index), Ok(Some(RowResult::default())), None),
                // The result's cells first, whatever the result is for, so that every later
                // result reads its own; cells that cannot be read leave the rest unreadable
                // (this action's answer included).
                Ok(Answer::Decoded(roe)) => (
                    roe.index,
                    roe.result
                        .map(|r| result_from_proto(r, &mut cells))
                        .transpose(),
                    roe.exception,
                ),
                Err(e) => (None, Err(e), None),
            };
            let row = match result {
                Ok(row) => row,
                Err(e) => {
                    unreadable = Some(e);
                    break;
                }
            };
            let Some(pos) = index.map(|i| i as usize).filter(|&i| i < order.len()) else {
                continue;
            };
            let (idx, done_only) = order[pos];
            match pos.checked_sub(start).filter(|&k| k < idxs.len()) {
                Some(k) if !seen[k] => seen[k] = true,
                // An index outside this region, or answered twice: not this region's.
                _ => continue,
            }
            if let Some(ex) = exception {
                let e = Error::from_action_exception(server, ex);
                observe(&e, loc);
                out.push((idx, e, None));
            } else if done_only {
                // Mutations may carry (empty) results, read above.
                on_outcome(idx, Ok(ActionResult::Done));
            } else {
                let row = row.filter(|row| !row.is_empty());
                on_outcome(idx, Ok(ActionResult::Row(row)));
            }
        }
        for (k, &idx) in idxs.iter().enumerate() {
            if seen[k] {
                continue;
            }
            match &unreadable {
                Some(e) => out.push((
                    idx,
                    e.duplicate(),
                    Some((server.to_string(), Delivery::Unknown)),
                )),
                // HBase answers every action it ran: one left out (or answered under another's
                // index) is a damaged answer, and the server may have applied it.
                None => {
                    let e = Error::Protocol("server returned no result for an action".into());
                    out.push((idx, e, Some((server.to_string(), Delivery::Unknown))));
                }
            }
        }
    }
    // Regions the server left out of its answer: as unknown as an action left out.
    for &(idx, _) in &order[region_start.min(order.len())..] {
        let e = Error::Protocol("server returned no result for a region".into());
        out.push((idx, e, Some((server.to_string(), Delivery::Unknown))));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellType;
    use crate::multi_response::region_results;
    use crate::region::{RegionInfo, RegionLocation};
    use hbase_proto::{MultiResponse, RegionActionResult, ResultOrException};
    use prost::Message;
    use std::sync::Mutex;

    #[test]
    fn a_request_admits_actions_up_to_its_bytes_and_rows_and_always_its_first() {
        let l = RequestLimits {
            bytes: 100,
            rows: 3,
        };
        assert!(l.admit(0, 0, 1_000), "the first action, however large");
        assert!(l.admit(60, 1, 40), "up to the size exactly");
        assert!(!l.admit(60, 1, 41), "past the size: the next request");
        assert!(!l.admit(3, 3, 1), "past the rows");
    }

    /// The successes reported (action, result).
    type Reported = Vec<(usize, ActionResult)>;
    /// The failures returned (action, whether a protocol error, the delivery it says).
    type Returned = Vec<(usize, bool, Option<Delivery>)>;

    fn location() -> Location {
        let table = TableName::parse("t").unwrap();
        let p = hbase_proto::RegionInfo {
            region_id: 1,
            table_name: table.to_proto(),
            ..Default::default()
        };
        Arc::new(RegionLocation {
            region: RegionInfo::from_proto(&p),
            server: ServerName {
                host: "h".into(),
                port: 1,
                start_code: 1,
            },
        })
    }

    /// A result at `index` whose answer has `cells` cells in the cell block.
    fn answered(index: u32, cells: i32) -> ResultOrException {
        ResultOrException {
            index: Some(index),
            result: Some(hbase_proto::Result {
                associated_cell_count: Some(cells),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Reads `message` (one region, the caller's actions 10, 11 and 12: two puts and an
    /// increment) with `cellblock`; gives the successes reported and the failures returned
    /// (whether each is a protocol error, and the delivery it says).
    fn read(message: Vec<u8>, cellblock: Bytes) -> (Reported, Returned) {
        let loc = location();
        let regions = vec![(loc, vec![10, 11, 12])];
        let order = [(10, true), (11, true), (12, false)];
        let reported = Mutex::new(Vec::new());
        let on_outcome = |idx: usize, r: Result<ActionResult>| {
            reported
                .lock()
                .unwrap()
                .push((idx, r.expect("only successes are reported")));
        };
        let failed = read_answers(
            &regions,
            &order,
            region_results(&Bytes::from(message)).unwrap(),
            CellBlockReader::new(cellblock),
            "h:1",
            &mut |_, _| {},
            &on_outcome,
        );
        let failed = failed
            .into_iter()
            .map(|(idx, e, call)| (idx, matches!(e, Error::Protocol(_)), call.map(|(_, d)| d)))
            .collect();
        (reported.into_inner().unwrap(), failed)
    }

    fn message(results: Vec<ResultOrException>) -> Vec<u8> {
        MultiResponse {
            region_action_result: vec![RegionActionResult {
                result_or_exception: results,
                ..Default::default()
            }],
            ..Default::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn every_action_is_answered_once_with_its_own_cells() {
        let mut block = BytesMut::new();
        crate::rpc::cellblock::encode_cell(&mut block, b"r", b"f", b"q", 1, CellType::Put, b"8");
        let (ok, failed) = read(
            message(vec![answered(0, 0), answered(1, 0), answered(2, 1)]),
            block.freeze(),
        );
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(ok.len(), 3);
        assert!(matches!(ok[0], (10, ActionResult::Done)));
        assert!(matches!(ok[1], (11, ActionResult::Done)));
        match &ok[2] {
            (12, ActionResult::Row(Some(row))) => assert_eq!(row.cells[0].value(), b"8"),
            other => panic!("{other:?}"),
        }
    }

    /// The first put answered; the second and the increment unknown (protocol errors).
    fn only_the_first_answered((ok, failed): (Reported, Returned)) {
        assert!(matches!(ok[..], [(10, ActionResult::Done)]), "{ok:?}");
        let unknown = Some(Delivery::Unknown);
        assert_eq!(failed, vec![(11, true, unknown), (12, true, unknown)]);
    }

    #[test]
    fn cells_that_cannot_be_read_leave_the_rest_unknown() {
        // The second result says it has a cell; the block has none: its answer and the ones
        // after it cannot be known, the first one's stands.
        only_the_first_answered(read(
            message(vec![answered(0, 0), answered(1, 1), answered(2, 0)]),
            Bytes::new(),
        ));
    }

    #[test]
    fn a_result_that_cannot_be_decoded_leaves_the_rest_unknown() {
        // Well-formed around it: the second result's `index` (a varint) comes
        // length-delimited.
        let first = answered(0, 0).encode_to_vec();
        let third = answered(2, 0).encode_to_vec();
        let mut region = Vec::new();
        for r in [&first[..], &[0x0a, 0x01, 0x07][..], &third[..]] {
            region.push(0x0a);
            region.push(r.len() as u8);
            region.extend_from_slice(r);
        }
        let mut message = vec![0x0a, region.len() as u8];
        message.extend_from_slice(&region);
        only_the_first_answered(read(message, Bytes::new()));
    }

    /// An answer that leaves an action out (or gives its result an index of another action,
    /// or of none) says nothing of what the server did with it: HBase answers every action
    /// it ran, so a missing result is a damaged answer, and a write in it may have been
    /// applied. It used to count as not applied (a protocol error with no delivery), so a
    /// newest-version delete was sent again and an increment could go to another server.
    #[test]
    fn an_action_left_out_of_the_answer_is_unknown() {
        let unknown = Some(Delivery::Unknown);
        for results in [
            vec![answered(0, 0), answered(2, 0)],
            vec![answered(0, 0), answered(0, 0), answered(2, 0)],
            vec![answered(0, 0), answered(9, 0), answered(2, 0)],
        ] {
            let (ok, failed) = read(message(results.clone()), Bytes::new());
            assert_eq!(ok.len(), 2, "{results:?}: {ok:?}");
            assert_eq!(failed, vec![(11, true, unknown)], "{results:?}");
        }
        // A region left out: each of its actions.
        let (ok, failed) = read(MultiResponse::default().encode_to_vec(), Bytes::new());
        assert!(ok.is_empty());
        assert_eq!(
            failed,
            vec![
                (10, true, unknown),
                (11, true, unknown),
                (12, true, unknown)
            ]
        );
    }

    #[test]
    fn a_result_for_no_action_of_the_region_still_passes_its_cells_over() {
        // Index 7 is no action's; its cell must not be read as the increment's.
        let mut block = BytesMut::new();
        crate::rpc::cellblock::encode_cell(&mut block, b"x", b"f", b"q", 1, CellType::Put, b"no");
        crate::rpc::cellblock::encode_cell(&mut block, b"r", b"f", b"q", 1, CellType::Put, b"yes");
        let (ok, failed) = read(
            message(vec![
                answered(0, 0),
                answered(1, 0),
                answered(7, 1),
                answered(2, 1),
            ]),
            block.freeze(),
        );
        assert!(failed.is_empty(), "{failed:?}");
        match &ok[2] {
            (12, ActionResult::Row(Some(row))) => assert_eq!(row.cells[0].value(), b"yes"),
            other => panic!("{other:?}"),
        }
    }
}
