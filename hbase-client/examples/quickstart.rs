//! Create a table, write, read (as cells, and raw) and delete a row, then drop the table.
//!
//! `cargo run -p hbase-client --example quickstart -- 127.0.0.1:2181`

use hbase_client::{Delete, Get, Put};

mod common;

#[tokio::main]
async fn main() -> Result<(), common::Error> {
    let client = common::connect_from_args().await?;
    let admin = client.admin();
    let name = common::fresh_table(&admin, "quickstart", &["m"]).await?;

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
    // The same read, the row's cells left in the block they arrived in (no allocation, one
    // reference count for the row): for reads that look at a few cells.
    let raw = table
        .get_raw(Get::new("zucchini"))
        .await?
        .expect("just written");
    for cell in raw.cells() {
        println!(
            "zucchini {}:{} = {}",
            String::from_utf8_lossy(cell.family()),
            String::from_utf8_lossy(cell.qualifier()),
            String::from_utf8_lossy(cell.value())
        );
    }
    table.delete(Delete::new("apple")).await?;
    assert!(table.get(Get::new("apple")).await?.is_none());
    println!("apple deleted");

    common::drop_table(&admin, &name).await?;
    Ok(())
}
