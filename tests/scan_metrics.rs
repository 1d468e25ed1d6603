//! The scan-metrics oracle: the same scans through the Java client (hbase-shaded-client from
//! Maven Central, `tests/java/interop/ScanMetricsFacts.java`) and through ours, against one
//! table of the test cluster, and their `ScanMetrics` maps compared: Java's
//! `getScanMetrics().getMetricsMap()` against our `ScanMetrics::to_map`.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::StreamExt;
use hbase_client::{Action, Comparator, CompareOp, Filter, Put, Scan, ScanMetrics};

/// Rows `r000` … `r299`, in 4 regions.
const ROWS: u32 = 300;
const SPLITS: [&str; 3] = ["r075", "r150", "r225"];

/// The scans, each run by both clients: options as `name=value` (rows and the regex as text)
/// or a bare flag, the names of `ScanMetricsFacts.java`'s spec.
const SCANS: &[&str] = &[
    // The clients' defaults (caching differs: ours 1000, Java's unbounded; 75 rows a region
    // fit either way).
    "",
    "caching=100",
    // Inside one region, and across all four.
    "start=r010 stop=r060 caching=100",
    "start=r050 stop=r260 caching=100",
    // Reversed: the whole table, and from r200 down to r100 (exclusive).
    "reversed caching=100",
    "reversed start=r200 stop=r100 caching=100",
    // A limit inside one region, one that crosses a region's end, and a reversed one.
    "limit=10 caching=100",
    "start=r060 limit=25 caching=100",
    "reversed limit=5 caching=100",
    // A filter that drops all rows but r010 … r019 (ROWS_FILTERED > 0).
    "valueregex=^a1[0-9]$ caching=100",
    // Rows cut into results of one cell, and into the server's pieces at a tiny result size.
    "batch=1 caching=100",
    "allowpartial maxsize=100 caching=100",
    "batch=2 allowpartial maxsize=1 caching=10 start=r140 stop=r160",
    // Small caching: many RPCs.
    "caching=7",
    "caching=1 start=r140 stop=r160",
    // Empty ranges: between two rows of one region, and after the last row.
    "start=r100a stop=r100z caching=100",
    "start=s caching=100",
];

/// Counters that identical requests over identical data must give identical values in both
/// clients.
const EXACT: &[&str] = &[
    "ROWS_SCANNED",
    "ROWS_FILTERED",
    "REGIONS_SCANNED",
    "BYTES_IN_RESULTS",
    "BYTES_IN_REMOTE_RESULTS",
    "NOT_SERVING_REGION_EXCEPTION",
    "RPC_RETRIES",
    "REMOTE_RPC_RETRIES",
    "RPC_CALLS",
    "REMOTE_RPC_CALLS",
    "BLOCK_BYTES_SCANNED",
    "BYTES_READ_FROM_MEMSTORE",
];

/// Store-file bytes the servers read, from disk or from their block cache: how they split
/// depends on what the cache held (which client read a block first), not on the request, so
/// only their sum is compared exactly; each, and `BLOCK_READ_OPS_COUNT` (blocks read from
/// disk), only for presence.
const FILE_BYTES: [&str; 2] = ["BYTES_READ_FROM_FS", "BYTES_READ_FROM_BLOCK_CACHE"];

/// One scan's tokens as `ScanMetricsFacts.java` reads them: bytes as `x<hex>`.
fn java_line(case: &str) -> String {
    let mut line = String::from("scan");
    for token in case.split_whitespace() {
        line.push(' ');
        match token.split_once('=') {
            Some((k @ ("start" | "stop" | "valueregex"), v)) => {
                line.push_str(&format!("{k}={}", hbase_it::spec_bytes(v.as_bytes())));
            }
            _ => line.push_str(token),
        }
    }
    line
}

/// One scan as ours, with metrics.
fn our_scan(case: &str) -> Scan {
    let mut scan = Scan::new().scan_metrics(true);
    for token in case.split_whitespace() {
        let (k, v) = token.split_once('=').unwrap_or((token, ""));
        let n = || v.parse::<u64>().expect("a number");
        scan = match k {
            "start" => scan.start_row(v.as_bytes().to_vec()),
            "stop" => scan.stop_row(v.as_bytes().to_vec()),
            "reversed" => scan.reversed(true),
            "limit" => scan.limit(n()),
            "caching" => scan.caching(n() as u32),
            "maxsize" => scan.max_result_size(n()),
            "batch" => scan.batch(n() as u32),
            "allowpartial" => scan.allow_partial_results(true),
            "valueregex" => scan.filter(Filter::Value(
                CompareOp::Equal,
                Comparator::Regex(v.to_string()),
            )),
            _ => panic!("unknown scan option {token}"),
        };
    }
    scan
}

/// `results=R NAME=V ...`: the results count and the metrics.
fn parse_java(line: &str) -> (u64, BTreeMap<String, u64>) {
    let mut results = None;
    let mut map = BTreeMap::new();
    for token in line.split(' ') {
        let (k, v) = token.split_once('=').expect("NAME=VALUE");
        let v: u64 = v.parse().expect("a count");
        if k == "results" {
            results = Some(v);
        } else {
            map.insert(k.to_string(), v);
        }
    }
    (results.expect("results="), map)
}

/// Every scan of [`SCANS`] through Java's client and ours over a table of 4 regions whose
/// cells are partly in store files and partly in memstores: the same keys in both maps, and
/// the same values of the counters of [`EXACT`] and of the sum of [`FILE_BYTES`]; the rest
/// (times, and the counters of the server's disk reads) present in both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_metrics_are_the_java_clients() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_metrics_java");
    hbase_it::create_table(&client, &name, &SPLITS).await;
    let table = client.table(&name.to_string()).unwrap();
    // Two cells a row, flushed to store files; then a third cell on every third row, left in
    // the memstore.
    let puts: Vec<Action> = (0..ROWS)
        .map(|i| {
            Action::Put(
                Put::new(format!("r{i:03}"))
                    .add("cf", "a", format!("a{i}"))
                    .add("cf", "b", format!("value-{i:03}")),
            )
        })
        .collect();
    for r in table.batch(&puts).await {
        r.expect("put");
    }
    let admin = client.admin();
    for region in admin.list_regions(&name).await.expect("regions") {
        admin.flush_region(&region.region).await.expect("flush");
    }
    let puts: Vec<Action> = (0..ROWS)
        .step_by(3)
        .map(|i| Action::Put(Put::new(format!("r{i:03}")).add("cf", "c", format!("c{i}"))))
        .collect();
    for r in table.batch(&puts).await {
        r.expect("put");
    }
    // One scan first, so that both clients find the blocks in the servers' block cache.
    assert_eq!(hbase_it::count_rows(&client, &name).await, ROWS as usize);

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/it-java");
    std::fs::create_dir_all(&dir).expect("create target/it-java");
    let spec = dir.join(format!("{name}.scan-metrics.spec"));
    let mut text = format!("table {name}\n");
    for case in SCANS {
        text.push_str(&java_line(case));
        text.push('\n');
    }
    std::fs::write(&spec, text).expect("write the spec");
    let repo = env!("CARGO_MANIFEST_DIR");
    let java = hbase_it::stdout_of(
        "the Java side (ScanMetricsFacts.java; JDK 17 and Maven are needed)",
        std::process::Command::new(format!("{repo}/tests/java/interop/run"))
            .args(["--program", "ScanMetricsFacts.java", "--zk"])
            .arg(hbase_it::zk())
            .arg(&spec)
            .env(
                "HBASE_INTEROP_JAVA_OPTS",
                hbase_it::java_resolver_opts().join(" "),
            ),
    );
    let java: Vec<&str> = java.lines().collect();
    assert_eq!(java.len(), SCANS.len(), "one line per scan:\n{java:?}");

    let mut differences = Vec::new();
    let mut keys = BTreeSet::new();
    for (case, line) in SCANS.iter().zip(&java) {
        let (java_results, java_map) = parse_java(line);
        let mut stream = table.scan(our_scan(case));
        let mut results = 0u64;
        while let Some(r) = stream.next().await {
            r.expect("scan");
            results += 1;
        }
        let ours = stream.metrics().expect("metrics enabled").to_map();
        let mut diff = |what: String| differences.push(format!("[{case}] {what}"));
        if results != java_results {
            diff(format!("results: Java {java_results}, ours {results}"));
        }
        let java_keys: BTreeSet<&String> = java_map.keys().collect();
        let our_keys: BTreeSet<&String> = ours.keys().collect();
        for k in java_keys.difference(&our_keys) {
            diff(format!("{k} only in Java's map"));
        }
        for k in our_keys.difference(&java_keys) {
            diff(format!("{k} only in ours"));
        }
        for k in EXACT {
            if let (Some(j), Some(o)) = (java_map.get(*k), ours.get(*k)) {
                if j != o {
                    diff(format!("{k}: Java {j}, ours {o}"));
                }
            }
        }
        let file_bytes =
            |m: &BTreeMap<String, u64>| FILE_BYTES.iter().filter_map(|k| m.get(*k)).sum::<u64>();
        if file_bytes(&java_map) != file_bytes(&ours) {
            diff(format!(
                "{}: Java {}, ours {}",
                FILE_BYTES.join(" + "),
                file_bytes(&java_map),
                file_bytes(&ours)
            ));
        }
        keys.extend(java_map.into_keys());
    }
    // Java's client makes every counter when the scan starts, whatever the servers send; so
    // must ours: a scan whose responses carried no counters (older servers send fewer than
    // 2.6.4's ten) still has every key.
    let bare = ScanMetrics::default().to_map();
    let bare: BTreeSet<&String> = bare.keys().collect();
    let java_keys: BTreeSet<&String> = keys.iter().collect();
    for k in java_keys.difference(&bare) {
        differences.push(format!("[no server counters] {k} only in Java's map"));
    }
    for k in bare.difference(&java_keys) {
        differences.push(format!("[no server counters] {k} only in ours"));
    }
    println!(
        "scan metrics against Java: {} scans compared, {} keys ({} compared exactly, and the sum of {}), {} differences",
        SCANS.len(),
        keys.len(),
        EXACT.len(),
        FILE_BYTES.join(" + "),
        differences.len()
    );
    // Dropped before the verdict: a failing run leaves no table behind.
    let _ = std::fs::remove_file(&spec);
    hbase_it::drop_table(&client, &name).await;
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
