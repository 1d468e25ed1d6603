//! `Table`: data operations on one table. Each call locates the row's region, sends one RPC to
//! its server, and retries through relocation and backoff until the operation timeout, all in
//! the runtime's one retrying caller.
//!
//! # What a result means
//!
//! - `Ok` from a write: HBase applied it, once.
//! - An error of kind [`ErrorKind::OutcomeUnknown`](crate::ErrorKind::OutcomeUnknown): the
//!   write may or may not have been applied. An attempt reached the server (or may have), its
//!   answer was lost, and no later attempt could settle it. Read the row to find out.
//! - Any other error from a write: it was not applied.
//!
//! Puts and deletes are retried freely (applying one twice is harmless), except a delete of a
//! column's newest version that names no timestamp: the server picks the version as it
//! applies it, so a second application would delete the next one, and HBase takes no nonce
//! for a delete. After an attempt that may have applied it, such a delete (alone, in a batch,
//! in row mutations or buffered) is not sent again: it fails with an unknown outcome. Java's
//! client retries it. Increments, appends,
//! check-and-mutates and row mutations with increments or appends carry a nonce created before
//! their first attempt: the region server applies them once however often they are sent, and
//! after an unanswered attempt they are retried only on that server (another one does not know
//! the nonce). A check-and-mutate whose retry finds the check failing after an unanswered
//! attempt reports an unknown outcome rather than `false`: the server evaluates the check
//! again, and the earlier attempt may be why it fails now.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tracing::Instrument;

use crate::error::{Error, Result};
use crate::ops::{
    raw_from_proto, region_specifier, result_from_proto, Action, ActionResult, Append,
    CheckAndMutate, Delete, EncodedFields, Get, GetMessage, Increment, Put, RawRow, RegionRequest,
    RowMutations, RowResult, Scan, Then,
};
use crate::region::{Location, TableName};
use crate::rpc::cellblock::{check_row, CellBlockReader};
use crate::rpc::frame::ResponseBody;
use crate::runtime::caller::{CallOptions, Endpoint, Idempotency, Operation, Place, Target};
use crate::runtime::config::capped;
use crate::runtime::locator::Seek;
use crate::runtime::retry::{HBaseBackoff, RetryPolicy};
use crate::runtime::{new_nonce, Runtime};
use crate::scanner::{RawScanStream, ScanStream};

/// A handle to one table. Cheap to clone; all clones share the client's connections and cache.
/// Made by [`Client::table`](crate::Client::table), or [`Client::table_builder`](crate::Client::table_builder)
/// for per-table timeouts and priority.
#[derive(Clone)]
pub struct Table {
    rt: Arc<Runtime>,
    name: TableName,
    opts: Arc<CallOptions>,
}

/// Builds a [`Table`] with its own timeouts, retries and priority (as Java's
/// `AsyncTableBuilder`); what is not set comes from the client's config.
///
/// ```no_run
/// # async fn demo(client: hbase_client::Client) -> hbase_client::Result<()> {
/// use std::time::Duration;
/// let fast = client
///     .table_builder("t")?
///     .operation_timeout(Duration::from_millis(500))
///     .rpc_timeout(Duration::from_millis(200))
///     .retries(2)
///     .priority(100)
///     .build();
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TableBuilder {
    rt: Arc<Runtime>,
    name: TableName,
    opts: CallOptions,
}

impl std::fmt::Debug for TableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBuilder")
            .field("name", &self.name)
            .field("options", &self.opts)
            .finish()
    }
}

impl TableBuilder {
    pub(crate) fn new(rt: Arc<Runtime>, name: TableName) -> TableBuilder {
        let opts = rt.defaults.clone();
        TableBuilder { rt, name, opts }
    }

    /// Limit on one operation including all its retries.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.opts.operation_timeout = capped(timeout).max(Duration::from_millis(1));
        self
    }

    /// Limit on one RPC, also sent to the server as the call's deadline.
    pub fn rpc_timeout(mut self, timeout: Duration) -> Self {
        self.opts.rpc_timeout = capped(timeout).max(Duration::from_millis(1));
        self
    }

    /// Retries after the first attempt, with HBase's backoff from the client's pauses.
    pub fn retries(mut self, retries: u32) -> Self {
        self.opts.policy = Arc::new(HBaseBackoff {
            pause: self.rt.config.pause,
            pause_overloaded: self.rt.config.pause_server_overloaded(),
            retries,
        });
        self
    }

    /// The retry policy of this table's operations.
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.opts.policy = Arc::new(policy);
        self
    }

    /// Request priority of this table's calls (0, the default, is normal; HBase serves
    /// priorities above 10 from its priority handlers, for example 100 for admin calls).
    pub fn priority(mut self, priority: u32) -> Self {
        self.opts.priority = priority;
        self
    }

    /// The table handle.
    pub fn build(self) -> Table {
        Table {
            rt: self.rt,
            name: self.name,
            opts: Arc::new(self.opts),
        }
    }
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &TableName {
        &self.name
    }

    /// The largest KeyValue a mutation may carry (`ClientConfigBuilder::keyvalue_max_size`).
    fn max_kv(&self) -> usize {
        self.rt.config.keyvalue_max_size
    }

    fn operation(&self, idempotency: Idempotency) -> Operation<'_> {
        Operation::new(&self.rt, &self.opts, idempotency).on_table(&self.name)
    }

    /// Reads one row. `None` when the row has no cells (matching the get's columns).
    pub async fn get(&self, get: Get) -> Result<Option<RowResult>> {
        self.get_decoded(get, |result, cellblock| {
            let row = result_from_proto(result, &mut CellBlockReader::new(cellblock))?;
            Ok((!row.is_empty()).then_some(row))
        })
        .await
    }

    /// Reads one row, as [`get`](Table::get), keeping its cells in the cell block they
    /// arrived in (see [`RawRow`]): no allocation and one reference count for the row, instead
    /// of a vector of cells with a count each. For reads that look at a few cells, or at none.
    pub async fn get_raw(&self, get: Get) -> Result<Option<RawRow>> {
        self.get_decoded(get, |result, cellblock| {
            let row = raw_from_proto(result, cellblock)?;
            Ok((!row.is_empty()).then_some(row))
        })
        .await
    }

    /// A get whose answer's `Result` and cell block `decode` makes into a row.
    async fn get_decoded<R: Send>(
        &self,
        get: Get,
        decode: impl Fn(hbase_proto::Result, Bytes) -> Result<Option<R>> + Sync,
    ) -> Result<Option<R>> {
        check_row(&get.row)?;
        // GetRequest { region = 1, get = 2 }: the get is encoded once for every attempt.
        let rest = EncodedFields::message(2, &GetMessage::new(&get));
        let op = self.operation(Idempotency::Read);
        let request = |loc: &Location| RegionRequest {
            region: loc.region.name.clone(),
            rest: rest.as_slice(),
        };
        self.region_call(&op, "get", &get.row, "Get", request, None, |body, _| {
            let result = match crate::ops::plain_get_response(&body.message) {
                Some(result) => result,
                None => body.decode::<hbase_proto::GetResponse>()?.result,
            };
            match result {
                Some(result) => decode(result, body.cellblock),
                None => Ok(None),
            }
        })
        .await
    }

    /// True when the row has cells matching the get, without transferring them.
    pub async fn exists(&self, get: Get) -> Result<bool> {
        check_row(&get.row)?;
        let get = get.existence_only();
        let rest = EncodedFields::message(2, &GetMessage::new(&get));
        let op = self.operation(Idempotency::Read);
        let request = |loc: &Location| RegionRequest {
            region: loc.region.name.clone(),
            rest: rest.as_slice(),
        };
        self.region_call(&op, "exists", &get.row, "Get", request, None, |body, _| {
            let resp: hbase_proto::GetResponse = body.decode()?;
            Ok(resp.result.and_then(|r| r.exists).unwrap_or(false))
        })
        .await
    }

    /// Streams the rows of a range. See [`Scan`] for the options; dropping the stream early
    /// closes the server-side scanner.
    pub fn scan(&self, scan: Scan) -> ScanStream {
        ScanStream::start(self.rt.clone(), self.opts.clone(), self.name.clone(), scan)
    }

    /// Streams the rows of a range as [`scan`](Table::scan) does, each a [`RawRow`] whose
    /// cells stay in the cell block they arrived in: no vector and no reference count per
    /// cell. For scans whose rows are looked at once, or only in part. (Not to be confused with
    /// [`Scan::raw`], which asks the server for delete markers and deleted cells too; the two
    /// combine.) Each row keeps the buffer its answer was read into alive: see [`RawRow`].
    ///
    /// ```no_run
    /// # async fn example(table: hbase_client::Table) -> hbase_client::Result<()> {
    /// use futures_util::StreamExt;
    /// use hbase_client::Scan;
    ///
    /// let mut rows = table.scan_raw(Scan::new().start_row("user1").limit(100));
    /// while let Some(row) = rows.next().await {
    ///     let row = row?;
    ///     println!("{:?}: {} cells", row.row(), row.len());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn scan_raw(&self, scan: Scan) -> RawScanStream {
        RawScanStream::start(self.rt.clone(), self.opts.clone(), self.name.clone(), scan)
    }

    /// Writes one row.
    pub async fn put(&self, put: Put) -> Result<()> {
        put.validate(self.max_kv())?;
        let row = put.row.clone();
        let m = put.into_proto();
        self.mutate("put", &row, m, None, Idempotency::Idempotent)
            .await
            .map(|_| ())
    }

    /// Deletes a row, or the families/columns the delete names.
    pub async fn delete(&self, delete: Delete) -> Result<()> {
        delete.validate()?;
        let m = delete.to_proto();
        let idempotency = if delete.applies_once() {
            Idempotency::AtMostOnce
        } else {
            Idempotency::Idempotent
        };
        self.mutate("delete", &delete.row, m, None, idempotency)
            .await
            .map(|_| ())
    }

    /// Runs mixed gets, puts, deletes, increments and appends, across regions and servers, as
    /// one `Multi` RPC per server per round. Returns one outcome per action, in order; only
    /// failed actions are retried, within the operation timeout. Increments and appends carry
    /// nonces (see the module documentation for what each outcome means).
    pub async fn batch(&self, actions: &[Action]) -> Vec<Result<ActionResult>> {
        let span = tracing::debug_span!("hbase", op = "batch", table = %self.name, actions = actions.len());
        crate::multi::run(&self.rt, &self.opts, &self.name, actions)
            .instrument(span)
            .await
    }

    /// Adds to counters atomically; returns the row's new counter values. Applied once even
    /// when retried (a nonce).
    pub async fn increment(&self, increment: Increment) -> Result<RowResult> {
        increment.validate(self.max_kv())?;
        let m = increment.to_proto();
        let (row, _) = self
            .mutate("increment", &increment.row, m, None, Idempotency::Nonce)
            .await?;
        Ok(row)
    }

    /// Adds `amount` to one counter and returns its new value.
    pub async fn increment_column(
        &self,
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        amount: i64,
    ) -> Result<i64> {
        let (family, qualifier) = (family.into(), qualifier.into());
        let result = self
            .increment(Increment::new(row).add(family.clone(), qualifier.clone(), amount))
            .await?;
        let value = result
            .value(&family, &qualifier)
            .ok_or_else(|| Error::Protocol("increment returned no value".into()))?;
        let bytes: [u8; 8] = value[..].try_into().map_err(|_| {
            Error::Protocol(format!("counter value has {} bytes, not 8", value.len()))
        })?;
        Ok(i64::from_be_bytes(bytes))
    }

    /// Appends to column values atomically; returns the row's new values. Applied once even
    /// when retried (a nonce).
    pub async fn append(&self, append: Append) -> Result<RowResult> {
        append.validate(self.max_kv())?;
        let m = append.to_proto();
        let (row, _) = self
            .mutate("append", &append.row, m, None, Idempotency::Nonce)
            .await?;
        Ok(row)
    }

    /// Applies the mutation(s) only if the check passes; returns whether they were applied.
    /// Carries a nonce. After an unanswered attempt, a retry whose check fails reports
    /// [`ErrorKind::OutcomeUnknown`](crate::ErrorKind::OutcomeUnknown), not `false`.
    pub async fn check_and_mutate(&self, cm: CheckAndMutate) -> Result<bool> {
        let (condition, then) = cm.to_parts(self.max_kv())?;
        let (_, processed) = match then {
            Then::Mutation(m) => {
                let m = m.to_proto();
                self.mutate(
                    "check_and_mutate",
                    &cm.row,
                    m,
                    Some(condition),
                    Idempotency::Nonce,
                )
                .await?
            }
            Then::Row(rm) => {
                self.atomic_row("check_and_mutate", rm, Some(condition))
                    .await?
            }
        };
        Ok(processed)
    }

    /// Applies several mutations of one row together, atomically: all or none, in order.
    /// Returns the new values its increments and appends wrote. Carries a nonce when it holds
    /// an increment or an append.
    pub async fn mutate_row(&self, mutations: RowMutations) -> Result<RowResult> {
        mutations.validate(self.max_kv())?;
        let (row, _) = self.atomic_row("mutate_row", &mutations, None).await?;
        Ok(row)
    }

    /// One Mutate RPC (with retries); returns the result cells and the `processed` flag.
    async fn mutate(
        &self,
        what: &'static str,
        row: &[u8],
        mut mutation: hbase_proto::MutationProto,
        condition: Option<hbase_proto::Condition>,
        idempotency: Idempotency,
    ) -> Result<(RowResult, bool)> {
        let nonce_group = (idempotency == Idempotency::Nonce).then(|| {
            mutation.nonce = Some(new_nonce());
            self.rt.nonce_group
        });
        // MutateRequest { region = 1, mutation = 2, condition = 3, nonce_group = 4 }: all but
        // the region encoded once for every attempt.
        let rest = EncodedFields::mutate(&mutation, condition.as_ref(), nonce_group);
        let op = self.operation(idempotency);
        let request = |loc: &Location| RegionRequest {
            region: loc.region.name.clone(),
            rest: rest.as_slice(),
        };
        let (row, processed) = self
            .region_call(&op, what, row, "Mutate", request, None, |body, _| {
                let resp: hbase_proto::MutateResponse = body.decode()?;
                let row = match resp.result {
                    Some(r) => result_from_proto(r, &mut CellBlockReader::new(body.cellblock))?,
                    None => RowResult::default(),
                };
                Ok((row, resp.processed.unwrap_or(true)))
            })
            .await?;
        check_outcome(&op, condition.is_some(), processed)?;
        Ok((row, processed))
    }

    /// Row mutations as one atomic `RegionAction` of a Multi (with retries), optionally
    /// conditional; returns the increments' and appends' cells and the `processed` flag.
    async fn atomic_row(
        &self,
        what: &'static str,
        mutations: &RowMutations,
        condition: Option<hbase_proto::Condition>,
    ) -> Result<(RowResult, bool)> {
        let guarded = mutations.needs_nonce() || condition.is_some();
        let idempotency = if guarded {
            Idempotency::Nonce
        } else if mutations.applies_once() {
            Idempotency::AtMostOnce
        } else {
            Idempotency::Idempotent
        };
        let nonce = guarded.then(new_nonce);
        let mut cellblock = BytesMut::new();
        let actions = mutations.to_actions(nonce, &mut cellblock);
        let op = self.operation(idempotency);
        let request = |loc: &Location| hbase_proto::MultiRequest {
            region_action: vec![hbase_proto::RegionAction {
                region: region_specifier(&loc.region.name),
                atomic: Some(true),
                action: actions.clone(),
                condition: condition.clone(),
            }],
            nonce_group: nonce.map(|_| self.rt.nonce_group),
            ..Default::default()
        };
        let cb = (!cellblock.is_empty()).then_some(&cellblock[..]);
        let (row, processed) = self
            .region_call(
                &op,
                what,
                mutations.row(),
                "Multi",
                request,
                cb,
                atomic_outcome,
            )
            .await?;
        check_outcome(&op, condition.is_some(), processed)?;
        Ok((row, processed))
    }

    /// One call to the region of `row`, retried by the runtime's caller: `request` builds
    /// the request for a location, `parse` reads the response (an exception inside it, such
    /// as a region-level one in a Multi, counts as the attempt's failure).
    #[allow(clippy::too_many_arguments)]
    async fn region_call<Req, T>(
        &self,
        op: &Operation<'_>,
        what: &'static str,
        row: &[u8],
        method: &'static str,
        request: impl Fn(&Location) -> Req + Sync,
        cellblock: Option<&[u8]>,
        parse: impl Fn(ResponseBody, &Endpoint) -> Result<T> + Sync,
    ) -> Result<T>
    where
        Req: prost::Message,
        T: Send,
    {
        let span = tracing::debug_span!("hbase", op = what, table = %self.name);
        let (request, parse) = (&request, &parse);
        let target = Target::Region(&self.name, Seek::Row(row));
        op.retry(move || attempt(op, target, method, request, cellblock, parse))
            .instrument(span)
            .await
    }
}

/// One attempt of [`Table::region_call`].
async fn attempt<Req, T>(
    op: &Operation<'_>,
    target: Target<'_>,
    method: &'static str,
    request: &(impl Fn(&Location) -> Req + Sync),
    cellblock: Option<&[u8]>,
    parse: &(impl Fn(ResponseBody, &Endpoint) -> Result<T> + Sync),
) -> Result<T>
where
    Req: prost::Message,
    T: Send,
{
    let ep = op.resolve(target).await?;
    let loc = ep.loc.as_ref().expect("a region target has a location");
    let body = op.call(&ep, method, &request(loc), cellblock).await?;
    parse(body, &ep)
        .inspect_err(|e| op.answer_failed(&ep, Place::Regions(std::slice::from_ref(loc)), e))
}

/// A conditional write that reports "not applied" after an attempt that may have been
/// applied cannot say which: the server checked again, and that attempt may be why the check
/// fails now.
fn check_outcome(op: &Operation<'_>, conditional: bool, processed: bool) -> Result<()> {
    if conditional && !processed && op.maybe_applied() {
        let last = op
            .unanswered_error()
            .unwrap_or_else(|| Error::Protocol("an earlier attempt went unanswered".into()));
        return Err(op.unknown(last));
    }
    Ok(())
}

/// The outcome of an atomic RegionAction: its results (the increments' and appends' new
/// cells) and whether its condition passed; a region-level exception is the attempt's error.
fn atomic_outcome(body: ResponseBody, ep: &Endpoint) -> Result<(RowResult, bool)> {
    let resp: hbase_proto::MultiResponse = body.decode()?;
    let rar = resp
        .region_action_result
        .into_iter()
        .next()
        .ok_or_else(|| Error::Protocol("Multi response without a region result".into()))?;
    let remote = |pair| Error::from_action_exception(&ep.server().address(), pair);
    if let Some(ex) = rar.exception {
        return Err(remote(ex));
    }
    let mut cells = CellBlockReader::new(body.cellblock);
    let mut row = RowResult::default();
    for roe in rar.result_or_exception {
        if let Some(ex) = roe.exception {
            return Err(remote(ex));
        }
        if let Some(r) = roe.result {
            let part = result_from_proto(r, &mut cells)?;
            if row.row.is_empty() {
                row.row = part.row;
            }
            row.cells.extend(part.cells);
        }
    }
    Ok((row, rar.processed.unwrap_or(true)))
}
