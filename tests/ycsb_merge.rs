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
