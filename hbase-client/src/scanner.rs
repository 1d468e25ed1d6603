//! `ScanStream`: a scan as a `Stream` of rows.
//!
//! A task drives the scan region by region and hands batches of complete rows to the stream
//! through a small channel. While the consumer is slow, the task waits on the channel and
//! renews the server's scanner lease. When the stream is dropped, the task closes the scanner.
//!
//! A failed `next` call is never retried as is (the server counts calls, and a lost answer
//! would skip rows): the scanner is closed and reopened just after the last row delivered.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_core::Stream;
use tokio::sync::mpsc;

use crate::client::ClientInner;
use crate::error::{Error, Result};
use crate::ops::{region_specifier, results_from_scan, RowResult, Scan};
use crate::region::{Location, Seek, TableName};
use crate::retry::{recovery, Recovery};
use crate::rpc::connection::RpcConnection;
use crate::rpc::frame::{RequestMeta, Service};

/// Rows of a scan, in key order (reverse order for reversed scans). Dropping it early closes
/// the server-side scanner.
pub struct ScanStream {
    rx: mpsc::Receiver<Result<Vec<RowResult>>>,
    ready: VecDeque<RowResult>,
}

impl Stream for ScanStream {
    type Item = Result<RowResult>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(row) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(row)));
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Ok(batch))) => self.ready = batch.into(),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl ScanStream {
    pub(crate) fn start(inner: Arc<ClientInner>, table: TableName, scan: Scan) -> ScanStream {
        let scan = scan.with_defaults(
            inner.config.scanner_caching,
            inner.config.scanner_max_result_size,
        );
        let (tx, rx) = mpsc::channel(2);
        let position = if scan.start_row.is_empty() {
            Position::TableEdge
        } else {
            Position::At(scan.start_row.clone(), true)
        };
        let scanner = Scanner {
            inner,
            table,
            remaining: scan.limit,
            scan,
            position,
            partial: None,
        };
        tokio::spawn(scanner.run(tx));
        ScanStream {
            rx,
            ready: VecDeque::new(),
        }
    }

    /// Collects every remaining row.
    pub async fn collect_all(mut self) -> Result<Vec<RowResult>> {
        let mut rows = Vec::new();
        while let Some(row) = std::future::poll_fn(|cx| Pin::new(&mut self).poll_next(cx)).await {
            rows.push(row?);
        }
        Ok(rows)
    }
}

/// The server no longer has the scanner a `next` call named; reopening is safe.
fn scanner_lost(e: &Error) -> bool {
    e.remote().is_some_and(|r| {
        matches!(
            r.short_class_name(),
            "UnknownScannerException" | "ScannerResetException" | "OutOfOrderScannerNextException"
        )
    })
}

/// Where the next region scan begins.
#[derive(Debug, Clone)]
enum Position {
    /// The start of the table (forward) or its end (reversed).
    TableEdge,
    /// At this row, included or not.
    At(Bytes, bool),
    /// Nothing left.
    Done,
}

struct Scanner {
    inner: Arc<ClientInner>,
    table: TableName,
    scan: Scan,
    position: Position,
    remaining: Option<u64>,
    /// Cells of a row whose remaining cells come in a later response.
    partial: Option<RowResult>,
}

/// An open server-side scanner.
struct Open {
    loc: Location,
    conn: Arc<RpcConnection>,
    id: u64,
    lease: Duration,
}

enum Delivery {
    Sent,
    ConsumerGone,
}

impl Scanner {
    async fn run(mut self, tx: mpsc::Sender<Result<Vec<RowResult>>>) {
        if let Err(e) = self.scan_all(&tx).await {
            let _ = tx.send(Err(e)).await;
        }
    }

    async fn scan_all(&mut self, tx: &mpsc::Sender<Result<Vec<RowResult>>>) -> Result<()> {
        let deadline_per_try = self.inner.config.operation_timeout;
        let mut attempts = 0u32;
        let mut since = Instant::now();
        loop {
            if matches!(self.position, Position::Done) || self.remaining == Some(0) {
                return Ok(());
            }
            match self.scan_region(tx).await {
                Ok(Some(Delivery::ConsumerGone)) => return Ok(()),
                Ok(_) => {
                    attempts = 0;
                    since = Instant::now();
                }
                Err(e) => {
                    attempts += 1;
                    self.partial = None;
                    let pause = match self.inner.retry_policy.next_pause(attempts, &e) {
                        // The server lost the scanner (lease expired, server restarted): its
                        // rows up to the last one delivered are ours, so reopen after it, as
                        // the Java client does.
                        None if scanner_lost(&e) && attempts <= self.inner.config.retries => {
                            Some(self.inner.config.pause)
                        }
                        pause => pause,
                    };
                    match pause {
                        Some(p) if since.elapsed() + p < deadline_per_try => {
                            tracing::debug!(table = %self.table, error = %e, attempts, "scan reopening");
                            tokio::time::sleep(p).await;
                        }
                        _ if recovery(&e) == Recovery::Fail => return Err(e),
                        _ => {
                            return Err(Error::RetriesExhausted {
                                attempts,
                                last: Box::new(e),
                            })
                        }
                    }
                }
            }
        }
    }

    /// Scans one region from the current position. `Ok(None)` when the region is done and the
    /// position moved on.
    async fn scan_region(
        &mut self,
        tx: &mpsc::Sender<Result<Vec<RowResult>>>,
    ) -> Result<Option<Delivery>> {
        let inner = self.inner.clone();
        let loc = self.locate().await?;
        let conn = match inner.pool.get(&loc.server, Service::Client).await {
            Ok(c) => c,
            Err(e) => {
                inner.locator.cache().invalidate_server(&loc.server);
                return Err(e);
            }
        };
        let (start, include_start) = match &self.position {
            Position::At(row, include) => (row.clone(), *include),
            _ => (Bytes::new(), true),
        };
        let open_req = hbase_proto::ScanRequest {
            region: Some(region_specifier(&loc.region.name)),
            scan: Some(self.scan.to_proto(&start, include_start)),
            number_of_rows: Some(self.batch_rows()),
            client_handles_partials: Some(true),
            client_handles_heartbeats: Some(true),
            limit_of_rows: self.remaining.map(|r| r.min(u32::MAX as u64) as u32),
            ..Default::default()
        };
        let (mut resp, cellblock) = self.call(&loc, &conn, &open_req).await?;
        let mut open: Option<Open> = resp.scanner_id.map(|id| Open {
            loc: loc.clone(),
            conn: conn.clone(),
            id,
            lease: Duration::from_millis(resp.ttl.unwrap_or(60_000) as u64),
        });
        let mut cellblock = cellblock;
        loop {
            let rows = self.stitch(results_from_scan(&mut resp, cellblock)?);
            if !rows.is_empty() {
                if let Some(last) = rows.last() {
                    self.position = Position::At(last.row.clone(), false);
                }
                if let Delivery::ConsumerGone = self.deliver(tx, rows, open.as_ref()).await {
                    self.close(open.take()).await;
                    return Ok(Some(Delivery::ConsumerGone));
                }
            }
            if self.remaining == Some(0) {
                self.close(open.take()).await;
                self.position = Position::Done;
                return Ok(Some(Delivery::Sent));
            }
            if !resp.more_results.unwrap_or(true) {
                // The server says the whole scan is complete (stop row or limit reached).
                self.position = Position::Done;
                return Ok(None);
            }
            if !resp.more_results_in_region.unwrap_or(true) || open.is_none() {
                self.close(open.take()).await;
                self.advance_past(&loc);
                return Ok(None);
            }
            let Some(scanner) = open.as_ref() else {
                return Ok(None);
            };
            let next = hbase_proto::ScanRequest {
                scanner_id: Some(scanner.id),
                number_of_rows: Some(self.batch_rows()),
                client_handles_partials: Some(true),
                client_handles_heartbeats: Some(true),
                ..Default::default()
            };
            match self.call(&loc, &conn, &next).await {
                Ok((r, cb)) => {
                    resp = r;
                    cellblock = cb;
                }
                Err(e) => {
                    // Reopen after the last delivered row (the position already says so).
                    self.close(open.take()).await;
                    return Err(e);
                }
            }
        }
    }

    fn batch_rows(&self) -> u32 {
        let caching = self
            .scan
            .caching
            .unwrap_or(crate::config::DEFAULT_SCANNER_CACHING);
        match self.remaining {
            Some(r) => (r.min(caching as u64) as u32).max(1),
            None => caching,
        }
    }

    async fn locate(&self) -> Result<Location> {
        let locator = &self.inner.locator;
        match (&self.position, self.scan.reversed) {
            (Position::TableEdge, false) => locator.seek(&self.table, Seek::Row(b"")).await,
            (Position::TableEdge, true) => locator.seek(&self.table, Seek::Last).await,
            (Position::At(row, _), false) => locator.seek(&self.table, Seek::Row(row)).await,
            (Position::At(row, include), true) => {
                let loc = locator.seek(&self.table, Seek::Row(row)).await?;
                if !*include && loc.region.start_key == *row && !row.is_empty() {
                    // Rows below `row` live in the region before this one.
                    locator.seek(&self.table, Seek::EndingAt(row)).await
                } else {
                    Ok(loc)
                }
            }
            (Position::Done, _) => Err(Error::Protocol("scan already complete".into())),
        }
    }

    /// Moves the position to the next region after `loc` is exhausted, or to Done.
    fn advance_past(&mut self, loc: &Location) {
        let region = &loc.region;
        let stop = &self.scan.stop_row;
        self.position = if !self.scan.reversed {
            let end = &region.end_key;
            let past_stop = !stop.is_empty()
                && (end[..] > stop[..] || (end[..] == stop[..] && !self.scan.include_stop_row));
            if end.is_empty() || past_stop {
                Position::Done
            } else {
                Position::At(end.clone(), true)
            }
        } else {
            let start = &region.start_key;
            if start.is_empty() || (!stop.is_empty() && start[..] <= stop[..]) {
                Position::Done
            } else {
                Position::At(start.clone(), false)
            }
        };
    }

    /// Joins partial rows; returns the rows that are complete.
    fn stitch(&mut self, results: Vec<(RowResult, bool)>) -> Vec<RowResult> {
        let mut complete = Vec::with_capacity(results.len());
        for (row, partial) in results {
            let row = match self.partial.take() {
                Some(mut acc) if acc.row == row.row => {
                    acc.cells.extend(row.cells);
                    acc
                }
                Some(acc) => {
                    complete.push(acc);
                    row
                }
                None => row,
            };
            if partial {
                self.partial = Some(row);
            } else if !row.is_empty() {
                complete.push(row);
            }
        }
        if let Some(limit) = self.remaining.as_mut() {
            complete.truncate(*limit as usize);
            *limit -= complete.len() as u64;
        }
        complete
    }

    /// Hands rows to the consumer, renewing the scanner lease while it is slow.
    async fn deliver(
        &self,
        tx: &mpsc::Sender<Result<Vec<RowResult>>>,
        rows: Vec<RowResult>,
        open: Option<&Open>,
    ) -> Delivery {
        let renew_every = open.map_or(Duration::from_secs(3600), |o| {
            (o.lease / 2).max(Duration::from_millis(100))
        });
        let mut reserve = Box::pin(tx.reserve());
        loop {
            tokio::select! {
                permit = &mut reserve => {
                    return match permit {
                        Ok(permit) => {
                            permit.send(Ok(rows));
                            Delivery::Sent
                        }
                        Err(_) => Delivery::ConsumerGone,
                    };
                }
                _ = tokio::time::sleep(renew_every) => {
                    if let Some(o) = open {
                        let renew = hbase_proto::ScanRequest {
                            scanner_id: Some(o.id),
                            number_of_rows: Some(0),
                            renew: Some(true),
                            ..Default::default()
                        };
                        if let Err(e) = self.call(&o.loc, &o.conn, &renew).await {
                            tracing::debug!(error = %e, "scanner lease renewal failed");
                        }
                    }
                }
            }
        }
    }

    async fn close(&self, open: Option<Open>) {
        if let Some(o) = open {
            let req = hbase_proto::ScanRequest {
                scanner_id: Some(o.id),
                number_of_rows: Some(0),
                close_scanner: Some(true),
                ..Default::default()
            };
            let _ = self.call(&o.loc, &o.conn, &req).await;
        }
    }

    async fn call(
        &self,
        loc: &Location,
        conn: &Arc<RpcConnection>,
        req: &hbase_proto::ScanRequest,
    ) -> Result<(hbase_proto::ScanResponse, Bytes)> {
        let timeout = self.inner.config.rpc_timeout;
        let meta = RequestMeta {
            method: "Scan",
            timeout_ms: timeout.as_millis() as u32,
            priority: 0,
        };
        match conn.call(meta, req, None, timeout).await {
            Ok(body) => Ok((body.decode()?, body.cellblock)),
            Err(e) => {
                self.inner.forget_stale(&loc.server, conn, [loc], &e);
                Err(e)
            }
        }
    }
}
