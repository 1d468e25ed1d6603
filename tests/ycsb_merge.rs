//! `ycsb merge` against the real HBase: one load split over 3 `ycsb` processes (disjoint
//! insert ranges, each saving `-p artifacts.dir`), merged, compared with the same work done
//! by one process: the same operation counts, every row present.

use std::path::PathBuf;

use futures_util::StreamExt;
use hbase_client::Scan;

use hbase_it::{ycsb, ycsb_args as args};

/// The `ycsb` command line, built by Cargo for this package's integration tests.
fn ycsb_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ycsb-it"))
}

fn count(report: &str, metric: &str, measurement: &str) -> u64 {
    let prefix = format!("[{metric}], {measurement}, ");
    report
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no [{metric}], {measurement} in\n{report}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_merge_like_one() {
    let cluster = hbase_it::ycsb_cluster_args();
    let split = hbase_it::unique_table("merge3");
    let single = hbase_it::unique_table("merge1");
    let common = format!("{cluster} -P workloada -p columnfamily=family -threads 4");
    for t in [&split, &single] {
        ycsb(&format!(
            "create-table {cluster} -p table={t} -p columnfamily=family --regions 4"
        ))
        .await;
    }
    let base = std::env::temp_dir().join(format!("ycsb-merge-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);

    // Three processes at once, each inserting its own third of 3,000 records.
    let mut children = Vec::new();
    for i in 0..3 {
        let dir = base.join(format!("part{i}"));
        let line = format!(
            "load {common} -p table={split} -p recordcount=3000 -p insertstart={} \
             -p insertcount=1000 -p artifacts.dir={}",
            i * 1000,
            dir.display()
        );
        children.push(
            std::process::Command::new(ycsb_binary())
                .args(args(&line))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn ycsb"),
        );
    }
    let mut parts = Vec::new();
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        parts.push(stdout);
    }
    let dirs: Vec<String> = (0..3)
        .map(|i| base.join(format!("part{i}")).display().to_string())
        .collect();
    let page = base.join("merged.html");
    let merged = ycsb(&format!(
        "merge {} --out {}",
        dirs.join(" "),
        page.display()
    ))
    .await;
    let sum: u64 = parts.iter().map(|r| count(r, "INSERT", "Operations")).sum();
    assert_eq!(sum, 3000);
    assert_eq!(count(&merged, "INSERT", "Operations"), 3000);
    assert_eq!(count(&merged, "INSERT", "Return=OK"), 3000);
    assert_eq!(count(&merged, "OVERALL", "Runs"), 3);
    // Each process's 4 tasks closed their mutators: 12 cleanup samples.
    let cleanups: u64 = parts
        .iter()
        .map(|r| count(r, "CLEANUP", "Operations"))
        .sum();
    assert_eq!(count(&merged, "CLEANUP", "Operations"), cleanups);
    // The merged maximum is the largest of the parts' maxima (histograms added, not averaged).
    let max = parts
        .iter()
        .map(|r| count(r, "INSERT", "MaxLatency(us)"))
        .max()
        .unwrap();
    assert_eq!(count(&merged, "INSERT", "MaxLatency(us)"), max);

    // The merged plots, rendered by a real browser: the merged distribution beside each part's
    // (11 percentiles each), throughput over time per part plus their sum, p99 per part.
    let dom = hbase_it::browser::render(&page);
    assert!(dom.contains("<td>INSERT</td><td>3000</td>"), "{dom}");
    let plotted = merged
        .lines()
        .filter(|l| l.contains("], Operations, ") && !l.starts_with("[CLEANUP]"))
        .count();
    assert_eq!(
        hbase_it::browser::chart_points(&dom, "Latency by percentile: merged"),
        vec![(1 + 3) * 11 * plotted as u64]
    );
    let over_time = hbase_it::browser::chart_points(&dom, "Throughput over time: merged");
    assert!(over_time[0] >= 4, "{over_time:?}");
    let p99 = hbase_it::browser::chart_points(&dom, "p99 over time: merged");
    assert!(p99[0] >= 3, "{p99:?}");

    // The same work in one process.
    let one = base.join("single");
    ycsb(&format!(
        "load {common} -p table={single} -p recordcount=3000 -p artifacts.dir={}",
        one.display()
    ))
    .await;
    let alone = ycsb(&format!("merge {}", one.display())).await;
    assert_eq!(
        count(&alone, "INSERT", "Operations"),
        count(&merged, "INSERT", "Operations")
    );
    assert_eq!(count(&alone, "OVERALL", "Runs"), 1);

    // Every record is in both tables.
    let client = hbase_it::client().await;
    for t in [&split, &single] {
        let table = client.table(&t.to_string()).unwrap();
        let mut stream = table.scan(Scan::new());
        let mut rows = 0;
        while let Some(r) = stream.next().await {
            r.unwrap();
            rows += 1;
        }
        assert_eq!(rows, 3000, "{t}");
        hbase_it::drop_table(&client, t).await;
    }

    // A directory without artifacts is a clear error.
    let err = ycsb::execute(&args(&format!("merge {}", base.display())))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("artifacts.dir"), "{err}");
    let _ = std::fs::remove_dir_all(&base);
}

/// `[OVERALL], Throughput(ops/sec)` of a report.
fn throughput(report: &str) -> f64 {
    report
        .lines()
        .find_map(|l| l.strip_prefix("[OVERALL], Throughput(ops/sec), "))
        .unwrap_or_else(|| panic!("no throughput in\n{report}"))
        .trim()
        .parse()
        .unwrap()
}

/// The operations a report's throughput stands for: throughput × RunTime.
fn operations(report: &str) -> f64 {
    throughput(report) * count(report, "OVERALL", "RunTime(ms)") as f64 / 1000.0
}

/// Runs `ycsb run <line> -p artifacts.dir=DIR` and `ycsb merge DIR`: (the run's report, the
/// merged report).
async fn run_and_merge(name: &str, line: &str) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("ycsb-merge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = ycsb(&format!("run {line} -p artifacts.dir={}", dir.display())).await;
    let merged = ycsb(&format!("merge {}", dir.display())).await;
    let _ = std::fs::remove_dir_all(&dir);
    (run, merged)
}

/// One run merged alone reports its own RunTime and its own operations (to within one: the
/// run's RunTime is in whole milliseconds).
fn assert_merges_to_itself(run: &str, merged: &str) {
    assert_eq!(
        count(merged, "OVERALL", "RunTime(ms)"),
        count(run, "OVERALL", "RunTime(ms)"),
        "{run}\n{merged}"
    );
    let (own, got) = (operations(run), operations(merged));
    assert!(own > 100.0, "{run}");
    assert!(
        (got - own).abs() <= own * 0.005,
        "merged {got} operations, the run {own}\n{run}\n{merged}"
    );
}

/// The measured window of a run with a warm-up starts at the end of the warm-up: RunTime
/// counts from there, and its interval logs begin there (their start time is the process's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_a_warm_up_merges_to_its_own_throughput() {
    let (run, merged) = run_and_merge(
        "warmup",
        "memory -P workloadc -threads 2 -p operationcount=3000 -p warmuptime=1 -target 2000",
    )
    .await;
    assert_merges_to_itself(&run, &merged);
}

/// Throughput counts what the run counts: one operation per read-modify-write (not its READ,
/// its UPDATE and itself), and no VERIFY sample.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_f_run_merges_to_its_own_throughput() {
    let (run, merged) = run_and_merge(
        "f",
        "memory -P workloadf -threads 4 -p operationcount=2000 -target 2000 -p dataintegrity=true",
    )
    .await;
    assert!(
        count(&run, "READ-MODIFY-WRITE", "Operations") > 100,
        "{run}"
    );
    assert!(count(&run, "VERIFY", "Operations") > 100, "{run}");
    assert_merges_to_itself(&run, &merged);
}

/// With client buffering each thread's final mutator close is timed as one UPDATE sample (as
/// YCSB's HBase binding does): not an operation of the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_close_samples_are_not_operations() {
    let cluster = hbase_it::ycsb_cluster_args();
    let t = hbase_it::unique_table("mergeclose");
    ycsb(&format!(
        "create-table {cluster} -p table={t} -p columnfamily=family"
    ))
    .await;
    let (run, merged) = run_and_merge(
        "close",
        &format!(
            "{cluster} -p table={t} -p columnfamily=family -P workloada -p updateproportion=1 \
             -p readproportion=0 -p recordcount=1000 -p operationcount=1000 -threads 32"
        ),
    )
    .await;
    // 1,000 updates and 32 close samples.
    assert_eq!(count(&run, "UPDATE", "Operations"), 1032, "{run}");
    assert_eq!(count(&run, "UPDATE", "Return=OK"), 1000, "{run}");
    assert_merges_to_itself(&run, &merged);
    let client = hbase_it::client().await;
    hbase_it::drop_table(&client, &t).await;
}
