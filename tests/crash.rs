//! Real crashes against a multi-process local cluster (`scripts/hbase-local start
//! --processes`: ZooKeeper, an active and a backup master, three region servers, each its own
//! JVM): `kill -9` of a region server, of the server hosting `hbase:meta` and of the active
//! master; ZooKeeper restarted and the client's session expired; one region server cut off
//! the network while it keeps running. Each scenario starts a fresh cluster (the scenarios run
//! one at a time), runs the writers of `crash/workload.rs`, waits for the cluster's own
//! events (a server gone from ZooKeeper, its regions reassigned, the first write that lands
//! on the new server), and ends with a row-by-row account of every write, read back: nothing
//! acknowledged may be missing.
//!
//! Each prints its timeline, the client's counters and a `TABLE |` line (scenario, operations
//! attempted, acknowledged, present, reported failed, lost, recovery time).

#[path = "crash/workload.rs"]
mod workload;

use std::collections::HashSet;
use std::future::Future;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{
    Admin, Client, ClientConfigBuilder, ColumnFamily, Put, ServerName, TableDescriptor, TableName,
};
use hbase_it::processes::{wait_for, ProcessCluster};
use workload::{account, stats_line, WriterSet, Writers, REGIONS, SPLITS};

/// The scenarios share ports: one at a time.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// State directory of the scenarios' clusters (under `target/`).
const CLUSTER_DIR: &str = "hbase-crash";

/// Bound on each event a scenario waits for.
const EVENT_LIMIT: Duration = Duration::from_secs(180);

/// Runs a whole scenario within `secs`; a hang fails the test instead of blocking CI.
async fn bounded<T>(secs: u64, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("scenario did not finish within {secs} s"))
}

/// Client settings of the scenarios: an operation may retry for a minute, which covers a
/// server's detection (ZooKeeper session, 10 s) and its regions' reassignment.
fn tune(b: ClientConfigBuilder) -> ClientConfigBuilder {
    b.operation_timeout(Duration::from_secs(60))
        .rpc_timeout(Duration::from_secs(10))
}

/// A 9-region table (see [`SPLITS`]) with family `cf`.
async fn create_table(client: &Client, prefix: &str) -> TableName {
    let name = hbase_it::unique_table(prefix);
    hbase_it::create_table(client, &name, &SPLITS).await;
    name
}

/// Index (0..REGIONS) of the region starting at `start_key`.
fn region_index(start_key: &[u8]) -> usize {
    if start_key.is_empty() {
        0
    } else {
        SPLITS
            .iter()
            .position(|s| s.as_bytes() == start_key)
            .map_or(usize::MAX, |i| i + 1)
    }
}

/// The regions of `table` (by index) that `server` hosts, per meta.
async fn regions_on(admin: &Admin, table: &TableName, server: &ServerName) -> HashSet<usize> {
    admin
        .list_regions(table)
        .await
        .unwrap()
        .iter()
        .filter(|r| r.server.as_ref() == Some(server))
        .map(|r| region_index(&r.region.start_key))
        .collect()
}

/// The server (from meta) of each region of `table`, by index.
async fn servers_of(admin: &Admin, table: &TableName) -> Option<Vec<Option<ServerName>>> {
    let regions = admin.list_regions(table).await.ok()?;
    let mut out = vec![None; REGIONS];
    for r in regions {
        let i = region_index(&r.region.start_key);
        if i < REGIONS {
            out[i] = r.server;
        }
    }
    Some(out)
}

/// Waits until `victim` is no longer registered in ZooKeeper.
async fn wait_gone(admin: &Admin, victim: &ServerName) -> Instant {
    wait_for(
        &format!("{victim} to leave /hbase/rs"),
        EVENT_LIMIT,
        || async {
            let live = admin.region_servers().await.ok()?;
            (!live.contains(victim)).then(Instant::now)
        },
    )
    .await
}

/// Waits until meta places every region of `regions` on a server other than `victim`.
async fn wait_reassigned(
    admin: &Admin,
    table: &TableName,
    victim: &ServerName,
    regions: &HashSet<usize>,
) -> Instant {
    wait_for(
        &format!("the regions {regions:?} of {victim} to be reassigned"),
        EVENT_LIMIT,
        || async {
            let servers = servers_of(admin, table).await?;
            regions
                .iter()
                .all(|&i| matches!(&servers[i], Some(s) if s != victim))
                .then(Instant::now)
        },
    )
    .await
}

/// Waits for the first acknowledged synchronous write to one of `regions` after `t`.
async fn wait_first_ack(
    writers: &Writers,
    t: Instant,
    regions: &HashSet<usize>,
) -> (Instant, String, workload::Via) {
    wait_for(
        &format!("a write to the regions {regions:?} acknowledged after the fault"),
        EVENT_LIMIT,
        || async { writers.ledger.first_ack_after(t, regions) },
    )
    .await
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Whether `needle` is in one of the cluster's WAL files now (read through the kernel, as a
/// process that replays them after a crash would).
fn in_wal_files(cluster: &ProcessCluster, needle: &[u8]) -> bool {
    let Ok(servers) = std::fs::read_dir(cluster.root_dir().join("WALs")) else {
        return false;
    };
    servers.flatten().any(|server| {
        std::fs::read_dir(server.path())
            .into_iter()
            .flatten()
            .flatten()
            .any(|f| {
                std::fs::read(f.path())
                    .map(|b| b.windows(needle.len()).any(|w| w == needle))
                    .unwrap_or(false)
            })
    })
}

// ---------------------------------------------------------------------------------------------
// 1. kill -9 of a region server during a buffered load

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn region_server_killed_during_buffered_load_loses_nothing() {
    let _turn = TURN.lock().await;
    bounded(900, async {
        let cluster = ProcessCluster::start(CLUSTER_DIR, &[]).await;
        let client = cluster.client(tune).await;
        let admin = client.admin();

        // What kill -9 safety rests on: an acknowledged edit is already in its WAL file, in
        // the kernel, when the put returns (hflush reached the OS, not a JVM buffer).
        let probe = hbase_it::unique_table("crash_walprobe");
        admin
            .create_table(&TableDescriptor::new(probe.clone()).family(ColumnFamily::new("cf")), &[])
            .await
            .unwrap();
        let probe_table = client.table(&probe.to_string()).unwrap();
        let mut visible = 0;
        for i in 0..50 {
            let marker = format!("wal-probe-{}-{i:03}-{}", std::process::id(), "m".repeat(32));
            probe_table
                .put(Put::new(format!("p{i:03}")).add("cf", "q", Bytes::from(marker.clone())))
                .await
                .unwrap();
            visible += usize::from(in_wal_files(&cluster, marker.as_bytes()));
        }
        eprintln!("WAL probe: {visible} of 50 acknowledged edits were in their WAL file when the put returned");
        assert_eq!(visible, 50, "acknowledged edits not yet in the WAL file: a kill -9 would lose them");
        hbase_it::drop_table(&client, &probe).await;

        let name = create_table(&client, "crash_rs").await;
        let table = client.table(&name.to_string()).unwrap();
        // The victim: the server with most of the table's regions, not the meta host (that is
        // scenario 2).
        let meta = cluster.meta_host().await.expect("meta assigned");
        let servers = servers_of(&admin, &name).await.unwrap();
        let mut candidates: Vec<ServerName> = servers
            .iter()
            .flatten()
            .filter(|s| cluster.rs_number(s) != meta)
            .cloned()
            .collect();
        candidates.sort_by_key(|s| std::cmp::Reverse(servers.iter().flatten().filter(|x| *x == s).count()));
        let victim = candidates.first().expect("a server other than meta's has regions").clone();
        let victim_no = cluster.rs_number(&victim);
        let victim_regions = regions_on(&admin, &name, &victim).await;

        let writers = Writers::start(&client, &name, WriterSet::default());
        writers.progress(500, EVENT_LIMIT).await;
        let before = client.stats();
        let t_kill = Instant::now();
        cluster.kill_rs(victim_no).await;
        let t_gone = wait_gone(&admin, &victim).await;
        let t_assigned = wait_reassigned(&admin, &name, &victim, &victim_regions).await;
        let (t_first, first_row, first_via) = wait_first_ack(&writers, t_kill, &victim_regions).await;
        // The load goes on, on the other servers, for as much again.
        writers.progress(1000, EVENT_LIMIT).await;
        let resumed = writers.ledger.acked_after(t_first, &victim_regions).len();
        let in_outage = writers.ledger.acked_between(t_kill, t_first, &victim_regions);
        let ledger = writers.stop().await;
        let after = client.stats();

        let report = account(&table, &ledger).await;
        eprintln!(
            "scenario 1: killed rs{victim_no} ({victim}, {} of {REGIONS} regions: {victim_regions:?}); gone from ZooKeeper after {}, regions reassigned after {}, first write to a reassigned region ({first_via:?} {first_row}) acknowledged after {}; {in_outage} writes to other regions acknowledged meanwhile, {resumed} to the reassigned regions after",
            victim_regions.len(),
            secs(t_gone - t_kill),
            secs(t_assigned - t_kill),
            secs(t_first - t_kill),
        );
        eprintln!("scenario 1 client counters: before the kill: {}", stats_line(&before));
        eprintln!("scenario 1 client counters: at the end: {}", stats_line(&after));
        report.print("1 kill -9 region server, buffered load", Some(t_first - t_kill));
        report.assert_nothing_lost();
        assert_eq!(report.total.over_applied, 0, "increments applied twice");
        assert!(resumed > 0, "no write reached the reassigned regions after recovery");
        assert!(in_outage > 0, "writes to the other servers' regions stalled during the outage");
        assert!(after.total(|s| s.retries) > before.total(|s| s.retries), "the kill never touched the load");
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}
