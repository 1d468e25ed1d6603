//! `ycsb sweep` and `ycsb plot` against the real HBase: a thread sweep and a target sweep at
//! small sizes, each point on a clone of the loaded table; the artifacts' contents are checked
//! (a point per thread count, histogram counts equal to operations, the table left as loaded,
//! clones and snapshot gone), and the page is rendered in a real headless browser.

use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use hbase_client::Scan;

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

async fn ycsb(line: &str) -> String {
    match ycsb::execute(&args(line)).await {
        Ok(out) => out.stdout,
        Err(e) => panic!("ycsb {line}: {e}"),
    }
}

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

/// Renders `page` in headless Chromium and returns the DOM it built.
fn render_in_browser(page: &Path) -> String {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|b| {
            std::process::Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("a Chromium browser (Debian package chromium; .ci/run installs it)");
    let profile = std::env::temp_dir().join(format!("ycsb-chromium-{}", std::process::id()));
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            &format!("--user-data-dir={}", profile.display()),
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let _ = std::fs::remove_dir_all(&profile);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {stderr}");
    // The page has no script; any console message from it would be an error in the page.
    assert!(
        !stderr.contains("CONSOLE") && !stderr.contains("Uncaught"),
        "console errors: {stderr}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `data-points` of the chart whose title starts with `title`.
fn chart_points(dom: &str, title: &str) -> Vec<u64> {
    dom.split("<svg")
        .skip(1)
        .filter(|svg| svg.contains(&format!("data-chart=\"{title}")))
        .map(|svg| {
            let at = svg.find("data-points=\"").unwrap() + 13;
            svg[at..].split('"').next().unwrap().parse().unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_and_target_sweeps() {
    let zk = hbase_it::zk();
    let table = hbase_it::unique_table("sweep");
    let base = std::env::temp_dir().join(format!("ycsb-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let common = format!(
        "--zk {zk} -p table={table} -p columnfamily=family -p recordcount=400 -p operationcount=400"
    );
    ycsb(&format!("create-table {common} --regions 3")).await;

    let threads_dir = base.join("threads");
    let out = ycsb(&format!(
        "sweep {common} -P workloada -threads 1,4 --out {}",
        threads_dir.display()
    ))
    .await;
    assert!(out.contains("report.html"), "{out}");
    let pts = points(&threads_dir);
    assert_eq!(pts.len(), 2, "{pts:?}");
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
    assert_eq!(json.matches("\"point\": ").count(), 2);

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
    let dom = render_in_browser(&threads_dir.join("report.html"));
    assert_eq!(chart_points(&dom, "Throughput vs threads"), vec![2]);
    assert!(chart_points(&dom, "Latency percentiles vs threads")[0] >= 4);
    assert_eq!(chart_points(&dom, "Latency by percentile").len(), 2);
    assert!(chart_points(&dom, "Latency by percentile")
        .iter()
        .all(|&n| n > 0));
    // Three region servers served the points: a line each, a point per sweep point.
    assert_eq!(chart_points(&dom, "Calls per region server"), vec![6]);
    for title in ["Throughput over time", "p99 over time"] {
        assert_eq!(chart_points(&dom, title).len(), 2, "{title}");
        assert!(chart_points(&dom, title).iter().all(|&n| n > 0), "{title}");
    }

    let overlay = base.join("overlay.html");
    ycsb(&format!(
        "plot {} {} --out {}",
        threads_dir.display(),
        target_dir.display(),
        overlay.display()
    ))
    .await;
    let dom = render_in_browser(&overlay);
    assert!(dom.contains("<h2>threads</h2>") && dom.contains("<h2>targets</h2>"));
    assert!(chart_points(&dom, "Latency vs throughput")[0] >= 2);

    hbase_it::drop_table(&client, &table).await;
    let _ = std::fs::remove_dir_all(&base);
}
