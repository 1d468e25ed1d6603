//! The BufferedMutator's isolation from a region in transition, for
//! `benches/mutator-isolation/run`: the rate at which one mutator's writes to the regions of
//! the other servers are acknowledged while one server's regions are held (the server frozen
//! behind the repo's TCP fault proxy), against the rate with nothing held. Runs alternate
//! (free, held, free, held, ...) so that a change in the machine's load shows in both.
//!
//! Two modes (`ISOLATION_MODE`):
//! - `backlog` (default): before a held run, a backlog of writes to the held regions is
//!   buffered and stuck; the run's writes go to the other regions only.
//! - `steady`: every run's writes go round-robin to all regions, the held ones included, so
//!   the frozen server's regions keep receiving their share during the measurement and their
//!   backlog grows with it. The rate counts the other regions' rows. A `mutate` that waits
//!   longer than [`STALL`] counts as blocked: the run stops there and reports how far it got
//!   (rows accepted, the held backlog, what the client held).
//!
//! A run's time ends when every write it made to the other regions is acknowledged: its last
//! partial buffer is cut before the wait (the first poll of `flush` cuts it), and the writes
//! still unanswered then are only the held ones. No flush is left running on its own: the
//! failures a flush returns are checked once everything is answered (after the thaw).
//!
//! `ISOLATION_ROWS` rows per run (default 20,000; 10 fields x 100 B like YCSB's records),
//! `ISOLATION_RUNS` pairs (default 3). Without `ISOLATION_ROWS` under `cargo bench` it only
//! prints where to run it from.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::FutureExt;
use hbase_client::{BufferedMutator, MutatorConfig, Put};
use hbase_it::proxy::FaultProxy;

const FIELDS: usize = 10;
const VALUE_LEN: usize = 100;
/// Rows buffered to each held region before a held run (backlog mode).
const STUCK_PER_REGION: usize = 20;
/// A `mutate` waiting this long is taken as blocked (steady mode): far above the time a
/// free mutate takes even on a loaded machine, and above the client's 5 s RPC timeout.
const STALL: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Backlog,
    Steady,
}

fn put(row: String, value: &Bytes) -> Put {
    let mut put = Put::new(row);
    for f in 0..FIELDS {
        put = put.add("cf", format!("field{f}"), value);
    }
    put
}

/// Where a run's writers blocked.
struct Blocked {
    /// Rows accepted by `mutate` before the one that blocked.
    rows: usize,
    /// Of them, to the held regions (none answered).
    held_rows: usize,
    /// When the blocking `mutate` began, since the run started.
    at: Duration,
    unanswered: usize,
    buffered_bytes: usize,
    client_bytes: usize,
}

/// What one run measured.
struct Measured {
    /// Rows to the other regions acknowledged per second (when blocked: accepted by
    /// `mutate` per second until the block).
    rate: f64,
    /// Rows to the held regions written by this run (all still unanswered when frozen).
    held_rows: usize,
    blocked: Option<Blocked>,
}

/// Writes `rows` puts spread round-robin over `prefixes` (those in `held` go to the server
/// that is frozen in held runs) and waits until every write to the other regions is
/// acknowledged, with `already` earlier writes (the stuck backlog) and, when `frozen`, this
/// run's writes to the held regions still out.
#[allow(clippy::too_many_arguments)]
async fn run(
    mutator: &BufferedMutator,
    prefixes: &[String],
    held: &HashSet<String>,
    frozen: bool,
    rows: usize,
    round: usize,
    already: usize,
    value: &Bytes,
) -> Measured {
    let started = Instant::now();
    let mut held_rows = 0;
    for i in 0..rows {
        let p = &prefixes[i % prefixes.len()];
        let begun = started.elapsed();
        let write = mutator.mutate(put(format!("{p}-r{round}-{i:07}"), value));
        match tokio::time::timeout(STALL, write).await {
            Ok(r) => r.expect("buffered"),
            Err(_) => {
                // The put was not buffered (the wait was cancelled); the run ends here.
                let blocked = Blocked {
                    rows: i,
                    held_rows,
                    at: begun,
                    unanswered: mutator.unanswered_mutations(),
                    buffered_bytes: mutator.buffered_bytes(),
                    client_bytes: mutator.client_buffered_bytes(),
                };
                return Measured {
                    rate: (i - held_rows) as f64 / begun.as_secs_f64(),
                    held_rows,
                    blocked: Some(blocked),
                };
            }
        }
        if held.contains(p) {
            held_rows += 1;
        }
    }
    // The first poll of flush cuts the last partial buffer (before it starts to wait), so
    // from here every write of the run is counted as unanswered until its answer.
    let mut flushing = Box::pin(mutator.flush());
    let done_at_once = (&mut flushing).now_or_never();
    let out = already + if frozen { held_rows } else { 0 };
    while mutator.buffered_bytes() > 0 || mutator.unanswered_mutations() > out {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    if out == 0 {
        // Everything answered: the failures since the last flush come back here.
        match done_at_once {
            Some(r) => r,
            None => flushing.await,
        }
        .expect("flushed");
    } else {
        // Its wait is for the held rows; dropped, it takes no failures with it (the flush
        // after the thaw returns them).
        drop(flushing);
    }
    Measured {
        rate: (rows - held_rows) as f64 / secs,
        held_rows,
        blocked: None,
    }
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
    let mode = match std::env::var("ISOLATION_MODE").as_deref() {
        Ok("steady") => Mode::Steady,
        Ok("backlog") | Err(_) => Mode::Backlog,
        Ok(other) => panic!("ISOLATION_MODE must be backlog or steady, not {other:?}"),
    };
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
        let held_set: HashSet<String> = held_prefixes.iter().cloned().collect();
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
        let buffer = 1 << 20;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(buffer),
            )
            .unwrap();
        let value = Bytes::from(vec![b'v'; VALUE_LEN]);
        let none = HashSet::new();
        // Locations cached and connections open everywhere; one unmeasured run to warm up.
        run(&mutator, &prefixes, &none, false, 2_000, 0, 0, &value).await;
        let row_bytes =
            BufferedMutator::budgeted_size(&put("k00-r0-0000000".into(), &value).into());
        // What the runs write to: the other regions (backlog), or all of them (steady).
        let targets = match mode {
            Mode::Backlog => &others,
            Mode::Steady => &prefixes,
        };
        println!(
            "Table {name}: 12 regions on {} servers; held: {held} with {} regions ({}); {} \
             take {rows} rows of {FIELDS} x {VALUE_LEN} B ({row_bytes} B counted) per run, \
             through one mutator with a {} KiB buffer (it holds {} buffers of unanswered \
             writes at most; the client's budget is {} MiB).",
            by_server.len(),
            held_prefixes.len(),
            held_prefixes.join(" "),
            match mode {
                Mode::Backlog => format!("the other {} regions", others.len()),
                Mode::Steady => "all 12 regions (round-robin)".to_string(),
            },
            buffer >> 10,
            hbase_client::PENDING_BUFFERS,
            client.config().write_buffer_limit() >> 20,
        );
        let ctl = proxy.control(&hbase_it::map_address(&held));
        let (mut free, mut heldr) = (Vec::new(), Vec::new());
        let mut blocked_runs = 0;
        for pair in 0..runs {
            let m = run(
                &mutator,
                targets,
                &held_set,
                false,
                rows,
                2 * pair + 1,
                0,
                &value,
            )
            .await;
            println!("run {}: nothing held: {:.0} rows/s", 2 * pair + 1, m.rate);
            free.push(m.rate);
            ctl.set_freeze_new(true);
            ctl.freeze_existing();
            let stuck = match mode {
                Mode::Backlog => {
                    for p in &held_prefixes {
                        for i in 0..STUCK_PER_REGION {
                            mutator
                                .mutate(put(format!("{p}-stuck{pair}-{i:03}"), &value))
                                .await
                                .expect("buffered");
                        }
                    }
                    held_prefixes.len() * STUCK_PER_REGION
                }
                Mode::Steady => 0,
            };
            let m = run(
                &mutator,
                targets,
                &held_set,
                true,
                rows,
                2 * pair + 2,
                stuck,
                &value,
            )
            .await;
            let still = mutator.unanswered_mutations();
            match &m.blocked {
                None => println!(
                    "run {}: {held} frozen ({} writes to it in the run, {still} unanswered): \
                     {:.0} rows/s",
                    2 * pair + 2,
                    m.held_rows,
                    m.rate
                ),
                Some(b) => {
                    blocked_runs += 1;
                    println!(
                        "run {}: {held} frozen: writers BLOCKED at row {} of {rows} after {:.1} s \
                         ({} of them to the frozen server, {:.1} MiB; {} unanswered, {} B in the \
                         buffer, the client holds {:.1} MiB); {:.0} rows/s accepted until then, \
                         counted as 0",
                        2 * pair + 2,
                        b.rows,
                        b.at.as_secs_f64(),
                        b.held_rows,
                        (b.held_rows * row_bytes) as f64 / (1 << 20) as f64,
                        b.unanswered,
                        b.buffered_bytes,
                        b.client_bytes as f64 / (1 << 20) as f64,
                        m.rate
                    );
                }
            }
            // The backlog, and (steady) at least the run's first cut of held writes, are out.
            assert!(
                still >= stuck + m.held_rows.min(1),
                "the held writes were answered while frozen"
            );
            // Blocked writers stay blocked until the thaw (or the 600 s operation timeout).
            heldr.push(if m.blocked.is_some() { 0.0 } else { m.rate });
            ctl.set_freeze_new(false);
            ctl.thaw();
            mutator
                .flush()
                .await
                .expect("every write of the runs lands after the thaw");
        }
        mutator.close().await.unwrap();
        let (f, h) = (median(&mut free), median(&mut heldr));
        println!();
        println!(
            "| other regions' write rate ({} mode) | rows/s (median of {runs}) |",
            match mode {
                Mode::Backlog => "backlog",
                Mode::Steady => "steady",
            }
        );
        println!("|---|---:|");
        println!("| nothing held | {f:.0} |");
        println!("| one server's regions held | {h:.0} |");
        println!("| ratio (goal >= 50%) | {:.0}% |", 100.0 * h / f);
        if blocked_runs > 0 {
            println!("| held runs whose writers blocked | {blocked_runs} of {runs} |");
        }
        hbase_it::drop_table(&plain, &name).await;
    });
}
