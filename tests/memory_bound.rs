//! Memory stays bounded when the caller writes faster than the cluster absorbs: the buffered
//! mutator applies backpressure (at most about two write buffers outstanding), so resident
//! memory stops growing. `HBASE_RSS_SECS` lengthens the run (default 25 s; 120 for the long
//! measurement). All mutators of one client also share one bound on what they hold together.

use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{MutatorConfig, Put};

/// A bound on a hang, not on speed. A request's retries may take the operation timeout
/// (120 s) and the mutator sends a region's requests one at a time, so the bound is over two
/// of them: a server that is slow under the overload (flushing, blocking updates) is not a
/// hang.
const HANG_SECS: u64 = 300;

/// What a hung writer or close was waiting for: the mutator's and the client's counters.
fn hang_report(client: &hbase_client::Client, mutator: &hbase_client::BufferedMutator) -> String {
    format!(
        "buffered {} bytes, {} mutations unanswered, client holds {} bytes; {}",
        mutator.buffered_bytes(),
        mutator.unanswered_mutations(),
        mutator.client_buffered_bytes(),
        hbase_it::stats_line(&client.stats())
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutator_backpressure_bounds_memory_under_overload() {
    let secs: u64 = std::env::var("HBASE_RSS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("rss_overload");
    let splits: Vec<String> = (1..6).map(|i| format!("r{i}")).collect();
    let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
    hbase_it::create_table(&client, &name, &splits).await;
    let mutator = client
        .buffered_mutator(&name.to_string(), MutatorConfig::default())
        .unwrap();
    let value = Bytes::from(vec![b'x'; 1000]);
    let base = hbase_it::rss_kib();
    let started = Instant::now();
    let mut next_sample = Duration::ZERO;
    let (mut peak, mut written, mut samples) = (base, 0u64, Vec::new());
    let writing = tokio::time::timeout(Duration::from_secs(secs + HANG_SECS), async {
        while started.elapsed() < Duration::from_secs(secs) {
            // As fast as mutate() returns: only backpressure slows this loop down.
            for _ in 0..200 {
                let row = format!("r{}-{written:010}", written % 6);
                mutator
                    .mutate(Put::new(row).add("cf", "q", value.clone()))
                    .await
                    .unwrap();
                written += 1;
            }
            if started.elapsed() >= next_sample {
                let rss = hbase_it::rss_kib();
                peak = peak.max(rss);
                samples.push((started.elapsed().as_secs(), rss / 1024));
                next_sample += Duration::from_secs(5);
            }
        }
    })
    .await;
    if writing.is_err() {
        panic!(
            "the writing ran {HANG_SECS} s past its {secs} s (a mutate() waited): {}",
            hang_report(&client, &mutator)
        );
    }
    let closing = Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(HANG_SECS), mutator.close()).await;
    match closed {
        Ok(result) => result.unwrap(),
        Err(_) => panic!(
            "close() did not end within {HANG_SECS} s: {}",
            hang_report(&client, &mutator)
        ),
    }
    let close_secs = closing.elapsed().as_secs_f64();
    let end = hbase_it::rss_kib();
    let growth_mib = peak.saturating_sub(base) / 1024;
    eprintln!(
        "RSS under overload for {secs} s: base {} MiB, peak {} MiB, end {} MiB, growth {growth_mib} MiB; {written} puts of 1 KB ({:.0}/s), close {close_secs:.1} s; samples (s, MiB): {samples:?}; {}",
        base / 1024,
        peak / 1024,
        end / 1024,
        written as f64 / started.elapsed().as_secs_f64(),
        hbase_it::stats_line(&client.stats())
    );
    assert!(growth_mib < 300, "RSS grew by {growth_mib} MiB");
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutators_of_one_client_share_one_memory_bound() {
    // 200 mutators with 12 MiB buffers could hold 2.3 GiB; the client's bound is 1 MiB, so
    // writers wait for answered batches. Nothing is dropped.
    let limit = 1 << 20;
    let config = hbase_client::ClientConfig::builder(hbase_it::zk())
        .write_buffer_limit(limit)
        .build()
        .unwrap();
    let client = hbase_client::Client::connect(config).await.unwrap();
    let name = hbase_it::unique_table("budget");
    hbase_it::create_table(&client, &name, &["r3", "r6"]).await;
    let value = Bytes::from(vec![b'v'; 1000]);
    let mut tasks = Vec::new();
    for t in 0..200usize {
        let m = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(12 << 20),
            )
            .unwrap();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            let mut peak = 0;
            for i in 0..100usize {
                let row = format!("r{}-{t:03}{i:03}", (t + i) % 9);
                m.mutate(Put::new(row).add("cf", "q", value.clone()))
                    .await
                    .unwrap();
                peak = peak.max(m.client_buffered_bytes());
            }
            m.close().await.unwrap();
            peak
        }));
    }
    let mut peak = 0;
    tokio::time::timeout(Duration::from_secs(300), async {
        for t in tasks {
            peak = peak.max(t.await.unwrap());
        }
    })
    .await
    .expect("the bounded writers hung");
    eprintln!("client-wide buffer bound {limit} bytes: peak {peak} bytes held by 200 mutators");
    assert!(peak <= limit, "held {peak} bytes, bound {limit}");
    assert!(peak > limit / 2, "the bound was never approached: {peak}");
    assert_eq!(hbase_it::count_rows(&client, &name).await, 20_000);
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_buffer_holding_the_bound_is_flushed_for_a_waiting_writer() {
    // Mutator A fills most of the bound and then sits idle (no flush, no close); mutator B's
    // writes need room: A's buffer is sent so the bound frees up, instead of B waiting forever.
    let limit = 256 * 1024;
    let config = hbase_client::ClientConfig::builder(hbase_it::zk())
        .write_buffer_limit(limit)
        .build()
        .unwrap();
    let client = hbase_client::Client::connect(config).await.unwrap();
    let name = hbase_it::unique_table("budget_idle");
    hbase_it::create_table(&client, &name, &[]).await;
    let value = Bytes::from(vec![b'v'; 1000]);
    let big = MutatorConfig::default().write_buffer_size(64 << 20);
    let a = client
        .buffered_mutator(&name.to_string(), big.clone())
        .unwrap();
    let b = client.buffered_mutator(&name.to_string(), big).unwrap();
    // 150 puts of about 1.3 KB each (budgeted_size): more than half the bound, less than all.
    for i in 0..150 {
        a.mutate(Put::new(format!("a{i:04}")).add("cf", "q", value.clone()))
            .await
            .unwrap();
    }
    assert!(a.buffered_bytes() > limit / 2);
    tokio::time::timeout(Duration::from_secs(120), async {
        for i in 0..500 {
            b.mutate(Put::new(format!("b{i:04}")).add("cf", "q", value.clone()))
                .await
                .unwrap();
        }
        b.close().await.unwrap();
    })
    .await
    .expect("writer B waited forever behind idle buffer A");
    a.close().await.unwrap();
    assert_eq!(hbase_it::count_rows(&client, &name).await, 650);
    hbase_it::drop_table(&client, &name).await;
}
