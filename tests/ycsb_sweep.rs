//! `ycsb sweep` and `ycsb plot` against the real HBase: a thread sweep and a target sweep at
//! small sizes, each point on a clone of the loaded table and in its own `ycsb run` process;
//! the artifacts' contents are checked (a point per thread count, histogram counts equal to
//! operations, each point's client CPU per operation and peak RSS, the table left as loaded,
//! clones and snapshot gone, a server warm-up run on a clone), and the page is rendered in a
//! real headless browser.

use std::collections::HashSet;
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

/// The `ycsb` binary each point runs in.
fn ycsb_exe() -> &'static str {
    env!("CARGO_BIN_EXE_ycsb-it")
}

/// The rows of summary.csv as maps from its header's column names.
fn summary_rows(dir: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), header.len(), "{l}");
            header
                .iter()
                .cloned()
                .zip(f.iter().map(|v| v.to_string()))
                .collect()
        })
        .collect()
}

/// The number of `[PROCESS], name, N` in a point's process.txt.
fn process_field(point: &Path, name: &str) -> u64 {
    let text = std::fs::read_to_string(point.join("process.txt")).unwrap();
    hbase_it::ycsb_count(&text, "PROCESS", name)
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
        "{cluster} -p table={table} -p columnfamily=family -p recordcount=400 -p operationcount=400 -p sweep.exe={}",
        ycsb_exe()
    );
    ycsb(&format!("create-table {common} --regions 3")).await;

    let threads_dir = base.join("threads");
    let out = ycsb(&format!(
        "sweep {common} -P workloada,workloadc -threads 1,4 --out {}",
        threads_dir.display()
    ))
    .await;
    assert!(out.contains("report.html"), "{out}");
    // The log printed is the log kept.
    assert_eq!(
        std::fs::read_to_string(threads_dir.join("sweep.log")).unwrap(),
        out
    );
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
        // The point ran in its own process: its progress is in its stderr.txt.
        let stderr = std::fs::read_to_string(p.join("stderr.txt")).unwrap();
        assert!(stderr.contains("Starting test."), "{stderr}");
        // Its own accounting of the measured window: the 400 operations, some CPU, and a
        // high-water mark no larger than the one the kernel reported when it was reaped.
        assert_eq!(process_field(p, "Operations"), 400, "{id}");
        let window_us = process_field(p, "CpuUser(us)") + process_field(p, "CpuSystem(us)");
        assert!(window_us > 0, "{id}");
        let meta = std::fs::read_to_string(p.join("point.json")).unwrap();
        let field = |k: &str| -> u64 {
            let at = meta
                .find(&format!("\"{k}\": "))
                .unwrap_or_else(|| panic!("{k}: {meta}"));
            meta[at + k.len() + 4..]
                .split([',', '}'])
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let (process_cpu_us, max_rss_kib) = (field("process_cpu_us"), field("max_rss_kib"));
        assert!(
            window_us <= process_cpu_us,
            "{id}: {window_us} > {process_cpu_us}"
        );
        let hwm = process_field(p, "PeakRSS(KiB)");
        assert!(
            hwm > 1024 && hwm <= max_rss_kib,
            "{id}: {hwm} vs {max_rss_kib}"
        );
    }
    // summary.csv carries each point's process figures on each of its rows.
    let rows = summary_rows(&threads_dir);
    assert!(!rows.is_empty());
    for r in &rows {
        let num = |k: &str| -> f64 {
            r.get(k)
                .unwrap_or_else(|| panic!("no column {k}: {r:?}"))
                .parse()
                .unwrap_or_else(|_| panic!("{k}: {r:?}"))
        };
        let (cpu_op, cpu_s, rss) = (
            num("cpu_us_per_op"),
            num("process_cpu_s"),
            num("peak_rss_mib"),
        );
        assert!(cpu_op > 0.0, "{r:?}");
        // The window's CPU (400 operations) is part of the whole process's.
        assert!(cpu_op * 400.0 <= cpu_s * 1e6 + 1000.0, "{r:?}");
        assert!(rss > 1.0 && rss < 4096.0, "{r:?}");
    }
    let json = std::fs::read_to_string(threads_dir.join("summary.json")).unwrap();
    assert_eq!(json.matches("\"point\": ").count(), 4);
    assert_eq!(json.matches("\"peak_rss_mib\": null").count(), 0, "{json}");
    assert_eq!(json.matches("\"cpu_us_per_op\": ").count(), 4, "{json}");
    for w in ["workloada", "workloadc"] {
        assert_eq!(
            json.matches(&format!("\"workload\": \"{w}\"")).count(),
            2,
            "{json}"
        );
    }

    // A target sweep of a read-only workload, without a second load, after a server warm-up
    // on a clone of the loaded table. An earlier sweep into the directory left a warm-up run
    // this one does not have: it goes (before, it stayed beside this sweep's).
    let target_dir = base.join("targets");
    let earlier_warm = target_dir.join("warmup").join("02-workloadc-t8");
    std::fs::create_dir_all(&earlier_warm).unwrap();
    for file in ["READ.hdr", "report.txt", "stdout.txt", "stderr.txt"] {
        std::fs::write(earlier_warm.join(file), "earlier").unwrap();
    }
    // As the earlier sweep left it: its log (without one the files would be the user's).
    std::fs::write(target_dir.join("sweep.log"), "earlier").unwrap();
    let out = ycsb(&format!(
        "sweep {common} -p sweep.load=false -p sweep.serverwarmup=1 -P workloadc -threads 2 -target 400,800 --out {}",
        target_dir.display()
    ))
    .await;
    let qualifier = String::from_utf8_lossy(table.qualifier()).into_owned();
    assert!(
        out.contains(&format!(
            "server warm-up: 1 run(s) of 1 s on {qualifier}_warm_"
        )),
        "{out}"
    );
    assert_eq!(points(&target_dir).len(), 2);
    // One warm-up run (one workload, one thread count), not a point, on a clone of its own
    // (named in its progress), that found the loaded rows there to read.
    let warm: Vec<PathBuf> = std::fs::read_dir(target_dir.join("warmup"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(warm.len(), 1, "{warm:?}");
    assert!(warm[0].ends_with("01-workloadc-t2"), "{warm:?}");
    let progress = std::fs::read_to_string(warm[0].join("stderr.txt")).unwrap();
    assert!(
        progress.contains(&format!("HBase table {qualifier}_warm_")),
        "{progress}"
    );
    let report = std::fs::read_to_string(warm[0].join("stdout.txt")).unwrap();
    let reads = hbase_it::ycsb_count(&report, "READ", "Operations");
    assert!(reads > 0, "{report}");
    assert_eq!(
        hbase_it::ycsb_count(&report, "READ", "Return=OK"),
        reads,
        "{report}"
    );

    // A bad warm-up length is refused before anything is loaded or snapshotted (the check of
    // the snapshots below covers this sweep too).
    for bad in ["abc", "-1"] {
        let err = ycsb::execute(&hbase_it::ycsb_args(&format!(
            "sweep {common} -p sweep.serverwarmup={bad} -P workloadc -threads 1 --out {}",
            base.join("bad").display()
        )))
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("sweep.serverwarmup"), "{err}");
    }

    // A sweep whose point fails returns the error and keeps its log in the directory, the
    // failure last (the checks below cover its clone and snapshot).
    let failed = base.join("failed");
    let err = ycsb::execute(&hbase_it::ycsb_args(&format!(
        "sweep {common} -p sweep.load=false -p requestdistribution=nosuch -P workloadc -threads 1 --out {}",
        failed.display()
    )))
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("point 001-workloadc-t1"), "{err}");
    let log = std::fs::read_to_string(failed.join("sweep.log")).unwrap();
    assert!(
        log.lines().last() == Some(format!("failed: {err}").as_str()),
        "{log}"
    );
    let stderr = std::fs::read_to_string(points(&failed)[0].join("stderr.txt")).unwrap();
    assert!(stderr.contains("requestdistribution"), "{stderr}");

    // Three sweeps of one process: none took a snapshot name or a table name another had
    // used. HBase coordinates a snapshot by its name, and the second sweep's snapshot, taken
    // seconds after the first one's delete under the same name, once failed in CI.
    let snapshot_of = |dir: &Path| {
        let log = std::fs::read_to_string(dir.join("sweep.log")).unwrap();
        let line = log
            .lines()
            .find(|l| l.starts_with("snapshot ") && l.ends_with(&format!(" of {table}")))
            .unwrap_or_else(|| panic!("no snapshot line: {log}"))
            .to_string();
        line.split(' ').nth(1).unwrap().to_string()
    };
    let snapshots: HashSet<String> = [&threads_dir, &target_dir, &failed]
        .into_iter()
        .map(|d| snapshot_of(d))
        .collect();
    assert_eq!(snapshots.len(), 3, "{snapshots:?}");
    let mut clones: Vec<String> = Vec::new();
    for dir in [&threads_dir, &target_dir] {
        for p in points(dir).into_iter().chain(
            std::fs::read_dir(dir.join("warmup"))
                .into_iter()
                .flatten()
                .map(|e| e.unwrap().path()),
        ) {
            let progress = std::fs::read_to_string(p.join("stderr.txt")).unwrap();
            let line = progress
                .lines()
                .find_map(|l| l.strip_prefix("HBase table "))
                .unwrap_or_else(|| panic!("no table line: {progress}"));
            clones.push(line.split(',').next().unwrap().to_string());
        }
    }
    // 4 + 2 points and a warm-up (the failed point stopped before it named its table).
    assert_eq!(clones.len(), 7, "{clones:?}");
    assert_eq!(clones.iter().collect::<HashSet<_>>().len(), 7, "{clones:?}");

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
    let tables = admin.list_tables(None, None).await.unwrap();
    for prefix in [format!("{qualifier}_p"), format!("{qualifier}_warm_")] {
        assert!(
            tables.iter().all(|n| !n.to_string().starts_with(&prefix)),
            "{prefix}: {tables:?}"
        );
    }
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
    for title in ["Client CPU per operation vs threads", "Peak RSS vs threads"] {
        assert_eq!(
            hbase_it::browser::chart_points(&dom, title),
            vec![4],
            "{title}"
        );
    }
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

/// A point whose run failed or was interrupted has a directory and no `point.json`: plot
/// leaves it out, naming it on stderr, and draws the others. A directory with no complete
/// point is still an error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plot_skips_an_incomplete_point() {
    let base = std::env::temp_dir().join(format!("ycsb-sweep-partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let dir = base.join("sweep");
    ycsb(&format!(
        "sweep memory -P workloadc -threads 1,2 -p recordcount=100 -p operationcount=100 -p sweep.exe={} --out {}",
        ycsb_exe(),
        dir.display()
    ))
    .await;
    let broken = dir.join("points").join("003-workloadc-t4");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("stdout.txt"), "").unwrap();
    let page = base.join("page.html");
    let plot = |dir: &Path| {
        std::process::Command::new(ycsb_exe())
            .args(["plot", &dir.display().to_string(), "--out"])
            .arg(&page)
            .output()
            .unwrap()
    };
    let out = plot(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&broken.display().to_string()) && stderr.contains("point.json"),
        "{stderr}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    for id in ["001-workloadc-t1", "002-workloadc-t2"] {
        assert!(html.contains(&format!("<td>{id}</td>")), "{id}: {html}");
    }
    assert!(!html.contains("003-workloadc-t4"), "{html}");

    // Only incomplete points: an error naming the directory.
    let empty = base.join("empty");
    std::fs::create_dir_all(empty.join("points").join("001-workloadc-t1")).unwrap();
    let out = plot(&empty);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&empty.join("points").display().to_string())
            && stderr.contains("no complete point"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// A sweep rerun into the directory of an earlier one keeps nothing of that sweep's own files
/// beside its points: the earlier `load.txt` when this sweep loads nothing (`sweep.load=false`)
/// and the earlier server warm-up's runs in `warmup/` when this one has none (the memory
/// binding has no server) go with the earlier points, once this sweep's first point is about
/// to run; a file of the user's there stays, and a sweep that loads keeps its own `load.txt`.
/// Before, both stayed and read as this sweep's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_leaves_no_earlier_load_or_warm_up() {
    let out = std::env::temp_dir().join(format!("ycsb-sweep-stale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let plant = || {
        std::fs::create_dir_all(&out).unwrap();
        // What marks a directory an earlier sweep's (a load.txt alone may be the user's).
        std::fs::write(out.join("sweep.log"), "earlier").unwrap();
        std::fs::write(out.join("load.txt"), "earlier").unwrap();
        for id in ["01-workloadc-t1", "02-workloadc-t8"] {
            let dir = out.join("warmup").join(id);
            std::fs::create_dir_all(&dir).unwrap();
            for file in [
                "READ.hdr",
                "report.txt",
                "process.txt",
                "stdout.txt",
                "stderr.txt",
            ] {
                std::fs::write(dir.join(file), "earlier").unwrap();
            }
        }
        std::fs::write(out.join("warmup").join("notes.txt"), "the user's").unwrap();
    };
    let sweep = |extra: &str| {
        format!(
            "sweep memory -P workloadc -p recordcount=50 -p operationcount=50 -threads 1 -p sweep.exe={} {extra} --out {}",
            ycsb_exe(),
            out.display()
        )
    };
    let warmup_left = || -> Vec<String> {
        let mut left: Vec<String> = walk(&out.join("warmup"))
            .into_iter()
            .map(|p| p.strip_prefix(&out).unwrap().display().to_string())
            .collect();
        left.sort();
        left
    };

    // A rerun that loads: its own load.txt.
    plant();
    let log = ycsb(&sweep("")).await;
    assert!(log.contains("point 001-workloadc-t1 done"), "{log}");
    let load = std::fs::read_to_string(out.join("load.txt")).unwrap();
    assert!(load.contains("[INSERT], Operations, 50"), "{load}");
    assert_eq!(warmup_left(), ["warmup/notes.txt"]);

    // A rerun that loads nothing: no load.txt.
    plant();
    let log = ycsb(&sweep("-p sweep.load=false")).await;
    assert!(log.contains("point 001-workloadc-t1 done"), "{log}");
    assert!(
        !out.join("load.txt").exists(),
        "the earlier sweep's load.txt is left"
    );
    assert_eq!(warmup_left(), ["warmup/notes.txt"]);
    std::fs::remove_dir_all(&out).unwrap();
}

/// Every file under `dir` (none when it does not exist).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
