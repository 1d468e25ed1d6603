//! The data path against a real HBase: every single-row operation, batches, and the buffered
//! mutator, with values read back and compared.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{
    Action, ActionResult, Append, CheckAndMutate, ColumnFamily, CompareOp, Delete, Durability,
    Error, ErrorKind, Get, Increment, MutatorConfig, Put, Scan, TableDescriptor, TableName,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_row_operations() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("ops");
    let desc = TableDescriptor::new(name.clone())
        .family(ColumnFamily::new("cf").max_versions(3))
        .family(ColumnFamily::new("cf2"));
    client
        .admin()
        .create_table(&desc, &["m".into()])
        .await
        .unwrap();
    let t = client.table(&name.to_string()).unwrap();

    // Several families and qualifiers, explicit timestamps, durability.
    t.put(
        Put::new("r1")
            .add_at("cf", "q", 100, "v100")
            .add_at("cf", "q", 200, "v200")
            .add_at("cf", "q", 300, "v300")
            .add("cf2", "x", "x1")
            .durability(Durability::SyncWal),
    )
    .await
    .unwrap();
    let row = t.get(Get::new("r1")).await.unwrap().unwrap();
    assert_eq!(row.cells.len(), 2, "one version per column by default");
    assert_eq!(row.value(b"cf", b"q").unwrap(), b"v300");
    assert_eq!(row.value(b"cf2", b"x").unwrap(), b"x1");
    let versions = t
        .get(Get::new("r1").column("cf", "q").max_versions(3))
        .await
        .unwrap()
        .unwrap();
    let ts: Vec<u64> = versions.cells.iter().map(|c| c.timestamp()).collect();
    assert_eq!(ts, vec![300, 200, 100]);
    let ranged = t
        .get(Get::new("r1").column("cf", "q").time_range(150, 250))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ranged.value(b"cf", b"q").unwrap(), b"v200");
    let fam = t.get(Get::new("r1").family("cf2")).await.unwrap().unwrap();
    assert_eq!(fam.cells.len(), 1);
    let filtered = t
        .get(Get::new("r1").filter(hbase_client::Filter::Value(
            CompareOp::Equal,
            hbase_client::Comparator::Binary("x1".into()),
        )))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(filtered.cells.len(), 1);

    // exists
    assert!(t.exists(Get::new("r1")).await.unwrap());
    assert!(!t.exists(Get::new("nope")).await.unwrap());

    // Deletes: one version, one column (all versions), a family, then the row.
    t.delete(Delete::new("r1").column_version("cf", "q", Some(300)))
        .await
        .unwrap();
    assert_eq!(
        t.get(Get::new("r1").column("cf", "q"))
            .await
            .unwrap()
            .unwrap()
            .value(b"cf", b"q")
            .unwrap(),
        b"v200"
    );
    t.delete(Delete::new("r1").column("cf", "q")).await.unwrap();
    assert!(t
        .get(Get::new("r1").column("cf", "q"))
        .await
        .unwrap()
        .is_none());
    t.put(Put::new("r1").add("cf", "other", "o")).await.unwrap();
    t.delete(Delete::new("r1").family("cf2")).await.unwrap();
    let left = t.get(Get::new("r1")).await.unwrap().unwrap();
    assert_eq!(left.cells.len(), 1);
    assert_eq!(left.cells[0].qualifier(), b"other");
    t.delete(Delete::new("r1")).await.unwrap();
    assert!(t.get(Get::new("r1")).await.unwrap().is_none());

    // Increment and append return the new values.
    assert_eq!(t.increment_column("n", "cf", "c", 5).await.unwrap(), 5);
    assert_eq!(t.increment_column("n", "cf", "c", -2).await.unwrap(), 3);
    let both = t
        .increment(Increment::new("n").add("cf", "c", 10).add("cf2", "d", 1))
        .await
        .unwrap();
    assert_eq!(both.value(b"cf", b"c").unwrap(), &13i64.to_be_bytes());
    assert_eq!(both.value(b"cf2", b"d").unwrap(), &1i64.to_be_bytes());
    let app = t
        .append(Append::new("z").add("cf", "s", "ab"))
        .await
        .unwrap();
    assert_eq!(app.value(b"cf", b"s").unwrap(), b"ab");
    let app = t
        .append(Append::new("z").add("cf", "s", "cd"))
        .await
        .unwrap();
    assert_eq!(app.value(b"cf", b"s").unwrap(), b"abcd");

    // Check-and-mutate: absent, equal (pass and fail), then a conditional delete.
    let put = |v: &'static str| Put::new("c").add("cf", "state", v);
    assert!(t
        .check_and_mutate(
            CheckAndMutate::new("c", "cf", "state")
                .if_absent()
                .then_put(put("draft"))
        )
        .await
        .unwrap());
    assert!(!t
        .check_and_mutate(
            CheckAndMutate::new("c", "cf", "state")
                .if_absent()
                .then_put(put("x"))
        )
        .await
        .unwrap());
    assert!(!t
        .check_and_mutate(
            CheckAndMutate::new("c", "cf", "state")
                .if_equals("published")
                .then_put(put("y"))
        )
        .await
        .unwrap());
    assert!(t
        .check_and_mutate(
            CheckAndMutate::new("c", "cf", "state")
                .if_equals("draft")
                .then_put(put("published"))
        )
        .await
        .unwrap());
    let now = t.get(Get::new("c")).await.unwrap().unwrap();
    assert_eq!(now.value(b"cf", b"state").unwrap(), b"published");
    assert!(t
        .check_and_mutate(
            CheckAndMutate::new("c", "cf", "state")
                .if_equals("published")
                .then_delete(Delete::new("c"))
        )
        .await
        .unwrap());
    assert!(t.get(Get::new("c")).await.unwrap().is_none());

    // Bad input is refused before anything is sent.
    let err = t.put(Put::new("e")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DoNotRetry);
    assert!(matches!(err, Error::InvalidInput(_)));
    let err = t
        .put(Put::new(vec![b'k'; 40_000]).add("cf", "q", "v"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    // An unknown family is the server's do-not-retry error.
    let err = t
        .put(Put::new("r").add("nofamily", "q", "v"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{err}");
    assert_eq!(
        err.remote().unwrap().short_class_name(),
        "NoSuchColumnFamilyException"
    );

    hbase_it::drop_table(&client, &name).await;
}

/// A batch of 10,000 mixed actions over 8 regions goes in one round (nothing retried): to each
/// server that holds regions of the table, its actions in Multis of at most 2,048 rows
/// (`max_request_rows`, Java's `hbase.client.max.perrequest.rows`): at least as many as that
/// takes, and at most one more per region (a region's actions may span two requests, and a
/// request formed while the region it stopped in is still in flight goes without it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_of_10000_mixed_actions_is_one_round_of_multis_per_server() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("batch");
    let splits: Vec<String> = (1..8).map(|i| format!("b{:05}", i * 1250)).collect();
    let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
    hbase_it::create_table(&client, &name, &splits).await;
    let t = client.table(&name.to_string()).unwrap();
    let key = |i: u32| Bytes::from(format!("b{i:05}"));
    // Pre-write the rows that the batch will read and delete.
    let seed: Vec<Action> = (0..10_000)
        .filter(|i| i % 3 != 0)
        .map(|i| Action::Put(Put::new(key(i)).add("cf", "q", format!("old{i}"))))
        .collect();
    assert!(t.batch(&seed).await.iter().all(Result::is_ok));
    // Warm the region cache so the batch itself is a single round.
    let _ = t.scan(Scan::new().limit(1)).next().await;
    for i in (0..10_000).step_by(1250) {
        t.exists(Get::new(key(i))).await.unwrap();
    }

    let regions = client.admin().list_regions(&name).await.unwrap();
    let before = client.stats();
    let actions: Vec<Action> = (0..10_000)
        .map(|i| match i % 3 {
            0 => Action::Put(Put::new(key(i)).add("cf", "q", format!("new{i}"))),
            1 => Action::Get(Get::new(key(i))),
            _ => Action::Delete(Delete::new(key(i))),
        })
        .collect();
    let results = t.batch(&actions).await;
    let after = client.stats();
    assert_eq!(results.len(), 10_000);
    for (i, r) in results.into_iter().enumerate() {
        match (i % 3, r.unwrap()) {
            (1, ActionResult::Row(Some(row))) => assert_eq!(
                row.value(b"cf", b"q").unwrap(),
                &Bytes::from(format!("old{i}"))
            ),
            (0 | 2, ActionResult::Done) => {}
            (k, other) => panic!("action {i} (kind {k}) gave {other:?}"),
        }
    }
    let servers: HashSet<String> = regions
        .iter()
        .map(|r| r.server.clone().unwrap().address())
        .collect();
    assert!(servers.len() >= 2);
    assert_eq!(client.config().max_request_rows(), 2048);
    let on = |server: &str| {
        let here: Vec<_> = regions
            .iter()
            .filter(|r| r.server.as_ref().unwrap().address() == server)
            .collect();
        let actions = (0..10_000)
            .filter(|&i| {
                let k = key(i);
                here.iter().any(|r| {
                    r.region.start_key <= k && (r.region.end_key.is_empty() || k < r.region.end_key)
                })
            })
            .count() as u64;
        (actions, here.len() as u64)
    };
    for s in &after.servers {
        let b = before.server(&s.server);
        assert_eq!(s.retries, b.map_or(0, |b| b.retries), "one round");
        let (actions, regions_here) = on(&s.server);
        let least = actions.div_ceil(2048);
        let multis = s.multi_calls - b.map_or(0, |b| b.multi_calls);
        assert!(
            (least..=least + regions_here).contains(&multis),
            "Multi calls to {}; servers with regions {servers:?}; before {before:?}; after {after:?}",
            s.server
        );
    }
    // Effects are visible.
    assert_eq!(
        t.get(Get::new(key(3)))
            .await
            .unwrap()
            .unwrap()
            .value(b"cf", b"q")
            .unwrap(),
        b"new3"
    );
    assert!(t.get(Get::new(key(2))).await.unwrap().is_none());
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_mutator_200k_puts_all_arrive() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("mutator");
    hbase_it::create_table(&client, &name, &["m2", "m4", "m6", "m8"]).await;
    let mutator = client
        .buffered_mutator(&name.to_string(), MutatorConfig::default())
        .unwrap();
    const N: u32 = 200_000;
    for i in 0..N {
        mutator
            .mutate(Put::new(format!("m{i:06}")).add("cf", "q", format!("v{i}")))
            .await
            .unwrap();
    }
    mutator.close().await.unwrap();
    let t = client.table(&name.to_string()).unwrap();
    let mut stream = t.scan(Scan::new().caching(5000));
    let mut n = 0u32;
    while let Some(row) = stream.next().await {
        let row = row.unwrap();
        assert_eq!(row.row, Bytes::from(format!("m{n:06}")));
        assert_eq!(
            row.value(b"cf", b"q").unwrap(),
            &Bytes::from(format!("v{n}"))
        );
        n += 1;
    }
    assert_eq!(n, N);
    assert!(
        mutator
            .mutate(Put::new("late").add("cf", "q", "v"))
            .await
            .is_err(),
        "closed mutator refuses"
    );
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_racing_64_writers_loses_nothing() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("race");
    hbase_it::create_table(&client, &name, &["t16", "t32", "t48"]).await;
    let failures = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let f2 = failures.clone();
    let mutator = client
        .buffered_mutator(
            &name.to_string(),
            MutatorConfig::default()
                .write_buffer_size(64 * 1024)
                .on_failure(move |_| {
                    f2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }),
        )
        .unwrap();
    const PER_TASK: u32 = 1000;
    let mut tasks = Vec::new();
    for task in 0..64u32 {
        let m = mutator.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..PER_TASK {
                m.mutate(Put::new(format!("t{task:02}-{i:04}")).add(
                    "cf",
                    "q",
                    format!("{task}/{i}"),
                ))
                .await
                .unwrap();
                if i % 100 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    let flusher = {
        let m = mutator.clone();
        tokio::spawn(async move {
            for _ in 0..50 {
                m.flush().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
    };
    for t in tasks {
        t.await.unwrap();
    }
    flusher.await.unwrap();
    mutator.close().await.unwrap();
    assert_eq!(failures.load(std::sync::atomic::Ordering::SeqCst), 0);
    let t = client.table(&name.to_string()).unwrap();
    let rows = t
        .scan(Scan::new().caching(5000))
        .collect_all()
        .await
        .unwrap();
    assert_eq!(rows.len(), 64 * PER_TASK as usize);
    for row in &rows {
        let key = std::str::from_utf8(&row.row).unwrap();
        let (task, i) = key[1..].split_once('-').unwrap();
        let expect = format!(
            "{}/{}",
            task.parse::<u32>().unwrap(),
            i.parse::<u32>().unwrap()
        );
        assert_eq!(row.value(b"cf", b"q").unwrap(), expect.as_bytes());
    }
    hbase_it::drop_table(&client, &name).await;
}

/// `hbase:meta` reads through a `Table` like any table, as with Java's client: it has no row
/// of its own in itself, so its region's server comes from the registry. A get of a region's
/// row and a scan of a table's rows both find what the admin lists; they failed with
/// TableNotFound ("hbase:meta").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hbase_meta_reads_through_a_table() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("meta_read");
    hbase_it::create_table(&client, &name, &["m"]).await;
    let regions = client.admin().list_regions(&name).await.unwrap();
    assert_eq!(regions.len(), 2);
    let meta = client.table("hbase:meta").unwrap();
    let first = regions[0].region.name.clone();
    let row = meta
        .get(Get::new(first.clone()).column("info", "regioninfo"))
        .await
        .unwrap_or_else(|e| panic!("get from hbase:meta: {e}"))
        .expect("the region's row");
    assert_eq!(row.row, first);
    assert!(row
        .value(b"info", b"regioninfo")
        .is_some_and(|v| !v.is_empty()));
    // The table's rows: from "name,," (as Java's MetaTableAccessor starts; meta compares
    // its rows by their parts, and "name," sorts after the first region's row) up to "name-"
    // (the character after the comma).
    let start = format!("{name},,");
    let stop = format!("{name}-");
    let rows: Vec<Bytes> = meta
        .scan(Scan::new().start_row(start).stop_row(stop))
        .map(|r| r.unwrap().row)
        .collect()
        .await;
    let listed: Vec<Bytes> = regions.iter().map(|r| r.region.name.clone()).collect();
    assert_eq!(rows, listed, "the table's regions, in order");
    // The admin lists meta's own region.
    let own = client
        .admin()
        .list_regions(&TableName::meta())
        .await
        .unwrap();
    assert_eq!(own.len(), 1);
    assert_eq!(&own[0].region.name[..], b"hbase:meta,,1");
    hbase_it::drop_table(&client, &name).await;
}
