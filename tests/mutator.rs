//! The BufferedMutator's contract, against the real local HBase: close racing writers loses
//! nothing and refuses what comes after; a panicking failure listener leaves flush and close
//! working; failures kept in memory are bounded; per-server concurrency keeps writes to other
//! servers flowing while one server is frozen; writes to one row apply in buffered order, also
//! under connection resets.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{Client, Error, ErrorKind, Get, MutatorConfig, Put, Scan};
use hbase_it::bounded;
use hbase_it::proxy::FaultProxy;

async fn count_rows(client: &Client, table: &str) -> Vec<Bytes> {
    let t = client.table(table).unwrap();
    let mut stream = t.scan(Scan::new().caching(5000));
    let mut rows = Vec::new();
    while let Some(r) = stream.next().await {
        rows.push(r.unwrap().row);
    }
    rows
}

/// 64 writers race `close()`: every write that returned `Ok` is in HBase, and every write
/// after close returned an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_racing_64_writers_loses_nothing() {
    bounded(120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_close_race");
        hbase_it::create_table(&client, &name, &["w20", "w40"]).await;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(32 * 1024),
            )
            .unwrap();
        let written = Arc::new(AtomicU64::new(0));
        let started_close = Arc::new(tokio::sync::Notify::new());
        let mut writers = Vec::new();
        for w in 0..64u32 {
            let (m, written) = (mutator.clone(), written.clone());
            writers.push(tokio::spawn(async move {
                let mut acked = Vec::new();
                let mut refused = 0u32;
                for i in 0..100_000u32 {
                    let row = format!("w{w:02}-{i:06}");
                    match m.mutate(Put::new(row.clone()).add("cf", "q", "v")).await {
                        Ok(()) => {
                            acked.push(Bytes::from(row));
                            written.fetch_add(1, SeqCst);
                        }
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::DoNotRetry, "{e}");
                            refused += 1;
                            if refused == 3 {
                                break;
                            }
                        }
                    }
                    if i % 16 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
                (acked, refused)
            }));
        }
        // Close once the writers are in full flow (an event: rows acknowledged).
        while written.load(SeqCst) < 20_000 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        started_close.notify_waiters();
        mutator.close().await.expect("close");
        let after_close = mutator.mutate(Put::new("late").add("cf", "q", "v")).await;
        assert!(after_close.is_err(), "a write after close must fail");
        let mut acked = std::collections::HashSet::new();
        for w in writers {
            let (rows, refused) = w.await.unwrap();
            assert_eq!(refused, 3, "each writer ends on refused writes");
            acked.extend(rows);
        }
        let stored: std::collections::HashSet<Bytes> = count_rows(&client, &name.to_string())
            .await
            .into_iter()
            .collect();
        let lost: Vec<_> = acked.difference(&stored).take(5).collect();
        assert!(
            lost.is_empty(),
            "{} acknowledged writes lost, e.g. {lost:?}",
            acked.difference(&stored).count()
        );
        assert_eq!(
            stored.len(),
            acked.len(),
            "only acknowledged rows are stored"
        );
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A listener that panics on every failure: flush still returns the failures, later writes
/// still land, close still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_listener_leaves_flush_and_close_working() {
    bounded(120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_panic_listener");
        hbase_it::create_table(&client, &name, &[]).await;
        let calls = Arc::new(AtomicU64::new(0));
        let c2 = calls.clone();
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default()
                    .write_buffer_size(1024)
                    .on_failure(move |f| {
                        c2.fetch_add(1, SeqCst);
                        panic!("listener panics on {:?}", f.row);
                    }),
            )
            .unwrap();
        for round in 0..3u32 {
            // A family the table does not have: the server refuses each of these for good.
            for i in 0..20u32 {
                mutator
                    .mutate(Put::new(format!("bad-{round}-{i}")).add("nope", "q", "v"))
                    .await
                    .unwrap();
            }
            for i in 0..200u32 {
                mutator
                    .mutate(Put::new(format!("good-{round}-{i:03}")).add("cf", "q", "v"))
                    .await
                    .unwrap();
            }
            match mutator.flush().await {
                Err(Error::MutationsFailed { failures, .. }) => {
                    assert_eq!(failures.len(), 20, "round {round}");
                    assert!(failures.iter().all(|f| f.row.starts_with(b"bad-")));
                }
                other => panic!("expected the 20 refused puts, got {other:?}"),
            }
        }
        mutator
            .close()
            .await
            .expect("close after the listener panicked");
        assert_eq!(calls.load(SeqCst), 60, "the listener saw every failure");
        assert_eq!(count_rows(&client, &name.to_string()).await.len(), 600);
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// Thousands of failures with the server's stack trace: the mutator keeps a bounded number,
/// counts the rest, and keeps the long message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_kept_are_bounded_and_counted() {
    bounded(120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_fail_bound");
        hbase_it::create_table(&client, &name, &[]).await;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default()
                    .write_buffer_size(64 * 1024)
                    .max_failures_kept(100),
            )
            .unwrap();
        for i in 0..5000u32 {
            mutator
                .mutate(Put::new(format!("bad-{i:05}")).add("nope", "q", "v"))
                .await
                .unwrap();
        }
        match mutator.flush().await {
            Err(Error::MutationsFailed { failures, dropped }) => {
                assert_eq!(failures.len(), 100);
                assert_eq!(dropped, 4900);
                let long: Vec<usize> = failures
                    .iter()
                    .map(|f| f.error.remote().map_or(0, |r| r.message.len()))
                    .collect();
                let first_line = failures[0].error.remote().unwrap().first_line().len();
                // One copy of the full message; the others keep its first line.
                assert!(
                    long.iter().filter(|&&l| l > first_line).count() <= 1,
                    "{long:?}"
                );
            }
            other => panic!("expected failures, got {other:?}"),
        }
        mutator
            .close()
            .await
            .expect("nothing failed since the flush");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// 1,000 puts to one row through the mutator, with the connections reset while they flow:
/// the row ends with the last value written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_puts_to_one_row_under_resets_end_with_the_last() {
    bounded(180, async {
        let plain = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_one_row");
        hbase_it::create_table(&plain, &name, &[]).await;
        let proxy = Arc::new(FaultProxy::new());
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(60))
                .rpc_timeout(Duration::from_secs(5))
        })
        .await;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(2 * 1024),
            )
            .unwrap();
        for i in 0..1000u32 {
            mutator
                .mutate(Put::new("the-row").add("cf", "q", format!("v{i:04}")))
                .await
                .unwrap();
            // Reset every connection while requests are in flight (an event, not a clock).
            if i % 40 == 39 {
                proxy.each(|c| c.reset_existing());
                tokio::task::yield_now().await;
            }
        }
        let closed = mutator.close().await;
        let resets: u64 = proxy.controls().iter().map(|c| c.accepted()).sum();
        assert!(
            resets >= 10,
            "connections were reset and reopened ({resets} accepted)"
        );
        let got = plain
            .table(&name.to_string())
            .unwrap()
            .get(Get::new("the-row"))
            .await
            .unwrap()
            .expect("row");
        match closed {
            Ok(()) => assert_eq!(&got.value(b"cf", b"q").unwrap()[..], b"v0999"),
            // A failed last write may not be reported as applied; then an earlier value is fine
            // only if the failure said so.
            Err(e) => panic!("writes failed under resets: {e}"),
        }
        hbase_it::drop_table(&plain, &name).await;
    })
    .await;
}

/// The listener is called outside the mutator's locks: it may call the mutator itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_may_use_the_mutator() {
    bounded(60, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_listener_reentry");
        hbase_it::create_table(&client, &name, &[]).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let slot: Arc<Mutex<Option<hbase_client::BufferedMutator>>> = Arc::new(Mutex::new(None));
        let slot2 = slot.clone();
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().on_failure(move |f| {
                    s2.lock().unwrap().push(f.row.clone());
                    if let Some(m) = slot2.lock().unwrap().as_ref() {
                        let _ = m.buffered_bytes();
                    }
                }),
            )
            .unwrap();
        *slot.lock().unwrap() = Some(mutator.clone());
        mutator
            .mutate(Put::new("bad").add("nope", "q", "v"))
            .await
            .unwrap();
        assert!(mutator.flush().await.is_err());
        assert_eq!(seen.lock().unwrap().len(), 1);
        slot.lock().unwrap().take();
        mutator.close().await.unwrap();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// One server frozen behind the proxy (its regions in effect in transition): writes to the
/// regions of the other servers, buffered after the frozen ones in the same mutator, are
/// applied while it stays frozen; after the thaw, close applies everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_server_does_not_stall_the_other_regions() {
    bounded(240, async {
        let plain = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_frozen");
        let splits: Vec<String> = (1..9).map(|i| format!("k{i}")).collect();
        let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
        hbase_it::create_table(&plain, &name, &splits).await;
        let meta = plain.admin().meta_server().await.unwrap().address();
        let mut by_server: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for i in 0..9 {
            let prefix = format!("k{i}");
            let server = hbase_it::server_of(&plain, &name, &prefix).await.address();
            by_server.entry(server).or_default().push(prefix);
        }
        let frozen = by_server
            .keys()
            .find(|s| **s != meta && by_server.len() > 1)
            .cloned()
            .expect("regions on a server other than meta's, and on others");
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(200))
                .rpc_timeout(Duration::from_secs(5))
        })
        .await;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(16 * 1024),
            )
            .unwrap();
        // Locations cached and connections open everywhere.
        for i in 0..9 {
            mutator
                .mutate(Put::new(format!("k{i}-warm")).add("cf", "q", "v"))
                .await
                .unwrap();
        }
        mutator.flush().await.unwrap();
        let ctl = proxy.control(&hbase_it::map_address(&frozen));
        ctl.set_freeze_new(true);
        ctl.freeze_existing();
        let stuck: Vec<String> = by_server[&frozen]
            .iter()
            .flat_map(|p| (0..20).map(move |i| format!("{p}-stuck-{i:03}")))
            .collect();
        for row in &stuck {
            mutator
                .mutate(Put::new(row.clone()).add("cf", "q", "v"))
                .await
                .unwrap();
        }
        let others: Vec<String> = by_server
            .iter()
            .filter(|(s, _)| **s != frozen)
            .flat_map(|(_, ps)| ps.iter())
            .flat_map(|p| (0..300).map(move |i| format!("{p}-flow-{i:04}")))
            .collect();
        for row in &others {
            mutator
                .mutate(Put::new(row.clone()).add("cf", "q", "v"))
                .await
                .unwrap();
        }
        // Push the last partial buffer out without waiting for the frozen rows.
        let m2 = mutator.clone();
        let flushing = tokio::spawn(async move { m2.flush().await });
        // Wait for the event: every row of the other servers readable, the frozen server still
        // frozen (on the old single flusher this never happens: bounded() fails).
        let table = plain.table(&name.to_string()).unwrap();
        loop {
            let actions: Vec<hbase_client::Action> = others
                .iter()
                .map(|r| hbase_client::Action::Get(Get::new(r.clone())))
                .collect();
            let present = table
                .batch(&actions)
                .await
                .into_iter()
                .filter(|r| matches!(r, Ok(hbase_client::ActionResult::Row(Some(_)))))
                .count();
            if present == others.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            !flushing.is_finished(),
            "the frozen server's writes are still pending"
        );
        assert!(mutator.unanswered_mutations() >= stuck.len());
        ctl.thaw();
        flushing
            .await
            .unwrap()
            .expect("the frozen rows land after the thaw");
        mutator.close().await.unwrap();
        let stored = count_rows(&plain, &name.to_string()).await.len();
        assert_eq!(stored, 9 + stuck.len() + others.len());
        hbase_it::drop_table(&plain, &name).await;
    })
    .await;
}

/// A 200 MB batch goes as many requests of about `max_request_size` (4 MiB) each, not one
/// request per server that the server refuses as too big; every put lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_of_200_mb_succeeds_in_several_requests() {
    bounded(300, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("multi_200mb");
        hbase_it::create_table(&client, &name, &["b100"]).await;
        let table = client.table(&name.to_string()).unwrap();
        let value = Bytes::from(vec![b'x'; 1 << 20]);
        let actions: Vec<hbase_client::Action> = (0..200u32)
            .map(|i| {
                hbase_client::Action::Put(Put::new(format!("b{i:03}")).add(
                    "cf",
                    "q",
                    value.clone(),
                ))
            })
            .collect();
        let before = client.stats().total(|s| s.multi_calls);
        for (i, r) in table.batch(&actions).await.into_iter().enumerate() {
            assert_eq!(
                r.unwrap_or_else(|e| panic!("put {i}: {e}")),
                hbase_client::ActionResult::Done
            );
        }
        let requests = client.stats().total(|s| s.multi_calls) - before;
        assert!(
            requests >= 50,
            "200 MiB in requests of at most 4 MiB: {requests} requests"
        );
        let got = table.get(Get::new("b199")).await.unwrap().expect("row");
        assert_eq!(got.value(b"cf", b"q").map(|v| v.len()), Some(1 << 20));
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A mixed batch (gets, puts, deletes, increments with nonces) across regions returns each
/// action's result at its own position.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_batch_results_come_in_caller_order() {
    bounded(120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("multi_mixed");
        hbase_it::create_table(&client, &name, &["m3", "m6"]).await;
        let table = client.table(&name.to_string()).unwrap();
        use hbase_client::{Action, ActionResult, Delete, Increment};
        let seed: Vec<Action> = (0..9u32)
            .map(|i| Action::Put(Put::new(format!("m{i}")).add("cf", "q", format!("old{i}"))))
            .collect();
        for r in table.batch(&seed).await {
            r.unwrap();
        }
        let mut actions = Vec::new();
        for i in (0..9u32).rev() {
            let row = format!("m{i}");
            actions.push(match i % 4 {
                0 => Action::Get(Get::new(row)),
                1 => Action::Put(Put::new(row).add("cf", "q", format!("new{i}"))),
                2 => Action::Delete(Delete::new(row)),
                _ => Action::Increment(Increment::new(row).add("cf", "n", i as i64)),
            });
        }
        let results = table.batch(&actions).await;
        for (k, (action, r)) in actions.iter().zip(&results).enumerate() {
            let i: u32 = std::str::from_utf8(&action.row()[1..])
                .unwrap()
                .parse()
                .unwrap();
            match (i % 4, r) {
                (0, Ok(ActionResult::Row(Some(row)))) => {
                    assert_eq!(
                        row.value(b"cf", b"q").unwrap(),
                        &format!("old{i}")[..],
                        "{k}"
                    )
                }
                (1 | 2, Ok(ActionResult::Done)) => {}
                (3, Ok(ActionResult::Row(Some(row)))) => assert_eq!(
                    row.value(b"cf", b"n").unwrap()[..],
                    (i as i64).to_be_bytes()[..],
                    "{k}"
                ),
                other => panic!("action {k} (row m{i}): {other:?}"),
            }
        }
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// The region names of the `RegionAction`s of a `MultiRequest` (field 1, whose region
/// specifier is field 1 with the name in its field 2).
fn multi_regions(param: &[u8]) -> Vec<Bytes> {
    use hbase_it::proxy::{proto_fields, Field};
    let field = |msg: &[u8], n: u32| {
        proto_fields(msg)
            .expect("well-formed")
            .into_iter()
            .filter_map(move |(f, v)| match v {
                Field::Bytes(b) if f == n => Some(Bytes::copy_from_slice(b)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    field(param, 1)
        .iter()
        .map(|ra| {
            let spec = field(ra, 1).pop().expect("a region specifier");
            field(&spec, 2).pop().expect("a region name")
        })
        .collect()
}

/// A batch sends at most `max_tasks_per_region` (default 1, Java's
/// `hbase.client.max.perregion.tasks`) requests for one region at a time, while a server's
/// second task goes to another region. Two regions on one server: region A gets 6 MiB (two
/// requests of at most 4 MiB), region B four small puts, A's first in the caller's order. With
/// the server's responses held at the proxy, the client fills its two tasks for that server
/// and must then wait: the two requests the server holds carry A once, and B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_sends_one_request_per_region_at_a_time() {
    bounded(240, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let admin = client.admin();
        let balancer = hbase_it::balancer_off(&admin).await;
        let name = hbase_it::unique_table("multi_perregion");
        hbase_it::create_table(&client, &name, &["m"]).await;
        let a = admin.region_for_row(&name, b"a").await.unwrap();
        let b = admin.region_for_row(&name, b"n").await.unwrap();
        let server = a.server.clone().expect("region A assigned");
        admin
            .move_region(&b.region, Some(&server))
            .await
            .expect("move region B to region A's server");
        let table = client.table(&name.to_string()).unwrap();
        // Both regions located (and B's move learnt) before responses are held.
        for row in ["a-warm", "n-warm"] {
            table.put(Put::new(row).add("cf", "q", "w")).await.unwrap();
        }
        let ctl = proxy.control(&server.address());

        let big = Bytes::from(vec![b'x'; 512 * 1024]);
        let mut actions: Vec<hbase_client::Action> = (0..12u32)
            .map(|i| {
                hbase_client::Action::Put(Put::new(format!("a{i:02}")).add("cf", "q", big.clone()))
            })
            .collect();
        actions.extend(
            (0..4u32).map(|i| {
                hbase_client::Action::Put(Put::new(format!("n{i}")).add("cf", "q", "small"))
            }),
        );
        ctl.record(|r| r.method == "Multi");
        ctl.hold_responses(true);
        let batch = {
            let table = table.clone();
            let actions = actions.clone();
            tokio::spawn(async move { table.batch(&actions).await })
        };
        // The server's two tasks are taken: nothing more is sent until an answer comes.
        while ctl.recorded().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let held: Vec<Vec<Bytes>> = ctl
            .recorded()
            .iter()
            .map(|r| multi_regions(&r.param))
            .collect();
        ctl.hold_responses(false);
        let names = |rs: &Vec<Bytes>| {
            rs.iter()
                .map(|r| String::from_utf8_lossy(r).into_owned())
                .collect::<Vec<_>>()
        };
        eprintln!(
            "requests held at the server: {:?}",
            held.iter().map(names).collect::<Vec<_>>()
        );
        let with_a = held.iter().filter(|rs| rs.contains(&a.region.name)).count();
        assert_eq!(
            with_a, 1,
            "requests for region A in flight at once (limit 1): {with_a}"
        );
        assert!(
            held.iter().any(|rs| rs == &vec![b.region.name.clone()]),
            "the second task went to region B alone"
        );

        for (i, r) in batch.await.unwrap().into_iter().enumerate() {
            assert_eq!(
                r.unwrap_or_else(|e| panic!("action {i}: {e}")),
                hbase_client::ActionResult::Done
            );
        }
        let all: Vec<Vec<Bytes>> = ctl
            .recorded()
            .iter()
            .map(|r| multi_regions(&r.param))
            .collect();
        let a_requests = all.iter().filter(|rs| rs.contains(&a.region.name)).count();
        assert!(a_requests >= 2, "6 MiB for region A in one request");
        let rows = count_rows(&client, &name.to_string()).await;
        assert_eq!(rows.len(), 2 + 16);
        hbase_it::drop_table(&client, &name).await;
        balancer.release().await;
    })
    .await;
}

/// A `mutate` dropped while it waits for room (the mutator holds its limit of unanswered
/// writes, the server frozen) gives back the bytes it took from the client's write budget:
/// a caller that wraps `mutate` in a timeout does not shrink the budget for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_dropped_while_waiting_gives_its_budget_back() {
    use futures_util::FutureExt;
    bounded(180, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(120))
                .rpc_timeout(Duration::from_secs(5))
        })
        .await;
        let name = hbase_it::unique_table("mut_cancel");
        hbase_it::create_table(&client, &name, &[]).await;
        let table = client.table(&name.to_string()).unwrap();
        table
            .put(Put::new("warm").add("cf", "q", "w"))
            .await
            .unwrap();
        let server = hbase_it::server_of(&client, &name, "warm").await.address();
        let ctl = proxy.control(&server);
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(4 * 1024),
            )
            .unwrap();
        ctl.set_freeze_new(true);
        ctl.freeze_existing();
        let value = Bytes::from(vec![b'v'; 1024]);
        // Writes are accepted until the mutator holds its limit of cut, unanswered buffers
        // (none is answered while frozen); the first `mutate` that does not complete on its
        // first poll waits for room, with its bytes taken from the budget.
        let mut accepted = 0usize;
        let waiting = loop {
            assert!(accepted < 10_000, "mutate never waited");
            let mut write = Box::pin(mutator.mutate(Put::new(format!("c{accepted:05}")).add(
                "cf",
                "q",
                value.clone(),
            )));
            let before = mutator.client_buffered_bytes();
            match (&mut write).now_or_never() {
                Some(r) => {
                    r.expect("buffered");
                    accepted += 1;
                }
                None => break (write, before),
            }
        };
        let (write, before) = waiting;
        assert!(
            mutator.client_buffered_bytes() > before,
            "the waiting mutate holds budget bytes"
        );
        drop(write);
        assert_eq!(
            mutator.client_buffered_bytes(),
            before,
            "a dropped mutate left its bytes in the budget"
        );
        ctl.set_freeze_new(false);
        ctl.thaw();
        mutator.close().await.expect("the accepted writes land");
        assert_eq!(
            mutator.client_buffered_bytes(),
            0,
            "the budget is empty once all is answered"
        );
        let rows = count_rows(&client, &name.to_string()).await;
        assert_eq!(rows.len(), 1 + accepted);
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}
