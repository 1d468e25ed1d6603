//! The compatibility suite: one short pass over everything the client does, run against every
//! HBase version of the matrix (`scripts/version-matrix`, each version in its own cluster
//! start: 2.4.18, 2.5.12-hadoop3, 2.6.4-hadoop3, 3.0.0-alpha-4) and, as part of the full suite,
//! against the default 2.6.4. Data path (every mutation kind, gets with versions, time ranges
//! and filters), scans across regions in both directions, batches and the buffered mutator,
//! admin (namespaces, create pre-split, describe, split, move, disable, delete), snapshots, a
//! buffered ycsb load and run, and the address map (the docker case).
//!
//! Nothing here is version-specific: where servers differ, the client handles it. The one
//! place a test looks at the version is to check that it did: a snapshot is a master procedure
//! on 2.6+ and the older ZooKeeper-coordinated kind before.

use std::time::Duration;

use bytes::Bytes;
use hbase_client::admin::ProcedureState;
use hbase_client::{
    Action, ActionResult, Append, CheckAndMutate, Client, ClientConfig, ColumnFamily, Comparator,
    CompareOp, Delete, ErrorKind, Filter, Get, Increment, MutatorConfig, Put, RowResult, Scan,
    TableDescriptor, TableName,
};

/// Bounds one scenario: a hang fails the test instead of blocking the matrix.
async fn bounded<T>(what: &str, secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {secs} s"))
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// (qualifier, timestamp, value) of each cell, in the order the server returned them.
fn cells(row: &RowResult) -> Vec<(String, u64, String)> {
    row.cells
        .iter()
        .map(|c| {
            (
                String::from_utf8_lossy(c.qualifier()).into_owned(),
                c.timestamp(),
                String::from_utf8_lossy(c.value()).into_owned(),
            )
        })
        .collect()
}

fn keys(rows: &[RowResult]) -> Vec<String> {
    rows.iter()
        .map(|r| String::from_utf8_lossy(&r.row).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutation_kind_and_read_option() {
    bounded("data path", 120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("compat_ops");
        let desc = TableDescriptor::new(name.clone())
            .family(ColumnFamily::new("a").max_versions(4))
            .family(ColumnFamily::new("b"));
        client.admin().create_table(&desc, &[b("m")]).await.unwrap();
        let t = client.table(&name.to_string()).unwrap();

        // Versions with explicit timestamps, two families, an empty qualifier.
        t.put(
            Put::new("r")
                .add_at("a", "q", 10, "v10")
                .add_at("a", "q", 20, "v20")
                .add_at("a", "q", 30, "v30")
                .add_at("a", "p", 20, "p20")
                .add_at("a", "", 20, "empty-qualifier")
                .add("b", "x", "x"),
        )
        .await
        .unwrap();
        let all = t
            .get(Get::new("r").family("a").max_versions(4))
            .await
            .unwrap()
            .unwrap();
        let expected = [
            ("", 20, "empty-qualifier"),
            ("p", 20, "p20"),
            ("q", 30, "v30"),
            ("q", 20, "v20"),
            ("q", 10, "v10"),
        ]
        .map(|(q, ts, v)| (q.to_string(), ts, v.to_string()));
        assert_eq!(cells(&all), expected);
        let ranged = t
            .get(
                Get::new("r")
                    .column("a", "q")
                    .max_versions(4)
                    .time_range(15, 30),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(cells(&ranged), [("q".to_string(), 20, "v20".to_string())]);
        let filtered = t
            .get(Get::new("r").filter(Filter::ColumnPrefix(b("p"))))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(cells(&filtered), [("p".to_string(), 20, "p20".to_string())]);
        assert!(t.exists(Get::new("r").column("b", "x")).await.unwrap());
        assert!(!t.exists(Get::new("absent")).await.unwrap());

        // Every delete kind.
        t.delete(Delete::new("r").column_version("a", "q", Some(30)))
            .await
            .unwrap();
        t.delete(Delete::new("r").family_version("a", 20))
            .await
            .unwrap();
        let left = t
            .get(Get::new("r").family("a").max_versions(4))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(cells(&left), [("q".to_string(), 10, "v10".to_string())]);
        t.put(Put::new("r").add_at("a", "q", 40, "v40"))
            .await
            .unwrap();
        t.delete(Delete::new("r").timestamp(35).column("a", "q"))
            .await
            .unwrap();
        let left = t
            .get(Get::new("r").family("a").max_versions(4))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(cells(&left), [("q".to_string(), 40, "v40".to_string())]);
        t.delete(Delete::new("r").family("a")).await.unwrap();
        assert!(t.get(Get::new("r").family("a")).await.unwrap().is_none());
        t.delete(Delete::new("r")).await.unwrap();
        assert!(t.get(Get::new("r")).await.unwrap().is_none());

        // Read-modify-write.
        assert_eq!(t.increment_column("n", "b", "c", 7).await.unwrap(), 7);
        let row = t
            .increment(Increment::new("n").add("b", "c", -10).add("a", "d", 1))
            .await
            .unwrap();
        assert_eq!(row.value(b"b", b"c").unwrap(), &(-3i64).to_be_bytes());
        t.append(Append::new("n").add("b", "s", "ab"))
            .await
            .unwrap();
        let row = t
            .append(Append::new("n").add("b", "s", "cd"))
            .await
            .unwrap();
        assert_eq!(row.value(b"b", b"s").unwrap(), b"abcd");

        // Check-and-mutate.
        let cas = |check: CheckAndMutate, v: &str| check.then_put(Put::new("n").add("b", "k", v));
        assert!(t
            .check_and_mutate(cas(CheckAndMutate::new("n", "b", "k").if_absent(), "1"))
            .await
            .unwrap());
        assert!(!t
            .check_and_mutate(cas(CheckAndMutate::new("n", "b", "k").if_absent(), "2"))
            .await
            .unwrap());
        assert!(t
            .check_and_mutate(cas(CheckAndMutate::new("n", "b", "k").if_equals("1"), "3"))
            .await
            .unwrap());
        assert!(!t
            .check_and_mutate(
                CheckAndMutate::new("n", "b", "k")
                    .if_matches(CompareOp::Greater, "3")
                    .then_delete(Delete::new("n").column("b", "k"))
            )
            .await
            .unwrap());
        assert!(t
            .check_and_mutate(
                CheckAndMutate::new("n", "b", "k")
                    .if_matches(CompareOp::Less, "2")
                    .then_delete(Delete::new("n").column("b", "k"))
            )
            .await
            .unwrap());
        assert!(t
            .get(Get::new("n").column("b", "k"))
            .await
            .unwrap()
            .is_none());

        // Errors keep their kinds.
        let e = t
            .put(Put::new("r").add("nofamily", "q", "v"))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DoNotRetry, "{e}");
        let e = client
            .table(&hbase_it::unique_table("compat_missing").to_string())
            .unwrap()
            .get(Get::new("r"))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_cross_regions_both_ways() {
    bounded("scans", 120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("compat_scan");
        hbase_it::create_table(&client, &name, &["k050", "k100", "k150"]).await;
        let t = client.table(&name.to_string()).unwrap();
        let rows: Vec<String> = (0..200).map(|i| format!("k{i:03}")).collect();
        let puts: Vec<Action> = rows
            .iter()
            .map(|r| {
                let big = if r.ends_with('7') { 300_000 } else { 10 };
                Action::Put(Put::new(r.clone()).add("cf", "v", r.clone()).add(
                    "cf",
                    "pad",
                    "p".repeat(big),
                ))
            })
            .collect();
        for r in t.batch(&puts).await {
            assert_eq!(r.unwrap(), ActionResult::Done);
        }

        // Whole table, small pages and a small size limit (rows arrive in parts).
        let all = t
            .scan(Scan::new().caching(7).max_result_size(64 * 1024))
            .collect_all()
            .await
            .unwrap();
        assert_eq!(keys(&all), rows);
        assert!(all.iter().all(|r| r.cells.len() == 2));
        let reversed = t
            .scan(Scan::new().reversed(true))
            .collect_all()
            .await
            .unwrap();
        let mut backwards = rows.clone();
        backwards.reverse();
        assert_eq!(keys(&reversed), backwards);
        let range = t
            .scan(Scan::new().start_row("k045").stop_row("k155"))
            .collect_all()
            .await
            .unwrap();
        assert_eq!(keys(&range), rows[45..155]);
        let down = t
            .scan(
                Scan::new()
                    .reversed(true)
                    .start_row("k155")
                    .stop_row("k045")
                    .limit(20),
            )
            .collect_all()
            .await
            .unwrap();
        let expected: Vec<String> = rows[136..=155].iter().rev().cloned().collect();
        assert_eq!(keys(&down), expected);
        let filtered = t
            .scan(Scan::new().column("cf", "v").filter(Filter::All(vec![
                Filter::Prefix(b("k1")),
                Filter::Value(CompareOp::Equal, Comparator::Regex(".*9$".into())),
            ])))
            .collect_all()
            .await
            .unwrap();
        let nines: Vec<String> = (100..200)
            .filter(|i| i % 10 == 9)
            .map(|i| format!("k{i:03}"))
            .collect();
        assert_eq!(keys(&filtered), nines);
        assert!(filtered.iter().all(|r| r.cells.len() == 1));
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_and_buffered_writes() {
    bounded("batches", 180, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("compat_batch");
        hbase_it::create_table(&client, &name, &["r3", "r6"]).await;
        let t = client.table(&name.to_string()).unwrap();

        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(64 * 1024),
            )
            .unwrap();
        for i in 0..5000u32 {
            let row = format!("r{}-{i:05}", i % 10);
            mutator
                .mutate(Put::new(row.clone()).add("cf", "q", row))
                .await
                .unwrap();
        }
        mutator
            .close()
            .await
            .expect("every buffered put acknowledged");
        let all = t.scan(Scan::new()).collect_all().await.unwrap();
        assert_eq!(all.len(), 5000);
        assert!(all.iter().all(|r| r.value(b"cf", b"q") == Some(&r.row)));

        // Gets, puts and deletes mixed, over the three regions, in one batch.
        let mut actions = Vec::new();
        for i in 0..300u32 {
            let row = format!("r{}-{i:05}", i % 10);
            actions.push(match i % 3 {
                0 => Action::Get(Get::new(row)),
                1 => Action::Delete(Delete::new(row)),
                _ => Action::Put(Put::new(row).add("cf", "q", "new")),
            });
        }
        let outcomes = t.batch(&actions).await;
        for (i, outcome) in outcomes.into_iter().enumerate() {
            match (i % 3, outcome.unwrap()) {
                (0, ActionResult::Row(Some(r))) => {
                    assert_eq!(r.value(b"cf", b"q"), Some(&r.row[..]));
                }
                (1 | 2, ActionResult::Done) => {}
                (k, other) => panic!("action {i} (kind {k}): {other:?}"),
            }
        }
        let reread: Vec<Action> = (0..300u32)
            .map(|i| Action::Get(Get::new(format!("r{}-{i:05}", i % 10))))
            .collect();
        for (i, outcome) in t.batch(&reread).await.into_iter().enumerate() {
            let row = match outcome.unwrap() {
                ActionResult::Row(r) => r,
                other => panic!("{other:?}"),
            };
            match i % 3 {
                0 => assert!(row.is_some(), "row {i} was only read"),
                1 => assert!(row.is_none(), "row {i} was deleted"),
                _ => assert_eq!(row.unwrap().value(b"cf", b"q").unwrap(), b"new"),
            }
        }
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_namespaces_create_split_move() {
    bounded("admin", 240, async {
        let client = hbase_it::client().await;
        let admin = client.admin().with_timeout(Duration::from_secs(120));
        let balancer = hbase_it::balancer_off(&admin).await;

        // A namespace, a pre-split table in it, its description.
        let ns = hbase_it::unique_name("ns");
        admin.create_namespace(&ns).await.unwrap();
        assert!(admin.list_namespaces().await.unwrap().contains(&ns));
        let e = admin.create_namespace(&ns).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DoNotRetry, "{e}");
        let name = TableName::parse(&format!("{ns}:t")).unwrap();
        let desc =
            TableDescriptor::new(name.clone()).family(ColumnFamily::new("cf").max_versions(2));
        admin.create_table(&desc, &[b("g"), b("p")]).await.unwrap();
        assert_eq!(
            admin.list_tables(None, Some(&ns)).await.unwrap(),
            vec![name.clone()]
        );
        assert_eq!(
            admin
                .describe_table(&name)
                .await
                .unwrap()
                .family_named(b"cf")
                .unwrap()
                .versions(),
            2
        );
        let e = admin.delete_namespace(&ns).await.unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::DoNotRetry,
            "a namespace with a table: {e}"
        );

        let t = client.table(&name.to_string()).unwrap();
        let rows: Vec<String> = ('a'..='z').map(|c| format!("{c}-row")).collect();
        for r in &rows {
            t.put(Put::new(r.clone()).add("cf", "q", r.clone()))
                .await
                .unwrap();
        }
        let read_all = || async {
            let got = t.scan(Scan::new()).collect_all().await.unwrap();
            assert_eq!(keys(&got), rows);
        };

        // Split, then move each daughter to another server; the data stays readable.
        let (left, right) = admin.split_table_at(&name, b"k").await.unwrap();
        assert_eq!(&left.region.end_key[..], b"k");
        assert_eq!(&right.region.start_key[..], b"k");
        assert_eq!(admin.list_regions(&name).await.unwrap().len(), 4);
        read_all().await;
        let servers = admin.region_servers().await.unwrap();
        assert!(
            servers.len() >= 2,
            "moves need two region servers: {servers:?}"
        );
        for region in [&left, &right] {
            let from = region.server.clone().expect("assigned");
            let to = servers.iter().find(|s| **s != from).unwrap();
            assert_eq!(
                &admin.move_region(&region.region, Some(to)).await.unwrap(),
                to
            );
            let now = admin
                .region_for_row(&name, &region.region.start_key)
                .await
                .unwrap();
            assert_eq!(now.server.as_ref(), Some(to));
        }
        read_all().await;
        assert_eq!(
            t.get(Get::new("m-row"))
                .await
                .unwrap()
                .unwrap()
                .value(b"cf", b"q"),
            Some(&b("m-row")[..])
        );

        hbase_it::drop_table(&client, &name).await;
        assert!(!admin.table_exists(&name).await.unwrap());
        admin.delete_namespace(&ns).await.unwrap();
        assert!(!admin.list_namespaces().await.unwrap().contains(&ns));
        let e = admin.delete_namespace(&ns).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        balancer.release().await;
    })
    .await;
}

/// True for a version that runs snapshots as master procedures (2.6 and later).
fn has_snapshot_procedure(version: &str) -> bool {
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).expect("major");
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).expect("minor");
    (major, minor) >= (2, 6)
}

#[test]
fn snapshot_procedures_begin_with_2_6() {
    for (version, expected) in [
        ("2.4.18", false),
        ("2.5.12-hadoop3", false),
        ("2.6.4", true),
        ("2.6.4-hadoop3", true),
        ("3.0.0-alpha-4", true),
    ] {
        assert_eq!(has_snapshot_procedure(version), expected, "{version}");
    }
}

/// A snapshot as the master takes it: on 2.6+ a master procedure (the client sends a nonce, as
/// Java's does since 2.6; without it the master took the older way), before 2.6 the
/// ZooKeeper-coordinated kind, polled with IsSnapshotDone. Either way a clone holds the rows of
/// the moment the snapshot was taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_is_taken_as_the_masters_version_takes_it() {
    bounded("snapshot", 180, async {
        let client = hbase_it::client().await;
        let admin = client.admin().with_timeout(Duration::from_secs(120));
        let version = admin.hbase_version().await.unwrap();
        let name = hbase_it::unique_table("compat_snap");
        hbase_it::create_table(&client, &name, &["r10"]).await;
        let t = client.table(&name.to_string()).unwrap();
        for i in 0..20 {
            t.put(Put::new(format!("r{i:02}")).add("cf", "q", "before"))
                .await
                .unwrap();
        }
        let earlier = hbase_it::snapshot_procedures(&admin).await;

        let snap = format!("{}_s", String::from_utf8_lossy(name.qualifier()));
        admin.snapshot(&snap, &name).await.unwrap();
        let new = hbase_it::procedures_added(&earlier, hbase_it::snapshot_procedures(&admin).await);
        // Another client of the cluster may take a snapshot meanwhile: ours is one of the new
        // ones, and it finished (the call returned).
        if has_snapshot_procedure(&version) {
            assert!(
                new.iter()
                    .any(|p| p.state == ProcedureState::Success && p.failure.is_none()),
                "HBase {version}: no new snapshot procedure that succeeded: {new:?}"
            );
        } else {
            // 2.4 and 2.5 have no such procedure: the snapshot completed through
            // IsSnapshotDone polls, the one path those versions have.
            assert!(new.is_empty(), "HBase {version}: {new:?}");
        }

        for i in 0..20 {
            t.put(Put::new(format!("r{i:02}")).add("cf", "q", "after"))
                .await
                .unwrap();
        }
        let clone = hbase_it::unique_table("compat_snap_clone");
        admin.clone_snapshot(&snap, &clone).await.unwrap();
        let cloned = client
            .table(&clone.to_string())
            .unwrap()
            .scan(Scan::new())
            .collect_all()
            .await
            .unwrap();
        assert_eq!(cloned.len(), 20);
        assert!(
            cloned
                .iter()
                .all(|r| r.value(b"cf", b"q") == Some(&b"before"[..])),
            "{cloned:?}"
        );
        admin.delete_snapshot(&snap).await.unwrap();
        hbase_it::drop_table(&client, &clone).await;
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_buffered_load_and_run() {
    bounded("ycsb", 180, async {
        let name = hbase_it::unique_table("compat_ycsb");
        let common = format!(
            "{} -p table={name} -p columnfamily=family -p recordcount=2000 -threads 4",
            hbase_it::ycsb_cluster_args()
        );
        let run = |line: String| async move { hbase_it::ycsb(&line).await };
        run(format!("create-table {common} --regions 4")).await;
        let load = run(format!(
            "load {common} -P workloada -p clientbuffering=true"
        ))
        .await;
        assert_eq!(
            hbase_it::ycsb_count(&load, "INSERT", "Return=OK"),
            2000,
            "{load}"
        );
        // YCSB's accounting: each of the 4 threads' buffer closes is one UPDATE sample.
        assert_eq!(
            hbase_it::ycsb_count(&load, "UPDATE", "Operations"),
            4,
            "{load}"
        );
        let out = run(format!(
            "run {common} -P workloada -p operationcount=1000 -p clientbuffering=true"
        ))
        .await;
        let reads = hbase_it::ycsb_count(&out, "READ", "Return=OK");
        let updates = hbase_it::ycsb_count(&out, "UPDATE", "Return=OK");
        assert_eq!(reads + updates, 1000, "{out}");
        assert!(
            !out.contains("Return=ERROR") && !out.contains("NOT_FOUND"),
            "{out}"
        );

        let client = hbase_it::client().await;
        let rows = client
            .table(&name.to_string())
            .unwrap()
            .scan(Scan::new().family("family"))
            .collect_all()
            .await
            .unwrap();
        assert_eq!(rows.len(), 2000);
        assert!(rows.iter().all(|r| r.cells.len() == 10));
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// The address map is what reaches the servers: mapping every server to a name that does not
/// resolve makes data calls fail (the registry, given directly, still answers), and with
/// `HBASE_ADDRESS_MAP` set for servers that register names this machine cannot resolve (the
/// docker case), a client without the map fails the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn address_map_is_what_reaches_the_servers() {
    bounded("address map", 120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("compat_map");
        hbase_it::create_table(&client, &name, &[]).await;
        let t = client.table(&name.to_string()).unwrap();
        t.put(Put::new("row").add("cf", "q", "v")).await.unwrap();

        let servers = client.admin().region_servers().await.unwrap();
        let master = client.admin().master().await.unwrap();
        let mut hosts: Vec<String> = servers.iter().map(|s| s.host.clone()).collect();
        hosts.push(master.host.clone());
        hosts.sort();
        hosts.dedup();
        let nowhere = hosts
            .iter()
            .map(|h| format!("{h}=no-such-host.invalid"))
            .collect::<Vec<_>>()
            .join(",");
        let unreachable = |map: Option<&str>| {
            let mut builder = hbase_it::registry_builder()
                .connect_timeout(Duration::from_secs(2))
                .rpc_timeout(Duration::from_secs(2))
                .operation_timeout(Duration::from_secs(4))
                .retries(2);
            if let Some(map) = map {
                builder = builder
                    .address_mapper(hbase_client::AddressMap::parse(map).unwrap().into_mapper());
            }
            builder.build().unwrap()
        };
        let fails = |config: ClientConfig| async {
            let c = Client::connect(config).await.expect("the registry answers");
            let e = c
                .table(&name.to_string())
                .unwrap()
                .get(Get::new("row"))
                .await
                .unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Retryable | ErrorKind::Timeout),
                "{e} ({:?})",
                e.kind()
            );
            e
        };
        let e = fails(unreachable(Some(&nowhere))).await;
        eprintln!("servers mapped to no-such-host.invalid: {e}");

        let resolvable = |h: &str| std::net::ToSocketAddrs::to_socket_addrs(&(h, 0)).is_ok();
        if !hbase_it::address_map().is_empty() && !hosts.iter().all(|h| resolvable(h)) {
            let e = fails(unreachable(None)).await;
            eprintln!("servers registered as {hosts:?}, no address map: {e}");
        }
        let row = t.get(Get::new("row")).await.unwrap().unwrap();
        assert_eq!(row.value(b"cf", b"q").unwrap(), b"v");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}
