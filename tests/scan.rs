//! Scans against a real HBase: region crossing both ways, bounds, limits, filters, partial rows.

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{Action, ActionResult, Comparator, CompareOp, Filter, Put, Scan, Table};

const ROWS: u32 = 2000;

fn key(i: u32) -> Bytes {
    Bytes::from(format!("k{i:05}"))
}

async fn setup() -> (hbase_client::Client, hbase_client::TableName, Table) {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan");
    // 9 regions: split every 200 keys up to k01600.
    let splits: Vec<String> = (1..9).map(|i| format!("k{:05}", i * 200)).collect();
    let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
    hbase_it::create_table(&client, &name, &splits).await;
    let table = client.table(&name.to_string()).unwrap();
    let actions: Vec<Action> = (0..ROWS)
        .map(|i| {
            Action::Put(
                Put::new(key(i))
                    .add("cf", "a", format!("a{i}"))
                    .add("cf", "b", if i % 2 == 0 { "even" } else { "odd" })
                    .add("cf", "wide", vec![b'w'; 300]),
            )
        })
        .collect();
    for r in table.batch(&actions).await {
        assert_eq!(r.unwrap(), ActionResult::Done);
    }
    (client, name, table)
}

async fn rows(table: &Table, scan: Scan) -> Vec<Bytes> {
    let mut stream = table.scan(scan);
    let mut out = Vec::new();
    while let Some(row) = stream.next().await {
        out.push(row.unwrap().row);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_cross_regions_in_both_directions() {
    let (client, name, table) = setup().await;
    assert_eq!(client.admin().list_regions(&name).await.unwrap().len(), 9);

    let all = rows(&table, Scan::new()).await;
    assert_eq!(all, (0..ROWS).map(key).collect::<Vec<_>>());

    let rev = rows(&table, Scan::new().reversed(true)).await;
    assert_eq!(rev, (0..ROWS).rev().map(key).collect::<Vec<_>>());

    // Bounds spanning several regions, forward: [k00150, k01234).
    let mid = rows(&table, Scan::new().start_row(key(150)).stop_row(key(1234))).await;
    assert_eq!(mid, (150..1234).map(key).collect::<Vec<_>>());
    // Inclusive stop exactly on a region boundary.
    let incl = rows(
        &table,
        Scan::new()
            .start_row(key(100))
            .stop_row(key(400))
            .include_stop_row(true),
    )
    .await;
    assert_eq!(incl, (100..=400).map(key).collect::<Vec<_>>());
    // Reversed: from k01234 down to (excluding) k00150.
    let rmid = rows(
        &table,
        Scan::new()
            .reversed(true)
            .start_row(key(1234))
            .stop_row(key(150)),
    )
    .await;
    assert_eq!(rmid, (151..=1234).rev().map(key).collect::<Vec<_>>());
    // Reversed starting exactly at a region start.
    let rb = rows(
        &table,
        Scan::new()
            .reversed(true)
            .start_row(key(800))
            .stop_row(key(590)),
    )
    .await;
    assert_eq!(rb, (591..=800).rev().map(key).collect::<Vec<_>>());

    // Limits, small caching (many RPCs), both directions.
    let lim = rows(&table, Scan::new().start_row(key(190)).limit(25).caching(7)).await;
    assert_eq!(lim, (190..215).map(key).collect::<Vec<_>>());
    let rlim = rows(&table, Scan::new().reversed(true).limit(450).caching(100)).await;
    assert_eq!(rlim, (ROWS - 450..ROWS).rev().map(key).collect::<Vec<_>>());

    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_rows_are_stitched_and_filters_apply() {
    let (client, name, table) = setup().await;

    // A max result size far below one row forces partial results for every row.
    let mut stream = table.scan(
        Scan::new()
            .start_row(key(300))
            .stop_row(key(340))
            .max_result_size(100),
    );
    let mut n = 0;
    while let Some(row) = stream.next().await {
        let row = row.unwrap();
        assert_eq!(row.row, key(300 + n));
        assert_eq!(row.cells.len(), 3, "row {n} not stitched");
        assert_eq!(
            row.value(b"cf", b"a").unwrap(),
            format!("a{}", 300 + n).as_bytes()
        );
        assert_eq!(row.value(b"cf", b"wide").unwrap().len(), 300);
        n += 1;
    }
    assert_eq!(n, 40);
    // The same, reversed.
    let r = table
        .scan(
            Scan::new()
                .reversed(true)
                .start_row(key(1210))
                .stop_row(key(1190))
                .max_result_size(100),
        )
        .collect_all()
        .await
        .unwrap();
    assert_eq!(r.len(), 20);
    assert!(r.iter().all(|row| row.cells.len() == 3));

    // Filters.
    let prefix = rows(
        &table,
        Scan::new().filter(Filter::Prefix(Bytes::from_static(b"k012"))),
    )
    .await;
    assert_eq!(prefix, (1200..1300).map(key).collect::<Vec<_>>());
    let even = Scan::new()
        .stop_row(key(100))
        .filter(Filter::SingleColumnValue {
            family: "cf".into(),
            qualifier: "b".into(),
            op: CompareOp::Equal,
            comparator: Comparator::Binary("even".into()),
            filter_if_missing: true,
            latest_version_only: true,
        });
    assert_eq!(
        rows(&table, even).await,
        (0..100).step_by(2).map(key).collect::<Vec<_>>()
    );
    let first_key = table
        .scan(Scan::new().stop_row(key(10)).filter(Filter::FirstKeyOnly))
        .collect_all()
        .await
        .unwrap();
    assert_eq!(first_key.len(), 10);
    assert!(first_key.iter().all(|r| r.cells.len() == 1));
    let key_only = table
        .scan(Scan::new().stop_row(key(5)).filter(Filter::KeyOnly(false)))
        .collect_all()
        .await
        .unwrap();
    assert!(key_only
        .iter()
        .all(|r| r.cells.iter().all(|c| c.value().is_empty())));
    let cols = table
        .scan(
            Scan::new()
                .stop_row(key(5))
                .filter(Filter::ColumnPrefix("w".into())),
        )
        .collect_all()
        .await
        .unwrap();
    assert!(cols
        .iter()
        .all(|r| r.cells.len() == 1 && r.cells[0].qualifier() == b"wide"));
    let range = table
        .scan(Scan::new().stop_row(key(5)).filter(Filter::ColumnRange {
            min: Some("a".into()),
            min_inclusive: true,
            max: Some("b".into()),
            max_inclusive: true,
        }))
        .collect_all()
        .await
        .unwrap();
    assert!(range.iter().all(|r| r.cells.len() == 2));
    let regex = Scan::new().filter(Filter::Row(
        CompareOp::Equal,
        Comparator::Regex("k0000[0-4]".into()),
    ));
    assert_eq!(
        rows(&table, regex).await,
        (0..5).map(key).collect::<Vec<_>>()
    );
    let any = Scan::new().filter(Filter::Any(vec![
        Filter::Row(CompareOp::Equal, Comparator::Binary(key(7))),
        Filter::Row(CompareOp::Equal, Comparator::BinaryPrefix("k0199".into())),
    ]));
    let mut expect = vec![key(7)];
    expect.extend((1990..2000).map(key));
    assert_eq!(rows(&table, any).await, expect);
    let all = Scan::new().filter(Filter::All(vec![
        Filter::Prefix("k001".into()),
        Filter::Value(CompareOp::Equal, Comparator::Substring("ODD".into())),
    ]));
    assert_eq!(rows(&table, all).await.len(), 50);
    let q = Scan::new().stop_row(key(3)).filter(Filter::Qualifier(
        CompareOp::Equal,
        Comparator::Binary("b".into()),
    ));
    let qrows = table.scan(q).collect_all().await.unwrap();
    assert!(qrows
        .iter()
        .all(|r| r.cells.len() == 1 && r.cells[0].qualifier() == b"b"));
    let page = rows(
        &table,
        Scan::new().stop_row(key(150)).filter(Filter::Page(10)),
    )
    .await;
    assert_eq!(page, (0..10).map(key).collect::<Vec<_>>());

    // Dropping a stream early closes its scanner; the client keeps working.
    let mut early = table.scan(Scan::new().caching(10));
    assert!(early.next().await.is_some());
    drop(early);
    assert_eq!(rows(&table, Scan::new().limit(3)).await.len(), 3);

    hbase_it::drop_table(&client, &name).await;
}

/// The recorded Scan requests of the table (not the locator's `hbase:meta` lookups) that ask
/// to close a scanner.
fn closes(proxy: &hbase_it::proxy::FaultProxy) -> usize {
    proxy
        .controls()
        .iter()
        .flat_map(|c| c.recorded())
        .filter(|r| r.method == "Scan" && hbase_it::proxy::proto_bool(&r.param, 5) == Some(true))
        .filter(|r| !hbase_it::contains_bytes(&r.param, b"hbase:meta"))
        .count()
}

/// A region the server reports done has its scanner closed by the server: the client sends
/// no close of its own (one round trip, and an UnknownScannerException, per region saved).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_regions_get_no_extra_close() {
    let (client, name, _) = setup().await;
    let proxy = hbase_it::proxy::FaultProxy::new();
    let proxied = hbase_it::proxied_client(&proxy, |b| b).await;
    let table = proxied.table(&name.to_string()).unwrap();
    // Warm: locations cached, connections open.
    assert_eq!(rows(&table, Scan::new().limit(1)).await.len(), 1);
    proxy.each(|c| c.record(|r| r.method == "Scan"));
    let all = rows(&table, Scan::new().caching(500)).await;
    assert_eq!(all.len(), ROWS as usize);
    let scans: usize = proxy.controls().iter().map(|c| c.recorded().len()).sum();
    assert!(scans >= 9, "one open per region at least ({scans})");
    assert_eq!(
        closes(&proxy),
        0,
        "no close after the server said the region is done"
    );
    hbase_it::drop_table(&client, &name).await;
}

/// A scan reopened within a region (its connection reset) sends back the region's MVCC read
/// point: a row written after the scan started stays invisible to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopened_scan_keeps_its_read_point() {
    let (client, name, plain) = setup().await;
    let proxy = hbase_it::proxy::FaultProxy::new();
    let proxied = hbase_it::proxied_client(&proxy, |b| b).await;
    let table = proxied.table(&name.to_string()).unwrap();
    let mut stream = table.scan(Scan::new().stop_row("k00200").caching(10));
    let mut got = Vec::new();
    for _ in 0..10 {
        got.push(stream.next().await.unwrap().unwrap().row);
    }
    // Written after the scan opened, ahead of where it is.
    plain
        .put(Put::new("k00150-late").add("cf", "a", "late"))
        .await
        .unwrap();
    proxy.each(|c| c.record(|r| r.method == "Scan"));
    proxy.each(|c| c.reset_existing());
    while let Some(row) = stream.next().await {
        got.push(row.unwrap().row);
    }
    assert_eq!(
        got.len(),
        200,
        "every row once, the late one not among them"
    );
    assert!(!got.iter().any(|r| r.ends_with(b"-late")));
    let reopen_with_point = proxy
        .controls()
        .iter()
        .flat_map(|c| c.recorded())
        .filter(|r| {
            let fields = hbase_it::proxy::proto_fields(&r.param).unwrap_or_default();
            fields.iter().any(|(f, v)| match (f, v) {
                (2, hbase_it::proxy::Field::Bytes(scan)) => hbase_it::proxy::proto_fields(scan)
                    .unwrap_or_default()
                    .iter()
                    .any(|(f, v)| matches!((f, v), (20, hbase_it::proxy::Field::Varint(p)) if *p > 0)),
                _ => false,
            })
        })
        .count();
    assert!(reopen_with_point >= 1, "the reopen carried the read point");
    hbase_it::drop_table(&client, &name).await;
}

/// A scan whose task ends before the scan does (here its runtime shuts down; a panic is the
/// other way) ends its stream with an error, not as a complete scan: a caller that collects
/// the rows must not take a cut-short scan for the whole table.
#[test]
fn a_scan_whose_task_died_ends_in_an_error() {
    let outer = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (client, name, table) = outer.block_on(setup());
    let inner = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The scan's task is spawned on the inner runtime, which never runs it and then drops it.
    let stream = {
        let _on_inner = inner.enter();
        table.scan(Scan::new())
    };
    drop(inner);
    outer.block_on(hbase_it::bounded(60, async move {
        let got: Vec<_> = stream.collect().await;
        assert_eq!(got.len(), 1, "one error, no rows: {got:?}");
        let err = got.into_iter().next().unwrap().unwrap_err();
        eprintln!("a scan whose task died: {err}");
        assert!(
            matches!(err, hbase_client::Error::ScanAborted { .. }),
            "{err:?}"
        );
        assert_eq!(err.kind(), hbase_client::ErrorKind::Retryable);
        assert!(
            !rows(&table, Scan::new()).await.is_empty(),
            "the table has rows"
        );
        hbase_it::drop_table(&client, &name).await;
    }));
}

/// A scan whose stream is dropped stops, even while its answers carry no rows (a filter that
/// matches nothing): it used to notice only when it had a row to hand on, so it went through
/// every region of the table for a consumer that was gone. Counted in calls to the region
/// servers: the stream is dropped before its task first runs, and again while the answer to
/// its first call is held in the proxy.
#[test]
fn a_dropped_scan_stops_though_its_answers_carry_no_rows() {
    let outer = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (client, name, _) = outer.block_on(setup());
    let proxy = hbase_it::proxy::FaultProxy::new();
    let proxied = outer.block_on(hbase_it::proxied_client(&proxy, |b| b));
    let table = proxied.table(&name.to_string()).unwrap();
    let nothing = || {
        Scan::new().filter(Filter::Row(
            CompareOp::Equal,
            Comparator::Binary(Bytes::from_static(b"no such row")),
        ))
    };
    let calls = || proxied.stats().total(|s| s.calls);
    // Every region located, and a full scan that matches nothing takes one call per region.
    outer.block_on(async {
        assert_eq!(rows(&table, Scan::new()).await.len(), ROWS as usize);
        let before = calls();
        assert!(rows(&table, nothing()).await.is_empty());
        assert_eq!(calls() - before, 9, "one call per region");
    });
    // The scan's task runs on a runtime of its own, so the test can wait for it to end.
    let inner = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tasks = inner.handle().clone();
    let outstanding = || {
        proxy
            .controls()
            .iter()
            .map(|c| c.outstanding())
            .sum::<u64>()
    };
    for after_first_call in [false, true] {
        let before = calls();
        inner.block_on(hbase_it::bounded(60, async {
            proxy.each(|c| c.hold_responses(after_first_call));
            let stream = table.scan(nothing());
            while after_first_call && outstanding() == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            drop(stream);
            proxy.each(|c| c.hold_responses(false));
            while tasks.metrics().num_alive_tasks() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }));
        let made = calls() - before;
        eprintln!("a dropped scan (after its first call: {after_first_call}): {made} calls");
        assert_eq!(
            made,
            u64::from(after_first_call),
            "a scan dropped (after its first call: {after_first_call}) went on"
        );
    }
    outer.block_on(hbase_it::drop_table(&client, &name));
}

/// A scan answer whose cells cannot be read is retried (the scanner reopened where the last
/// answer left off), and the scanner that answer left open on the server is closed, not left
/// to its lease (a minute of the server's memory and a lease per damaged answer, by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_answer_that_cannot_be_read_closes_its_scanner() {
    hbase_it::bounded(90, async {
        let proxy = hbase_it::proxy::FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let (name, table, ctl) =
            hbase_it::one_region_table(&client, &proxy, "scan_unreadable").await;
        let actions: Vec<Action> = (0..50)
            .map(|i| Action::Put(Put::new(key(i)).add("cf", "a", format!("a{i}"))))
            .collect();
        for r in table.batch(&actions).await {
            assert_eq!(r.unwrap(), ActionResult::Done);
        }
        ctl.record(|r| r.method == "Scan");
        // The open's answer: ten rows, the scanner left open for the rest.
        ctl.corrupt_next(1, hbase_it::proxy::Corruption::CellBlock);
        let got = rows(&table, Scan::new().caching(10)).await;
        assert_eq!(ctl.damaged(), 1, "the answer was damaged");
        let mut expected: Vec<Bytes> = (0..50).map(key).collect();
        expected.push(Bytes::from_static(b"warm"));
        assert_eq!(got, expected, "every row once");
        let recorded = ctl.recorded();
        let varint = |r: &hbase_it::proxy::RequestInfo, n: u32| {
            hbase_it::proxy::proto_fields(&r.param)
                .unwrap_or_default()
                .into_iter()
                .find_map(|(f, v)| match (f, v) {
                    (f, hbase_it::proxy::Field::Varint(v)) if f == n => Some(v),
                    _ => None,
                })
        };
        // ScanRequest: region = 1 (an open), close_scanner = 5.
        let opens = recorded.iter().filter(|r| proto_fields_of(r).contains(&1));
        let closes = recorded.iter().filter(|r| varint(r, 5) == Some(1));
        assert_eq!(
            (opens.count(), closes.count()),
            (2, 1),
            "two opens (the damaged one and the retry), one close (the damaged one's): {:?}",
            recorded.iter().map(proto_fields_of).collect::<Vec<_>>()
        );
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A request's top-level field numbers.
fn proto_fields_of(r: &hbase_it::proxy::RequestInfo) -> Vec<u32> {
    hbase_it::proxy::proto_fields(&r.param)
        .unwrap_or_default()
        .iter()
        .map(|(f, _)| *f)
        .collect()
}
