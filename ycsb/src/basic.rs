//! The `basic` binding: YCSB's `BasicDB`, which stores nothing and prints every operation
//! (`basicdb.verbose`, default true) in BasicDB's format, each thread's properties when it
//! starts, and with `basicdb.count` the number of distinct operations at the end.
//! `basicdb.simulatedelay` (ms) and `basicdb.randomizedelay` delay each operation.
//!
//! Fields and properties print in the order Java's `HashMap`, `HashSet` and `Properties`
//! iterate them, so the output lines up with the Java BasicDB's.

use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;

use crate::db::{Db, FlushOutcome, Record, Status, Values};
use crate::java::{hash_map_order, hash_set_capacity, in_java_order, properties_order};
use crate::props::Properties;
use crate::util::java_string_hash;
use crate::Error;

/// The class name the Java YCSB prints for this binding.
pub const BASIC_DB_CLASS: &str = "site.ycsb.BasicDB";

#[derive(Default)]
struct Counts {
    reads: HashSet<i32>,
    scans: HashSet<i32>,
    updates: HashSet<i32>,
    inserts: HashSet<i32>,
    deletes: HashSet<i32>,
}

struct Shared {
    verbose: bool,
    count: bool,
    delay_ms: u64,
    randomize_delay: bool,
    /// The `"key"="value"` lines each thread prints when it starts.
    properties: Vec<String>,
    threads: AtomicUsize,
    counts: Mutex<Counts>,
}

/// YCSB's `BasicDB`.
#[derive(Clone)]
pub struct BasicDb {
    shared: Arc<Shared>,
}

/// The keys of `p` in the order Java's `Properties.propertyNames()` would give them for the
/// same sources (each `-P` file, then the command line), as YCSB's `Client` merges them.
pub fn java_property_names(p: &Properties) -> Vec<String> {
    let mut merged: Vec<String> = Vec::new();
    for source in p.sources() {
        let hashes: Vec<i32> = source.iter().map(|k| java_string_hash(k)).collect();
        for i in properties_order(&hashes) {
            if !merged.contains(&source[i]) {
                merged.push(source[i].clone());
            }
        }
    }
    let hashes: Vec<i32> = merged.iter().map(|k| java_string_hash(k)).collect();
    properties_order(&hashes)
        .into_iter()
        .map(|i| merged[i].clone())
        .collect()
}

impl BasicDb {
    /// The binding, configured by `basicdb.*`; `p` is printed as each thread starts.
    pub fn new(p: &Properties) -> Result<BasicDb, Error> {
        let delay = p.i64_in("basicdb.simulatedelay", 0, 0, 3_600_000)? as u64;
        let properties = java_property_names(p)
            .into_iter()
            .map(|k| {
                let mut v = p.get(&k).unwrap_or("").to_string();
                if k == "db" && crate::binding_is_basic(&v) {
                    v = BASIC_DB_CLASS.into();
                }
                format!("\"{k}\"=\"{v}\"")
            })
            .collect();
        Ok(BasicDb {
            shared: Arc::new(Shared {
                verbose: p.bool_or("basicdb.verbose", true)?,
                count: p.bool_or("basicdb.count", false)?,
                delay_ms: delay,
                randomize_delay: p.bool_or("basicdb.randomizedelay", true)?,
                properties,
                threads: AtomicUsize::new(0),
                counts: Mutex::new(Counts::default()),
            }),
        })
    }

    /// What BasicDB's `init` does: prints the properties (when verbose) and counts the thread.
    pub fn init(&self) {
        if self.shared.verbose {
            let mut out = String::from("***************** properties *****************\n");
            for l in &self.shared.properties {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str("**********************************************\n");
            print_out(&out);
        }
        self.shared.threads.fetch_add(1, Ordering::SeqCst);
    }

    async fn delay(&self) {
        let ms = self.shared.delay_ms;
        if ms == 0 {
            return;
        }
        let ms = if self.shared.randomize_delay {
            rand::rng().random_range(0..ms)
        } else {
            ms
        };
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    fn print(&self, line: String) {
        if self.shared.verbose {
            print_out(&(line + "\n"));
        }
    }

    fn count(&self, which: fn(&mut Counts) -> &mut HashSet<i32>, hash: i32) {
        if self.shared.count {
            which(&mut self.shared.counts.lock().unwrap()).insert(hash);
        }
    }
}

fn print_out(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

/// The fields of a Java `HashSet` built from `fields`, in its iteration order.
fn set_order(fields: &[String]) -> Vec<String> {
    let cap = hash_set_capacity(fields.len());
    let hashes: Vec<i32> = fields.iter().map(|f| java_string_hash(f)).collect();
    hash_map_order(&hashes, cap)
        .into_iter()
        .map(|i| fields[i].clone())
        .collect()
}

fn fields_text(fields: Option<&[String]>) -> String {
    match fields {
        None => "<all fields>".into(),
        Some(f) => set_order(f).iter().map(|f| format!("{f} ")).collect(),
    }
}

/// BasicDB's hash of an operation on `key` with these field names (sorted) or none.
fn key_hash(table: &str, key: &str, fields: Option<&[String]>) -> i32 {
    let mut s = format!("{table}{key}");
    if let Some(f) = fields {
        let mut sorted = f.to_vec();
        sorted.sort();
        for f in sorted {
            s.push_str(&f);
        }
    }
    java_string_hash(&s)
}

impl Db for BasicDb {
    async fn read(
        &self,
        table: &str,
        key: &str,
        fields: Option<&[String]>,
        _out: &mut Record,
    ) -> Status {
        self.delay().await;
        self.print(format!("READ {table} {key} [ {}]", fields_text(fields)));
        self.count(|c| &mut c.reads, key_hash(table, key, fields));
        Status::Ok
    }

    async fn scan(
        &self,
        table: &str,
        start_key: &str,
        count: usize,
        fields: Option<&[String]>,
        _out: &mut Vec<Record>,
    ) -> Status {
        self.delay().await;
        self.print(format!(
            "SCAN {table} {start_key} {count} [ {}]",
            fields_text(fields)
        ));
        self.count(|c| &mut c.scans, key_hash(table, start_key, fields));
        Status::Ok
    }

    async fn update(&self, table: &str, key: &str, values: Values) -> Status {
        self.delay().await;
        let (line, hash) = write_line("UPDATE", table, key, values);
        self.print(line);
        self.count(|c| &mut c.updates, hash);
        Status::Ok
    }

    async fn insert(&self, table: &str, key: &str, values: Values) -> Status {
        self.delay().await;
        let (line, hash) = write_line("INSERT", table, key, values);
        self.print(line);
        self.count(|c| &mut c.inserts, hash);
        Status::Ok
    }

    async fn delete(&self, table: &str, key: &str) -> Status {
        self.delay().await;
        self.print(format!("DELETE {table} {key}"));
        self.count(
            |c| &mut c.deletes,
            java_string_hash(&format!("{table}{key}")),
        );
        Status::Ok
    }

    fn for_thread(&self) -> Self {
        self.init();
        self.clone()
    }

    async fn cleanup(&self) -> FlushOutcome {
        let left = self
            .shared
            .threads
            .fetch_sub(1, Ordering::SeqCst)
            .saturating_sub(1);
        if self.shared.count && left < 1 {
            let c = self.shared.counts.lock().unwrap();
            print_out(&format!(
                "[READS], Uniques, {}\n[SCANS], Uniques, {}\n[UPDATES], Uniques, {}\n[INSERTS], Uniques, {}\n[DELETES], Uniques, {}\n",
                c.reads.len(),
                c.scans.len(),
                c.updates.len(),
                c.inserts.len(),
                c.deletes.len()
            ));
        }
        FlushOutcome::default()
    }
}

/// `UPDATE|INSERT table key [ f=v ... ]` with the fields in Java `HashMap` order (the map the
/// workload fills in field order), and BasicDB's hash of it (fields sorted, values appended).
fn write_line(op: &str, table: &str, key: &str, values: Values) -> (String, i32) {
    let record: Vec<(String, String)> = crate::db::materialize(values)
        .into_iter()
        .map(|(f, v)| (f.to_string(), String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let mut sorted = record.clone();
    sorted.sort();
    let mut h = format!("{table}{key}");
    for (f, v) in &sorted {
        h.push_str(f);
        h.push_str(v);
    }
    let ordered = in_java_order(
        record,
        |(f, _)| java_string_hash(f),
        |hashes| hash_map_order(hashes, 16),
    );
    let mut line = format!("{op} {table} {key} [ ");
    for (f, v) in ordered {
        line.push_str(&format!("{f}={v} "));
    }
    line.push(']');
    (line, java_string_hash(&h))
}
