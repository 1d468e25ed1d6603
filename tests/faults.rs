//! Reliability under faults, against real HBase: connections reset, frozen half-open,
//! corrupted or truncated; overloaded servers; a region server stopped during a buffered load;
//! scanner leases outliving a slow consumer; and bounds on connections.
//!
//! Network faults come from the fault-injecting proxy of `tests/support/proxy.rs`, which the
//! client reaches through its address mapper. Stopping a region server and short scanner
//! leases use a dedicated cluster (ZooKeeper on 2191, started and stopped here), never the
//! shared one.

use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{
    Action, ActionResult, Client, ClientConfig, ColumnFamily, Error, ErrorKind, Get, MutatorConfig,
    Put, Scan, ServerName, StatsSnapshot, TableDescriptor,
};
use hbase_it::proxy::{proto_bool, Corruption, FaultProxy};
use hbase_it::{bounded, server_of};

/// Panics raised inside hbase-client code (in any task) since the hook was installed.
fn client_panics() -> &'static Mutex<Vec<String>> {
    static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(loc) = info.location() {
                if loc.file().contains("hbase-client") {
                    PANICS
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{info}"));
                }
            }
            previous(info);
        }));
    });
    &PANICS
}

fn value_for(row: &str) -> Bytes {
    Bytes::from(format!("value-of-{row}-{}", "x".repeat(64)))
}

fn delta(before: &StatsSnapshot, after: &StatsSnapshot, server: &str) -> [u64; 5] {
    let get = |s: &StatsSnapshot| {
        s.server(server)
            .map(|x| [x.calls, x.retries, x.errors, x.relocations, x.multi_calls])
            .unwrap_or_default()
    };
    let (a, b) = (get(before), get(after));
    [
        b[0] - a[0],
        b[1] - a[1],
        b[2] - a[2],
        b[3] - a[3],
        b[4] - a[4],
    ]
}

/// Reads every row back with batched gets; returns the rows whose value is not `value_for`.
async fn missing_rows(table: &hbase_client::Table, rows: &[String]) -> Vec<String> {
    let mut missing = Vec::new();
    for chunk in rows.chunks(2000) {
        let actions: Vec<Action> = chunk
            .iter()
            .map(|r| Action::Get(Get::new(r.clone())))
            .collect();
        for (row, outcome) in chunk.iter().zip(table.batch(&actions).await) {
            match outcome {
                Ok(ActionResult::Row(Some(r))) if r.value(b"cf", b"q") == Some(&value_for(row)) => {
                }
                other => missing.push(format!("{row}: {other:?}")),
            }
        }
    }
    missing
}

// ---------------------------------------------------------------------------------------------
// 1. Connection resets mid-load

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_resets_mid_load_lose_nothing() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(30))
                .rpc_timeout(Duration::from_secs(5))
        })
        .await;
        let name = hbase_it::unique_table("fault_reset");
        hbase_it::create_table(&client, &name, &["r2", "r4", "r6"]).await;
        let table = client.table(&name.to_string()).unwrap();

        let stop = Arc::new(AtomicBool::new(false));
        let ops = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut workers = Vec::new();
        for w in 0..8u32 {
            let (table, stop, ops, failures) =
                (table.clone(), stop.clone(), ops.clone(), failures.clone());
            workers.push(tokio::spawn(async move {
                let mut written = Vec::new();
                let mut i = 0u32;
                while !stop.load(SeqCst) {
                    i += 1;
                    if i.is_multiple_of(10) {
                        // A batch of 10 puts across the regions.
                        let rows: Vec<String> =
                            (0..10).map(|k| format!("r{k}-w{w}-b{i:06}")).collect();
                        let actions: Vec<Action> = rows
                            .iter()
                            .map(|r| Action::Put(Put::new(r.clone()).add("cf", "q", value_for(r))))
                            .collect();
                        for (row, r) in rows.iter().zip(table.batch(&actions).await) {
                            ops.fetch_add(1, SeqCst);
                            match r {
                                Ok(_) => written.push(row.clone()),
                                Err(e) => failures.lock().unwrap().push(format!("batch {row}: {e}")),
                            }
                        }
                        continue;
                    }
                    let row = format!("r{}-w{w}-{i:06}", i % 8);
                    ops.fetch_add(1, SeqCst);
                    match table.put(Put::new(row.clone()).add("cf", "q", value_for(&row))).await {
                        Ok(()) => written.push(row.clone()),
                        Err(e) => {
                            failures.lock().unwrap().push(format!("put {row}: {e}"));
                            continue;
                        }
                    }
                    ops.fetch_add(1, SeqCst);
                    match table.get(Get::new(row.clone())).await {
                        Ok(Some(r)) if r.value(b"cf", b"q") == Some(&value_for(&row)) => {}
                        other => failures.lock().unwrap().push(format!("get {row}: {other:?}")),
                    }
                }
                written
            }));
        }
        // Reset every connection (RST) every 700 ms for 10 s.
        let before = proxy.accepted();
        for _ in 0..14 {
            tokio::time::sleep(Duration::from_millis(700)).await;
            proxy.each(|c| c.reset_existing());
        }
        stop.store(true, SeqCst);
        let mut written = Vec::new();
        for w in workers {
            written.extend(w.await.unwrap());
        }
        let reconnects = proxy.accepted() - before;
        let stats = client.stats();
        let failures = failures.lock().unwrap().clone();
        let missing = missing_rows(&table, &written).await;
        eprintln!(
            "reset scenario: {} operations, {} rows written, {} failed, {} lost, {} reconnects, {} retries",
            ops.load(SeqCst),
            written.len(),
            failures.len(),
            missing.len(),
            reconnects,
            stats.total(|s| s.retries)
        );
        assert!(failures.is_empty(), "failed operations: {:?}", &failures[..failures.len().min(10)]);
        assert!(missing.is_empty(), "lost writes: {:?}", &missing[..missing.len().min(10)]);
        assert!(reconnects >= 10, "only {reconnects} reconnects: resets did not bite");
        assert!(written.len() > 500, "too little load: {}", written.len());
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 2. Half-open servers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_fail_over_within_rpc_timeout() {
    bounded(90, async {
        let rpc_timeout = Duration::from_secs(2);
        let proxy = FaultProxy::new();
        // A connection that reads nothing for an RPC timeout while calls wait on it is dead.
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.rpc_timeout(rpc_timeout)
                .read_timeout(rpc_timeout)
                .operation_timeout(Duration::from_secs(20))
        })
        .await;
        let name = hbase_it::unique_table("fault_freeze");
        hbase_it::create_table(&client, &name, &["r3", "r6"]).await;
        let table = client.table(&name.to_string()).unwrap();
        for k in 0..9 {
            let row = format!("r{k}-seed");
            table.put(Put::new(row.clone()).add("cf", "q", value_for(&row))).await.unwrap();
        }

        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut workers = Vec::new();
        for w in 0..6u32 {
            let (table, stop, failures) = (table.clone(), stop.clone(), failures.clone());
            workers.push(tokio::spawn(async move {
                let (mut ops, mut slowest) = (0u64, Duration::ZERO);
                let mut i = 0u32;
                while !stop.load(SeqCst) {
                    i += 1;
                    let row = format!("r{}-w{w}-{i:05}", i % 9);
                    let t = Instant::now();
                    let put = table.put(Put::new(row.clone()).add("cf", "q", value_for(&row))).await;
                    let get = table.get(Get::new(row.clone())).await;
                    slowest = slowest.max(t.elapsed());
                    ops += 2;
                    if let Err(e) = put {
                        failures.lock().unwrap().push(format!("put {row}: {e}"));
                    }
                    if !matches!(&get, Ok(Some(r)) if r.value(b"cf", b"q") == Some(&value_for(&row))) {
                        failures.lock().unwrap().push(format!("get {row}: {get:?}"));
                    }
                }
                (ops, slowest)
            }));
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let before = client.stats();
        // Every connection open now goes silent, sockets kept open.
        proxy.each(|c| c.freeze_existing());
        let frozen_at = Instant::now();
        tokio::time::sleep(Duration::from_secs(8)).await;
        stop.store(true, SeqCst);
        let (mut ops, mut slowest) = (0, Duration::ZERO);
        for w in workers {
            let (o, s) = w.await.unwrap();
            ops += o;
            slowest = slowest.max(s);
        }
        let after = client.stats();
        let timeouts = after.total(|s| s.errors) - before.total(|s| s.errors);
        let dead = after.total(|s| s.read_timeouts) - before.total(|s| s.read_timeouts);
        eprintln!(
            "half-open scenario: {ops} operations, {} failed, {timeouts} calls failed, {dead} frozen connections declared dead by the read timeout, slowest put+get {slowest:?}, finished {:?} after the freeze",
            failures.lock().unwrap().len(),
            frozen_at.elapsed()
        );
        let failures = failures.lock().unwrap().clone();
        assert!(failures.is_empty(), "failed operations: {:?}", &failures[..failures.len().min(10)]);
        assert!(timeouts >= 1, "no call was caught by the freeze");
        // The frozen connections were found dead (nothing read while calls waited), not by a
        // timeout of one call: that is what moved the load to new connections.
        assert!(dead >= 1, "no frozen connection was declared dead");

        // Total outage (new connections freeze too): a call fails with a timeout, it does
        // not hang; after the thaw the same client works again.
        let strict = hbase_it::proxied_client(&proxy, |b| {
            b.rpc_timeout(rpc_timeout)
                .operation_timeout(Duration::from_secs(5))
                .retries(1)
        })
        .await;
        let strict_table = strict.table(&name.to_string()).unwrap();
        strict_table.get(Get::new("r1-seed")).await.unwrap();
        proxy.each(|c| {
            c.freeze_existing();
            c.set_freeze_new(true);
        });
        let t = Instant::now();
        // A hang would fail `bounded`; the operation timeout (5 s) ends it.
        let err = strict_table.get(Get::new("r1-seed")).await.unwrap_err();
        eprintln!("total outage: failed after {:?} with {err}", t.elapsed());
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        proxy.each(|c| c.clear());
        // The strict client's connections were frozen and dropped; it reconnects.
        proxy.each(|c| c.reset_existing());
        let row = strict_table.get(Get::new("r1-seed")).await;
        assert!(matches!(row, Ok(Some(_))), "{row:?}");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 3. Corrupt and truncated frames

/// A fault: its name, how to inject it, what its error says, and whether it breaks the
/// framing (and so the connection).
type Case<'a> = (&'static str, Box<dyn Fn() + 'a>, &'static str, bool);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_or_truncated_frames_drop_only_their_connection() {
    let panics_before = client_panics().lock().unwrap().len();
    bounded(90, async {
        let proxy = FaultProxy::new();
        // No retries: each fault surfaces as the error of the call that met it.
        let strict = hbase_it::proxied_client(&proxy, |b| {
            b.retries(0)
                .rpc_timeout(Duration::from_secs(5))
                .operation_timeout(Duration::from_secs(10))
        })
        .await;
        let name = hbase_it::unique_table("fault_corrupt");
        hbase_it::create_table(&strict, &name, &["k", "t"]).await;
        let table = strict.table(&name.to_string()).unwrap();
        let regions = strict.admin().list_regions(&name).await.unwrap();
        for (i, r) in regions.iter().enumerate() {
            let row = format!("{}row{i}", String::from_utf8_lossy(&r.region.start_key));
            table
                .put(Put::new(row.clone()).add("cf", "q", value_for(&row)))
                .await
                .unwrap();
        }
        let rows: Vec<String> = regions
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{}row{i}", String::from_utf8_lossy(&r.region.start_key)))
            .collect();
        let victim_row = rows[0].clone();
        let victim = server_of(&strict, &name, &victim_row).await.address();
        let mut others = Vec::new();
        for row in &rows[1..] {
            let s = server_of(&strict, &name, row).await.address();
            if s != victim {
                others.push((row.clone(), s));
            }
        }
        // Every read opens (and then reuses) the connections of every server involved.
        for row in &rows {
            assert!(table.get(Get::new(row.clone())).await.unwrap().is_some());
        }
        assert!(!others.is_empty(), "all regions on one server");
        let ctl = proxy.control(&victim);

        let cases: [Case; 4] = [
            (
                "garbage header",
                Box::new(|| ctl.corrupt_next(1, Corruption::Garbage)),
                "protocol error",
                true,
            ),
            (
                "huge length",
                Box::new(|| ctl.corrupt_next(1, Corruption::HugeLength)),
                "too large",
                true,
            ),
            (
                "truncated frame",
                Box::new(|| ctl.truncate_next(1)),
                "closed",
                true,
            ),
            (
                "corrupt cell block",
                // The frame is intact, only its cells are not: the connection stays.
                Box::new(|| ctl.corrupt_next(1, Corruption::CellBlock)),
                "malformed cell block",
                false,
            ),
        ];
        for (what, inject, expect, breaks_framing) in cases {
            let others_accepted: Vec<u64> = others
                .iter()
                .map(|(_, s)| proxy.control(s).accepted())
                .collect();
            let victim_accepted = ctl.accepted();
            inject();
            let err = table.get(Get::new(victim_row.clone())).await.unwrap_err();
            eprintln!("{what}: {err}");
            let Error::RetriesExhausted { attempts: 1, last } = &err else {
                panic!("{what}: expected one failed attempt, got {err:?}");
            };
            assert!(
                matches!(**last, Error::ConnectionClosed { .. } | Error::Protocol(_)),
                "{what}: not a typed connection/protocol error: {last:?}"
            );
            assert!(err.to_string().contains(expect), "{what}: {err}");
            assert_eq!(err.kind(), ErrorKind::Retryable, "{what}");
            // Other servers' connections were untouched and still serve.
            for ((row, server), before) in others.iter().zip(&others_accepted) {
                assert!(table.get(Get::new(row.clone())).await.unwrap().is_some());
                assert_eq!(
                    proxy.control(server).accepted(),
                    *before,
                    "{what}: {server} reconnected"
                );
            }
            // The victim's next call reconnects and succeeds.
            let row = table
                .get(Get::new(victim_row.clone()))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(row.value(b"cf", b"q"), Some(&value_for(&victim_row)[..]));
            let reconnects = u64::from(breaks_framing);
            assert_eq!(
                ctl.accepted(),
                victim_accepted + reconnects,
                "{what}: reconnects"
            );
            for _ in 0..100 {
                if ctl.live() == 1 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(ctl.live(), 1, "{what}: the damaged connection is closed");
        }
        assert_eq!(ctl.damaged(), 4);

        // With retries (the default), the same faults are invisible to callers.
        let resilient =
            hbase_it::proxied_client(&proxy, |b| b.operation_timeout(Duration::from_secs(20)))
                .await;
        let rt = resilient.table(&name.to_string()).unwrap();
        for row in &rows {
            rt.get(Get::new(row.clone())).await.unwrap();
        }
        ctl.corrupt_next(2, Corruption::Garbage);
        let mut ok = 0;
        for i in 0..30 {
            let row = &rows[i % rows.len()];
            let r = rt.get(Get::new(row.clone())).await.unwrap().unwrap();
            assert_eq!(r.value(b"cf", b"q"), Some(&value_for(row)[..]));
            if i == 10 {
                ctl.truncate_next(1);
            }
            ok += 1;
        }
        assert_eq!(ok, 30);
        assert_eq!(ctl.damaged(), 7);
        hbase_it::drop_table(&strict, &name).await;
    })
    .await;
    let panics = client_panics().lock().unwrap()[panics_before..].to_vec();
    assert!(panics.is_empty(), "hbase-client panicked: {panics:?}");
}

// ---------------------------------------------------------------------------------------------
// 6. Overloaded servers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_backs_off_and_bounds_the_retry_storm() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.retries(4)
                .pause(Duration::from_millis(100))
                .pause_server_overloaded(Duration::from_millis(500))
                .operation_timeout(Duration::from_secs(30))
        })
        .await;
        let name = hbase_it::unique_table("fault_overload");
        hbase_it::create_table(&client, &name, &[]).await;
        let table = client.table(&name.to_string()).unwrap();
        table.put(Put::new("o1").add("cf", "q", value_for("o1"))).await.unwrap();
        table.get(Get::new("o1")).await.unwrap().unwrap();
        let server = server_of(&client, &name, "o1").await.address();
        let ctl = proxy.control(&server);
        // pause 100 ms; overloaded pause 500 ms (by default it is the pause, as in Java).
        let overloaded_pause = Duration::from_millis(500);

        // (a) CallQueueTooBig on three Gets: the fourth attempt succeeds after the overloaded
        // backoff 500 ms × (1 + 2 + 3), and the region cache is kept.
        let before = client.stats();
        ctl.inject_exception("Get", "org.apache.hadoop.hbase.CallQueueTooBigException", true, 3);
        let t = Instant::now();
        let row = table.get(Get::new("o1")).await.unwrap().unwrap();
        let took = t.elapsed();
        let after = client.stats();
        let [calls, retries, errors, relocations, _] = delta(&before, &after, &server);
        eprintln!("CallQueueTooBig ×3: {took:?}, calls {calls}, retries {retries}, errors {errors}, relocations {relocations}");
        assert_eq!(row.value(b"cf", b"q"), Some(&value_for("o1")[..]));
        assert_eq!((calls, retries, errors, relocations), (4, 3, 3, 0));
        assert!(took >= overloaded_pause * 6, "no overloaded backoff: {took:?}");
        assert_eq!(after.meta_lookups, before.meta_lookups, "cache dropped");

        // (b) RegionTooBusy on two Multi calls (a batch of 20 puts): the normal backoff
        // 100 ms × (1 + 2), one retry per Multi.
        let before = client.stats();
        ctl.inject_exception("Multi", "org.apache.hadoop.hbase.RegionTooBusyException", false, 2);
        let rows: Vec<String> = (0..20).map(|i| format!("b{i:02}")).collect();
        let actions: Vec<Action> = rows
            .iter()
            .map(|r| Action::Put(Put::new(r.clone()).add("cf", "q", value_for(r))))
            .collect();
        let t = Instant::now();
        for r in table.batch(&actions).await {
            r.unwrap();
        }
        let took = t.elapsed();
        let after = client.stats();
        let [calls, retries, errors, relocations, multis] = delta(&before, &after, &server);
        eprintln!("RegionTooBusy ×2 on Multi: {took:?}, calls {calls}, retries {retries}, errors {errors}");
        assert_eq!((calls, multis, retries, errors, relocations), (3, 3, 2, 2, 0));
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(missing_rows(&table, &rows).await.is_empty());

        // (c) A storm: the server answers every Get with CallQueueTooBig. 16 concurrent
        // gets make exactly 5 attempts each (retries = 4), back off 500 ms × (1+2+3+5)
        // between them, and give up with the server's exception.
        let before = client.stats();
        ctl.inject_exception("Get", "org.apache.hadoop.hbase.CallQueueTooBigException", true, u32::MAX);
        let t = Instant::now();
        let gets = (0..16).map(|_| {
            let table = table.clone();
            async move { table.get(Get::new("o1")).await }
        });
        let results = futures_util::future::join_all(gets).await;
        let took = t.elapsed();
        let after = client.stats();
        let [calls, retries, errors, relocations, _] = delta(&before, &after, &server);
        eprintln!("storm: 16 gets failed after {took:?}: calls {calls}, retries {retries}, errors {errors}");
        for r in &results {
            let err = r.as_ref().unwrap_err();
            assert!(matches!(err, Error::RetriesExhausted { attempts: 5, .. }), "{err}");
            assert_eq!(err.remote().unwrap().short_class_name(), "CallQueueTooBigException");
            assert_eq!(err.kind(), ErrorKind::Retryable);
        }
        // `retries` counts failed attempts, the last (not retried) one included.
        assert_eq!((calls, retries, errors, relocations), (80, 80, 80, 0));
        assert!(took >= overloaded_pause * 11, "storm not paced: {took:?}");
        ctl.clear();
        table.get(Get::new("o1")).await.unwrap().unwrap();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Resource bounds: connections

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_stay_bounded_by_servers() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b.operation_timeout(Duration::from_secs(30))).await;
        let name = hbase_it::unique_table("fault_conns");
        let splits: Vec<String> = (1..10).map(|i| format!("r{i}")).collect();
        let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
        hbase_it::create_table(&client, &name, &splits).await;
        let servers = client.admin().region_servers().await.unwrap().len();
        let table = client.table(&name.to_string()).unwrap();
        assert!(client.admin().table_exists(&name).await.unwrap()); // a master connection too
        // Two rounds of 64 tasks × 80 operations; between them every connection is reset, so
        // the replaced connections must really close.
        for round in 0..2 {
            let mut tasks = Vec::new();
            for w in 0..64u32 {
                let table = table.clone();
                tasks.push(tokio::spawn(async move {
                    for i in 0..40u32 {
                        let row = format!("r{}-{w}-{i}", (w + i) % 10);
                        table
                            .put(Put::new(row.clone()).add("cf", "q", value_for(&row)))
                            .await
                            .unwrap();
                        table.get(Get::new(row)).await.unwrap().unwrap();
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            let open = client.open_connections();
            let mut sockets = proxy.live();
            for _ in 0..50 {
                if sockets as usize == open {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                sockets = proxy.live();
            }
            eprintln!(
                "round {round}, 64 tasks × 80 ops: {open} open connections, {sockets} live sockets, {} accepted, {servers} servers",
                proxy.accepted()
            );
            assert!(open <= servers + 1, "{open} connections for {servers} servers + master");
            assert!(open >= servers, "{open} connections: not every server was used");
            assert_eq!(sockets as usize, open, "sockets left behind");
            proxy.each(|c| c.reset_existing());
        }
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// A dedicated cluster (its own ZooKeeper, master port and state directory) for the scenarios
// that stop a region server or need a short scanner lease. Shared by the tests of this file
// that run at the same time; stopped when the last of them ends, also when it fails.

/// ZooKeeper port of the dedicated cluster; `HBASE_DEDICATED_ZK_PORT` moves it (the master
/// port is this + 13819, so 2191 gives 16010), so that checkouts can test side by side.
fn dedicated_zk_port() -> u16 {
    std::env::var("HBASE_DEDICATED_ZK_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(2191)
}
/// Scanner lease of the dedicated cluster (`hbase.client.scanner.timeout.period`).
const DEDICATED_LEASE: Duration = Duration::from_secs(4);

struct DedicatedCluster {
    zk: String,
}

/// Serialises the scenarios that use the dedicated cluster (they still share one start).
static DEDICATED_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl DedicatedCluster {
    fn script(args: &[&str]) -> std::process::Output {
        let root = env!("CARGO_MANIFEST_DIR");
        Command::new(format!("{root}/scripts/hbase-local"))
            .args(args)
            .env("HBASE_LOCAL_DIR", format!("{root}/target/hbase-fault"))
            .env(
                "HBASE_LOCAL_LIB_DIR",
                format!("{root}/target/hbase-local/lib"),
            )
            .env("HBASE_LOCAL_ZK_PORT", dedicated_zk_port().to_string())
            .env(
                "HBASE_LOCAL_MASTER_PORT",
                (dedicated_zk_port() + 13819).to_string(),
            )
            .env("HBASE_LOCAL_HEAP", "1g")
            // Always the default version under its own names, whatever the shared cluster runs
            // (its jars are the default version's; the tests reach it without an address map).
            .env_remove("HBASE_LOCAL_HBASE_VERSION")
            .env_remove("HBASE_LOCAL_HOSTNAME")
            .env(
                "HBASE_LOCAL_EXTRA_SITE",
                format!(
                    "hbase.client.scanner.timeout.period={}",
                    DEDICATED_LEASE.as_millis()
                ),
            )
            .output()
            .expect("run scripts/hbase-local")
    }

    fn start() -> DedicatedCluster {
        // A cluster left over by a killed run may have lost a region server: start afresh.
        Self::script(&["stop", "--kill"]);
        let out = Self::script(&["start"]);
        assert!(
            out.status.success(),
            "dedicated cluster failed to start:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        DedicatedCluster {
            zk: format!("127.0.0.1:{}", dedicated_zk_port()),
        }
    }

    /// The dedicated cluster, started if no running test holds it.
    async fn acquire() -> Arc<DedicatedCluster> {
        static CLUSTER: Mutex<Weak<DedicatedCluster>> = Mutex::new(Weak::new());
        tokio::task::spawn_blocking(|| {
            let mut held = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(c) = held.upgrade() {
                return c;
            }
            let c = Arc::new(DedicatedCluster::start());
            *held = Arc::downgrade(&c);
            c
        })
        .await
        .unwrap()
    }

    /// The server hosting `hbase:meta`, from `scripts/hbase-local status`. `status` names it
    /// only when its ZooKeeper query was answered: one that was not (a busy ZooKeeper can miss
    /// one) is asked again, for as long as a start may take.
    fn meta_server(&self) -> ServerName {
        let deadline = std::time::Instant::now() + Duration::from_secs(180);
        loop {
            let out = Self::script(&["status"]);
            let text = String::from_utf8_lossy(&out.stdout);
            let parsed = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("meta on:"))
                .and_then(|name| {
                    let mut parts = name.trim().split(',');
                    Some(ServerName {
                        host: parts.next()?.to_string(),
                        port: parts.next()?.parse().ok()?,
                        start_code: parts.next()?.parse().ok()?,
                    })
                });
            if let Some(server) = parsed {
                return server;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no meta server in status for 180 s; the last one:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    async fn client(
        &self,
        tune: impl FnOnce(hbase_client::ClientConfigBuilder) -> hbase_client::ClientConfigBuilder,
    ) -> Client {
        Client::connect(
            tune(ClientConfig::builder(self.zk.clone()))
                .build()
                .unwrap(),
        )
        .await
        .unwrap()
    }
}

impl Drop for DedicatedCluster {
    fn drop(&mut self) {
        let out = Self::script(&["stop"]);
        if !out.status.success() {
            Self::script(&["stop", "--kill"]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 4. A region server stopped during a buffered load

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn region_server_stopped_during_buffered_load_loses_nothing() {
    let cluster = DedicatedCluster::acquire().await;
    // One scenario at a time on the dedicated cluster: stopping a server while the other
    // scenario creates and moves its region made that one flaky.
    let _turn = DEDICATED_TURN.lock().await;
    bounded(90, async {
        let client = cluster
            .client(|b| {
                b.operation_timeout(Duration::from_secs(45))
                    .rpc_timeout(Duration::from_secs(10))
            })
            .await;
        let admin = client.admin();
        let name = hbase_it::unique_table("fault_rs_stop");
        let splits: Vec<String> = (1..9).map(|i| format!("r{i}")).collect();
        let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
        hbase_it::create_table(&client, &name, &splits).await;
        let regions = admin.list_regions(&name).await.unwrap();
        let meta = cluster.meta_server();
        let mut victims: Vec<ServerName> = regions
            .iter()
            .filter_map(|r| r.server.clone())
            .filter(|s| s.address() != meta.address())
            .collect();
        victims.sort_by_key(|s| s.address());
        let victim = victims.pop().expect("a server other than meta's hosts regions");
        let victim_regions = regions.iter().filter(|r| r.server.as_ref() == Some(&victim)).count();

        let failed = Arc::new(Mutex::new(Vec::<(Bytes, ErrorKind)>::new()));
        let listener_failed = failed.clone();
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default()
                    .write_buffer_size(256 * 1024)
                    .on_failure(move |f| {
                        listener_failed.lock().unwrap().push((f.row().clone(), f.error().kind()))
                    }),
            )
            .unwrap();
        let total = 30_000u32;
        let rows: Vec<String> = (0..total).map(|i| format!("r{}-{i:06}", i % 9)).collect();
        let t = Instant::now();
        let mut stop_task = None;
        let mut mutate_errors = Vec::new();
        // Paced over 15 s, so the load runs through the stop and the reassignment; the
        // server is stopped 3 s in.
        let pace = Duration::from_secs(15) / total;
        for (i, row) in rows.iter().enumerate() {
            if i % 100 == 0 {
                tokio::time::sleep_until((t + pace * i as u32).into()).await;
            }
            if i == total as usize / 5 {
                let (admin, victim) = (admin.clone(), victim.clone());
                stop_task = Some(tokio::spawn(async move {
                    admin.stop_region_server(&victim, "fault test").await
                }));
            }
            if let Err(e) = mutator
                .mutate(Put::new(row.clone()).add("cf", "q", value_for(row)))
                .await
            {
                mutate_errors.push(Bytes::from(row.clone()));
                eprintln!("mutate {row}: {e}");
            }
        }
        let closed = mutator.close().await;
        let load_time = t.elapsed();
        let stats = client.stats();
        stop_task.unwrap().await.unwrap().expect("stop region server");
        let reported_kinds = failed.lock().unwrap().clone();
        let mut reported: HashSet<Bytes> = reported_kinds.iter().map(|(r, _)| r.clone()).collect();
        // Failed with an unknown outcome: an attempt may have been applied.
        let unknown: HashSet<Bytes> = reported_kinds
            .iter()
            .filter(|(_, k)| *k == ErrorKind::OutcomeUnknown)
            .map(|(r, _)| r.clone())
            .collect();
        if let Err(Error::MutationsFailed { failures, .. }) = &closed {
            for f in failures {
                assert!(reported.contains(f.row()), "close() reported a row the listener missed");
            }
        } else {
            closed.as_ref().expect("close");
        }
        reported.extend(mutate_errors);
        // The server really is gone.
        let mut live = admin.region_servers().await.unwrap();
        for _ in 0..50 {
            if !live.contains(&victim) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            live = admin.region_servers().await.unwrap();
        }
        assert!(!live.contains(&victim), "{victim} still registered");

        // Row by row, the client's contract: acknowledged ⇒ readable as written; reported
        // failed with a known outcome ⇒ not there; reported failed with an unknown outcome
        // (an attempt got no answer) ⇒ either. Nothing silently lost, nothing half-reported.
        let table = client.table(&name.to_string()).unwrap();
        let acked: Vec<String> = rows
            .iter()
            .filter(|r| !reported.contains(r.as_bytes()))
            .cloned()
            .collect();
        let lost = missing_rows(&table, &acked).await;
        let failed_rows: Vec<String> = rows
            .iter()
            .filter(|r| reported.contains(r.as_bytes()) && !unknown.contains(r.as_bytes()))
            .cloned()
            .collect();
        let unknown_rows: Vec<String> = rows
            .iter()
            .filter(|r| unknown.contains(r.as_bytes()))
            .cloned()
            .collect();
        let failed_but_present =
            failed_rows.len() - missing_rows(&table, &failed_rows).await.len();
        let unknown_present = unknown_rows.len() - missing_rows(&table, &unknown_rows).await.len();
        eprintln!(
            "region server stop: {total} mutations in {load_time:?} ({victim_regions} of 9 regions on {victim}): {} Multi calls, {} retries, {} relocations; {} acknowledged, {} reported failed, {} lost, {} reported failed yet present, {} with an unknown outcome ({} of them present)",
            stats.total(|s| s.multi_calls),
            stats.total(|s| s.retries),
            stats.total(|s| s.relocations),
            acked.len(),
            failed_rows.len(),
            lost.len(),
            failed_but_present,
            unknown_rows.len(),
            unknown_present
        );
        assert!(lost.is_empty(), "acknowledged but lost: {:?}", &lost[..lost.len().min(10)]);
        assert_eq!(failed_but_present, 0, "mutations reported failed were applied");
        assert_eq!(acked.len() + failed_rows.len() + unknown_rows.len(), total as usize);
        assert!(stats.total(|s| s.retries) > 0, "the stop never touched the load");
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 5. Scanner lease and a slow consumer

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_scan_consumer_outlives_the_scanner_lease() {
    let cluster = DedicatedCluster::acquire().await;
    // One scenario at a time on the dedicated cluster: stopping a server while the other
    // scenario creates and moves its region made that one flaky.
    let _turn = DEDICATED_TURN.lock().await;
    bounded(90, async {
        let proxy = FaultProxy::new();
        let rpc_timeout = Duration::from_secs(2);
        let client = Client::connect(
            ClientConfig::builder(cluster.zk.clone())
                .address_mapper(proxy.mapper())
                .rpc_timeout(rpc_timeout)
                .operation_timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
        let admin = client.admin();
        let name = hbase_it::unique_table("fault_lease");
        let desc = TableDescriptor::new(name.clone()).family(ColumnFamily::new("cf"));
        admin.create_table(&desc, &[]).await.unwrap();
        // Keep the region on meta's server, which the region-server-stop test never stops.
        let meta = cluster.meta_server();
        let region = admin.list_regions(&name).await.unwrap().remove(0).region;
        admin.move_region(&region, Some(&meta)).await.unwrap();
        let table = client.table(&name.to_string()).unwrap();
        let rows: Vec<String> = (0..200).map(|i| format!("row{i:04}")).collect();
        let actions: Vec<Action> = rows
            .iter()
            .map(|r| Action::Put(Put::new(r.clone()).add("cf", "q", value_for(r))))
            .collect();
        for r in table.batch(&actions).await {
            r.unwrap();
        }
        let ctl = proxy.control(&meta.address());

        // The stall outlasts this table's operation timeout: the timeout bounds a wait for
        // the server, not for the consumer, so the renewals still get the whole RPC timeout.
        let impatient = client
            .table_builder(&name.to_string())
            .unwrap()
            .operation_timeout(DEDICATED_LEASE * 3 / 4)
            .build();
        let is_renewal = |r: &hbase_it::proxy::RequestInfo| {
            r.method == "Scan" && proto_bool(&r.param, 10) == Some(true)
        };

        // Consume 20 rows, stall for 2.5 leases, then the rest. Three times: first with the
        // client's lease renewals reaching the server; then with every renewal swallowed, so
        // the lease expires and the scan has to reopen after the last row it delivered; then
        // with an operation timeout shorter than the stall.
        for (swallow_renewals, table) in [(false, &table), (true, &table), (false, &impatient)] {
            if swallow_renewals {
                ctl.swallow_requests(1000, is_renewal);
            } else {
                ctl.clear();
                ctl.record(is_renewal);
            }
            let before = client.stats();
            let mut stream = table.scan(Scan::new().caching(20));
            let mut got = Vec::new();
            while let Some(row) = stream.next().await {
                let row = row.unwrap_or_else(|e| panic!("scan failed after {} rows: {e}", got.len()));
                assert_eq!(row.value(b"cf", b"q"), Some(&value_for(std::str::from_utf8(&row.row).unwrap())[..]));
                got.push(String::from_utf8(row.row.to_vec()).unwrap());
                if got.len() == 20 {
                    tokio::time::sleep(DEDICATED_LEASE * 5 / 2).await;
                }
            }
            let after = client.stats();
            let [calls, retries, ..] = delta(&before, &after, &meta.address());
            eprintln!(
                "slow consumer (renewals swallowed: {swallow_renewals}): {} rows, {calls} scan calls, {retries} retries, {} renewals swallowed",
                got.len(),
                ctl.swallowed()
            );
            assert_eq!(got, rows, "exact rows in order");
            if swallow_renewals {
                assert!(ctl.swallowed() >= 1);
            } else {
                assert_eq!(retries, 0, "the lease was renewed, nothing had to be reopened");
                // A renewal every half lease while the consumer stalls, each with the RPC
                // timeout in its header (it was cut to 1 ms once the stall outlasted the
                // operation timeout).
                let timeouts: Vec<u32> = ctl.recorded().iter().map(|r| r.timeout_ms).collect();
                assert!(timeouts.len() >= 3, "renewals: {timeouts:?}");
                assert!(
                    timeouts.iter().all(|&t| u128::from(t) == rpc_timeout.as_millis()),
                    "renewal timeouts (ms): {timeouts:?}"
                );
            }
        }
        ctl.clear();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}
