//! `Table`: data operations on one table. Each call locates the row's region, sends one RPC to
//! its server, and retries through relocation and backoff until the operation timeout.

use std::future::Future;

use bytes::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

use crate::client::ClientInner;
use crate::error::{Error, Result};
use crate::ops::{
    region_specifier, result_from_proto, Action, ActionResult, Append, CheckAndMutate, Delete, Get,
    Increment, Put, RowResult, Scan,
};
use crate::region::{Location, TableName};
use crate::retry::{recovery, Recovery};
use crate::rpc::cellblock::CellBlockReader;
use crate::rpc::connection::RpcConnection;
use crate::rpc::frame::{RequestMeta, Service};
use crate::scanner::ScanStream;

/// A handle to one table. Cheap to clone; all clones share the client's connections and cache.
#[derive(Clone)]
pub struct Table {
    inner: Arc<ClientInner>,
    name: TableName,
}

/// What one attempt gets: where the region is, a connection to its server, and a time budget.
pub(crate) struct Attempt {
    pub(crate) loc: Location,
    pub(crate) conn: Arc<RpcConnection>,
    pub(crate) timeout: Duration,
}

impl Attempt {
    pub(crate) fn meta(&self, method: &'static str) -> RequestMeta<'static> {
        RequestMeta {
            method,
            timeout_ms: self.timeout.as_millis().min(u32::MAX as u128) as u32,
            priority: 0,
        }
    }
}

impl Table {
    pub(crate) fn new(inner: Arc<ClientInner>, name: TableName) -> Table {
        Table { inner, name }
    }

    /// The table's name.
    pub fn name(&self) -> &TableName {
        &self.name
    }

    /// Reads one row. `None` when the row has no cells (matching the get's columns).
    pub async fn get(&self, get: Get) -> Result<Option<RowResult>> {
        crate::rpc::cellblock::check_row(&get.row)?;
        let proto = get.to_proto();
        self.with_retries("get", &get.row, |a| {
            let req = hbase_proto::GetRequest {
                region: region_specifier(&a.loc.region.name),
                get: proto.clone(),
            };
            async move {
                let body = a.conn.call(a.meta("Get"), &req, None, a.timeout).await?;
                let resp: hbase_proto::GetResponse = body.decode()?;
                let Some(result) = resp.result else {
                    return Ok(None);
                };
                let row = result_from_proto(result, &mut CellBlockReader::new(body.cellblock))?;
                Ok((!row.is_empty()).then_some(row))
            }
        })
        .await
    }

    /// True when the row has cells matching the get, without transferring them.
    pub async fn exists(&self, get: Get) -> Result<bool> {
        crate::rpc::cellblock::check_row(&get.row)?;
        let proto = get.existence_only().to_proto();
        self.with_retries("exists", &proto.row.clone(), |a| {
            let req = hbase_proto::GetRequest {
                region: region_specifier(&a.loc.region.name),
                get: proto.clone(),
            };
            async move {
                let body = a.conn.call(a.meta("Get"), &req, None, a.timeout).await?;
                let resp: hbase_proto::GetResponse = body.decode()?;
                Ok(resp.result.and_then(|r| r.exists).unwrap_or(false))
            }
        })
        .await
    }

    /// Streams the rows of a range. See [`Scan`] for the options; dropping the stream early
    /// closes the server-side scanner.
    pub fn scan(&self, scan: Scan) -> ScanStream {
        ScanStream::start(self.inner.clone(), self.name.clone(), scan)
    }

    /// Writes one row.
    pub async fn put(&self, put: Put) -> Result<()> {
        put.validate(self.inner.config.keyvalue_max_size)?;
        self.mutate("put", &put.row.clone(), put.to_proto()).await
    }

    /// Deletes a row, or the families/columns the delete names.
    pub async fn delete(&self, delete: Delete) -> Result<()> {
        delete.validate()?;
        self.mutate("delete", &delete.row.clone(), delete.to_proto())
            .await
    }

    /// Runs mixed gets, puts and deletes, across regions and servers, as one `Multi` RPC per
    /// server per round. Returns one outcome per action, in order; only failed actions are
    /// retried, within the operation timeout.
    pub async fn batch(&self, actions: &[Action]) -> Vec<Result<ActionResult>> {
        let deadline = Instant::now() + self.inner.config.operation_timeout;
        let span = tracing::debug_span!("hbase", op = "batch", table = %self.name, actions = actions.len());
        crate::multi::run(&self.inner, &self.name, actions, deadline)
            .instrument(span)
            .await
    }

    /// Adds to counters atomically; returns the row's new counter values.
    pub async fn increment(&self, increment: Increment) -> Result<RowResult> {
        let proto = increment.to_proto(self.inner.config.keyvalue_max_size)?;
        let (row, _) = self
            .mutate_with("increment", &increment.row.clone(), proto, None)
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

    /// Appends to column values atomically; returns the row's new values.
    pub async fn append(&self, append: Append) -> Result<RowResult> {
        let proto = append.to_proto(self.inner.config.keyvalue_max_size)?;
        let (row, _) = self
            .mutate_with("append", &append.row.clone(), proto, None)
            .await?;
        Ok(row)
    }

    /// Applies the mutation only if the check passes; returns whether it was applied.
    pub async fn check_and_mutate(&self, cm: CheckAndMutate) -> Result<bool> {
        let (mutation, condition) = cm.to_proto(self.inner.config.keyvalue_max_size)?;
        let (_, processed) = self
            .mutate_with(
                "check_and_mutate",
                &cm.row.clone(),
                mutation,
                Some(condition),
            )
            .await?;
        Ok(processed)
    }

    async fn mutate(
        &self,
        op: &'static str,
        row: &[u8],
        mutation: hbase_proto::MutationProto,
    ) -> Result<()> {
        self.mutate_with(op, row, mutation, None).await.map(|_| ())
    }

    /// One Mutate RPC (with retries); returns the result cells and the `processed` flag.
    async fn mutate_with(
        &self,
        op: &'static str,
        row: &[u8],
        mutation: hbase_proto::MutationProto,
        condition: Option<hbase_proto::Condition>,
    ) -> Result<(RowResult, bool)> {
        self.with_retries(op, row, |a| {
            let req = hbase_proto::MutateRequest {
                region: region_specifier(&a.loc.region.name),
                mutation: mutation.clone(),
                condition: condition.clone(),
                nonce_group: None,
            };
            async move {
                let body = a.conn.call(a.meta("Mutate"), &req, None, a.timeout).await?;
                let resp: hbase_proto::MutateResponse = body.decode()?;
                let row = match resp.result {
                    Some(r) => result_from_proto(r, &mut CellBlockReader::new(body.cellblock))?,
                    None => RowResult::default(),
                };
                Ok((row, resp.processed.unwrap_or(true)))
            }
        })
        .await
    }

    /// The retry loop shared by every single-row operation.
    pub(crate) async fn with_retries<T, F, Fut>(
        &self,
        op: &'static str,
        row: &[u8],
        attempt: F,
    ) -> Result<T>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let span = tracing::debug_span!("hbase", op, table = %self.name);
        self.retry_loop(row, attempt).instrument(span).await
    }

    async fn retry_loop<T, F, Fut>(&self, row: &[u8], mut attempt: F) -> Result<T>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let inner = &self.inner;
        let config = &inner.config;
        let deadline = Instant::now() + config.operation_timeout;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let err = match self.try_once(row, deadline, &mut attempt).await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            // A region that stays unavailable may belong to a disabled table: fail then,
            // rather than retry until the operation timeout (as the Java client does).
            if attempts >= 2
                && err.is_region_unavailable()
                && table_disabled(inner, &self.name).await
            {
                return Err(Error::TableDisabled(self.name.to_string()));
            }
            let Some(pause) = inner.retry_policy.next_pause(attempts, &err) else {
                return Err(match recovery(&err) {
                    Recovery::Fail => err,
                    _ => Error::RetriesExhausted {
                        attempts,
                        last: Box::new(err),
                    },
                });
            };
            if Instant::now() + pause >= deadline {
                return Err(Error::Timeout {
                    what: format!(
                        "operation on {} after {attempts} attempts (last error: {err})",
                        self.name
                    ),
                    after: config.operation_timeout,
                });
            }
            tracing::debug!(table = %self.name, attempts, error = %err, ?pause, "retrying");
            tokio::time::sleep(pause).await;
        }
    }

    async fn try_once<T, F, Fut>(&self, row: &[u8], deadline: Instant, attempt: &mut F) -> Result<T>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let inner = &self.inner;
        let loc = inner
            .locator
            .locate_before(&self.name, row, deadline, inner.config.operation_timeout)
            .await?;
        let remaining = deadline.saturating_duration_since(Instant::now());
        let conn = match inner.pool.get(&loc.server, Service::Client).await {
            Ok(conn) => conn,
            Err(e) => {
                inner.locator.cache().invalidate_server(&loc.server);
                return Err(e);
            }
        };
        let timeout = inner
            .config
            .rpc_timeout
            .min(remaining.max(Duration::from_millis(1)));
        let result = attempt(Attempt {
            loc: loc.clone(),
            conn: conn.clone(),
            timeout,
        })
        .await;
        if let Err(e) = &result {
            inner.forget_stale(&loc.server, &conn, [&loc], e);
        }
        result
    }
}

/// True when the master says `table` is disabled (false when it cannot tell).
pub(crate) async fn table_disabled(inner: &Arc<ClientInner>, table: &TableName) -> bool {
    let admin = crate::admin::Admin::new(inner.clone());
    let check = tokio::time::timeout(inner.config.rpc_timeout, admin.is_table_enabled(table));
    matches!(check.await, Ok(Ok(false)))
}
