//! Create a table, write, read and delete a row, then drop the table.
//!
//! `cargo run -p hbase-client --example quickstart -- 127.0.0.1:2181`

use hbase_client::{
    Client, ClientConfig, ColumnFamily, Delete, Get, Put, TableDescriptor, TableName,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let zk = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    let client = Client::connect(ClientConfig::builder(zk).build()?).await?;
    let admin = client.admin();
    let name = TableName::parse("quickstart")?;
    if admin.table_exists(&name).await? {
        admin.disable_table(&name).await?;
        admin.delete_table(&name).await?;
    }
    let desc = TableDescriptor::new(name.clone()).family(ColumnFamily::new("cf"));
    admin.create_table(&desc, &["m".into()]).await?;

    let table = client.table("quickstart")?;
    table
        .put(Put::new("apple").add("cf", "color", "red"))
        .await?;
    table
        .put(Put::new("zucchini").add("cf", "color", "green"))
        .await?;
    for key in ["apple", "zucchini"] {
        let row = table.get(Get::new(key)).await?.expect("just written");
        let color = row.value(b"cf", b"color").expect("has color");
        println!("{key}: {}", String::from_utf8_lossy(color));
    }
    table.delete(Delete::new("apple")).await?;
    assert!(table.get(Get::new("apple")).await?.is_none());
    println!("apple deleted");

    admin.disable_table(&name).await?;
    admin.delete_table(&name).await?;
    Ok(())
}
