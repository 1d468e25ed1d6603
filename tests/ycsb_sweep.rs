//! `ycsb sweep` and `ycsb plot` against the real HBase: a thread sweep and a target sweep at
//! small sizes, each point on a clone of the loaded table; the artifacts' contents are checked
//! (a point per thread count, histogram counts equal to operations, the table left as loaded,
//! clones and snapshot gone), and the page is rendered in a real headless browser.

use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use hbase_client::Scan;

use hbase_it::ycsb;

fn points(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("points"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// (operation, count) of every row of summary.csv for `point`.
fn summary_counts(dir: &Path, point: &str) -> Vec<(String, u64)> {
    std::fs::read_to_string(dir.join("summary.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[0] == point)
        .map(|f| (f[5].to_string(), f[6].parse().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_and_target_sweeps() {
    let cluster = hbase_it::ycsb_cluster_args();
    let table = hbase_it::unique_table("sweep");
    let base = std::env::temp_dir().join(format!("ycsb-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let common = format!(
        "{cluster} -p table={table} -p columnfamily=family -p recordcount=400 -p operationcount=400"
    );
    ycsb(&format!("create-table {common} --regions 3")).await;

    let threads_dir = base.join("threads");
    let out = ycsb(&format!(
        "sweep {common} -P workloada,workloadc -threads 1,4 --out {}",
        threads_dir.display()
    ))
    .await;
    assert!(out.contains("report.html"), "{out}");
    let pts = points(&threads_dir);
    // A matrix: every workload at every thread count.
    assert_eq!(pts.len(), 4, "{pts:?}");
    for p in &pts {
        let id = p.file_name().unwrap().to_string_lossy().into_owned();
        let stdout = std::fs::read_to_string(p.join("stdout.txt")).unwrap();
        assert!(
            stdout.contains("[OVERALL], Throughput(ops/sec), "),
            "{stdout}"
        );
        // Histogram counts equal the operations of the run, plus one UPDATE sample per
        // thread: its mutator close, as YCSB records it.
        let counts = summary_counts(&threads_dir, &id);
        let ops: u64 = counts
            .iter()
            .filter(|(op, _)| op == "READ" || op == "UPDATE")
            .map(|(_, n)| n)
            .sum();
        let threads: u64 = id.rsplit("-t").next().unwrap().parse().unwrap();
        assert_eq!(ops, 400 + threads, "{id}: {counts:?}");
    }
    let json = std::fs::read_to_string(threads_dir.join("summary.json")).unwrap();
    assert_eq!(json.matches("\"point\": ").count(), 4);
    for w in ["workloada", "workloadc"] {
        assert_eq!(
            json.matches(&format!("\"workload\": \"{w}\"")).count(),
            2,
            "{json}"
        );
    }

    // A target sweep of a read-only workload, without a second load.
    let target_dir = base.join("targets");
    ycsb(&format!(
        "sweep {common} -p sweep.load=false -P workloadc -threads 2 -target 400,800 --out {}",
        target_dir.display()
    ))
    .await;
    assert_eq!(points(&target_dir).len(), 2);

    // The loaded table is as the load left it; the clones and the snapshot are gone.
    let client = hbase_it::client().await;
    let t = client.table(&table.to_string()).unwrap();
    let mut stream = t.scan(Scan::new());
    let mut rows = 0;
    while let Some(r) = stream.next().await {
        r.unwrap();
        rows += 1;
    }
    assert_eq!(rows, 400);
    let admin = client.admin();
    let prefix = format!("{}_p", String::from_utf8_lossy(table.qualifier()));
    let tables = admin.list_tables(None, None).await.unwrap();
    assert!(
        tables.iter().all(|n| !n.to_string().starts_with(&prefix)),
        "{tables:?}"
    );
    assert!(admin
        .list_snapshots()
        .await
        .unwrap()
        .iter()
        .all(|s| !s.name.contains("_sweep_")));

    // The pages, rendered by a real browser: every chart has its data.
    let dom = hbase_it::browser::render(&threads_dir.join("report.html"));
    // Two lines (a workload each) of two thread counts.
    assert_eq!(
        hbase_it::browser::chart_points(&dom, "Throughput vs threads"),
        vec![4]
    );
    assert!(hbase_it::browser::chart_points(&dom, "Latency percentiles vs threads")[0] >= 4);
    assert_eq!(
        hbase_it::browser::chart_points(&dom, "Latency by percentile").len(),
        4
    );
    assert!(
        hbase_it::browser::chart_points(&dom, "Latency by percentile")
            .iter()
            .all(|&n| n > 0)
    );
    // Three region servers served the points: a line each, a point per sweep point.
    assert_eq!(
        hbase_it::browser::chart_points(&dom, "Calls per region server"),
        vec![12]
    );
    for title in ["Throughput over time", "p99 over time"] {
        assert_eq!(
            hbase_it::browser::chart_points(&dom, title).len(),
            4,
            "{title}"
        );
        assert!(
            hbase_it::browser::chart_points(&dom, title)
                .iter()
                .all(|&n| n > 0),
            "{title}"
        );
    }

    let overlay = base.join("overlay.html");
    ycsb(&format!(
        "plot {} {} --out {}",
        threads_dir.display(),
        target_dir.display(),
        overlay.display()
    ))
    .await;
    let dom = hbase_it::browser::render(&overlay);
    assert!(dom.contains("<h2>threads</h2>") && dom.contains("<h2>targets</h2>"));
    assert!(hbase_it::browser::chart_points(&dom, "Latency vs throughput")[0] >= 2);

    hbase_it::drop_table(&client, &table).await;
    let _ = std::fs::remove_dir_all(&base);
}
