//! A batch of mixed actions (one Multi per server), then 50,000 buffered puts.
//!
//! `cargo run -p hbase-client --example batch_and_mutator -- 127.0.0.1:2181`

use std::time::Instant;

use hbase_client::{Action, ActionResult, Get, MutatorConfig, Put, Scan};

mod common;

#[tokio::main]
async fn main() -> Result<(), common::Error> {
    let client = common::connect_from_args().await?;
    let admin = client.admin();
    let name = common::fresh_table(&admin, "example_batch", &["k3", "k6"]).await?;
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
    common::drop_table(&admin, &name).await?;
    Ok(())
}
