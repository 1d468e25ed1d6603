//! End-to-end reads and writes against a real HBase with 3 region servers.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{Client, ClientConfig, Delete, ErrorKind, Get, Put};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presplit_table_put_get_delete_across_region_servers() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("t");
    hbase_it::create_table(&client, &name, &["row250", "row500", "row750"]).await;
    let admin = client.admin();
    assert!(admin.table_exists(&name).await.unwrap());

    // 3 split keys give 4 regions, with the given boundaries, on at least 2 servers.
    let regions = admin.list_regions(&name).await.unwrap();
    assert_eq!(regions.len(), 4);
    let starts: Vec<&[u8]> = regions.iter().map(|r| &r.region.start_key[..]).collect();
    assert_eq!(starts, vec![&b""[..], b"row250", b"row500", b"row750"]);
    let servers: HashSet<_> = regions
        .iter()
        .map(|r| r.server.clone().expect("assigned"))
        .collect();
    assert!(servers.len() >= 2, "regions all on one server: {servers:?}");

    let table = client.table(&name.to_string()).unwrap();
    let key = |i: u32| Bytes::from(format!("row{i:03}"));
    let value = |i: u32| Bytes::from(format!("value-{i}-{}", "x".repeat((i % 50) as usize)));
    for i in 0..1000 {
        table
            .put(
                Put::new(key(i))
                    .add("cf", "q", value(i))
                    .add("cf", "n", i.to_be_bytes()),
            )
            .await
            .unwrap();
    }
    for i in 0..1000 {
        let row = table
            .get(Get::new(key(i)))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("row {i} missing"));
        assert_eq!(row.row, key(i));
        assert_eq!(row.value(b"cf", b"q").unwrap(), &value(i));
        assert_eq!(row.value(b"cf", b"n").unwrap(), &i.to_be_bytes());
        assert_eq!(row.cells.len(), 2);
    }
    // Delete every tenth row: 100 rows, spread over all regions.
    for i in (0..1000).step_by(10) {
        table.delete(Delete::new(key(i))).await.unwrap();
    }
    for i in 0..1000 {
        let got = table.get(Get::new(key(i))).await.unwrap();
        assert_eq!(got.is_none(), i % 10 == 0, "row {i}");
    }
    // Narrowed get returns only the asked column.
    let row = table
        .get(Get::new(key(1)).column("cf", "q"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.cells.len(), 1);

    hbase_it::drop_table(&client, &name).await;
    assert!(!admin.table_exists(&name).await.unwrap());
}

#[tokio::test]
async fn get_of_missing_row_is_none() {
    let client = hbase_it::client().await;
    let name = hbase_it::unique_table("missing_row");
    hbase_it::create_table(&client, &name, &[]).await;
    let table = client.table(&name.to_string()).unwrap();
    assert!(table.get(Get::new("no-such-row")).await.unwrap().is_none());
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test]
async fn missing_table_is_not_found() {
    let client = hbase_it::client().await;
    let table = client.table("no_such_table_anywhere").unwrap();
    let err = table.get(Get::new("r")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let err = table
        .put(Put::new("r").add("cf", "q", "v"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
}

#[tokio::test]
async fn zk_with_nothing_listening_fails_within_timeout() {
    // Bind and drop a listener to get a port with nothing behind it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = ClientConfig::builder(format!("127.0.0.1:{port}"))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = Client::connect(config)
        .await
        .err()
        .expect("connect must fail");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        matches!(err.kind(), ErrorKind::Timeout | ErrorKind::Retryable),
        "{err}"
    );
}
