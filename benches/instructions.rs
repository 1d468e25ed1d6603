//! Instructions per operation, for `benches/instructions/run` (which runs this under
//! `valgrind --tool=callgrind`): a steady-state get, a buffered put (its share of the flush
//! included) and a 100-row scan, against the real local HBase; and the get and the scan
//! through `Table::get_raw` and `Table::scan_raw`.
//!
//! Each measured phase is one `#[inline(never)]` function that drives a single-threaded tokio
//! runtime through all its operations; the connection's reader and writer tasks run inside
//! that call, so callgrind, told to count only inside it (`--toggle-collect`), counts the
//! client's whole user-space work for those operations and nothing of start-up or set-up.
//! Kernel time (the socket system calls) is not in the figure; `strace -c` counts those.
//!
//! `INSTR_PHASE=get|get_raw|put|scan|scan_raw` picks the phase, `INSTR_OPS` the number of
//! operations (default 2,000). Without valgrind it simply runs, which checks that it works.
//!
//! A counting global allocator reports the heap allocations the measured phase made
//! (`allocs=` in the output line), so an allocation added on a hot path shows as a number too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{Client, Get, MutatorConfig, Put, Scan, Table};
use tokio::runtime::Runtime;

/// The system allocator, counting allocations (and reallocations, which may move).
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const FIELDS: usize = 10;
const VALUE_LEN: usize = 100;
const ROWS: u64 = 1_000;

fn key(i: u64) -> String {
    format!(
        "user{:019}",
        i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_000
    )
}

/// The qualifiers, made once as an application (or `ycsb`) makes its column names once: the
/// figure is the client's cost, not that of formatting ten names per row.
const QUALIFIERS: [&str; FIELDS] = [
    "field0", "field1", "field2", "field3", "field4", "field5", "field6", "field7", "field8",
    "field9",
];

fn row_put(key: Bytes, value: &Bytes) -> Put {
    let mut put = Put::with_capacity(key, FIELDS);
    for q in QUALIFIERS {
        put = put.add("cf", q, value);
    }
    put
}

/// The row keys, formatted before the measurement (formatting a key costs about 1,700
/// instructions, which are the application's, not the client's).
fn keys_of(range: std::ops::Range<u64>) -> Vec<Bytes> {
    range.map(|i| Bytes::from(key(i))).collect()
}

/// `ops` gets of the loaded rows in turn, each through `get` (inlined into the measured
/// function that names the phase).
#[inline(always)]
fn gets<F, R>(rt: &Runtime, keys: &[Bytes], ops: u64, get: impl Fn(Get) -> F)
where
    F: std::future::Future<Output = hbase_client::Result<R>>,
{
    rt.block_on(async {
        for i in 0..ops {
            let row = get(Get::new(keys[(i % ROWS) as usize].clone()))
                .await
                .unwrap();
            std::hint::black_box(row);
        }
    })
}

#[inline(never)]
fn measure_get(rt: &Runtime, table: &Table, keys: &[Bytes], ops: u64) {
    gets(rt, keys, ops, |g| table.get(g))
}

/// The same gets through `Table::get_raw` (the row's cells left in their block).
#[inline(never)]
fn measure_get_raw(rt: &Runtime, table: &Table, keys: &[Bytes], ops: u64) {
    gets(rt, keys, ops, |g| table.get_raw(g))
}

#[inline(never)]
fn measure_put(rt: &Runtime, client: &Client, table: &str, keys: &[Bytes], value: &Bytes) {
    rt.block_on(async {
        let mutator = client
            .buffered_mutator(table, MutatorConfig::default().write_buffer_size(12 << 20))
            .unwrap();
        for key in keys {
            mutator.mutate(row_put(key.clone(), value)).await.unwrap();
        }
        mutator.close().await.unwrap();
    })
}

/// `ops` scans of 100 rows from the loaded rows in turn, each through `scan` (inlined into
/// the measured function that names the phase).
#[inline(always)]
fn scans<S, R>(rt: &Runtime, keys: &[Bytes], ops: u64, scan: impl Fn(Scan) -> S)
where
    S: futures_util::Stream<Item = hbase_client::Result<R>> + Unpin,
{
    rt.block_on(async {
        for i in 0..ops {
            let start = keys[(i % ROWS) as usize].clone();
            let mut stream = scan(Scan::new().start_row(start).limit(100).caching(100));
            let mut n = 0;
            while let Some(r) = stream.next().await {
                std::hint::black_box(r.unwrap());
                n += 1;
            }
            std::hint::black_box(n);
        }
    })
}

#[inline(never)]
fn measure_scan(rt: &Runtime, table: &Table, keys: &[Bytes], ops: u64) {
    scans(rt, keys, ops, |s| table.scan(s))
}

/// The same scans through `Table::scan_raw` (each row's cells left in their block).
#[inline(never)]
fn measure_scan_raw(rt: &Runtime, table: &Table, keys: &[Bytes], ops: u64) {
    scans(rt, keys, ops, |s| table.scan_raw(s))
}

fn main() {
    let phase = std::env::var("INSTR_PHASE").unwrap_or_else(|_| "get".into());
    let ops: u64 = std::env::var("INSTR_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    if std::env::args().any(|a| a == "--bench" || a == "--list")
        && std::env::var("INSTR_PHASE").is_err()
    {
        // `cargo bench` runs every bench target; this one is meant for benches/instructions/run.
        println!("instructions: run benches/instructions/run (under valgrind) for figures");
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let value = Bytes::from(vec![b'v'; VALUE_LEN]);
    let (client, name) = rt.block_on(async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("bench_instr");
        hbase_it::create_table(&client, &name, &[&key(ROWS / 3), &key(2 * ROWS / 3)]).await;
        (client, name)
    });
    let table = client.table(&name.to_string()).unwrap();
    // Load the rows and warm every connection and cache up, outside the measurement.
    rt.block_on(async {
        for i in 0..ROWS {
            table
                .put(row_put(Bytes::from(key(i)), &value))
                .await
                .unwrap();
        }
        for i in 0..200 {
            table.get(Get::new(key(i % ROWS))).await.unwrap();
        }
    });
    let keys = keys_of(0..ROWS);
    // The put phase writes new rows; their keys too are made before the measurement.
    let put_keys = if phase == "put" {
        keys_of(ROWS..ROWS + ops)
    } else {
        Vec::new()
    };
    let started = Instant::now();
    let allocs_before = ALLOCS.load(Ordering::Relaxed);
    match phase.as_str() {
        "get" => measure_get(&rt, &table, &keys, ops),
        "get_raw" => measure_get_raw(&rt, &table, &keys, ops),
        "put" => measure_put(&rt, &client, &name.to_string(), &put_keys, &value),
        "scan" => measure_scan(&rt, &table, &keys, ops),
        "scan_raw" => measure_scan_raw(&rt, &table, &keys, ops),
        other => panic!("INSTR_PHASE={other}: use get, get_raw, put, scan or scan_raw"),
    }
    let allocs = ALLOCS.load(Ordering::Relaxed) - allocs_before;
    println!(
        "phase={phase} ops={ops} allocs={allocs} elapsed_ms={}",
        started.elapsed().as_millis()
    );
    rt.block_on(hbase_it::drop_table(&client, &name));
}
