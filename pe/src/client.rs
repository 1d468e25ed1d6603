//! One PerformanceEvaluation client: its row loop, its latency histogram and the report it
//! prints when it finishes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{
    Action, Append, BufferedMutator, CheckAndMutate, Client, Comparator, CompareOp, Delete,
    Durability, Filter, Get, Increment, MutatorConfig, Put, RowResult, Scan, ScanMetrics,
    ScanStream, Table,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::command::Command;
use crate::histogram::{Reservoir, Snapshot};
use crate::options::Options;
use crate::report::{histogram_report, mbps, pretty_histogram_report, short_histogram_report};
use crate::{Output, PeError};

/// Java's package-qualified name of a test class, as PerformanceEvaluation prints it.
pub fn java_class(simple: &str) -> String {
    format!("class org.apache.hadoop.hbase.PerformanceEvaluation${simple}")
}

/// A row key: the number, zero-padded to 26 decimal digits.
pub fn format_row(number: u32) -> Bytes {
    Bytes::from(format!("{number:026}"))
}

/// A value as PerformanceEvaluation generates it: runs of eight equal upper-case letters,
/// and one letter repeated over the tail.
pub fn generate_data(rng: &mut SmallRng, length: usize) -> Bytes {
    let mut b = vec![0u8; length];
    let mut i = 0;
    while i + 8 < length {
        let c = b'A' + rng.random_range(0..26u8);
        b[i..i + 8].fill(c);
        i += 8;
    }
    let c = b'A' + rng.random_range(0..26u8);
    b[i..].fill(c);
    Bytes::from(b)
}

/// What one client measured.
#[derive(Debug)]
pub struct ClientResult {
    /// Wall time of the timed loop plus the takedown (the mutator's final flush).
    pub duration_ms: u64,
    /// Its latency statistics, in microseconds.
    pub latency: Snapshot,
    /// Operations slower than `--latencyThreshold`.
    pub over_threshold: u64,
}

struct Worker {
    opts: Arc<Options>,
    table: Table,
    mutator: Option<BufferedMutator>,
    rng: SmallRng,
    scanner: Option<ScanStream>,
    gets: Vec<Action>,
    puts: Vec<Action>,
    value_sizes: Reservoir,
    scan_metrics: ScanMetricsHistograms,
    cas_qualifier: Bytes,
}

/// PerformanceEvaluation's histograms of the client scan metrics, one sample per scan of
/// the seek and range tests, printed after the latency block.
#[derive(Default)]
struct ScanMetricsHistograms {
    rpc_calls: Reservoir,
    remote_rpc_calls: Reservoir,
    millis_between_next: Reservoir,
    regions_scanned: Reservoir,
    bytes_in_results: Reservoir,
    bytes_in_remote_results: Reservoir,
}

impl ScanMetricsHistograms {
    fn update(&mut self, m: &ScanMetrics) {
        self.rpc_calls.update(m.rpc_calls as i64);
        self.remote_rpc_calls.update(m.remote_rpc_calls as i64);
        self.millis_between_next
            .update(m.millis_between_nexts as i64);
        self.regions_scanned.update(m.regions_scanned as i64);
        // As PerformanceEvaluation: byte counts only when something came back.
        if m.bytes_in_results > 0 {
            self.bytes_in_results.update(m.bytes_in_results as i64);
        }
        if m.bytes_in_remote_results > 0 {
            self.bytes_in_remote_results
                .update(m.bytes_in_remote_results as i64);
        }
    }

    /// The report lines of the histograms that have samples, in PerformanceEvaluation's
    /// order and words.
    fn report(&self) -> String {
        [
            ("rpcCalls (count)", &self.rpc_calls),
            ("remoteRpcCalls (count)", &self.remote_rpc_calls),
            ("millisBetweenNext (latency)", &self.millis_between_next),
            ("regionsScanned (count)", &self.regions_scanned),
            ("bytesInResults (size)", &self.bytes_in_results),
            ("bytesInRemoteResults (size)", &self.bytes_in_remote_results),
        ]
        .iter()
        .filter(|(_, h)| h.count() > 0)
        .map(|(name, h)| format!("\n{name}: {}", histogram_report(&h.snapshot())))
        .collect()
    }
}

/// Runs client `index` against `client` and prints what PerformanceEvaluation prints for it.
pub async fn run_one_client(
    index: u32,
    client: Client,
    opts: Arc<Options>,
    out: Output,
) -> Result<ClientResult, PeError> {
    let mut start_offset = opts.start_row;
    if start_offset == 0 {
        start_offset = index * opts.per_client_rows;
    }
    let class = java_class(opts.class_name);
    out.line(format!(
        "Start {class} at offset {start_offset} for {} rows",
        opts.per_client_rows
    ));
    let every_n = (opts.total_rows as f32 / (opts.total_rows as f32 * opts.sample_rate)) as u32;
    let every_n = every_n.max(1);
    out.line(format!(
        "Sampling 1 every {every_n} out of {} total rows.",
        opts.per_client_rows
    ));

    let table = client.table(&opts.table)?;
    let mutator = if opts.command.is_write() && !opts.auto_flush {
        let config = MutatorConfig::default().write_buffer_size(opts.buffer_size as usize);
        Some(client.buffered_mutator(&opts.table, config)?)
    } else {
        None
    };
    let mut w = Worker {
        table,
        mutator,
        rng: SmallRng::from_rng(&mut rand::rng()),
        scanner: None,
        gets: Vec::new(),
        puts: Vec::new(),
        value_sizes: Reservoir::default(),
        scan_metrics: ScanMetricsHistograms::default(),
        cas_qualifier: Bytes::from(opts.class_name.to_string()),
        opts: opts.clone(),
    };
    let (first, last) = if opts.command.shares_rows() {
        (0, opts.per_client_rows)
    } else {
        (start_offset, start_offset + opts.per_client_rows)
    };
    let period = match opts.command {
        Command::RandomRead => opts.per_client_rows / 10,
        Command::RandomSeekScan | Command::ScanRange(_) => opts.per_client_rows / 100,
        _ => opts.period,
    };
    let period = if period == 0 {
        opts.per_client_rows
    } else {
        period
    };

    out.line(format!("Timed test starting in thread TestClient-{index}"));
    let started = Instant::now();
    let mut latencies = Reservoir::default();
    let mut over_threshold = 0;
    for cycle in 0..opts.cycles {
        if opts.cycles > 1 {
            out.line(format!("Cycle={cycle} of {}", opts.cycles));
        }
        for i in first..last {
            if i % every_n != 0 {
                continue;
            }
            let t0 = Instant::now();
            let sent = w.test_row(i, &out).await?;
            if (i - first) > opts.measure_after {
                if sent {
                    let us = t0.elapsed().as_micros() as i64;
                    latencies.update(us);
                    if opts.latency_threshold_ms > 0
                        && us as u64 / 1000 >= opts.latency_threshold_ms
                    {
                        over_threshold += 1;
                    }
                }
                if i > 0 && i % period == 0 {
                    // HBase 2.6's progress line (older releases printed `start/i/last, …`).
                    let mut status = format!(
                        "row [start={first}, current={i}, last={last}], latency [{}]",
                        short_histogram_report(&latencies.snapshot())
                    );
                    if opts.value_random {
                        status.push_str(&format!(
                            ", value size [{}]",
                            short_histogram_report(&w.value_sizes.snapshot())
                        ));
                    }
                    out.line(status);
                }
            }
        }
    }
    w.take_down().await?;
    let duration_ms = started.elapsed().as_millis() as u64;

    let snapshot = latencies.snapshot();
    let mut block = format!(
        "Test : {}, Thread : TestClient-{index}\nLatency (us) : {}\nNum measures (latency) : {}\n{}",
        opts.class_name,
        histogram_report(&snapshot),
        latencies.count(),
        pretty_histogram_report(&snapshot)
    );
    if w.value_sizes.count() > 0 {
        let sizes = w.value_sizes.snapshot();
        block.push_str(&format!(
            "\nValueSize (bytes) : {}\nNum measures (ValueSize): {}\n{}",
            histogram_report(&sizes),
            w.value_sizes.count(),
            pretty_histogram_report(&sizes)
        ));
    } else {
        block.push_str("\nNo valueSize statistics available");
    }
    block.push_str(&w.scan_metrics.report());
    out.line(block);
    let sampled_rows = (opts.per_client_rows as f32 * opts.sample_rate) as u64;
    out.line(format!(
        "Finished {class} in {duration_ms}ms at offset {start_offset} for {} rows ({})",
        opts.per_client_rows,
        mbps(
            sampled_rows,
            duration_ms,
            opts.average_value_length(),
            opts.families,
            opts.columns
        )
    ));
    Ok(ClientResult {
        duration_ms,
        latency: snapshot,
        over_threshold,
    })
}

impl Worker {
    fn families(&self) -> impl Iterator<Item = Bytes> {
        (0..self.opts.families).map(|f| Bytes::from(Options::family(f)))
    }

    fn qualifiers(&self) -> impl Iterator<Item = Bytes> {
        (0..self.opts.columns).map(|c| Bytes::from(Options::qualifier(c)))
    }

    fn random_row(&mut self) -> u32 {
        self.rng.random_range(0..i32::MAX as u32) % self.opts.total_rows
    }

    fn value_length(&mut self) -> usize {
        if self.opts.value_random {
            self.rng.random_range(0..self.opts.value_size) as usize
        } else {
            self.opts.value_size as usize
        }
    }

    fn record_result(&mut self, row: Option<&RowResult>) {
        if !self.opts.value_random {
            return;
        }
        if let Some(r) = row {
            let size: usize = r.cells.iter().map(|c| c.value().len()).sum();
            self.value_sizes.update(size as i64);
        }
    }

    fn get(&self, row: Bytes) -> Get {
        let mut get = Get::new(row);
        for family in self.families() {
            if self.opts.add_columns {
                for q in self.qualifiers() {
                    get = get.column(family.clone(), q);
                }
            } else {
                get = get.family(family);
            }
        }
        get
    }

    fn scan(&self) -> Scan {
        let mut scan = Scan::new()
            .caching(self.opts.caching)
            .cache_blocks(self.opts.cache_blocks);
        for family in self.families() {
            if self.opts.add_columns {
                for q in self.qualifiers() {
                    scan = scan.column(family.clone(), q);
                }
            } else {
                scan = scan.family(family);
            }
        }
        scan
    }

    /// Reads every row of `scan` and samples its scan metrics (as PerformanceEvaluation's
    /// range, seek and filter scans do).
    async fn drain(&mut self, scan: Scan) -> Result<u64, PeError> {
        let mut stream = self.table.scan(scan.scan_metrics(true));
        let mut rows = 0;
        while let Some(r) = stream.next().await {
            let r = r?;
            self.record_result(Some(&r));
            rows += 1;
        }
        if let Some(m) = stream.metrics() {
            self.scan_metrics.update(&m);
        }
        Ok(rows)
    }

    /// One row of the test; false when the request was only queued (multiGet, multiPut).
    async fn test_row(&mut self, i: u32, out: &Output) -> Result<bool, PeError> {
        let opts = self.opts.clone();
        match opts.command {
            Command::SequentialWrite | Command::RandomWrite => {
                let row = if opts.command == Command::RandomWrite {
                    format_row(self.random_row())
                } else {
                    format_row(i)
                };
                let mut put = Put::new(row).durability(if opts.write_to_wal {
                    Durability::SyncWal
                } else {
                    Durability::SkipWal
                });
                let families: Vec<Bytes> = self.families().collect();
                let qualifiers: Vec<Bytes> = self.qualifiers().collect();
                for family in &families {
                    for q in &qualifiers {
                        let len = self.value_length();
                        let value = generate_data(&mut self.rng, len);
                        if opts.value_random {
                            self.value_sizes.update(len as i64);
                        }
                        put = put.add(family.clone(), q.clone(), value);
                    }
                }
                if let Some(m) = &self.mutator {
                    m.mutate(put).await?;
                } else if opts.multi_put > 0 {
                    self.puts.push(Action::Put(put));
                    if self.puts.len() < opts.multi_put as usize {
                        return Ok(false);
                    }
                    let puts = std::mem::take(&mut self.puts);
                    for r in self.table.batch(&puts).await {
                        r?;
                    }
                } else {
                    self.table.put(put).await?;
                }
            }
            Command::SequentialRead => {
                let r = self.table.get(self.get(format_row(i))).await?;
                self.record_result(r.as_ref());
            }
            Command::RandomRead => {
                if opts.random_sleep_ms > 0 {
                    let ms = self.rng.random_range(0..opts.random_sleep_ms);
                    tokio::time::sleep(Duration::from_millis(ms as u64)).await;
                }
                let row = self.random_row();
                let get = self.get(format_row(row));
                if opts.multi_get > 0 {
                    self.gets.push(Action::Get(get));
                    if self.gets.len() < opts.multi_get as usize {
                        return Ok(false);
                    }
                    let gets = std::mem::take(&mut self.gets);
                    for r in self.table.batch(&gets).await {
                        if let hbase_client::ActionResult::Row(row) = r? {
                            self.record_result(row.as_ref());
                        }
                    }
                } else {
                    let r = self.table.get(get).await?;
                    self.record_result(r.as_ref());
                }
            }
            Command::Scan => {
                if self.scanner.is_none() {
                    let scan = self.scan().start_row(format_row(opts.start_row));
                    self.scanner = Some(self.table.scan(scan));
                }
                let next = self.scanner.as_mut().expect("opened above").next().await;
                if let Some(r) = next {
                    let r = r?;
                    self.record_result(Some(&r));
                }
            }
            Command::ScanRange(range) => {
                let start = self.random_row();
                let (first, stop) = (format_row(start), format_row(start + range));
                let scan = self.scan().start_row(first.clone()).stop_row(stop.clone());
                let rows = self.drain(scan).await?;
                if i % 100 == 0 {
                    out.line(format!(
                        "Scan for key range {} - {} returned {rows} rows",
                        String::from_utf8_lossy(&first),
                        String::from_utf8_lossy(&stop)
                    ));
                }
            }
            Command::RandomSeekScan => {
                let start = self.random_row();
                let scan = self
                    .scan()
                    .start_row(format_row(start))
                    .filter(Filter::All(vec![Filter::Page(120)]));
                self.drain(scan).await?;
            }
            Command::FilterScan => {
                let len = self.value_length();
                let value = generate_data(&mut self.rng, len);
                let filter = Filter::All(vec![Filter::SingleColumnValue {
                    family: Bytes::from(Options::family(0)),
                    qualifier: Bytes::from(Options::qualifier(0)),
                    op: CompareOp::Equal,
                    comparator: Comparator::Binary(value),
                    filter_if_missing: false,
                    latest_version_only: true,
                }]);
                let mut scan = Scan::new()
                    .caching(opts.caching)
                    .cache_blocks(opts.cache_blocks)
                    .filter(filter);
                let family0 = Bytes::from(Options::family(0));
                if opts.add_columns {
                    for q in self.qualifiers() {
                        scan = scan.column(family0.clone(), q);
                    }
                } else {
                    scan = scan.family(family0);
                }
                self.drain(scan).await?;
            }
            Command::Increment => {
                let mut inc = Increment::new(format_row(i));
                for family in self.families() {
                    inc = inc.add(family, self.cas_qualifier.clone(), 1);
                }
                let r = self.table.increment(inc).await?;
                self.record_result(Some(&r));
            }
            Command::Append => {
                let row = format_row(i);
                let mut append = Append::new(row.clone());
                for family in self.families() {
                    append = append.add(family, self.cas_qualifier.clone(), row.clone());
                }
                let r = self.table.append(append).await?;
                self.record_result(Some(&r));
            }
            Command::CheckAndMutate | Command::CheckAndPut | Command::CheckAndDelete => {
                let row = format_row(i);
                let family0 = Bytes::from(Options::family(0));
                let q = self.cas_qualifier.clone();
                let put = Put::new(row.clone()).add(family0.clone(), q.clone(), row.clone());
                self.table.put(put.clone()).await?;
                let check = CheckAndMutate::new(row.clone(), family0.clone(), q.clone())
                    .if_equals(row.clone());
                let check = if opts.command == Command::CheckAndDelete {
                    check.then_delete(Delete::new(row).column(family0, q))
                } else {
                    // checkAndMutate wraps the put in RowMutations in PerformanceEvaluation;
                    // one put in RowMutations is the same write as the put itself.
                    check.then_put(put)
                };
                self.table.check_and_mutate(check).await?;
            }
        }
        Ok(true)
    }

    /// What PerformanceEvaluation does before it stops the clock: sends queued gets and
    /// puts, closes the scanner, and closes (flushes) the mutator.
    async fn take_down(&mut self) -> Result<(), PeError> {
        if !self.gets.is_empty() {
            let gets = std::mem::take(&mut self.gets);
            for r in self.table.batch(&gets).await {
                r?;
            }
        }
        if !self.puts.is_empty() {
            let puts = std::mem::take(&mut self.puts);
            for r in self.table.batch(&puts).await {
                r?;
            }
        }
        self.scanner = None;
        if let Some(m) = self.mutator.take() {
            m.close().await?;
        }
        Ok(())
    }
}
