//! `BufferedMutator::mutate` against the real local HBase: the cost of buffering one put (an
//! append). The buffer is made large enough that no flush runs while criterion measures, so
//! the figure is the append itself; building the `Put` is excluded. The final flush happens
//! at close, outside the measurement. (Sustained write throughput, flushes included, is what
//! the YCSB load phase measures.)
//!
//! Needs `scripts/hbase-local start` (or `HBASE_ZK`). `cargo bench --bench mutator`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use hbase_client::{MutatorConfig, Put};

fn mutate(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (client, name) = rt.block_on(async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("bench_mutator");
        hbase_it::create_table(&client, &name, &["user3", "user6"]).await;
        (client, name)
    });
    let config = MutatorConfig::default().write_buffer_size(1 << 30);
    let mutator =
        rt.block_on(async { client.buffered_mutator(&name.to_string(), config).unwrap() });
    let value = bytes::Bytes::from(vec![b'v'; 100]);
    let mut i = 0u64;
    c.bench_function("BufferedMutator::mutate (1 x 100 B put, no flush)", |b| {
        b.to_async(&rt).iter_batched(
            || {
                i += 1;
                let row = format!(
                    "user{:019}",
                    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 10_000_000
                );
                Put::new(row).add("cf", "field0", &value)
            },
            |put| {
                let m = mutator.clone();
                async move { m.mutate(black_box(put)).await.unwrap() }
            },
            BatchSize::SmallInput,
        )
    });
    rt.block_on(async {
        mutator.close().await.unwrap();
        hbase_it::drop_table(&client, &name).await;
    });
}

criterion_group!(benches, mutate);
criterion_main!(benches);
