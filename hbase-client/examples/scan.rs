//! Write 100 rows into a pre-split table, then scan a range forward and backward with a filter.
//!
//! `cargo run -p hbase-client --example scan -- 127.0.0.1:2181`

use futures_util::StreamExt;
use hbase_client::{
    Client, ClientConfig, ColumnFamily, Filter, Put, Scan, TableDescriptor, TableName,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let zk = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    let client = Client::connect(ClientConfig::builder(zk).build()?).await?;
    let name = TableName::parse("example_scan")?;
    let admin = client.admin();
    if admin.table_exists(&name).await? {
        admin.disable_table(&name).await?;
        admin.delete_table(&name).await?;
    }
    let desc = TableDescriptor::new(name.clone()).family(ColumnFamily::new("cf"));
    admin
        .create_table(&desc, &["row030".into(), "row060".into()])
        .await?;
    let table = client.table("example_scan")?;
    for i in 0..100 {
        table
            .put(Put::new(format!("row{i:03}")).add("cf", "n", i.to_string()))
            .await?;
    }

    let mut forward = table.scan(Scan::new().start_row("row025").stop_row("row035"));
    while let Some(row) = forward.next().await {
        let row = row?;
        println!(
            "{} = {}",
            String::from_utf8_lossy(&row.row),
            String::from_utf8_lossy(row.value(b"cf", b"n").unwrap())
        );
    }
    let backward = table
        .scan(Scan::new().reversed(true).limit(3))
        .collect_all()
        .await?;
    let keys: Vec<_> = backward
        .iter()
        .map(|r| String::from_utf8_lossy(&r.row).into_owned())
        .collect();
    println!("last three, backward: {keys:?}");
    let sevens = table
        .scan(Scan::new().filter(Filter::Prefix("row07".into())))
        .collect_all()
        .await?;
    println!("rows with prefix row07: {}", sevens.len());

    admin.disable_table(&name).await?;
    admin.delete_table(&name).await?;
    Ok(())
}
