//! Counters, conditional writes and atomic row mutations, and what their errors mean.
//!
//! Increments, appends and check-and-mutates carry a nonce, so a retry after a lost answer
//! never applies them twice; when the client cannot know whether a write was applied, the
//! error's kind is `OutcomeUnknown` and the row says.
//!
//! `cargo run -p hbase-client --example counters_and_conditions -- 127.0.0.1:2181`

use std::time::Duration;

use hbase_client::{
    CheckAndMutate, Comparator, CompareOp, ErrorKind, Filter, Get, Increment, Put, RowMutations,
};

mod common;

#[tokio::main]
async fn main() -> Result<(), common::Error> {
    let client = common::connect_from_args().await?;
    let admin = client.admin();
    let name = common::fresh_table(&admin, "example_counters", &[]).await?;
    // A handle with its own deadlines: short calls, few retries.
    let table = client
        .table_builder("example_counters")?
        .operation_timeout(Duration::from_secs(5))
        .rpc_timeout(Duration::from_secs(1))
        .build();

    let visits = table.increment_column("page-1", "cf", "visits", 1).await?;
    println!("visits: {visits}");

    // Claim a job only if nobody holds it; the owner and a claim count change together.
    let claim = CheckAndMutate::new("job-7", "cf", "owner")
        .if_absent()
        .then_mutate(
            RowMutations::new("job-7")
                .put(Put::new("job-7").add("cf", "owner", "worker-a"))
                .increment(Increment::new("job-7").add("cf", "claims", 1)),
        );
    match table.check_and_mutate(claim).await {
        Ok(true) => println!("job-7 claimed"),
        Ok(false) => println!("job-7 was already claimed"),
        Err(e) if e.kind() == ErrorKind::OutcomeUnknown => {
            // An attempt got no answer: read the row to know who holds the job.
            let row = table.get(Get::new("job-7")).await?;
            println!("job-7: outcome unknown ({e}); the row says {row:?}");
        }
        Err(e) => return Err(e.into()),
    }

    // A filter condition: release the job only if worker-a holds it.
    let release = CheckAndMutate::on_row("job-7")
        .if_filter(Filter::Value(
            CompareOp::Equal,
            Comparator::Binary("worker-a".into()),
        ))
        .then_put(Put::new("job-7").add("cf", "state", "released"));
    println!(
        "released by worker-a: {}",
        table.check_and_mutate(release).await?
    );

    let row = table.get(Get::new("job-7")).await?.expect("job-7 exists");
    for cell in &row.cells {
        println!(
            "  {}:{} = {:?}",
            String::from_utf8_lossy(cell.family()),
            String::from_utf8_lossy(cell.qualifier()),
            cell.value_bytes()
        );
    }
    common::drop_table(&admin, &name).await?;
    Ok(())
}
