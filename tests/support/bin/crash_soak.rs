//! `crash-soak`: YCSB workload A against a multi-process local cluster while a chaos task
//! kills a daemon (a region server, the active master or the region server hosting
//! `hbase:meta`, at random) every `--crash-every` seconds and starts it again
//! `--restart-after` seconds later; then every record is read back and every acknowledged
//! write accounted for. Run by `scripts/crash-soak` (20 minutes, 32 threads by default).
//!
//! The workload is ycsb's own (workload A's properties, `CoreWorkload`, the runner, the HBase
//! binding with `clientbuffering=false`, so each write is acknowledged when `update`
//! returns); a recording layer notes every write (key, field, a hash of the value, when it
//! started and ended, and whether it was acknowledged). At the end, for every field of every
//! record, the value read back must be the value of one of its writes (or of the load), and no
//! acknowledged write may have started after the one whose value is there had been
//! acknowledged: otherwise that acknowledged write was lost.
//!
//! Exit status: 0 when nothing acknowledged was lost, 1 otherwise, 2 on a setup error.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hbase_client::{Action, ActionResult, Get};
use hbase_it::processes::{wait_for, ProcessCluster, Role};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use ycsb::db::{Db, FlushOutcome, Record, Status, Values};
use ycsb::measurements::{Exporter, IntervalMode, Measurements};
use ycsb::runner::{run, RunConfig};
use ycsb::workload::CoreWorkload;

struct Args {
    minutes: u64,
    threads: usize,
    records: u64,
    regions: i64,
    crash_every: Duration,
    restart_after: Duration,
    seed: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        minutes: 20,
        threads: 32,
        records: 20_000,
        regions: 12,
        crash_every: Duration::from_secs(120),
        restart_after: Duration::from_secs(30),
        seed: rand::random(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value"))?
                .parse::<u64>()
                .map_err(|_| format!("{flag} needs a whole number"))
        };
        match flag.as_str() {
            "--minutes" => a.minutes = value()?,
            "--threads" => a.threads = value()?.max(1) as usize,
            "--records" => a.records = value()?.max(1),
            "--regions" => a.regions = value()?.max(1) as i64,
            "--crash-every" => a.crash_every = Duration::from_secs(value()?.max(10)),
            "--restart-after" => a.restart_after = Duration::from_secs(value()?),
            "--seed" => a.seed = value()?,
            "-h" | "--help" => {
                return Err("usage: crash-soak [--minutes 20] [--threads 32] [--records 20000] [--regions 12] [--crash-every 120] [--restart-after 30] [--seed N]".into())
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if a.restart_after >= a.crash_every {
        return Err("--restart-after must be shorter than --crash-every".into());
    }
    Ok(a)
}

/// One write of one field.
struct Write {
    field: u8,
    hash: u64,
    /// Nanoseconds since the soak began.
    start: u64,
    end: u64,
    acked: bool,
}

fn value_hash(v: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

fn field_no(name: &str) -> u8 {
    name.strip_prefix("field")
        .and_then(|n| n.parse().ok())
        .unwrap_or(u8::MAX)
}

/// The HBase binding with every write noted.
#[derive(Clone)]
struct Recording<D> {
    inner: D,
    base: Instant,
    writes: Arc<Mutex<HashMap<String, Vec<Write>>>>,
}

impl<D: Db> Recording<D> {
    async fn write(&self, key: &str, values: Values, insert: bool) -> Status {
        // A value's bytes are a function of it (its seed), so the binding writes these.
        let noted: Vec<(u8, u64)> = values
            .iter()
            .map(|(f, v)| (field_no(f), value_hash(&v.to_bytes())))
            .collect();
        let start = self.base.elapsed().as_nanos() as u64;
        let status = if insert {
            self.inner.insert("usertable", key, values).await
        } else {
            self.inner.update("usertable", key, values).await
        };
        let end = self.base.elapsed().as_nanos() as u64;
        let mut writes = self.writes.lock().unwrap();
        let list = writes.entry(key.to_string()).or_default();
        for (field, hash) in noted {
            list.push(Write {
                field,
                hash,
                start,
                end,
                acked: status.is_ok(),
            });
        }
        status
    }
}

impl<D: Db> Db for Recording<D> {
    async fn read(&self, t: &str, key: &str, f: Option<&[String]>, out: &mut Record) -> Status {
        self.inner.read(t, key, f, out).await
    }
    async fn scan(
        &self,
        t: &str,
        start: &str,
        n: usize,
        f: Option<&[String]>,
        out: &mut Vec<Record>,
    ) -> Status {
        self.inner.scan(t, start, n, f, out).await
    }
    async fn update(&self, _t: &str, key: &str, values: Values) -> Status {
        self.write(key, values, false).await
    }
    async fn insert(&self, _t: &str, key: &str, values: Values) -> Status {
        self.write(key, values, true).await
    }
    async fn delete(&self, t: &str, key: &str) -> Status {
        self.inner.delete(t, key).await
    }
    fn for_thread(&self) -> Self {
        Recording {
            inner: self.inner.for_thread(),
            base: self.base,
            writes: self.writes.clone(),
        }
    }
    async fn cleanup(&self) -> FlushOutcome {
        self.inner.cleanup().await
    }
    fn cleanup_measurement(&self) -> Option<&'static str> {
        self.inner.cleanup_measurement()
    }
    async fn flush(&self) -> FlushOutcome {
        self.inner.flush().await
    }
    fn shared_buffer(&self) -> bool {
        self.inner.shared_buffer()
    }
}

/// A crash the chaos task caused.
#[derive(Debug)]
struct Crash {
    at: Duration,
    what: String,
    role: Role,
    restarted_after: Option<Duration>,
}

/// Kills a daemon every `every` and restarts it `restart_after` later, until stopped; a crash
/// whose restart would fall after `run_end` is not started.
async fn chaos(
    cluster: Arc<ProcessCluster>,
    args: (Duration, Duration, u64),
    stop: Arc<AtomicBool>,
    base: Instant,
    run_end: Instant,
) -> Vec<Crash> {
    let (every, restart_after, seed) = args;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut crashes = Vec::new();
    let mut next = base + every;
    loop {
        while Instant::now() < next {
            if stop.load(SeqCst) {
                return crashes;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        next += every;
        if Instant::now() + restart_after >= run_end {
            continue;
        }
        let kind = *["region server", "master", "meta host"]
            .choose(&mut rng)
            .unwrap();
        let at = base.elapsed();
        let role = match kind {
            "region server" => {
                let n = rng.random_range(1..=3);
                cluster.kill_rs(n).await;
                Role::Rs(n)
            }
            "master" => Role::Master(cluster.kill_active_master().await),
            _ => Role::Rs(cluster.kill_meta().await),
        };
        eprintln!(
            "[chaos] {:>6.1} s: killed the {kind} ({role})",
            at.as_secs_f64()
        );
        let down = Instant::now();
        while down.elapsed() < restart_after && !stop.load(SeqCst) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        match role {
            Role::Rs(n) => cluster.start_rs(n).await,
            _ => cluster.start_masters().await,
        }
        let restarted_after = Some(down.elapsed());
        eprintln!(
            "[chaos] {:>6.1} s: {role} running again",
            base.elapsed().as_secs_f64()
        );
        crashes.push(Crash {
            at,
            what: kind.to_string(),
            role,
            restarted_after,
        });
        if stop.load(SeqCst) {
            return crashes;
        }
    }
}

/// Samples the daemons' resident memory every 10 s until stopped: (peak of the sum, peak per
/// daemon).
async fn sample_memory(
    cluster: Arc<ProcessCluster>,
    stop: Arc<AtomicBool>,
) -> (u64, Vec<(Role, u64)>) {
    let mut peak = 0;
    let mut by_role: Vec<(Role, u64)> = Vec::new();
    while !stop.load(SeqCst) {
        let now = cluster.resident_mib().await;
        peak = peak.max(now.iter().map(|(_, m)| m).sum());
        for (role, mib) in now {
            match by_role.iter_mut().find(|(r, _)| *r == role) {
                Some((_, m)) => *m = (*m).max(mib),
                None => by_role.push((role, mib)),
            }
        }
        for _ in 0..50 {
            if stop.load(SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    (peak, by_role)
}

/// For each key, its cells (field number → value hash), read in batches, retried.
async fn read_all(
    table: &hbase_client::Table,
    keys: &[String],
) -> HashMap<String, HashMap<u8, u64>> {
    let mut out = HashMap::new();
    for chunk in keys.chunks(500) {
        let mut pending: Vec<&String> = chunk.iter().collect();
        for attempt in 0..20 {
            let actions: Vec<Action> = pending
                .iter()
                .map(|k| Action::Get(Get::new(k.to_string()).family("family")))
                .collect();
            let mut again = Vec::new();
            for (k, r) in pending.iter().zip(table.batch(&actions).await) {
                match r {
                    Ok(ActionResult::Row(row)) => {
                        let cells = row
                            .map(|row| {
                                row.cells
                                    .iter()
                                    .map(|c| {
                                        (
                                            field_no(&String::from_utf8_lossy(c.qualifier())),
                                            value_hash(c.value()),
                                        )
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        out.insert(k.to_string(), cells);
                    }
                    Ok(other) => panic!("a get answered {other:?}"),
                    Err(e) if attempt == 19 => panic!("cannot read {k} back: {e}"),
                    Err(_) => again.push(*k),
                }
            }
            if again.is_empty() {
                break;
            }
            pending = again;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    out
}

#[derive(Default, Debug)]
struct Verdict {
    writes: u64,
    acked: u64,
    failed: u64,
    /// Acknowledged writes whose value, or a later one, is there.
    present: u64,
    /// Acknowledged writes overwritten by an earlier one, or whose cell is missing.
    lost: u64,
    /// Acknowledged writes replaced by a write that was reported failed (it may have been
    /// applied late: its outcome was unknown).
    superseded_by_failed: u64,
    /// Fields whose value is no write's.
    unknown_values: u64,
    examples: Vec<String>,
}

fn verify(
    writes: &HashMap<String, Vec<Write>>,
    read: &HashMap<String, HashMap<u8, u64>>,
) -> Verdict {
    let mut v = Verdict::default();
    for (key, list) in writes {
        let cells = read.get(key);
        let mut by_field: HashMap<u8, Vec<&Write>> = HashMap::new();
        for w in list {
            by_field.entry(w.field).or_default().push(w);
        }
        for (field, ws) in by_field {
            let acked: Vec<&&Write> = ws.iter().filter(|w| w.acked).collect();
            v.writes += ws.len() as u64;
            v.acked += acked.len() as u64;
            v.failed += (ws.len() - acked.len()) as u64;
            let seen = cells.and_then(|c| c.get(&field));
            let Some(seen) = seen else {
                v.lost += acked.len() as u64;
                if !acked.is_empty() && v.examples.len() < 10 {
                    v.examples.push(format!(
                        "{key} field{field}: missing, {} acknowledged writes",
                        acked.len()
                    ));
                }
                continue;
            };
            let Some(source) = ws.iter().filter(|w| w.hash == *seen).max_by_key(|w| w.end) else {
                v.unknown_values += 1;
                v.lost += acked.len() as u64;
                if v.examples.len() < 10 {
                    v.examples
                        .push(format!("{key} field{field}: a value no write wrote"));
                }
                continue;
            };
            for w in &acked {
                // A write that began after the visible one was acknowledged came later in
                // every server's order: its value should be the one there.
                let later = w.start > source.end;
                if !later {
                    v.present += 1;
                } else if source.acked {
                    v.lost += 1;
                    if v.examples.len() < 10 {
                        v.examples.push(format!(
                            "{key} field{field}: an acknowledged write of {:.3} s was overwritten by one acknowledged at {:.3} s",
                            w.start as f64 / 1e9,
                            source.end as f64 / 1e9
                        ));
                    }
                } else {
                    v.superseded_by_failed += 1;
                }
            }
        }
    }
    v
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("crash-soak: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let code = rt.block_on(soak(args));
    rt.shutdown_timeout(Duration::from_secs(1));
    std::process::exit(code);
}

fn env_port(name: &str, default: u16) -> u16 {
    std::env::var(name)
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(default)
}

async fn soak(args: Args) -> i32 {
    let zk_port = env_port(
        "HBASE_SOAK_ZK_PORT",
        env_port("HBASE_LOCAL_ZK_PORT", 2181) + 2,
    );
    let master_port = env_port(
        "HBASE_SOAK_MASTER_PORT",
        env_port("HBASE_LOCAL_MASTER_PORT", 16000) + 31,
    );
    eprintln!(
        "crash-soak: {} min of workload A, {} threads, {} records, a crash every {} s, restart after {} s, seed {}",
        args.minutes,
        args.threads,
        args.records,
        args.crash_every.as_secs(),
        args.restart_after.as_secs(),
        args.seed
    );
    let cluster = Arc::new(ProcessCluster::start_on("hbase-soak", zk_port, master_port, &[]).await);

    let cli = |extra: &[(&str, String)]| {
        let mut props = vec![
            ("hbase.zookeeper.quorum".to_string(), cluster.zk()),
            ("columnfamily".to_string(), "family".to_string()),
            ("recordcount".to_string(), args.records.to_string()),
            ("threadcount".to_string(), args.threads.to_string()),
            ("clientbuffering".to_string(), "false".to_string()),
            ("status".to_string(), "true".to_string()),
        ];
        props.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        ycsb::cli::build_properties(&["workloada".to_string()], &props).expect("properties")
    };
    let p = cli(&[]);
    let client = ycsb::hbase::connect(&p, &[]).await.expect("connect");
    ycsb::hbase::create_table(&client, &p, args.regions)
        .await
        .expect("create usertable");
    let base = Instant::now();
    let writes = Arc::new(Mutex::new(HashMap::new()));

    // Load (no crashes yet), then the run with the chaos task.
    let mut phases = Vec::new();
    for transactions in [false, true] {
        let p = if transactions {
            cli(&[
                ("operationcount", "0".into()),
                ("maxexecutiontime", (args.minutes * 60).to_string()),
            ])
        } else {
            cli(&[])
        };
        let measurements = Arc::new(Measurements::new(
            IntervalMode::Op,
            vec![50.0, 95.0, 99.0, 99.9],
            false,
        ));
        let workload = Arc::new(CoreWorkload::new(&p, measurements.clone()).expect("workload"));
        let db = Recording {
            inner: ycsb::hbase::HbaseDb::open(
                &client,
                &p,
                !transactions,
                ycsb::hbase::PutKinds::of_workload(
                    workload.field_count(),
                    workload.writes_all_fields(),
                ),
            )
            .await
            .expect("open usertable"),
            base,
            writes: writes.clone(),
        };
        let cfg = RunConfig {
            transactions,
            threads: args.threads,
            target: 0.0,
            opcount: if transactions { 0 } else { args.records },
            status: true,
            status_interval: Duration::from_secs(10),
            label: if transactions { "run" } else { "load" }.into(),
            max_execution_time: transactions.then(|| Duration::from_secs(args.minutes * 60)),
            warmup: None,
            seed: None,
            started: Instant::now(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let memory_task = tokio::spawn(sample_memory(cluster.clone(), stop.clone()));
        let chaos_task = transactions.then(|| {
            tokio::spawn(chaos(
                cluster.clone(),
                (args.crash_every, args.restart_after, args.seed),
                stop.clone(),
                Instant::now(),
                Instant::now() + Duration::from_secs(args.minutes * 60),
            ))
        });
        let result = run(&cfg, workload, db, measurements)
            .await
            .expect("the workload ran");
        stop.store(true, SeqCst);
        let crashes = match chaos_task {
            Some(t) => t.await.expect("chaos task"),
            None => Vec::new(),
        };
        let (peak, peak_by_role) = memory_task.await.expect("memory sampler");
        println!(
            "===== {} phase =====",
            if transactions { "run" } else { "load" }
        );
        print!("{}", Exporter::Text.render(&result.lines));
        println!(
            "cluster resident memory: peak {peak} MiB over all daemons; per daemon peaks: {}",
            peak_by_role
                .iter()
                .map(|(r, m)| format!("{r} {m} MiB"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        phases.push((result, crashes));
    }

    // Everything up again, every region served, then every record read back.
    for n in 1..=3 {
        if !cluster.is_running(Role::Rs(n)).await {
            cluster.start_rs(n).await;
        }
    }
    cluster.start_masters().await;
    let table = client.table("usertable").unwrap();
    let admin = client.admin();
    wait_for(
        "every region of usertable assigned",
        Duration::from_secs(300),
        || async {
            let regions = admin.list_regions(&table.name().clone()).await.ok()?;
            regions.iter().all(|r| r.server.is_some()).then_some(())
        },
    )
    .await;
    let writes = std::mem::take(&mut *writes.lock().unwrap());
    let mut keys: Vec<String> = writes.keys().cloned().collect();
    keys.sort();
    let read = read_all(&table, &keys).await;
    let v = verify(&writes, &read);

    let (run_result, crashes) = &phases[1];
    let errors: i64 = run_result
        .lines
        .iter()
        .filter(|l| l.measurement == "Return=ERROR")
        .map(|l| match l.value {
            ycsb::measurements::Value::Int(i) => i,
            ycsb::measurements::Value::Float(f) => f as i64,
        })
        .sum();
    println!("===== crashes =====");
    for c in crashes {
        println!(
            "{:>7.1} s: {} ({}) killed, restarted after {:.1} s",
            c.at.as_secs_f64(),
            c.what,
            c.role,
            c.restarted_after.unwrap_or_default().as_secs_f64()
        );
    }
    println!("===== account =====");
    println!(
        "writes {} (load and run), acknowledged {}, reported failed {}, acknowledged and present {}, lost {}, superseded by a write reported failed {}, values no write wrote {}; YCSB run errors (Return=ERROR) {errors}",
        v.writes, v.acked, v.failed, v.present, v.lost, v.superseded_by_failed, v.unknown_values
    );
    println!("client counters: {}", hbase_it::stats_line(&client.stats()));
    println!(
        "TABLE | 6 soak: {} min workload A, {} threads, {} crashes | {} | {} | {} | {} | {} | - |",
        args.minutes,
        args.threads,
        crashes.len(),
        v.writes,
        v.acked,
        v.present,
        v.failed,
        v.lost
    );
    for e in &v.examples {
        println!("  {e}");
    }
    if v.lost == 0 && v.unknown_values == 0 {
        0
    } else {
        1
    }
}
