//! The options of Java's `Scan` and `Get` against a real HBase: batch, partial results of a
//! 100 MB row, raw scans, read type and consistency on the wire, scan metrics; and a batch of
//! gets whose results exceed what a server returns in one response. Every scan whose results
//! are compared is also run through `Table::scan_raw`, whose rows (their cells left in the
//! block) must be the same results; the reopens mid-row run through both streams.

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{
    Action, ActionResult, CellType, ColumnFamily, Comparator, CompareOp, Consistency, Delete,
    Filter, Get, Put, RawScanStream, ReadType, RowResult, Scan, ScanMetrics, ScanStream,
    TableDescriptor,
};
use hbase_it::proxy::{proto_fields, Field};

const MIB: usize = 1024 * 1024;

/// Every result of `scan`, pieces and all; `scan_raw` must return the same.
async fn results(table: &hbase_client::Table, scan: Scan) -> Vec<RowResult> {
    let rows = table.scan(scan.clone()).collect_all().await.expect("scan");
    let raw = table.scan_raw(scan).collect_all().await.expect("scan_raw");
    let raw: Vec<RowResult> = raw.into_iter().map(RowResult::from).collect();
    assert_eq!(raw, rows, "scan_raw returned other results than scan");
    rows
}

/// A scan through `Table::scan`, or through `Table::scan_raw` with each row made a
/// `RowResult` as it arrives.
enum Rows {
    Decoded(ScanStream),
    Raw(RawScanStream),
}

impl Rows {
    fn open(table: &hbase_client::Table, scan: Scan, raw: bool) -> Rows {
        if raw {
            Rows::Raw(table.scan_raw(scan))
        } else {
            Rows::Decoded(table.scan(scan))
        }
    }

    async fn next(&mut self) -> Option<hbase_client::Result<RowResult>> {
        match self {
            Rows::Decoded(s) => s.next().await,
            Rows::Raw(s) => s.next().await.map(|r| r.map(RowResult::from)),
        }
    }

    fn metrics(&self) -> Option<ScanMetrics> {
        match self {
            Rows::Decoded(s) => s.metrics(),
            Rows::Raw(s) => s.metrics(),
        }
    }
}

fn qualifiers(r: &RowResult) -> Vec<String> {
    r.cells
        .iter()
        .map(|c| String::from_utf8_lossy(c.qualifier()).into_owned())
        .collect()
}

/// `batch(10)` cuts a row of 25 cells into results of 10, 10 and 5 cells, in column order,
/// also when the server cuts the row at a small result size first; a limit counts rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_splits_a_wide_row_into_results_of_at_most_ten_cells() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_batch");
    hbase_it::create_table(&client, &name, &[]).await;
    let table = client.table(&name.to_string()).unwrap();
    let mut wide = Put::new("r2");
    for q in 0..25 {
        wide = wide.add("cf", format!("q{q:02}"), vec![b'v'; 100]);
    }
    let actions = vec![
        Action::Put(Put::new("r1").add("cf", "a", "1")),
        Action::Put(wide),
        Action::Put(Put::new("r3").add("cf", "a", "3").add("cf", "b", "3")),
    ];
    for r in table.batch(&actions).await {
        assert_eq!(r.unwrap(), ActionResult::Done);
    }
    let all_q: Vec<String> = (0..25).map(|q| format!("q{q:02}")).collect();

    for scan in [
        Scan::new().batch(10),
        // 100-byte values, 250-byte responses: the server sends pieces of 2-3 cells, which
        // the client regroups into batches.
        Scan::new().batch(10).max_result_size(250),
        Scan::new().batch(10).caching(1),
    ] {
        let got = results(&table, scan.clone()).await;
        let shape: Vec<(String, usize, bool)> = got
            .iter()
            .map(|r| {
                (
                    String::from_utf8_lossy(&r.row).into_owned(),
                    r.cells.len(),
                    r.may_have_more_cells(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                ("r1".into(), 1, false),
                ("r2".into(), 10, true),
                ("r2".into(), 10, true),
                ("r2".into(), 5, false),
                ("r3".into(), 2, false),
            ],
            "{scan:?}"
        );
        let wide_q: Vec<String> = got[1..4].iter().flat_map(qualifiers).collect();
        assert_eq!(wide_q, all_q);
    }
    // A limit counts rows, not results.
    let limited = results(&table, Scan::new().batch(10).limit(2)).await;
    assert_eq!(limited.len(), 4);
    assert_eq!(&limited[3].row[..], b"r2");
    // Without batch, the row is whole.
    let whole = results(&table, Scan::new().max_result_size(250)).await;
    assert_eq!(
        whole.iter().map(|r| r.cells.len()).collect::<Vec<_>>(),
        [1, 25, 2]
    );
    assert!(whole.iter().all(|r| !r.may_have_more_cells()));
    hbase_it::drop_table(&client, &name).await;
}

/// The value of cell `i` of the huge row: 1 MiB of one byte, different per cell.
fn huge_value(i: usize) -> Bytes {
    Bytes::from(vec![b'a' + (i % 26) as u8; MIB])
}

/// A row of 100 MB (100 cells of 1 MiB, written by 100 puts). With `allow_partial_results`
/// and a 1 MiB result size it comes in pieces of at most 2 cells, so no result (and no RPC
/// response) holds more than about 2 MiB; the pieces join to the row that a scan without the
/// option returns whole. Through `scan` and through `scan_raw`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_row_comes_in_pieces_with_allow_partial_results() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_huge");
    hbase_it::create_table(&client, &name, &[]).await;
    let table = client.table(&name.to_string()).unwrap();
    const CELLS: usize = 100;
    for i in 0..CELLS {
        table
            .put(Put::new("huge").add("cf", format!("c{i:03}"), huge_value(i)))
            .await
            .unwrap();
    }
    table
        .put(Put::new("next").add("cf", "a", "1"))
        .await
        .unwrap();

    let scan = Scan::new()
        .allow_partial_results(true)
        .max_result_size(MIB as u64)
        .scan_metrics(true);
    // Through `scan`, then `scan_raw`: the same pieces, joining to the same cells.
    let mut joined = None;
    for raw in [false, true] {
        let mut stream = Rows::open(&table, scan.clone(), raw);
        let (mut pieces, mut largest, mut cells) = (0usize, 0usize, Vec::new());
        let mut rows = Vec::new();
        while let Some(r) = stream.next().await {
            let r = r.unwrap();
            let bytes: usize = r.cells.iter().map(|c| c.value().len()).sum();
            largest = largest.max(bytes);
            if &r.row[..] == b"huge" {
                pieces += 1;
                let last = !r.may_have_more_cells();
                cells.extend(r.cells);
                if last {
                    rows.push(r.row);
                }
            } else {
                assert!(!r.may_have_more_cells());
                rows.push(r.row);
            }
        }
        let m = stream.metrics().expect("metrics enabled");
        println!(
            "100 MB row (raw {raw}): {pieces} pieces, largest {largest} bytes, {} RPCs, {} bytes in results",
            m.rpc_calls, m.bytes_in_results
        );
        assert_eq!(rows, ["huge", "next"]);
        assert_eq!(cells.len(), CELLS);
        for (i, c) in cells.iter().enumerate() {
            assert_eq!(c.qualifier_bytes(), format!("c{i:03}"));
            assert_eq!(c.value_bytes(), huge_value(i), "cell {i}");
        }
        assert!(pieces >= CELLS / 2, "raw {raw}: {pieces} pieces");
        assert!(largest <= 2 * MIB, "largest result {largest} bytes");
        // Every piece came in its own response: the RPCs average at most 2 MiB of cells.
        assert!(m.rpc_calls as usize >= pieces, "{m:?}");
        assert!(m.bytes_in_results / m.rpc_calls <= 2 * MIB as u64, "{m:?}");
        assert!(m.bytes_in_results >= (CELLS * MIB) as u64, "{m:?}");
        if let Some(before) = &joined {
            assert_eq!(before, &cells, "scan_raw's pieces join to scan's");
        }
        joined = Some(cells);
    }
    let cells = joined.expect("scanned");

    // Without the option the row comes back whole, equal to the pieces joined.
    let whole = results(&table, Scan::new().max_result_size(MIB as u64)).await;
    assert_eq!(whole.len(), 2);
    assert!(!whole[0].may_have_more_cells());
    assert_eq!(whole[0].cells, cells);
    hbase_it::drop_table(&client, &name).await;
}

/// A raw scan sees the delete marker and the versions it deleted; a normal scan sees none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_scan_sees_delete_markers_and_deleted_versions() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_raw");
    let desc = TableDescriptor::new(name.clone()).family(ColumnFamily::new("cf").max_versions(5));
    client.admin().create_table(&desc, &[]).await.unwrap();
    let table = client.table(&name.to_string()).unwrap();
    table
        .put(
            Put::new("r")
                .add_at("cf", "q", 10, "v10")
                .add_at("cf", "q", 20, "v20"),
        )
        .await
        .unwrap();
    table
        .put(Put::new("r").add_at("cf", "keep", 5, "k"))
        .await
        .unwrap();
    table
        .delete(Delete::new("r").column("cf", "q").timestamp(30))
        .await
        .unwrap();

    let plain = results(&table, Scan::new().max_versions(5)).await;
    assert_eq!(plain.len(), 1);
    assert_eq!(qualifiers(&plain[0]), ["keep"]);

    let raw = results(&table, Scan::new().raw(true).max_versions(5)).await;
    assert_eq!(raw.len(), 1);
    let cells: Vec<(String, u64, CellType, String)> = raw[0]
        .cells
        .iter()
        .map(|c| {
            (
                String::from_utf8_lossy(c.qualifier()).into_owned(),
                c.timestamp(),
                c.cell_type(),
                String::from_utf8_lossy(c.value()).into_owned(),
            )
        })
        .collect();
    assert_eq!(
        cells,
        vec![
            ("keep".into(), 5, CellType::Put, "k".into()),
            ("q".into(), 30, CellType::DeleteColumn, "".into()),
            ("q".into(), 20, CellType::Put, "v20".into()),
            ("q".into(), 10, CellType::Put, "v10".into()),
        ]
    );
    hbase_it::drop_table(&client, &name).await;
}

/// The server's and the client's counts of a scan over a table of 4 regions: rows scanned
/// and filtered, regions, RPCs, bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_metrics_count_rows_regions_and_bytes() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_metrics");
    hbase_it::create_table(&client, &name, &["r10", "r20", "r30"]).await;
    let table = client.table(&name.to_string()).unwrap();
    let actions: Vec<Action> = (0..40)
        .map(|i| Action::Put(Put::new(format!("r{i:02}")).add("cf", "q", format!("v{i}"))))
        .collect();
    for r in table.batch(&actions).await {
        r.unwrap();
    }
    // Each cell: 12 bytes of lengths, key (2 + 3 row + 1 + 2 family + 1 qualifier + 8 + 1),
    // the value.
    let cell_bytes = |i: u32| 12 + 18 + format!("v{i}").len() as u64;

    let mut stream = table.scan(Scan::new().scan_metrics(true).caching(7));
    let mut rows = 0;
    while let Some(r) = stream.next().await {
        r.unwrap();
        rows += 1;
    }
    let m = stream.metrics().unwrap();
    assert_eq!(rows, 40);
    assert_eq!(m.rows_scanned, 40, "{m:?}");
    assert_eq!(m.rows_filtered, 0);
    assert_eq!(m.regions_scanned, 4);
    assert_eq!(m.bytes_in_results, (0..40).map(cell_bytes).sum::<u64>());
    // 10 rows a region at 7 per call: an open and a next each, at least.
    assert!(m.rpc_calls >= 8, "{m:?}");
    assert_eq!(m.rpc_retries, 0);
    assert_eq!(m.to_map()["ROWS_SCANNED"], 40);
    assert_eq!(m.to_map()["REGIONS_SCANNED"], 4);

    // A value filter (no seek hints): the server reads every row of the range and filters
    // out all but r10..r19.
    let mut stream = table.scan(
        Scan::new()
            .start_row("r05")
            .stop_row("r25")
            .scan_metrics(true)
            .filter(Filter::Value(
                CompareOp::Equal,
                Comparator::Regex("^v1[0-9]$".into()),
            )),
    );
    let mut kept = 0;
    while let Some(r) = stream.next().await {
        r.unwrap();
        kept += 1;
    }
    let m = stream.metrics().unwrap();
    assert_eq!(kept, 10);
    assert_eq!(m.rows_scanned, 20, "{m:?}");
    assert_eq!(m.rows_filtered, 10, "{m:?}");
    assert_eq!(m.regions_scanned, 3);
    assert_eq!(m.bytes_in_results, (10..20).map(cell_bytes).sum::<u64>());

    // Off by default.
    assert!(table.scan(Scan::new()).metrics().is_none());
    hbase_it::drop_table(&client, &name).await;
}

/// The `Get` (field 2 of GetRequest) or `Scan` (field 2 of ScanRequest) inside a recorded
/// request, as its fields.
fn inner(param: &[u8]) -> Vec<(u32, u64)> {
    let Some(fields) = proto_fields(param) else {
        return Vec::new();
    };
    fields
        .iter()
        .filter_map(|(f, v)| match (f, v) {
            (2, Field::Bytes(m)) => proto_fields(m),
            _ => None,
        })
        .flatten()
        .filter_map(|(f, v)| match v {
            Field::Varint(x) => Some((f, x)),
            _ => None,
        })
        .collect()
}

/// TIMELINE reads on a table without replicas return the row, not stale; the consistency
/// and read type reach the server as the Java client sends them (the same fields as Java's
/// `ProtobufUtil` writes: `scan_and_get_options_go_on_the_wire_as_javas` in tests/interop.rs
/// runs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeline_reads_and_read_types_reach_the_server() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_timeline");
    hbase_it::create_table(&client, &name, &[]).await;
    let plain = client.table(&name.to_string()).unwrap();
    for i in 0..3 {
        plain
            .put(Put::new(format!("r{i}")).add("cf", "q", format!("v{i}")))
            .await
            .unwrap();
    }
    let proxy = hbase_it::proxy::FaultProxy::new();
    let proxied = hbase_it::proxied_client(&proxy, |b| b).await;
    let table = proxied.table(&name.to_string()).unwrap();
    // Warm the location cache, so the recorded scans are the table's.
    assert!(table.get(Get::new("r0")).await.unwrap().is_some());
    proxy.each(|c| c.record(|r| r.method == "Get" || r.method == "Scan"));

    let row = table
        .get(Get::new("r1").consistency(Consistency::Timeline))
        .await
        .unwrap()
        .expect("the row");
    assert_eq!(row.value(b"cf", b"q").unwrap(), b"v1");
    assert!(!row.is_stale());

    for (read_type, code) in [(ReadType::Pread, 2), (ReadType::Stream, 1)] {
        let rows = results(
            &table,
            Scan::new()
                .consistency(Consistency::Timeline)
                .read_type(read_type),
        )
        .await;
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| !r.is_stale()));
        let recorded: Vec<_> = proxy.controls().iter().flat_map(|c| c.recorded()).collect();
        assert!(
            recorded.iter().filter(|r| r.method == "Scan").any(|r| {
                let f = inner(&r.param);
                f.contains(&(16, 1)) && f.contains(&(23, code))
            }),
            "a scan with TIMELINE (16) and read type {code} (23)"
        );
    }
    let recorded: Vec<_> = proxy.controls().iter().flat_map(|c| c.recorded()).collect();
    assert!(
        recorded
            .iter()
            .filter(|r| r.method == "Get")
            .any(|r| inner(&r.param).contains(&(12, 1))),
        "a get with TIMELINE (12)"
    );
    hbase_it::drop_table(&client, &name).await;
}

/// A scan with partial results whose connection is reset in the middle of a row reopens at
/// that row and skips the cells it already returned: every cell once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_scan_reopened_mid_row_returns_each_cell_once() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_reopen_row");
    hbase_it::create_table(&client, &name, &[]).await;
    let plain = client.table(&name.to_string()).unwrap();
    let mut put = Put::new("row");
    for i in 0..40 {
        put = put.add(
            "cf",
            format!("c{i:02}"),
            vec![b'a' + (i % 26) as u8; 10_000],
        );
    }
    plain.put(put).await.unwrap();
    plain
        .put(Put::new("tail").add("cf", "a", "1"))
        .await
        .unwrap();

    let proxy = hbase_it::proxy::FaultProxy::new();
    let proxied = hbase_it::proxied_client(&proxy, |b| b).await;
    let table = proxied.table(&name.to_string()).unwrap();
    for (scan, raw) in [
        (Scan::new().allow_partial_results(true), false),
        (Scan::new().batch(3), false),
        (Scan::new().allow_partial_results(true), true),
        (Scan::new().batch(3), true),
    ] {
        let scan = scan.max_result_size(10_000).scan_metrics(true);
        let mut stream = Rows::open(&table, scan, raw);
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(stream.next().await.unwrap().unwrap());
        }
        proxy.each(|c| c.reset_existing());
        while let Some(r) = stream.next().await {
            got.push(r.unwrap());
        }
        let m = stream.metrics().unwrap();
        assert!(
            m.rpc_retries >= 1,
            "the scan was reopened (raw {raw}): {m:?}"
        );
        let cells: Vec<String> = got
            .iter()
            .filter(|r| &r.row[..] == b"row")
            .flat_map(qualifiers)
            .collect();
        assert_eq!(
            cells,
            (0..40).map(|i| format!("c{i:02}")).collect::<Vec<_>>(),
            "raw {raw}"
        );
        assert_eq!(&got.last().unwrap().row[..], b"tail");
    }
    hbase_it::drop_table(&client, &name).await;
}

/// A row whose last piece said "more" (a column filter makes HBase 2.6 do that) is
/// completed by its region's end. When the call that would have said so fails, the reopen
/// sends the row's pieces again, all of them delivered before, and the region's end completes
/// it: counted once against the limit. A second failure, at the next region's open, used to
/// send the scan back to that row (its skip record outlived the row): the row counted twice,
/// and the limit's last row was never read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_completed_by_its_regions_end_counts_once_after_two_failures() {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    use std::sync::Arc;
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_skip_twice");
    hbase_it::create_table(&client, &name, &["s"]).await;
    let plain = client.table(&name.to_string()).unwrap();
    let mut put = Put::new("r");
    for i in 0..10 {
        put = put.add("cf", format!("a{i}"), vec![b'a'; 10_000]);
    }
    plain
        .put(put.add("cf", "b0", vec![b'b'; 10_000]))
        .await
        .unwrap();
    for row in ["s0", "s1"] {
        plain.put(Put::new(row).add("cf", "a", row)).await.unwrap();
    }
    let proxy = hbase_it::proxy::FaultProxy::new();
    let proxied = hbase_it::proxied_client(&proxy, |b| b).await;
    let table = proxied.table(&name.to_string()).unwrap();
    assert_eq!(
        results(&table, Scan::new()).await.len(),
        3,
        "both regions located"
    );
    for raw in [false, true] {
        // One cell a call: the first call's answer is a0, the tenth's a9 (said "more"), and
        // the eleventh call is the one that would say the region ended. It fails, and so does
        // the third open (the first region's, its reopen, then the second region's).
        let (scans, opens) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        proxy.each(|c| {
            let (scans, opens) = (scans.clone(), opens.clone());
            c.inject_exception_where(
                2,
                move |r| {
                    if r.method != "Scan" {
                        return false;
                    }
                    let n = scans.fetch_add(1, SeqCst) + 1;
                    let open = proto_fields(&r.param)
                        .unwrap_or_default()
                        .iter()
                        .any(|(f, _)| *f == 1);
                    let o = if open {
                        opens.fetch_add(1, SeqCst) + 1
                    } else {
                        0
                    };
                    n == 11 || o == 3
                },
                "org.apache.hadoop.hbase.exceptions.ScannerResetException",
                false,
            )
        });
        let scan = Scan::new()
            .filter(Filter::ColumnPrefix("a".into()))
            .allow_partial_results(true)
            .max_result_size(10_000)
            .limit(2);
        let mut stream = Rows::open(&table, scan, raw);
        let mut got = Vec::new();
        while let Some(r) = stream.next().await {
            got.push(r.unwrap());
        }
        let injected: u64 = proxy.controls().iter().map(|c| c.injected()).sum();
        let pieces: Vec<String> = got
            .iter()
            .map(|r| {
                format!(
                    "{}:{}",
                    String::from_utf8_lossy(&r.row),
                    qualifiers(r).join(",")
                )
            })
            .collect();
        eprintln!("raw {raw}: {injected} failures injected, results {pieces:?}");
        let mut expected: Vec<String> = (0..10).map(|i| format!("r:a{i}")).collect();
        expected.push("s0:a".into());
        assert_eq!(pieces, expected, "raw {raw}");
        assert_eq!(
            injected,
            2 * (u64::from(raw) + 1),
            "both failures happened (raw {raw})"
        );
    }
    hbase_it::drop_table(&client, &name).await;
}

/// A scan of whole rows reopened while a row is in progress restarts after the last whole
/// row it returned, also when that row came in the same answer as the row's first piece: the
/// first answer holds rows a0-a4 and the first cell of row b (cut at `max_result_size`); the
/// next call is swallowed at the proxy and the connection reset; the scan goes on from b, and
/// every row comes once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_rows_reopened_mid_row_resume_after_the_last_row_of_the_answer() {
    hbase_it::bounded(240, async {
        let proxy = hbase_it::proxy::FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let (name, table, ctl) =
            hbase_it::one_region_table(&client, &proxy, "scan_reopen_whole").await;
        for i in 0..5 {
            table
                .put(Put::new(format!("a{i}")).add("cf", "q", "small"))
                .await
                .unwrap();
        }
        let mut wide = Put::new("b");
        for i in 0..5 {
            wide = wide.add("cf", format!("c{i}"), vec![b'v'; 10_000]);
        }
        table.put(wide).await.unwrap();
        table
            .put(Put::new("tail").add("cf", "q", "t"))
            .await
            .unwrap();
        // A call for more of an open scanner: its id, no scan, not a close or a renewal.
        let continues = |r: &hbase_it::proxy::RequestInfo| {
            r.method == "Scan"
                && proto_fields(&r.param).is_some_and(|f| {
                    let has = |n: u32| f.iter().any(|(field, _)| *field == n);
                    has(3) && !has(2) && !has(5) && !has(10)
                })
        };
        // Where each open of a scanner starts: the start row, and whether it is included.
        let opens = |ctl: &hbase_it::proxy::ProxyControl| -> Vec<(Vec<u8>, bool)> {
            fn field(msg: &[u8], n: u32) -> Option<Field<'_>> {
                proto_fields(msg)?
                    .into_iter()
                    .find_map(|(f, v)| (f == n).then_some(v))
            }
            // Opens in the table's region (not the lookups in hbase:meta after the reset).
            let of_meta = |param: &[u8]| match field(param, 1) {
                Some(Field::Bytes(region)) => matches!(
                    field(region, 2),
                    Some(Field::Bytes(name)) if name.starts_with(b"hbase:meta,")
                ),
                _ => false,
            };
            ctl.recorded()
                .iter()
                .filter(|r| !of_meta(&r.param))
                .filter_map(|r| match field(&r.param, 2)? {
                    Field::Bytes(scan) => Some(scan.to_vec()),
                    _ => None,
                })
                .map(|scan| {
                    let start = match field(&scan, 3) {
                        Some(Field::Bytes(row)) => row.to_vec(),
                        _ => Vec::new(),
                    };
                    let include = !matches!(field(&scan, 21), Some(Field::Varint(0)));
                    (start, include)
                })
                .collect()
        };
        for raw in [false, true] {
            let swallowed = ctl.swallowed();
            ctl.record(|r| r.method == "Scan");
            ctl.swallow_requests(1, continues);
            let scan = Scan::new().max_result_size(10_000).scan_metrics(true);
            let mut stream = Rows::open(&table, scan, raw);
            let reader = tokio::spawn(async move {
                let mut got = Vec::new();
                while let Some(r) = stream.next().await {
                    got.push(r.expect("scan"));
                }
                (got, stream.metrics().expect("metrics enabled"))
            });
            while ctl.swallowed() == swallowed {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            ctl.reset_existing();
            let (got, m) = reader.await.unwrap();
            assert!(
                m.rpc_retries >= 1,
                "the scan was reopened (raw {raw}): {m:?}"
            );
            // The reopen asks for the rows after a4: the first answer ended with b's first
            // piece after whole rows (else this test does not test what it says).
            assert_eq!(
                opens(&ctl),
                [(Vec::new(), true), (b"a4".to_vec(), false)],
                "where the scanner opened, then reopened (raw {raw})"
            );
            let rows: Vec<String> = got
                .iter()
                .map(|r| String::from_utf8_lossy(&r.row).into_owned())
                .collect();
            assert_eq!(
                rows,
                ["a0", "a1", "a2", "a3", "a4", "b", "tail", "warm"],
                "each row once (raw {raw})"
            );
            assert_eq!(
                qualifiers(&got[5]),
                ["c0", "c1", "c2", "c3", "c4"],
                "row b whole (raw {raw})"
            );
            assert!(got.iter().all(|r| !r.may_have_more_cells()));
        }
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A batch of 120 gets of 1 MiB rows from one server: its results exceed the server's
/// response limit (`hbase.server.scanner.max.result.size`, 100 MiB by default), so it answers
/// the rest with `MultiActionResultTooLarge`; only those are retried, and every result comes
/// back at its own position.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gets_past_the_response_limit_are_retried_in_order() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("multi_too_large");
    hbase_it::create_table(&client, &name, &[]).await;
    let table = client.table(&name.to_string()).unwrap();
    const ROWS: usize = 120;
    let value = |i: usize| Bytes::from(vec![b'a' + (i % 26) as u8; MIB]);
    let puts: Vec<Action> = (0..ROWS)
        .map(|i| Action::Put(Put::new(format!("g{i:03}")).add("cf", "q", value(i))))
        .collect();
    for r in table.batch(&puts).await {
        assert_eq!(r.unwrap(), ActionResult::Done);
    }
    // Reversed order: results must follow the caller's order, not the server's.
    let order: Vec<usize> = (0..ROWS).rev().collect();
    let gets: Vec<Action> = order
        .iter()
        .map(|i| Action::Get(Get::new(format!("g{i:03}"))))
        .collect();
    let too_large = |c: &hbase_client::Client| {
        c.stats()
            .retries_by_cause
            .get("MultiActionResultTooLarge")
            .copied()
            .unwrap_or(0)
    };
    let before = too_large(&client);
    let multi_before = client.stats().total(|s| s.multi_calls);
    let results = table.batch(&gets).await;
    assert_eq!(results.len(), ROWS);
    for (r, &i) in results.into_iter().zip(&order) {
        match r.unwrap_or_else(|e| panic!("get {i}: {e}")) {
            ActionResult::Row(Some(row)) => {
                assert_eq!(row.row, format!("g{i:03}"));
                assert_eq!(row.value(b"cf", b"q"), Some(&value(i)[..]), "row {i}");
            }
            other => panic!("get {i}: {other:?}"),
        }
    }
    let retried = too_large(&client) - before;
    let multis = client.stats().total(|s| s.multi_calls) - multi_before;
    println!(
        "{ROWS} gets of 1 MiB: {multis} Multi calls, {retried} MultiActionResultTooLarge rounds"
    );
    assert!(
        retried >= 1,
        "the server refused part of the batch as too large"
    );
    assert!(multis >= 2, "{multis} Multi calls");
    hbase_it::drop_table(&client, &name).await;
}

/// A reopen in the middle of a row, in a region without the scan's read point (a daughter
/// after a split), drops the cells already delivered by comparing cells, not by counting:
/// a cell written to the row after the first piece, whose qualifier sorts before the
/// delivered ones, must not shift what is dropped. Every original cell comes exactly once
/// (the new one, sorting before the last delivered cell, is dropped too, as Java drops it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_in_a_daughter_mid_row_delivers_each_cell_once() {
    hbase_it::bounded(300, async {
        let client = hbase_it::client().await;
        let admin = client.admin();
        const CELLS: usize = 200;
        let originals: Vec<String> = (0..CELLS).map(|q| format!("q{q:03}")).collect();
        let partial = Scan::new()
            .allow_partial_results(true)
            .max_result_size(250)
            .caching(1);
        for (what, scan, raw) in [
            ("batch(10)", Scan::new().batch(10).caching(1), false),
            ("allow_partial_results", partial.clone(), false),
            (
                "scan_raw, batch(10)",
                Scan::new().batch(10).caching(1),
                true,
            ),
            ("scan_raw, allow_partial_results", partial, true),
        ] {
            let name = hbase_it::unique_table("scan_reopen_split");
            hbase_it::create_table(&client, &name, &[]).await;
            let table = client.table(&name.to_string()).unwrap();
            let mut wide = Put::new("r");
            for q in &originals {
                wide = wide.add("cf", q.clone(), vec![b'v'; 100]);
            }
            table.put(wide).await.unwrap();
            table.put(Put::new("z").add("cf", "q", "z")).await.unwrap();

            let mut stream = Rows::open(&table, scan.clone().scan_metrics(true), raw);
            let first = stream.next().await.expect("a first piece").expect("scan");
            assert_eq!(&first.row[..], b"r");
            assert!(
                first.may_have_more_cells(),
                "{what}: the row comes in pieces"
            );
            // Written after the scan opened, sorting before every delivered cell.
            table
                .put(Put::new("r").add("cf", "a-new", "new"))
                .await
                .unwrap();
            // The region closes under the open scanner; the scan goes on in a daughter.
            admin.split_table_at(&name, b"s").await.expect("split at s");
            let mut got = qualifiers(&first);
            let mut rows = vec![first.row.clone()];
            while let Some(r) = stream.next().await {
                let r = r.expect("scan across the split");
                if r.row == b"r"[..] {
                    got.extend(qualifiers(&r));
                }
                rows.push(r.row.clone());
            }
            let m = stream.metrics().expect("metrics enabled");
            eprintln!(
                "{what}: {} cells of row r, {} regions scanned, {} retries, {} NotServingRegion",
                got.len(),
                m.regions_scanned,
                m.rpc_retries,
                m.not_serving_region_exceptions
            );
            assert!(
                m.rpc_retries >= 1,
                "{what}: the scanner was reopened mid-row"
            );
            let mut seen = std::collections::BTreeMap::<&str, usize>::new();
            for q in &got {
                *seen.entry(q.as_str()).or_default() += 1;
            }
            let twice: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).collect();
            let missing: Vec<_> = originals
                .iter()
                .filter(|q| !seen.contains_key(q.as_str()))
                .collect();
            assert!(twice.is_empty(), "{what}: delivered twice: {twice:?}");
            assert!(missing.is_empty(), "{what}: skipped: {missing:?}");
            assert_eq!(got, originals, "{what}: each original cell once, in order");
            assert_eq!(rows.last().map(|r| &r[..]), Some(&b"z"[..]));
            hbase_it::drop_table(&client, &name).await;
        }
    })
    .await;
}
