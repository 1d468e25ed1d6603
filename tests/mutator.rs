//! The BufferedMutator's contract, against the real local HBase: close racing writers loses
//! nothing and refuses what comes after; a panicking failure listener leaves flush and close
//! working; failures kept in memory are bounded; per-server concurrency keeps writes to other
//! servers flowing while one server is frozen (also a request held back to grow while writers
//! wait for room); writes to one row apply in buffered order, also under connection resets.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{
    BufferedMutator, Client, Delete, Error, ErrorKind, Get, Mutation, MutatorConfig, Put, Scan,
};
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
                        panic!("listener panics on {:?}", f.row());
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
                    assert!(failures.iter().all(|f| f.row().starts_with(b"bad-")));
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

/// Each failure carries the mutation that failed, as Java's `RetriesExhaustedWithDetailsException`
/// does: a refused put reports the put (with its cells), a refused delete the delete, also
/// when one row is deleted and then written in the same buffer. The listener and `close` both
/// see them. (Before, a failure carried only its row: a delete and a put of one row looked
/// alike.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_carries_its_put_or_delete() {
    bounded(120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_fail_kind");
        hbase_it::create_table(&client, &name, &[]).await;
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h2 = heard.clone();
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default()
                    .on_failure(move |f| h2.lock().unwrap().push(f.mutation().clone())),
            )
            .unwrap();
        // A family the table does not have: the server refuses both for good.
        mutator
            .mutate(Delete::new("same").family("nope"))
            .await
            .unwrap();
        mutator
            .mutate(
                Put::new("same")
                    .add("nope", "q1", "v")
                    .add("nope", "q2", ""),
            )
            .await
            .unwrap();
        mutator
            .mutate(Put::new("good").add("cf", "q", "v"))
            .await
            .unwrap();
        let kept = match mutator.close().await {
            Err(Error::MutationsFailed {
                failures,
                dropped: 0,
            }) => failures,
            other => panic!("expected the delete and the put to fail, got {other:?}"),
        };
        let kinds = |ms: &mut dyn Iterator<Item = &Mutation>| {
            let mut kinds: Vec<String> = ms
                .map(|m| match m {
                    Mutation::Put(p) => format!("put {:?} of {} cells", m.row(), p.len()),
                    Mutation::Delete(_) => format!("delete {:?}", m.row()),
                })
                .collect();
            kinds.sort();
            kinds
        };
        let expected = vec![
            "delete b\"same\"".to_string(),
            "put b\"same\" of 2 cells".to_string(),
        ];
        assert_eq!(kinds(&mut kept.iter().map(|f| f.mutation())), expected);
        assert!(kept.iter().all(|f| f.row() == f.mutation().row()));
        assert!(kept
            .iter()
            .all(|f| f.error().kind() == ErrorKind::DoNotRetry));
        assert!(
            kept[0].to_string().starts_with("delete of row same: ")
                || kept[0].to_string().starts_with("put of row same: "),
            "{}",
            kept[0]
        );
        assert_eq!(kinds(&mut heard.lock().unwrap().iter()), expected);
        assert_eq!(count_rows(&client, &name.to_string()).await.len(), 1);
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// Thousands of failures with the server's stack trace: the mutator keeps a bounded number,
/// counts the rest, and keeps the long message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_kept_are_bounded_and_counted() {
    bounded(120, async {
        let config = MutatorConfig::default()
            .write_buffer_size(64 * 1024)
            .max_failures_kept(100);
        failing_puts(
            "mut_fail_bound",
            config,
            5000,
            Bytes::from_static(b"v"),
            |result| match result {
                Err(Error::MutationsFailed { failures, dropped }) => {
                    assert_eq!(failures.len(), 100);
                    assert_eq!(dropped, 4900);
                    let long: Vec<usize> = failures
                        .iter()
                        .map(|f| f.error().remote().map_or(0, |r| r.message.len()))
                        .collect();
                    let summary = failures[0].error().remote().unwrap().summary().len();
                    // One copy of the full message; the others keep its summary.
                    assert!(
                        long.iter().filter(|&&l| l > summary).count() <= 1,
                        "{long:?}"
                    );
                }
                other => panic!("expected failures, got {other:?}"),
            },
        )
        .await;
    })
    .await;
}

/// Buffers `n` puts of `value` into a family the table lacks (each fails for good), hands
/// the flush's result to `check`, then closes the mutator (nothing failed since) and drops
/// the table.
async fn failing_puts(
    prefix: &str,
    config: MutatorConfig,
    n: u32,
    value: Bytes,
    check: impl FnOnce(hbase_client::Result<()>),
) {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table(prefix);
    hbase_it::create_table(&client, &name, &[]).await;
    let mutator = client.buffered_mutator(&name.to_string(), config).unwrap();
    for i in 0..n {
        mutator
            .mutate(Put::new(format!("bad-{i:05}")).add("nope", "q", value.clone()))
            .await
            .unwrap();
    }
    check(mutator.flush().await);
    mutator
        .close()
        .await
        .expect("nothing failed since the flush");
    hbase_it::drop_table(&client, &name).await;
}

/// Large puts failing en masse: the mutator keeps failures only while the mutations they hold
/// add up to less than its byte bound, so 200 failed puts of 100,000 bytes each are not all
/// copied and held (20 MB) under a bound of 1,000,000 bytes: 10 kept (the tenth takes the
/// kept bytes past the bound), 190 counted. Before the bound, all 200 were kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_kept_are_bounded_in_bytes_too() {
    bounded(120, async {
        let config = MutatorConfig::default()
            .write_buffer_size(1024 * 1024)
            .max_failure_bytes_kept(1_000_000);
        let value = Bytes::from(vec![b'x'; 100_000]);
        failing_puts(
            "mut_fail_bytes",
            config,
            200,
            value,
            |result| match result {
                Err(Error::MutationsFailed { failures, dropped }) => {
                    assert_eq!((failures.len(), dropped), (10, 190));
                    for f in &failures {
                        assert_eq!(f.error().kind(), ErrorKind::DoNotRetry, "{}", f.error());
                    }
                }
                other => panic!("expected failures, got {other:?}"),
            },
        )
        .await;
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
            Ok(()) => assert_eq!(got.value(b"cf", b"q").unwrap(), b"v0999"),
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
                    s2.lock().unwrap().push(f.row().clone());
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

/// A table of 9 regions (`k0` to `k8`), each region's prefix listed under its server, and a
/// server to freeze: one that holds some of them and not `hbase:meta`, while others hold the
/// rest.
async fn table_on_servers(
    plain: &Client,
    prefix: &str,
) -> (
    hbase_client::TableName,
    std::collections::BTreeMap<String, Vec<String>>,
    String,
) {
    let name = hbase_it::unique_table(prefix);
    let splits: Vec<String> = (1..9).map(|i| format!("k{i}")).collect();
    let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
    hbase_it::create_table(plain, &name, &splits).await;
    let meta = plain.admin().meta_server().await.unwrap().address();
    let mut by_server: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for i in 0..9 {
        let prefix = format!("k{i}");
        let server = hbase_it::server_of(plain, &name, &prefix).await.address();
        by_server.entry(server).or_default().push(prefix);
    }
    let frozen = by_server
        .keys()
        .find(|s| **s != meta && by_server.len() > 1)
        .cloned()
        .expect("regions on a server other than meta's, and on others");
    (name, by_server, frozen)
}

/// Waits until every one of `rows` of `table` is readable.
async fn wait_until_readable(plain: &Client, table: &str, rows: &[String]) {
    let table = plain.table(table).unwrap();
    loop {
        let actions: Vec<hbase_client::Action> = rows
            .iter()
            .map(|r| hbase_client::Action::Get(Get::new(r.clone())))
            .collect();
        let present = table
            .batch(&actions)
            .await
            .into_iter()
            .filter(|r| matches!(r, Ok(hbase_client::ActionResult::Row(Some(_)))))
            .count();
        if present == rows.len() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One server frozen behind the proxy (its regions in effect in transition): writes to the
/// regions of the other servers, buffered after the frozen ones in the same mutator, are
/// applied while it stays frozen; after the thaw, close applies everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_server_does_not_stall_the_other_regions() {
    bounded(240, async {
        let plain = hbase_it::client().await;
        let (name, by_server, frozen) = table_on_servers(&plain, "mut_frozen").await;
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
        wait_until_readable(&plain, &name.to_string(), &others).await;
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

/// A small request held back to grow while writers wait for the write budget (see the
/// dispatcher's `lingers`) still leaves when its hold ends, although nothing else happens: the
/// only other request in flight goes to a frozen server, and every writer waits. (Found in
/// review: the hold was checked only at the next dispatch pass, which here would have come
/// only when the frozen request failed, after the operation timeout.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_request_leaves_while_the_only_other_request_is_frozen() {
    bounded(100, async {
        let plain = hbase_it::client().await;
        let (name, by_server, frozen) = table_on_servers(&plain, "mut_hold").await;
        let open = by_server
            .keys()
            .find(|s| **s != frozen)
            .cloned()
            .expect("another server");
        let proxy = FaultProxy::new();
        // The frozen server's request keeps retrying for longer than this test may run.
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(200))
                .rpc_timeout(Duration::from_secs(5))
                .write_buffer_limit(64 * 1024)
        })
        .await;
        let stuck_writer = client
            .buffered_mutator(&name.to_string(), MutatorConfig::default())
            .unwrap();
        let writer = client
            .buffered_mutator(&name.to_string(), MutatorConfig::default())
            .unwrap();
        // Locations cached and connections open everywhere.
        for i in 0..9 {
            writer
                .mutate(Put::new(format!("k{i}-warm")).add("cf", "q", "v"))
                .await
                .unwrap();
        }
        writer.flush().await.unwrap();
        let ctl = proxy.control(&hbase_it::map_address(&frozen));
        ctl.set_freeze_new(true);
        ctl.freeze_existing();
        // A request to the frozen server, in flight until the thaw.
        let stuck_prefix = by_server[&frozen][0].clone();
        for i in 0..20 {
            stuck_writer
                .mutate(Put::new(format!("{stuck_prefix}-stuck-{i:02}")).add("cf", "q", "v"))
                .await
                .unwrap();
        }
        let s2 = stuck_writer.clone();
        let stuck_flush = tokio::spawn(async move { s2.flush().await });
        // A few rows to the open server, buffered.
        let held_prefix = by_server[&open][0].clone();
        let held: Vec<String> = (0..20)
            .map(|i| format!("{held_prefix}-held-{i:02}"))
            .collect();
        for row in &held {
            writer
                .mutate(Put::new(row.clone()).add("cf", "q", "v"))
                .await
                .unwrap();
        }
        // A put larger than the budget's room: the writer queues for room (so writers wait),
        // then cuts its buffer, the rows above, which the dispatcher holds back to grow.
        let w2 = writer.clone();
        let big_row = format!("{held_prefix}-big");
        let big = tokio::spawn(async move {
            w2.mutate(Put::new(big_row).add("cf", "q", vec![7u8; 60 * 1024]))
                .await
        });
        // The event: every held row readable while the frozen server stays frozen.
        wait_until_readable(&plain, &name.to_string(), &held).await;
        assert!(
            !stuck_flush.is_finished(),
            "the frozen server's writes are still pending"
        );
        ctl.thaw();
        stuck_flush
            .await
            .unwrap()
            .expect("the frozen rows land after the thaw");
        big.await
            .unwrap()
            .expect("the large put is buffered once there is room");
        writer.close().await.unwrap();
        stuck_writer.close().await.unwrap();
        let stored = count_rows(&plain, &name.to_string()).await.len();
        assert_eq!(stored, 9 + 20 + held.len() + 1);
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
                        format!("old{i}").as_bytes(),
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

/// The length-delimited values of field `n` of a protobuf message.
fn bytes_fields(msg: &[u8], n: u32) -> Vec<Bytes> {
    use hbase_it::proxy::{proto_fields, Field};
    proto_fields(msg)
        .expect("well-formed")
        .into_iter()
        .filter_map(move |(f, v)| match v {
            Field::Bytes(b) if f == n => Some(Bytes::copy_from_slice(b)),
            _ => None,
        })
        .collect()
}

/// The region names of the `RegionAction`s of a `MultiRequest` (field 1, whose region
/// specifier is field 1 with the name in its field 2).
fn multi_regions(param: &[u8]) -> Vec<Bytes> {
    bytes_fields(param, 1)
        .iter()
        .map(|ra| {
            let spec = bytes_fields(ra, 1).pop().expect("a region specifier");
            bytes_fields(&spec, 2).pop().expect("a region name")
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

/// The rows of each action of a `Multi` request, in request order.
fn multi_rows(param: &[u8]) -> Vec<Bytes> {
    // MultiRequest.regionAction(1) → RegionAction.action(3) → Action.mutation(2) →
    // MutationProto.row(1).
    bytes_fields(param, 1)
        .iter()
        .flat_map(|ra| bytes_fields(ra, 3))
        .map(|action| {
            let mutation = bytes_fields(&action, 2).pop().expect("a mutation");
            bytes_fields(&mutation, 1).pop().expect("a row")
        })
        .collect()
}

/// 5,000 small puts (rows `prefix` + 0000..4999, `cf:q` = "v") through a new mutator of
/// `client` on `table`, with a buffer they fit in whatever their size, then its close: one
/// flush.
async fn flush_5000_puts_once(client: &Client, table: &str, prefix: &str) {
    let mutator = client
        .buffered_mutator(table, MutatorConfig::default().write_buffer_size(64 << 20))
        .unwrap();
    for i in 0..5000u32 {
        mutator
            .mutate(Put::new(format!("{prefix}{i:04}")).add("cf", "q", "v"))
            .await
            .unwrap();
    }
    mutator.close().await.unwrap();
}

/// Requests carry at most `max_request_rows` actions (default 2,048, as Java's
/// `hbase.client.max.perrequest.rows`): a region server logs every `Multi` of more than 5,000
/// rows as a large batch (HBASE-18023) and can be set to refuse them. 5,000 small puts to one
/// region, through a batch and through a mutator flushed once, go as requests of at most
/// 2,048 rows (the batch's: 2,048, 2,048 and 904); with the limit set to 100, a batch of 500
/// goes as five requests of 100. Every row lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_carry_at_most_max_request_rows_actions() {
    bounded(240, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        assert_eq!(client.config().max_request_rows(), 2048);
        let (name, table, ctl) =
            hbase_it::one_region_table(&client, &proxy, "multi_rows_cap").await;
        let rows_per_request = |ctl: &hbase_it::proxy::ProxyControl| -> Vec<usize> {
            ctl.recorded()
                .iter()
                .map(|r| multi_rows(&r.param).len())
                .collect()
        };

        ctl.record(|r| r.method == "Multi");
        let actions: Vec<hbase_client::Action> = (0..5000u32)
            .map(|i| hbase_client::Action::Put(Put::new(format!("b{i:04}")).add("cf", "q", "v")))
            .collect();
        for (i, r) in table.batch(&actions).await.into_iter().enumerate() {
            assert_eq!(
                r.unwrap_or_else(|e| panic!("put {i}: {e}")),
                hbase_client::ActionResult::Done
            );
        }
        let batch_requests = rows_per_request(&ctl);
        assert_eq!(
            batch_requests,
            vec![2048, 2048, 904],
            "rows per batch request"
        );

        ctl.record(|r| r.method == "Multi");
        flush_5000_puts_once(&client, &name.to_string(), "m").await;
        let mutator_requests = rows_per_request(&ctl);
        eprintln!("rows per mutator request: {mutator_requests:?}");
        assert_eq!(mutator_requests.iter().sum::<usize>(), 5000);
        assert!(
            mutator_requests.len() >= 3 && mutator_requests.iter().all(|&n| n <= 2048),
            "rows per mutator request: {mutator_requests:?}"
        );
        assert_eq!(count_rows(&client, &name.to_string()).await.len(), 10_001);

        let capped = hbase_it::proxied_client(&proxy, |b| b.max_request_rows(100)).await;
        let table = capped.table(&name.to_string()).unwrap();
        table
            .put(Put::new("warm").add("cf", "q", "w"))
            .await
            .unwrap();
        ctl.record(|r| r.method == "Multi");
        for r in table.batch(&actions[..500]).await {
            r.unwrap();
        }
        assert_eq!(rows_per_request(&ctl), vec![100; 5]);
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// With one write buffer size, Java's BufferedMutator and ours flush after the same puts: both
/// add up Java's heap sizes (`Mutation::heap_size`, `Mutation.heapSize()` in Java) and flush
/// once they pass the buffer's size. 1,000 YCSB-shaped puts (in family `cf`: 2,304 bytes each
/// by Java's count) into a 1 MiB buffer: flushes after the 456th and the 912th on both sides.
/// (Before, ours counted the memory a put holds here, about 2,600 bytes and its bookkeeping,
/// and flushed after fewer puts.) The Java side is `tests/java/interop/HeapSizes.java`; each side sees a flush
/// as its buffered size falling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffer_flushes_after_as_many_puts_as_javas() {
    const BUFFER: usize = 1 << 20;
    const PUTS: u32 = 1000;
    bounded(240, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_flush_points");
        hbase_it::create_table(&client, &name, &[]).await;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(BUFFER),
            )
            .unwrap();
        let mut ours = String::from("flushes");
        for i in 1..=PUTS {
            let mut put = Put::with_capacity(format!("user{i:019}"), 10);
            for f in 0..10 {
                put = put.add("cf", format!("field{f}"), [b'v'; 100]);
            }
            let heap = put.heap_size();
            let before = mutator.buffered_heap_size();
            mutator.mutate(put).await.unwrap();
            if mutator.buffered_heap_size() < before + heap {
                ours += &format!(" {i}");
            }
        }
        mutator.close().await.unwrap();
        let repo = env!("CARGO_MANIFEST_DIR");
        let java = hbase_it::stdout_of(
            "the Java side (HeapSizes.java --flushes)",
            std::process::Command::new(format!("{repo}/tests/java/interop/run"))
                .args(["--program", "HeapSizes.java", "--zk", &hbase_it::zk()])
                .args(["--flushes", &name.to_string()])
                .args([BUFFER.to_string(), PUTS.to_string()])
                .env(
                    "HBASE_INTEROP_JAVA_OPTS",
                    hbase_it::java_resolver_opts().join(" "),
                ),
        );
        assert_eq!(ours, "flushes 456 912");
        assert_eq!(java.trim_end(), ours, "Java's flush points, and ours");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// The Java client is the reference for the size a flush's requests are cut at: its 2.x
/// `BufferedMutator` (AsyncProcess, `hbase.client.max.perrequest.rows`) sends 5,000 small puts
/// to one region as Multis of 2,048, 2,048 and 904 actions, one after another. The Java side
/// (hbase-shaded-client, `tests/java/interop/Interop.java`) counts its Multis and their actions
/// with the Java client's own connection metrics; ours, the same 5,000 puts through a mutator
/// flushed once, are counted at the proxy. Java's largest request is ours (2,048): its first
/// request has no other in flight, so it is always cut at the cap. Its later ones are not
/// compared: its flush can submit the next request before the previous one's task has left
/// the region's count, and skips rows until it has (in 7 runs of 12, e.g. 2,048, 1,551 and
/// 1,401), and a retry would count twice. Ours are exactly 2,048, 2,048 and 904.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_of_5000_puts_is_cut_at_the_size_javas_mutator_cuts_at() {
    bounded(300, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let (name, _table, ctl) =
            hbase_it::one_region_table(&client, &proxy, "java_rows_cap").await;

        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/it-java");
        std::fs::create_dir_all(&dir).unwrap();
        let spec_path = dir.join(format!("{name}-multis.spec"));
        let log_path = dir.join(format!("{name}-multis.log"));
        let mut spec = vec![
            format!("table {name}"),
            format!("log {}", log_path.display()),
            "mutator-begin".to_string(),
        ];
        for i in 0..5000u32 {
            let row = format!("j{i:04}");
            let row = hbase_it::spec_bytes(row.as_bytes());
            spec.push(format!("put {row} - x6366 x71 - x76"));
        }
        spec.push("mutator-end".into());
        spec.push("multis".into());
        std::fs::write(&spec_path, spec.join("\n") + "\n").unwrap();
        tokio::task::spawn_blocking(move || hbase_it::run_java_interop(&spec_path))
            .await
            .unwrap();
        let log = std::fs::read_to_string(&log_path).unwrap();
        let java: Vec<usize> = log
            .lines()
            .find_map(|l| l.strip_prefix("actions"))
            .unwrap_or_else(|| panic!("no actions line in Java's log:\n{log}"))
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        assert!(
            log.lines().any(|l| l == format!("multis {}", java.len())),
            "Java's log: {log}"
        );

        ctl.record(|r| r.method == "Multi");
        flush_5000_puts_once(&client, &name.to_string(), "r").await;
        let mut ours: Vec<usize> = ctl
            .recorded()
            .iter()
            .map(|r| multi_rows(&r.param).len())
            .collect();
        ours.sort_unstable();
        eprintln!("actions per Multi: Java {java:?}, ours {ours:?}");
        assert_eq!(
            ours,
            vec![904, 2048, 2048],
            "actions per Multi, ours (Java's: {java:?})"
        );
        assert_eq!(
            java.iter().max(),
            ours.iter().max(),
            "the largest Multi: Java's {java:?}, ours {ours:?}"
        );
        // Both wrote every row: "warm", and 5,000 each.
        assert_eq!(count_rows(&client, &name.to_string()).await.len(), 10_001);
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A mutator of `client` on `table` with `order`'s tagged puts buffered, and `ctl` recording
/// Multis and holding the server's answers: ready for [`in_flight_during_flush`].
async fn buffered_with_answers_held(
    client: &Client,
    table: &str,
    order: &[(&str, &str)],
    ctl: &hbase_it::proxy::ProxyControl,
) -> BufferedMutator {
    let mutator = client
        .buffered_mutator(table, MutatorConfig::default())
        .unwrap();
    for &(row, tag) in order {
        mutator.mutate(tagged_put(row, tag)).await.unwrap();
    }
    ctl.record(|r| r.method == "Multi");
    ctl.hold_responses(true);
    mutator
}

/// What a flush had in flight while the server's answers were held.
struct InFlight {
    /// The rows of each request the proxy had seen.
    rows: Vec<Vec<Bytes>>,
    /// The `Multi` requests the client had queued to be sent by then (since it was made):
    /// a request queued in the same step as the ones seen is counted even if its bytes have
    /// not reached the proxy yet, so this does not depend on how fast they travel.
    queued: u64,
}

/// Flushes `mutator` (of `client`) while `ctl` holds the server's answers (recording Multis):
/// what was in flight once at least `requests` requests are recorded; then releases the
/// answers, and waits for the flush and the mutator's close.
async fn in_flight_during_flush(
    ctl: &hbase_it::proxy::ProxyControl,
    client: &Client,
    mutator: &BufferedMutator,
    requests: usize,
) -> InFlight {
    let flush = tokio::spawn({
        let mutator = mutator.clone();
        async move { mutator.flush().await }
    });
    while ctl.recorded().len() < requests {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let queued = client.stats().servers.iter().map(|s| s.multi_calls).sum();
    let rows = ctl
        .recorded()
        .iter()
        .map(|r| multi_rows(&r.param))
        .collect();
    ctl.hold_responses(false);
    flush.await.unwrap().unwrap();
    mutator.close().await.unwrap();
    InFlight { rows, queued }
}

/// A mutator's dispatcher cuts its requests at `max_request_rows` itself, not only the batch
/// sender below it: with two requests in flight per region, a row written twice in one flush
/// must not be in both. 300 puts to one region (row r000 again at position 150), rows capped
/// at 100, the server's answers held at the proxy: the two requests in flight carry rows
/// 0-99 and 100-149 (the second ends where the row of the first comes again). Cut at 300 by
/// the dispatcher and split by the sender instead, they would carry 100 rows each, r000 in
/// both. Released, the rest follows, and r000 holds its second value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutators_requests_are_cut_at_max_request_rows_before_they_are_sent() {
    bounded(240, async {
        let proxy = FaultProxy::new();
        let client =
            hbase_it::proxied_client(&proxy, |b| b.max_request_rows(100).max_tasks_per_region(2))
                .await;
        let (name, table, ctl) =
            hbase_it::one_region_table(&client, &proxy, "mutator_rows_cap").await;
        ctl.record(|r| r.method == "Multi");
        ctl.hold_responses(true);
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(64 << 20),
            )
            .unwrap();
        for i in 0..300u32 {
            let put = if i == 150 {
                Put::new("r000").add("cf", "q", "second")
            } else {
                Put::new(format!("r{i:03}")).add("cf", "q", "first")
            };
            mutator.mutate(put).await.unwrap();
        }
        let in_flight = in_flight_during_flush(&ctl, &client, &mutator, 2).await;
        assert_eq!(
            in_flight.queued, 2,
            "Multis queued while the answers were held"
        );
        let held = in_flight.rows;
        // Sent at once, they may reach the server in either order.
        let mut sizes: Vec<usize> = held.iter().map(Vec::len).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, vec![50, 100], "rows of the two requests in flight");
        let with_r000 = held
            .iter()
            .filter(|rows| rows.iter().any(|r| &r[..] == b"r000"))
            .count();
        assert_eq!(with_r000, 1, "requests in flight with row r000");
        let got = table.get(Get::new("r000")).await.unwrap().expect("row");
        assert_eq!(got.value(b"cf", b"q"), Some(&b"second"[..]));
        assert_eq!(count_rows(&client, &name.to_string()).await.len(), 300);
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A buffer that fills while the mutator already has `PENDING_BUFFERS` cuts unanswered is not
/// cut by the write that filled it (that would hold a fifth buffer's memory in flight); it is
/// cut by the answer that makes room, with no further write, flush or close. (Java's mutator
/// sends a full buffer from the write that filled it, waiting there.) The server's answers are
/// held at the proxy until a buffer is full and still buffered, then released; nothing else
/// touches the mutator until every row is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_buffer_is_cut_when_answers_make_room() {
    bounded(240, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let (name, _table, ctl) =
            hbase_it::one_region_table(&client, &proxy, "mutator_full_buffer").await;
        ctl.hold_responses(true);
        let size = 4096;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(size),
            )
            .unwrap();
        let mut written = 0usize;
        while mutator.buffered_heap_size() <= size {
            mutator
                .mutate(tagged_put(&format!("r{written:04}"), "t"))
                .await
                .unwrap();
            written += 1;
            assert!(written < 1000, "no buffer stayed full in {written} puts");
        }
        let cut = mutator.unanswered_mutations();
        assert!(cut > 0, "earlier buffers were cut");
        ctl.hold_responses(false);
        while mutator.buffered_bytes() > 0 || mutator.unanswered_mutations() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Beside the table's warm-up row.
        let ours = count_rows(&client, &name.to_string())
            .await
            .into_iter()
            .filter(|r| r.starts_with(b"r"))
            .count();
        assert_eq!(ours, written);
        mutator.close().await.unwrap();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A put of `row` whose value is `tag:` and 1 KiB: puts of equal tags' lengths are of one size.
fn tagged_put(row: &str, tag: &str) -> Put {
    Put::new(row.to_string()).add("cf", "q", format!("{tag}:{}", "v".repeat(1024)))
}

/// The heap size every `tagged_put` of `order` has (asserted equal): what a request's size
/// counts.
fn one_heap_size(order: &[(&str, &str)]) -> usize {
    let counted = |&(r, t): &(&str, &str)| tagged_put(r, t).heap_size();
    let size = counted(&order[0]);
    assert!(order.iter().all(|o| counted(o) == size));
    size
}

/// The dispatcher cuts a request by bytes as the sender below it does: an entry that would
/// take the request past `max_request_size` goes in the next one. Cut one entry later (the
/// dispatcher's rule before), the sender split the request again there and sent both parts at
/// once: with two requests in flight per region, a row's two writes were in flight together.
/// Buffered: k, a, k again (same size s each), requests of 2.5 s, the server's answers held:
/// in flight are k and a only; released, the second k follows, and k holds its second value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_cut_by_bytes_is_not_split_again_below() {
    bounded(240, async {
        let order = [("k", "k1"), ("a", "a_"), ("k", "k2")];
        let size = one_heap_size(&order);
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.max_tasks_per_region(2)
                .max_request_size(2 * size + size / 2)
        })
        .await;
        let (name, table, ctl) =
            hbase_it::one_region_table(&client, &proxy, "mutator_byte_cut").await;
        let mutator = buffered_with_answers_held(&client, &name.to_string(), &order, &ctl).await;
        // Before, the sender queued both parts in one step: by the time the first is seen,
        // the client has queued the second too.
        let in_flight = in_flight_during_flush(&ctl, &client, &mutator, 1).await;
        assert_eq!(
            in_flight.queued, 1,
            "Multis queued while the first was held"
        );
        assert_eq!(
            in_flight.rows,
            vec![vec![Bytes::from_static(b"k"), Bytes::from_static(b"a")]],
            "requests in flight while the first was held"
        );
        let got = table.get(Get::new("k")).await.unwrap().expect("row k");
        assert!(got.value(b"cf", b"q").unwrap().starts_with(b"k2:"));
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// With two requests in flight per region allowed, a row's writes still go one request at a
/// time, in buffered order. Buffered: k, a, b, k again, c (1 KiB each, one region), with
/// requests of two puts' size and the server's answers held at the proxy. One request takes k
/// and a; the other takes b and ends at the second k (k is in the first request), so c waits
/// behind it. Released, the rest goes, and k holds its second value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_in_flight_ends_its_regions_next_request() {
    bounded(240, async {
        let order = [
            ("k", "k1"),
            ("a", "a_"),
            ("b", "b_"),
            ("k", "k2"),
            ("c", "c_"),
        ];
        // All five are the same size: exactly two fill a request.
        let size = one_heap_size(&order);
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.max_tasks_per_region(2).max_request_size(2 * size)
        })
        .await;
        let name = hbase_it::unique_table("mutator_row_order");
        hbase_it::create_table(&client, &name, &["m"]).await;
        let table = client.table(&name.to_string()).unwrap();
        table
            .put(Put::new("warm").add("cf", "q", "w"))
            .await
            .unwrap();
        // Every row is below the split point "m": one region.
        let region = client.admin().region_for_row(&name, b"a").await.unwrap();
        let server = region.server.clone().expect("the region is assigned");
        let ctl = proxy.control(&hbase_it::map_address(&server.address()));
        let mutator = buffered_with_answers_held(&client, &name.to_string(), &order, &ctl).await;
        let in_flight = in_flight_during_flush(&ctl, &client, &mutator, 2).await;
        assert_eq!(
            in_flight.queued, 2,
            "Multis queued while the answers were held"
        );
        let strings = |rows: &[Bytes]| -> Vec<String> {
            rows.iter()
                .map(|r| String::from_utf8_lossy(r).into_owned())
                .collect()
        };
        // The two requests go out concurrently, in either order.
        let mut held: Vec<Vec<String>> = in_flight.rows.iter().map(|r| strings(r)).collect();
        held.sort();
        assert_eq!(held, [vec!["b"], vec!["k", "a"]], "the requests held");
        let rest: Vec<String> = ctl.recorded()[2..]
            .iter()
            .flat_map(|r| strings(&multi_rows(&r.param)))
            .collect();
        assert_eq!(rest, ["k", "c"], "sent after the answers");
        let k = table.get(Get::new("k")).await.unwrap().expect("row k");
        let second = format!("k2:{}", "v".repeat(1024));
        assert_eq!(k.value(b"cf", b"q"), Some(second.as_bytes()));
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A row's write follows its unanswered earlier write into the queue of the region that
/// split since, instead of racing it through the daughter's. The client's region cache still
/// has the parent when `k = v1` is buffered, and that Multi is swallowed at the proxy (the
/// server never sees it, the client hears nothing until its call times out). A get of `k`
/// meanwhile meets the split (NotServingRegion) and teaches the cache the daughter, so `k = v2`
/// is located there. Sent to the daughter at once, v2 would be applied first and v1's retry
/// after it; held behind v1, v2 is applied last and `k` ends as v2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rows_write_waits_behind_its_earlier_write_across_a_split() {
    bounded(240, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(120))
                .rpc_timeout(Duration::from_secs(5))
        })
        .await;
        let name = hbase_it::unique_table("mutator_split_order");
        hbase_it::create_table(&client, &name, &[]).await;
        let table = client.table(&name.to_string()).unwrap();
        let value = |v: &str| Put::new("k").add("cf", "q", v);
        table.put(value("v0")).await.unwrap();
        let parent = client.admin().region_for_row(&name, b"k").await.unwrap();
        // Split by another client: this one's cache keeps the parent.
        let direct = hbase_it::client().await;
        let (_, right) = direct
            .admin()
            .with_timeout(Duration::from_secs(90))
            .split_table_at(&name, b"d")
            .await
            .unwrap();
        assert_ne!(right.region.name, parent.region.name);
        let server = parent.server.clone().expect("the parent was assigned");
        let ctl = proxy.control(&hbase_it::map_address(&server.address()));
        ctl.swallow_requests(1, |r| r.method == "Multi");
        let mutator = client
            .buffered_mutator(&name.to_string(), MutatorConfig::default())
            .unwrap();
        mutator.mutate(value("v1")).await.unwrap();
        let m1 = mutator.clone();
        let first = tokio::spawn(async move { m1.flush().await });
        while ctl.swallowed() < 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The cache learns the daughter: the get is answered NotServingRegion by the parent's
        // server, looks `k` up again and reads the daughter.
        let seen = table.get(Get::new("k")).await.unwrap().expect("row k");
        assert_eq!(seen.value(b"cf", b"q"), Some(&b"v0"[..]));
        let now = client.admin().region_for_row(&name, b"k").await.unwrap();
        assert_eq!(now.region.name, right.region.name, "k is in the daughter");
        mutator.mutate(value("v2")).await.unwrap();
        mutator.flush().await.unwrap();
        first.await.unwrap().unwrap();
        let k = table.get(Get::new("k")).await.unwrap().expect("row k");
        assert_eq!(
            k.value(b"cf", b"q"),
            Some(&b"v2"[..]),
            "the last write applied last"
        );
        mutator.close().await.unwrap();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// The writes of many mutators of one client and table share requests. 100 mutators each
/// cut one row into one region while that region's first request (the first mutator's row)
/// is held at the proxy. Released, the 99 waiting rows leave together: at most two more
/// requests (one formed from what was placed when the answer came, one for rows a dispatch
/// pass was still placing then), where a dispatcher per mutator sends one request each
/// (100 in all). Every row is in HBase.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_of_many_mutators_share_requests() {
    bounded(180, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let name = hbase_it::unique_table("shared_dispatch");
        hbase_it::create_table(&client, &name, &[]).await;
        let region = client.admin().region_for_row(&name, b"r").await.unwrap();
        let server = region.server.clone().expect("region assigned");
        let table = client.table(&name.to_string()).unwrap();
        // Located before responses are held.
        table.put(Put::new("warm").add("cf", "q", "w")).await.unwrap();
        let ctl = proxy.control(&server.address());
        ctl.record(|r| r.method == "Multi");
        ctl.hold_responses(true);
        // One mutation per buffer: each `mutate` cuts its row at once.
        let config = MutatorConfig::default().max_mutations(1);
        let mutators: Vec<_> = (0..100)
            .map(|_| {
                client
                    .buffered_mutator(&name.to_string(), config.clone())
                    .unwrap()
            })
            .collect();
        let put = |i: usize| Put::new(format!("r{i:03}")).add("cf", "q", "v");
        mutators[0].mutate(put(0)).await.unwrap();
        while ctl.recorded().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for (i, m) in mutators.iter().enumerate().skip(1) {
            m.mutate(put(i)).await.unwrap();
        }
        for m in &mutators {
            assert_eq!(m.unanswered_mutations(), 1, "each mutator cut its row");
        }
        let held = ctl.recorded().len();
        ctl.hold_responses(false);
        for m in &mutators {
            m.close().await.unwrap();
        }
        let multis = ctl.recorded().len();
        eprintln!("Multi requests: {held} while the first was held, {multis} in all");
        assert!(
            multis <= 3,
            "100 mutators' rows sent in {multis} Multi requests (at most 3: the held one, then the rest together)"
        );
        let rows = count_rows(&client, &name.to_string()).await;
        assert_eq!(rows.len(), 100 + 1);
        hbase_it::drop_table(&client, &name).await;
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

/// A region moves off a frozen server while its writes wait behind that server's requests
/// (the frozen server's two task slots held by writes to its other regions): the region's
/// queue follows it, so its writes, and new ones to it, land on the new server while the
/// frozen server's own writes are still unanswered. (Before, the queue kept counting against
/// the old server's slots, so its writes waited until the frozen writes failed for good.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_moved_off_a_frozen_server_takes_its_queue_along() {
    bounded(400, async {
        let plain = hbase_it::client().await;
        let admin = plain.admin();
        let balancer = hbase_it::balancer_off(&admin).await;
        let name = hbase_it::unique_table("mut_moved");
        hbase_it::create_table(&plain, &name, &["b", "c"]).await;
        let meta = admin.meta_server().await.unwrap();
        let servers = admin.region_servers().await.unwrap();
        let frozen = servers
            .iter()
            .find(|s| s.address() != meta.address())
            .cloned()
            .expect("a server without meta");
        let dest = servers
            .iter()
            .find(|s| s.address() != frozen.address())
            .cloned()
            .expect("a second server");
        // Regions a, b and c all on the server to be frozen.
        let regions = admin.list_regions(&name).await.unwrap();
        for r in &regions {
            admin.move_region(&r.region, Some(&frozen)).await.unwrap();
        }
        let proxy = FaultProxy::new();
        // Requests of 8 KiB: each region's stuck rows make more than one request. Retries
        // without end: the frozen writes fail only when the operation timeout passes.
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(150))
                .rpc_timeout(Duration::from_secs(5))
                .retries(10_000)
                .max_request_size(8 * 1024)
        })
        .await;
        let failures: Arc<Mutex<Vec<String>>> = Arc::default();
        let f2 = failures.clone();
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default()
                    .write_buffer_size(1 << 20)
                    .on_failure(move |f| {
                        f2.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                            "{:?}: {}",
                            f.row(),
                            f.error()
                        ))
                    }),
            )
            .unwrap();
        for p in ["a", "b", "c"] {
            mutator
                .mutate(Put::new(format!("{p}-warm")).add("cf", "q", "v"))
                .await
                .unwrap();
        }
        mutator.flush().await.unwrap();
        let ctl = proxy.control(&hbase_it::map_address(&frozen.address()));
        ctl.set_freeze_new(true);
        ctl.freeze_existing();
        let value = Bytes::from(vec![b'v'; 1024]);
        let rows = |p: &str, what: &str, n: usize| -> Vec<String> {
            (0..n).map(|i| format!("{p}-{what}-{i:03}")).collect()
        };
        // In buffered order: a's rows (three requests' worth), then b's and c's (more than one
        // request each). a's first request and b's first take the frozen server's two slots;
        // c waits for a slot, and so does the rest of a.
        let (a, b, c) = (
            rows("a", "stuck", 24),
            rows("b", "stuck", 12),
            rows("c", "stuck", 12),
        );
        for row in a.iter().chain(&b).chain(&c) {
            mutator
                .mutate(Put::new(row.clone()).add("cf", "q", value.clone()))
                .await
                .unwrap();
        }
        let m2 = mutator.clone();
        let flushing = tokio::spawn(async move { m2.flush().await });
        // Region a moves (the master reaches the server; only this client's connections are
        // frozen). a's request times out, is located again and lands on the new server.
        let region_a = regions
            .iter()
            .find(|r| r.region.contains(b"a"))
            .expect("region a");
        assert_eq!(
            admin
                .move_region(&region_a.region, Some(&dest))
                .await
                .unwrap(),
            dest
        );
        // The event: all of a's rows stored. It must come while b's and c's writes are still
        // unanswered (nothing failed, the flush still waits).
        wait_until_readable(&plain, &name.to_string(), &a).await;
        assert_eq!(
            *failures.lock().unwrap(),
            Vec::<String>::new(),
            "a's writes waited until the frozen server's writes failed"
        );
        assert!(
            !flushing.is_finished(),
            "b's and c's writes are still pending"
        );
        // New writes to the moved region: acknowledged while the server stays frozen.
        let fresh = rows("a", "new", 24);
        for row in &fresh {
            mutator
                .mutate(Put::new(row.clone()).add("cf", "q", value.clone()))
                .await
                .unwrap();
        }
        let m3 = mutator.clone();
        let flushing_fresh = tokio::spawn(async move { m3.flush().await });
        wait_until_readable(&plain, &name.to_string(), &fresh).await;
        assert_eq!(*failures.lock().unwrap(), Vec::<String>::new());
        assert!(
            mutator.unanswered_mutations() >= b.len() + c.len(),
            "b's and c's writes wait for the frozen server"
        );
        ctl.thaw();
        flushing
            .await
            .unwrap()
            .expect("b and c land after the thaw");
        flushing_fresh.await.unwrap().expect("nothing failed");
        mutator.close().await.unwrap();
        let stored = count_rows(&plain, &name.to_string()).await.len();
        assert_eq!(stored, 3 + a.len() + b.len() + c.len() + fresh.len());
        hbase_it::drop_table(&plain, &name).await;
        balancer.release().await;
    })
    .await;
}

/// A multi-thread runtime (for a test that runs the mutator's tasks on another one), a client
/// on it, and a new table.
fn runtime_with_table(prefix: &str) -> (tokio::runtime::Runtime, Client, hbase_client::TableName) {
    let outer = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (client, name) = outer.block_on(async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table(prefix);
        hbase_it::create_table(&client, &name, &[]).await;
        (client, name)
    });
    (outer, client, name)
}

/// `flush`'s result when only the write to `row` failed, as not sent.
fn assert_only_row_failed_unsent(flushed: hbase_client::Result<()>) {
    match flushed {
        Err(Error::MutationsFailed { failures, dropped }) => {
            assert_eq!((failures.len(), dropped), (1, 0));
            assert_eq!(&failures[0].row()[..], b"row");
            assert!(
                matches!(failures[0].error(), Error::MutatorClosed { .. }),
                "not sent: {}",
                failures[0].error()
            );
        }
        other => panic!("expected the write to `row` to fail as not sent, got {other:?}"),
    }
}

/// The mutator's tasks live on a runtime that shuts down while its dispatcher waits for a
/// region lookup (meta's server frozen): the mutations the dispatcher took are failed as not
/// sent, so a `flush` awaited on another runtime returns them instead of waiting forever.
#[test]
fn runtime_shut_down_during_a_lookup_fails_the_taken_mutations() {
    let (outer, plain, name) = runtime_with_table("mut_shutdown");
    let inner = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // The proxy's listeners live on the outer runtime, which outlives the inner one.
    let (proxy, meta_ctl) = outer.block_on(async {
        let meta = plain.admin().meta_server().await.unwrap().address();
        let proxy = FaultProxy::new();
        for s in plain.admin().region_servers().await.unwrap() {
            proxy.control(&hbase_it::map_address(&s.address()));
        }
        let meta_ctl = proxy.control(&hbase_it::map_address(&meta));
        (proxy, meta_ctl)
    });
    let (client, mutator) = inner.block_on(async {
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(300))
                .rpc_timeout(Duration::from_secs(120))
        })
        .await;
        let mutator = client
            .buffered_mutator(&name.to_string(), MutatorConfig::default())
            .unwrap();
        (client, mutator)
    });
    meta_ctl.set_freeze_new(true);
    meta_ctl.freeze_existing();
    outer.block_on(bounded(120, async move {
        let misses = client.stats().meta_cache_misses;
        mutator
            .mutate(Put::new("row").add("cf", "q", "v"))
            .await
            .unwrap();
        let m2 = mutator.clone();
        let flushing = tokio::spawn(async move { m2.flush().await });
        // The event: the dispatcher looks the row's region up (a cache miss; meta is frozen,
        // so the lookup does not end).
        while client.stats().meta_cache_misses == misses {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        inner.shutdown_background();
        assert_only_row_failed_unsent(flushing.await.unwrap());
        let after = mutator.mutate(Put::new("later").add("cf", "q", "v")).await;
        assert!(after.is_err(), "a write after the flusher is gone fails");
        meta_ctl.thaw();
        hbase_it::drop_table(&plain, &name).await;
        drop(proxy);
    }));
}

/// A request task spawned but never run (its runtime shut down first) still answers for its
/// mutations: they fail as not sent, and a `flush` awaited on another runtime returns them.
/// The mutator's tasks live on a current-thread runtime that runs one task between polls of
/// the future it blocks on, so the test stops it right after the dispatcher spawned a request.
#[test]
fn a_request_task_dropped_before_it_ran_fails_its_mutations() {
    let (outer, plain, name) = runtime_with_table("mut_unrun");
    let inner = tokio::runtime::Builder::new_current_thread()
        .event_interval(1)
        .enable_all()
        .build()
        .unwrap();
    // Location cached and connection open: the dispatcher places and sends in one poll.
    let (client, mutator) = inner.block_on(async {
        let client = hbase_it::client().await;
        let mutator = client
            .buffered_mutator(&name.to_string(), MutatorConfig::default())
            .unwrap();
        mutator
            .mutate(Put::new("warm").add("cf", "q", "v"))
            .await
            .unwrap();
        mutator.flush().await.unwrap();
        (client, mutator)
    });
    let hits = client.stats().meta_cache_hits;
    outer
        .block_on(mutator.mutate(Put::new("row").add("cf", "q", "v")))
        .unwrap();
    let m2 = mutator.clone();
    let flushing = outer.spawn(async move { m2.flush().await });
    // The event: the flush cut the buffer (the dispatcher, on the idle inner runtime, is woken
    // but has not run).
    outer.block_on(async {
        while mutator.unanswered_mutations() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    // Runs the inner runtime until the dispatcher located the row (a cache hit): in that same
    // poll it placed it and spawned its request, which has not run yet.
    inner.block_on(async {
        while client.stats().meta_cache_hits == hits {
            tokio::task::yield_now().await;
        }
    });
    drop(inner);
    outer.block_on(bounded(60, async move {
        assert_only_row_failed_unsent(flushing.await.unwrap());
        let t = plain.table(&name.to_string()).unwrap();
        assert!(
            t.get(Get::new("row")).await.unwrap().is_none(),
            "never sent"
        );
        hbase_it::drop_table(&plain, &name).await;
    }));
}

/// A mutator made on a runtime that shuts down before its dispatcher task ever ran: writes to
/// it are refused, and nothing waits forever (before, `mutate` buffered, and `flush` waited
/// for a dispatcher that never existed).
#[test]
fn a_mutator_whose_dispatcher_never_ran_refuses_writes() {
    let (outer, client, name) = runtime_with_table("mut_never_ran");
    let inner = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Its tasks are spawned on the inner runtime, which never runs them.
    let mutator = {
        let _on_inner = inner.enter();
        client
            .buffered_mutator(&name.to_string(), MutatorConfig::default())
            .unwrap()
    };
    drop(inner);
    outer.block_on(bounded(60, async move {
        let written = mutator.mutate(Put::new("row").add("cf", "q", "v")).await;
        let flushed = mutator.flush().await;
        assert!(
            matches!(written, Err(Error::MutatorClosed { .. })),
            "a write to a mutator without a flusher is refused: {written:?} (then flush: {flushed:?})"
        );
        assert!(flushed.is_ok(), "nothing was buffered: {flushed:?}");
        let t = client.table(&name.to_string()).unwrap();
        assert!(t.get(Get::new("row")).await.unwrap().is_none());
        hbase_it::drop_table(&client, &name).await;
    }));
}

/// A write buffered in a mutator whose flusher is gone (its runtime shut down), the mutator
/// then dropped without `close`: nobody can flush it any more, so the failure listener hears
/// it (before, it was failed into a list nobody reads: silently dropped).
#[test]
fn a_dead_mutator_dropped_without_close_tells_the_listener() {
    let (outer, client, name) = runtime_with_table("mut_dead_drop");
    let inner = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let heard: Arc<Mutex<Vec<(Bytes, String)>>> = Arc::default();
    let h2 = heard.clone();
    let mutator = {
        let _on_inner = inner.enter();
        client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().on_failure(move |f| {
                    h2.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((f.row().clone(), f.error().to_string()))
                }),
            )
            .unwrap()
    };
    // Buffered while the mutator still looks alive; then its runtime goes, then the mutator.
    outer
        .block_on(mutator.mutate(Put::new("row").add("cf", "q", "v")))
        .unwrap();
    drop(inner);
    drop(mutator);
    let heard = heard.lock().unwrap().clone();
    assert_eq!(
        heard.len(),
        1,
        "the listener hears the unsent write: {heard:?}"
    );
    assert_eq!(&heard[0].0[..], b"row");
    outer.block_on(async {
        let t = client.table(&name.to_string()).unwrap();
        assert!(t.get(Get::new("row")).await.unwrap().is_none());
        hbase_it::drop_table(&client, &name).await;
    });
}

/// While hbase:meta does not answer, a row whose region the client has not located holds
/// back only its own writes: the dispatcher waits a short while for its lookup, then leaves
/// it to its request's retries (which look it up again within the operation's deadline), and
/// another mutator's writes to a located region of the same table keep flowing. Before, the
/// dispatcher's pass waited for the lookup for the whole RPC timeout (60 s here), sending
/// nothing new to any region.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_to_a_located_region_flow_while_meta_does_not_answer() {
    bounded(45, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.rpc_timeout(Duration::from_secs(60))
                .operation_timeout(Duration::from_secs(120))
        })
        .await;
        let name = hbase_it::unique_table("mut_meta_silent");
        hbase_it::create_table(&client, &name, &["m"]).await;
        let table = name.to_string();
        let located = client
            .buffered_mutator(&table, MutatorConfig::default())
            .unwrap();
        // Locates the first region only (a lookup caches the regions before the one it
        // wants, not after).
        located
            .mutate(Put::new("a1").add("cf", "q", "v"))
            .await
            .unwrap();
        located.flush().await.unwrap();

        let meta = client.admin().meta_server().await.unwrap().address();
        let meta_ctl = proxy.control(&meta);
        meta_ctl.swallow_requests(u32::MAX, |r| r.method == "Scan");
        let unlocated = client
            .buffered_mutator(&table, MutatorConfig::default())
            .unwrap();
        unlocated
            .mutate(Put::new("z1").add("cf", "q", "v"))
            .await
            .unwrap();
        let stuck = tokio::spawn(async move { unlocated.flush().await });
        // The lookup of "z1"'s region has reached meta, and gets no answer.
        while meta_ctl.swallowed() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        located
            .mutate(Put::new("a2").add("cf", "q", "v"))
            .await
            .unwrap();
        located.flush().await.unwrap();
        assert!(
            !stuck.is_finished(),
            "z1's flush ended though meta is silent"
        );
        let t = client.table(&table).unwrap();
        assert!(t.get(Get::new("a2")).await.unwrap().is_some());
        stuck.abort();
        located.close().await.unwrap();
        meta_ctl.clear();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// What a test's thread logs, as text (`tracing`'s plain format, no colours).
#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLogs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLogs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A mutator without a failure listener dropped without `close`: no `flush` can come any
/// more, so its failures are logged at ERROR with their rows, the one kept before the drop
/// for a flush and the one still in flight at the drop (before, both were kept in a list
/// nobody reads, and no line was logged). The test's runtime runs on its thread, where the
/// logs are captured.
#[test]
fn failures_of_a_mutator_dropped_without_close_are_logged() {
    let logs = CapturedLogs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .finish();
    let _on_this_thread = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bounded(120, async {
        let client = hbase_it::client().await;
        let name = hbase_it::unique_table("mut_drop_log");
        hbase_it::create_table(&client, &name, &[]).await;
        let mutator = client
            .buffered_mutator(
                &name.to_string(),
                MutatorConfig::default().write_buffer_size(1),
            )
            .unwrap();
        mutator
            .mutate(Put::new("kept_row").add("no_such_family", "q", "v"))
            .await
            .unwrap();
        while mutator.unanswered_mutations() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Cut at once (the buffer holds 1 byte); its request is sent only once this task
        // waits, after the drop.
        mutator
            .mutate(Put::new("in_flight_row").add("no_such_family", "q", "v"))
            .await
            .unwrap();
        assert_eq!(mutator.unanswered_mutations(), 1);
        drop(mutator);
        let logged = |row: &str| {
            logs.text()
                .lines()
                .any(|l| l.contains("ERROR") && l.contains(row) && l.contains("NoSuchColumnFamily"))
        };
        while !(logged("kept_row") && logged("in_flight_row")) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let t = client.table(&name.to_string()).unwrap();
        assert!(t.get(Get::new("kept_row")).await.unwrap().is_none());
        hbase_it::drop_table(&client, &name).await;
    }));
}
