//! Snapshots against a real HBase: take one, change the table, clone the snapshot into a new
//! table and restore the original in place; each holds exactly the rows of the moment the
//! snapshot was taken. Also the typed errors for bad names and missing tables.

// rustc 1.95 runs out of query depth laying out this file's nested client futures (Table::put
// beside Table::scan in one crate); the default limit of 128 is a compiler bound, not ours.
#![recursion_limit = "256"]

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{ErrorKind, Put, Scan, Table, TableName};

fn row(i: u32) -> Bytes {
    Bytes::from(format!("row{i:04}"))
}

/// Every (row, value) of the table, in row order.
async fn contents(table: &Table) -> Vec<(Bytes, Bytes)> {
    let mut stream = table.scan(Scan::new());
    let mut out = Vec::new();
    while let Some(r) = stream.next().await {
        let r = r.expect("scan");
        let v = r.value_bytes(b"cf", b"q").expect("cf:q");
        out.push((r.row, v));
    }
    out
}

async fn write(table: &Table, first: u32, end: u32, value: &'static str) {
    let mut i = first;
    while i < end {
        let put = Put::new(row(i)).add("cf", "q", value);
        table.put(put).await.expect("put");
        i += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_clone_restore_list_delete() {
    let client = hbase_it::client().await;
    let admin = client.admin();
    let name = hbase_it::unique_table("snap_src");
    hbase_it::create_table(&client, &name, &["row0100"]).await;
    let table = client.table(&name.to_string()).unwrap();
    write(&table, 0, 200, "v1").await;
    let at_snapshot = contents(&table).await;
    assert_eq!(at_snapshot.len(), 200);

    let snap = format!("{}_snap", String::from_utf8_lossy(name.qualifier()));
    admin.snapshot(&snap, &name).await.expect("snapshot");
    let listed = admin.list_snapshots().await.expect("list");
    let info = listed.iter().find(|s| s.name == snap).expect("listed");
    assert_eq!(info.table, name.to_string());
    assert!(info.creation_time_ms > 0);

    // Change the source after the snapshot: overwrite half, add more rows.
    write(&table, 0, 100, "v2").await;
    write(&table, 200, 250, "v2").await;
    assert_eq!(contents(&table).await.len(), 250);

    // A clone holds the rows of the snapshot, not the later ones.
    let clone = hbase_it::unique_table("snap_clone");
    admin.clone_snapshot(&snap, &clone).await.expect("clone");
    let cloned = client.table(&clone.to_string()).unwrap();
    assert_eq!(contents(&cloned).await, at_snapshot);
    // Cloning onto an existing table is refused before any RPC.
    let err = admin.clone_snapshot(&snap, &clone).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DoNotRetry);

    // Restore in place (table disabled first, as in HBase).
    admin.disable_table(&name).await.expect("disable");
    admin.restore_snapshot(&snap).await.expect("restore");
    admin.enable_table(&name).await.expect("enable");
    assert_eq!(contents(&table).await, at_snapshot);

    admin.delete_snapshot(&snap).await.expect("delete snapshot");
    let listed = admin.list_snapshots().await.expect("list");
    assert!(listed.iter().all(|s| s.name != snap));
    // The clone stays readable after its snapshot is gone.
    assert_eq!(contents(&cloned).await, at_snapshot);

    hbase_it::drop_table(&client, &clone).await;
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_errors_are_typed() {
    let client = hbase_it::client().await;
    let admin = client.admin();
    let err = admin
        .snapshot("bad name", &TableName::parse("whatever").unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DoNotRetry);

    let missing = hbase_it::unique_table("snap_missing");
    let err = admin
        .snapshot("snap_of_missing", &missing)
        .await
        .unwrap_err();
    let kind = err.kind();
    assert!(
        kind == ErrorKind::NotFound || kind == ErrorKind::DoNotRetry,
        "snapshot of a missing table: {err} ({kind:?})"
    );
    let err = admin
        .restore_snapshot("no_such_snapshot")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DoNotRetry);
}
