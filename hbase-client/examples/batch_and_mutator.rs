//! A batch of mixed actions (one Multi per server), then 50,000 buffered puts.
//!
//! `cargo run -p hbase-client --example batch_and_mutator -- 127.0.0.1:2181`

use std::time::Instant;

use hbase_client::{
    Action, ActionResult, Client, ClientConfig, ColumnFamily, Get, MutatorConfig, Put, Scan,
    TableDescriptor, TableName,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let zk = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    let client = Client::connect(ClientConfig::builder(zk).build()?).await?;
    let name = TableName::parse("example_batch")?;
    let admin = client.admin();
    if admin.table_exists(&name).await? {
        admin.disable_table(&name).await?;
        admin.delete_table(&name).await?;
    }
    let desc = TableDescriptor::new(name.clone()).family(ColumnFamily::new("cf"));
    admin
        .create_table(&desc, &["k3".into(), "k6".into()])
        .await?;
    let table = client.table("example_batch")?;

    let mut actions: Vec<Action> = (0..9)
        .map(|i| Action::Put(Put::new(format!("k{i}")).add("cf", "q", "v")))
        .collect();
    actions.push(Action::Get(Get::new("k4")));
    for (i, outcome) in table.batch(&actions).await.into_iter().enumerate() {
        match outcome? {
            ActionResult::Row(row) => {
                println!("action {i}: get -> {:?}", row.map(|r| r.cells.len()))
            }
            ActionResult::Done => {}
        }
    }

    let mutator = client.buffered_mutator("example_batch", MutatorConfig::default())?;
    let started = Instant::now();
    for i in 0..50_000 {
        mutator
            .mutate(Put::new(format!("m{i:05}")).add("cf", "q", "value"))
            .await?;
    }
    let buffered = started.elapsed();
    mutator.close().await?; // every mutation is acknowledged, or close() says which failed
    println!(
        "50,000 puts buffered in {buffered:?}, flushed and acknowledged in {:?}",
        started.elapsed()
    );
    let count = table
        .scan(Scan::new().start_row("m").stop_row("n"))
        .collect_all()
        .await?
        .len();
    println!("rows read back: {count}");
    for s in client.stats().servers {
        println!("{}: {} calls, {} Multi", s.server, s.calls, s.multi_calls);
    }
    admin.disable_table(&name).await?;
    admin.delete_table(&name).await?;
    Ok(())
}
