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
use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{
    Admin, Client, ClientConfigBuilder, ColumnFamily, Put, ServerName, StatsSnapshot,
    TableDescriptor, TableName,
};
use hbase_it::processes::{wait_for, ProcessCluster};
use hbase_it::{bounded, stats_line};
use workload::{account, WriterSet, Writers, REGIONS, SPLITS};

/// The scenarios share ports: one at a time.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// State directory of the scenarios' clusters (under `target/`).
const CLUSTER_DIR: &str = "hbase-crash";

/// Bound on each event a scenario waits for.
const EVENT_LIMIT: Duration = Duration::from_secs(180);

/// The scenarios' client operation timeout.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(120);

/// Client settings of the scenarios: the client's default operation timeout (2 minutes, which
/// covers a server's detection, 10 s of ZooKeeper session, and its regions' reassignment on
/// a busy machine) and a 10 s RPC timeout.
fn tune(b: ClientConfigBuilder) -> ClientConfigBuilder {
    b.operation_timeout(OPERATION_TIMEOUT)
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

/// Moves the regions `indexes` of `table` to `dest`, each until it is open there; returns the
/// regions `dest` hosts then (the moved ones at least). A server that has just registered may
/// not serve yet (ServerNotRunningYetException), and a move on a busy machine may outlast one
/// admin deadline: a failed move is asked again, bounded by [`EVENT_LIMIT`].
async fn move_regions_to(
    admin: &Admin,
    table: &TableName,
    indexes: &[usize],
    dest: &ServerName,
) -> HashSet<usize> {
    let patient = admin.clone().with_timeout(ADMIN_DEADLINE);
    for &i in indexes {
        let what = format!("region {i} of {table} to open on {dest}");
        wait_for(&what, EVENT_LIMIT, || async {
            let region = patient
                .list_regions(table)
                .await
                .ok()?
                .get(i)?
                .region
                .clone();
            patient.move_region(&region, Some(dest)).await.ok()
        })
        .await;
    }
    let on_dest = regions_on(admin, table, dest).await;
    assert!(
        indexes.iter().all(|i| on_dest.contains(i)),
        "moved {indexes:?} to {dest}, which hosts {on_dest:?}"
    );
    on_dest
}

/// Starts the writers of `set` on `table` and waits for their first 500 acknowledged writes;
/// returns them and the client's counters then (before the fault).
async fn start_load(
    client: &Client,
    table: &TableName,
    set: WriterSet,
) -> (Writers, StatsSnapshot) {
    let writers = Writers::start(client, table, set);
    writers.progress(500, EVENT_LIMIT).await;
    (writers, client.stats())
}

/// The writers with the `get` reader beside them.
fn with_reader() -> WriterSet {
    WriterSet {
        reader: true,
        ..WriterSet::default()
    }
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
                    .map(|b| hbase_it::contains_bytes(&b, needle))
                    .unwrap_or(false)
            })
    })
}

// ---------------------------------------------------------------------------------------------
// 0. the scenarios' own cluster: stopped, it frees its ports

/// `stop --kill` returns only once every daemon is gone, its ports with it: the next scenario
/// starts on the same ports at once. A killed process's `/proc/PID/cmdline` reads empty as soon
/// as its memory is released, before its sockets close; the script once took that for "gone",
/// returned with 3 or 4 of the cluster's 6 ports still bound, and a scenario's start failed with
/// "port 16013 is already in use".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_cluster_has_freed_its_ports_when_stop_returns() {
    let _turn = TURN.lock().await;
    let cluster = ProcessCluster::start(CLUSTER_DIR, &[]).await;
    let mut ports = vec![
        cluster.zk_port(),
        cluster.master_port(1),
        cluster.master_port(2),
    ];
    ports.extend((1..=hbase_it::processes::REGION_SERVERS).map(|n| cluster.rs_port(n)));
    for &port in &ports {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "nothing listens on {port} in a running cluster"
        );
    }
    let out = cluster.script(&["stop", "--kill"]).await;
    assert!(out.status.success(), "{out:?}");
    let bound: Vec<u16> = ports
        .iter()
        .copied()
        .filter(|&port| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok())
        .collect();
    assert!(bound.is_empty(), "still bound after stop --kill: {bound:?}");
}

// ---------------------------------------------------------------------------------------------
// 1. kill -9 of a region server during a buffered load

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn region_server_killed_during_buffered_load_loses_nothing() {
    let _turn = TURN.lock().await;
    let cluster = ProcessCluster::start(CLUSTER_DIR, &[]).await;
    // The start is bounded by the script's own timeouts; `bounded` guards the scenario.
    bounded(900, async {
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

        let (writers, before) = start_load(&client, &name, WriterSet::default()).await;
        cluster.kill_rs(victim_no).await;
        // The server is gone once the script returns: every write started later needs another.
        let t_kill = Instant::now();
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
        assert!(resumed > 0, "no write reached the reassigned regions after recovery");
        assert!(in_outage > 0, "writes to the other servers' regions stalled during the outage");
        assert!(after.total(|s| s.retries) > before.total(|s| s.retries), "the kill never touched the load");
        let retried: u64 = after.retries_by_cause.values().sum();
        assert_eq!(retried, after.total(|s| s.retries), "retries by cause do not add up: {:?}", after.retries_by_cause);
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

/// The live region server registered on `port`.
async fn live_server(admin: &Admin, port: u16) -> ServerName {
    wait_for(
        &format!("a region server on port {port}"),
        EVENT_LIMIT,
        || async {
            admin
                .region_servers()
                .await
                .ok()?
                .into_iter()
                .find(|s| s.port == port)
        },
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// 2. kill -9 of the region server hosting hbase:meta during a mixed workload

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_host_killed_during_mixed_workload_client_relocates_meta() {
    let _turn = TURN.lock().await;
    let cluster = ProcessCluster::start(CLUSTER_DIR, &[]).await;
    // The start is bounded by the script's own timeouts; `bounded` guards the scenario.
    bounded(900, async {
        let client = cluster.client(tune).await;
        let admin = client.admin();
        let name = create_table(&client, "crash_meta").await;
        let table = client.table(&name.to_string()).unwrap();
        let meta_no = cluster.meta_host().await.expect("meta assigned");
        let meta = live_server(&admin, cluster.rs_port(meta_no)).await;
        // The meta host serves user regions too: three of them.
        let servers = servers_of(&admin, &name).await.unwrap();
        let others: Vec<usize> = (0..REGIONS)
            .filter(|&i| servers[i].as_ref() != Some(&meta))
            .take(2)
            .collect();
        let victim_regions = move_regions_to(&admin, &name, &others, &meta).await;

        let (writers, before) = start_load(&client, &name, with_reader()).await;
        let killed = cluster.kill_meta().await;
        let t_kill = Instant::now();
        assert_eq!(killed, meta_no);
        let t_gone = wait_gone(&admin, &meta).await;
        let (t_meta, new_meta) = wait_for("hbase:meta to reopen elsewhere", EVENT_LIMIT, || async {
            match cluster.meta_host().await {
                Some(n) if n != meta_no => Some((Instant::now(), n)),
                _ => None,
            }
        })
        .await;
        let t_assigned = wait_reassigned(&admin, &name, &meta, &victim_regions).await;
        let (t_first, first_row, first_via) = wait_first_ack(&writers, t_kill, &victim_regions).await;
        writers.progress(1000, EVENT_LIMIT).await;
        let resumed = writers.ledger.acked_after(t_first, &victim_regions).len();
        let in_outage = writers.ledger.acked_between(t_kill, t_meta, &victim_regions);
        let ledger = writers.stop().await;
        let after = client.stats();
        let report = account(&table, &ledger).await;
        let reads = &ledger.reads;
        eprintln!(
            "scenario 2: killed rs{meta_no} ({meta}: hbase:meta and {} of {REGIONS} regions); gone from ZooKeeper after {}, meta open on rs{new_meta} after {}, regions reassigned after {}, first write to a reassigned region ({first_via:?} {first_row}) acknowledged after {}; {in_outage} writes to other regions acknowledged while meta was down, {resumed} to the reassigned regions after; reads of acknowledged rows: {} ok, {} failed, {} wrong",
            victim_regions.len(),
            secs(t_gone - t_kill),
            secs(t_meta - t_kill),
            secs(t_assigned - t_kill),
            secs(t_first - t_kill),
            reads.ok.load(std::sync::atomic::Ordering::SeqCst),
            reads.failed.load(std::sync::atomic::Ordering::SeqCst),
            reads.wrong.lock().unwrap().len(),
        );
        eprintln!("scenario 2 client counters: before the kill: {}", stats_line(&before));
        eprintln!("scenario 2 client counters: at the end: {}", stats_line(&after));
        report.print("2 kill -9 meta host, mixed workload", Some(t_first - t_kill));
        report.assert_nothing_lost();
        let wrong = reads.wrong.lock().unwrap().clone();
        assert!(wrong.is_empty(), "reads missed acknowledged rows: {:?}", &wrong[..wrong.len().min(10)]);
        assert!(resumed > 0, "no write reached the reassigned regions after recovery");
        assert!(in_outage > 0, "cached regions stalled while meta was down");
        assert!(
            after.meta_lookups > before.meta_lookups,
            "the client never looked meta up again"
        );
        hbase_it::drop_table(&client, &name).await;
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 3. kill -9 of the active master during admin calls and data traffic

/// Each admin call's own deadline (`Admin::with_timeout`).
const ADMIN_DEADLINE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AdminOp {
    Create,
    Split,
    Move,
}

#[derive(Debug)]
struct AdminRecord {
    op: AdminOp,
    started: Instant,
    elapsed: Duration,
    result: Result<(), (hbase_client::ErrorKind, String)>,
}

/// Creates tables, splits a table and moves regions of the data table, one call at a time,
/// until stopped; `in_flight` is set while a call runs.
async fn admin_loop(
    client: Client,
    data: TableName,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    in_flight: std::sync::Arc<std::sync::atomic::AtomicBool>,
    log: std::sync::Arc<std::sync::Mutex<Vec<AdminRecord>>>,
) {
    use std::sync::atomic::Ordering::SeqCst;
    let admin = client.admin().with_timeout(ADMIN_DEADLINE);
    let split_table = hbase_it::unique_table("crash_split");
    admin
        .create_table(
            &TableDescriptor::new(split_table.clone()).family(ColumnFamily::new("cf")),
            &[],
        )
        .await
        .unwrap();
    let mut i = 0usize;
    while !stop.load(SeqCst) {
        let op = [AdminOp::Create, AdminOp::Split, AdminOp::Move][i % 3];
        i += 1;
        let started = Instant::now();
        in_flight.store(true, SeqCst);
        let result = match op {
            AdminOp::Create => {
                let name = hbase_it::unique_table(&format!("crash_adm{i}"));
                let desc = TableDescriptor::new(name).family(ColumnFamily::new("cf"));
                admin.create_table(&desc, &[Bytes::from("m")]).await
            }
            AdminOp::Split => admin
                .split_table_at(&split_table, format!("s{i:05}").as_bytes())
                .await
                .map(|_| ()),
            AdminOp::Move => {
                async {
                    let regions = admin.list_regions(&data).await?;
                    let region = &regions[i % regions.len()];
                    let live = admin.region_servers().await?;
                    let dest = live
                        .iter()
                        .find(|s| Some(*s) != region.server.as_ref())
                        .cloned();
                    admin
                        .move_region(&region.region, dest.as_ref())
                        .await
                        .map(|_| ())
                }
                .await
            }
        };
        in_flight.store(false, SeqCst);
        log.lock().unwrap().push(AdminRecord {
            op,
            started,
            elapsed: started.elapsed(),
            result: result.map_err(|e| (e.kind(), e.to_string())),
        });
    }
}

/// Waits until every kind of admin call has completed once after being started after `t`.
async fn wait_admin_ok_after(log: &std::sync::Mutex<Vec<AdminRecord>>, t: Instant) -> Instant {
    wait_for(
        "a create, a split and a move to complete on the new master",
        EVENT_LIMIT * 2,
        || async {
            let log = log.lock().unwrap();
            let ok = |op| {
                log.iter()
                    .any(|r| r.op == op && r.started > t && r.result.is_ok())
            };
            (ok(AdminOp::Create) && ok(AdminOp::Split) && ok(AdminOp::Move)).then(Instant::now)
        },
    )
    .await
}

/// Kills the active master while an admin call is in flight; waits until another master is
/// active and the admin calls work again. Returns (killed, new active, kill time, active
/// time, admin-ok time).
async fn fail_over_master(
    cluster: &ProcessCluster,
    admin: &Admin,
    in_flight: &std::sync::atomic::AtomicBool,
    log: &std::sync::Mutex<Vec<AdminRecord>>,
) -> (u32, u32, Instant, Instant, Instant) {
    wait_for("an admin call in flight", EVENT_LIMIT, || async {
        in_flight
            .load(std::sync::atomic::Ordering::SeqCst)
            .then_some(())
    })
    .await;
    let killed = cluster.kill_active_master().await;
    let t_kill = Instant::now();
    let killed_port = cluster.master_port(killed);
    let (t_active, active) = wait_for("another master to become active", EVENT_LIMIT, || async {
        let m = admin.master().await.ok()?;
        (m.port != killed_port).then(|| (Instant::now(), m))
    })
    .await;
    let new_no = (1..=2)
        .find(|&n| cluster.master_port(n) == active.port)
        .unwrap();
    let t_ok = wait_admin_ok_after(log, t_active).await;
    (killed, new_no, t_kill, t_active, t_ok)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_master_killed_during_admin_calls_and_data_traffic() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::{Arc, Mutex};
    let _turn = TURN.lock().await;
    let cluster = ProcessCluster::start(CLUSTER_DIR, &[]).await;
    // The start is bounded by the script's own timeouts; `bounded` guards the scenario.
    bounded(1200, async {
        let client = cluster.client(tune).await;
        let admin = client.admin();
        let name = create_table(&client, "crash_master").await;
        let table = client.table(&name.to_string()).unwrap();
        let writers = Writers::start(&client, &name, WriterSet::default());
        let stop = Arc::new(AtomicBool::new(false));
        let in_flight = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let admin_task = tokio::spawn(admin_loop(
            client.clone(),
            name.clone(),
            stop.clone(),
            in_flight.clone(),
            log.clone(),
        ));
        let t0 = Instant::now();
        wait_admin_ok_after(&log, t0).await;
        writers.progress(200, EVENT_LIMIT).await;
        let before = client.stats();

        // Twice: master1 → master2, then (master1 restarted as a backup) master2 → master1.
        let mut failovers = Vec::new();
        for round in 0..2 {
            let f = fail_over_master(&cluster, &admin, &in_flight, &log).await;
            let (killed, active, t_kill, t_active, t_ok) = f;
            let data_in_outage = writers.ledger.acked_between(t_kill, t_active, &HashSet::new());
            eprintln!(
                "scenario 3, failover {}: killed master{killed}; master{active} active after {}, a create, a split and a move done on it after {}; {data_in_outage} data writes acknowledged while no master was active",
                round + 1,
                secs(t_active - t_kill),
                secs(t_ok - t_kill)
            );
            assert!(data_in_outage > 0, "data traffic stopped with the master");
            failovers.push((t_kill, t_active));
            cluster.start_masters().await;
        }
        writers.progress(200, EVENT_LIMIT).await;
        stop.store(true, SeqCst);
        admin_task.await.unwrap();
        let ledger = writers.stop().await;
        let after = client.stats();

        let log = std::mem::take(&mut *log.lock().unwrap());
        let mut late = Vec::new();
        for op in [AdminOp::Create, AdminOp::Split, AdminOp::Move] {
            let of: Vec<&AdminRecord> = log.iter().filter(|r| r.op == op).collect();
            let ok = of.iter().filter(|r| r.result.is_ok()).count();
            let slowest = of.iter().map(|r| r.elapsed).max().unwrap_or_default();
            let mut kinds: Vec<String> = of
                .iter()
                .filter_map(|r| r.result.as_ref().err())
                .map(|(k, e)| format!("{k:?}: {}", e.lines().next().unwrap_or("")))
                .collect();
            kinds.sort();
            kinds.dedup();
            eprintln!(
                "scenario 3 admin {op:?}: {} calls, {ok} completed, {} failed (typed: {kinds:?}), slowest {}",
                of.len(),
                of.len() - ok,
                secs(slowest)
            );
            // A call waits at most its deadline, plus the RPC it may have in flight then.
            late.extend(
                of.iter()
                    .filter(|r| r.elapsed > ADMIN_DEADLINE + Duration::from_secs(12))
                    .map(|r| format!("{op:?} took {} ({:?})", secs(r.elapsed), r.result)),
            );
        }
        let report = account(&table, &ledger).await;
        eprintln!("scenario 3 client counters: before the first kill: {}", stats_line(&before));
        eprintln!("scenario 3 client counters: at the end: {}", stats_line(&after));
        let recovery = failovers.iter().map(|(k, a)| *a - *k).max();
        report.print("3 kill -9 active master, admin + data", recovery);
        report.assert_nothing_lost();
        assert!(late.is_empty(), "admin calls past their deadline: {late:?}");
        // A region whose move a master's death interrupted stays in transition until the new
        // master finishes the move: writes to it may run out of time, reported as such. Any
        // other failure is not explained by a master's death.
        let unexplained: Vec<&String> = report
            .errors
            .keys()
            .filter(|e| !(e.contains("NotServingRegionException") || e.contains("RegionMovedException") || e.contains("RegionOffline") || e.contains("is not online") || e.contains("timed out")))
            .collect();
        assert!(unexplained.is_empty(), "data writes failed for other reasons: {unexplained:?}");
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 4. ZooKeeper restarted, and the client's ZooKeeper session expired, during a run

/// Whether ZooKeeper (`cons`) lists a client connection from local port `port`, asked until
/// it answers (a busy ZooKeeper can miss the 3 s of one probe; a missed answer is no "no").
async fn zk_lists(zk: &str, port: u16) -> bool {
    wait_for(
        &format!("ZooKeeper at {zk} to answer `cons`"),
        hbase_it::processes::ZK_ANSWER_LIMIT,
        || zk_lists_connection_from(zk, port),
    )
    .await
}

/// Whether ZooKeeper (`cons`) lists a client connection from local port `port`; `None` if it
/// did not answer in time.
async fn zk_lists_connection_from(zk: &str, port: u16) -> Option<bool> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::time::timeout(Duration::from_secs(3), tokio::net::TcpStream::connect(zk))
        .await
        .ok()?
        .ok()?;
    s.write_all(b"cons").await.ok()?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(3), s.read_to_string(&mut out))
        .await
        .ok()?
        .ok()?;
    Some(out.contains(&format!(":{port}[")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_restart_and_session_expiry_leave_data_traffic_running() {
    use hbase_it::relay::Relay;
    let _turn = TURN.lock().await;
    let cluster = ProcessCluster::start(CLUSTER_DIR, &[]).await;
    // The start is bounded by the script's own timeouts; `bounded` guards the scenario.
    bounded(900, async {
        // The client's ZooKeeper session goes through a relay that can cut it off.
        let zk_relay = Relay::to(&cluster.zk()).await;
        let session_timeout = Duration::from_secs(4);
        let client = Client::connect(
            tune(hbase_client::ClientConfig::builder(zk_relay.address()))
                .zk_session_timeout(session_timeout)
                .connect_timeout(Duration::from_secs(5))
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
        let admin = client.admin();
        let name = create_table(&client, "crash_zk").await;
        let table = client.table(&name.to_string()).unwrap();
        let (writers, before) = start_load(&client, &name, with_reader()).await;
        let none = HashSet::new();

        // (a) ZooKeeper killed and restarted: data traffic goes on from the region cache; a
        // call that needs ZooKeeper fails in bounded time with a typed error meanwhile.
        cluster.kill_zk().await;
        let t_down = Instant::now();
        writers.progress(300, EVENT_LIMIT).await;
        let t = Instant::now();
        let during = admin.master().await;
        let zk_call = t.elapsed();
        let err = during.expect_err("ZooKeeper is down");
        eprintln!("scenario 4a: with ZooKeeper down, admin.master() failed after {} with {:?}: {err}", secs(zk_call), err.kind());
        // No hang: the call ends within its own deadline (the operation timeout), with the
        // time it took reported above, not asserted.
        assert!(zk_call < OPERATION_TIMEOUT, "a ZooKeeper read waited {zk_call:?}, past its deadline");
        cluster.start_zk().await;
        let t_up = Instant::now();
        let in_zk_outage = writers.ledger.acked_between(t_down, t_up, &none);
        let (t_lookup, master) = wait_for("a ZooKeeper lookup after the restart", EVENT_LIMIT, || async {
            admin.master().await.ok().map(|m| (Instant::now(), m))
        })
        .await;
        eprintln!(
            "scenario 4a: ZooKeeper down for {}; {in_zk_outage} writes acknowledged meanwhile; first lookup after the restart ({master}) {} after it",
            secs(t_up - t_down),
            secs(t_lookup - t_up)
        );
        assert!(in_zk_outage > 0, "data traffic stopped with ZooKeeper");
        // The servers kept their sessions.
        let live = admin.region_servers().await.unwrap();
        assert_eq!(live.len(), 3, "region servers after the ZooKeeper restart: {live:?}");

        // (b) The client's session expires: its ZooKeeper connection is cut off until the
        // server drops the session (and its connection).
        let old_port = *zk_relay.upstream_ports().last().expect("the client's ZooKeeper connection");
        assert!(zk_lists(&cluster.zk(), old_port).await, "ZooKeeper lists no connection from the client's port {old_port}");
        zk_relay.partition();
        let t_cut = Instant::now();
        let t_expired = wait_for("ZooKeeper to expire the client's session", EVENT_LIMIT, || async {
            (zk_lists_connection_from(&cluster.zk(), old_port).await == Some(false)).then(Instant::now)
        })
        .await;
        writers.progress(300, EVENT_LIMIT).await;
        let in_cut = writers.ledger.acked_between(t_cut, Instant::now(), &none);
        zk_relay.heal();
        let t_heal = Instant::now();
        // The next lookup opens a new session.
        let (t_session, servers) = wait_for("a ZooKeeper lookup on a new session", EVENT_LIMIT, || async {
            admin.region_servers().await.ok().map(|s| (Instant::now(), s))
        })
        .await;
        let new_port = *zk_relay.upstream_ports().last().unwrap();
        eprintln!(
            "scenario 4b: client cut off ZooKeeper; session expired after {} (timeout {session_timeout:?}); {in_cut} writes acknowledged while cut off; after the heal the next lookup ({} region servers) took {} on a new connection (port {new_port}, was {old_port})",
            secs(t_expired - t_cut),
            servers.len(),
            secs(t_session - t_heal)
        );
        assert!(in_cut > 0, "data traffic stopped with the client's ZooKeeper session");
        assert_ne!(new_port, old_port, "the lookup did not reconnect");
        assert!(zk_lists(&cluster.zk(), new_port).await, "ZooKeeper lists no connection from the client's new port {new_port}");
        // A lookup that needs meta and the master works too: move a region, write to it.
        let region = admin.list_regions(&name).await.unwrap().remove(0);
        admin.move_region(&region.region, None).await.unwrap();
        writers.progress(300, EVENT_LIMIT).await;

        let ledger = writers.stop().await;
        let after = client.stats();
        let report = account(&table, &ledger).await;
        eprintln!("scenario 4 client counters: before: {}", stats_line(&before));
        eprintln!("scenario 4 client counters: at the end: {}", stats_line(&after));
        report.print("4 ZooKeeper restart + session expiry", Some(t_session - t_heal));
        report.assert_nothing_lost();
        assert_eq!(report.total.failed, 0, "data writes failed though no region server died");
        let wrong = ledger.reads.wrong.lock().unwrap().clone();
        assert!(wrong.is_empty(), "reads missed acknowledged rows: {wrong:?}");
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// 5. A network partition of one region server that keeps running

/// Waits until every region of `regions` has had a write started after `t` acknowledged.
async fn wait_all_acked(writers: &Writers, t: Instant, regions: &HashSet<usize>) -> Instant {
    wait_for(
        &format!("writes to each of the regions {regions:?} acknowledged after the fault"),
        EVENT_LIMIT,
        || async {
            let acked: HashSet<usize> = writers
                .ledger
                .acked_after(t, regions)
                .iter()
                .map(|(_, row, _)| workload::region_of(row))
                .collect();
            (acked == *regions).then(Instant::now)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_region_server_is_failed_over_and_the_client_recovers() {
    use hbase_it::processes::Role;
    use hbase_it::proxy::FaultProxy;
    use hbase_it::relay::Relay;
    let _turn = TURN.lock().await;
    let cluster = ProcessCluster::start(CLUSTER_DIR, &[]).await;
    // The start is bounded by the script's own timeouts; `bounded` guards the scenario.
    bounded(1200, async {
        // Every connection of the client to a server goes through the fault proxy.
        let proxy = FaultProxy::new();
        let client = Client::connect(
            tune(cluster.config())
                .rpc_timeout(Duration::from_secs(3))
                .address_mapper(proxy.mapper())
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
        let admin = client.admin();

        // The victim runs with its ZooKeeper session and its own RPCs (to the master and the
        // other region servers) through relays, so that all of its links can be cut while it
        // runs: restart a region server that does not host meta that way.
        let meta_no = cluster.meta_host().await.expect("meta assigned");
        let n = (1..=3).rev().find(|&n| n != meta_no).unwrap();
        let old = live_server(&admin, cluster.rs_port(n)).await;
        cluster.kill_rs(n).await;
        wait_gone(&admin, &old).await;
        let zk_relay = Relay::to(&cluster.zk()).await;
        let socks = Relay::socks5().await;
        cluster
            .start_rs_behind(n, &zk_relay.address(), &socks.address())
            .await;
        let victim = live_server(&admin, cluster.rs_port(n)).await;
        assert_ne!(victim.start_code, old.start_code);
        assert!(socks.accepted() > 0, "the region server's RPCs do not go through the SOCKS relay");
        assert!(zk_relay.accepted() > 0, "the region server's ZooKeeper session does not go through the relay");

        let name = create_table(&client, "crash_part").await;
        let table = client.table(&name.to_string()).unwrap();
        let victim_regions = move_regions_to(&admin, &name, &[0, 4, 8], &victim).await;

        let (writers, before) = start_load(&client, &name, with_reader()).await;

        // The partition: nothing flows between the victim and anyone (the client, ZooKeeper,
        // the master, the other region servers), both ways; the process keeps running.
        let ctl = proxy.control(&victim.address());
        ctl.freeze_existing();
        ctl.set_freeze_new(true);
        zk_relay.partition();
        socks.partition();
        let t_cut = Instant::now();
        let t_gone = wait_gone(&admin, &victim).await;
        let t_assigned = wait_reassigned(&admin, &name, &victim, &victim_regions).await;
        let (t_first, first_row, first_via) = wait_first_ack(&writers, t_cut, &victim_regions).await;
        let t_all = wait_all_acked(&writers, t_cut, &victim_regions).await;
        let in_partition = writers.ledger.acked_between(t_cut, t_first, &victim_regions);
        assert!(
            cluster.is_running(Role::Rs(n)).await,
            "the partitioned region server died instead of running on"
        );

        // The partition heals. The victim learns that its session expired (and the master
        // that it is dead) and aborts; the client finds its regions where they are now.
        zk_relay.heal();
        socks.heal();
        ctl.clear();
        let t_heal = Instant::now();
        let t_aborted = wait_for("the healed region server to abort", EVENT_LIMIT, || async {
            (!cluster.is_running(Role::Rs(n)).await).then(Instant::now)
        })
        .await;
        writers.progress(500, EVENT_LIMIT).await;
        // The server comes back (same address, a new start code): the client uses it again.
        cluster.start_rs(n).await;
        let back = live_server(&admin, cluster.rs_port(n)).await;
        // Registered is not yet serving: move_regions_to asks until the region opens there.
        move_regions_to(&admin, &name, &[4], &back).await;
        let t_moved = Instant::now();
        wait_first_ack(&writers, t_moved, &HashSet::from([4])).await;
        writers.progress(300, EVENT_LIMIT).await;

        let ledger = writers.stop().await;
        let after = client.stats();
        let report = account(&table, &ledger).await;
        let reads = &ledger.reads;
        eprintln!(
            "scenario 5: partitioned rs{n} ({victim}, regions {victim_regions:?}); gone from ZooKeeper after {}, regions reassigned after {}, first write to a reassigned region ({first_via:?} {first_row}) acknowledged after {}, every reassigned region written after {}; {in_partition} writes to other regions acknowledged meanwhile; healed after {}: the server aborted {} later; {} swallowed bytes held by the relays; reads of acknowledged rows: {} ok, {} failed, {} wrong",
            secs(t_gone - t_cut),
            secs(t_assigned - t_cut),
            secs(t_first - t_cut),
            secs(t_all - t_cut),
            secs(t_heal - t_cut),
            secs(t_aborted - t_heal),
            zk_relay.bytes() + socks.bytes(),
            reads.ok.load(std::sync::atomic::Ordering::SeqCst),
            reads.failed.load(std::sync::atomic::Ordering::SeqCst),
            reads.wrong.lock().unwrap().len(),
        );
        eprintln!(
            "scenario 5 client counters: before the partition: {}",
            stats_line(&before)
        );
        eprintln!("scenario 5 client counters: at the end: {}", stats_line(&after));
        report.print("5 network partition of a region server", Some(t_first - t_cut));
        report.assert_nothing_lost();
        assert!(in_partition > 0, "writes to the other servers stalled during the partition");
        let wrong = reads.wrong.lock().unwrap().clone();
        assert!(wrong.is_empty(), "reads missed acknowledged rows: {wrong:?}");
    })
    .await;
}
