//! A YCSB-compatible benchmark driver for HBase, on the async `hbase-client`.
//!
//! `ycsb load` and `ycsb run` take YCSB's options and properties and print YCSB's report;
//! each YCSB "thread" is a tokio task. [`execute`] runs one command line and returns the
//! report, which is what the binary prints and what the integration tests check.

#![warn(missing_docs)]

pub mod basic;
pub mod carver;
pub mod cli;
pub mod db;
pub mod generator;
pub mod hbase;
pub mod hdr_log;
pub mod java;
pub mod measurements;
pub mod merge;
pub mod pacer;
pub mod plot;
pub mod props;
pub mod runner;
pub mod series;
pub mod shell;
pub mod sweep;
pub mod usage;
pub mod util;
pub mod wakeup_coalescing;
pub mod workload;
pub mod workloads;

use std::sync::Arc;
use std::time::{Duration, Instant};

use basic::BasicDb;
use cli::{build_properties, Command, CommonArgs};
use db::{Db, MemoryDb};
use measurements::{Exporter, MeasurementConfig, Measurements};
use props::Properties;
use runner::{RunConfig, RunResult};
use workload::CoreWorkload;

/// Everything that can stop a command. Each prints as one line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--help` or `--version`: the text to print (not a failure).
    #[error("{0}")]
    Help(String),
    /// The command line could not be parsed.
    #[error("{0}")]
    Usage(String),
    /// A property or workload file is wrong.
    #[error("{0}")]
    Config(String),
    /// The cluster could not be reached.
    #[error("{0}")]
    Connect(String),
    /// HBase refused something during setup.
    #[error("{0}")]
    Hbase(String),
    /// Writing the report failed.
    #[error("{0}")]
    Io(String),
    /// A client thread panicked: the run has no valid result.
    #[error("{0}")]
    Worker(String),
}

/// What a command produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// What goes to stdout: the report, unless `exportfile` took it.
    pub stdout: String,
    /// The run's numbers (load and run only).
    pub result: Option<RunResult>,
    /// Set when the run was reported but did not do all its work (threads stopped after
    /// failed inserts): the binary prints the report, then this, and exits non-zero.
    pub failed: Option<String>,
}

/// The binding names that mean HBase.
pub const HBASE_BINDINGS: [&str; 9] = [
    "hbase", "hbase1", "hbase10", "hbase12", "hbase14", "hbase2", "hbase20", "hbase22", "hbase26",
];

enum Binding {
    Hbase,
    Memory,
    Basic,
}

/// True for the names of YCSB's `BasicDB` (`basic`, `site.ycsb.BasicDB`, …).
pub fn binding_is_basic(name: &str) -> bool {
    let simple = name
        .trim()
        .rsplit('.')
        .next()
        .unwrap_or(name)
        .to_ascii_lowercase();
    simple == "basic" || simple == "basicdb"
}

fn binding(p: &Properties) -> Result<Binding, Error> {
    match p.get("db").map(str::trim) {
        None | Some("") => Ok(Binding::Hbase),
        Some(name) => {
            let simple = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
            if HBASE_BINDINGS.contains(&simple.as_str())
                || simple.starts_with("hbase") && simple.ends_with("client")
                || simple.starts_with("hbaseclient")
            {
                Ok(Binding::Hbase)
            } else if simple == "memory" {
                Ok(Binding::Memory)
            } else if binding_is_basic(name) {
                Ok(Binding::Basic)
            } else {
                Err(Error::Config(format!(
                    "unknown binding {name:?}: this driver speaks HBase (hbase, hbase2, hbase20, …), `basic` (YCSB's BasicDB) or `memory` (a dry run)"
                )))
            }
        }
    }
}

/// Set by [`main_with_args`]: this process is a `ycsb` command line, so `ycsb sweep` may run
/// its points in this same program.
static STARTED_AS_CLI: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True when this process was started through [`main_with_args`] (a `ycsb` binary).
pub fn started_as_cli() -> bool {
    STARTED_AS_CLI.load(std::sync::atomic::Ordering::Relaxed)
}

/// Runs the binary with `args` (without the program name) and returns the exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    STARTED_AS_CLI.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut builder = match std::env::var_os("TOKIO_WORKER_THREADS") {
        // One worker: the thread that runs `main` runs every task (see `default_workers`).
        None => match default_workers() {
            1 => tokio::runtime::Builder::new_current_thread(),
            n => {
                let mut b = tokio::runtime::Builder::new_multi_thread();
                b.worker_threads(n);
                b
            }
        },
        Some(_) => tokio::runtime::Builder::new_multi_thread(),
    };
    let rt = match wakeup_coalescing::build_runtime(builder.enable_all()) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ycsb: error: cannot start the runtime: {e}");
            return 1;
        }
    };
    let res = rt.block_on(execute(&args));
    // Let the client's background tasks go without waiting for them.
    rt.shutdown_timeout(Duration::from_millis(200));
    match res {
        Ok(out) => {
            print!("{}", out.stdout);
            match out.failed {
                Some(why) => {
                    eprintln!("ycsb: error: {why}");
                    1
                }
                None => 0,
            }
        }
        Err(Error::Help(text)) => {
            print!("{text}");
            0
        }
        Err(Error::Usage(text)) => {
            eprint!("{text}");
            2
        }
        Err(e) => {
            eprintln!("ycsb: error: {e}");
            1
        }
    }
}

/// Worker threads of the client's runtime unless `TOKIO_WORKER_THREADS` says otherwise: half
/// the CPUs this process may use, at least one. A worker that finds the run queue of another
/// busy wakes a sleeping one to steal from it, and on a lightly loaded client each such
/// hand-over costs a futex wake and two context switches: with HBase on the same 2 cores,
/// one worker instead of two took workload C at 32 threads from 17.8 to 13.9 us of client
/// CPU a read (0.79x, throughput 1.08x) and workload A from 14.4 to 11.1 (0.77x, 1.04x),
/// medians of 4 paired runs (README, Round 6). A worker serves about 100,000 operations a
/// second; the other half of the CPUs is the kernel's network work and any server beside.
///
/// One worker is tokio's current-thread runtime: its run queue has no capacity to overflow
/// (the multi-thread one's local queue holds 256 tasks, and with thousands of runnable tasks
/// the rest go through its shared injection queue and back) and no work-stealing to check.
fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// The `-cp` entries (`:`-separated, repeatable).
fn classpath(c: &CommonArgs) -> Vec<String> {
    c.classpath
        .iter()
        .flat_map(|cp| cp.split(':'))
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

fn note_jvm_args(c: &CommonArgs) {
    if !c.jvm_args.is_empty() {
        eprintln!(
            "ycsb: -jvm-args {} ignored: this driver has no JVM",
            c.jvm_args.join(" ")
        );
    }
}

/// Runs one command line (without the program name).
pub async fn execute(args: &[String]) -> Result<Outcome, Error> {
    let inv = cli::parse(args)?;
    match inv.command {
        Command::Load(c) => run_phase(&c, &inv.cli_props, false, args).await,
        Command::Run(c) => run_phase(&c, &inv.cli_props, true, args).await,
        Command::Shell(c) => run_shell(&c, &inv.cli_props).await,
        Command::Merge(m) => merge_runs(&m.dirs, m.out.as_deref(), &inv.cli_props),
        Command::Plot(pl) => sweep::plot(&pl.dirs, &pl.out),
        Command::Sweep(sw) => {
            // Only the command line's own properties: the workload files differ per point.
            let p = build_properties(&[], &inv.cli_props)?;
            sweep::sweep(args, &p, &classpath(&sw.common)).await
        }
        Command::CatalogJanitor(c) => {
            note_jvm_args(&c);
            let p = build_properties(&c.files, &inv.cli_props)?;
            let client = hbase::connect(&p, &classpath(&c)).await?;
            let ran = client
                .admin()
                .run_catalog_janitor()
                .await
                .map_err(|e| Error::Hbase(format!("cannot run the catalog janitor: {e}")))?;
            Ok(Outcome {
                stdout: match ran {
                    Some(n) => format!(
                        "catalog janitor ran: {n} merged or split parent region(s) to clean up\n"
                    ),
                    None => "catalog janitor already running on the master\n".to_string(),
                },
                ..Outcome::default()
            })
        }
        Command::CreateTable(c) => {
            note_jvm_args(&c.common);
            let p = build_properties(&c.common.files, &inv.cli_props)?;
            let regions: i64 = c.regions.trim().parse().map_err(|_| {
                Error::Config(format!(
                    "--regions {:?} is not a whole number (accepted: 1 to {})",
                    c.regions,
                    hbase::MAX_REGIONS
                ))
            })?;
            hbase::column_family(&p)?;
            hbase::split_keys(&p, regions)?;
            let client = hbase::connect(&p, &classpath(&c.common)).await?;
            let table = p.get_or("table", "usertable").trim().to_string();
            let created = hbase::create_table(&client, &p, regions).await?;
            let msg = if created {
                format!("created table {table} with {regions} regions\n")
            } else {
                format!("table {table} already exists; left as it is\n")
            };
            Ok(Outcome {
                stdout: msg,
                ..Outcome::default()
            })
        }
    }
}

async fn run_shell(c: &CommonArgs, cli_props: &[(String, String)]) -> Result<Outcome, Error> {
    note_jvm_args(c);
    let p = build_properties(&c.files, cli_props)?;
    let table = p.get_or("table", "usertable").trim().to_string();
    let binding = binding(&p)?;
    shell::print_banner();
    match binding {
        Binding::Basic => shell::run(BasicDb::new(&p)?, table).await,
        Binding::Memory => shell::run(MemoryDb::new(), table).await,
        Binding::Hbase => {
            // Each command is applied when it is typed, not at exit.
            let mut p = p;
            if !p.contains("clientbuffering") {
                p.set("clientbuffering", "false");
            }
            let client = hbase::connect(&p, &classpath(c)).await?;
            let db = hbase::HbaseDb::open(&client, &p, false, hbase::PutKinds::ByRows).await?;
            shell::run(db, table).await
        }
    }
}

/// `ycsb merge DIR...`.
fn merge_runs(
    dirs: &[String],
    html: Option<&str>,
    cli_props: &[(String, String)],
) -> Result<Outcome, Error> {
    let mut p = Properties::new();
    for (k, v) in cli_props {
        p.set(k.clone(), v.clone());
    }
    let percentiles = measurements::parse_percentiles(p.get_or(
        "hdrhistogram.percentiles",
        measurements::DEFAULT_PERCENTILES,
    ))?;
    let exporter_s = p.get_or(
        "exporter",
        "site.ycsb.measurements.exporter.TextMeasurementsExporter",
    );
    let exporter = Exporter::parse(exporter_s)
        .ok_or_else(|| Error::Config(format!("unknown exporter {exporter_s:?}")))?;
    let runs = dirs
        .iter()
        .map(|d| merge::read_run(std::path::Path::new(d)))
        .collect::<Result<Vec<_>, _>>()?;
    let report = exporter.render(&merge::merge(&runs, &percentiles)?);
    if let Some(path) = html {
        std::fs::write(path, plot::merged_report_html(&runs)?)
            .map_err(|e| Error::Io(format!("cannot write {path:?}: {e}")))?;
    }
    let stdout = match p.get("exportfile").map(str::trim) {
        Some(path) if !path.is_empty() => {
            std::fs::write(path, &report)
                .map_err(|e| Error::Io(format!("cannot write exportfile {path:?}: {e}")))?;
            String::new()
        }
        _ => report,
    };
    Ok(Outcome {
        stdout,
        ..Outcome::default()
    })
}

/// Per-region-server counters of the run (`[RS host:port], Calls, n`, …): the difference of
/// two client snapshots.
fn server_breakdown(
    before: &hbase_client::StatsSnapshot,
    after: &hbase_client::StatsSnapshot,
) -> Vec<measurements::ReportLine> {
    let mut lines = Vec::new();
    for s in &after.servers {
        if before.server(&s.server) == Some(s) {
            continue; // not used during the run (the master, for one)
        }
        let zero = hbase_client::ServerStats::default();
        let b = before.server(&s.server).unwrap_or(&zero);
        let metric = format!("RS {}", s.server);
        for (name, now, then) in [
            ("Calls", s.calls, b.calls),
            ("MultiCalls", s.multi_calls, b.multi_calls),
            ("Errors", s.errors, b.errors),
            ("Retries", s.retries, b.retries),
            ("Relocations", s.relocations, b.relocations),
            ("BytesSent", s.bytes_sent, b.bytes_sent),
            ("BytesReceived", s.bytes_received, b.bytes_received),
        ] {
            lines.push(measurements::ReportLine {
                metric: metric.clone(),
                measurement: name.to_string(),
                value: measurements::Value::Int(now.saturating_sub(then) as i64),
            });
        }
    }
    lines
}

/// Writes `text` to `path`, naming the property that asked for it on failure.
fn write_file(what: &str, path: &str, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::Io(format!("cannot write {what} {path:?}: {e}")))
}

/// A load or run, checked: every property parsed and within its range, the workload built,
/// nothing connected, nothing written.
struct Prepared {
    p: Properties,
    threads: i64,
    target: f64,
    opcount: i64,
    exporter: Exporter,
    export_file: Option<String>,
    status_interval: i64,
    max_exec: i64,
    warmup: i64,
    coalesce_us: i64,
    artifacts: Option<String>,
    file_output: bool,
    hdr_path: String,
    status: bool,
    label: String,
    seed: Option<u64>,
    create: bool,
    presplit: i64,
    measurements: Arc<Measurements>,
    workload: Arc<CoreWorkload>,
    binding: Binding,
    conf_dirs: Vec<String>,
    family: Option<String>,
    basic: Option<BasicDb>,
    /// `regionserver.breakdown`: the per-server lines go into the report too.
    breakdown: bool,
}

/// Checks a command line without running anything: for `load` and `run`, every property and
/// file, as the run would before connecting. Other commands only parse.
pub fn check_command_line(args: &[String]) -> Result<(), Error> {
    let inv = cli::parse(args)?;
    match inv.command {
        Command::Load(c) => prepare(&c, &inv.cli_props, false).map(|_| ()),
        Command::Run(c) => prepare(&c, &inv.cli_props, true).map(|_| ()),
        _ => Ok(()),
    }
}

/// Whether `name` is a file a run writes into its `artifacts.dir`: its interval logs, report,
/// process and server figures.
pub(crate) fn is_run_artifact(name: &str) -> bool {
    name.ends_with(".hdr") || matches!(name, "report.txt" | "process.txt" | "servers.txt")
}

/// Removes the files of `dir` (not its subdirectories) whose names `ours` accepts; returns how
/// many.
pub(crate) fn remove_files(
    dir: &std::path::Path,
    ours: impl Fn(&str) -> bool,
) -> Result<usize, Error> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::Io(format!("cannot read {}: {e}", dir.display())))?;
    let mut removed = 0;
    for entry in entries.flatten() {
        if ours(&entry.file_name().to_string_lossy()) && entry.path().is_file() {
            std::fs::remove_file(entry.path())
                .map_err(|e| Error::Io(format!("cannot remove {}: {e}", entry.path().display())))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes what an earlier run left in `artifacts.dir`, as a run starts: a directory holds one
/// run's artifacts, and `ycsb merge` reads every `.hdr` in it (a load's logs left beside a run's
/// added a phantom INSERT block and moved the run's start). Other files are left alone.
fn clear_artifacts(dir: &str) -> Result<(), Error> {
    let removed = remove_files(std::path::Path::new(dir), is_run_artifact)?;
    if removed > 0 {
        eprintln!("artifacts.dir {dir}: removed {removed} files of an earlier run");
    }
    Ok(())
}

/// Fails, naming the property `what`, when `path` cannot be written. A file made for the check
/// is removed again.
fn check_writable(what: &str, path: &str) -> Result<(), Error> {
    let existed = std::path::Path::new(path).exists();
    match std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(Error::Config(format!(
            "{what}={path:?} cannot be written: {e}"
        ))),
    }
}

fn prepare(
    c: &CommonArgs,
    cli_props: &[(String, String)],
    transactions: bool,
) -> Result<Prepared, Error> {
    let mut p = build_properties(&c.files, cli_props)?;
    // As YCSB's -load / -t set it: BasicDB prints it among the properties.
    p.set(
        "dotransactions",
        if transactions { "true" } else { "false" },
    );

    // Check everything before connecting: bad input writes nothing.
    let threads = p.i64_in("threadcount", 1, 1, MAX_THREADS)?;
    let target = p.f64_in("target", 0.0, 0.0, 1e9)?;
    let int_max = i32::MAX as i64;
    let opcount = if transactions {
        p.i64_in("operationcount", 0, 0, int_max)?
    } else if p.contains("insertcount") {
        p.i64_in("insertcount", 0, 0, int_max)?
    } else {
        p.i64_in("recordcount", 0, 0, int_max)?
    };
    let mut mconfig = MeasurementConfig::from_properties(&p)?;
    let exporter_s = p.get_or(
        "exporter",
        "site.ycsb.measurements.exporter.TextMeasurementsExporter",
    );
    let exporter = Exporter::parse(exporter_s).ok_or_else(|| {
        Error::Config(format!(
            "exporter={exporter_s:?} is not one of TextMeasurementsExporter, JSONMeasurementsExporter, JSONArrayMeasurementsExporter"
        ))
    })?;
    let export_file = p.get("exportfile").map(|s| s.trim().to_string());
    let status_interval = p.i64_in("status.interval", 10, 1, 31_536_000)?;
    let max_exec = p.i64_in("maxexecutiontime", 0, 0, int_max)?;
    let warmup = p.i64_in("warmuptime", 0, 0, int_max)?;
    let coalesce_us = p.i64_in(wakeup_coalescing::PROPERTY, 0, 0, wakeup_coalescing::MAX_US)?;
    // artifacts.dir=DIR keeps what `ycsb merge` needs: the interval logs and the text report.
    let artifacts = p.get("artifacts.dir").map(|d| d.trim().to_string());
    let file_output = artifacts.is_some() || p.bool_or("hdrhistogram.fileoutput", false)?;
    mconfig.hdr_log = file_output;
    let hdr_path = match &artifacts {
        Some(dir) => format!("{dir}/"),
        None => p.get_or("hdrhistogram.output.path", "").to_string(),
    };
    // Where the report and the measurements go must be writable now: found after the run,
    // an unwritable one cost the whole run (and the report with it).
    if let Some(path) = export_file.as_deref().filter(|f| !f.is_empty()) {
        check_writable("exportfile", path)?;
    }
    let raw = matches!(
        mconfig.kind,
        measurements::MeasurementType::Raw | measurements::MeasurementType::HdrAndRaw
    );
    if let Some(path) = mconfig.raw_output_file.as_ref().filter(|_| raw) {
        check_writable("measurement.raw.output_file", path)?;
    }
    if file_output && artifacts.is_none() {
        check_writable(
            "hdrhistogram.output.path",
            &format!("{hdr_path}ycsb-write-check.hdr"),
        )?;
    }
    let status = p.bool_or("status", false)?;
    let breakdown = p.bool_or("regionserver.breakdown", false)?;
    let label = p.get_or("label", "").to_string();
    let seed = match p.get("seed") {
        Some(_) => Some(p.i64_in("seed", 0, 0, i64::MAX)? as u64),
        None => None,
    };
    let create = p.bool_or("createtable", false)? && !transactions;
    let presplit = p.i64_in("presplit", 10, 1, hbase::MAX_REGIONS)?;

    let measurements = Arc::new(Measurements::with_config(mconfig));
    let workload = Arc::new(CoreWorkload::new(&p, measurements.clone())?);
    if transactions && !workload.has_operations() {
        return Err(Error::Config(
            "the operation proportions sum to 0: set readproportion, updateproportion, insertproportion, scanproportion or readmodifywriteproportion".into(),
        ));
    }

    let binding = binding(&p)?;
    let conf_dirs = classpath(c);
    let mut family = None;
    if let Binding::Hbase = binding {
        family = Some(hbase::column_family(&p)?);
        hbase::client_config(&p, &conf_dirs)?;
        hbase::buffering_choice(&p)?;
        hbase::split_keys(&p, if create { presplit } else { 1 })?;
        p.i64_in("writebuffersize", hbase::DEFAULT_WRITE_BUFFER, 1, 1 << 34)?;
    }
    let basic = match binding {
        Binding::Basic => Some(BasicDb::new(&p)?),
        _ => None,
    };
    Ok(Prepared {
        p,
        threads,
        target,
        opcount,
        exporter,
        export_file,
        status_interval,
        max_exec,
        warmup,
        coalesce_us,
        artifacts,
        file_output,
        hdr_path,
        status,
        label,
        seed,
        create,
        presplit,
        measurements,
        workload,
        binding,
        conf_dirs,
        family,
        basic,
        breakdown,
    })
}

async fn run_phase(
    c: &CommonArgs,
    cli_props: &[(String, String)],
    transactions: bool,
    argv: &[String],
) -> Result<Outcome, Error> {
    note_jvm_args(c);
    let Prepared {
        p,
        threads,
        target,
        opcount,
        exporter,
        export_file,
        status_interval,
        max_exec,
        warmup,
        coalesce_us,
        artifacts,
        file_output,
        hdr_path,
        status,
        label,
        seed,
        create,
        presplit,
        measurements,
        workload,
        binding,
        conf_dirs,
        family,
        basic,
        breakdown,
    } = prepare(c, cli_props, transactions)?;
    if let Some(dir) = &artifacts {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Io(format!("cannot create artifacts.dir {dir:?}: {e}")))?;
    }
    // An earlier run's artifacts go once this run is about to start (a run that cannot
    // connect leaves them as they were).
    let starting = || {
        eprintln!("Starting test.");
        artifacts.as_deref().map_or(Ok(()), clear_artifacts)
    };
    eprintln!("YCSB Client (ycsb-rs {})", env!("CARGO_PKG_VERSION"));
    eprintln!("Command line: {}", argv.join(" "));
    if let Some(cf) = &family {
        let how = if p.contains("columnfamily") {
            "-p columnfamily"
        } else {
            "the default; -p columnfamily=NAME to change"
        };
        eprintln!(
            "HBase table {}, column family {cf} ({how})",
            p.get_or("table", "usertable").trim()
        );
    }
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let workers = handle.metrics().num_workers();
        if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
            eprintln!("Client runtime: 1 thread (TOKIO_WORKER_THREADS=N for N worker threads)");
        } else {
            eprintln!(
                "Client runtime: {workers} worker thread{} (TOKIO_WORKER_THREADS to change)",
                if workers == 1 { "" } else { "s" }
            );
        }
    }
    eprintln!("Loading workload...");
    // RunTime starts here, before the binding connects, as YCSB's clock starts before its
    // threads' DB.init.
    let started = Instant::now();
    let cfg = RunConfig {
        transactions,
        threads: threads as usize,
        target,
        opcount: opcount as u64,
        status,
        status_interval: Duration::from_secs(status_interval as u64),
        label,
        max_execution_time: (max_exec > 0).then(|| Duration::from_secs(max_exec as u64)),
        warmup: (warmup > 0).then(|| Duration::from_secs(warmup as u64)),
        seed,
        started,
    };
    let result = match binding {
        Binding::Memory => {
            starting()?;
            run_workload(&cfg, workload, MemoryDb::new(), &measurements, coalesce_us).await?
        }
        Binding::Basic => {
            starting()?;
            let db = basic.expect("built above");
            run_workload(&cfg, workload, db, &measurements, coalesce_us).await?
        }
        Binding::Hbase => {
            let client = hbase::connect(&p, &conf_dirs).await?;
            if create {
                let table = p.get_or("table", "usertable").trim();
                if hbase::create_table(&client, &p, presplit).await? {
                    eprintln!("Created table {table} with {presplit} regions.");
                }
            }
            let put_kinds =
                hbase::PutKinds::of_workload(workload.field_count(), workload.writes_all_fields());
            let db = hbase::HbaseDb::open(&client, &p, !transactions, put_kinds).await?;
            starting()?;
            let before = client.stats();
            let mut result = run_workload(&cfg, workload, db, &measurements, coalesce_us).await?;
            let servers = server_breakdown(&before, &client.stats());
            if let Some(dir) = &artifacts {
                let path = format!("{dir}/servers.txt");
                write_file("artifacts", &path, &measurements::render_text(&servers))?;
            }
            for chunk in servers.chunks(7) {
                let v: Vec<String> = chunk
                    .iter()
                    .map(|l| match l.value {
                        measurements::Value::Int(i) => format!("{}={i}", l.measurement),
                        measurements::Value::Float(f) => format!("{}={f}", l.measurement),
                    })
                    .collect();
                eprintln!("[{}] {}", chunk[0].metric, v.join(", "));
            }
            if breakdown {
                result.lines.extend(servers);
            }
            result
        }
    };
    for w in &result.warnings {
        eprintln!("ycsb: warning: {w}");
    }
    if file_output {
        for m in measurements.all() {
            let (Some(hdr), Some(name)) = (m.hdr(), m.hdr_name()) else {
                continue;
            };
            let path = std::path::PathBuf::from(format!("{hdr_path}{name}.hdr"));
            measurements::write_hdr_log(
                &path,
                name,
                measurements.base_wall(),
                &measurements.hdr_log(hdr),
            )
            .map_err(|e| Error::Io(format!("cannot write {}: {e}", path.display())))?;
        }
    }
    if let Some(dir) = &artifacts {
        let path = format!("{dir}/report.txt");
        write_file(
            "artifacts",
            &path,
            &measurements::render_text(&result.lines),
        )?;
        let usage = usage::ProcessUsage {
            cpu: result.cpu,
            ops: result.ops,
            peak_rss_kib: usage::peak_rss_kib(),
        };
        write_file("artifacts", &format!("{dir}/process.txt"), &usage.to_text())?;
    }
    let report = exporter.render(&result.lines);
    // What YCSB prints on stdout besides the report (raw measurements), first.
    let mut stdout = measurements.take_stdout();
    match export_file {
        Some(path) if !path.is_empty() => write_file("exportfile", &path, &report)?,
        _ => stdout.push_str(&report),
    }
    let failed = result.incomplete.clone();
    Ok(Outcome {
        stdout,
        result: Some(result),
        failed,
    })
}

/// [`runner::run`], with wakeup coalescing while it runs when `coalesce_us` asks for it.
async fn run_workload<D: Db>(
    cfg: &RunConfig,
    workload: Arc<CoreWorkload>,
    db: D,
    measurements: &Arc<Measurements>,
    coalesce_us: i64,
) -> Result<RunResult, Error> {
    let coalescing = wakeup_coalescing::Coalescing::start(coalesce_us as u64);
    if coalesce_us > 0 && coalescing.is_none() {
        eprintln!(
            "ycsb: warning: {}={coalesce_us} ignored: this runtime was not built by the ycsb command line, or another run of this process coalesces",
            wakeup_coalescing::PROPERTY
        );
    }
    let result = runner::run(cfg, workload, db, measurements.clone()).await;
    if let Some(c) = coalescing {
        eprintln!(
            "Wakeup coalescing: {coalesce_us} us, {} sleeps before the runtime parked",
            c.sleeps()
        );
    }
    result
}

/// Most client threads (tokio tasks) one run accepts.
pub const MAX_THREADS: i64 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ycsb-lib-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_load_with_json_array_exporter_to_file() {
        let dir = tmp("json");
        let file = dir.join("out.json");
        let line = format!(
            "load memory -P workloada -p recordcount=500 -threads 4 -p exporter=site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter -p exportfile={}",
            file.display()
        );
        let out = execute(&args(&line)).await.unwrap();
        assert_eq!(out.stdout, "");
        let json = std::fs::read_to_string(&file).unwrap();
        assert!(json
            .starts_with("[ {\n  \"metric\" : \"OVERALL\",\n  \"measurement\" : \"RunTime(ms)\""));
        assert!(json.contains(
            "\"metric\" : \"INSERT\",\n  \"measurement\" : \"Return=OK\",\n  \"value\" : 500\n}"
        ));
        assert!(
            json.ends_with("} ]"),
            "no newline after the array, as Jackson writes it"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bad_input_writes_nothing() {
        let dir = tmp("bad");
        let file = dir.join("out.txt");
        for bad in [
            "-P workloadz",
            "-P workloada -p requestdistribution=pareto",
            "-P workloada -p operationcount=many",
            "-P workloada -p readproportion=0 -p updateproportion=0",
            "-P workloada -p exporter=XmlExporter",
            "-P workloada -p measurement.interval=sometimes",
            "-P workloada -db cassandra",
        ] {
            let line = format!("run memory {bad} -p exportfile={}", file.display());
            let err = execute(&args(&line)).await.unwrap_err();
            assert!(matches!(err, Error::Config(_)), "{bad}: {err:?}");
            assert!(!err.to_string().contains('\n'), "{err}");
            assert!(!file.exists(), "{bad}");
        }
        // HBase settings are checked before connecting (nothing listens on port 1).
        for (bad, says) in [
            ("-p columnfamily=", "columnfamily"),
            ("-p hbase.rpc.timeout=soon", "hbase.rpc.timeout"),
            ("-p writebuffersize=0", "writebuffersize"),
            (
                "-cp /nonexistent -p zookeeper.znode.parent=hbase",
                "zookeeper.znode.parent",
            ),
        ] {
            let line = format!("run --zk 127.0.0.1:1 -P workloada {bad}");
            let err = execute(&args(&line)).await.unwrap_err();
            assert!(matches!(err, Error::Config(_)), "{bad}: {err:?}");
            assert!(err.to_string().contains(says), "{bad}: {err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn maxexecutiontime_with_unlimited_operations() {
        let t0 = std::time::Instant::now();
        let out = execute(&args(
            "run memory -P workloadc -p operationcount=0 -p maxexecutiontime=1 -threads 2 -target 200",
        ))
        .await
        .unwrap();
        let secs = t0.elapsed().as_secs_f64();
        // Bounds from events, not from this machine's speed: the timer never fires early, and
        // the pacer never runs ahead of 200 operations a second (one each at the start).
        assert!(secs >= 1.0, "{secs}");
        let r = out.result.unwrap();
        assert!(
            r.ops > 0 && r.ops as f64 <= 200.0 * secs + 2.0,
            "{} in {secs} s",
            r.ops
        );
    }

    /// A database whose operations never wait (`memory`, `basic` without delay), unthrottled
    /// or with a target it cannot reach, on the one-thread runtime ycsb uses by default: the
    /// workers must still give the maxexecutiontime timer and the status line their turn, or
    /// the run never ends.
    #[test]
    fn maxexecutiontime_ends_an_unthrottled_run_of_a_db_that_never_waits() {
        // The third: paced, but far faster than the database can go, so the pacer is always
        // behind and never waits either.
        for db in [
            "memory",
            "basic -p basicdb.verbose=false",
            "memory -target 1000000000",
        ] {
            let line = format!(
                "run {db} -P workloadc -p operationcount=0 -p maxexecutiontime=1 -threads 2 -s -p status.interval=1"
            );
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let _ = tx.send(rt.block_on(execute(&args(&line))).map(|o| o.result));
            });
            // Only a guard against hanging the test run: the run itself takes about a second.
            let out = rx
                .recv_timeout(std::time::Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("{db}: the run did not end"));
            let r = out.unwrap().unwrap();
            assert!(r.ops > 0, "{db}: {}", r.ops);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn warmup_is_not_measured() {
        let out = execute(&args(
            "load memory -P workloada -p recordcount=300 -threads 1 -target 200 -p warmuptime=1",
        ))
        .await
        .unwrap();
        let r = out.result.unwrap();
        // 300 inserts at 200/s take at least 1.495 s; the first second is warm-up. The pacer
        // never runs ahead, so at most 200 inserts fall in it, and the measured window lasts
        // at least 495 ms (however slow the machine, which can only push inserts out of it).
        assert!(r.ops >= 100 && r.ops <= 300, "{}", r.ops);
        assert!(r.runtime_ms >= 490, "{}", r.runtime_ms);
        let text = out.stdout;
        let n: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("[INSERT], Operations, "))
            .unwrap()
            .parse()
            .unwrap();
        // The measurement decides at the end of an insert whether the warm-up is over, the
        // runner just after it: an insert that ends between the two is counted by the runner
        // only (at most one per thread).
        assert!(
            n == r.ops || n + 1 == r.ops,
            "{n} recorded, {} counted",
            r.ops
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hdr_interval_logs() {
        let dir = tmp("hdr");
        let prefix = format!("{}/", dir.display());
        let out = execute(&args(&format!(
            "load memory -P workloada -p recordcount=100 -p hdrhistogram.fileoutput=true -p hdrhistogram.output.path={prefix}"
        )))
        .await
        .unwrap();
        assert!(out.stdout.contains("[INSERT], Operations, 100"));
        let log = std::fs::read_to_string(dir.join("INSERT.hdr")).unwrap();
        assert!(log.contains("#[StartTime: "), "{log}");
        assert!(
            log.lines().any(|l| !l.starts_with('#') && l.contains(',')),
            "{log}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
