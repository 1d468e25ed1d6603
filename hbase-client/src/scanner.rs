//! `ScanStream` and `RawScanStream`: a scan as a `Stream` of rows.
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
//!
//! Rows are assembled from the pieces the server sends (it cuts rows at the batch size and
//! at the result size): joined into whole rows by default, cut into results of at most
//! `batch` cells, or handed on as they come (`allow_partial_results`). When pieces of a row
//! were delivered and the scanner is reopened, it reopens at that row and drops the cells
//! the server sends again up to and including the last one delivered, by the cell order
//! (row, family, qualifier, timestamp descending, type), as Java's client does. Counting them
//! would be exact only with the same MVCC read point: a reopen in another region (after a
//! split or merge) starts without it, and a cell written to the row meanwhile would shift the
//! count, delivering a cell twice or skipping one.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_core::Stream;
use tokio::sync::mpsc;

use crate::cell::Cell;
use crate::error::{Error, Result};
use crate::ops::{region_specifier, RawRow, RowResult, Scan};
use crate::region::{Location, TableName};
use crate::runtime::caller::{
    Attempt, CallOptions, Endpoint, Idempotency, Operation, Place, Target,
};
use crate::runtime::locator::{OwnedSeek, Seek};
use crate::runtime::Runtime;
use crate::scan_metrics::ScanMetrics;
use crate::scan_row::ScanRow;

/// Rows of a scan, in key order (reverse order for reversed scans). Dropping it early closes
/// the server-side scanner.
pub struct ScanStream(Rows<RowResult>);

/// Rows of a scan as [`RawRow`]s, their cells left in the block the server sent (see
/// [`Table::scan_raw`](crate::Table::scan_raw)): the same rows, in the same order, with the
/// same options as a [`ScanStream`], without a vector and a reference count per cell.
/// Dropping it early closes the server-side scanner.
pub struct RawScanStream(Rows<RawRow>);

impl Stream for ScanStream {
    type Item = Result<RowResult>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_next(cx)
    }
}

impl Stream for RawScanStream {
    type Item = Result<RawRow>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_next(cx)
    }
}

impl ScanStream {
    pub(crate) fn start(
        rt: Arc<Runtime>,
        opts: Arc<CallOptions>,
        table: TableName,
        scan: Scan,
    ) -> ScanStream {
        ScanStream(Rows::start(rt, opts, table, scan))
    }

    /// The scan's metrics so far (complete once the stream has ended), or `None` unless
    /// the scan asked for them with [`Scan::scan_metrics`].
    pub fn metrics(&self) -> Option<ScanMetrics> {
        self.0.metrics()
    }

    /// Collects every remaining row.
    pub async fn collect_all(self) -> Result<Vec<RowResult>> {
        self.0.collect_all().await
    }
}

impl RawScanStream {
    pub(crate) fn start(
        rt: Arc<Runtime>,
        opts: Arc<CallOptions>,
        table: TableName,
        scan: Scan,
    ) -> RawScanStream {
        RawScanStream(Rows::start(rt, opts, table, scan))
    }

    /// The scan's metrics so far (complete once the stream has ended), or `None` unless
    /// the scan asked for them with [`Scan::scan_metrics`].
    pub fn metrics(&self) -> Option<ScanMetrics> {
        self.0.metrics()
    }

    /// Collects every remaining row.
    pub async fn collect_all(self) -> Result<Vec<RawRow>> {
        self.0.collect_all().await
    }
}

/// The consumer's end of a scan: the batches of rows the scan's task sends.
struct Rows<R> {
    rx: mpsc::Receiver<Result<Vec<R>>>,
    ready: VecDeque<R>,
    metrics: Recorder,
    /// Set by the scan's task when it ends as it should (the scan complete, its error sent,
    /// or the consumer gone). The channel closing without it means the task died (its
    /// runtime shut down, or a panic): the stream then ends in [`Error::ScanAborted`].
    finished: Arc<AtomicBool>,
    /// The table, for that error.
    table: TableName,
    /// The stream ended (after that error, if it came).
    ended: bool,
}

impl<R: ScanRow> Rows<R> {
    /// Starts the scan's task.
    fn start(rt: Arc<Runtime>, opts: Arc<CallOptions>, table: TableName, scan: Scan) -> Rows<R> {
        let scan = scan.with_defaults(rt.config.scanner_caching, rt.config.scanner_max_result_size);
        let (tx, rx) = mpsc::channel(2);
        let position = if scan.start_row.is_empty() {
            Position::TableEdge
        } else {
            Position::At(scan.start_row.clone(), true)
        };
        let metrics = Recorder(
            scan.scan_metrics
                .then(|| Arc::new(Mutex::new(ScanMetrics::default()))),
        );
        // As Java's client picks its ScanResultCache: allow_partial_results first, even with a
        // batch (the server still cuts pieces at the batch size, and at the result size too;
        // they are not joined back into results of `batch` cells).
        let assembly = match (scan.batch, scan.allow_partial_results) {
            (_, true) => Assembly::Pieces,
            (Some(cells), false) => Assembly::Batch(cells as usize),
            (None, false) => Assembly::Whole,
        };
        let scanner = Scanner {
            rt,
            opts,
            table: table.clone(),
            remaining: scan.limit,
            scan,
            position,
            assembly,
            in_row: None,
            skip: None,
            read_point: None,
            failed: false,
            metrics: metrics.clone(),
        };
        let finished = Arc::new(AtomicBool::new(false));
        tokio::spawn(scanner.run(tx, finished.clone()));
        Rows {
            rx,
            ready: VecDeque::new(),
            metrics,
            finished,
            table,
            ended: false,
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<R>>> {
        loop {
            if let Some(row) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(row)));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Ok(batch))) => self.ready = batch.into(),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => {
                    self.ended = true;
                    // The task sets the flag before it drops its sender, which closes the
                    // channel: a closed channel without it is a task that died.
                    if self.finished.load(Ordering::Acquire) {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Err(Error::ScanAborted {
                        table: self.table.to_string(),
                        reason: "its task stopped (the runtime it was spawned on shut down, or it panicked)".into(),
                    })));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn metrics(&self) -> Option<ScanMetrics> {
        self.metrics.0.as_ref().map(|m| lock(m).clone())
    }

    async fn collect_all(mut self) -> Result<Vec<R>> {
        let mut rows = Vec::new();
        while let Some(row) = std::future::poll_fn(|cx| self.poll_next(cx)).await {
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

/// How the server's pieces of rows become results.
#[derive(Debug, Clone, Copy)]
enum Assembly {
    /// Whole rows: pieces are joined.
    Whole,
    /// At most this many cells per result.
    Batch(usize),
    /// Pieces as they come.
    Pieces,
}

/// The row whose pieces are arriving: its last piece said more cells follow.
struct RowInProgress<R> {
    row: Bytes,
    /// Its cells received but not yet delivered.
    held: Option<R>,
    /// How many of its cells were delivered.
    delivered: usize,
    /// The last cell delivered.
    last: Option<Cell>,
}

/// The delivered cells of a row a scanner was reopened at.
struct Skip {
    row: Bytes,
    /// Cells of the row delivered before the reopen.
    delivered: usize,
    /// The last of them: cells up to and including it (in cell order) are dropped.
    last: Cell,
}

struct Scanner<R> {
    rt: Arc<Runtime>,
    opts: Arc<CallOptions>,
    table: TableName,
    scan: Scan,
    position: Position,
    remaining: Option<u64>,
    assembly: Assembly,
    in_row: Option<RowInProgress<R>>,
    /// After a reopen within a row: the cells of it the server sends again that were
    /// delivered before.
    skip: Option<Skip>,
    /// The region being scanned and the MVCC read point its first open returned: a reopen
    /// in the same region sends it back, so the scan does not see later writes (Java keeps
    /// it within a region and starts afresh in the next).
    read_point: Option<(Bytes, u64)>,
    /// The last region scan failed: the next one is a retry.
    failed: bool,
    metrics: Recorder,
}

/// An open server-side scanner.
struct Open<'e> {
    ep: &'e Endpoint,
    id: u64,
    lease: Duration,
}

/// Counts into the scan's metrics, when the scan collects them.
#[derive(Clone, Default)]
struct Recorder(Option<Arc<Mutex<ScanMetrics>>>);

impl Recorder {
    fn record(&self, f: impl FnOnce(&mut ScanMetrics)) {
        if let Some(m) = &self.0 {
            f(&mut lock(m));
        }
    }

    fn enabled(&self) -> Option<bool> {
        self.0.as_ref().map(|_| true)
    }
}

fn lock(m: &Mutex<ScanMetrics>) -> std::sync::MutexGuard<'_, ScanMetrics> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

enum Delivery {
    Sent,
    ConsumerGone,
}

type Sender<R> = mpsc::Sender<Result<Vec<R>>>;

/// One attempt: the scan of one region from the current position.
struct RegionScan<'s, R> {
    scanner: &'s mut Scanner<R>,
    tx: &'s Sender<R>,
}

impl<R: ScanRow> Attempt for RegionScan<'_, R> {
    type Output = Option<Delivery>;

    async fn attempt(&mut self, op: &Operation<'_>) -> Result<Option<Delivery>> {
        let scanned = self.scanner.scan_region(op, self.tx).await;
        self.scanner.failed = false;
        if let Err(e) = &scanned {
            // The next attempt reopens after the last complete row delivered, or at the row
            // whose first cells were delivered; the cells not delivered come again.
            self.scanner.failed = true;
            // Reopening within a row: the cells of it delivered come again and are dropped.
            if let Some(r) = self.scanner.in_row.take() {
                if let Some(last) = r.last {
                    self.scanner.skip = Some(Skip {
                        row: r.row,
                        delivered: r.delivered,
                        last,
                    });
                }
            }
            if e.remote()
                .is_some_and(|r| r.short_class_name() == "NotServingRegionException")
            {
                self.scanner
                    .metrics
                    .record(|m| m.not_serving_region_exceptions += 1);
            }
        }
        scanned
    }
}

impl<R: ScanRow> Scanner<R> {
    async fn run(mut self, tx: Sender<R>, finished: Arc<AtomicBool>) {
        if let Err(e) = self.scan_all(&tx).await {
            let _ = tx.send(Err(e)).await;
        }
        finished.store(true, Ordering::Release);
    }

    async fn scan_all(&mut self, tx: &Sender<R>) -> Result<()> {
        let (rt, opts) = (self.rt.clone(), self.opts.clone());
        let table = self.table.clone();
        let op = Operation::new(&rt, &opts, Idempotency::Scan).on_table(&table);
        loop {
            // A consumer that went away is noticed before each region, not only when a row is
            // handed on: a filter that matches nothing would otherwise take the scan through
            // every region for nobody.
            if tx.is_closed() {
                return Ok(());
            }
            if matches!(self.position, Position::Done) || self.remaining == Some(0) {
                // A row whose last piece still said "more" ends with the scan.
                let mut last = Vec::new();
                self.end_row(&mut last);
                if !last.is_empty() {
                    let _ = tx.send(Ok(last)).await;
                }
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
    async fn scan_region(
        &mut self,
        op: &Operation<'_>,
        tx: &Sender<R>,
    ) -> Result<Option<Delivery>> {
        let seek = self.seek(op).await?;
        let table = self.table.clone();
        let ep = op.resolve(Target::Region(&table, seek.borrow())).await?;
        let loc = ep.loc.clone().expect("a region target has a location");
        let host = ep.server().host.clone();
        if self.failed {
            self.metrics.record(|m| m.add_retry(&host));
        }
        if let Some(skip) = &self.skip {
            self.position = Position::At(skip.row.clone(), true);
        }
        let (start, include_start) = match &self.position {
            Position::At(row, include) => (row.clone(), *include),
            _ => (Bytes::new(), true),
        };
        let mut scan = self.scan.to_proto(&start, include_start);
        match &self.read_point {
            Some((region, point)) if *region == loc.region.name => {
                scan.mvcc_read_point = Some(*point);
            }
            _ => self.read_point = None,
        }
        let open_req = hbase_proto::ScanRequest {
            region: Some(region_specifier(&loc.region.name)),
            scan: Some(scan),
            number_of_rows: Some(self.batch_rows()),
            client_handles_partials: Some(true),
            client_handles_heartbeats: Some(true),
            track_scan_metrics: self.metrics.enabled(),
            limit_of_rows: self.remaining.map(|r| r.min(u32::MAX as u64) as u32),
            ..Default::default()
        };
        self.metrics.record(|m| {
            m.regions_scanned += 1;
            m.add_call(&host);
        });
        let sent = Instant::now();
        let (mut resp, mut cellblock) = call(op, &ep, &open_req).await?;
        self.metrics
            .record(|m| m.millis_between_nexts += elapsed_ms(sent));
        if self.read_point.is_none() {
            if let Some(point) = resp.mvcc_read_point.filter(|&p| p > 0) {
                self.read_point = Some((loc.region.name.clone(), point));
            }
        }
        let mut open: Option<Open> = resp.scanner_id.map(|id| Open {
            ep: &ep,
            id,
            lease: Duration::from_millis(resp.ttl.unwrap_or(60_000) as u64),
        });
        loop {
            if resp.more_results == Some(false) || resp.more_results_in_region == Some(false) {
                // The server closed the scanner itself when it said the scan or the region is
                // done: no close for it (and no lease renewal while the consumer is slow), as
                // Java's client sends none. A limit reached in the last answer used to send a
                // close anyway: an RPC more than Java's (tests/scan_metrics.rs).
                open = None;
            }
            let pieces = match R::rows_of(&mut resp, cellblock) {
                Ok(pieces) => pieces,
                Err(e) => {
                    // The answer's frame was whole, so its connection is fine and a scanner
                    // the server still holds is closed now, not left to its lease. The retry
                    // reopens after the last row delivered.
                    close(op, open.take(), &self.metrics).await;
                    return Err(e);
                }
            };
            self.metrics.record(|m| {
                if let Some(server) = &resp.scan_metrics {
                    m.add_server(server);
                }
                m.add_cells(&host, pieces.iter().flat_map(|(r, _)| r.cell_refs()));
            });
            let rows = self.assemble(pieces);
            if !rows.is_empty() {
                op.progressed();
                if let Delivery::ConsumerGone = self.deliver(op, tx, rows, open.as_ref()).await {
                    close(op, open.take(), &self.metrics).await;
                    return Ok(Some(Delivery::ConsumerGone));
                }
                // However long the consumer took, it took the rows.
                op.progressed();
            } else {
                // An answer without a whole row renews the time too: the pieces of one large
                // row, or the heartbeats of a filter that matches nothing for a while, may take
                // longer in all than the operation timeout, which bounds a wait for the server,
                // not for a row.
                op.answered();
                // Nor does the consumer's going away wait for a row (heartbeats can go on for
                // the whole region).
                if tx.is_closed() {
                    close(op, open.take(), &self.metrics).await;
                    return Ok(Some(Delivery::ConsumerGone));
                }
            }
            if self.remaining == Some(0) {
                close(op, open.take(), &self.metrics).await;
                self.position = Position::Done;
                return Ok(Some(Delivery::Sent));
            }
            if !resp.more_results.unwrap_or(true) {
                // The server says the whole scan is complete (stop row or limit reached).
                self.position = Position::Done;
                return Ok(None);
            }
            if !resp.more_results_in_region.unwrap_or(true) || open.is_none() {
                // The server closed the scanner itself when it said the region is done.
                self.read_point = None;
                // No row spans two regions: the region's end completes the row in progress,
                // even when its last piece said "more" (servers do that). Delivered now, it
                // cannot be lost to a failure opening the next region.
                let mut last = Vec::new();
                self.end_row(&mut last);
                if !last.is_empty() {
                    op.progressed();
                    if let Delivery::ConsumerGone = self.deliver(op, tx, last, None).await {
                        return Ok(Some(Delivery::ConsumerGone));
                    }
                }
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
                track_scan_metrics: self.metrics.enabled(),
                ..Default::default()
            };
            self.metrics.record(|m| m.add_call(&host));
            let sent = Instant::now();
            let answer = call(op, &ep, &next).await;
            self.metrics
                .record(|m| m.millis_between_nexts += elapsed_ms(sent));
            match answer {
                Ok((r, cb)) => {
                    resp = r;
                    cellblock = cb;
                }
                Err(e) => {
                    // Reopen after the last delivered row (the position already says so). A
                    // scanner the server answered for is closed; one on a connection that
                    // failed is left to its lease: closing it there would wait out another
                    // RPC timeout before the reopen.
                    if e.remote().is_some() {
                        close(op, open.take(), &self.metrics).await;
                    }
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
        // No row spans two regions: a skip record for a row of this one has nothing left to
        // skip. Kept, it sent a reopen at the next region back to that row (completed by the
        // region's end, its pieces sent again all delivered before), which then counted twice
        // against the limit.
        self.skip = None;
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

    /// Turns the server's pieces of rows into the results the scan returns (whole rows,
    /// batches or pieces), counting complete rows against the limit and moving the position
    /// past what is returned.
    fn assemble(&mut self, pieces: Vec<(R, bool)>) -> Vec<R> {
        let mut out = Vec::with_capacity(pieces.len());
        // The last row handed on was a whole row of the fast path below. The position moves
        // once for a run of them, to the last: before the general path takes a later piece,
        // or after the loop.
        let mut at_last_whole = false;
        for (mut piece, more) in pieces {
            if self.remaining == Some(0) {
                break;
            }
            // The usual case: a whole row, no row in progress, no cells to skip. It is handed
            // on as it came, as the general path below would, without taking its key (the
            // general path takes it for every row, to match pieces and to move the position:
            // 144 instructions a row of a 100-row scan, 213 through `scan_raw`). Empty rows take
            // the general path, which drops them.
            if !more
                && self.in_row.is_none()
                && self.skip.is_none()
                && matches!(self.assembly, Assembly::Whole)
                && piece.cell_count() > 0
            {
                out.push(piece);
                self.count_row();
                at_last_whole = true;
                continue;
            }
            if at_last_whole {
                self.move_past(&out);
                at_last_whole = false;
            }
            // Taken before any cells are dropped from the piece.
            let row = piece.key();
            let mut resumed = (0, None);
            if let Some(skip) = self.skip.take() {
                if skip.row == row {
                    // Cells come in cell order: the delivered ones (and any written since
                    // that sort among them) come first.
                    let cells = piece.cells_mut();
                    let k = cells
                        .iter()
                        .take_while(|c| c.key_order(&skip.last) != std::cmp::Ordering::Greater)
                        .count();
                    let all = k == cells.len();
                    cells.drain(..k);
                    resumed = (skip.delivered, Some(skip.last.clone()));
                    if all {
                        // The next piece may start with delivered cells too.
                        self.skip = Some(skip);
                    }
                }
            }
            if self.in_row.as_ref().is_some_and(|r| r.row != row) {
                // The row ended without a last piece saying so.
                self.end_row(&mut out);
                if self.remaining == Some(0) {
                    break;
                }
            }
            let in_row = self.in_row.get_or_insert_with(|| RowInProgress {
                row,
                held: None,
                delivered: resumed.0,
                last: resumed.1,
            });
            match in_row.held.as_mut() {
                // Everything held was handed on (pieces as they come, or a batch cut at the
                // server's size): the piece is held as it came, not decoded into cells to be
                // joined to none.
                Some(held) if held.cell_count() > 0 => {
                    held.cells_mut().append(piece.cells_mut());
                    let stale = held.stale() || piece.stale();
                    held.mark_stale(stale);
                }
                Some(held) => {
                    let stale = held.stale() || piece.stale();
                    *held = piece;
                    held.mark_stale(stale);
                }
                None => in_row.held = Some(piece),
            }
            let cut = match self.assembly {
                Assembly::Whole => None,
                Assembly::Batch(cells) => Some(cells),
                Assembly::Pieces => Some(usize::MAX),
            };
            if let Some(cells) = cut {
                self.deliver_held(cells, more, &mut out);
            }
            if !more {
                self.end_row(&mut out);
            }
        }
        if at_last_whole {
            self.move_past(&out);
        }
        out
    }

    /// Moves the position past the last row of `out`, a whole row.
    fn move_past(&mut self, out: &[R]) {
        if let Some(last) = out.last() {
            self.past_row(last.key());
        }
    }

    /// A whole row was returned: the position is past it (a reopen starts after it).
    fn past_row(&mut self, row: Bytes) {
        self.position = Position::At(row, false);
    }

    /// A whole row was returned: it counts against the limit.
    fn count_row(&mut self) {
        if let Some(limit) = self.remaining.as_mut() {
            *limit -= 1;
        }
    }

    /// Moves the held cells of the row in progress to `out` in results of `cells` cells
    /// (fewer for all its held cells when `cells` is `usize::MAX`), keeping back a last,
    /// smaller result while more cells of the row follow.
    fn deliver_held(&mut self, cells: usize, more: bool, out: &mut Vec<R>) {
        let Some(in_row) = self.in_row.as_mut() else {
            return;
        };
        let Some(mut held) = in_row.held.take() else {
            return;
        };
        loop {
            let n = held.cell_count();
            let full = if cells == usize::MAX {
                n > 0
            } else {
                n >= cells
            };
            if !full || (!more && n <= cells) {
                break;
            }
            let mut result = held.take_front(n.min(cells));
            result.mark_stale(held.stale());
            result.mark_more_cells(true);
            in_row.delivered += result.cell_count();
            in_row.last = result.last_cell();
            self.position = Position::At(in_row.row.clone(), true);
            out.push(result);
        }
        in_row.held = Some(held);
    }

    /// The row in progress is complete: its held cells become its last result.
    fn end_row(&mut self, out: &mut Vec<R>) {
        let Some(in_row) = self.in_row.take() else {
            return;
        };
        if let Some(held) = in_row.held.filter(|h| h.cell_count() > 0) {
            out.push(held);
        } else if in_row.delivered == 0 {
            // An empty row: nothing returned, nothing counted.
            return;
        }
        self.past_row(in_row.row);
        self.count_row();
    }

    /// Hands rows to the consumer, renewing the scanner lease while it is slow.
    async fn deliver(
        &self,
        op: &Operation<'_>,
        tx: &Sender<R>,
        rows: Vec<R>,
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
                        Err(_) => {
                            // The close that follows waits for the server, not the consumer.
                            op.answered();
                            Delivery::ConsumerGone
                        }
                    };
                }
                _ = tokio::time::sleep(renew_every) => {
                    if let Some(o) = open {
                        // The operation timeout bounds a wait for the server, not for the
                        // consumer: a stall longer than it left the renewals 1 ms each.
                        op.answered();
                        let renew = hbase_proto::ScanRequest {
                            scanner_id: Some(o.id),
                            number_of_rows: Some(0),
                            renew: Some(true),
                            ..Default::default()
                        };
                        self.metrics.record(|m| m.add_call(&o.ep.server().host));
                        if let Err(e) = call_quietly(op, o.ep, &renew).await {
                            tracing::debug!(error = %e, "scanner lease renewal failed");
                        }
                    }
                }
            }
        }
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    since.elapsed().as_millis() as u64
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
async fn close(op: &Operation<'_>, open: Option<Open<'_>>, metrics: &Recorder) {
    if let Some(o) = open {
        metrics.record(|m| m.add_call(&o.ep.server().host));
        let req = hbase_proto::ScanRequest {
            scanner_id: Some(o.id),
            number_of_rows: Some(0),
            close_scanner: Some(true),
            ..Default::default()
        };
        let _ = call_quietly(op, o.ep, &req).await;
    }
}
