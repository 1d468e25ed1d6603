//! The retry contract against real HBase, with faults from the proxy of `tests/support/proxy.rs`:
//! nonces make retried increments, appends and check-and-mutates apply once; a call that timed
//! out is never sent later; a timeout is not a dead server; connecting is bounded by the
//! operation deadline and a failed server is remembered; one exception table keeps the
//! server's do-not-retry verdicts, and reads every server exception as the Java client does
//! but where it lists why not (that test runs the Java client beside it, no HBase); meta
//! lookups run concurrently and coalesce.
//!
//! Every test waits for events (a response dropped, calls timed out, connections accepted),
//! never for a wall-clock window: the machine is shared.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{
    Action, Append, CheckAndMutate, Client, Comparator, CompareOp, Delete, ErrorKind, Filter, Get,
    Increment, Put, RowMutations, ServerName, TableName,
};
use hbase_it::proxy::{proto_fields, FaultProxy, Field, ProxyControl, RequestInfo};
use hbase_it::{bounded, one_region_table, server_of};

/// A varint field of a protobuf message.
fn varint(msg: &[u8], field: u32) -> Option<u64> {
    proto_fields(msg)?.into_iter().find_map(|(f, v)| match v {
        Field::Varint(x) if f == field => Some(x),
        _ => None,
    })
}

/// Every length-delimited value of `field` in a protobuf message.
fn nested(msg: &[u8], field: u32) -> Vec<&[u8]> {
    proto_fields(msg)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(f, v)| match v {
            Field::Bytes(b) if f == field => Some(b),
            _ => None,
        })
        .collect()
}

/// (nonce group, nonce) of a `Mutate` request: `MutateRequest.nonce_group` (4) and
/// `MutateRequest.mutation` (2) `.nonce` (9).
fn mutate_nonce(req: &RequestInfo) -> (Option<u64>, Option<u64>) {
    let mutation = nested(&req.param, 2).first().and_then(|m| varint(m, 9));
    (varint(&req.param, 4), mutation)
}

/// (nonce group, the nonces of every mutation) of a `Multi` request: `MultiRequest.nonceGroup`
/// (2); `regionAction` (1) → `action` (3) → `mutation` (2) → `nonce` (9).
fn multi_nonces(req: &RequestInfo) -> (Option<u64>, Vec<Option<u64>>) {
    let mut nonces = Vec::new();
    for ra in nested(&req.param, 1) {
        for action in nested(ra, 3) {
            for m in nested(action, 2) {
                nonces.push(varint(m, 9));
            }
        }
    }
    (varint(&req.param, 2), nonces)
}

/// A client through `proxy` with a short RPC timeout, so a dropped response costs little.
async fn client_with_short_rpc(proxy: &FaultProxy) -> Client {
    hbase_it::proxied_client(proxy, |b| {
        b.rpc_timeout(Duration::from_secs(1))
            .operation_timeout(Duration::from_secs(30))
    })
    .await
}

fn counter(row: &hbase_client::RowResult, q: &str) -> i64 {
    let v = row.value(b"cf", q.as_bytes()).expect("counter present");
    i64::from_be_bytes(v[..].try_into().expect("8 bytes"))
}

// ---------------------------------------------------------------------------------------------
// 1. Nonces: a retried non-idempotent operation is applied once.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increment_whose_response_is_dropped_is_applied_once() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = client_with_short_rpc(&proxy).await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "nonce_incr").await;

        ctl.record(|r| r.method == "Mutate");
        ctl.drop_responses(1, |r| r.method == "Mutate");
        let value = t.increment_column("n", "cf", "c", 1).await.unwrap();
        let sent = ctl.recorded();
        eprintln!(
            "increment with its first response dropped: returned {value}, {} Mutate requests, nonces {:?}",
            sent.len(),
            sent.iter().map(mutate_nonce).collect::<Vec<_>>()
        );
        assert_eq!(ctl.dropped(), 1, "the first response was dropped");
        assert!(sent.len() >= 2, "the increment was retried");
        let (group, nonce) = mutate_nonce(&sent[0]);
        assert!(group.is_some_and(|g| g != 0), "no nonce group: {group:?}");
        assert!(nonce.is_some_and(|n| n != 0), "no nonce: {nonce:?}");
        for r in &sent {
            assert_eq!(mutate_nonce(r), (group, nonce), "every attempt carries the same nonce");
        }
        let row = t.get(Get::new("n")).await.unwrap().unwrap();
        assert_eq!(counter(&row, "c"), 1, "applied exactly once");
        assert_eq!(value, 1, "the retry reported the value after the one increment");

        // Append too.
        ctl.record(|r| r.method == "Mutate");
        ctl.drop_responses(1, |r| r.method == "Mutate");
        let appended = t.append(Append::new("a").add("cf", "s", "ab")).await.unwrap();
        assert_eq!(ctl.dropped(), 2);
        let row = t.get(Get::new("a")).await.unwrap().unwrap();
        assert_eq!(row.value(b"cf", b"s").unwrap(), b"ab", "appended once");
        assert_eq!(appended.value(b"cf", b"s").unwrap(), b"ab");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_increments_carry_nonces_across_rounds() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = client_with_short_rpc(&proxy).await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "nonce_multi").await;

        ctl.record(|r| r.method == "Multi");
        ctl.drop_responses(1, |r| r.method == "Multi");
        let actions: Vec<Action> = (0..5)
            .map(|i| Action::Increment(Increment::new(format!("m{i}")).add("cf", "c", 1)))
            .chain([Action::Put(Put::new("p").add("cf", "q", "v"))])
            .collect();
        for r in t.batch(&actions).await {
            r.unwrap();
        }
        let sent = ctl.recorded();
        assert_eq!(ctl.dropped(), 1);
        assert!(sent.len() >= 2, "the batch was retried");
        let (group, first) = multi_nonces(&sent[0]);
        eprintln!(
            "batched increments: {} Multi requests, group {group:?}, nonces {first:?}",
            sent.len()
        );
        assert!(group.is_some_and(|g| g != 0));
        assert_eq!(first.len(), 6);
        assert!(
            first[..5].iter().all(|n| n.is_some_and(|n| n != 0)),
            "{first:?}"
        );
        let distinct: std::collections::HashSet<_> = first[..5].iter().collect();
        assert_eq!(distinct.len(), 5, "one nonce per increment");
        for r in &sent[1..] {
            assert_eq!(
                multi_nonces(r),
                (group, first.clone()),
                "same nonces in every round"
            );
        }
        for i in 0..5 {
            let row = t.get(Get::new(format!("m{i}"))).await.unwrap().unwrap();
            assert_eq!(counter(&row, "c"), 1, "m{i} incremented once");
        }
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_and_mutate_whose_response_is_dropped_reports_the_true_outcome() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = client_with_short_rpc(&proxy).await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "nonce_cam").await;

        // (a) The check still passes when retried: the server deduplicates the mutations by
        // the nonce and says they were applied, which they were, once.
        t.put(Put::new("g").add("cf", "gate", "open"))
            .await
            .unwrap();
        ctl.record(|r| r.method == "Multi");
        ctl.drop_responses(1, |r| r.method == "Multi");
        let claimed = t
            .check_and_mutate(
                CheckAndMutate::new("g", "cf", "gate")
                    .if_equals("open")
                    .then_mutate(
                        RowMutations::new("g")
                            .put(Put::new("g").add("cf", "owner", "me"))
                            .increment(Increment::new("g").add("cf", "claims", 1)),
                    ),
            )
            .await;
        let sent = ctl.recorded();
        eprintln!(
            "check-and-mutate (row mutations), response dropped: {claimed:?} after {} requests",
            sent.len()
        );
        assert_eq!(ctl.dropped(), 1);
        assert!(sent.len() >= 2, "it was retried");
        assert!(matches!(claimed, Ok(true)), "{claimed:?}");
        let row = t.get(Get::new("g")).await.unwrap().unwrap();
        assert_eq!(
            counter(&row, "claims"),
            1,
            "the increment inside was applied once"
        );

        // (b) The check fails when retried, because the first attempt applied: the client
        // cannot tell that from "never applied", and says so instead of reporting `false`.
        ctl.record(|r| r.method == "Mutate");
        ctl.drop_responses(1, |r| r.method == "Mutate");
        let outcome = t
            .check_and_mutate(
                CheckAndMutate::new("c", "cf", "owner")
                    .if_absent()
                    .then_put(Put::new("c").add("cf", "owner", "me")),
            )
            .await;
        let sent = ctl.recorded();
        eprintln!(
            "check-and-mutate, response dropped: {outcome:?} after {} requests",
            sent.len()
        );
        assert_eq!(ctl.dropped(), 2);
        let (group, nonce) = mutate_nonce(&sent[0]);
        assert!(group.is_some() && nonce.is_some_and(|n| n != 0), "no nonce");
        let row = t.get(Get::new("c")).await.unwrap().unwrap();
        assert_eq!(row.value(b"cf", b"owner").unwrap(), b"me", "it was applied");
        match &outcome {
            Ok(true) => {}
            Err(e) if e.kind() == ErrorKind::OutcomeUnknown => {}
            other => panic!("applied, but reported {other:?}"),
        }

        // (c) A filter check whose answer is not lost reports it exactly.
        let passed = t
            .check_and_mutate(
                CheckAndMutate::on_row("g")
                    .if_filter(Filter::Value(
                        CompareOp::Equal,
                        Comparator::Binary("closed".into()),
                    ))
                    .then_put(Put::new("g").add("cf", "owner", "you")),
            )
            .await
            .unwrap();
        assert!(!passed, "no cell of g is \"closed\"");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 2. A call its caller gave up on is never sent later.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_call_is_never_sent_later() {
    bounded(120, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.rpc_timeout(Duration::from_secs(60))
                .operation_timeout(Duration::from_secs(90))
        })
        .await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "abandoned").await;
        ctl.record(|r| r.method == "Mutate");

        // The proxy stops reading: the client's socket buffers fill with 24 MiB of puts, and
        // its writer can no longer write.
        ctl.freeze_existing();
        let big = Bytes::from(vec![b'x'; 1 << 20]);
        let mut puts = Vec::new();
        for i in 0..24 {
            let (t, big) = (t.clone(), big.clone());
            puts.push(tokio::spawn(async move {
                t.put(Put::new(format!("big{i:02}")).add("cf", "q", big))
                    .await
            }));
        }
        while client.stats().total(|s| s.bytes_sent) < 24 << 20 {
            tokio::task::yield_now().await;
        }
        // The caller gives up on a put queued behind them (its future is dropped).
        let abandoned = tokio::time::timeout(
            Duration::from_millis(300),
            t.put(Put::new("abandoned").add("cf", "q", "must never arrive")),
        )
        .await;
        assert!(abandoned.is_err(), "the put could not have been sent yet");
        ctl.thaw();
        for p in puts {
            p.await.unwrap().unwrap();
        }
        // A later call on the same connection: everything written before it has reached the
        // proxy once it is answered.
        t.get(Get::new("big00")).await.unwrap().unwrap();
        let sent: Vec<String> = ctl
            .recorded()
            .iter()
            .filter_map(|r| {
                let m = nested(&r.param, 2).first().copied()?;
                nested(m, 1)
                    .first()
                    .map(|row| String::from_utf8_lossy(row).into_owned())
            })
            .collect();
        eprintln!(
            "requests that reached the server after the freeze: {}",
            sent.len()
        );
        assert!(
            !sent.iter().any(|r| r == "abandoned"),
            "the abandoned put was sent"
        );
        assert!(t.get(Get::new("abandoned")).await.unwrap().is_none());
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 3. A timeout is not a dead server.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_timeout_keeps_the_connection_and_the_servers_other_regions() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = client_with_short_rpc(&proxy).await;
        let name = hbase_it::unique_table("timeout_keeps");
        hbase_it::create_table(&client, &name, &["m"]).await;
        let t = client.table(&name.to_string()).unwrap();
        // Both regions on one server (where the balancer leaves them).
        let admin = client.admin();
        let balancer = hbase_it::balancer_off(&admin).await;
        let server = server_of(&client, &name, "a").await;
        let other = admin.region_for_row(&name, b"z").await.unwrap();
        admin
            .move_region(&other.region, Some(&server))
            .await
            .unwrap();
        for row in ["a", "z"] {
            t.put(Put::new(row).add("cf", "q", row)).await.unwrap();
        }
        let ctl = proxy.control(&server.address());
        let (accepted, before) = (ctl.accepted(), client.stats());

        ctl.drop_responses(1, |r| r.method == "Get");
        t.get(Get::new("a")).await.unwrap().unwrap();
        t.get(Get::new("z")).await.unwrap().unwrap();
        let after = client.stats();
        let lookups = after.meta_lookups - before.meta_lookups;
        eprintln!(
            "one Get timed out: {} new connections, {lookups} meta lookups",
            ctl.accepted() - accepted
        );
        assert_eq!(ctl.dropped(), 1);
        assert_eq!(ctl.accepted(), accepted, "the connection was replaced");
        assert!(
            lookups <= 1,
            "{lookups} meta lookups: the server's other region was dropped"
        );
        balancer.release().await;
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_cap_belongs_to_the_server() {
    bounded(120, async {
        let proxy = FaultProxy::new();
        let cap = 4;
        // A long read timeout: the slow server is not taken for a dead one, so this is about
        // calls that timed out, not about a replaced connection. A call whose caller gave up
        // keeps its place for its own timeout more (5 s: the server gets it after 6 s and
        // answers it, 4 s before its place would be given back).
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.rpc_timeout(Duration::from_secs(5))
                .read_timeout(Duration::from_secs(30))
                .operation_timeout(Duration::from_secs(60))
                .max_in_flight_per_server(cap)
        })
        .await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "cap").await;
        let server = ctl.upstream().to_string();
        let accepted = ctl.accepted();

        // The server turns slow: the first calls time out in the client while they still run.
        ctl.set_request_delay(Duration::from_secs(6));
        ctl.reset_max_outstanding();
        let before = client.stats();
        let gets: Vec<_> = (0..16)
            .map(|i| {
                let t = t.clone();
                tokio::spawn(async move { t.get(Get::new(format!("g{i}"))).await })
            })
            .collect();
        // Once the first calls have timed out, the server is fast again.
        while client.stats().server(&server).map_or(0, |s| s.errors)
            < before.server(&server).map_or(0, |s| s.errors) + cap as u64
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        ctl.set_request_delay(Duration::ZERO);
        for g in gets {
            g.await.unwrap().unwrap();
        }
        eprintln!(
            "cap {cap}: at most {} calls outstanding at the server, {} connections accepted",
            ctl.max_outstanding(),
            ctl.accepted()
        );
        assert!(
            ctl.max_outstanding() <= cap as u64,
            "{} calls outstanding at the server with a cap of {cap}",
            ctl.max_outstanding()
        );
        assert_eq!(ctl.accepted(), accepted, "timeouts replaced the connection");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 4. Connecting: bounded by the deadline, one attempt for all waiters.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_callers_against_a_black_hole_finish_within_their_deadline() {
    bounded(120, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(3))
                .rpc_timeout(Duration::from_secs(2))
                .connect_timeout(Duration::from_secs(5))
                .failed_server_expiry(Duration::from_secs(60))
        })
        .await;
        let name = hbase_it::unique_table("black_hole");
        hbase_it::create_table(&client, &name, &[]).await;
        let admin = client.admin();
        // The table's region on a server that does not hold meta.
        let balancer = hbase_it::balancer_off(&admin).await;
        let meta = admin.meta_server().await.unwrap();
        let victim: ServerName = admin
            .region_servers()
            .await
            .unwrap()
            .into_iter()
            .find(|s| s.address() != meta.address())
            .expect("a server without meta");
        let region = admin.list_regions(&name).await.unwrap().remove(0).region;
        admin.move_region(&region, Some(&victim)).await.unwrap();
        let t = client.table(&name.to_string()).unwrap();
        t.put(Put::new("r").add("cf", "q", "v")).await.unwrap();
        let ctl = proxy.control(&victim.address());
        let at_victim = |c: &Client| c.stats().server(&victim.address()).cloned().unwrap_or_default();
        let before = at_victim(&client);

        // The host goes silent: open connections reset, new ones never complete a handshake.
        ctl.set_black_hole(true);
        ctl.black_hole_armed().await;
        ctl.reset_existing();
        let gets: Vec<_> = (0..500)
            .map(|i| {
                let t = t.clone();
                tokio::spawn(async move { t.get(Get::new(format!("r{i}"))).await })
            })
            .collect();
        let mut kinds = std::collections::BTreeMap::new();
        for g in gets {
            let err = g.await.unwrap().expect_err("nothing can answer");
            *kinds.entry(format!("{:?}", err.kind())).or_insert(0) += 1;
        }
        let during = at_victim(&client);
        eprintln!(
            "500 gets against a black hole: {kinds:?}, {} connect attempts",
            during.connects - before.connects
        );
        assert_eq!(kinds.get("Timeout"), Some(&500), "{kinds:?}");
        assert_eq!(during.connects - before.connects, 1, "one connect attempt serves all waiters");

        // The attempt fails (no handshake within the connect timeout); the server is then
        // remembered as failed, and callers fail at once, without connecting, and look the
        // region up again.
        while at_victim(&client).failed_connects == before.failed_connects {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let failed = at_victim(&client);
        let lookups = client.stats().meta_lookups;
        let once = client
            .table_builder(&name.to_string())
            .unwrap()
            .retries(0)
            .build();
        let mut fast = std::collections::BTreeMap::new();
        for i in 0..100 {
            let err = once.get(Get::new(format!("f{i}"))).await.unwrap_err();
            let last = match &err {
                hbase_client::Error::RetriesExhausted { last, .. } => last.as_ref(),
                e => e,
            };
            let key = format!("{:?}/{}", err.kind(), matches!(last, hbase_client::Error::RecentlyFailed { .. }));
            *fast.entry(key).or_insert(0) += 1;
        }
        let after = at_victim(&client);
        eprintln!(
            "100 gets within the failed-server expiry: {fast:?} (kind/failed-recently), {} connect attempts, {} meta lookups",
            after.connects - failed.connects,
            client.stats().meta_lookups - lookups
        );
        assert_eq!(fast.get("Retryable/true"), Some(&100), "{fast:?}");
        assert_eq!(after.connects, failed.connects, "a failed server was connected to again");
        assert!(client.stats().meta_lookups > lookups, "the region was not looked up again");
        ctl.clear();
        balancer.release().await;
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_builder_sets_timeouts_and_priority() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "builder").await;
        let fast = client
            .table_builder(&name.to_string())
            .unwrap()
            .rpc_timeout(Duration::from_millis(700))
            .operation_timeout(Duration::from_secs(2))
            .priority(7)
            .build();
        ctl.record(|r| r.method == "Get");
        fast.get(Get::new("warm")).await.unwrap().unwrap();
        t.get(Get::new("warm")).await.unwrap().unwrap();
        let sent = ctl.recorded();
        let headers: Vec<(u32, u32)> = sent.iter().map(|r| (r.priority, r.timeout_ms)).collect();
        eprintln!(
            "(priority, timeout ms) sent by the built table, then the default one: {headers:?}"
        );
        assert_eq!(headers, vec![(7, 700), (0, 60_000)]);
        // Its operation timeout bounds its retries: with answers slower than its RPC timeout
        // it gives up, while the default table waits them out.
        ctl.set_delay(Duration::from_millis(1200));
        let err = fast.get(Get::new("warm")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        t.get(Get::new("warm")).await.unwrap().unwrap();
        ctl.clear();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A policy that retries twice with a short pause and counts how often it is asked.
#[derive(Debug)]
struct TwoRetries(Arc<std::sync::atomic::AtomicU32>);

impl hbase_client::RetryPolicy for TwoRetries {
    fn next_pause(&self, attempt: u32, _error: &hbase_client::Error) -> Option<Duration> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        (attempt <= 2).then_some(Duration::from_millis(10))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_policy_is_pluggable() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let asked = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let policy = TwoRetries(asked.clone());
        let client = hbase_it::proxied_client(&proxy, |b| b.retry_policy(policy)).await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "policy").await;
        ctl.inject_exception(
            "Get",
            "org.apache.hadoop.hbase.RegionTooBusyException",
            false,
            10,
        );
        let err = t.get(Get::new("warm")).await.unwrap_err();
        eprintln!("custom policy: {err}");
        assert!(
            matches!(
                err,
                hbase_client::Error::RetriesExhausted { attempts: 3, .. }
            ),
            "{err}"
        );
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 3);
        // A do-not-retry error never reaches the policy.
        ctl.inject_exception(
            "Get",
            "org.apache.hadoop.hbase.DoNotRetryIOException",
            false,
            1,
        );
        let err = t.get(Get::new("warm")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DoNotRetry);
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 3);
        ctl.clear();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 5. One exception table: the server's do-not-retry verdicts hold.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_level_do_not_retry_fails_at_once() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client =
            hbase_it::proxied_client(&proxy, |b| b.operation_timeout(Duration::from_secs(30)))
                .await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "conn_dnr").await;
        let calls = |c: &Client| c.stats().total(|s| s.calls);
        let before = calls(&client);
        ctl.inject_connection_error(
            "org.apache.hadoop.hbase.ipc.UnsupportedCompressionCodecException",
            true,
        );
        let err = t.get(Get::new("warm")).await.unwrap_err();
        eprintln!("connection-level do-not-retry: {err}");
        assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{err}");
        assert_eq!(
            err.remote()
                .map(|r| r.short_class_name().to_string())
                .as_deref(),
            Some("UnsupportedCompressionCodecException")
        );
        assert_eq!(calls(&client) - before, 1, "it was retried");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_action_do_not_retry_in_a_multi_fails_at_once() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client =
            hbase_it::proxied_client(&proxy, |b| b.operation_timeout(Duration::from_secs(30)))
                .await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "action_dnr").await;
        let multis = |c: &Client| c.stats().total(|s| s.multi_calls);
        let before = multis(&client);
        // A space quota violation: DoNotRetryIOException's subclass, which a per-action
        // exception names but cannot flag.
        ctl.inject_action_exception("org.apache.hadoop.hbase.quotas.SpaceLimitingException", 1);
        let out = t
            .batch(&[
                Action::Put(Put::new("p1").add("cf", "q", "v")),
                Action::Put(Put::new("p2").add("cf", "q", "v")),
            ])
            .await;
        for r in &out {
            let e = r.as_ref().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::DoNotRetry, "{e}");
            assert_eq!(
                e.remote().unwrap().short_class_name(),
                "SpaceLimitingException"
            );
        }
        assert_eq!(multis(&client) - before, 1, "it was retried");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// The exception table beside the Java client, which decides the same things for its retrying
/// callers: `tests/java/interop/ExceptionFacts.java` runs hbase-shaded-client (from Maven
/// Central) and `exception-facts` our table, on the same list of exceptions. The list: every
/// concrete IOException class of the HBase jars a server has (hbase-server and its
/// dependencies), with the flags such a server sends with it (read on the server's classpath),
/// non-HBase classes a server sends or the table names, and a class the client has not (a
/// coprocessor's, sent with and without the do_not_retry flag). Each is read as a whole call's exception and
/// as an action's in a Multi answer (a name, no flags); for each, both say whether it is
/// retried, what it says of the cached location and how long the pause before the next attempt
/// is, and for a whole call's exception whether a call to the master failing with it forgets
/// the master (so the next attempt asks the registry which master is active); that reading has
/// no deliberate difference. Where we differ on purpose (see `deliberate`, and the exception table's module
/// documentation), our answer must be exactly the one expected there. Every class the table
/// names must be a class the server has. Needs no HBase.
#[test]
fn exception_table_agrees_with_the_java_client() {
    let repo = env!("CARGO_MANIFEST_DIR");
    let java = format!("{repo}/tests/java/interop/run");
    let ours = env!("CARGO_BIN_EXE_exception-facts");
    // Classes outside the HBase jars that the table names or a server sends.
    let others = [
        "java.io.IOException",
        "org.apache.hadoop.security.AccessControlException",
        "org.apache.hadoop.security.authorize.AuthorizationException",
        "javax.security.sasl.SaslException",
        // The JDK's connection exceptions, which Java's master caller singles out
        // (ClientExceptionsUtil.isConnectionException); a server can send them as any other.
        "java.net.ConnectException",
        "java.net.SocketTimeoutException",
        "java.nio.channels.ClosedChannelException",
        "java.io.SyncFailedException",
        "java.io.EOFException",
        // A coprocessor's exception: its server has it, the client has not.
        "com.example.FooException",
    ];
    let mut args = vec!["--server", "--program", "ExceptionFacts.java", "server"];
    args.push("--hbase-classes");
    args.extend(others);
    let server = run_program(&java, &args);
    // Each class the server has, and whether it sends it with the do_not_retry flag.
    let mut server_dnr = std::collections::BTreeMap::new();
    let mut specs = Vec::new();
    for line in server.lines() {
        let (name, facts) = line.split_once('\t').unwrap();
        match facts.strip_prefix("flags=") {
            Some(flags) => {
                server_dnr.insert(name.to_string(), flags.starts_with("dnr"));
                let flags = match flags {
                    "none" => String::new(),
                    f => format!("+{f}"),
                };
                specs.push(format!("call:{name}{flags}"));
            }
            None => {
                assert_eq!(facts, "unknown", "{line}");
                specs.push(format!("call:{name}"));
                specs.push(format!("call:{name}+dnr"));
            }
        }
        specs.push(format!("action:{name}"));
    }
    let mut differences = Vec::new();
    for short in run_program(ours, &["known"]).lines() {
        if !server_dnr
            .keys()
            .any(|n| n.rsplit('.').next() == Some(short))
        {
            differences.push(format!(
                "{short}: named by our table, but no class of the server has that name"
            ));
        }
    }
    let mut java_args = vec!["--program", "ExceptionFacts.java", "client"];
    java_args.extend(specs.iter().map(String::as_str));
    let java_out = run_program(&java, &java_args);
    let our_out = run_program(ours, &specs.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        java_out.lines().count(),
        specs.len(),
        "Java's output:\n{java_out}"
    );
    assert_eq!(
        our_out.lines().count(),
        specs.len(),
        "our output:\n{our_out}"
    );
    let mut deliberate_counts = std::collections::BTreeMap::new();
    for (spec, (j, o)) in specs.iter().zip(java_out.lines().zip(our_out.lines())) {
        let jf: Vec<&str> = j.split('\t').collect();
        let of: Vec<&str> = o.split('\t').collect();
        assert_eq!((jf.len(), jf[0], of.len(), of[0]), (6, &**spec, 5, &**spec));
        let value = |f: &str, key: &str| f.strip_prefix(key).unwrap().to_string();
        let java_says = [
            value(jf[1], "retry="),
            value(jf[2], "cache="),
            value(jf[3], "pause="),
            value(jf[4], "master="),
        ];
        let we_say = [
            value(of[1], "retry="),
            value(of[2], "cache="),
            value(of[3], "pause="),
            value(of[4], "master="),
        ];
        let made = jf[5] == "made=yes";
        let (path, rest) = spec.split_once(':').unwrap();
        let name = rest.split('+').next().unwrap();
        let dnr = match path {
            "call" => rest.contains("+dnr"),
            _ => server_dnr.get(name).copied().unwrap_or(false),
        };
        let java_says = java_says.each_ref().map(String::as_str);
        let we_say = we_say.each_ref().map(String::as_str);
        let [retry, cache, pause, master] = java_says;
        let expected = deliberate(name, dnr, made, [retry, cache, pause]);
        // Forgetting the master has no deliberate difference: ours must say what Java says.
        let want = expected.map_or(java_says, |([r, c, p], _)| [r, c, p, master]);
        if we_say != want {
            let why = expected.map_or(String::new(), |(_, why)| {
                format!("\n  expected: {want:?} ({why})")
            });
            differences.push(format!("  Java: {j}\n  ours: {o}{why}"));
        } else if let (Some((_, why)), true) = (expected, we_say != java_says) {
            *deliberate_counts.entry(why).or_insert(0) += 1;
        }
    }
    eprintln!(
        "{} exceptions read as the Java client reads them or differing on purpose:",
        specs.len()
    );
    for (why, n) in &deliberate_counts {
        eprintln!("  {n} differ: {why}");
    }
    assert!(
        differences.is_empty(),
        "{} of {} exceptions read differently from the Java client:\n{}",
        differences.len(),
        specs.len(),
        differences.join("\n")
    );
}

/// Where our exception table differs from the Java client on purpose: what it must say instead
/// (`[retry, cache, pause]`) and why; `None` where it must say what Java says. `dnr` is
/// whether the server flags the class do-not-retry (for an action, which has no flags: would
/// flag), `made` whether the Java client could make an exception of the class.
fn deliberate<'a>(
    name: &str,
    dnr: bool,
    made: bool,
    java: [&'a str; 3],
) -> Option<([&'a str; 3], &'static str)> {
    const NEVER: [&str; 3] = ["no", "keep", "-"];
    let short = name.rsplit('.').next().unwrap();
    if !made {
        // Java gives up on a whole call's exception whose class it cannot load or make from a
        // message (RemoteWithExtrasException.unwrapRemoteException answers a
        // DoNotRetryIOException), and fails a whole Multi answer with an IOException it
        // retries when an action's exception is such a class (ProtobufUtil.toException). We
        // read the class as a Java client that has it: by the server's flag, which says
        // whether the class is a DoNotRetryIOException where it was thrown.
        let want = if dnr {
            NEVER
        } else {
            ["yes", "drop", "normal"]
        };
        return Some((
            want,
            "a class the Java client cannot make, read as a client that has it would",
        ));
    }
    match short {
        // A server going away: every region cached on it is stale, not only this one.
        "RegionServerStoppedException" | "RegionServerAbortedException" if java[1] == "drop" => {
            Some((
                [java[0], "drop-server", java[2]],
                "a stopped server's regions are all dropped",
            ))
        }
        // Plain IOExceptions to Java, retried: a refused permission or an illegal argument
        // stays so however often it is sent. AuthorizationException (a service-level
        // authorization refusal) is Hadoop's subclass of AccessControlException and reads as
        // its parent does.
        "IllegalArgumentIOException"
        | "AccessControlException"
        | "AuthorizationException"
        | "SaslException" => Some((
            NEVER,
            "an illegal argument or a refused permission is never retried",
        )),
        // Never retried either way: Java's single-request callers give up before they read
        // ClientExceptionsUtil, its batch callers drop the region's location first; we keep
        // it (nothing says the region moved).
        _ if java[0] == "no" => Some((NEVER, "a never-retried exception keeps the location")),
        _ => None,
    }
}

/// Runs a program to its end and returns its output (its failure fails the test).
fn run_program(program: &str, args: &[&str]) -> String {
    hbase_it::stdout_of(program, std::process::Command::new(program).args(args))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_state_is_read_once_per_operation() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.operation_timeout(Duration::from_secs(30))
                .pause(Duration::from_millis(20))
        })
        .await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "table_state").await;
        let master = client.admin().master().await.unwrap();
        let master_ctl = proxy.control(&master.address());
        master_ctl.record(|r| r.method == "GetTableState");
        // The region stays unavailable for five attempts; the table is enabled throughout.
        ctl.inject_exception(
            "Get",
            "org.apache.hadoop.hbase.NotServingRegionException",
            false,
            5,
        );
        t.get(Get::new("warm")).await.unwrap().unwrap();
        let checks = master_ctl.recorded().len();
        eprintln!("a get through 5 NotServingRegion answers asked the master {checks} times");
        assert_eq!(ctl.injected(), 5);
        assert_eq!(
            checks, 1,
            "table state read {checks} times in one operation"
        );
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 6. Meta lookups: concurrent, coalesced by key; impossible keys refused before sending.

/// A table of `regions` regions (split at `r1`, `r2`, ...) and a cold client that finds one
/// region per meta lookup, through a proxy whose meta server answers after `meta_delay`.
struct ColdClient {
    setup: Client,
    name: TableName,
    client: Client,
    meta: Arc<ProxyControl>,
    _proxy: FaultProxy,
}

impl ColdClient {
    async fn new(prefix: &str, regions: usize, meta_delay: Duration) -> ColdClient {
        let setup = hbase_it::client().await;
        let name = hbase_it::unique_table(prefix);
        let splits: Vec<String> = (1..regions).map(|i| format!("r{i}")).collect();
        let splits: Vec<&str> = splits.iter().map(String::as_str).collect();
        hbase_it::create_table(&setup, &name, &splits).await;
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b.meta_prefetch(1)).await;
        let meta_server = setup.admin().meta_server().await.unwrap();
        let meta = proxy.control(&meta_server.address());
        meta.set_request_delay(meta_delay);
        ColdClient {
            setup,
            name,
            client,
            meta,
            _proxy: proxy,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_lookups_run_concurrently_and_coalesce() {
    bounded(90, async {
        // Every meta answer takes a while, so lookups that can overlap do.
        let cold = ColdClient::new("meta_lookups", 8, Duration::from_millis(300)).await;
        let (setup, name, client, meta) = (&cold.setup, &cold.name, &cold.client, &cold.meta);
        meta.count_outstanding(|r| r.method == "Scan");
        meta.reset_max_outstanding();
        let t = client.table(&name.to_string()).unwrap();
        let before = client.stats();
        let mut gets = Vec::new();
        for i in 0..8 {
            // Seven rows in seven regions, and eight gets of one row of the eighth.
            let row = if i < 7 { format!("r{i}-x") } else { "r7-same".to_string() };
            for row in [row, "r7-same".to_string()] {
                let t = t.clone();
                gets.push(tokio::spawn(async move { t.get(Get::new(row)).await }));
            }
        }
        for g in gets {
            g.await.unwrap().unwrap();
        }
        let lookups = client.stats().meta_lookups - before.meta_lookups;
        eprintln!(
            "16 cold gets over 8 regions (9 of one row): {lookups} meta lookups, at most {} meta scans at once",
            meta.max_outstanding()
        );
        assert!(meta.max_outstanding() >= 2, "meta scans ran one at a time");
        assert_eq!(
            lookups, 8,
            "one lookup per region: the same row's lookups coalesce"
        );
        meta.clear();
        hbase_it::drop_table(setup, name).await;
    })
    .await;
}

/// A cold client hit by many reads of distinct rows at once (ycsb at 10,000 threads) looks
/// meta up at most 8 times at once per table (as Java's async client); the other misses wait
/// in their own callers, not in a task each. One task per waiting row was 7,266 tasks of 3 KB
/// at the start of a 10,000-thread run: 22 MB of heap the process kept for the whole run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_misses_beyond_the_lookup_limit_wait_in_their_callers() {
    bounded(120, async {
        // Meta answers slowly, so every get misses before the first lookup is answered.
        let cold = ColdClient::new("cold_misses", 4, Duration::from_millis(500)).await;
        let (setup, name, client, meta) = (&cold.setup, &cold.name, &cold.client, &cold.meta);
        let t = client.table(&name.to_string()).unwrap();
        let before = client.stats();
        let tasks_before = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        let gets: Vec<_> = (0..200)
            .map(|i| {
                let t = t.clone();
                let row = format!("r{}-{i:03}", i % 4);
                tokio::spawn(async move { t.get(Get::new(row)).await })
            })
            .collect();
        // Every get has looked in the cache (missed, unless a slow machine let a lookup
        // answer first) and the lookups are under way.
        loop {
            let now = client.stats();
            let looked = (now.meta_cache_misses - before.meta_cache_misses)
                + (now.meta_cache_hits - before.meta_cache_hits);
            if looked >= 200 && now.meta_lookups > before.meta_lookups {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let tasks = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
            - tasks_before;
        eprintln!("200 cold gets of distinct rows: {tasks} tasks more (200 of them the gets)");
        // The gets, at most 8 lookups, and a few connection tasks (reader, writer) at most.
        assert!(tasks <= 200 + 8 + 8, "{tasks} tasks for 200 waiting gets");
        for g in gets {
            g.await.unwrap().unwrap();
        }
        let lookups = client.stats().meta_lookups - before.meta_lookups;
        eprintln!("{lookups} meta lookups for 4 regions");
        // Each region is looked up by lookups that overlap (at most 8); the cache answers
        // every later miss.
        assert!(lookups <= 4 * 8, "{lookups} lookups");
        meta.clear();
        hbase_it::drop_table(setup, name).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_whose_meta_key_is_too_long_is_refused_before_sending() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("long_meta_key");
    hbase_it::create_table(&client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    let calls = |c: &Client| c.stats().total(|s| s.calls);
    let before = calls(&client);
    // 32767 bytes is a legal row key, but `table,row,99999999999999` is then too long to
    // search meta with (HBase's row limit is 32767 bytes).
    let row = Bytes::from(vec![b'k'; 32767]);
    let err = t.get(Get::new(row)).await.unwrap_err();
    eprintln!("row with an oversized meta key: {err}");
    assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{err}");
    assert!(err.to_string().contains("meta"), "{err}");
    assert_eq!(calls(&client), before, "something was sent");
    hbase_it::drop_table(&client, &name).await;
}

/// A scan's operation timeout bounds the time without an answer, not the time to a whole row:
/// a row the server sends in pieces (one cell an answer), more slowly in all than the
/// operation timeout, is scanned whole. Java's scanner gives every `next` call a timeout of its
/// own. Before, only a delivered row counted, so the pieces of one row (and the heartbeats of
/// a filter that matches nothing for a while) ran the scan out of time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_sent_in_pieces_slower_than_the_operation_timeout_is_scanned_whole() {
    bounded(120, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "slow_pieces").await;
        let mut wide = Put::new("wide");
        for i in 0..40 {
            wide = wide.add("cf", format!("q{i:02}"), "v");
        }
        t.put(wide).await.unwrap();
        let slow = client
            .table_builder(&name.to_string())
            .unwrap()
            .rpc_timeout(Duration::from_millis(1500))
            .operation_timeout(Duration::from_secs(2))
            .build();
        ctl.record(|r| r.method == "Scan");
        // 40 answers of one cell, each 100 ms late: 4 s in all, twice the operation timeout.
        ctl.set_delay(Duration::from_millis(100));
        let mut stream = slow.scan(
            hbase_client::Scan::new()
                .start_row("wide")
                .stop_row("wide\0")
                .max_result_size(1),
        );
        let mut rows = Vec::new();
        while let Some(row) = stream.next().await {
            rows.push(row);
        }
        ctl.set_delay(Duration::ZERO);
        let calls = ctl.recorded().len();
        let rows: Vec<hbase_client::RowResult> = rows
            .into_iter()
            .collect::<hbase_client::Result<_>>()
            .unwrap_or_else(|e| panic!("the scan failed after {calls} Scan calls: {e}"));
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].cells.len(), 40);
        // The server did send the row in pieces: one call per cell, and more.
        assert!(calls >= 40, "{calls} Scan calls");
        ctl.clear();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// An answer to a write that cannot be read says nothing of what the server did: the write may
/// have been applied, and the error says so, as for a Multi's unreadable answer. Before, an
/// increment whose answer's cells were damaged failed as retryable ("not applied"), although
/// the server had applied it, and a retry was free to go to another server, which does not
/// know its nonce.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_answer_cannot_be_read_is_reported_outcome_unknown() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b).await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "unreadable_write").await;
        let once = client
            .table_builder(&name.to_string())
            .unwrap()
            .retries(0)
            .build();
        ctl.corrupt_next(1, hbase_it::proxy::Corruption::CellBlock);
        let err = once
            .increment(Increment::new("n").add("cf", "c", 1))
            .await
            .unwrap_err();
        eprintln!("increment whose answer's cells were damaged: {err}");
        assert_eq!(ctl.damaged(), 1, "the answer was damaged");
        assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
        let row = t.get(Get::new("n")).await.unwrap().unwrap();
        assert_eq!(counter(&row, "c"), 1, "the server applied it");

        // With retries, the retry carries the same nonce to the same server: applied once,
        // and the caller gets its value.
        ctl.corrupt_next(1, hbase_it::proxy::Corruption::CellBlock);
        let value = t.increment_column("n", "cf", "c", 1).await.unwrap();
        assert_eq!(ctl.damaged(), 2);
        assert_eq!(value, 2);
        let row = t.get(Get::new("n")).await.unwrap().unwrap();
        assert_eq!(counter(&row, "c"), 2, "applied once more, not twice");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A pause too long to add to the clock (a retry policy's, or a throttled server's wait
/// parsed from its message) ends the operation with a timeout; it panicked before.
#[derive(Debug)]
struct EndlessPause;

impl hbase_client::RetryPolicy for EndlessPause {
    fn next_pause(&self, _attempt: u32, _error: &hbase_client::Error) -> Option<Duration> {
        Some(Duration::MAX)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_too_long_for_the_clock_ends_the_operation_as_a_timeout() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| b.retry_policy(EndlessPause)).await;
        let (name, t, ctl) = one_region_table(&client, &proxy, "endless_pause").await;
        ctl.inject_exception(
            "Get",
            "org.apache.hadoop.hbase.RegionTooBusyException",
            false,
            1,
        );
        let err = t.get(Get::new("warm")).await.unwrap_err();
        eprintln!("a pause of Duration::MAX: {err}");
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        ctl.clear();
        t.get(Get::new("warm")).await.unwrap().unwrap();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// `Duration::MAX` for every timeout and pause (a user turning them off) is read as
/// `MAX_DURATION`: reads work, and a connection reset while a get waits for its answer fails
/// the get over to a new connection. (Before, `now + read_timeout` overflowed: the connect
/// panicked, and the reader panicked while closing, before it woke its callers.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_of_duration_max_read_and_survive_a_reset() {
    bounded(120, async {
        let proxy = FaultProxy::new();
        let client = hbase_it::proxied_client(&proxy, |b| {
            b.connect_timeout(Duration::MAX)
                .rpc_timeout(Duration::MAX)
                .operation_timeout(Duration::MAX)
                .read_timeout(Duration::MAX)
                .failed_server_expiry(Duration::MAX)
        })
        .await;
        let (name, _, ctl) = one_region_table(&client, &proxy, "max_timeouts").await;
        let t = client
            .table_builder(&name.to_string())
            .unwrap()
            .operation_timeout(Duration::MAX)
            .rpc_timeout(Duration::MAX)
            .build();
        t.put(Put::new("r").add("cf", "q", "v")).await.unwrap();
        ctl.record(|r| r.method == "Get");
        ctl.hold_responses(true);
        let get = tokio::spawn({
            let t = t.clone();
            async move { t.get(Get::new("r")).await }
        });
        while ctl.recorded().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        ctl.reset_existing();
        ctl.hold_responses(false);
        let row = get.await.unwrap().unwrap().expect("row r");
        assert_eq!(row.value(b"cf", b"q"), Some(&b"v"[..]));
        assert!(ctl.recorded().len() >= 2, "the get was sent again");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// A delete of a column's newest version (no timestamp) is not harmless to apply twice: the
/// server picks the version as it applies it, so a second application deletes the next one,
/// and HBase takes no nonce for a delete. After an attempt that may have been applied it is
/// not retried, alone, in a batch or buffered: the caller learns the outcome is unknown, and
/// one version is gone, not two. (Java's client retries it.) Inside a check-and-mutate or an
/// atomic row mutation with an increment, the operation's nonce guards it: retried, applied
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newest_version_delete_is_not_retried_after_it_may_have_been_applied() {
    bounded(120, async {
        let proxy = FaultProxy::new();
        let client = client_with_short_rpc(&proxy).await;
        let name = hbase_it::unique_table("newest_version_delete");
        let desc = hbase_client::TableDescriptor::new(name.clone())
            .family(hbase_client::ColumnFamily::new("cf").max_versions(5));
        client.admin().create_table(&desc, &[]).await.unwrap();
        let t = client.table(&name.to_string()).unwrap();
        let ctl = proxy.control(&server_of(&client, &name, "single").await.address());
        let versions = |row: &'static str| {
            let t = t.clone();
            async move {
                t.get(Get::new(row).max_versions(5))
                    .await
                    .unwrap()
                    .map_or(0, |r| r.cells.len())
            }
        };
        let newest = |row: &'static str| Delete::new(row).column_version("cf", "q", None);
        for row in ["single", "batched", "buffered", "checked", "row_mutations"] {
            for ts in 1..=3 {
                t.put(Put::new(row).add_at("cf", "q", ts, format!("v{ts}")))
                    .await
                    .unwrap();
            }
            assert_eq!(versions(row).await, 3);
        }

        ctl.drop_responses(1, |r| r.method == "Mutate");
        let err = t.delete(newest("single")).await.unwrap_err();
        eprintln!("a newest-version delete whose answer was lost: {err}");
        assert_eq!(ctl.dropped(), 1);
        assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
        assert_eq!(versions("single").await, 2, "one version deleted, not two");

        ctl.drop_responses(1, |r| r.method == "Multi");
        let results = t.batch(&[Action::Delete(newest("batched"))]).await;
        let err = results.into_iter().next().unwrap().unwrap_err();
        assert_eq!(ctl.dropped(), 2);
        assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
        assert_eq!(versions("batched").await, 2, "one version deleted, not two");

        let mutator = client
            .buffered_mutator(&name.to_string(), hbase_client::MutatorConfig::default())
            .unwrap();
        ctl.drop_responses(1, |r| r.method == "Multi");
        mutator.mutate(newest("buffered")).await.unwrap();
        let err = mutator.flush().await.unwrap_err();
        assert_eq!(ctl.dropped(), 3);
        assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
        assert_eq!(
            versions("buffered").await,
            2,
            "one version deleted, not two"
        );
        mutator.close().await.ok();

        // Inside a check-and-mutate, and beside an increment in one atomic row mutation: both
        // carry a nonce, and the server takes the nonce for the whole operation, the delete
        // too: the retry is answered as applied, and one version is gone. (A review read
        // HBase as checking nonces for increments and appends only; HBase 2.6.4 says
        // otherwise.)
        t.put(Put::new("checked").add("cf", "flag", "1"))
            .await
            .unwrap();
        ctl.drop_responses(1, |r| r.method == "Mutate");
        let checked = t
            .check_and_mutate(
                CheckAndMutate::new("checked", "cf", "flag")
                    .if_equals("1")
                    .then_delete(newest("checked")),
            )
            .await;
        assert_eq!(ctl.dropped(), 4);
        assert!(
            matches!(&checked, Ok(true)),
            "a conditional newest-version delete whose answer was lost: {checked:?}"
        );
        assert_eq!(versions("checked").await, 2, "one version deleted, not two");

        ctl.drop_responses(1, |r| r.method == "Multi");
        let mutated = t
            .mutate_row(
                RowMutations::new("row_mutations")
                    .delete(newest("row_mutations"))
                    .increment(Increment::new("row_mutations").add("cf", "n", 1)),
            )
            .await;
        assert_eq!(ctl.dropped(), 5);
        let mutated = mutated.expect("a newest-version delete beside an increment, answer lost");
        assert_eq!(counter(&mutated, "n"), 1, "the increment applied once");
        assert_eq!(
            versions("row_mutations").await,
            2,
            "one version deleted, not two"
        );

        // A delete that names its version is harmless to apply twice and is retried.
        ctl.drop_responses(1, |r| r.method == "Mutate");
        t.delete(Delete::new("single").column_version("cf", "q", Some(1)))
            .await
            .unwrap();
        assert_eq!(ctl.dropped(), 6);
        assert_eq!(versions("single").await, 1);
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// An admin call to a region server whose answer is lost (here a flush) may have been carried
/// out: it fails with an unknown outcome, as every retried operation does, not as a timeout
/// (which says the server never got it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_region_server_admin_call_is_an_unknown_outcome() {
    bounded(90, async {
        let proxy = FaultProxy::new();
        let client = client_with_short_rpc(&proxy).await;
        let (name, _t, ctl) = one_region_table(&client, &proxy, "admin_unanswered").await;
        let admin = client.admin();
        let region = admin.list_regions(&name).await.unwrap()[0].region.clone();
        ctl.drop_responses(1, |r| r.method == "FlushRegion");
        let err = admin.flush_region(&region).await.unwrap_err();
        eprintln!("a flush whose answer was lost: {err}");
        assert_eq!(ctl.dropped(), 1);
        assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
        admin.flush_region(&region).await.unwrap();
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}
