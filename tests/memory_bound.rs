//! Memory stays bounded when the caller writes faster than the cluster absorbs: the buffered
//! mutator applies backpressure (at most about two write buffers outstanding), so resident
//! memory stops growing. `HBASE_RSS_SECS` lengthens the run (default 25 s; 120 for the long
//! measurement).

use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{MutatorConfig, Put};

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
    tokio::time::timeout(Duration::from_secs(secs + 60), async {
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
        mutator.close().await.unwrap();
    })
    .await
    .expect("the overload run hung");
    let end = hbase_it::rss_kib();
    let growth_mib = peak.saturating_sub(base) / 1024;
    eprintln!(
        "RSS under overload for {secs} s: base {} MiB, peak {} MiB, end {} MiB, growth {growth_mib} MiB; {written} puts of 1 KB ({:.0}/s); samples (s, MiB): {samples:?}",
        base / 1024,
        peak / 1024,
        end / 1024,
        written as f64 / started.elapsed().as_secs_f64()
    );
    assert!(growth_mib < 300, "RSS grew by {growth_mib} MiB");
    hbase_it::drop_table(&client, &name).await;
}
