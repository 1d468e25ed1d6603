//! `ScanStream`: a scan as a `Stream` of rows.
//!
//! A task drives the scan region by region and hands batches of complete rows to the stream
//! through a small channel. While the consumer is slow, the task waits on the channel and
//! renews the server's scanner lease. When the stream is dropped, the task closes the scanner.
//!
//! A failed `next` call is never retried as is (the server counts calls, and a lost answer
//! would skip rows): the scanner is closed and reopened just after the last row delivered.
//! Each region scan from the current position is one attempt of the runtime's retrying
//! caller, which also decides when a lost scanner (lease expired, server restarted) is
//! reopened; every batch of rows delivered counts as progress and restarts its deadline.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::ops::{region_specifier, results_from_scan, RowResult, Scan};
use crate::region::{Location, TableName};
use crate::runtime::caller::{
    Attempt, CallOptions, Endpoint, Idempotency, Operation, Place, Target,
};
use crate::runtime::locator::{OwnedSeek, Seek};
use crate::runtime::Runtime;

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
    pub(crate) fn start(
        rt: Arc<Runtime>,
        opts: Arc<CallOptions>,
        table: TableName,
        scan: Scan,
    ) -> ScanStream {
        let scan = scan.with_defaults(rt.config.scanner_caching, rt.config.scanner_max_result_size);
        let (tx, rx) = mpsc::channel(2);
        let position = if scan.start_row.is_empty() {
            Position::TableEdge
        } else {
            Position::At(scan.start_row.clone(), true)
        };
        let scanner = Scanner {
            rt,
            opts,
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
    rt: Arc<Runtime>,
    opts: Arc<CallOptions>,
    table: TableName,
    scan: Scan,
    position: Position,
    remaining: Option<u64>,
    /// Cells of a row whose remaining cells come in a later response.
    partial: Option<RowResult>,
}

/// An open server-side scanner.
struct Open<'e> {
    ep: &'e Endpoint,
    id: u64,
    lease: Duration,
}

enum Delivery {
    Sent,
    ConsumerGone,
}

type Sender = mpsc::Sender<Result<Vec<RowResult>>>;

/// One attempt: the scan of one region from the current position.
struct RegionScan<'s> {
    scanner: &'s mut Scanner,
    tx: &'s Sender,
}

impl Attempt for RegionScan<'_> {
    type Output = Option<Delivery>;

    async fn attempt(&mut self, op: &Operation<'_>) -> Result<Option<Delivery>> {
        let scanned = self.scanner.scan_region(op, self.tx).await;
        if scanned.is_err() {
            // The next attempt reopens after the last complete row delivered, so the cells of
            // a row still incomplete come again. (A row left incomplete when its region ends
            // stays: the next region's first row completes it.)
            self.scanner.partial = None;
        }
        scanned
    }
}

impl Scanner {
    async fn run(mut self, tx: mpsc::Sender<Result<Vec<RowResult>>>) {
        if let Err(e) = self.scan_all(&tx).await {
            let _ = tx.send(Err(e)).await;
        }
    }

    async fn scan_all(&mut self, tx: &Sender) -> Result<()> {
        let (rt, opts) = (self.rt.clone(), self.opts.clone());
        let table = self.table.clone();
        let op = Operation::new(&rt, &opts, Idempotency::Scan).on_table(&table);
        loop {
            if matches!(self.position, Position::Done) || self.remaining == Some(0) {
                return Ok(());
            }
            let scanned = op.retry_with(&mut RegionScan { scanner: self, tx }).await?;
            if let Some(Delivery::ConsumerGone) = scanned {
                return Ok(());
            }
            op.progressed();
        }
    }

    /// Scans one region from the current position. `Ok(None)` when the region is done and the
    /// position moved on.
    async fn scan_region(&mut self, op: &Operation<'_>, tx: &Sender) -> Result<Option<Delivery>> {
        let seek = self.seek(op).await?;
        let table = self.table.clone();
        let ep = op.resolve(Target::Region(&table, seek.borrow())).await?;
        let loc = ep.loc.clone().expect("a region target has a location");
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
        let (mut resp, mut cellblock) = call(op, &ep, &open_req).await?;
        let mut open: Option<Open> = resp.scanner_id.map(|id| Open {
            ep: &ep,
            id,
            lease: Duration::from_millis(resp.ttl.unwrap_or(60_000) as u64),
        });
        loop {
            let rows = self.stitch(results_from_scan(&mut resp, cellblock)?);
            if !rows.is_empty() {
                if let Some(last) = rows.last() {
                    self.position = Position::At(last.row.clone(), false);
                }
                op.progressed();
                if let Delivery::ConsumerGone = self.deliver(op, tx, rows, open.as_ref()).await {
                    close(op, open.take()).await;
                    return Ok(Some(Delivery::ConsumerGone));
                }
                // However long the consumer took, it took the rows.
                op.progressed();
            }
            if self.remaining == Some(0) {
                close(op, open.take()).await;
                self.position = Position::Done;
                return Ok(Some(Delivery::Sent));
            }
            if !resp.more_results.unwrap_or(true) {
                // The server says the whole scan is complete (stop row or limit reached).
                self.position = Position::Done;
                return Ok(None);
            }
            if !resp.more_results_in_region.unwrap_or(true) || open.is_none() {
                close(op, open.take()).await;
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
            match call(op, &ep, &next).await {
                Ok((r, cb)) => {
                    resp = r;
                    cellblock = cb;
                }
                Err(e) => {
                    // Reopen after the last delivered row (the position already says so).
                    close(op, open.take()).await;
                    return Err(e);
                }
            }
        }
    }

    fn batch_rows(&self) -> u32 {
        let caching = self
            .scan
            .caching
            .unwrap_or(crate::runtime::config::DEFAULT_SCANNER_CACHING);
        match self.remaining {
            Some(r) => (r.min(caching as u64) as u32).max(1),
            None => caching,
        }
    }

    /// Which region to scan next, as a lookup the caller can resolve.
    async fn seek(&self, op: &Operation<'_>) -> Result<OwnedSeek> {
        Ok(match (&self.position, self.scan.reversed) {
            (Position::TableEdge, false) => OwnedSeek::Row(Bytes::new()),
            (Position::TableEdge, true) => OwnedSeek::Last,
            (Position::At(row, _), false) => OwnedSeek::Row(row.clone()),
            (Position::At(row, include), true) => {
                let loc = self
                    .rt
                    .locator
                    .seek(&self.table, Seek::Row(row), op.deadline())
                    .await?;
                if !*include && loc.region.start_key == *row && !row.is_empty() {
                    // Rows below `row` live in the region before this one.
                    OwnedSeek::EndingAt(row.clone())
                } else {
                    OwnedSeek::Row(row.clone())
                }
            }
            (Position::Done, _) => return Err(Error::Protocol("scan already complete".into())),
        })
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
        op: &Operation<'_>,
        tx: &Sender,
        rows: Vec<RowResult>,
        open: Option<&Open<'_>>,
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
                        if let Err(e) = call_quietly(op, o.ep, &renew).await {
                            tracing::debug!(error = %e, "scanner lease renewal failed");
                        }
                    }
                }
            }
        }
    }
}

/// One scan call; a failure is classified (and stale locations dropped) by the caller.
async fn call(
    op: &Operation<'_>,
    ep: &Endpoint,
    req: &hbase_proto::ScanRequest,
) -> Result<(hbase_proto::ScanResponse, Bytes)> {
    let body = op.call(ep, "Scan", req, None).await?;
    Ok((body.decode()?, body.cellblock))
}

/// A best-effort scan call (lease renewal, close): its failure says nothing about the region.
async fn call_quietly(
    op: &Operation<'_>,
    ep: &Endpoint,
    req: &hbase_proto::ScanRequest,
) -> Result<()> {
    op.call_raw(ep, Place::Nowhere, "Scan", req, None)
        .await
        .map(|_| ())
        .map_err(|failed| failed.error)
}

/// Closes an open scanner (best effort).
async fn close(op: &Operation<'_>, open: Option<Open<'_>>) {
    if let Some(o) = open {
        let req = hbase_proto::ScanRequest {
            scanner_id: Some(o.id),
            number_of_rows: Some(0),
            close_scanner: Some(true),
            ..Default::default()
        };
        let _ = call_quietly(op, o.ep, &req).await;
    }
}
