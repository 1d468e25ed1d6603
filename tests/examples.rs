//! The runnable examples of `hbase-client/examples/`, run as a user runs them (`cargo run -p
//! hbase-client --example NAME -- QUORUM`) against the test cluster: each must exit 0 and print
//! what it read back. They take only a ZooKeeper quorum, so they follow `HBASE_ZK` but not
//! `HBASE_ADDRESS_MAP`. `secure` runs in `tests/security.rs`, against the secured clusters.
//! The tables they create (`example_*`, `quickstart`...) are theirs: each drops its own at the
//! end, and one left by an earlier run at the start.

fn lines(out: &str) -> Vec<&str> {
    out.lines().collect()
}

#[test]
fn quickstart_writes_reads_and_deletes() {
    let out = hbase_it::run_example("quickstart", &[&hbase_it::zk()]);
    let lines = lines(&out);
    for expected in [
        "apple: red",
        "zucchini: green",
        "zucchini cf:color = green",
        "apple deleted",
    ] {
        assert!(lines.contains(&expected), "{expected:?} in\n{out}");
    }
}

#[test]
fn scan_reads_ranges_both_ways_and_raw() {
    let out = hbase_it::run_example("scan", &[&hbase_it::zk()]);
    let lines = lines(&out);
    let forward: Vec<String> = (25..35).map(|i| format!("row{i:03} = {i}")).collect();
    let first: Option<Vec<String>> = lines
        .get(..10)
        .map(|l| l.iter().map(|s| s.to_string()).collect());
    assert_eq!(first, Some(forward), "{out}");
    assert!(
        lines.contains(&r#"last three, backward: ["row099", "row098", "row097"]"#),
        "{out}"
    );
    assert!(lines.contains(&"rows with prefix row07: 10"), "{out}");
    // 90 + 91 + ... + 99, read through scan_raw.
    assert!(lines.contains(&"sum of n over row090..: 945"), "{out}");
}

#[test]
fn batch_and_mutator_reads_back_every_buffered_row() {
    let out = hbase_it::run_example("batch_and_mutator", &[&hbase_it::zk()]);
    assert!(out.lines().any(|l| l == "rows read back: 50000"), "{out}");
    assert!(out.contains("50,000 puts buffered in"), "{out}");
}

#[test]
fn counters_and_conditions_claims_and_releases() {
    let out = hbase_it::run_example("counters_and_conditions", &[&hbase_it::zk()]);
    let lines = lines(&out);
    for expected in ["visits: 1", "job-7 claimed", "released by worker-a: true"] {
        assert!(lines.contains(&expected), "{expected:?} in\n{out}");
    }
    assert!(out.contains(r#"cf:owner = b"worker-a""#), "{out}");
}
