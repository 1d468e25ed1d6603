//! What the buffered write path holds in memory, measured: this test binary counts the bytes
//! its heap holds (the counting allocator of tests/support/live_heap.rs), so the cost of a
//! buffered mutation and of an idle mutator are numbers, not arguments.
//!
//! - A mutator writing YCSB-shaped puts (a 23-byte row, one 100-byte value) as fast as it can
//!   under the client's write budget: the heap's peak above the start stays within a small
//!   multiple of the budget (the mutations, their encoded requests in flight, the maps).
//! - A buffered put costs about what [`BufferedMutator::budgeted_size`] says (the budget counts
//!   that).
//! - An idle mutator (one write, flushed) costs under 1 KiB, so 10,000 per-thread mutators
//!   cost under 10 MB.
//!
//! The tests of this binary run one at a time (a lock), so no other test's allocations mix
//! into a count.

use bytes::Bytes;
use hbase_client::{
    BufferedMutator, Client, ClientConfig, Mutation, MutatorConfig, Put, TableName,
};
use hbase_it::live_heap;

#[global_allocator]
static HEAP: live_heap::LiveBytes = live_heap::LiveBytes;

/// One test at a time: the counts are of the whole process.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MIB: usize = 1024 * 1024;

/// The client's write budget in the first test: YCSB's default `writebufferlimit`.
const BUDGET: usize = 8 * MIB;

/// A put shaped as YCSB's workload A update: row `user` + 19 digits, one 100-byte value in
/// `family:field0` (all copied into the put's one buffer, the row into its cell too).
fn ycsb_put(i: u64, family: &Bytes, qualifier: &Bytes) -> Put {
    let row = Bytes::copy_from_slice(
        format!(
            "user{:019}",
            i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 10_000_000_000_000_000_000
        )
        .as_bytes(),
    );
    let mut value = vec![0u8; 100];
    let mut x = i | 1;
    for b in value.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = b' ' + (x % 94) as u8;
    }
    Put::with_capacity(row, 1).add(family.clone(), qualifier.clone(), value)
}

async fn connect(limit: usize) -> Client {
    let config = ClientConfig::builder(hbase_it::zk())
        .write_buffer_limit(limit)
        .build()
        .unwrap();
    Client::connect(config).await.unwrap()
}

async fn create(client: &Client, prefix: &str) -> TableName {
    let name = hbase_it::unique_table(prefix);
    let desc = hbase_client::TableDescriptor::new(name.clone())
        .family(hbase_client::ColumnFamily::new("family"));
    // Split like YCSB's usertable (rows user0..user9), over every server.
    let splits: Vec<Bytes> = (1..10).map(|d| Bytes::from(format!("user{d}"))).collect();
    client.admin().create_table(&desc, &splits).await.unwrap();
    name
}

/// Rows the warm-up writes (outside every count).
const WARM_UP_ROWS: usize = 100;

/// Writes [`WARM_UP_ROWS`] rows through a mutator closed at once, so that the connections and
/// the region cache exist before a count starts.
async fn warm_up(client: &Client, name: &TableName) {
    let (family, qualifier) = (Bytes::from_static(b"family"), Bytes::from_static(b"field0"));
    let warm: BufferedMutator = client
        .buffered_mutator(&name.to_string(), MutatorConfig::default())
        .unwrap();
    for i in 0..WARM_UP_ROWS as u64 {
        warm.mutate(ycsb_put(1_000_000 + i, &family, &qualifier))
            .await
            .unwrap();
    }
    warm.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutator_at_its_budget_holds_a_small_multiple_of_it() {
    let _one = SERIAL.lock().await;
    let client = connect(BUDGET).await;
    let name = create(&client, "mutator_memory").await;
    let (family, qualifier) = (Bytes::from_static(b"family"), Bytes::from_static(b"field0"));
    warm_up(&client, &name).await;

    // YCSB's per-thread buffer (12 MiB) is larger than the budget, as in its default run.
    let mutator = client
        .buffered_mutator(
            &name.to_string(),
            MutatorConfig::default().write_buffer_size(12 * MIB),
        )
        .unwrap();
    let base = live_heap::start();

    // Buffered only: the budget is not reached, nothing is sent.
    let (mut counted, mut written) = (0usize, 0u64);
    while counted < BUDGET * 3 / 4 {
        let put: Mutation = ycsb_put(written, &family, &qualifier).into();
        counted += BufferedMutator::budgeted_size(&put);
        mutator.mutate(put).await.unwrap();
        written += 1;
    }
    assert_eq!(mutator.unanswered_mutations(), 0, "nothing was cut yet");
    // Checked: a heap that shrank while puts were buffered (tasks of the warm-up freeing more
    // than the puts hold) would make any per-put figure meaningless, not merely small.
    let buffered = live_heap::live().checked_sub(base).expect(
        "the live heap shrank while puts were buffered: the per-put figure would be meaningless",
    );
    let per_put = buffered as f64 / written as f64;
    let counted_per_put = counted as f64 / written as f64;
    println!(
        "{written} buffered puts: {per_put:.0} live heap bytes each, budgeted_size() {counted_per_put:.0} ({:.2}x)",
        per_put / counted_per_put
    );

    // At the budget: the mutator cuts, sends and waits for answers, again and again.
    let total = written + 3 * written;
    while written < total {
        mutator
            .mutate(ycsb_put(written, &family, &qualifier))
            .await
            .unwrap();
        written += 1;
    }
    mutator.flush().await.unwrap();
    let peak = live_heap::peak_above(base);
    let after = live_heap::live().saturating_sub(base);
    println!(
        "{written} puts through an {} MiB budget: heap peak {:.1} MiB above the start ({:.2}x the budget), {:.1} KiB held after the flush",
        BUDGET / MIB,
        peak as f64 / MIB as f64,
        peak as f64 / BUDGET as f64,
        after as f64 / 1024.0
    );
    mutator.close().await.unwrap();
    drop(mutator);

    let rows = hbase_it::count_rows(&client, &name).await;
    hbase_it::drop_table(&client, &name).await;
    assert_eq!(rows, written as usize + WARM_UP_ROWS);

    // budgeted_size() is what the budget counts: the process holds no more than that.
    assert!(
        per_put <= counted_per_put,
        "a buffered put holds {per_put:.0} bytes, budgeted_size() says {counted_per_put:.0}"
    );
    // The peak depends on timing (how much of the budget is in flight at once, each sent put
    // also held as its encoded request and its connection outbox copy, the outbox growing by
    // doubling): 3.7x-4.2x the budget in runs of this test. 6x still fails the old path
    // (8.9x: whole prost requests held until answered, a second dispatch queue).
    assert!(
        peak <= 6 * BUDGET,
        "the heap peaked {peak} bytes above the start with a {BUDGET}-byte budget"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_mutator_costs_under_a_kib() {
    let _one = SERIAL.lock().await;
    const MUTATORS: usize = 2_000;
    let client = connect(BUDGET).await;
    let name = create(&client, "idle_mutators").await;
    let (family, qualifier) = (Bytes::from_static(b"family"), Bytes::from_static(b"field0"));
    warm_up(&client, &name).await;

    let base = live_heap::live();
    let mut mutators: Vec<BufferedMutator> = Vec::with_capacity(MUTATORS);
    // The handles' vector, from its type: the heap count is the whole process's, and the
    // client's own tasks may free memory between two reads of it (CI once saw a second read
    // below the first).
    let handles = MUTATORS * std::mem::size_of::<BufferedMutator>();
    for i in 0..MUTATORS {
        let m = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(12 * MIB),
            )
            .unwrap();
        m.mutate(ycsb_put(i as u64, &family, &qualifier))
            .await
            .unwrap();
        m.flush().await.unwrap();
        mutators.push(m);
    }
    // Let the dispatchers go back to sleep (each is woken by its request's end).
    tokio::task::yield_now().await;
    // Signed: frees elsewhere in the process may outweigh what the mutators hold.
    let per = (live_heap::live() as f64 - base as f64 - handles as f64) / MUTATORS as f64;
    println!("{MUTATORS} idle mutators (one write each, flushed): {per:.0} live heap bytes each");
    for m in &mutators {
        m.close().await.unwrap();
    }
    drop(mutators);
    let rows = hbase_it::count_rows(&client, &name).await;
    hbase_it::drop_table(&client, &name).await;
    assert_eq!(rows, MUTATORS + WARM_UP_ROWS);
    assert!(per <= 1024.0, "an idle mutator holds {per:.0} bytes");
}
