//! The BufferedMutator's isolation from a region in transition, for
//! `benches/mutator-isolation/run`: the rate at which one mutator's writes to the regions of
//! the other servers are acknowledged while one server's regions are held (the server frozen
//! behind the repo's TCP fault proxy, with writes to it buffered first and stuck), against
//! the rate with nothing held. Runs alternate (free, held, free, held, ...) so that a change
//! in the machine's load shows in both.
//!
//! `ISOLATION_ROWS` rows per run (default 20,000; 10 fields x 100 B like YCSB's records),
//! `ISOLATION_RUNS` pairs (default 3). Without `ISOLATION_ROWS` under `cargo bench` it only
//! prints where to run it from.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{BufferedMutator, MutatorConfig, Put};
use hbase_it::proxy::FaultProxy;

const FIELDS: usize = 10;
const VALUE_LEN: usize = 100;
/// Rows buffered to each held region before a held run.
const STUCK_PER_REGION: usize = 20;

fn put(row: String, value: &Bytes) -> Put {
    let mut put = Put::new(row);
    for f in 0..FIELDS {
        put = put.add("cf", format!("field{f}"), value.clone());
    }
    put
}

/// Buffers `rows` puts spread over `prefixes` and waits until all of them are acknowledged
/// while `already` unanswered mutations (the stuck ones) stay out: rows per second.
async fn run(
    mutator: &BufferedMutator,
    prefixes: &[String],
    rows: usize,
    round: usize,
    already: usize,
    value: &Bytes,
) -> f64 {
    let started = Instant::now();
    for i in 0..rows {
        let p = &prefixes[i % prefixes.len()];
        mutator
            .mutate(put(format!("{p}-r{round}-{i:07}"), value))
            .await
            .expect("buffered");
    }
    // Push the last partial buffer out without waiting for held rows (flush would).
    let m = mutator.clone();
    let flushing = tokio::spawn(async move { m.flush().await });
    while mutator.unanswered_mutations() > already {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    if already == 0 {
        flushing.await.unwrap().expect("flushed");
    } else {
        // Waits for the held rows; the caller thaws and awaits the mutator's flush.
        drop(flushing);
    }
    rows as f64 / secs
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let Some(rows) = std::env::var("ISOLATION_ROWS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    else {
        println!("mutator_isolation: run benches/mutator-isolation/run for figures");
        return;
    };
    let runs: usize = std::env::var("ISOLATION_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let plain = hbase_it::client().await;
        let name = hbase_it::unique_table("bench_isolation");
        let prefixes: Vec<String> = (0..12).map(|i| format!("k{i:02}")).collect();
        let splits: Vec<&str> = prefixes[1..].iter().map(String::as_str).collect();
        hbase_it::create_table(&plain, &name, &splits).await;
        let meta = plain.admin().meta_server().await.unwrap().address();
        let mut by_server: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in &prefixes {
            let server = hbase_it::server_of(&plain, &name, p).await.address();
            by_server.entry(server).or_default().push(p.clone());
        }
        let Some(held) = by_server.keys().find(|s| **s != meta).cloned() else {
            panic!("no server other than meta's holds a region: {by_server:?}");
        };
        assert!(
            by_server.len() > 1,
            "all regions on one server: {by_server:?}"
        );
        let held_prefixes = by_server[&held].clone();
        let others: Vec<String> = by_server
            .iter()
            .filter(|(s, _)| **s != held)
            .flat_map(|(_, ps)| ps.iter().cloned())
            .collect();
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(600))
                .rpc_timeout(Duration::from_secs(5))
        })
        .await;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(1 << 20),
            )
            .unwrap();
        let value = Bytes::from(vec![b'v'; VALUE_LEN]);
        // Locations cached and connections open everywhere; one unmeasured run to warm up.
        run(&mutator, &prefixes, 2_000, 0, 0, &value).await;
        println!(
            "Table {name}: 12 regions on {} servers; held: {held} with {} regions ({}); the \
             other {} regions take {rows} rows of {FIELDS} x {VALUE_LEN} B per run, through \
             one mutator with a 1 MiB buffer.",
            by_server.len(),
            held_prefixes.len(),
            held_prefixes.join(" "),
            others.len(),
        );
        let ctl = proxy.control(&hbase_it::map_address(&held));
        let (mut free, mut heldr) = (Vec::new(), Vec::new());
        for pair in 0..runs {
            let rate = run(&mutator, &others, rows, 2 * pair + 1, 0, &value).await;
            println!("run {}: nothing held: {rate:.0} rows/s", 2 * pair + 1);
            free.push(rate);
            ctl.set_freeze_new(true);
            ctl.freeze_existing();
            let stuck = held_prefixes.len() * STUCK_PER_REGION;
            for p in &held_prefixes {
                for i in 0..STUCK_PER_REGION {
                    mutator
                        .mutate(put(format!("{p}-stuck{pair}-{i:03}"), &value))
                        .await
                        .expect("buffered");
                }
            }
            let rate = run(&mutator, &others, rows, 2 * pair + 2, stuck, &value).await;
            let still = mutator.unanswered_mutations();
            println!(
                "run {}: {held} frozen ({still} writes to it unanswered): {rate:.0} rows/s",
                2 * pair + 2
            );
            assert!(still >= stuck, "the held writes were answered while frozen");
            heldr.push(rate);
            ctl.set_freeze_new(false);
            ctl.thaw();
            mutator
                .flush()
                .await
                .expect("the held writes land after the thaw");
        }
        mutator.close().await.unwrap();
        let (f, h) = (median(&mut free), median(&mut heldr));
        println!();
        println!("| other regions' write rate | rows/s (median of {runs}) |");
        println!("|---|---:|");
        println!("| nothing held | {f:.0} |");
        println!("| one server's regions held | {h:.0} |");
        println!("| ratio (goal >= 50%) | {:.0}% |", 100.0 * h / f);
        hbase_it::drop_table(&plain, &name).await;
    });
}
