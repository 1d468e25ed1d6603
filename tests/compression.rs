//! Snappy-compressed cell blocks against a real HBase: batched puts (request cell blocks) and
//! gets and scans (response cell blocks) round-trip byte for byte.

use bytes::Bytes;
use hbase_client::rpc::CellBlockCompression;
use hbase_client::{Action, ActionResult, Client, Get, MutatorConfig, Put, Scan};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snappy_cell_blocks_round_trip() {
    let config = hbase_it::config_builder()
        .cellblock_compression(CellBlockCompression::Snappy)
        .build()
        .unwrap();
    let client = Client::connect(config).await.unwrap();
    let name = hbase_it::unique_table("snappy");
    hbase_it::create_table(&client, &name, &["s5"]).await;
    let table = client.table(&name.to_string()).unwrap();
    let value = |i: u32| Bytes::from(format!("{i}-").repeat(200));
    let puts: Vec<Action> = (0..1000)
        .map(|i| Action::Put(Put::new(format!("s{i:04}")).add("cf", "q", value(i))))
        .collect();
    assert!(table
        .batch(&puts)
        .await
        .into_iter()
        .all(|r| r.unwrap() == ActionResult::Done));
    let mutator = client
        .buffered_mutator(&name.to_string(), MutatorConfig::default())
        .unwrap();
    for i in 1000..3000 {
        mutator
            .mutate(Put::new(format!("s{i:04}")).add("cf", "q", value(i)))
            .await
            .unwrap();
    }
    mutator.close().await.unwrap();

    let row = table.get(Get::new("s0042")).await.unwrap().unwrap();
    assert_eq!(row.value(b"cf", b"q").unwrap(), &value(42));
    let gets: Vec<Action> = (0..3000)
        .step_by(7)
        .map(|i| Action::Get(Get::new(format!("s{i:04}"))))
        .collect();
    for (k, r) in table.batch(&gets).await.into_iter().enumerate() {
        match r.unwrap() {
            ActionResult::Row(Some(row)) => {
                assert_eq!(row.value(b"cf", b"q").unwrap(), &value(k as u32 * 7))
            }
            other => panic!("get {k}: {other:?}"),
        }
    }
    let rows = table.scan(Scan::new()).collect_all().await.unwrap();
    assert_eq!(rows.len(), 3000);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.value(b"cf", b"q").unwrap(), &value(i as u32));
    }
    // The bytes on the wire really were compressed: far fewer than the ~2.4 MB of values.
    let received = client.stats().total(|s| s.bytes_received);
    assert!(received < 1_500_000, "received {received} bytes");
    hbase_it::drop_table(&client, &name).await;
}
