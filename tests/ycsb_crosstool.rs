//! The Java YCSB and ours on the same tables of the local HBase: YCSB 0.17.0 (`site.ycsb:core`
//! from Maven Central, with `hbase-shaded-client` and the clean-room HBase binding of
//! `benches/compare-java`, since `site.ycsb:hbase20-binding` is not on Maven Central) loads
//! with `dataintegrity=true` and our `ycsb run` verifies every read; then the reverse. Every
//! cell of both tables is also compared with the value YCSB's rule gives. And the two report
//! the buffered-write accounting the same way.

use std::path::PathBuf;
use std::process::Output;

use hbase_client::Scan;
use hbase_it::ycsb_java::{repo, run_with_stdin, ycsb_hbase};
use ycsb::workload::deterministic_value;

const RECORDS: u64 = 5000;

use hbase_it::{ycsb, ycsb_args as args};

fn value(report: &str, metric: &str, measurement: &str) -> Option<u64> {
    let prefix = format!("[{metric}], {measurement}, ");
    report
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(|v| v.parse().unwrap()))
}

/// An `hbase-site.xml` naming the test cluster's ZooKeeper, for the Java client's classpath.
fn java_conf() -> PathBuf {
    let zk = hbase_it::zk();
    let (hosts, port): (Vec<&str>, &str) = {
        let mut port = "2181";
        let hosts = zk
            .split(',')
            .map(|hp| match hp.rsplit_once(':') {
                Some((h, p)) => {
                    port = p;
                    h
                }
                None => hp,
            })
            .collect();
        (hosts, port)
    };
    let dir = repo().join(format!("target/ycsb-java/conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hbase-site.xml"),
        format!(
            "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>hbase.zookeeper.quorum</name><value>{}</value></property>\n  <property><name>hbase.zookeeper.property.clientPort</name><value>{port}</value></property>\n</configuration>\n",
            hosts.join(",")
        ),
    )
    .unwrap();
    dir
}

/// The Java YCSB `Client` with the clean-room HBase binding.
fn java_ycsb(phase: &str, extra: &str) -> Output {
    let conf = java_conf();
    let tool = ycsb_hbase();
    let mut cmd = tool.command(&[conf.as_path()], "site.ycsb.Client");
    cmd.args([
        phase,
        "-db",
        "hbasers.compare.JavaHBaseDB",
        "-P",
        "workloads/workloada",
    ])
    .args(args(extra));
    let out = run_with_stdin(&mut cmd, None);
    let _ = std::fs::remove_dir_all(&conf);
    out
}

/// Reads every row of `table` and compares each cell with YCSB's deterministic value.
async fn check_every_cell(client: &hbase_client::Client, table: &str) -> u64 {
    let rows = client
        .table(table)
        .unwrap()
        .scan(Scan::new().family("family"))
        .collect_all()
        .await
        .unwrap();
    assert_eq!(rows.len() as u64, RECORDS, "{table}");
    let mut cells = 0;
    for row in rows {
        let key = String::from_utf8(row.row.to_vec()).unwrap();
        assert_eq!(row.cells.len(), 10, "{key}");
        for c in &row.cells {
            let field = String::from_utf8(c.qualifier().to_vec()).unwrap();
            assert_eq!(
                c.value(),
                &deterministic_value(&key, &field, 100)[..],
                "{table} {key} {field}"
            );
            cells += 1;
        }
    }
    cells
}

async fn create(prefix: &str) -> (hbase_client::Client, hbase_client::TableName) {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table(prefix);
    let out = ycsb(&format!(
        "create-table --zk {} --regions 4 -p table={name}",
        hbase_it::zk()
    ))
    .await;
    assert!(out.contains("created table"), "{out}");
    (client, name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_loads_and_we_verify() {
    let (client, name) = create("xtool_java_load").await;
    let load = java_ycsb(
        "-load",
        &format!(
            "-p table={name} -p columnfamily=family -p recordcount={RECORDS} -p dataintegrity=true -p clientbuffering=true -threads 4"
        ),
    );
    let report = String::from_utf8_lossy(&load.stdout);
    assert_eq!(
        value(&report, "INSERT", "Return=OK"),
        Some(RECORDS),
        "{report}"
    );

    let cells = check_every_cell(&client, &name.to_string()).await;
    let ours = ycsb(&format!(
        "run --zk {} -P workloada -p table={name} -p recordcount={RECORDS} -p operationcount=3000 -p dataintegrity=true -p readproportion=0.9 -p updateproportion=0 -p readmodifywriteproportion=0.1 -threads 4",
        hbase_it::zk()
    ))
    .await;
    let verified = value(&ours, "VERIFY", "Return=OK").unwrap();
    assert_eq!(verified, 3000, "{ours}");
    assert!(
        !ours.contains("UNEXPECTED_STATE") && !ours.contains("Return=ERROR"),
        "{ours}"
    );
    eprintln!(
        "Java load, Rust verify: {cells} cells equal to YCSB's values, {verified} reads verified"
    );
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn we_load_and_java_verifies() {
    let (client, name) = create("xtool_rust_load").await;
    let load = ycsb(&format!(
        "load --zk {} -P workloada -p table={name} -p recordcount={RECORDS} -p dataintegrity=true -threads 4",
        hbase_it::zk()
    ))
    .await;
    assert_eq!(value(&load, "INSERT", "Return=OK"), Some(RECORDS), "{load}");
    let cells = check_every_cell(&client, &name.to_string()).await;

    let run = java_ycsb(
        "-t",
        &format!(
            "-p table={name} -p columnfamily=family -p recordcount={RECORDS} -p operationcount=3000 -p dataintegrity=true -p readproportion=0.9 -p updateproportion=0 -p readmodifywriteproportion=0.1 -threads 4"
        ),
    );
    let report = String::from_utf8_lossy(&run.stdout);
    let verified = value(&report, "VERIFY", "Return=OK").unwrap();
    assert_eq!(verified, 3000, "{report}");
    assert!(
        !report.contains("UNEXPECTED_STATE") && !report.contains("Return=ERROR"),
        "{report}"
    );
    eprintln!(
        "Rust load, Java verify: {cells} cells equal to YCSB's values, {verified} reads verified"
    );
    hbase_it::drop_table(&client, &name).await;
}

/// The blocks of a report with their sample counts, less the latencies.
fn blocks(report: &str) -> Vec<(String, String)> {
    report
        .lines()
        .filter(|l| l.starts_with('['))
        .filter(|l| !l.starts_with("[OVERALL]") && !l.starts_with("[TOTAL_G"))
        .filter(|l| l.contains(", Operations, ") || l.contains(", Return="))
        .map(|l| {
            let (head, v) = l.rsplit_once(", ").unwrap();
            (head.to_string(), v.to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_writes_are_accounted_as_ycsb_accounts_them() {
    // Workload A with clientbuffering: [UPDATE] holds the updates and one mutator close per
    // thread, [CLEANUP] one sample per thread; the blocks in YCSB's order. Same in both.
    let (client, name) = create("xtool_accounting").await;
    ycsb(&format!(
        "load --zk {} -P workloada -p table={name} -p recordcount=2000 -threads 4",
        hbase_it::zk()
    ))
    .await;
    let common = format!(
        "-p table={name} -p recordcount=2000 -p operationcount=1000 -p clientbuffering=true -threads 5"
    );
    let java = java_ycsb("-t", &format!("{common} -p columnfamily=family"));
    let java = String::from_utf8_lossy(&java.stdout).into_owned();
    let ours = ycsb(&format!(
        "run --zk {} -P workloada {common}",
        hbase_it::zk()
    ))
    .await;
    let order = |r: &str| -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for (head, _) in blocks(r) {
            let metric = head.split(']').next().unwrap().to_string();
            if !seen.contains(&metric) {
                seen.push(metric);
            }
        }
        seen
    };
    assert_eq!(order(&java), order(&ours), "{java}\n{ours}");
    for r in [&java, &ours] {
        let updates = value(r, "UPDATE", "Return=OK").unwrap();
        assert_eq!(value(r, "UPDATE", "Operations"), Some(updates + 5), "{r}");
        assert_eq!(value(r, "CLEANUP", "Operations"), Some(5), "{r}");
        assert_eq!(
            value(r, "READ", "Operations").unwrap() + updates,
            1000,
            "{r}"
        );
    }
    hbase_it::drop_table(&client, &name).await;
}
