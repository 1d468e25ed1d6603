//! `pe`: HBase's PerformanceEvaluation on `hbase-client`.
//!
//! The tests of section 7 of the BigTable paper as HBase ships them (`sequentialWrite`,
//! `randomWrite`, `randomRead`, `sequentialRead`, `scan`, `scanRange10`…, `randomSeekScan`,
//! `increment`, `append`, `checkAndMutate`, `filterScan`, …), with PerformanceEvaluation's
//! command line (`pe [--rows=N] [--nomapred] [--presplit=N] [--valueSize=1000] <command>
//! <nclients>`), its table (`TestTable`, families `info0…`, qualifier `0`, 26-digit
//! zero-padded keys, 1,000-byte values) and its report lines: per client a latency block and
//! `Finished … in …ms at offset … for … rows (… MB/s)`, and for the run the summary of
//! timings, `[… duration ]`, `[ Avg latency (us)]` and `[ Avg TPS/QPS]`.
//!
//! Differences on purpose: clients always run as tasks in one process (there is no
//! MapReduce mode; `--nomapred` is implied), lines are printed without log4j's timestamp
//! prefix, and the options this client cannot honour (`--filterAll`, tags, replicas, split
//! policies, `--valueZipf`) are refused with an error instead of being accepted.

#![warn(missing_docs)]

pub mod client;
pub mod command;
pub mod histogram;
pub mod options;
pub mod report;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hbase_client::admin::{ColumnFamily, TableDescriptor};
use hbase_client::{Client, ClientConfig, TableName};

use crate::client::{format_row, run_one_client, ClientResult};
use crate::options::{Options, Parsed};

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeError {
    /// The command line is wrong; the message names what.
    #[error("{0}")]
    Usage(String),
    /// The table is missing or unusable for the command.
    #[error("{0}")]
    Table(String),
    /// The HBase client failed.
    #[error("{0}")]
    Client(#[from] hbase_client::Error),
    /// A client task died.
    #[error("client task failed: {0}")]
    Task(String),
}

/// Receives each report line as it is produced.
pub type LineSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Where report lines go: collected for the caller and, optionally, handed to a sink as they
/// are produced (the binary prints them; tests only collect).
#[derive(Clone)]
pub struct Output {
    lines: Arc<Mutex<Vec<String>>>,
    sink: Option<LineSink>,
}

impl Output {
    /// Collects lines and passes each to `sink` too, if given.
    pub fn new(sink: Option<LineSink>) -> Output {
        Output {
            lines: Arc::new(Mutex::new(Vec::new())),
            sink,
        }
    }

    /// Adds one line (or a block of lines, kept together).
    pub fn line(&self, line: impl Into<String>) {
        let line = line.into();
        if let Some(sink) = &self.sink {
            sink(&line);
        }
        self.lines.lock().expect("output lock").push(line);
    }

    /// Everything written so far, one line per entry joined by newlines.
    pub fn text(&self) -> String {
        let mut s = self.lines.lock().expect("output lock").join("\n");
        s.push('\n');
        s
    }
}

/// Runs PerformanceEvaluation with `args` (without the program name) and returns its report.
pub async fn execute(args: &[String], out: Output) -> Result<String, PeError> {
    let opts = match options::parse(args)? {
        Parsed::Help => {
            out.line(options::usage());
            return Ok(out.text());
        }
        Parsed::Run(o) => Arc::new(*o),
    };
    for note in &opts.notes {
        out.line(note.clone());
    }
    out.line(format!(
        "{} test run options={}",
        opts.class_name,
        options::options_json(&opts)
    ));
    if !opts.nomapred {
        out.line("Note: no MapReduce mode here; clients run as tasks (as with --nomapred)");
    }
    let mut builder = ClientConfig::builder(opts.zk.clone());
    if let Some(map) = &opts.address_map {
        let map = hbase_client::AddressMap::parse(map)
            .map_err(|e| PeError::Usage(format!("address map (HBASE_ADDRESS_MAP): {e}")))?;
        builder = builder.address_mapper(map.into_mapper());
    }
    let config = builder.build()?;
    let mut clients = Vec::with_capacity(opts.conn_count as usize);
    for _ in 0..opts.conn_count {
        clients.push(Client::connect(config.clone()).await?);
    }
    check_table(&clients[0], &opts, &out).await?;
    out.line(format!(
        "Created {} connections for {} threads",
        opts.conn_count, opts.clients
    ));

    let mut tasks = Vec::with_capacity(opts.clients as usize);
    for index in 0..opts.clients {
        let client = clients[(index % opts.conn_count) as usize].clone();
        let (opts, out) = (opts.clone(), out.clone());
        tasks.push(tokio::spawn(async move {
            let result = run_one_client(index, client, opts.clone(), out.clone()).await?;
            out.line(format!(
                "Finished TestClient-{index} in {}ms over {} rows",
                result.duration_ms, opts.per_client_rows
            ));
            if opts.latency_threshold_ms > 0 {
                out.line(format!(
                    "Number of replies over latency threshold {}(ms) is {}",
                    opts.latency_threshold_ms, result.over_threshold
                ));
            }
            Ok::<ClientResult, PeError>(result)
        }));
    }
    let mut results = Vec::with_capacity(tasks.len());
    let mut first_error = None;
    for task in tasks {
        match task.await {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(e) => {
                first_error.get_or_insert(PeError::Task(e.to_string()));
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    summarize(&opts, &mut results, &out);
    Ok(out.text())
}

fn summarize(opts: &Options, results: &mut [ClientResult], out: &Output) {
    let test = opts.class_name;
    let timings: Vec<String> = results.iter().map(|r| r.duration_ms.to_string()).collect();
    out.line(format!(
        "[{test}] Summary of timings (ms): [{}]",
        timings.join(", ")
    ));
    results.sort_by_key(|r| r.duration_ms);
    let total: u64 = results.iter().map(|r| r.duration_ms).sum();
    // PerformanceEvaluation sums these in single precision; so do we, for the same rounding.
    let mut avg_latency = 0f32;
    let mut avg_tps = 0f32;
    for r in results.iter() {
        avg_latency += r.latency.mean() as f32;
        avg_tps += opts.per_client_rows as f32 / r.duration_ms as f32;
    }
    avg_tps *= 1000.0;
    avg_latency /= results.len() as f32;
    out.line(format!(
        "[{test} duration ]\tMin: {}ms\tMax: {}ms\tAvg: {}ms",
        results[0].duration_ms,
        results[results.len() - 1].duration_ms,
        total / results.len() as u64
    ));
    out.line(format!(
        "[ Avg latency (us)]\t{}",
        avg_latency.round() as i32
    ));
    out.line(format!(
        "[ Avg TPS/QPS]\t{}\t row per second",
        avg_tps.round() as i32
    ));
}

/// Creates the table if needed, as PerformanceEvaluation does: read commands need it to
/// exist; `--presplit` or a different family count recreates it.
async fn check_table(client: &Client, opts: &Options, out: &Output) -> Result<(), PeError> {
    let admin = client.admin();
    let name = TableName::parse(&opts.table)?;
    let exists = admin.table_exists(&name).await?;
    let lower = opts.cmd_name.to_ascii_lowercase();
    let is_read = lower.contains("read") || lower.contains("scan");
    if !exists && is_read {
        return Err(PeError::Table(format!(
            "Must specify an existing table for read commands. Run a write command first. \
             (table {} does not exist)",
            opts.table
        )));
    }
    let mut needs_delete = exists && opts.presplit != 0;
    if exists && !needs_delete {
        let desc = admin.describe_table(&name).await?;
        needs_delete = desc.families().len() != opts.families as usize;
    }
    if needs_delete {
        if admin.is_table_enabled(&name).await? {
            admin.disable_table(&name).await?;
        }
        admin.delete_table(&name).await?;
    }
    if !exists || needs_delete {
        let mut desc = TableDescriptor::new(name.clone());
        for f in 0..opts.families {
            let mut family = ColumnFamily::new(Options::family(f))
                .compression(opts.compression.clone())
                .block_encoding(opts.block_encoding.clone())
                .bloom_filter(opts.bloom.clone())
                .in_memory(opts.in_memory);
            if let Some(size) = opts.block_size {
                family = family.block_size(size);
            }
            desc = desc.family(family);
        }
        admin.create_table(&desc, &split_keys(opts)).await?;
        // As PerformanceEvaluation logs it: the table and its families' settings, here as
        // the master reports them back.
        let created = admin.describe_table(&name).await?;
        let families: Vec<String> = created
            .families()
            .iter()
            .map(|f| {
                let mut s = format!("{{NAME => '{}'", String::from_utf8_lossy(f.name()));
                for (k, v) in f.attributes() {
                    s.push_str(&format!(", {k} => '{v}'"));
                }
                s.push('}');
                s
            })
            .collect();
        out.line(format!("Table '{name}', {} created", families.join(", ")));
    }
    Ok(())
}

/// `--presplit=N`: N − 1 keys, every `total_rows / N` rows.
fn split_keys(opts: &Options) -> Vec<Bytes> {
    if opts.presplit == 0 {
        return Vec::new();
    }
    let jump = opts.total_rows / opts.presplit;
    (1..opts.presplit).map(|i| format_row(jump * i)).collect()
}
