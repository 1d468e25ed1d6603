//! `pe` (PerformanceEvaluation) against the real HBase: every command at small sizes, with
//! the table contents and the report's counts checked, not timings.

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{Get, Scan, Table};

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

/// `line` with the options naming the test cluster in front (`--zk`, `--addressMap`).
fn pe_args(line: &str) -> Vec<String> {
    let mut a = vec![format!("--zk={}", hbase_it::zk())];
    if !hbase_it::address_map().is_empty() {
        a.push(format!("--addressMap={}", hbase_it::address_map()));
    }
    a.extend(args(line));
    a
}

async fn pe(line: &str) -> String {
    let a = pe_args(line);
    match pe::execute(&a, pe::Output::new(None)).await {
        Ok(out) => out,
        Err(e) => panic!("pe {line}: {e}"),
    }
}

async fn pe_err(line: &str) -> pe::PeError {
    let a = pe_args(line);
    match pe::execute(&a, pe::Output::new(None)).await {
        Ok(out) => panic!("pe {line} succeeded:\n{out}"),
        Err(e) => e,
    }
}

fn count_lines(report: &str, prefix: &str) -> usize {
    report.lines().filter(|l| l.starts_with(prefix)).count()
}

/// Every `Num measures (latency) : N` of the report.
fn measures(report: &str) -> Vec<u64> {
    report
        .lines()
        .filter_map(|l| l.strip_prefix("Num measures (latency) : "))
        .map(|n| n.parse().unwrap())
        .collect()
}

fn key(i: u32) -> Bytes {
    Bytes::from(format!("{i:026}"))
}

async fn all_rows(table: &Table) -> Vec<hbase_client::RowResult> {
    let mut stream = table.scan(Scan::new());
    let mut rows = Vec::new();
    while let Some(r) = stream.next().await {
        rows.push(r.expect("scan"));
    }
    rows
}

/// A value as PerformanceEvaluation writes it: runs of 8 equal upper-case letters.
fn is_pe_value(v: &[u8], len: usize) -> bool {
    v.len() == len
        && v.iter().all(u8::is_ascii_uppercase)
        && v.chunks(8).all(|c| c.iter().all(|&b| b == c[0]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_then_read_every_way() {
    let name = hbase_it::unique_table("pe");
    let t = format!("--table={name}");

    // A read command on a table that does not exist is refused.
    let err = pe_err(&format!("{t} --rows=10 randomRead 1")).await;
    assert!(matches!(err, pe::PeError::Table(_)), "{err}");

    let report = pe(&format!(
        "{t} --nomapred --rows=500 --presplit=3 sequentialWrite 2"
    ))
    .await;
    // The first row of each client is not measured, as in PerformanceEvaluation.
    assert_eq!(measures(&report), vec![499, 499]);
    assert_eq!(
        count_lines(
            &report,
            "Finished class org.apache.hadoop.hbase.PerformanceEvaluation$SequentialWriteTest in "
        ),
        2
    );
    assert!(report.contains("at offset 500 for 500 rows"), "{report}");
    assert_eq!(
        count_lines(&report, "[SequentialWriteTest] Summary of timings (ms): ["),
        1
    );
    assert_eq!(
        count_lines(&report, "[SequentialWriteTest duration ]\tMin: "),
        1
    );
    assert_eq!(count_lines(&report, "[ Avg TPS/QPS]\t"), 1);

    let client = hbase_it::client().await;
    let table = client.table(&name.to_string()).unwrap();
    let rows = all_rows(&table).await;
    assert_eq!(rows.len(), 1000);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.row, key(i as u32));
        let v = r.value(b"info0", b"0").expect("info0:0");
        assert!(is_pe_value(v, 1000), "row {i}: {:?}", &v[..16]);
    }
    assert_eq!(client.admin().list_regions(&name).await.unwrap().len(), 3);

    for (cmd, clients, rows) in [
        ("sequentialRead", 2, 500),
        ("randomRead", 2, 100),
        ("scan", 1, 1000),
        ("scanRange10", 1, 20),
        ("randomSeekScan", 1, 10),
        ("filterScan", 1, 3),
        ("asyncRandomRead", 1, 10),
    ] {
        let report = pe(&format!("{t} --rows={rows} {cmd} {clients}")).await;
        assert_eq!(
            measures(&report),
            vec![rows - 1; clients],
            "{cmd}:\n{report}"
        );
    }
    let report = pe(&format!("{t} --rows=100 --multiGet=10 randomRead 1")).await;
    // Only the requests actually sent are measured: every 10th row, the first excluded.
    assert_eq!(measures(&report), vec![10]);

    // --presplit recreates the table; a random write then leaves at most rows*clients rows.
    pe(&format!(
        "{t} --rows=200 --presplit=2 --valueSize=10 --autoFlush=true randomWrite 2"
    ))
    .await;
    let rows = all_rows(&table).await;
    assert!(!rows.is_empty() && rows.len() <= 400, "{}", rows.len());
    assert!(rows
        .iter()
        .all(|r| is_pe_value(r.value(b"info0", b"0").unwrap(), 10)));

    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_commands_share_rows() {
    let name = hbase_it::unique_table("pe_cas");
    let t = format!("--table={name}");
    pe(&format!("{t} --rows=50 --valueSize=8 sequentialWrite 1")).await;
    let client = hbase_it::client().await;
    let table = client.table(&name.to_string()).unwrap();

    // Three clients increment the same 50 rows: each counter ends at exactly 3.
    pe(&format!("{t} --rows=50 increment 3")).await;
    for i in 0..50 {
        let r = table.get(Get::new(key(i))).await.unwrap().unwrap();
        let v = r.value(b"info0", b"IncrementTest").expect("counter");
        assert_eq!(v, 3i64.to_be_bytes(), "row {i}");
    }
    // Two clients append the row key to the same 20 rows.
    pe(&format!("{t} --rows=20 append 2")).await;
    for i in 0..20 {
        let r = table.get(Get::new(key(i))).await.unwrap().unwrap();
        let v = r.value(b"info0", b"AppendTest").expect("appended");
        assert_eq!(v, [key(i), key(i)].concat(), "row {i}");
    }
    pe(&format!("{t} --rows=20 checkAndMutate 2")).await;
    pe(&format!("{t} --rows=20 checkAndPut 1")).await;
    for i in 0..20 {
        let r = table.get(Get::new(key(i))).await.unwrap().unwrap();
        assert_eq!(r.value(b"info0", b"CheckAndPutTest").unwrap(), &key(i));
    }
    pe(&format!("{t} --rows=20 checkAndDelete 1")).await;
    for i in 0..20 {
        let r = table.get(Get::new(key(i))).await.unwrap().unwrap();
        assert!(
            r.value(b"info0", b"CheckAndDeleteTest").is_none(),
            "row {i}"
        );
    }
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test]
async fn bad_command_lines_are_errors() {
    for line in [
        "--rows=x sequentialWrite 1",
        "sequentialWrite 0",
        "--multiPut=5 sequentialWrite 1",
        "noSuchCommand 1",
        "--filterAll randomRead 1",
        "--addressMap=rs1:x=h:1 randomRead 1",
    ] {
        let err = pe_err(line).await;
        assert!(matches!(err, pe::PeError::Usage(_)), "{line}: {err}");
    }
}

/// Runs HBase's own PerformanceEvaluation (`benches/pe/java-pe`) with `line` against the
/// local cluster and returns its report (stdout); panics if it fails.
async fn java_pe(line: &str) -> String {
    let line = line.to_string();
    tokio::task::spawn_blocking(move || {
        let repo = env!("CARGO_MANIFEST_DIR");
        let out = std::process::Command::new(format!("{repo}/benches/pe/java-pe"))
            .args(args(&line))
            .env("HBASE_ZK", hbase_it::zk())
            .env(
                "HBASE_PE_JAVA_OPTS",
                hbase_it::java_resolver_opts().join(" "),
            )
            .output()
            .expect("run benches/pe/java-pe");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "java PE {line} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    })
    .await
    .unwrap()
}

/// The report's lines with every number replaced by `#`, sorted (clients finish in any
/// order). The created table's family settings (each side's own defaults, as its master
/// reports them) are compared up to the first family's name.
fn shape(report: &str) -> Vec<String> {
    let mut lines: Vec<String> = report
        .lines()
        .map(|l| {
            if l.starts_with("Table '") {
                l.split(", ").next().unwrap()
            } else {
                l
            }
        })
        .map(|l| {
            let mut s = String::new();
            let mut in_number = false;
            for c in l.chars() {
                if c.is_ascii_digit() || (in_number && c == '.') {
                    if !in_number {
                        s.push('#');
                    }
                    in_number = true;
                } else {
                    in_number = false;
                    s.push(c);
                }
            }
            s
        })
        .collect();
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_table_and_report_as_java_performance_evaluation() {
    // Same prefix: the names differ only in digits, which the shape comparison masks.
    let java_table = hbase_it::unique_table("pe_x");
    let rust_table = hbase_it::unique_table("pe_x");
    let write = "--nomapred --rows=300 --presplit=2 sequentialWrite 2";
    let java = java_pe(&format!("--table={java_table} {write}")).await;
    let ours = pe(&format!("--table={rust_table} {write}")).await;
    assert_eq!(shape(&ours), shape(&java), "ours:\n{ours}\njava:\n{java}");

    // The same rows, families, qualifiers and value shapes.
    let client = hbase_it::client().await;
    let jt = client.table(&java_table.to_string()).unwrap();
    let rt = client.table(&rust_table.to_string()).unwrap();
    let (jrows, rrows) = (all_rows(&jt).await, all_rows(&rt).await);
    assert_eq!(jrows.len(), 600);
    assert_eq!(
        jrows.iter().map(|r| r.row.clone()).collect::<Vec<_>>(),
        rrows.iter().map(|r| r.row.clone()).collect::<Vec<_>>()
    );
    for (j, r) in jrows.iter().zip(&rrows) {
        let cols = |x: &hbase_client::RowResult| {
            x.cells
                .iter()
                .map(|c| (c.family_bytes(), c.qualifier_bytes(), c.value().len()))
                .collect::<Vec<_>>()
        };
        assert_eq!(cols(j), cols(r));
        assert!(is_pe_value(j.value(b"info0", b"0").unwrap(), 1000));
    }
    let admin = client.admin();
    assert_eq!(
        admin.list_regions(&java_table).await.unwrap().len(),
        admin.list_regions(&rust_table).await.unwrap().len()
    );

    // Each reads what the other wrote, and a read test reports in the same shape.
    let read = "--nomapred --rows=50 randomRead 1";
    let java = java_pe(&format!("--table={rust_table} {read}")).await;
    let ours = pe(&format!("--table={java_table} {read}")).await;
    assert_eq!(shape(&ours), shape(&java), "ours:\n{ours}\njava:\n{java}");

    // Range, seek and filter scans: the same lines, with the scan-metrics histograms
    // (rpcCalls, remoteRpcCalls, millisBetweenNext, regionsScanned, bytesInResults,
    // bytesInRemoteResults) after the latency block.
    for scan in [
        "--nomapred --rows=120 scanRange10 1",
        "--nomapred --rows=20 randomSeekScan 1",
        "--nomapred --rows=5 filterScan 1",
    ] {
        let java = java_pe(&format!("--table={rust_table} {scan}")).await;
        let ours = pe(&format!("--table={java_table} {scan}")).await;
        assert_eq!(shape(&ours), shape(&java), "ours:\n{ours}\njava:\n{java}");
        assert!(ours.contains("\nregionsScanned (count): mean="), "{ours}");
    }

    hbase_it::drop_table(&client, &java_table).await;
    hbase_it::drop_table(&client, &rust_table).await;
}
