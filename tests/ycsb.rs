//! The ycsb driver end to end against the real HBase: load, workloads A–F with YCSB's write
//! accounting and with the shared-buffer opt-in, data integrity, `-target` pacing, thousands
//! of client tasks, the default column family, `-cp DIR`, the client-wide write-buffer bound,
//! wakeup coalescing, and the errors for a missing table or family.

use std::time::Instant;

use hbase_client::Get;

use hbase_it::{ycsb, ycsb_args as args};

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

/// Every return code counted under `op` (OK, NOT_FOUND, …).
fn returns(report: &str, op: &str) -> u64 {
    let prefix = format!("[{op}], Return=");
    report
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| rest.rsplit(", ").next().unwrap().parse::<u64>().unwrap())
        .sum()
}

fn assert_block(report: &str, op: &str) {
    for m in [
        "Operations",
        "AverageLatency(us)",
        "MinLatency(us)",
        "MaxLatency(us)",
        "95thPercentileLatency(us)",
        "99thPercentileLatency(us)",
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

/// Errors other than NOT_FOUND (a read of a row still in another thread's write buffer).
fn assert_no_failures(report: &str) {
    for bad in ["Return=ERROR", "Return=UNEXPECTED_STATE", "-FAILED]"] {
        let ok_not_found = bad == "-FAILED]"
            && report
                .lines()
                .filter(|l| l.contains("-FAILED]"))
                .all(|l| l.starts_with("[READ-FAILED]") || l.starts_with("[Intended-READ-FAILED]"));
        assert!(!report.contains(bad) || ok_not_found, "{bad} in\n{report}");
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

/// [`setup`] with 3 regions, then 1,000 records of workload C loaded by 8 threads.
async fn setup_loaded(prefix: &str) -> (hbase_client::Client, hbase_client::TableName, String) {
    let (client, name, common) = setup(prefix, 3).await;
    ycsb(&format!(
        "load {common} -P workloadc -p recordcount=1000 -threads 8"
    ))
    .await;
    (client, name, common)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_then_workloads_a_to_f() {
    let (client, name, common) = setup("ycsb_af", 6).await;
    let counts = "-p recordcount=10000 -p operationcount=2000 -threads 8";
    let load = ycsb(&format!("load {common} -P workloada {counts}")).await;
    assert_eq!(count(&load, "INSERT", "Return=OK"), 10000);
    assert_eq!(count(&load, "INSERT", "Operations"), 10000);
    // YCSB's accounting: each thread's mutator close is one UPDATE sample, and CLEANUP.
    assert_eq!(count(&load, "UPDATE", "Operations"), 8, "{load}");
    assert_eq!(count(&load, "CLEANUP", "Operations"), 8, "{load}");
    assert!(!load.contains("[FLUSH]"), "{load}");
    assert_eq!(count(&load, "TOTAL_GCs", "Count"), 0);
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
    for (w, ops) in expected.iter().copied() {
        let report = ycsb(&format!("run {common} -P {w} {counts}")).await;
        if ops.contains(&"INSERT") {
            // Inserts are buffered per thread, as YCSB's binding buffers them: a read of a
            // row still in a buffer finds nothing.
            assert_no_failures(&report);
        } else {
            assert_no_errors(&report);
        }
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
                total += returns(&report, op);
            }
        }
        assert_block(&report, "CLEANUP");
        assert_eq!(count(&report, "CLEANUP", "Operations"), 8, "{report}");
        if ops.contains(&"UPDATE") || ops.contains(&"INSERT") {
            // The 8 mutator closes.
            let updates = value(&report, "UPDATE", "Return=OK")
                .map(|v| v.parse::<u64>().unwrap())
                .unwrap_or(0);
            assert_eq!(
                count(&report, "UPDATE", "Operations"),
                updates + 8,
                "{report}"
            );
        }
        assert!(!report.contains("[FLUSH]"), "{w}\n{report}");
        if w == "workloadf" {
            // Each read-modify-write is a read and an update.
            let rmw = count(&report, "READ-MODIFY-WRITE", "Operations");
            assert_eq!(total, 2000 + rmw, "{w}\n{report}");
        } else {
            assert_eq!(total, 2000, "{w}\n{report}");
        }
        if w == "workloadd" {
            // Run-phase inserts take key numbers 10000, 10001, … and are readable once the
            // threads closed their buffers.
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
    // The opt-in: one shared buffer, run-phase inserts sent at once (so "latest" reads find
    // them), the final flush in its own [FLUSH] block.
    let shared = "-p sharedwritebuffer=true";
    let report = ycsb(&format!("run {common} -P workloadd {counts} {shared}")).await;
    assert_no_errors(&report);
    assert_block(&report, "FLUSH");
    assert_eq!(count(&report, "FLUSH", "Operations"), 1);
    assert!(value(&report, "UPDATE", "Operations").is_none(), "{report}");
    let load = ycsb(&format!(
        "load {common} -P workloada -p recordcount=12000 -p insertstart=11000 -p insertcount=1000 {shared}"
    ))
    .await;
    assert_eq!(count(&load, "INSERT", "Return=OK"), 1000);
    assert_eq!(count(&load, "FLUSH", "Return=OK"), 1);
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
    let (client, name, common) = setup_loaded("ycsb_tgt").await;
    let t0 = Instant::now();
    let report = ycsb(&format!(
        "run {common} -P workloadc -p recordcount=1000 -p operationcount=2000 -threads 8 -target 500 -p measurement.interval=both"
    ))
    .await;
    // Pacing can only slow a run down: 250 operations per thread at 62.5/s start no sooner
    // than 249 ticks of 16 ms after the first.
    let secs = t0.elapsed().as_secs_f64();
    assert!(secs >= 3.98, "took {secs} s");
    let runtime: f64 = count(&report, "OVERALL", "RunTime(ms)") as f64 / 1000.0;
    assert!(runtime >= 3.98, "RunTime {runtime} s");
    assert_block(&report, "Intended-READ");
    assert_eq!(count(&report, "Intended-READ", "Operations"), 2000);
    // The intended latency counts from the deadline: never less than the operation's own.
    let avg = |m: &str| {
        value(&report, m, "AverageLatency(us)")
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    assert!(avg("Intended-READ") >= avg("READ"), "{report}");
    assert_no_errors(&report);
    // measurement.interval=intended: the intended latencies under the plain name.
    let report = ycsb(&format!(
        "run {common} -P workloadc -p recordcount=1000 -p operationcount=200 -threads 2 -target 400 -p measurement.interval=intended"
    ))
    .await;
    assert_eq!(count(&report, "READ", "Operations"), 200);
    assert_eq!(count(&report, "READ", "Return=OK"), 200);
    assert!(!report.contains("Intended-"), "{report}");
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
    let ops = count(&report, "READ", "Return=OK") + count(&report, "UPDATE", "Return=OK");
    assert_eq!(ops, 4000);
    assert_eq!(count(&report, "CLEANUP", "Operations"), 2000);
    // One close sample per thread, as YCSB records them.
    assert_eq!(
        count(&report, "UPDATE", "Operations"),
        count(&report, "UPDATE", "Return=OK") + 2000
    );
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
    assert!(err.contains("its families are: family"), "{err}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_missions_command_line_works_as_written() {
    // `ycsb run --zk zk1:2181 -P workloadd`: no columnfamily, the default `family`.
    let (client, name, _) = setup("ycsb_default_cf", 2).await;
    let cluster = hbase_it::ycsb_cluster_args();
    let load = ycsb(&format!("load {cluster} -P workloadd -p table={name}")).await;
    assert_eq!(count(&load, "INSERT", "Return=OK"), 1000);
    let report = ycsb(&format!("run {cluster} -P workloadd -p table={name}")).await;
    assert_no_failures(&report);
    assert_eq!(returns(&report, "READ") + returns(&report, "INSERT"), 1000);
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_hbase_command_lines() {
    // bin/ycsb run hbase20 -cp /etc/hbase/conf -P workloads/workloada -jvm-args=...: the
    // cluster comes from the hbase-site.xml of -cp (here the one scripts/hbase-local wrote).
    let (client, name, _) = setup("ycsb_cp", 2).await;
    let conf = hbase_it::hbase_site_dir();
    assert!(conf.join("hbase-site.xml").is_file(), "{}", conf.display());
    let conf = conf.display();
    let map = hbase_it::ycsb_map_args();
    let load = ycsb(&format!(
        "load hbase20 -cp /nonexistent:{conf} -P workloads/workloada -p table={name} -p recordcount=300 -jvm-args=-Xmx4g {map}"
    ))
    .await;
    assert_eq!(count(&load, "INSERT", "Return=OK"), 300);
    let report = ycsb(&format!(
        "run hbase20 -cp {conf} -P workloads/workloada -p table={name} -p recordcount=300 -p operationcount=300 -jvm-args -XX:+UseG1GC -threads 3 {map}"
    ))
    .await;
    assert_no_errors(&report);
    // -p with an hbase-site property beats the file: a wrong znode parent cannot connect.
    let err = ycsb::execute(&args(&format!(
        "run hbase20 -cp {conf} -P workloads/workloada -p table={name} -p zookeeper.znode.parent=/nowhere -p hbase.client.connect.timeout.seconds=5"
    )))
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("/nowhere"), "{err}");
    // A -P path that does not exist is an error.
    let err = ycsb::execute(&args(&format!(
        "run -cp {conf} -P workloads/no-such-workload -p table={name}"
    )))
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("does not exist"), "{err}");
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_thread_buffers_stay_within_the_client_bound() {
    // 2,000 threads with 12 MiB buffers each could hold 23 GiB; the client-wide bound of
    // 4 MiB makes writers wait for acknowledged batches instead. Every row arrives.
    let (client, name, common) = setup("ycsb_bound", 3).await;
    let load = ycsb(&format!(
        "load {common} -P workloada -p recordcount=6000 -threads 2000 -p writebufferlimit=4194304"
    ))
    .await;
    assert_no_errors(&load);
    assert_eq!(count(&load, "INSERT", "Return=OK"), 6000);
    let table = client.table(&name.to_string()).unwrap();
    let rows = table
        .scan(hbase_client::Scan::new().family("family"))
        .collect_all()
        .await
        .unwrap();
    assert_eq!(rows.len(), 6000);
    assert!(rows.iter().all(|r| r.cells.len() == 10));
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_on_hbase() {
    let (client, name, _) = setup("ycsb_shell", 1).await;
    let script = "insert k1 field0=a field1=b\nread k1\nread k1 field1\nscan k 10\nupdate k1 field0=z\nread k1 field0\ndelete k1\nread k1\ntable\nquit\n";
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ycsb-it"));
    cmd.args(args(&format!(
        "shell {} -p table={name}",
        hbase_it::ycsb_cluster_args()
    )));
    let out = hbase_it::ycsb_java::run_with_stdin(&mut cmd, Some(script));
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "Connected.\n",
        "> Result: OK\n",
        "> Return code: OK\nfield1=b\nfield0=a\n",
        "> Return code: OK\nfield1=b\n",
        "Record 0\nfield1=b\nfield0=a\n",
        "> Return code: OK\nfield0=z\n",
        "> Return result: OK\n",
        "> Return code: NOT_FOUND\n",
        &format!("Using table \"{name}\"\n"),
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    // The writes were applied as they were typed.
    let table = client.table(&name.to_string()).unwrap();
    assert!(table.get(Get::new("k1")).await.unwrap().is_none());
    hbase_it::drop_table(&client, &name).await;
}

/// `-p wakeupcoalescing.us`: the `ycsb` command line's runtime sleeps before it parks, on the
/// current-thread runtime and on a multi-thread one, and every read still gets its row; an
/// in-process run (a runtime without the hook) still completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wakeup_coalescing_sleeps_before_parks_and_reads_every_row() {
    let (client, name, common) = setup_loaded("ycsb_coalesce").await;
    let line = |extra: &str| {
        format!(
            "run {common} -P workloadc -p recordcount=1000 -p operationcount=2000 -threads 16 {extra}"
        )
    };
    // (stdout, stderr) of the ycsb command line, with TOKIO_WORKER_THREADS=`workers` if any.
    let run = |extra: &str, workers: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ycsb-it"));
        cmd.args(args(&line(extra)));
        match workers {
            Some(n) => cmd.env("TOKIO_WORKER_THREADS", n),
            None => cmd.env_remove("TOKIO_WORKER_THREADS"),
        };
        let out = hbase_it::ycsb_java::run_with_stdin(&mut cmd, None);
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let sleeps = |log: &str| -> Option<u64> {
        log.lines()
            .find_map(|l| l.strip_prefix("Wakeup coalescing: 300 us, "))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
    };
    for workers in [None, Some("2")] {
        let (report, log) = run("-p wakeupcoalescing.us=300", workers);
        assert_eq!(count(&report, "READ", "Return=OK"), 2000, "{report}");
        assert_no_errors(&report);
        let n = sleeps(&log).unwrap_or_else(|| panic!("no sleep count in\n{log}"));
        assert!(n > 0, "{log}");
    }
    // Off by default: no sleeps.
    let (report, log) = run("", None);
    assert_eq!(count(&report, "READ", "Return=OK"), 2000, "{report}");
    assert!(sleeps(&log).is_none(), "{log}");
    // In this process (its runtime has no hook): the property is accepted and the run done.
    let report = ycsb(&line("-p wakeupcoalescing.us=300")).await;
    assert_eq!(count(&report, "READ", "Return=OK"), 2000, "{report}");
    hbase_it::drop_table(&client, &name).await;
}

/// `ycsb catalog-janitor` asks the master to run its catalog janitor now: right after a
/// split of an empty table, the parent is there to clean up, and the command says so. (Should
/// the master's own 5-minute run come first, a split of a new parent tries again.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_janitor_subcommand_cleans_up_a_split_parent() {
    let client = hbase_it::client().await;
    let admin = client.admin();
    let name = hbase_it::unique_table("ycsb_janitor");
    hbase_it::create_table(&client, &name, &[]).await;
    let mut outputs = Vec::new();
    for at in [b"m", b"f", b"c"] {
        let parent = admin.list_regions(&name).await.unwrap()[0].region.clone();
        admin.split_region(&parent, at).await.unwrap();
        let out = ycsb(&format!(
            "catalog-janitor {}",
            hbase_it::ycsb_cluster_args()
        ))
        .await;
        let counted: Option<u32> = out
            .strip_prefix("catalog janitor ran: ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        assert!(
            counted.is_some() || out.starts_with("catalog janitor already running"),
            "unexpected output: {out}"
        );
        outputs.push(out);
        if counted.is_some_and(|n| n >= 1) {
            break;
        }
    }
    assert!(
        outputs
            .last()
            .is_some_and(|o| !o.starts_with("catalog janitor ran: 0 ")
                && o.starts_with("catalog janitor ran: ")),
        "{outputs:?}"
    );
    hbase_it::drop_table(&client, &name).await;
}

/// Every buffered insert into a disabled table fails: the report counts none of them OK (also
/// beyond the 10,000 failures a mutator keeps for `flush`, which it only counts), and the
/// load exits non-zero, as a load whose unbuffered inserts fail does. Per-thread buffers and
/// the shared one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_whose_buffered_inserts_all_fail_counts_none_ok_and_exits_non_zero() {
    let (client, name, common) = setup("ycsb_disabled", 1).await;
    client.admin().disable_table(&name).await.unwrap();
    for extra in ["", "-p sharedwritebuffer=true"] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ycsb-it"));
        cmd.args(args(&format!(
            "load {common} -P workloada -p recordcount=12000 -p fieldcount=1 -threads 1 {extra}"
        )));
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run ycsb-it");
        let report = String::from_utf8(out.stdout).unwrap();
        let ok = value(&report, "INSERT", "Return=OK");
        assert!(
            ok.is_none() || ok.as_deref() == Some("0"),
            "{extra}:\n{report}"
        );
        assert_eq!(count(&report, "INSERT", "Return=ERROR"), 12000, "{extra}");
        assert!(
            !out.status.success(),
            "{extra}: exit {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    client.admin().enable_table(&name).await.unwrap();
    hbase_it::drop_table(&client, &name).await;
}

/// A buffered delete that fails counts as a delete, not an update. YCSB 0.17.0's HBase binding
/// (`HBaseClient10`, which `hbase14` and `hbase20` are) sends a delete through the thread's
/// BufferedMutator with `clientbuffering=true`, as ours does; in `ycsb` the shell is what
/// deletes (buffered when asked: its default is each command applied as typed). Into a
/// disabled table, an insert, an update and two deletes all fail at the shell's exit, which
/// counts each kind and exits non-zero. Before, the mutator's failure listener counted the
/// deletes as updates. A row deleted and then updated in the same buffer counts one failed
/// delete and one failed update: each failure names its own mutation (before, ycsb guessed
/// the kind from the rows it had deleted, and counted both as deletes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_buffered_deletes_count_as_deletes() {
    use std::io::Write;
    let (client, name, _) = setup("ycsb_deletes", 1).await;
    client.admin().disable_table(&name).await.unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ycsb-it"))
        .args(args(&format!(
            "shell {} -p table={name} -p clientbuffering=true",
            hbase_it::ycsb_cluster_args()
        )))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run ycsb-it");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"insert k1 field0=a\nupdate k2 field0=b\ndelete k3\ndelete k4\ndelete k5\nupdate k5 field0=c\nquit\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Each write was buffered (the shell answers at once), and each failed at the close.
    assert_eq!(
        stdout.matches("Result: OK\n").count(),
        3,
        "{stdout}\n{stderr}"
    );
    assert_eq!(stdout.matches("Return result: OK\n").count(), 3, "{stdout}");
    assert!(
        stderr.contains("6 buffered writes failed at exit (1 inserts, 2 updates, 3 deletes)"),
        "{stderr}"
    );
    assert!(!out.status.success(), "exit {:?}\n{stderr}", out.status);
    client.admin().enable_table(&name).await.unwrap();
    hbase_it::drop_table(&client, &name).await;
}

/// A run's buffered inserts and updates that all fail each count as what they were, also an
/// update of a row the run inserted into the same buffer (`requestdistribution=latest` sends
/// updates to the rows just inserted). Before, ycsb kept a set of the rows each thread inserted
/// in the run (growing for the run's length, and holding their keys' chunks) and counted every
/// failed put of such a row as an insert. Now a workload put's fields say: an insert writes
/// every field, an update one (`writeallfields=false`, more than one field).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_buffered_run_writes_count_as_what_they_were() {
    let (client, name, common) = setup("ycsb_kinds", 1).await;
    client.admin().disable_table(&name).await.unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ycsb-it"));
    cmd.args(args(&format!(
        "run {common} -P workloada -p recordcount=10 -p operationcount=2000 \
         -p readproportion=0 -p updateproportion=0.5 -p insertproportion=0.5 \
         -p requestdistribution=latest -threads 1"
    )));
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run ycsb-it");
    let report = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let inserts = count(&report, "INSERT", "Operations");
    // The UPDATE block also holds the thread's final close, timed as YCSB's binding times it.
    let updates = count(&report, "UPDATE", "Operations") - 1;
    assert_eq!(inserts + updates, 2000, "{report}");
    assert!(
        stderr.contains(&format!(
            "2000 buffered writes failed ({inserts} inserts, {updates} updates, 0 deletes)"
        )),
        "{inserts} inserts, {updates} updates:\n{stderr}\n{report}"
    );
    assert_eq!(
        count(&report, "INSERT", "Return=ERROR"),
        inserts,
        "{report}"
    );
    client.admin().enable_table(&name).await.unwrap();
    hbase_it::drop_table(&client, &name).await;
}

/// A directory given as `artifacts.dir` holds one run's artifacts: a run into the directory of
/// an earlier load leaves no `INSERT.hdr` of the load beside its own logs (`ycsb merge` read
/// it as a phantom INSERT block, and the run's start as the load's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifacts_dir_holds_the_last_runs_logs_only() {
    let dir = std::env::temp_dir().join(format!("ycsb-artifacts-reuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display();
    ycsb(&format!(
        "load memory -P workloadc -p recordcount=200 -p artifacts.dir={d}"
    ))
    .await;
    assert!(dir.join("INSERT.hdr").is_file());
    std::fs::write(dir.join("notes.txt"), "the user's").unwrap();
    ycsb(&format!(
        "run memory -P workloadc -p recordcount=200 -p operationcount=300 -p artifacts.dir={d}"
    ))
    .await;
    assert!(dir.join("READ.hdr").is_file());
    assert!(
        !dir.join("INSERT.hdr").exists(),
        "the load's log is still there"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "the user's"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
