//! The command line: `ycsb load|run|create-table|catalog-janitor|...`, YCSB's single-dash
//! flags, and the property precedence (files in order, then the command line in order).
//!
//! What a command line makes of `-p`, `-P`, `-s`, `-threads`, `-target`, `-l`, `-db`, `-load`
//! and `-t` is compared with YCSB 0.17.0's own `Client.parseArguments` by
//! `tests/ycsb_conformance.rs` (`command_lines_read_as_ycsb_reads_them`): as there, an option
//! given twice keeps its last value, an option's value may start with `-` (`-l -x` is the label
//! `-x`, `-p -x=1` the property `-x`), and `-threads` / `-target` are whole numbers stored as
//! Java prints them (`007` is `7`). The differences kept on purpose are listed in that test.

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::props::{parse_properties, Properties};
use crate::workloads::builtin_workload;
use crate::Error;

const AFTER_HELP: &str = "\
Properties: each -P file overrides the ones before it; command-line flags and -p always beat
files, and among them the last one wins. YCSB's spellings work: -threads 32, -target 1000,
-P workloads/workloada, -p recordcount=100000, -s, -l label, -cp /etc/hbase/conf (reads its
hbase-site.xml), -jvm-args=... (accepted, ignored), and a binding name (`ycsb load hbase20
-P workloada`; `basic` prints every operation as YCSB's BasicDB, `memory` is a dry run). The
files workloada..workloadf are built in: a bare name (-P workloada) not on disk is the built-in
one; a path that does not exist is an error.

Examples:
  ycsb create-table --zk zk1:2181 --regions 30
  ycsb load --zk zk1:2181 -P workloada -p recordcount=1000000
  ycsb run  --zk zk1:2181 -P workloada -threads 32 -s
  ycsb run hbase20 -cp /etc/hbase/conf -P workloads/workloada
  ycsb shell --zk zk1:2181
  ycsb catalog-janitor --zk zk1:2181   (the master's catalog janitor, now)

Useful properties: table (usertable), columnfamily (family), recordcount, operationcount,
clientbuffering (true), writebuffersize (12582912, per thread), writebufferlimit (8388608,
all threads together), sharedwritebuffer (false), durability, exporter, exportfile,
measurementtype (hdrhistogram|histogram|hdrhistogram+histogram|hdrhistogram+raw|timeseries|raw),
measurement.interval (op|intended|both), hdrhistogram.percentiles (95,99), status.interval (10),
maxexecutiontime, warmuptime, wakeupcoalescing.us (0; up to 100000: the runtime sleeps this
long whenever it has nothing to run, for less client CPU per operation at more latency),
createtable, presplit, hdrhistogram.fileoutput,
hdrhistogram.output.path, artifacts.dir (report.txt and the interval logs for `ycsb merge
DIR...`), and the HBase client properties of hbase-site.xml (hbase.zookeeper.quorum,
zookeeper.znode.parent, hbase.rpc.timeout, ...).";

/// `ycsb`: a YCSB-compatible benchmark driver for HBase.
#[derive(Debug, Parser)]
// args_override_self: YCSB's Client keeps the last of a repeated option (`-threads 1
// -threads 2`, `-s -s`); clap would refuse the second.
#[command(
    name = "ycsb",
    version,
    about,
    long_about = None,
    after_help = AFTER_HELP,
    args_override_self = true
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load phase: insert the records (YCSB's `ycsb load`).
    Load(CommonArgs),
    /// Transaction phase: run the operation mix (YCSB's `ycsb run`).
    Run(CommonArgs),
    /// Create the table, pre-split on YCSB key boundaries.
    CreateTable(CreateTableArgs),
    /// Ask the master to run its catalog janitor now (HBase's `Admin.runCatalogJanitor`).
    /// The master runs it every 5 minutes on its own; its scan of `hbase:meta` makes a freshly
    /// started region server recompile its read path, so benches/sweep/run runs it while it
    /// warms the servers up, not during a measured point.
    CatalogJanitor(CommonArgs),
    /// Combine runs saved with `-p artifacts.dir=DIR` (several processes or client machines
    /// running at once) into one report: histograms added, not averages averaged.
    Merge(MergeArgs),
    /// One load, then runs at several thread counts / workloads / target rates, each on a
    /// fresh clone of the loaded table: `-threads 1,8,64 -P workloada,workloadc -target 0,500
    /// --out DIR`. Writes every point's report, summary.csv/json and report.html.
    Sweep(SweepArgs),
    /// Builds report.html from sweep directories, overlaying several.
    Plot(PlotArgs),
    /// YCSB's interactive command line: read, scan, insert, update, delete, table, help, quit
    /// (commands on stdin).
    Shell(CommonArgs),
}

/// Options of `sweep`: those of `run`, with lists for -P, -threads and -target.
#[derive(Debug, Args, Clone)]
pub struct SweepArgs {
    #[command(flatten)]
    /// The same options as load and run (-P, -threads and -target take comma lists).
    pub common: CommonArgs,
    /// Where to write the results.
    #[arg(long, value_name = "DIR")]
    pub out: String,
    /// Keep each point's table instead of dropping it.
    #[arg(long)]
    pub keep_tables: bool,
}

/// Options of `plot`.
#[derive(Debug, Args, Clone)]
pub struct PlotArgs {
    /// Sweep result directories.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<String>,
    /// The page to write.
    #[arg(long, value_name = "FILE", default_value = "report.html")]
    pub out: String,
}

/// Options of `merge`.
#[derive(Debug, Args, Clone)]
pub struct MergeArgs {
    /// The runs' artifacts directories.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<String>,
    /// Report properties: exporter, exportfile, hdrhistogram.percentiles.
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    pub props: Vec<String>,
    /// Also write the merged plots (latency by percentile, throughput and p99 over time, per
    /// run and together) to this self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub out: Option<String>,
}

/// Options of `load` and `run`.
#[derive(Debug, Args, Clone, Default)]
pub struct CommonArgs {
    /// Binding name, as in `bin/ycsb load hbase2`: hbase, hbase1, hbase10, hbase12, hbase14,
    /// hbase2, hbase20, hbase22 (all the same), or `memory` for a dry run without a cluster.
    #[arg(value_name = "DB")]
    pub binding: Option<String>,
    /// ZooKeeper quorum of the cluster (sets hbase.zookeeper.quorum).
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT]")]
    pub zk: Option<String>,
    /// Workload properties file, by path or built-in name (workloada..workloadf); repeatable.
    // allow_hyphen_values here and below: YCSB's Client takes whatever follows an option as
    // its value, a leading `-` included.
    #[arg(short = 'P', value_name = "FILE", allow_hyphen_values = true)]
    pub files: Vec<String>,
    /// Sets a property; beats every file.
    #[arg(short = 'p', value_name = "NAME=VALUE", allow_hyphen_values = true)]
    pub props: Vec<String>,
    /// Number of client tasks (threadcount; also -threads).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub threads: Option<String>,
    /// Target operations per second for the whole run, 0 for unthrottled (also -target).
    #[arg(long, value_name = "OPS", allow_hyphen_values = true)]
    pub target: Option<String>,
    /// YCSB's classpath option: directories (or files), `:`-separated; the first holding an
    /// hbase-site.xml configures the HBase client (also -cp). Default: $HBASE_CONF_DIR.
    #[arg(long = "cp", value_name = "DIR[:DIR]")]
    pub classpath: Vec<String>,
    /// YCSB's JVM options (also -jvm-args): accepted and ignored, there is no JVM.
    #[arg(long = "jvm-args", value_name = "ARGS", allow_hyphen_values = true)]
    pub jvm_args: Vec<String>,
    /// Print a status line on stderr every status.interval seconds.
    #[arg(short = 's')]
    pub status: bool,
    /// Label prefixed to the status line.
    #[arg(short = 'l', value_name = "LABEL", allow_hyphen_values = true)]
    pub label: Option<String>,
    /// Table name (sets table).
    #[arg(long, value_name = "NAME")]
    pub table: Option<String>,
    /// Column family (sets columnfamily).
    #[arg(long, value_name = "NAME")]
    pub columnfamily: Option<String>,
    /// Binding (sets db), like the positional DB.
    #[arg(long, value_name = "DB", allow_hyphen_values = true)]
    pub db: Option<String>,
    /// YCSB's -load flag; accepted, the subcommand decides.
    #[arg(long, hide = true)]
    pub load: bool,
    /// YCSB's -t flag; accepted, the subcommand decides.
    #[arg(short = 't', hide = true)]
    pub transactions: bool,
}

/// Options of `create-table`.
#[derive(Debug, Args, Clone)]
pub struct CreateTableArgs {
    /// Number of regions to pre-split into.
    #[arg(long, value_name = "N", default_value = "10")]
    pub regions: String,
    #[command(flatten)]
    /// The same options as load and run.
    pub common: CommonArgs,
}

/// The long options that YCSB spells with one dash.
const SINGLE_DASH_LONG: [&str; 12] = [
    "cp",
    "jvm-args",
    "out",
    "threads",
    "target",
    "db",
    "load",
    "zk",
    "table",
    "columnfamily",
    "regions",
    "help",
];

/// The options that take the next argument as their value (spelled as after the rewrite).
const TAKES_VALUE: [&str; 13] = [
    "-p",
    "-P",
    "-l",
    "--cp",
    "--jvm-args",
    "--out",
    "--threads",
    "--target",
    "--db",
    "--zk",
    "--table",
    "--columnfamily",
    "--regions",
];

/// `arg` as the option parser reads it: `-threads` as `--threads` (and the other long names
/// YCSB spells with one dash); anything else as written.
fn rewritten(arg: &str) -> String {
    if let Some(rest) = arg.strip_prefix('-') {
        if !rest.starts_with('-') {
            let name = rest.split('=').next().unwrap_or("");
            if SINGLE_DASH_LONG.contains(&name) {
                return format!("-{arg}");
            }
        }
    }
    arg.to_string()
}

/// Whether option `arg` (as written on the command line) takes the next argument as its
/// value: `-p`, `-l`, `-threads`, `--zk`, … The one rule for every reader of a command line
/// (`ycsb sweep` splits its own before it passes the rest on).
pub(crate) fn takes_value(arg: &str) -> bool {
    TAKES_VALUE.contains(&rewritten(arg).as_str())
}

/// Rewrites `-threads` to `--threads` (and the other long names YCSB spells with one dash),
/// except where it is an option's value: `-l -threads` is the label `-threads`, as in YCSB.
pub fn normalize_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut is_value = false;
    for a in args {
        if std::mem::take(&mut is_value) {
            out.push(a.clone());
            continue;
        }
        let arg = rewritten(a);
        is_value = TAKES_VALUE.contains(&arg.as_str());
        out.push(arg);
    }
    out
}

/// What the command line asks for.
#[derive(Debug)]
pub struct Invocation {
    /// The subcommand.
    pub command: Command,
    /// Property pairs from the command line, in the order given.
    pub cli_props: Vec<(String, String)>,
}

/// A `-threads` or `-target` value as YCSB's Client stores it: `Integer.parseInt`, printed
/// back (`007` is `7`, `+3` is `3`, `-0` is `0`). Anything else is refused, where YCSB dies
/// with a NumberFormatException (one kept difference: Java also reads non-ASCII decimal
/// digits; they are refused here).
fn java_int(flag: &str, value: &str) -> Result<String, Error> {
    value.parse::<i32>().map(|n| n.to_string()).map_err(|_| {
        Error::Usage(format!(
            "-{flag} {value:?}: expected a whole number from {} to {}",
            i32::MIN,
            i32::MAX
        ))
    })
}

/// Checks every `-threads` and `-target` value given, not only the last (the one that counts):
/// YCSB's Client parses each as it comes and dies on a bad one. `args` as normalised.
fn check_every_number(args: &[String]) -> Result<(), Error> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        for flag in ["threads", "target"] {
            let long = format!("--{flag}");
            let value = if a == long {
                args.get(i + 1).map(String::as_str)
            } else {
                a.strip_prefix(long.as_str())
                    .and_then(|rest| rest.strip_prefix('='))
            };
            match value {
                Some(v) if !(flag == "target" && is_plain_decimal(v)) => {
                    java_int(flag, v)?;
                }
                _ => {}
            }
        }
        i += if TAKES_VALUE.contains(&a) { 2 } else { 1 };
    }
    Ok(())
}

/// ASCII digits with one `.` among them (`0.5`, `12.`): a fractional rate.
fn is_plain_decimal(v: &str) -> bool {
    v.bytes().filter(|&b| b == b'.').count() == 1
        && v.bytes().any(|b| b.is_ascii_digit())
        && v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// The command line's properties in the order given. `lists`: `sweep`, whose `-threads` and
/// `-target` are comma-separated lists, taken as given.
fn ordered_cli_props(m: &ArgMatches, lists: bool) -> Result<Vec<(String, String)>, Error> {
    let mut pairs: Vec<(usize, String, String)> = Vec::new();
    let simple = [
        ("zk", "hbase.zookeeper.quorum"),
        ("threads", "threadcount"),
        ("target", "target"),
        ("label", "label"),
        ("table", "table"),
        ("columnfamily", "columnfamily"),
        ("db", "db"),
        ("binding", "db"),
    ];
    for (id, key) in simple {
        if let (Some(idx), Some(vals)) = (m.indices_of(id), m.get_many::<String>(id)) {
            for (i, v) in idx.zip(vals) {
                let v = match id {
                    // Kept difference: a fractional -target (YCSB throws) is a rate here, as
                    // `sweep` passes its rates to each point.
                    "target" if !lists && is_plain_decimal(v) => v.clone(),
                    "threads" | "target" if !lists => java_int(id, v)?,
                    _ => v.clone(),
                };
                pairs.push((i, key.to_string(), v));
            }
        }
    }
    if let (Some(idx), Some(vals)) = (m.indices_of("props"), m.get_many::<String>("props")) {
        for (i, v) in idx.zip(vals) {
            let (k, val) = v
                .split_once('=')
                .ok_or_else(|| Error::Usage(format!("-p {v:?}: expected NAME=VALUE")))?;
            pairs.push((i, k.to_string(), val.to_string()));
        }
    }
    if m.get_flag("status") {
        let i = m.index_of("status").unwrap_or(0);
        pairs.push((i, "status".into(), "true".into()));
    }
    pairs.sort_by_key(|p| p.0);
    Ok(pairs.into_iter().map(|(_, k, v)| (k, v)).collect())
}

/// Parses the arguments (without the program name). Help and version come back as
/// `Error::Help` with clap's text.
pub fn parse(args: &[String]) -> Result<Invocation, Error> {
    let normalized = normalize_args(args);
    let mut argv = vec!["ycsb".to_string()];
    argv.extend(normalized.iter().cloned());
    let matches = Cli::command().try_get_matches_from(argv).map_err(|e| {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Error::Help(e.to_string()),
            _ => Error::Usage(e.to_string()),
        }
    })?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| Error::Usage(e.to_string()))?;
    let (_, sub) = matches.subcommand().expect("a subcommand is required");
    let cli_props = match &cli.command {
        Command::Plot(_) => Vec::new(),
        Command::Merge(m) => m
            .props
            .iter()
            .map(|v| {
                v.split_once('=')
                    .map(|(k, val)| (k.to_string(), val.to_string()))
                    .ok_or_else(|| Error::Usage(format!("-p {v:?}: expected NAME=VALUE")))
            })
            .collect::<Result<_, _>>()?,
        Command::Sweep(_) => ordered_cli_props(sub, true)?,
        _ => {
            check_every_number(&normalized)?;
            ordered_cli_props(sub, false)?
        }
    };
    Ok(Invocation {
        command: cli.command,
        cli_props,
    })
}

/// Reads a `-P` argument: a file on disk; a bare name that is not on disk
/// (`workloada`..`workloadf`) is the built-in workload. A path that does not exist is an
/// error, never a silent fall-back to a built-in file.
pub fn read_workload_file(name: &str) -> Result<Vec<u8>, Error> {
    match std::fs::read(name) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let bare = !name.contains('/') && !name.contains(std::path::MAIN_SEPARATOR);
            match builtin_workload(name) {
                Some(text) if bare => Ok(text.as_bytes().to_vec()),
                _ => Err(Error::Config(format!(
                    "workload file {name:?} does not exist{}",
                    if bare {
                        " (built in: workloada..workloadf, by bare name)"
                    } else {
                        ""
                    }
                ))),
            }
        }
        Err(e) => Err(Error::Config(format!(
            "cannot read workload file {name:?}: {e}"
        ))),
    }
}

/// The merged properties: files in order, then the command-line pairs in order.
pub fn build_properties(
    files: &[String],
    cli_props: &[(String, String)],
) -> Result<Properties, Error> {
    let mut p = Properties::new();
    for f in files {
        let bytes = read_workload_file(f)?;
        let pairs = parse_properties(&bytes)
            .map_err(|e| Error::Config(format!("workload file {f:?}: {e}")))?;
        p.begin_source();
        for (k, v) in pairs {
            p.set(k, v);
        }
    }
    p.begin_source();
    for (k, v) in cli_props {
        p.set(k.clone(), v.clone());
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn single_dash_long_flags() {
        let inv = parse(&args(
            "run -threads 32 -target 100 -s -l lbl -P workloada --zk z:1",
        ))
        .unwrap();
        assert!(matches!(inv.command, Command::Run(_)));
        assert_eq!(
            inv.cli_props,
            vec![
                ("threadcount".to_string(), "32".to_string()),
                ("target".into(), "100".into()),
                ("status".into(), "true".into()),
                ("label".into(), "lbl".into()),
                ("hbase.zookeeper.quorum".into(), "z:1".into()),
            ]
        );
        let inv = parse(&args("load hbase2 --threads=4 -db memory")).unwrap();
        assert_eq!(
            inv.cli_props,
            vec![
                ("db".to_string(), "hbase2".to_string()),
                ("threadcount".into(), "4".into()),
                ("db".into(), "memory".into()),
            ]
        );
    }

    #[test]
    fn precedence_files_then_command_line() {
        let dir = std::env::temp_dir().join(format!("ycsb-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f1 = dir.join("one");
        let f2 = dir.join("two");
        std::fs::write(&f1, "recordcount=1\nfieldcount=3\nthreadcount=9\n").unwrap();
        std::fs::write(&f2, "recordcount=2\n").unwrap();
        let line = format!(
            "run -p fieldcount=7 -P {} -threads 5 -P {} -p fieldcount=8",
            f1.display(),
            f2.display()
        );
        let inv = parse(&args(&line)).unwrap();
        let Command::Run(c) = &inv.command else {
            panic!()
        };
        let p = build_properties(&c.files, &inv.cli_props).unwrap();
        assert_eq!(p.get("recordcount"), Some("2")); // later file wins
        assert_eq!(p.get("fieldcount"), Some("8")); // command line beats files, last -p wins
        assert_eq!(p.get("threadcount"), Some("5")); // -threads beats the file
                                                     // A flag given after a -p of the same property wins, and the other way round.
        let inv = parse(&args("run -p threadcount=3 -threads 4")).unwrap();
        let p = build_properties(&[], &inv.cli_props).unwrap();
        assert_eq!(p.get("threadcount"), Some("4"));
        let inv = parse(&args("run -threads 4 -p threadcount=3")).unwrap();
        let p = build_properties(&[], &inv.cli_props).unwrap();
        assert_eq!(p.get("threadcount"), Some("3"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn builtin_workloads_by_name_and_path() {
        let p = build_properties(&["workloadd".to_string()], &[]).unwrap();
        assert_eq!(p.get("requestdistribution"), Some("latest"));
        let on_disk = format!("{}/../workloads/workloade", env!("CARGO_MANIFEST_DIR"));
        let p = build_properties(&[on_disk], &[]).unwrap();
        assert_eq!(p.get("maxscanlength"), Some("100"));
        assert!(build_properties(&["workloadz".to_string()], &[]).is_err());
        // A path that does not exist is an error, not the built-in file of that name.
        let e = build_properties(&["no/such/dir/workloada".to_string()], &[]).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn value_with_equals_splits_at_first() {
        let inv = parse(&args("run -p a=b=c")).unwrap();
        assert_eq!(inv.cli_props, vec![("a".to_string(), "b=c".to_string())]);
        assert!(matches!(
            parse(&args("run -p novalue")),
            Err(Error::Usage(_))
        ));
        assert!(matches!(parse(&args("--help")), Err(Error::Help(_))));
        assert!(matches!(parse(&args("frobnicate")), Err(Error::Usage(_))));
    }

    // YCSB's answers in `tests/ycsb_conformance.rs` (`command_lines_read_as_ycsb_reads_them`),
    // kept here as quick checks.
    #[test]
    fn as_ycsb_client_reads_options() {
        let props = |line: &str| parse(&args(line)).unwrap().cli_props;
        let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
        // A repeated option keeps its last value.
        assert_eq!(
            props("run -threads 1 -threads 2 -s -s"),
            vec![kv("threadcount", "2"), kv("status", "true")]
        );
        // A value may start with '-', and is never rewritten as an option.
        assert_eq!(
            props("run -l -threads -p -x=1 -db -s"),
            vec![kv("label", "-threads"), kv("-x", "1"), kv("db", "-s")]
        );
        // -threads and -target as Integer.parseInt reads and String.valueOf prints them.
        assert_eq!(
            props("run -threads 007 -target +3"),
            vec![kv("threadcount", "7"), kv("target", "3")]
        );
        // Every occurrence is checked, not only the last.
        assert!(matches!(
            parse(&args("run -threads x -threads 2")),
            Err(Error::Usage(_))
        ));
        for bad in ["x", "4.0", "2147483648"] {
            assert!(matches!(
                parse(&args(&format!("run -threads {bad}"))),
                Err(Error::Usage(_))
            ));
        }
        // sweep's lists are taken as given.
        assert_eq!(
            props("sweep -threads 1,8 --out d")[0],
            kv("threadcount", "1,8")
        );
    }

    #[test]
    fn create_table_args() {
        let inv = parse(&args("create-table -regions 30 --zk z:1 -p columnfamily=f")).unwrap();
        let Command::CreateTable(c) = inv.command else {
            panic!()
        };
        assert_eq!(c.regions, "30");
    }

    #[test]
    fn catalog_janitor_args() {
        let inv = parse(&args("catalog-janitor -zk z:1 -cp /etc/hbase/conf")).unwrap();
        let Command::CatalogJanitor(c) = inv.command else {
            panic!()
        };
        assert_eq!(c.zk.as_deref(), Some("z:1"));
    }
}
