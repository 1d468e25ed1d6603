//! Write 100 rows into a pre-split table, then scan a range forward and backward with a filter,
//! and a range through `scan_raw`.
//!
//! `cargo run -p hbase-client --example scan -- 127.0.0.1:2181`

use futures_util::StreamExt;
use hbase_client::{Filter, Put, Scan};

mod common;

#[tokio::main]
async fn main() -> Result<(), common::Error> {
    let client = common::connect_from_args().await?;
    let admin = client.admin();
    let name = common::fresh_table(&admin, "example_scan", &["row030", "row060"]).await?;
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
    // Rows from row090 on through `scan_raw`: their cells left in the block the server sent (no
    // vector and no reference count per cell).
    let mut raw = table.scan_raw(Scan::new().start_row("row090"));
    let mut total = 0u64;
    while let Some(row) = raw.next().await {
        let row = row?;
        total += std::str::from_utf8(row.value(b"cf", b"n").unwrap_or_default())?.parse::<u64>()?;
    }
    println!("sum of n over row090..: {total}");

    common::drop_table(&admin, &name).await?;
    Ok(())
}
