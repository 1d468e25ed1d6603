//! Bad input to the client API, against a real HBase: oversized row keys and values, empty
//! puts, unknown column families and disabled tables. Each gives a typed error (before
//! anything is sent where the client can tell), never a hang or a panic.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{
    Action, Append, CheckAndMutate, Client, Delete, Error, ErrorKind, Get, Increment,
    MutatorConfig, Put, Scan,
};

/// Bounds one call: an error is fine, a hang is not.
async fn bounded<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"))
}

fn calls(client: &Client) -> u64 {
    client.stats().total(|s| s.calls)
}

fn assert_invalid<T: std::fmt::Debug>(what: &str, r: hbase_client::Result<T>, says: &str) {
    match r {
        Err(Error::InvalidInput(m)) => assert!(m.contains(says), "{what}: {m}"),
        other => panic!("{what}: expected InvalidInput ({says}), got {other:?}"),
    }
}

async fn client() -> Client {
    let config = hbase_it::config_builder()
        .operation_timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    Client::connect(config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_keys_values_and_empty_puts_fail_before_sending() {
    let client = client().await;
    let name = hbase_it::unique_table("bad_input");
    hbase_it::create_table(&client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    // Warm the region cache so that nothing below needs a meta lookup either.
    t.put(Put::new("warm").add("cf", "q", "v")).await.unwrap();
    let long = Bytes::from(vec![b'k'; 32768]);
    let max = Bytes::from(vec![b'm'; 32767]);
    let big = Bytes::from(vec![7u8; 10 * 1024 * 1024]);

    let sent = calls(&client);
    assert_invalid(
        "put, long row",
        bounded("put", t.put(Put::new(long.clone()).add("cf", "q", "v"))).await,
        "32767",
    );
    assert_invalid(
        "get, long row",
        bounded("get", t.get(Get::new(long.clone()))).await,
        "32767",
    );
    assert_invalid(
        "exists, long row",
        bounded("exists", t.exists(Get::new(long.clone()))).await,
        "32767",
    );
    assert_invalid(
        "delete row, long row",
        bounded("delete", t.delete(Delete::new(long.clone()))).await,
        "32767",
    );
    assert_invalid(
        "delete column, long row",
        bounded(
            "delete",
            t.delete(Delete::new(long.clone()).column("cf", "q")),
        )
        .await,
        "32767",
    );
    assert_invalid(
        "increment, long row",
        bounded(
            "incr",
            t.increment(Increment::new(long.clone()).add("cf", "c", 1)),
        )
        .await,
        "32767",
    );
    assert_invalid(
        "append, long row",
        bounded(
            "append",
            t.append(Append::new(long.clone()).add("cf", "a", "x")),
        )
        .await,
        "32767",
    );
    assert_invalid(
        "check-and-put, long row",
        bounded(
            "cam",
            t.check_and_mutate(
                CheckAndMutate::new(long.clone(), "cf", "q")
                    .if_absent()
                    .then_put(Put::new(long.clone()).add("cf", "q", "v")),
            ),
        )
        .await,
        "32767",
    );
    assert_invalid(
        "empty put",
        bounded("put", t.put(Put::new("r"))).await,
        "at least one cell",
    );
    assert_invalid(
        "empty row",
        bounded("get", t.get(Get::new(""))).await,
        "empty",
    );
    assert_invalid(
        "value of 10 MiB (KeyValue over 10,485,760 bytes)",
        bounded("put", t.put(Put::new("big").add("cf", "q", big.clone()))).await,
        "KeyValue size too large",
    );
    assert_invalid(
        "append of 10 MiB",
        bounded(
            "append",
            t.append(Append::new("big").add("cf", "q", big.clone())),
        )
        .await,
        "KeyValue size too large",
    );
    assert_invalid(
        "family of 128 bytes",
        bounded("put", t.put(Put::new("r").add(vec![b'f'; 128], "q", "v"))).await,
        "1..=127",
    );
    // Batches: the bad actions fail alone, before sending; the good one goes through.
    let actions = vec![
        Action::Put(Put::new(long.clone()).add("cf", "q", "v")),
        Action::Put(Put::new("empty")),
        Action::Get(Get::new(long.clone())),
        Action::Put(Put::new("big").add("cf", "q", big.clone())),
        Action::Delete(Delete::new(long.clone())),
    ];
    for (i, r) in bounded("batch", t.batch(&actions))
        .await
        .into_iter()
        .enumerate()
    {
        assert!(
            matches!(r, Err(Error::InvalidInput(_))),
            "batch action {i}: {r:?}"
        );
    }
    // The buffered mutator refuses them in mutate().
    let m = client
        .buffered_mutator(&name.to_string(), MutatorConfig::default())
        .unwrap();
    assert_invalid(
        "mutator, long row",
        m.mutate(Put::new(long.clone()).add("cf", "q", "v")).await,
        "32767",
    );
    assert_invalid(
        "mutator, empty put",
        m.mutate(Put::new("e")).await,
        "at least one cell",
    );
    assert_invalid(
        "mutator, big value",
        m.mutate(Put::new("big").add("cf", "q", big.clone())).await,
        "KeyValue size too large",
    );
    m.close().await.unwrap();
    assert_eq!(calls(&client), sent, "invalid input reached the network");

    // The limits themselves are accepted: a 32767-byte row, a value just under 10 MiB.
    let near = Bytes::from(vec![9u8; 10 * 1024 * 1024 - 1024]);
    t.put(Put::new(max.clone()).add("cf", "q", "v"))
        .await
        .unwrap();
    t.put(Put::new("near").add("cf", "q", near.clone()))
        .await
        .unwrap();
    let row = t.get(Get::new(max.clone())).await.unwrap().unwrap();
    assert_eq!(row.row, max);
    let row = t.get(Get::new("near")).await.unwrap().unwrap();
    assert_eq!(row.value(b"cf", b"q"), Some(&near));
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_family_fails_at_once_with_its_row() {
    let client = client().await;
    let name = hbase_it::unique_table("bad_family");
    hbase_it::create_table(&client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    t.put(Put::new("ok").add("cf", "q", "v")).await.unwrap();

    let started = Instant::now();
    let err = bounded("put", t.put(Put::new("r").add("nope", "q", "v")))
        .await
        .unwrap_err();
    eprintln!("put to unknown family: {err}");
    assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{err}");
    assert_eq!(
        err.remote().unwrap().short_class_name(),
        "NoSuchColumnFamilyException"
    );
    let err = bounded("get", t.get(Get::new("ok").family("nope")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{err}");
    let scan = bounded("scan", t.scan(Scan::new().family("nope")).collect_all()).await;
    assert!(scan.is_err(), "{scan:?}");

    // In a batch only that action fails; the good one is applied.
    let actions = vec![
        Action::Put(Put::new("b1").add("nope", "q", "v")),
        Action::Put(Put::new("b2").add("cf", "q", "v")),
    ];
    let out = bounded("batch", t.batch(&actions)).await;
    let e = out[0].as_ref().unwrap_err();
    assert_eq!(
        e.remote().unwrap().short_class_name(),
        "NoSuchColumnFamilyException"
    );
    assert!(out[1].is_ok());

    // The buffered mutator reports the row, through the listener and close().
    let reported = Arc::new(Mutex::new(Vec::new()));
    let r2 = reported.clone();
    let m = client
        .buffered_mutator(
            &name.to_string(),
            MutatorConfig::default().on_failure(move |f| r2.lock().unwrap().push(f.row.clone())),
        )
        .unwrap();
    m.mutate(Put::new("m1").add("nope", "q", "v"))
        .await
        .unwrap();
    m.mutate(Put::new("m2").add("cf", "q", "v")).await.unwrap();
    match bounded("close", m.close()).await {
        Err(Error::MutationsFailed { failures }) => {
            assert_eq!(failures.len(), 1);
            assert_eq!(&failures[0].row[..], b"m1");
            assert_eq!(failures[0].error.kind(), ErrorKind::DoNotRetry);
        }
        other => panic!("expected MutationsFailed, got {other:?}"),
    }
    assert_eq!(*reported.lock().unwrap(), vec![Bytes::from("m1")]);
    assert!(t.get(Get::new("m2")).await.unwrap().is_some());
    assert!(t.get(Get::new("m1")).await.unwrap().is_none());
    // No retries were spent on any of it.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(client.stats().total(|s| s.relocations), 0);
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_table_gives_a_typed_error_not_a_hang() {
    let client = client().await;
    let name = hbase_it::unique_table("bad_disabled");
    hbase_it::create_table(&client, &name, &["m"]).await;
    let t = client.table(&name.to_string()).unwrap();
    t.put(Put::new("a").add("cf", "q", "v")).await.unwrap();
    client.admin().disable_table(&name).await.unwrap();

    let started = Instant::now();
    let put = bounded("put", t.put(Put::new("a").add("cf", "q", "w"))).await;
    let get = bounded("get", t.get(Get::new("z"))).await;
    let batch = bounded("batch", t.batch(&[Action::Get(Get::new("a"))])).await;
    let took = started.elapsed();
    eprintln!("disabled table after {took:?}: put {put:?}\nget {get:?}\nbatch {batch:?}");
    for (what, err) in [
        ("put", put.map(|_| ()).unwrap_err()),
        ("get", get.map(|_| ()).unwrap_err()),
        (
            "batch",
            batch.into_iter().next().unwrap().map(|_| ()).unwrap_err(),
        ),
    ] {
        assert!(
            matches!(err, Error::TableDisabled(_)),
            "{what}: expected TableDisabled, got {err}"
        );
        assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{what}");
    }
    assert!(took < Duration::from_secs(15), "took {took:?}");

    client.admin().enable_table(&name).await.unwrap();
    let row = t.get(Get::new("a")).await.unwrap().unwrap();
    assert_eq!(&row.value(b"cf", b"q").unwrap()[..], b"v");
    hbase_it::drop_table(&client, &name).await;
}
