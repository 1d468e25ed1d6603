//! The writers of the crash scenarios and their ledger: every write is recorded with what the
//! client said about it (acknowledged, with when; or failed, with the error), and at the end
//! every row is read back and accounted for.
//!
//! Four writers, each a task, each writing rows of its own spread over every region:
//! - `buffered`: a `BufferedMutator` (64 KiB buffer, periodic flush), paced; its failures come
//!   from the failure listener and `close`;
//! - `put`: single `Table::put`s, one at a time, a task per region;
//! - `batch`: `Table::batch` of 10 puts over 10 consecutive regions;
//! - `increment`: `Table::increment_column` (+1), a task per region on its counter row.
//!
//! Optionally a `get` reader re-reads rows the `put` writer had acknowledged.
//!
//! Every row is written once with [`value_for`] its key, so a row read back either carries
//! its value (the write was applied) or nothing. A failed write is either of kind
//! `OutcomeUnknown` (an attempt may have been applied) or of another kind, which the client
//! promises means no attempt was applied: such a row must not be found. Increments carry
//! nonces, so a counter read back must hold at least its acknowledged increments (none lost)
//! and at most its acknowledged plus outcome-unknown ones (none applied twice, none applied
//! after a definite failure).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{
    Action, ActionResult, BufferedMutator, Client, Error, ErrorKind, Get, MutatorConfig, Put,
    Table, TableName,
};
use tokio::task::JoinHandle;

/// Split keys of the scenario tables: 9 regions, `r0-…` to `r8-…`.
pub const SPLITS: [&str; 8] = ["r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"];
/// Number of regions ([`SPLITS`] + 1); rows `r{k}-…` land in region `k`.
pub const REGIONS: usize = SPLITS.len() + 1;

/// The value every row is written with.
pub fn value_for(row: &str) -> Bytes {
    Bytes::from(format!("value-of-{row}-{}", "x".repeat(48)))
}

/// Pause between two writes of one synchronous writer task (9 tasks per kind), so that a
/// scenario writes thousands of rows a minute, not hundreds of thousands.
const WRITER_PAUSE: Duration = Duration::from_millis(20);

/// Region index (0..REGIONS) of a row key `r{k}-…`.
pub fn region_of(row: &str) -> usize {
    row.as_bytes()[1].wrapping_sub(b'0') as usize % REGIONS
}

/// How a write was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// The BufferedMutator.
    Buffered,
    /// A single put.
    Put,
    /// A batch of puts.
    Batch,
    /// An increment of a counter.
    Increment,
}

impl Via {
    pub const ALL: [Via; 4] = [Via::Buffered, Via::Put, Via::Batch, Via::Increment];

    fn name(self) -> &'static str {
        match self {
            Via::Buffered => "buffered",
            Via::Put => "put",
            Via::Batch => "batch",
            Via::Increment => "increment",
        }
    }
}

/// One write and what the client said.
#[derive(Debug, Clone)]
pub struct WriteRecord {
    pub row: String,
    pub via: Via,
    /// When the write was started.
    pub started: Instant,
    /// `Ok(when acknowledged)` (None: acknowledged by a buffered flush at an unknown time), or
    /// the error the client reported.
    pub outcome: Result<Option<Instant>, Failure>,
}

/// A write the client reported failed.
#[derive(Debug, Clone)]
pub struct Failure {
    /// `ErrorKind::OutcomeUnknown`: an attempt may have been applied. Otherwise none was.
    pub unknown: bool,
    pub message: String,
    /// What the errors are counted by: the client's kind, the server's exception class (if a
    /// server raised one) and the message's first line with its numbers masked. The class is
    /// there because two causes can share a long first line's opening.
    pub group: String,
}

impl Failure {
    pub fn of(e: &Error) -> Failure {
        let message = e.to_string();
        let class = e.remote().map_or("-", |r| r.short_class_name());
        Failure {
            unknown: e.kind() == ErrorKind::OutcomeUnknown,
            group: format!("{:?} {class}: {}", e.kind(), masked_first_line(&message)),
            message,
        }
    }

    fn context(e: &Error, what: &str) -> Failure {
        let mut f = Failure::of(e);
        f.message = format!("{what}: {}", f.message);
        f.group = format!("{what}: {}", f.group);
        f
    }
}

/// Reads of acknowledged rows.
#[derive(Debug, Default)]
pub struct ReadCounts {
    pub ok: AtomicU64,
    /// The read failed (an error), which is allowed.
    pub failed: AtomicU64,
    /// The read answered, but without the acknowledged value: a lost write, visible early.
    pub wrong: Mutex<Vec<String>>,
}

/// Everything the writers did.
#[derive(Default)]
pub struct Ledger {
    records: Mutex<Vec<WriteRecord>>,
    /// Rows the mutator was given (acknowledged unless they come back as failures).
    buffered_rows: Mutex<Vec<(String, Instant)>>,
    buffered_failed: Mutex<HashMap<String, Failure>>,
    pub reads: ReadCounts,
    /// Rows the `put` writer had acknowledged, for the reader.
    acked_puts: Mutex<Vec<String>>,
}

impl Ledger {
    fn record(&self, r: WriteRecord) {
        if r.via == Via::Put && r.outcome.is_ok() {
            self.acked_puts.lock().unwrap().push(r.row.clone());
        }
        self.records.lock().unwrap().push(r);
    }

    /// Acknowledged writes (of any writer but the buffered one) so far.
    pub fn acked(&self) -> usize {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.outcome.is_ok())
            .count()
    }

    /// Acknowledged synchronous writes to one of `regions` that were started after `t`
    /// (so served by whichever server held the region then), by acknowledgement time.
    pub fn acked_after(&self, t: Instant, regions: &HashSet<usize>) -> Vec<(Instant, String, Via)> {
        let mut v: Vec<_> = self
            .records
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.started > t && regions.contains(&region_of(&r.row)))
            .filter_map(|r| match r.outcome {
                Ok(Some(at)) => Some((at, r.row.clone(), r.via)),
                _ => None,
            })
            .collect();
        v.sort_by_key(|x| x.0);
        v
    }

    /// The earliest acknowledged synchronous write to one of `regions` started after `t`.
    pub fn first_ack_after(
        &self,
        t: Instant,
        regions: &HashSet<usize>,
    ) -> Option<(Instant, String, Via)> {
        self.acked_after(t, regions).into_iter().next()
    }

    /// Synchronous writes acknowledged in [from, to), to regions other than `except`.
    pub fn acked_between(&self, from: Instant, to: Instant, except: &HashSet<usize>) -> usize {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter(|r| !except.contains(&region_of(&r.row)))
            .filter(|r| matches!(r.outcome, Ok(Some(at)) if at >= from && at < to))
            .count()
    }
}

/// The writer tasks of one scenario.
pub struct Writers {
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
    mutator: Option<BufferedMutator>,
    pub ledger: Arc<Ledger>,
}

/// Which writers to run.
#[derive(Debug, Clone)]
pub struct WriterSet {
    pub vias: Vec<Via>,
    /// Buffered rows per second (the others pause 20 ms between writes).
    pub buffered_rate: u32,
    /// Run the `get` reader too.
    pub reader: bool,
}

impl Default for WriterSet {
    fn default() -> Self {
        WriterSet {
            vias: Via::ALL.to_vec(),
            buffered_rate: 500,
            reader: false,
        }
    }
}

impl Writers {
    /// Starts the writers on `table`.
    pub fn start(client: &Client, table: &TableName, set: WriterSet) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let ledger = Arc::new(Ledger::default());
        let t = client.table(&table.to_string()).unwrap();
        let mut tasks = Vec::new();
        let mut mutator = None;
        for via in &set.vias {
            let (t, stop, ledger) = (t.clone(), stop.clone(), ledger.clone());
            match via {
                Via::Buffered => {
                    let failed = ledger.clone();
                    let m = client
                        .buffered_mutator(
                            &table.to_string(),
                            MutatorConfig::default()
                                .write_buffer_size(64 * 1024)
                                .periodic_flush(Duration::from_millis(200))
                                .on_failure(move |f| {
                                    failed.buffered_failed.lock().unwrap().insert(
                                        String::from_utf8_lossy(f.row()).into_owned(),
                                        Failure::of(f.error()),
                                    );
                                }),
                        )
                        .unwrap();
                    mutator = Some(m.clone());
                    let rate = set.buffered_rate.max(1);
                    tasks.push(tokio::spawn(buffered_writer(m, stop, ledger, rate)));
                }
                // One task per region: writes to the other regions go on while one waits.
                Via::Put => {
                    for k in 0..REGIONS {
                        let (t, stop, ledger) = (t.clone(), stop.clone(), ledger.clone());
                        tasks.push(tokio::spawn(put_writer(t, k, stop, ledger)));
                    }
                }
                Via::Batch => tasks.push(tokio::spawn(batch_writer(t, stop, ledger))),
                Via::Increment => {
                    for k in 0..REGIONS {
                        let (t, stop, ledger) = (t.clone(), stop.clone(), ledger.clone());
                        tasks.push(tokio::spawn(increment_writer(t, k, stop, ledger)));
                    }
                }
            }
        }
        if set.reader {
            let (t, stop, ledger) = (t.clone(), stop.clone(), ledger.clone());
            tasks.push(tokio::spawn(reader(t, stop, ledger)));
        }
        Writers {
            stop,
            tasks,
            mutator,
            ledger,
        }
    }

    /// Waits until the writers have `n` more acknowledged synchronous writes than now (bounded).
    pub async fn progress(&self, n: usize, limit: Duration) {
        let target = self.ledger.acked() + n;
        hbase_it::processes::wait_for(&format!("{n} more acknowledged writes"), limit, || async {
            (self.ledger.acked() >= target).then_some(())
        })
        .await;
    }

    /// Stops every writer, closes the mutator (its last flush included) and returns the ledger.
    pub async fn stop(self) -> Arc<Ledger> {
        self.stop.store(true, SeqCst);
        for t in self.tasks {
            t.await.expect("writer task");
        }
        if let Some(m) = self.mutator {
            if let Err(e) = m.close().await {
                // The listener saw each failed row already; anything else is a test failure.
                assert!(
                    matches!(e, Error::MutationsFailed { .. }),
                    "closing the mutator: {e}"
                );
                if let Error::MutationsFailed { failures, .. } = e {
                    let seen = self.ledger.buffered_failed.lock().unwrap();
                    for f in failures {
                        let row = String::from_utf8_lossy(f.row()).into_owned();
                        assert!(
                            seen.contains_key(&row),
                            "close() reported {row}, the listener did not"
                        );
                    }
                }
            }
        }
        self.ledger
    }
}

async fn buffered_writer(
    m: BufferedMutator,
    stop: Arc<AtomicBool>,
    ledger: Arc<Ledger>,
    rate: u32,
) {
    let start = Instant::now();
    let mut i = 0u64;
    while !stop.load(SeqCst) {
        // Paced in steps of 20 rows.
        let due = start + Duration::from_secs_f64(i as f64 / f64::from(rate));
        tokio::time::sleep_until(due.into()).await;
        for _ in 0..20 {
            let row = format!("r{}-buf-{i:08}", i % REGIONS as u64);
            i += 1;
            let t = Instant::now();
            match m
                .mutate(Put::new(row.clone()).add("cf", "q", value_for(&row)))
                .await
            {
                Ok(()) => ledger.buffered_rows.lock().unwrap().push((row, t)),
                Err(e) => ledger.record(WriteRecord {
                    row,
                    via: Via::Buffered,
                    started: t,
                    outcome: Err(Failure::context(&e, "mutate")),
                }),
            }
        }
    }
}

async fn put_writer(t: Table, k: usize, stop: Arc<AtomicBool>, ledger: Arc<Ledger>) {
    let mut i = 0u64;
    while !stop.load(SeqCst) {
        let row = format!("r{k}-put-{i:08}");
        i += 1;
        let started = Instant::now();
        let r = t
            .put(Put::new(row.clone()).add("cf", "q", value_for(&row)))
            .await;
        ledger.record(WriteRecord {
            row,
            via: Via::Put,
            started,
            outcome: r
                .map(|()| Some(Instant::now()))
                .map_err(|e| Failure::of(&e)),
        });
        tokio::time::sleep(WRITER_PAUSE).await;
    }
}

async fn batch_writer(t: Table, stop: Arc<AtomicBool>, ledger: Arc<Ledger>) {
    let mut b = 0u64;
    while !stop.load(SeqCst) {
        let rows: Vec<String> = (0..10)
            .map(|k| format!("r{}-batch-{b:07}-{k}", (b as usize + k) % REGIONS))
            .collect();
        b += 1;
        let actions: Vec<Action> = rows
            .iter()
            .map(|r| Action::Put(Put::new(r.clone()).add("cf", "q", value_for(r))))
            .collect();
        let started = Instant::now();
        let results = t.batch(&actions).await;
        let at = Instant::now();
        for (row, r) in rows.into_iter().zip(results) {
            ledger.record(WriteRecord {
                row,
                via: Via::Batch,
                started,
                outcome: r.map(|_| Some(at)).map_err(|e| Failure::of(&e)),
            });
        }
        tokio::time::sleep(WRITER_PAUSE).await;
    }
}

/// The counter row of region `k`.
pub fn counter_row(k: usize) -> String {
    format!("r{k}-counter")
}

async fn increment_writer(t: Table, k: usize, stop: Arc<AtomicBool>, ledger: Arc<Ledger>) {
    let row = counter_row(k);
    while !stop.load(SeqCst) {
        let row = row.clone();
        let started = Instant::now();
        let r = t.increment_column(row.clone(), "cf", "n", 1).await;
        ledger.record(WriteRecord {
            row,
            via: Via::Increment,
            started,
            outcome: r.map(|_| Some(Instant::now())).map_err(|e| Failure::of(&e)),
        });
        tokio::time::sleep(WRITER_PAUSE).await;
    }
}

async fn reader(t: Table, stop: Arc<AtomicBool>, ledger: Arc<Ledger>) {
    let mut i = 0usize;
    while !stop.load(SeqCst) {
        let row = {
            let acked = ledger.acked_puts.lock().unwrap();
            if acked.is_empty() {
                None
            } else {
                i = i.wrapping_mul(31).wrapping_add(7);
                Some(acked[i % acked.len()].clone())
            }
        };
        let Some(row) = row else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        match t.get(Get::new(row.clone())).await {
            Ok(Some(r)) if r.value(b"cf", b"q") == Some(&value_for(&row)) => {
                ledger.reads.ok.fetch_add(1, SeqCst);
            }
            Ok(other) => ledger
                .reads
                .wrong
                .lock()
                .unwrap()
                .push(format!("{row}: {other:?}")),
            Err(_) => {
                ledger.reads.failed.fetch_add(1, SeqCst);
            }
        }
        tokio::time::sleep(WRITER_PAUSE / 4).await;
    }
}

/// The account of one kind of write, after reading every row back.
#[derive(Debug, Default, Clone)]
pub struct Account {
    pub attempted: u64,
    pub acked: u64,
    /// Acknowledged and found.
    pub present: u64,
    pub failed: u64,
    /// Of `failed`, those of kind `OutcomeUnknown`.
    pub unknown: u64,
    /// Reported outcome-unknown and found applied (allowed).
    pub failed_applied: u64,
    /// Reported failed with a kind that says no attempt was applied, yet found applied (the
    /// client's error told a lie; counters: applied beyond acknowledged + unknown).
    pub contradicted: u64,
    /// Acknowledged and not found.
    pub lost: u64,
    /// Increments applied more often than the client sent them successfully or not.
    pub over_applied: u64,
    pub lost_rows: Vec<String>,
}

impl Account {
    fn add(&mut self, o: &Account) {
        self.attempted += o.attempted;
        self.acked += o.acked;
        self.present += o.present;
        self.failed += o.failed;
        self.unknown += o.unknown;
        self.failed_applied += o.failed_applied;
        self.contradicted += o.contradicted;
        self.lost += o.lost;
        self.over_applied += o.over_applied;
        self.lost_rows.extend(o.lost_rows.iter().take(20).cloned());
    }
}

/// The row-by-row account of a scenario.
pub struct Report {
    pub by_via: Vec<(Via, Account)>,
    pub total: Account,
    pub errors: HashMap<String, u64>,
}

impl Report {
    /// Prints the account, one line per writer, then the total, then the errors by kind.
    pub fn print(&self, scenario: &str, recovery: Option<Duration>) {
        eprintln!("{scenario}: row-by-row account");
        eprintln!(
            "  {:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>15} {:>12} {:>5} {:>12}",
            "writer",
            "attempted",
            "acked",
            "present",
            "failed",
            "unknown",
            "unknown+applied",
            "contradicted",
            "lost",
            "over-applied"
        );
        let lines = self.by_via.iter().map(|(v, a)| (v.name(), a));
        for (name, a) in lines.chain([("total", &self.total)]) {
            eprintln!(
                "  {:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>15} {:>12} {:>5} {:>12}",
                name,
                a.attempted,
                a.acked,
                a.present,
                a.failed,
                a.unknown,
                a.failed_applied,
                a.contradicted,
                a.lost,
                a.over_applied
            );
        }
        let mut errors: Vec<_> = self.errors.iter().collect();
        errors.sort_by(|a, b| b.1.cmp(a.1));
        for (e, n) in errors.iter().take(8) {
            eprintln!("  reported failed ×{n}: {e}");
        }
        eprintln!(
            "TABLE | {scenario} | {} | {} | {} | {} ({} outcome unknown) | {} | {} |",
            self.total.attempted,
            self.total.acked,
            self.total.present,
            self.total.failed,
            self.total.unknown,
            self.total.lost,
            recovery.map_or("-".to_string(), |d| format!("{:.1} s", d.as_secs_f64()))
        );
    }

    /// Asserts that nothing acknowledged was lost (a buffered row the mutator neither
    /// acknowledged nor reported would count as lost too).
    pub fn assert_nothing_lost(&self) {
        assert_eq!(
            self.total.lost, 0,
            "acknowledged writes lost: {:?}",
            self.total.lost_rows
        );
        assert_eq!(
            self.total.over_applied, 0,
            "increments applied more often than acknowledged + outcome unknown: {:?}",
            self.total.lost_rows
        );
        assert_eq!(
            self.total.contradicted, 0,
            "writes reported failed (not outcome-unknown) were applied: {:?}",
            self.total.lost_rows
        );
    }
}

/// The first line of an error message, with numbers masked, at most 160 characters.
fn masked_first_line(e: &str) -> String {
    let first = e.lines().next().unwrap_or("");
    let mut out = String::new();
    let mut last_digit = false;
    for c in first.chars().take(160) {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('#');
            }
            last_digit = true;
        } else {
            out.push(c);
            last_digit = false;
        }
    }
    out
}

/// Reads every row of `ledger` back from `table` and accounts for it.
pub async fn account(table: &Table, ledger: &Ledger) -> Report {
    let records = ledger.records.lock().unwrap().clone();
    let buffered = ledger.buffered_rows.lock().unwrap().clone();
    let buffered_failed = ledger.buffered_failed.lock().unwrap().clone();
    let mut errors: HashMap<String, u64> = HashMap::new();
    for r in &records {
        if let Err(e) = &r.outcome {
            *errors.entry(e.group.clone()).or_default() += 1;
        }
    }
    for e in buffered_failed.values() {
        *errors.entry(e.group.clone()).or_default() += 1;
    }

    // Rows written once: (row, via, None if acked or Some(outcome unknown)).
    let mut rows: Vec<(String, Via, Option<bool>)> = Vec::new();
    for r in records.iter().filter(|r| r.via != Via::Increment) {
        let failed = r.outcome.as_ref().err().map(|f| f.unknown);
        rows.push((r.row.clone(), r.via, failed));
    }
    for (row, _) in &buffered {
        let failed = buffered_failed.get(row).map(|f| f.unknown);
        rows.push((row.clone(), Via::Buffered, failed));
    }
    let present = read_back(table, rows.iter().map(|r| r.0.clone()).collect()).await;

    let mut by_via: HashMap<Via, Account> = HashMap::new();
    for ((row, via, failed), found) in rows.iter().zip(present) {
        let a = by_via.entry(*via).or_default();
        a.attempted += 1;
        match (failed, found) {
            (None, true) => {
                a.acked += 1;
                a.present += 1;
            }
            (None, false) => {
                a.acked += 1;
                a.lost += 1;
                a.lost_rows.push(format!("{via:?} {row}"));
            }
            (Some(unknown), applied) => {
                a.failed += 1;
                a.unknown += u64::from(*unknown);
                match (unknown, applied) {
                    (true, true) => a.failed_applied += 1,
                    (false, true) => {
                        a.contradicted += 1;
                        a.lost_rows
                            .push(format!("{via:?} {row}: reported failed, found applied"));
                    }
                    (_, false) => {}
                }
            }
        }
    }

    // Counters (increments carry nonces): acknowledged ≤ value ≤ acknowledged + unknown.
    #[derive(Default)]
    struct Counter {
        acked: u64,
        failed: u64,
        unknown: u64,
    }
    let mut counters: HashMap<String, Counter> = HashMap::new();
    for r in records.iter().filter(|r| r.via == Via::Increment) {
        let c = counters.entry(r.row.clone()).or_default();
        match &r.outcome {
            Ok(_) => c.acked += 1,
            Err(f) => {
                c.failed += 1;
                c.unknown += u64::from(f.unknown);
            }
        }
    }
    if !counters.is_empty() {
        let a = by_via.entry(Via::Increment).or_default();
        for (row, c) in &counters {
            let value = read_counter(table, row).await;
            a.attempted += c.acked + c.failed;
            a.acked += c.acked;
            a.failed += c.failed;
            a.unknown += c.unknown;
            a.present += value.min(c.acked);
            if value < c.acked {
                a.lost += c.acked - value;
                a.lost_rows
                    .push(format!("counter {row}: {value} < {} acknowledged", c.acked));
            }
            let extra = value.saturating_sub(c.acked);
            a.failed_applied += extra.min(c.unknown);
            if extra > c.unknown {
                // Applied twice, or applied after a failure that said it was not.
                a.over_applied += extra - c.unknown;
                a.lost_rows.push(format!(
                    "counter {row}: {value} > {} acknowledged + {} outcome unknown ({} failed)",
                    c.acked, c.unknown, c.failed
                ));
            }
        }
    }
    let mut total = Account::default();
    let mut list = Vec::new();
    for via in Via::ALL {
        if let Some(a) = by_via.remove(&via) {
            total.add(&a);
            list.push((via, a));
        }
    }
    Report {
        by_via: list,
        total,
        errors,
    }
}

/// For each row, whether it holds its value; failed reads are retried (bounded).
async fn read_back(table: &Table, rows: Vec<String>) -> Vec<bool> {
    let mut found = vec![false; rows.len()];
    for (chunk_no, chunk) in rows.chunks(1000).enumerate() {
        let mut pending: Vec<usize> = (0..chunk.len()).collect();
        for attempt in 0..10 {
            let actions: Vec<Action> = pending
                .iter()
                .map(|&i| Action::Get(Get::new(chunk[i].clone())))
                .collect();
            let results = table.batch(&actions).await;
            let mut again = Vec::new();
            for (&i, r) in pending.iter().zip(results) {
                match r {
                    Ok(ActionResult::Row(Some(row))) => {
                        found[chunk_no * 1000 + i] =
                            row.value(b"cf", b"q") == Some(&value_for(&chunk[i]));
                    }
                    Ok(_) => {}
                    Err(e) => {
                        if attempt == 9 {
                            panic!("cannot read {} back: {e}", chunk[i]);
                        }
                        again.push(i);
                    }
                }
            }
            if again.is_empty() {
                break;
            }
            pending = again;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    found
}

async fn read_counter(table: &Table, row: &str) -> u64 {
    for attempt in 0..10 {
        match table.get(Get::new(row.to_string())).await {
            Ok(Some(r)) => {
                let v = r.value(b"cf", b"n").expect("counter cell");
                return u64::from_be_bytes(v[..].try_into().expect("8-byte counter"));
            }
            Ok(None) => return 0,
            Err(e) if attempt == 9 => panic!("cannot read counter {row}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    unreachable!()
}
