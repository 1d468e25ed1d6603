//! The ycsb driver end to end against the real HBase: load, workloads A–F, data integrity,
//! `-target` pacing, thousands of client tasks, and the errors for a missing table.

use std::time::Instant;

use hbase_client::Get;

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

async fn ycsb(line: &str) -> String {
    match ycsb::execute(&args(line)).await {
        Ok(out) => out.stdout,
        Err(e) => panic!("ycsb {line}: {e}"),
    }
}

/// The value of `[metric], measurement, value`.
fn value(report: &str, metric: &str, measurement: &str) -> Option<String> {
    let prefix = format!("[{metric}], {measurement}, ");
    report
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(|v| v.to_string()))
}

fn count(report: &str, metric: &str, measurement: &str) -> u64 {
    value(report, metric, measurement)
        .unwrap_or_else(|| panic!("no [{metric}], {measurement} in\n{report}"))
        .parse()
        .unwrap()
}

fn assert_block(report: &str, op: &str) {
    for m in [
        "Operations",
        "AverageLatency(us)",
        "MinLatency(us)",
        "MaxLatency(us)",
        "50thPercentileLatency(us)",
        "95thPercentileLatency(us)",
        "99thPercentileLatency(us)",
        "99.9PercentileLatency(us)",
    ] {
        assert!(
            value(report, op, m).is_some(),
            "missing [{op}], {m} in\n{report}"
        );
    }
}

fn assert_no_errors(report: &str) {
    for bad in [
        "Return=ERROR",
        "Return=NOT_FOUND",
        "Return=UNEXPECTED_STATE",
        "-FAILED]",
    ] {
        assert!(!report.contains(bad), "{bad} in\n{report}");
    }
}

async fn setup(
    prefix: &str,
    regions: u32,
) -> (hbase_client::Client, hbase_client::TableName, String) {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table(prefix);
    let common = format!(
        "{} -p table={name} -p columnfamily=family",
        hbase_it::ycsb_cluster_args()
    );
    let out = ycsb(&format!("create-table --regions {regions} {common}")).await;
    assert!(out.contains("created table"), "{out}");
    (client, name, common)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_then_workloads_a_to_f() {
    let (client, name, common) = setup("ycsb_af", 6).await;
    let counts = "-p recordcount=10000 -p operationcount=2000 -threads 8";
    let load = ycsb(&format!("load {common} -P workloada {counts}")).await;
    assert_eq!(count(&load, "INSERT", "Return=OK"), 10000);
    assert_eq!(count(&load, "INSERT", "Operations"), 10000);
    assert_block(&load, "FLUSH");
    assert_no_errors(&load);
    assert!(load.starts_with("[OVERALL], RunTime(ms), "), "{load}");

    let table = client.table(&name.to_string()).unwrap();
    let expected: [(&str, &[&str]); 6] = [
        ("workloada", &["READ", "UPDATE"]),
        ("workloadb", &["READ", "UPDATE"]),
        ("workloadc", &["READ"]),
        ("workloadd", &["READ", "INSERT"]),
        ("workloade", &["SCAN", "INSERT"]),
        ("workloadf", &["READ", "UPDATE", "READ-MODIFY-WRITE"]),
    ];
    for (w, ops) in expected {
        let report = ycsb(&format!("run {common} -P {w} {counts}")).await;
        assert_no_errors(&report);
        assert!(
            value(&report, "OVERALL", "RunTime(ms)").is_some(),
            "{report}"
        );
        assert!(
            value(&report, "OVERALL", "Throughput(ops/sec)").is_some(),
            "{report}"
        );
        let mut total = 0;
        for op in ops {
            assert_block(&report, op);
            if *op != "READ-MODIFY-WRITE" {
                total += count(&report, op, "Return=OK");
            }
        }
        assert_block(&report, "CLEANUP");
        if w != "workloadc" {
            assert_block(&report, "FLUSH");
        }
        if w == "workloadf" {
            // Each read-modify-write is a read and an update.
            let rmw = count(&report, "READ-MODIFY-WRITE", "Operations");
            assert_eq!(total, 2000 + rmw, "{w}\n{report}");
        } else {
            assert_eq!(total, 2000, "{w}\n{report}");
        }
        if w == "workloadd" {
            // Run-phase inserts take key numbers 10000, 10001, … and are readable now.
            let inserts = count(&report, "INSERT", "Return=OK");
            assert!(inserts > 0);
            for k in 10000..10000 + inserts as i64 {
                let key = ycsb::workload::build_key_name(k, 1, false);
                let row = table.get(Get::new(key.clone())).await.unwrap();
                let row = row.unwrap_or_else(|| panic!("inserted row {key} missing"));
                assert_eq!(row.cells.len(), 10, "{key}");
            }
        }
    }
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataintegrity_verifies_every_read() {
    let (client, name, common) = setup("ycsb_di", 3).await;
    let p = "-p recordcount=2000 -p operationcount=2000 -p dataintegrity=true -threads 8";
    ycsb(&format!("load {common} -P workloada {p}")).await;
    for w in ["workloada", "workloadf"] {
        let report = ycsb(&format!("run {common} -P {w} {p}")).await;
        assert_no_errors(&report);
        let reads = count(&report, "READ", "Return=OK");
        assert_eq!(count(&report, "VERIFY", "Return=OK"), reads, "{report}");
    }
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_paces_the_run() {
    let (client, name, common) = setup("ycsb_tgt", 3).await;
    ycsb(&format!(
        "load {common} -P workloadc -p recordcount=1000 -threads 8"
    ))
    .await;
    let t0 = Instant::now();
    let report = ycsb(&format!(
        "run {common} -P workloadc -p recordcount=1000 -p operationcount=2000 -threads 8 -target 500 -p measurement.interval=both"
    ))
    .await;
    let secs = t0.elapsed().as_secs_f64();
    assert!((3.4..=4.6).contains(&secs), "took {secs} s");
    let runtime: f64 = count(&report, "OVERALL", "RunTime(ms)") as f64 / 1000.0;
    assert!((3.4..=4.6).contains(&runtime), "RunTime {runtime} s");
    assert_block(&report, "Intended-READ");
    assert_no_errors(&report);
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_threads() {
    let (client, name, common) = setup("ycsb_thr", 3).await;
    ycsb(&format!(
        "load {common} -P workloada -p recordcount=2000 -threads 2000"
    ))
    .await;
    let report = ycsb(&format!(
        "run {common} -P workloada -p recordcount=2000 -p operationcount=4000 -threads 2000"
    ))
    .await;
    assert_no_errors(&report);
    let ops = count(&report, "READ", "Operations") + count(&report, "UPDATE", "Operations");
    assert_eq!(ops, 4000);
    assert_eq!(count(&report, "CLEANUP", "Operations"), 2000);
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_table_and_family_are_clear_errors() {
    let name = hbase_it::unique_table("ycsb_missing");
    let line = format!(
        "load {} -P workloada -p table={name} -p columnfamily=family",
        hbase_it::ycsb_cluster_args()
    );
    let err = ycsb::execute(&args(&line)).await.unwrap_err().to_string();
    assert!(
        err.contains("does not exist") && err.contains("createtable"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");

    let (client, name, common) = setup("ycsb_cf", 1).await;
    let line = format!("load {common} -P workloada -p columnfamily=nope");
    let err = ycsb::execute(&args(&line)).await.unwrap_err().to_string();
    assert!(err.contains("column family nope"), "{err}");
    // Nothing was written.
    let table = client.table(&name.to_string()).unwrap();
    let key = ycsb::workload::build_key_name(0, 1, false);
    assert!(table.get(Get::new(key)).await.unwrap().is_none());

    // -p createtable=true creates a pre-split table on load.
    let fresh = hbase_it::unique_table("ycsb_ct");
    let report = ycsb(&format!(
        "load {} -P workloada -p table={fresh} -p columnfamily=family -p createtable=true -p presplit=4 -p recordcount=100",
        hbase_it::ycsb_cluster_args()
    ))
    .await;
    assert_eq!(count(&report, "INSERT", "Return=OK"), 100);
    let regions = client.admin().list_regions(&fresh).await.unwrap();
    assert_eq!(regions.len(), 4);
    hbase_it::drop_table(&client, &fresh).await;
    hbase_it::drop_table(&client, &name).await;
}
