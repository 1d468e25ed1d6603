//! What a scan of a 100 MB row holds in memory, measured: this test binary counts the bytes
//! its heap holds (a counting global allocator), so the peak during a scan is a number, not an
//! argument from the code. With `allow_partial_results` the client never holds more than a few
//! MB (the piece being read, the responses in flight); without it the whole row is held, which
//! shows the count sees what the client keeps.
//!
//! The only test in its binary, so no other test's allocations mix into the count (the
//! allocator: tests/support/live_heap.rs).

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{Put, Scan};
use hbase_it::live_heap;

#[global_allocator]
static HEAP: live_heap::LiveBytes = live_heap::LiveBytes;

const MIB: usize = 1024 * 1024;
const CELLS: usize = 100;

/// The byte every value byte of cell `i` holds.
fn fill(i: usize) -> u8 {
    b'a' + (i % 26) as u8
}

/// Scans the table, checking every cell of the huge row as it comes and dropping it; returns
/// the heap's peak above what it held when the scan began, and the cells seen.
async fn scan_peak(table: &hbase_client::Table, scan: Scan) -> (usize, usize) {
    let base = live_heap::start();
    let mut stream = table.scan(scan);
    let mut seen = 0usize;
    while let Some(r) = stream.next().await {
        let r = r.expect("scan");
        assert_eq!(&r.row[..], b"huge");
        for c in &r.cells {
            assert_eq!(c.qualifier_bytes(), format!("c{seen:03}"));
            assert_eq!(c.value().len(), MIB, "cell {seen}");
            assert!(c.value().iter().all(|&b| b == fill(seen)), "cell {seen}");
            seen += 1;
        }
    }
    drop(stream);
    (live_heap::peak_above(base), seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_scan_of_a_100_mb_row_holds_a_few_mb() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("scan_memory");
    hbase_it::create_table(&client, &name, &[]).await;
    let table = client.table(&name.to_string()).unwrap();
    for i in 0..CELLS {
        let value = Bytes::from(vec![fill(i); MIB]);
        table
            .put(Put::new("huge").add("cf", format!("c{i:03}"), value))
            .await
            .unwrap();
    }

    let partial = Scan::new()
        .allow_partial_results(true)
        .max_result_size(MIB as u64);
    let (peak, seen) = scan_peak(&table, partial).await;
    println!(
        "100 MB row, allow_partial_results: heap peak {:.1} MiB above the start",
        peak as f64 / MIB as f64
    );
    assert_eq!(seen, CELLS);
    // The structure's bound, whatever the timing: two responses queued for the stream, one
    // being decoded, one being read, and the piece in the caller's hands, each of at most
    // about 2 MiB (a piece stops at the first cell past the 1 MiB result size).
    assert!(
        peak <= 12 * MIB,
        "a partial scan held {peak} bytes at its peak (more than 12 MiB)"
    );

    // The same scan without the option holds the whole row before it can deliver it: the
    // count sees that, so the bound above is not an artefact of counting.
    let whole = Scan::new().max_result_size(MIB as u64);
    let (peak_whole, seen) = scan_peak(&table, whole).await;
    println!(
        "100 MB row, whole: heap peak {:.1} MiB above the start",
        peak_whole as f64 / MIB as f64
    );
    assert_eq!(seen, CELLS);
    assert!(
        peak_whole >= CELLS * MIB,
        "a whole-row scan held only {peak_whole} bytes at its peak"
    );
    hbase_it::drop_table(&client, &name).await;
}
