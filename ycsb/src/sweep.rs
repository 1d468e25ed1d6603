//! `ycsb sweep`: one load, then the same run at several thread counts, workloads and/or
//! target rates, each point on a fresh copy of the loaded table, written to one directory.
//!
//! ```text
//! ycsb sweep --zk zk1:2181 -P workloada,workloadc -threads 1,8,64,512 [-target 0,1000,5000]
//!            -p recordcount=100000 -p operationcount=100000 -p warmuptime=5 --out results/
//! ```
//!
//! Method (as the reports this project grew from did it): load once, snapshot the pristine
//! table, and for every point clone the snapshot into a new table, run against the clone,
//! drop it. So a point that writes never changes what the next point reads. The memory
//! binding has no table to restore; every point there starts empty.
//!
//! Every point runs in its own `ycsb run` process (the binary of `-p sweep.exe=PATH`, by
//! default this one), so what the client costs is the point's alone: its CPU time from the
//! kernel's accounting of the child (`wait4`) and over the measured window (`process.txt`,
//! which the run writes itself), and its peak resident set (`ru_maxrss` of the child: a
//! high-water mark of one long process could only grow from point to point).
//!
//! The directory gets `points/<id>/` per point (its report exactly as a single run prints it
//! in `stdout.txt`, its stderr in `stderr.txt`, the text report, `process.txt` and one
//! HdrHistogram interval log per operation as `-p artifacts.dir` writes them, and
//! `point.json`), `summary.csv`, `summary.json`, the self-contained `report.html`, and
//! `sweep.log` (what ran, and any clone or snapshot that could not be dropped), which a sweep
//! that fails after its argument checks writes too, the failure its last line. A sweep into
//! the directory of an earlier one first removes that sweep's points and summaries, and its
//! `load.txt` and server warm-up runs (`warmup/`) where this sweep has none of its own, once
//! its own first point is about to run (see `clear_earlier_sweep`); a sweep with a server
//! warm-up replaces the earlier one's as its warm-up starts.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use hbase_client::TableName;

use crate::plot::{point_json, read_points, report_html, summary_csv, summary_json};
use crate::props::Properties;
use crate::usage::{wait_child, ChildUsage};
use crate::{Error, Outcome};

/// The flags whose values a sweep varies or owns; removed from the command line before it
/// is reused for each point.
const VARIED: [&str; 5] = ["P", "threads", "target", "out", "keep-tables"];

fn flag_name(arg: &str) -> Option<&str> {
    let name = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
    Some(name.split('=').next().unwrap_or(name))
}

/// The command line without the subcommand and the varied flags, plus the varied values.
struct Split {
    base: Vec<String>,
    workloads: Vec<String>,
    threads: Vec<u64>,
    targets: Vec<f64>,
    out: Option<String>,
    keep_tables: bool,
}

fn list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn split_args(args: &[String]) -> Result<Split, Error> {
    let mut base = Vec::new();
    let (mut p, mut threads, mut targets, mut out) = (vec![], vec![], vec![], None);
    let mut keep_tables = false;
    let mut i = 1; // args[0] is "sweep"
    while i < args.len() {
        let a = &args[i];
        match flag_name(a) {
            Some(name) if VARIED.contains(&name) && a.starts_with('-') => {
                if name == "keep-tables" {
                    keep_tables = true;
                    i += 1;
                    continue;
                }
                let value = match a.split_once('=') {
                    Some((_, v)) => v.to_string(),
                    None => {
                        i += 1;
                        args.get(i)
                            .cloned()
                            .ok_or_else(|| Error::Usage(format!("{a} needs a value")))?
                    }
                };
                match name {
                    "P" => p.push(value),
                    "threads" => threads.push(value),
                    "target" => targets.push(value),
                    _ => out = Some(value),
                }
            }
            // Another option's value is passed on as it is, never read as a varied flag:
            // `-p -threads=5` sets a property, as `ycsb run` reads it.
            _ if crate::cli::takes_value(a) => {
                base.extend(args[i..].iter().take(2).cloned());
                i += 1;
            }
            _ => base.push(a.clone()),
        }
        i += 1;
    }
    let workloads = list(&p);
    if workloads.is_empty() {
        return Err(Error::Usage(
            "ycsb sweep needs -P WORKLOAD[,WORKLOAD...]".into(),
        ));
    }
    let threads = list(&threads)
        .iter()
        .map(|t| match t.parse::<u64>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(Error::Config(format!(
                "-threads: {t:?} is not a thread count (a list of whole numbers >= 1)"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let threads = if threads.is_empty() { vec![1] } else { threads };
    let targets = list(&targets)
        .iter()
        .map(|t| match t.parse::<f64>() {
            Ok(n) if n >= 0.0 && n.is_finite() => Ok(n),
            _ => Err(Error::Config(format!(
                "-target: {t:?} is not a rate (a list of numbers >= 0; 0 = unthrottled)"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let targets = if targets.is_empty() {
        vec![0.0]
    } else {
        targets
    };
    Ok(Split {
        base,
        workloads,
        threads,
        targets,
        out,
        keep_tables,
    })
}

type Boxed<'a> = Pin<Box<dyn Future<Output = Result<Outcome, Error>> + Send + 'a>>;

fn run_command(args: Vec<String>) -> Boxed<'static> {
    Box::pin(async move { crate::execute(&args).await })
}

/// Runs one point as its own process, `exe args...`: its stdout (the report) into
/// `dir/stdout.txt`, its stderr into `dir/stderr.txt` and on to ours (the progress of a long
/// point stays visible). Returns its exit status and rusage.
async fn run_point(exe: PathBuf, args: Vec<String>, dir: PathBuf) -> Result<ChildUsage, Error> {
    let io = |what: &str, e: std::io::Error| Error::Io(format!("{what}: {e}"));
    tokio::task::spawn_blocking(move || {
        use std::io::{BufRead, Write};
        let stdout = std::fs::File::create(dir.join("stdout.txt"))
            .map_err(|e| io(&format!("cannot create {}/stdout.txt", dir.display()), e))?;
        let mut stderr_file = std::fs::File::create(dir.join("stderr.txt"))
            .map_err(|e| io(&format!("cannot create {}/stderr.txt", dir.display()), e))?;
        let mut child = std::process::Command::new(&exe)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(stdout)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| io(&format!("cannot start {} (-p sweep.exe)", exe.display()), e))?;
        let pipe = child.stderr.take();
        let copier = std::thread::spawn(move || {
            let Some(pipe) = pipe else { return };
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(stderr_file, "{line}");
                eprintln!("{line}");
            }
        });
        let usage = wait_child(child).map_err(|e| io("cannot wait for a point's process", e));
        let _ = copier.join();
        usage
    })
    .await
    .map_err(|e| Error::Worker(format!("a point's waiter failed: {e}")))?
}

/// A run that ended with an error status is an error, naming `what` and its output's place.
fn succeeded(run: Result<ChildUsage, Error>, what: &str, dir: &Path) -> Result<ChildUsage, Error> {
    let usage = run?;
    if usage.status.success() {
        return Ok(usage);
    }
    Err(Error::Worker(format!(
        "{what}: `ycsb run` ended with {} (its output: {}/stderr.txt)",
        usage.status,
        dir.display()
    )))
}

fn short(workload: &str) -> String {
    Path::new(workload)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| workload.to_string())
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The names of what a sweep makes in HBase: its snapshot of the loaded table and the clones
/// of it (a table per point, one for the server warm-up). Each ends in the process, how many
/// sweeps it started before, and eight random hex digits: two sweeps of one program (a test, an
/// application calling [`crate::execute`]) never reuse a name, and two client machines whose
/// sweeps happen to run under the same pid against one cluster share one only by a 1 in 2^32
/// chance. Before 2.6 (and
/// on 2.6 without a nonce) HBase coordinates a snapshot through ZooKeeper by its name, and its
/// region servers keep a finished snapshot's state under that name until one of the same name
/// replaces it ("A completed old subproc … is still present, removing" in their log); the one
/// failed snapshot this project's CI saw was a second sweep's, taken seconds after the first
/// sweep's delete under the same name, on that path.
struct Names {
    table: String,
    tag: String,
}

impl Names {
    fn new(table: &str) -> Names {
        static SWEEPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SWEEPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Names {
            table: table.to_string(),
            tag: format!("{}_{n}_{:08x}", std::process::id(), rand::random::<u32>()),
        }
    }

    fn snapshot(&self) -> String {
        format!("{}_sweep_{}", short(&self.table), self.tag)
    }

    fn point(&self, index: usize) -> String {
        format!("{}_p{index}_{}", short(&self.table), self.tag)
    }

    fn warm(&self) -> String {
        format!("{}_warm_{}", short(&self.table), self.tag)
    }
}

/// The program every point runs in: `-p sweep.exe=PATH`, else this program when it is the
/// `ycsb` command line (`cli_exe`: Some, with its path if known). A sweep started from another
/// program (a test binary calling [`crate::execute`]) must name one: that program would take
/// `run ...` for its own options.
fn point_exe(p: &Properties, cli_exe: Option<Option<PathBuf>>) -> Result<PathBuf, Error> {
    if let Some(path) = p.get("sweep.exe").map(str::trim).filter(|s| !s.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    match cli_exe {
        Some(Some(exe)) => Ok(exe),
        Some(None) => Err(Error::Config(
            "cannot find this program's path: set -p sweep.exe=PATH to the ycsb each point runs in"
                .into(),
        )),
        None => Err(Error::Config(
            "this program is not the ycsb command line: set -p sweep.exe=PATH to the ycsb each point runs in".into(),
        )),
    }
}

/// Runs the sweep described by `args` (the whole command line, starting with `sweep`), with
/// the properties `p` of its command line (for the table name, binding and connection).
pub async fn sweep(
    args: &[String],
    p: &Properties,
    conf_dirs: &[String],
) -> Result<Outcome, Error> {
    let s = split_args(args)?;
    let out = PathBuf::from(
        s.out
            .clone()
            .ok_or_else(|| Error::Usage("ycsb sweep needs --out DIR".into()))?,
    );
    std::fs::create_dir_all(out.join("points"))
        .map_err(|e| Error::Io(format!("cannot create {}: {e}", out.display())))?;
    let memory = p
        .get("db")
        .is_some_and(|d| d.trim().eq_ignore_ascii_case("memory"));
    let table = p.get_or("table", "usertable").trim().to_string();
    // Checked before the load and the snapshot: a bad value must leave nothing behind.
    let server_warmup = p.f64_in("sweep.serverwarmup", 0.0, 0.0, 86_400.0)?;
    // The summaries and plots read each point's HdrHistogram interval logs, which only the
    // HdrHistogram measurement types write: another type would run every point, then fail.
    let kind = crate::measurements::MeasurementConfig::from_properties(p)?.kind;
    if !kind.has_hdr() {
        return Err(Error::Config(format!(
            "ycsb sweep needs HdrHistogram interval logs: measurementtype={} writes none (use hdrhistogram, hdrhistogram+histogram or hdrhistogram+raw)",
            p.get_or("measurementtype", "").trim()
        )));
    }
    let warmup: f64 = p.get_or("warmuptime", "0").trim().parse().unwrap_or(0.0);
    let exe = point_exe(
        p,
        crate::started_as_cli().then(|| std::env::current_exe().ok()),
    )?;
    let names = Names::new(&table);
    let mut log = String::new();
    // Everything after the checks runs in here, so that a failure at any step still leaves
    // the log (what ran, and a clone or the snapshot left behind) in the directory.
    let ran: Result<(), Error> = async {
        // 1. One load, with the first workload and the largest thread count (at most 64).
        let load_threads = s.threads.iter().copied().max().unwrap_or(1).min(64);
        let loads = p.bool_or("sweep.load", true)?;
        if loads {
            let mut a = vec!["load".to_string()];
            a.extend(s.base.iter().cloned());
            a.extend([
                "-P".into(),
                s.workloads[0].clone(),
                "-threads".into(),
                load_threads.to_string(),
            ]);
            let loaded = run_command(a).await?;
            std::fs::write(out.join("load.txt"), &loaded.stdout)
                .map_err(|e| Error::Io(format!("cannot write load.txt: {e}")))?;
            log.push_str(&format!("loaded {table} ({load_threads} threads)\n"));
        }

        // 2. The pristine copy.
        let client = if memory {
            None
        } else {
            Some(crate::hbase::connect(p, conf_dirs).await?)
        };
        let snapshot = names.snapshot();
        if let Some(c) = &client {
            let name = TableName::parse(&table).map_err(|e| Error::Config(e.to_string()))?;
            c.admin()
                .snapshot(&snapshot, &name)
                .await
                .map_err(|e| Error::Hbase(format!("cannot snapshot {table} as {snapshot}: {e}")))?;
            log.push_str(&format!("snapshot {snapshot} of {table}\n"));
        }

        // 3. The server's warm-up, on a clone: the points read clones, whose files the region
        // servers reach through links; warming them on the loaded table leaves that path to the
        // first point's JIT (measured: 4.6 s of compiler CPU in the first 20 s point on a clone,
        // 0.3 s on the warmed table itself).
        let mut result = Ok(());
        let warms = server_warmup > 0.0 && client.is_some();
        if server_warmup > 0.0 {
            match &client {
                Some(c) => {
                    // The earlier sweep's warm-up runs go first: one this sweep does not have
                    // would stay beside its own.
                    let earlier = if an_earlier_sweep_ran(&out) {
                        clear_earlier_warmup(&out)
                    } else {
                        Ok(0)
                    };
                    match earlier {
                        Ok(0) => {}
                        Ok(n) => log.push_str(&format!(
                            "removed {n} files of an earlier sweep's warm-up\n"
                        )),
                        Err(e) => result = Err(e),
                    }
                    if result.is_ok() {
                        let line;
                        (result, line) =
                            warm_servers(c, &s, &names, &exe, &out, server_warmup).await;
                        log.push_str(&line);
                    }
                }
                None => log.push_str("server warm-up skipped: the memory binding has no server\n"),
            }
        }

        // 4. The points. What an earlier sweep into this directory left goes first: a point of
        // this sweep that fails must have no point.json, and one it never reaches no directory.
        if result.is_ok() {
            match clear_earlier_sweep(&out, loads, warms) {
                Ok(0) => {}
                Ok(n) => log.push_str(&format!("removed {n} files of an earlier sweep\n")),
                Err(e) => result = Err(e),
            }
        }
        let mut index = 0;
        // A failed warm-up runs no point (the snapshot is still deleted).
        let workloads: &[String] = if result.is_ok() { &s.workloads } else { &[] };
        'points: for w in workloads {
            for &threads in &s.threads {
                for &target in &s.targets {
                    index += 1;
                    let id = format!(
                        "{index:03}-{}-t{threads}{}",
                        short(w),
                        if target > 0.0 {
                            format!("-r{target}")
                        } else {
                            String::new()
                        }
                    );
                    let dir = out.join("points").join(&id);
                    if let Err(e) = std::fs::create_dir_all(&dir) {
                        result = Err(Error::Io(format!("cannot create {}: {e}", dir.display())));
                        break 'points;
                    }
                    let point_table = names.point(index);
                    let t = match TableName::parse(&point_table) {
                        Ok(t) => t,
                        Err(e) => {
                            result = Err(Error::Config(e.to_string()));
                            break 'points;
                        }
                    };
                    if let Some(c) = &client {
                        if let Err(e) = c.admin().clone_snapshot(&snapshot, &t).await {
                            result = Err(Error::Hbase(format!("cannot clone {snapshot}: {e}")));
                            break 'points;
                        }
                    }
                    let mut a = run_args(&s, w, threads);
                    if target > 0.0 {
                        a.extend(["-target".into(), target.to_string()]);
                    }
                    if client.is_some() {
                        a.extend(["-p".into(), format!("table={point_table}")]);
                    }
                    a.extend(["-p".into(), format!("artifacts.dir={}", dir.display())]);
                    let run = run_point(exe.clone(), a, dir.clone()).await;
                    if let (Some(c), false) = (&client, s.keep_tables) {
                        log.push_str(&drop_table(c, &t).await);
                    }
                    let usage = match succeeded(run, &format!("point {id}"), &dir) {
                        Ok(u) => u,
                        Err(e) => {
                            result = Err(e);
                            break 'points;
                        }
                    };
                    if let Err(e) = std::fs::write(
                        dir.join("point.json"),
                        point_json(w, threads, target, warmup, Some(&usage)),
                    ) {
                        result = Err(Error::Io(format!("cannot write {}: {e}", dir.display())));
                        break 'points;
                    }
                    log.push_str(&format!("point {id} done\n"));
                }
            }
        }
        if let Some(c) = &client {
            if let Err(e) = c.admin().delete_snapshot(&snapshot).await {
                log.push_str(&format!(
                    "warning: could not delete snapshot {snapshot}: {e}\n"
                ));
            }
        }
        result?;

        // 5. Summaries and the page.
        let points = read_points(&out)?;
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "sweep".into());
        let write = |file: &str, text: String| {
            std::fs::write(out.join(file), text)
                .map_err(|e| Error::Io(format!("cannot write {file}: {e}")))
        };
        write("summary.csv", summary_csv(&points))?;
        write("summary.json", summary_json(&points))?;
        write("report.html", report_html(&[(name, points)]))?;
        log.push_str(&format!(
            "wrote {} (summary.csv, summary.json, report.html, sweep.log)\n",
            out.display()
        ));
        Ok(())
    }
    .await;
    if let Err(e) = ran {
        log.push_str(&format!("failed: {e}\n"));
        if let Err(w) = std::fs::write(out.join("sweep.log"), &log) {
            eprintln!(
                "ycsb: warning: could not write {}: {w}",
                out.join("sweep.log").display()
            );
        }
        for line in log.lines().filter(|l| l.starts_with("warning: ")) {
            eprintln!("ycsb: {line}");
        }
        return Err(e);
    }
    std::fs::write(out.join("sweep.log"), &log)
        .map_err(|e| Error::Io(format!("cannot write sweep.log: {e}")))?;
    Ok(Outcome {
        stdout: log,
        ..Outcome::default()
    })
}

/// What a point's directory holds besides its run's artifacts (`-p artifacts.dir`).
const POINT_FILES: [&str; 3] = ["point.json", "stdout.txt", "stderr.txt"];

/// What a sweep writes beside `points/` from all of its points.
const SUMMARY_FILES: [&str; 3] = ["summary.csv", "summary.json", "report.html"];

/// What a warm-up run's directory holds besides its run's artifacts.
const WARMUP_FILES: [&str; 2] = ["stdout.txt", "stderr.txt"];

/// Removes what an earlier sweep into `out` left for `ycsb plot` and the summaries to read:
/// every point's files (its run's artifacts, `point.json`, its output) and the summaries; a
/// point directory that held nothing else goes too. So do the earlier `load.txt`, unless this
/// sweep `loaded` (and wrote its own), and the earlier warm-up runs, unless this sweep
/// `warmed` the servers (and replaced them). Returns how many files it removed. Called once
/// the first point is about to run: a sweep that fails before (its load, the snapshot)
/// leaves the earlier results whole, as a run that cannot connect leaves its `artifacts.dir`.
/// Without it a rerun's failed point kept the earlier `point.json` beside other artifacts,
/// and the points after it the earlier sweep's, all read as this sweep's; without the load
/// and the warm-up, a rerun showed the earlier ones as its own.
fn clear_earlier_sweep(out: &Path, loaded: bool, warmed: bool) -> Result<usize, Error> {
    let points = out.join("points");
    let entries = std::fs::read_dir(&points)
        .map_err(|e| Error::Io(format!("cannot read {}: {e}", points.display())))?;
    // A `load.txt` or `warmup/` is an earlier sweep's only where one ran; in any other
    // directory they are the user's.
    let earlier = an_earlier_sweep_ran(out);
    let mut removed = 0;
    for dir in real_dirs(entries) {
        removed += crate::remove_files(&dir, |name| {
            crate::is_run_artifact(name) || POINT_FILES.contains(&name)
        })?;
        // Left, an empty directory would read as a point of this sweep that failed.
        remove_if_empty(&dir)?;
    }
    removed += crate::remove_files(out, |name| {
        SUMMARY_FILES.contains(&name) || (earlier && !loaded && name == "load.txt")
    })?;
    if earlier && !warmed {
        removed += clear_earlier_warmup(out)?;
    }
    Ok(removed)
}

/// Removes an earlier sweep's warm-up runs from `out/warmup/`: each run's artifacts and
/// output, its directory if that held nothing else, and `warmup/` if it is left empty (other
/// files stay). Returns how many files it removed.
fn clear_earlier_warmup(out: &Path) -> Result<usize, Error> {
    let warmup = out.join("warmup");
    let Ok(entries) = std::fs::read_dir(&warmup) else {
        // None there (or not readable, which the warm-up's own create reports).
        return Ok(0);
    };
    let mut removed = 0;
    for dir in real_dirs(entries) {
        removed += crate::remove_files(&dir, |name| {
            crate::is_run_artifact(name) || WARMUP_FILES.contains(&name)
        })?;
        remove_if_empty(&dir)?;
    }
    remove_if_empty(&warmup)?;
    Ok(removed)
}

/// Whether a sweep ran into `out` before this one: its log, or a point's directory.
fn an_earlier_sweep_ran(out: &Path) -> bool {
    out.join("sweep.log").is_file()
        || std::fs::read_dir(out.join("points")).is_ok_and(|d| real_dirs(d).next().is_some())
}

/// The directories among `entries`, symbolic links to directories left out: clearing an
/// earlier sweep's files never follows a link out of the sweep's own directory.
fn real_dirs(entries: std::fs::ReadDir) -> impl Iterator<Item = std::path::PathBuf> {
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
}

/// Removes `dir` if it holds nothing.
fn remove_if_empty(dir: &Path) -> Result<(), Error> {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
        std::fs::remove_dir(dir)
            .map_err(|e| Error::Io(format!("cannot remove {}: {e}", dir.display())))?;
    }
    Ok(())
}

/// `-p sweep.serverwarmup=SECONDS`: before the points, every workload at every distinct
/// thread count of the sweep, unthrottled and not measured, on one clone of the snapshot
/// (dropped after, unless `--keep-tables`). The seconds are shared evenly, at least 1 s a run.
/// Each run's report and artifacts are kept in `out/warmup/<nn>-<workload>-t<threads>/`.
/// Returns the outcome and the lines for the sweep's log (what ran, and a warning if the
/// clone could not be dropped).
async fn warm_servers(
    client: &hbase_client::Client,
    s: &Split,
    names: &Names,
    exe: &Path,
    out: &Path,
    seconds: f64,
) -> (Result<(), Error>, String) {
    let mut threads: Vec<u64> = Vec::new();
    for &t in &s.threads {
        if !threads.contains(&t) {
            threads.push(t);
        }
    }
    let runs = s.workloads.len() * threads.len();
    let each = (seconds / runs as f64).ceil().max(1.0) as u64;
    let (table, snapshot, warm_table) = (&names.table, &names.snapshot(), names.warm());
    let name = match TableName::parse(&warm_table) {
        Ok(n) => n,
        Err(e) => return (Err(Error::Config(e.to_string())), String::new()),
    };
    let admin = client.admin();
    if let Err(e) = admin.clone_snapshot(snapshot, &name).await {
        let e = Error::Hbase(format!("cannot clone {snapshot} for the warm-up: {e}"));
        return (Err(e), String::new());
    }
    let mut result = Ok(());
    let mut index = 0;
    'runs: for w in &s.workloads {
        for &t in &threads {
            index += 1;
            let dir = out
                .join("warmup")
                .join(format!("{index:02}-{}-t{t}", short(w)));
            if let Err(e) = std::fs::create_dir_all(&dir) {
                result = Err(Error::Io(format!("cannot create {}: {e}", dir.display())));
                break 'runs;
            }
            let mut a = run_args(s, w, t);
            for prop in [
                format!("table={warm_table}"),
                "operationcount=0".into(),
                format!("maxexecutiontime={each}"),
                "warmuptime=0".into(),
                format!("artifacts.dir={}", dir.display()),
            ] {
                a.extend(["-p".into(), prop]);
            }
            let run = run_point(exe.to_path_buf(), a, dir.clone()).await;
            if let Err(e) = succeeded(run, "server warm-up", &dir) {
                result = Err(e);
                break 'runs;
            }
        }
    }
    let mut lines = String::new();
    if result.is_ok() {
        lines = format!(
            "server warm-up: {runs} run(s) of {each} s on {warm_table}, a clone of {table} (not measured; in {})\n",
            out.join("warmup").display()
        );
    }
    if s.keep_tables {
        lines.push_str(&format!("kept {warm_table} (--keep-tables)\n"));
    } else {
        lines.push_str(&drop_table(client, &name).await);
    }
    (result, lines)
}

/// `ycsb run` with the sweep's own command line, for one workload and thread count.
fn run_args(s: &Split, workload: &str, threads: u64) -> Vec<String> {
    let mut a = vec!["run".to_string()];
    a.extend(s.base.iter().cloned());
    a.extend([
        "-P".into(),
        workload.to_string(),
        "-threads".into(),
        threads.to_string(),
    ]);
    a
}

/// Drops a table the sweep cloned. Returns the warning line for the sweep's log if it could
/// not (empty otherwise): a table left behind does not fail the sweep.
async fn drop_table(client: &hbase_client::Client, name: &TableName) -> String {
    let admin = client.admin();
    let dropped = async {
        admin.disable_table(name).await?;
        admin.delete_table(name).await
    };
    match dropped.await {
        Ok(()) => String::new(),
        Err(e) => format!("warning: could not drop {name}: {e}\n"),
    }
}

/// `ycsb plot DIR... [--out FILE]`: the page of one or several sweep directories, overlaid.
pub fn plot(dirs: &[String], out: &str) -> Result<Outcome, Error> {
    let mut series = Vec::new();
    for d in dirs {
        let path = Path::new(d);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| d.clone());
        series.push((name, read_points(path)?));
    }
    std::fs::write(out, report_html(&series))
        .map_err(|e| Error::Io(format!("cannot write {out}: {e}")))?;
    Ok(Outcome {
        stdout: format!("wrote {out}\n"),
        ..Outcome::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn names_end_in_the_process_the_sweep_count_and_eight_random_hex_digits() {
        let (first, second) = (Names::new("ns:user.table"), Names::new("ns:user.table"));
        let pid = std::process::id().to_string();
        for names in [&first, &second] {
            let parts: Vec<&str> = names.tag.split('_').collect();
            assert_eq!(parts.len(), 3, "{}", names.tag);
            assert_eq!(parts[0], pid);
            assert_eq!(parts[2].len(), 8);
            assert!(parts[2].chars().all(|c| c.is_ascii_hexdigit()));
            // HBase's rule for snapshot and table names.
            for name in [names.snapshot(), names.point(3), names.warm()] {
                assert!(
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')),
                    "{name}"
                );
            }
        }
        let count = |n: &Names| n.tag.split('_').nth(1).unwrap().parse::<u64>().unwrap();
        assert!(count(&second) > count(&first));
        assert_ne!(first.snapshot(), second.snapshot());
    }

    #[test]
    fn varied_flags_are_taken_out() {
        let s = split_args(&a(
            "sweep --zk z:1 -P workloada,workloadc -threads 1,4 -target=0,100 -p x=1 --out d",
        ))
        .unwrap();
        assert_eq!(s.base, a("--zk z:1 -p x=1"));
        assert_eq!(s.workloads, a("workloada workloadc"));
        assert_eq!(s.threads, vec![1, 4]);
        assert_eq!(s.targets, vec![0.0, 100.0]);
        assert_eq!(s.out.as_deref(), Some("d"));
    }

    /// An option's value that looks like a varied flag is that option's, as `ycsb run` reads
    /// it (`cli::takes_value`, the one list): a property `-threads=5`, a label `-target`.
    #[test]
    fn another_options_value_is_never_a_varied_flag() {
        let s = split_args(&a(
            "sweep -P workloadc -threads 2 -p -threads=5 -l -target --out d",
        ))
        .unwrap();
        assert_eq!(s.base, a("-p -threads=5 -l -target"));
        assert_eq!(s.threads, vec![2]);
        assert!(
            s.targets.is_empty() || s.targets == vec![0.0],
            "{:?}",
            s.targets
        );
    }

    #[test]
    fn points_run_in_a_ycsb_binary() {
        let mut p = Properties::new();
        let ycsb = PathBuf::from("/opt/bin/ycsb");
        assert_eq!(point_exe(&p, Some(Some(ycsb.clone()))).unwrap(), ycsb);
        // Not started as the command line (a test calling execute()): it must be named.
        let err = point_exe(&p, None).unwrap_err();
        assert!(err.to_string().contains("sweep.exe"), "{err}");
        assert!(point_exe(&p, Some(None)).is_err());
        p.set("sweep.exe", "/x/ycsb-it");
        assert_eq!(point_exe(&p, None).unwrap(), PathBuf::from("/x/ycsb-it"));
    }

    /// A sweep rerun into the directory of an earlier one. Its first point fails (its program
    /// exits 1 at once): no file of the earlier sweep may stay where `ycsb plot` or the
    /// summaries would read it as this sweep's, neither the failed point's `point.json` beside
    /// artifacts of another run, nor the points the rerun never reached or does not have, nor
    /// the earlier summaries. A rerun that fails before its first point (its load) leaves the
    /// earlier results as they were.
    /// Clearing an earlier sweep touches only what a sweep wrote: in a directory no sweep ran
    /// in, a `load.txt` and a `warmup/` are the user's; and a symbolic link among the points
    /// or warm-up runs is never followed into the directory it names.
    #[test]
    fn clearing_an_earlier_sweep_keeps_the_users_files() {
        let base = std::env::temp_dir().join(format!("ycsb-sweep-users-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (out, users) = (base.join("out"), base.join("users"));
        std::fs::create_dir_all(out.join("points")).unwrap();
        std::fs::create_dir_all(out.join("warmup/run")).unwrap();
        std::fs::create_dir_all(&users).unwrap();
        std::fs::write(out.join("load.txt"), "the user's").unwrap();
        std::fs::write(out.join("warmup/run/stdout.txt"), "the user's").unwrap();
        for file in ["point.json", "stdout.txt", "READ.hdr"] {
            std::fs::write(users.join(file), "the user's").unwrap();
        }
        // No sweep ran here (its points/ is this sweep's, just made).
        assert_eq!(clear_earlier_sweep(&out, false, false).unwrap(), 0);
        assert!(out.join("load.txt").exists() && out.join("warmup/run/stdout.txt").exists());
        // An earlier sweep ran here, and links lead out of it.
        std::fs::write(out.join("sweep.log"), "earlier").unwrap();
        std::os::unix::fs::symlink(&users, out.join("points/001-workloadc-t1")).unwrap();
        std::os::unix::fs::symlink(&users, out.join("warmup/01-workloadc-t1")).unwrap();
        assert_eq!(clear_earlier_sweep(&out, false, false).unwrap(), 2);
        assert!(!out.join("load.txt").exists() && !out.join("warmup/run").exists());
        for file in ["point.json", "stdout.txt", "READ.hdr"] {
            assert!(
                users.join(file).exists(),
                "{file} of the user's directory is gone"
            );
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_rerun_whose_point_fails_leaves_nothing_of_the_earlier_sweep() {
        let out = std::env::temp_dir().join(format!("ycsb-sweep-rerun-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let earlier = [
            "point.json",
            "READ.hdr",
            "report.txt",
            "process.txt",
            "servers.txt",
            "stdout.txt",
            "stderr.txt",
        ];
        // The earlier sweep: threads 1, 2 and 4; the rerun has 1 and 2.
        for (id, threads) in [
            ("001-workloadc-t1", 1),
            ("002-workloadc-t2", 2),
            ("003-workloadc-t4", 4),
        ] {
            let dir = out.join("points").join(id);
            std::fs::create_dir_all(&dir).unwrap();
            for file in earlier {
                std::fs::write(dir.join(file), "earlier").unwrap();
            }
            std::fs::write(
                dir.join("point.json"),
                point_json("workloadc", threads, 0.0, 0.0, None),
            )
            .unwrap();
        }
        let first = out.join("points").join("001-workloadc-t1");
        std::fs::write(first.join("notes.txt"), "the user's").unwrap();
        let summaries = ["summary.csv", "summary.json", "report.html"];
        for file in summaries {
            std::fs::write(out.join(file), "earlier").unwrap();
        }
        let rerun = |extra: &str| {
            a(&format!(
                "sweep memory -P workloadc -threads 1,2 -p sweep.exe=/bin/false {extra} --out {}",
                out.display()
            ))
        };

        // The load fails: no point was about to start, the earlier results stay.
        let err = crate::execute(&rerun("-p recordcount=many"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("recordcount"), "{err}");
        assert!(
            first.join("point.json").is_file(),
            "a failed load cleared the points"
        );
        assert!(out.join("summary.csv").is_file());

        let err = crate::execute(&rerun("-p sweep.load=false"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("point 001-workloadc-t1"), "{err}");
        let left: Vec<&str> = earlier
            .into_iter()
            .filter(|f| first.join(f).exists() && !matches!(*f, "stdout.txt" | "stderr.txt"))
            .collect();
        assert!(
            left.is_empty(),
            "the failed point keeps the earlier sweep's {left:?}"
        );
        // Its output files are the rerun's (the program printed nothing); the user's stays.
        for file in ["stdout.txt", "stderr.txt"] {
            assert_eq!(
                std::fs::read_to_string(first.join(file)).unwrap(),
                "",
                "{file}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(first.join("notes.txt")).unwrap(),
            "the user's"
        );
        for id in ["002-workloadc-t2", "003-workloadc-t4"] {
            assert!(!out.join("points").join(id).exists(), "{id} is left");
        }
        for file in summaries {
            assert!(!out.join(file).exists(), "{file} is left");
        }
        let err = read_points(&out).unwrap_err().to_string();
        assert!(err.contains("no complete point"), "{err}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn bad_lists_are_errors() {
        assert!(split_args(&a("sweep -P a -threads 1,0 --out d")).is_err());
        assert!(split_args(&a("sweep -P a -threads x --out d")).is_err());
        assert!(split_args(&a("sweep -P a -target -5 --out d")).is_err());
        assert!(split_args(&a("sweep -threads 1 --out d")).is_err());
    }
}
