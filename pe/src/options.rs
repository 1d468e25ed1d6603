//! PerformanceEvaluation's command line: `[--option=value ...] <command> <nclients>`.
//!
//! Options are parsed as PerformanceEvaluation parses them (prefix match, `--rows=N` and so
//! on), and rows are derived from `--rows`/`--size` the same way. Options this
//! implementation cannot honour are refused with an error naming them, never ignored.

use hbase_client::admin::{BloomFilter, Compression, DataBlockEncoding};

use crate::command::{lookup, Command};
use crate::PeError;

/// PerformanceEvaluation's default value length.
pub const DEFAULT_VALUE_LENGTH: u32 = 1000;
const ONE_GB: u64 = 1024 * 1024 * 1000;
/// Rows per client by default: one GB of 1,000-byte values.
pub const DEFAULT_ROWS_PER_GB: u32 = (ONE_GB / DEFAULT_VALUE_LENGTH as u64) as u32;

/// Everything one run needs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The command's name as given.
    pub cmd_name: String,
    /// The test to run.
    pub command: Command,
    /// The Java class name of the test (for the report).
    pub class_name: &'static str,
    /// Concurrent clients.
    pub clients: u32,
    /// ZooKeeper quorum of the cluster.
    pub zk: String,
    /// Server addresses to rewrite (`--addressMap`, `host[:port]=host[:port],…`), for servers
    /// registered under names this machine cannot reach (docker).
    pub address_map: Option<String>,
    /// `--nomapred` was given (without it we still run clients as tasks, and say so).
    pub nomapred: bool,
    /// First row of client 0 (`--startRow`).
    pub start_row: u32,
    /// Rows each client runs (`--rows`).
    pub per_client_rows: u32,
    /// Rows of the whole key space.
    pub total_rows: u32,
    /// `--size` in GiB.
    pub size: f32,
    /// `--cycles`.
    pub cycles: u32,
    /// `--sampleRate`.
    pub sample_rate: f32,
    /// `--table`.
    pub table: String,
    /// `--compress`.
    pub compression: Compression,
    /// `--blockEncoding`.
    pub block_encoding: DataBlockEncoding,
    /// `--bloomFilter`.
    pub bloom: BloomFilter,
    /// `--blockSize`.
    pub block_size: Option<u32>,
    /// `--inmemory`.
    pub in_memory: bool,
    /// `--flushCommits`.
    pub flush_commits: bool,
    /// `--writeToWAL`.
    pub write_to_wal: bool,
    /// `--autoFlush`: true sends every put at once instead of through the mutator.
    pub auto_flush: bool,
    /// `--bufferSize`: the mutator's write buffer.
    pub buffer_size: u64,
    /// `--presplit`: regions to pre-split into (0 = none).
    pub presplit: u32,
    /// `--oneCon` / `--connCount`: clients (connections) shared by the test threads.
    pub conn_count: u32,
    /// `--multiGet`.
    pub multi_get: u32,
    /// `--multiPut`.
    pub multi_put: u32,
    /// `--valueSize`.
    pub value_size: u32,
    /// `--valueRandom`.
    pub value_random: bool,
    /// `--period`: rows between progress lines.
    pub period: u32,
    /// `--measureAfter`.
    pub measure_after: u32,
    /// `--latencyThreshold` in milliseconds.
    pub latency_threshold_ms: u64,
    /// `--randomSleep` in milliseconds.
    pub random_sleep_ms: u32,
    /// `--addColumns`.
    pub add_columns: bool,
    /// `--columns`.
    pub columns: u32,
    /// `--families`.
    pub families: u32,
    /// `--caching`.
    pub caching: u32,
    /// `--cacheBlocks`.
    pub cache_blocks: bool,
    /// `--oneCon` as given.
    pub one_con: bool,
    /// `--connCount` as given (-1: not given).
    pub conn_count_given: i64,
    /// Notes about options accepted without effect, printed before the run.
    pub notes: Vec<String>,
}

impl Options {
    fn defaults() -> Options {
        Options {
            cmd_name: String::new(),
            command: Command::SequentialWrite,
            class_name: "",
            clients: 1,
            zk: std::env::var("HBASE_ZK").unwrap_or_else(|_| "127.0.0.1:2181".into()),
            address_map: std::env::var("HBASE_ADDRESS_MAP").ok(),
            nomapred: false,
            start_row: 0,
            per_client_rows: DEFAULT_ROWS_PER_GB,
            total_rows: DEFAULT_ROWS_PER_GB,
            size: 1.0,
            cycles: 1,
            sample_rate: 1.0,
            table: "TestTable".into(),
            compression: Compression::None,
            block_encoding: DataBlockEncoding::None,
            bloom: BloomFilter::Row,
            block_size: None,
            in_memory: false,
            flush_commits: true,
            write_to_wal: true,
            auto_flush: false,
            buffer_size: 2 * 1024 * 1024,
            presplit: 0,
            conn_count: 0,
            multi_get: 0,
            multi_put: 0,
            value_size: DEFAULT_VALUE_LENGTH,
            value_random: false,
            // PerformanceEvaluation computes its default period from the default row count,
            // before --rows is read: 1,048,576 / 10.
            period: DEFAULT_ROWS_PER_GB / 10,
            measure_after: 0,
            latency_threshold_ms: 0,
            random_sleep_ms: 0,
            add_columns: true,
            columns: 1,
            families: 1,
            caching: 30,
            cache_blocks: true,
            one_con: false,
            conn_count_given: -1,
            notes: Vec::new(),
        }
    }

    /// Family `n`'s name: `info0`, `info1`, …
    pub fn family(n: u32) -> String {
        format!("info{n}")
    }

    /// Column `n`'s qualifier: `0`, `1`, …
    pub fn qualifier(n: u32) -> String {
        n.to_string()
    }

    /// The average value length, for the MB/s figure.
    pub fn average_value_length(&self) -> u32 {
        if self.value_random {
            self.value_size / 2
        } else {
            self.value_size
        }
    }
}

/// What the command line asked for.
#[derive(Debug)]
pub enum Parsed {
    /// Run a test.
    Run(Box<Options>),
    /// Print the usage and exit 0.
    Help,
}

fn number<T: std::str::FromStr>(option: &str, value: &str) -> Result<T, PeError> {
    value.trim().parse().map_err(|_| {
        PeError::Usage(format!(
            "--{option}: '{value}' is not a valid {}",
            std::any::type_name::<T>()
        ))
    })
}

fn boolean(option: &str, value: &str) -> Result<bool, PeError> {
    // Java's Boolean.parseBoolean: "true" in any case is true, anything else false. A typo
    // would silently mean false there; here it is an error.
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(PeError::Usage(format!(
            "--{option}: '{value}' is not true or false"
        ))),
    }
}

/// Parses PerformanceEvaluation's arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Parsed, PeError> {
    let mut o = Options::defaults();
    let mut it = args.iter();
    let mut one_con = false;
    let mut conn_count: i64 = -1;
    let mut value_zipf = false;
    while let Some(arg) = it.next() {
        let arg = arg.as_str();
        if arg == "-h" || arg.starts_with("--h") {
            return Ok(Parsed::Help);
        }
        if let Some(rest) = arg.strip_prefix("--") {
            let (name, value) = match rest.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (rest, None),
            };
            let need = |v: Option<&str>| {
                v.map(str::to_string)
                    .ok_or_else(|| PeError::Usage(format!("--{name} needs a value: --{name}=...")))
            };
            match name {
                "nomapred" => o.nomapred = true,
                "zk" => o.zk = need(value)?,
                "addressMap" => {
                    let map = need(value)?;
                    hbase_client::AddressMap::parse(&map)
                        .map_err(|e| PeError::Usage(format!("--addressMap: {e}")))?;
                    o.address_map = Some(map);
                }
                "rows" => o.per_client_rows = number(name, &need(value)?)?,
                "cycles" => o.cycles = number(name, &need(value)?)?,
                "sampleRate" => o.sample_rate = number(name, &need(value)?)?,
                "table" => o.table = need(value)?,
                "startRow" => o.start_row = number(name, &need(value)?)?,
                "compress" => {
                    o.compression = match Compression::parse(&need(value)?) {
                        Compression::Other(s) => {
                            return Err(PeError::Usage(format!("--compress: unknown codec {s}")))
                        }
                        c => c,
                    }
                }
                "blockEncoding" => {
                    o.block_encoding = match DataBlockEncoding::parse(&need(value)?) {
                        DataBlockEncoding::Other(s) => {
                            return Err(PeError::Usage(format!(
                                "--blockEncoding: unknown encoding {s}"
                            )))
                        }
                        e => e,
                    }
                }
                "bloomFilter" => {
                    o.bloom = match BloomFilter::parse(&need(value)?) {
                        BloomFilter::Other(s) => {
                            return Err(PeError::Usage(format!(
                                "--bloomFilter: unknown bloom type {s}"
                            )))
                        }
                        b => b,
                    }
                }
                "blockSize" => o.block_size = Some(number(name, &need(value)?)?),
                "inmemory" => o.in_memory = boolean(name, &need(value)?)?,
                "flushCommits" => o.flush_commits = boolean(name, &need(value)?)?,
                "writeToWAL" => o.write_to_wal = boolean(name, &need(value)?)?,
                "presplit" => o.presplit = number(name, &need(value)?)?,
                "autoFlush" => o.auto_flush = boolean(name, &need(value)?)?,
                "oneCon" => one_con = boolean(name, &need(value)?)?,
                "connCount" => conn_count = number(name, &need(value)?)?,
                "latencyThreshold" => o.latency_threshold_ms = number(name, &need(value)?)?,
                "latency" => {}
                "multiGet" => o.multi_get = number(name, &need(value)?)?,
                "multiPut" => o.multi_put = number(name, &need(value)?)?,
                "size" => {
                    o.size = number(name, &need(value)?)?;
                    if o.size <= 1.0 {
                        return Err(PeError::Usage("--size must be > 1; i.e. 1GB".into()));
                    }
                }
                "randomSleep" => o.random_sleep_ms = number(name, &need(value)?)?,
                "measureAfter" => o.measure_after = number(name, &need(value)?)?,
                "valueSize" => o.value_size = number(name, &need(value)?)?,
                "valueRandom" => o.value_random = true,
                "valueZipf" => value_zipf = true,
                "period" => o.period = number(name, &need(value)?)?,
                "addColumns" => o.add_columns = boolean(name, &need(value)?)?,
                "columns" => o.columns = number(name, &need(value)?)?,
                "families" => o.families = number(name, &need(value)?)?,
                "caching" => o.caching = number(name, &need(value)?)?,
                "cacheBlocks" => o.cache_blocks = boolean(name, &need(value)?)?,
                "bufferSize" => o.buffer_size = number(name, &need(value)?)?,
                "traceRate" | "asyncPrefetch" => o.notes.push(format!(
                    "--{name} is accepted and has no effect here (no HTrace; scans prefetch anyway)"
                )),
                "replicas" => {
                    let n: u32 = number(name, &need(value)?)?;
                    if n != 1 {
                        return Err(PeError::Usage(
                            "--replicas: region replicas are not supported by this client".into(),
                        ));
                    }
                }
                "scanReadType" => {
                    let v = need(value)?;
                    if !v.eq_ignore_ascii_case("default") {
                        return Err(PeError::Usage(format!(
                            "--scanReadType={v}: only DEFAULT is supported"
                        )));
                    }
                }
                "filterAll" | "usetags" | "numoftags" | "splitPolicy" | "inmemoryCompaction" => {
                    return Err(PeError::Usage(format!(
                        "--{name} is not supported by this implementation"
                    )))
                }
                _ => {
                    return Err(PeError::Usage(format!(
                        "ERROR: Unrecognized option/command: {arg}"
                    )))
                }
            }
            continue;
        }
        // The command, then the number of clients, then nothing.
        let Some((command, class_name)) = lookup(arg) else {
            return Err(PeError::Usage(format!(
                "ERROR: Unrecognized option/command: {arg}"
            )));
        };
        let clients = it
            .next()
            .ok_or_else(|| PeError::Usage(format!("Command {arg} does not have threads number")))?;
        let clients: i64 = clients.parse().map_err(|_| {
            PeError::Usage(format!(
                "Command {arg} does not have threads number: '{clients}'"
            ))
        })?;
        if clients <= 0 {
            return Err(PeError::Usage("Number of clients must be > 0".into()));
        }
        if let Some(extra) = it.next() {
            return Err(PeError::Usage(format!(
                "unexpected argument after <nclients>: {extra}"
            )));
        }
        o.cmd_name = arg.to_string();
        o.command = command;
        o.class_name = class_name;
        o.clients = u32::try_from(clients)
            .map_err(|_| PeError::Usage("Number of clients is too large".into()))?;
        validate(&mut o, one_con, conn_count, value_zipf)?;
        calculate_rows_and_size(&mut o)?;
        return Ok(Parsed::Run(Box::new(o)));
    }
    Err(PeError::Usage(
        "a command and the number of clients are required".into(),
    ))
}

fn validate(
    o: &mut Options,
    one_con: bool,
    conn_count: i64,
    value_zipf: bool,
) -> Result<(), PeError> {
    if !o.auto_flush && o.multi_put > 0 {
        return Err(PeError::Usage(
            "autoFlush must be true when multiPut is more than 0".into(),
        ));
    }
    if one_con && conn_count > 1 {
        return Err(PeError::Usage(
            "oneCon is set to true, connCount should not bigger than 1".into(),
        ));
    }
    if value_zipf {
        return Err(PeError::Usage(
            "--valueZipf is not supported by this implementation".into(),
        ));
    }
    for (name, v) in [
        ("rows", o.per_client_rows as i64),
        ("valueSize", o.value_size as i64),
        ("columns", o.columns as i64),
        ("families", o.families as i64),
        ("cycles", o.cycles as i64),
        ("caching", o.caching as i64),
        ("period", o.period as i64),
        ("bufferSize", o.buffer_size as i64),
    ] {
        if v <= 0 {
            return Err(PeError::Usage(format!("--{name} must be > 0")));
        }
    }
    if !(o.sample_rate > 0.0 && o.sample_rate <= 1.0) {
        return Err(PeError::Usage("--sampleRate must be in (0, 1]".into()));
    }
    o.one_con = one_con;
    o.conn_count_given = conn_count;
    o.conn_count = if one_con {
        1
    } else if conn_count > 0 {
        conn_count as u32
    } else {
        o.clients
    };
    Ok(())
}

fn calculate_rows_and_size(o: &mut Options) -> Result<(), PeError> {
    let per_row = o.average_value_length() as u64 * o.families as u64 * o.columns as u64;
    let rows_per_gb = ONE_GB / per_row.max(1);
    let random = matches!(o.command, Command::RandomRead | Command::RandomSeekScan);
    let too_many = || PeError::Usage("the run has more than 2^31 rows".into());
    if random && o.size != 1.0 && o.per_client_rows != DEFAULT_ROWS_PER_GB {
        o.total_rows = i32::try_from(o.size as u64 * rows_per_gb).map_err(|_| too_many())? as u32;
    } else if o.size != 1.0 {
        o.total_rows = i32::try_from(o.size as u64 * rows_per_gb).map_err(|_| too_many())? as u32;
        o.per_client_rows = o.total_rows / o.clients;
    } else {
        let total = o.per_client_rows as u64 * o.clients as u64;
        o.total_rows = i32::try_from(total).map_err(|_| too_many())? as u32;
        // Integer division, as PerformanceEvaluation does it (and echoes it).
        o.size = (o.total_rows as u64 / rows_per_gb) as f32;
    }
    if o.total_rows == 0 {
        return Err(PeError::Usage("the run has no rows".into()));
    }
    Ok(())
}

/// The options as PerformanceEvaluation echoes them before a run (its field names, in its
/// order; numbers that Java prints as strings are quoted the same way).
pub fn options_json(o: &Options) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let fields: Vec<(&str, String)> = vec![
        ("cmdName", q(&o.cmd_name)),
        ("nomapred", o.nomapred.to_string()),
        ("filterAll", "false".into()),
        ("startRow", q(&o.start_row.to_string())),
        ("size", format!("{:?}", o.size)),
        ("perClientRunRows", q(&o.per_client_rows.to_string())),
        ("numClientThreads", o.clients.to_string()),
        ("totalRows", q(&o.total_rows.to_string())),
        ("measureAfter", o.measure_after.to_string()),
        ("sampleRate", format!("{:?}", o.sample_rate)),
        ("traceRate", "0.0".into()),
        ("tableName", q(&o.table)),
        ("flushCommits", o.flush_commits.to_string()),
        ("writeToWAL", o.write_to_wal.to_string()),
        ("autoFlush", o.auto_flush.to_string()),
        ("oneCon", o.one_con.to_string()),
        ("connCount", o.conn_count_given.to_string()),
        ("useTags", "false".into()),
        ("noOfTags", "1".into()),
        ("reportLatency", "false".into()),
        ("multiGet", o.multi_get.to_string()),
        ("multiPut", o.multi_put.to_string()),
        ("randomSleep", o.random_sleep_ms.to_string()),
        ("inMemoryCF", o.in_memory.to_string()),
        ("presplitRegions", o.presplit.to_string()),
        ("replicas", "1".into()),
        ("compression", q(o.compression.as_str())),
        ("bloomType", q(o.bloom.as_str())),
        ("blockSize", o.block_size.unwrap_or(65536).to_string()),
        ("blockEncoding", q(o.block_encoding.as_str())),
        ("valueRandom", o.value_random.to_string()),
        ("valueZipf", "false".into()),
        ("valueSize", o.value_size.to_string()),
        ("period", q(&o.period.to_string())),
        ("cycles", o.cycles.to_string()),
        ("columns", o.columns.to_string()),
        ("families", o.families.to_string()),
        ("caching", o.caching.to_string()),
        ("latencyThreshold", o.latency_threshold_ms.to_string()),
        ("addColumns", o.add_columns.to_string()),
        ("inMemoryCompaction", q("NONE")),
        ("asyncPrefetch", "false".into()),
        ("cacheBlocks", o.cache_blocks.to_string()),
        ("scanReadType", q("DEFAULT")),
        ("bufferSize", q(&o.buffer_size.to_string())),
    ];
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", body.join(","))
}

/// PerformanceEvaluation's usage text, with this implementation's additions (`--zk`).
pub fn usage() -> String {
    let mut s = String::new();
    s.push_str("Usage: pe  <OPTIONS> <command> <nclients>\n\n");
    s.push_str("General Options:\n");
    s.push_str(
        " zk              ZooKeeper quorum host:port. Default: $HBASE_ZK or 127.0.0.1:2181\n",
    );
    s.push_str(
        " addressMap      Server addresses to rewrite: host[:port]=host[:port],... (servers in\n                 docker). Default: $HBASE_ADDRESS_MAP\n",
    );
    s.push_str(" nomapred        Run multiple clients using threads (always the case here)\n");
    s.push_str(" oneCon          all the threads share the same connection. Default: False\n");
    s.push_str(" connCount       connections all threads share. Default: one per thread\n");
    s.push_str(" sampleRate      Execute test on a sample of total rows. Default: 1.0\n");
    s.push_str(" period          Report every 'period' rows. Default: 104857\n");
    s.push_str(" cycles          How many times to cycle the test. Defaults: 1.\n");
    s.push_str(" latencyThreshold  Report operations over this latency in ms. Default 0\n");
    s.push_str(" measureAfter    Start to measure the latency after this many rows. Default: 0\n");
    s.push_str(" valueSize       Value size. Default: 1000\n");
    s.push_str(" valueRandom     Vary value size between 0 and 'valueSize'\n");
    s.push_str(" blockEncoding   NONE, PREFIX, DIFF, FAST_DIFF, ROW_INDEX_V1. Default: NONE\n\n");
    s.push_str("Table Creation / Write Tests:\n");
    s.push_str(" table           Alternate table name. Default: 'TestTable'\n");
    s.push_str(" rows            Rows each client runs. Default: 1048576\n");
    s.push_str(
        " size            Total size in GiB. Mutually exclusive with --rows. Default: 1.0\n",
    );
    s.push_str(
        " compress        Compression type (NONE, GZ, SNAPPY, LZ4, ZSTD, ...). Default: NONE\n",
    );
    s.push_str(" flushCommits    Flush the mutator at the end. Default: true\n");
    s.push_str(" writeToWAL      Set writeToWAL on puts. Default: True\n");
    s.push_str(" autoFlush       Send each put at once instead of buffering. Default: False\n");
    s.push_str(" multiPut        Batch puts in groups of N (needs autoFlush=true). Default: 0\n");
    s.push_str(
        " presplit        Create a pre-split table (recreated if it exists). Default: disabled\n",
    );
    s.push_str(" columns         Columns to write per row. Default: 1\n");
    s.push_str(" families        Column families of the table. Default: 1\n");
    s.push_str(" bufferSize      Client write buffer. Default: 2MB\n\n");
    s.push_str("Read Tests:\n");
    s.push_str(" multiGet        Batch gets in groups of N (randomRead). Default: disabled\n");
    s.push_str(" inmemory        IN_MEMORY families. Default: false\n");
    s.push_str(" bloomFilter     NONE, ROW, ROWCOL, ROWPREFIX_FIXED_LENGTH\n");
    s.push_str(" blockSize       HFile block size\n");
    s.push_str(" addColumns      Add columns to scans/gets explicitly. Default: true\n");
    s.push_str(" randomSleep     Random sleep before each get, 0..N ms. Default: 0\n");
    s.push_str(" caching         Scan caching. Default: 30\n");
    s.push_str(" cacheBlocks     cacheBlocks of scans. Default: true\n\n");
    s.push_str("Command:\n");
    for (name, _, _, description) in crate::command::COMMANDS {
        s.push_str(&format!(" {name:<20} {description}\n"));
    }
    s.push_str(
        "\nArgs:\n nclients        Integer. Required. Total number of clients. 1 <= value <= 500\n",
    );
    s.push_str("Examples:\n To run a single client doing the default 1M sequentialWrites:\n");
    s.push_str(" $ pe sequentialWrite 1\n To run 10 clients doing increments over ten rows:\n");
    s.push_str(" $ pe --rows=10 --nomapred increment 10\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str) -> Result<Options, PeError> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        match parse(&args)? {
            Parsed::Run(o) => Ok(*o),
            Parsed::Help => panic!("help"),
        }
    }

    #[test]
    fn rows_and_clients_give_total_rows() {
        let o = run("--nomapred --rows=1000 --presplit=4 sequentialWrite 3").unwrap();
        assert_eq!(
            (o.per_client_rows, o.total_rows, o.clients),
            (1000, 3000, 3)
        );
        assert_eq!(
            (o.presplit, o.conn_count, o.class_name),
            (4, 3, "SequentialWriteTest")
        );
        assert_eq!(o.period, 104_857);
    }

    #[test]
    fn size_sets_rows_per_client() {
        let o = run("--size=2 randomWrite 4").unwrap();
        assert_eq!(o.total_rows, 2 * 1_048_576);
        assert_eq!(o.per_client_rows, 2 * 1_048_576 / 4);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_option() {
        for (line, needle) in [
            ("--rows=abc sequentialWrite 1", "--rows"),
            ("--rows=0 sequentialWrite 1", "--rows"),
            ("--autoFlush=maybe sequentialWrite 1", "--autoFlush"),
            ("--multiPut=10 sequentialWrite 1", "autoFlush"),
            ("sequentialWrite", "threads number"),
            ("sequentialWrite 0", "> 0"),
            ("sequentialWrite -2", "> 0"),
            ("noSuchTest 1", "Unrecognized"),
            ("--bogus=1 scan 1", "Unrecognized"),
            ("--filterAll randomRead 1", "not supported"),
            ("--sampleRate=0 randomRead 1", "sampleRate"),
            ("--size=0.5 randomRead 1", "size"),
            ("", "required"),
        ] {
            let err = run(line).unwrap_err().to_string();
            assert!(err.contains(needle), "{line}: {err}");
        }
    }
}
