//! The HBase binding, with the semantics of YCSB's hbase2 binding (`HBaseClient10`/`20`):
//! read → Get, scan → Scan with a limit, update and insert → Put, delete → Delete.
//!
//! Write accounting, by default as YCSB's: with `clientbuffering`, every client thread has its
//! own BufferedMutator (`writebuffersize`, 12 MiB), run-phase inserts are buffered too, and each
//! thread's final mutator close is timed as one `UPDATE` sample (and as `CLEANUP`). All the
//! threads' buffers of one client share one memory bound (`writebufferlimit`, 8 MiB): past
//! it, writers wait for buffers to drain, never drop data. `sharedwritebuffer=true` instead
//! keeps one buffer for all threads, writes run-phase inserts at once, and times the single
//! final flush in its own `[FLUSH]` block.
//!
//! A buffered write that fails for good is counted as `Return=ERROR` of the operation that
//! buffered it: a delete as DELETE (deletes go through the mutator too, as in YCSB's binding),
//! an insert as INSERT, an update as UPDATE. YCSB's binding sets no failure listener: its
//! failures surface as an exception of whichever later `mutate` or close meets them.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hbase_client::{
    BufferedMutator, Client, ClientConfig, ColumnFamily, Delete, Durability, Error as HError, Get,
    HbaseSite, Mutation, MutatorConfig, Put, Scan, Table, TableDescriptor, TableName,
};

use crate::carver::Carver;
use crate::db::{Db, FlushOutcome, Record, Status, Values};
use crate::props::Properties;
use crate::workload::build_key_name;
use crate::Error;

/// Default `writebuffersize`: 12 MiB, as YCSB's binding.
pub const DEFAULT_WRITE_BUFFER: i64 = 12 * 1024 * 1024;
/// Default `writebufferlimit`: the total of all threads' write buffers (buffered and in
/// flight) one client may hold: 8 MiB, not the client library's 256 MiB. The heap peaks at
/// about 4 bytes per counted byte while writes flow (the mutations, the encoded requests in
/// flight, the connection's buffers; tests/mutator_memory.rs), and a 256 MiB bound once cost
/// 1.34 GB at 10,000 threads; 8 MiB keeps a 10,000-thread run under 200 MB and is already about
/// 100 rows per thread's batch at 32 threads (measured no slower than 256 MiB there).
pub const DEFAULT_WRITE_BUFFER_LIMIT: i64 = 8 * 1024 * 1024;
/// The column family used when `columnfamily` is not set (the one YCSB's HBase README creates).
pub const DEFAULT_COLUMN_FAMILY: &str = "family";

/// Where the HBase client settings come from: `-cp DIR` (its `hbase-site.xml`), else
/// `$HBASE_CONF_DIR`, then every HBase client property given with `-p` (or `--zk`) on top.
pub fn hbase_site(p: &Properties, conf_dirs: &[String]) -> Result<HbaseSite, Error> {
    let bad = |e: HError| Error::Config(e.to_string());
    let mut site = HbaseSite::default();
    let mut found = false;
    for dir in conf_dirs {
        // Like a Java classpath: the first entry with an hbase-site.xml wins.
        let path = std::path::Path::new(dir);
        let file = if path.is_dir() {
            path.join("hbase-site.xml")
        } else {
            path.to_path_buf()
        };
        if file.is_file() && !found {
            site = HbaseSite::load(&file).map_err(bad)?;
            found = true;
        }
    }
    if !found && conf_dirs.is_empty() {
        if let Some(from_env) = HbaseSite::from_env().map_err(bad)? {
            site = from_env;
        }
    }
    for (k, v) in p.sorted() {
        if HbaseSite::is_honoured(k) {
            site.set(k, v);
        }
    }
    kerberos_login(p, &mut site)?;
    Ok(site)
}

/// YCSB's HBase binding logs in with `-p principal=… -p keytab=…`: the keytab login of a
/// Kerberos client (`hbase.client.keytab.principal` and `.file`, and
/// `hbase.security.authentication=kerberos` unless the site says otherwise).
fn kerberos_login(p: &Properties, site: &mut HbaseSite) -> Result<(), Error> {
    match (p.get("principal"), p.get("keytab")) {
        (Some(principal), Some(keytab)) => {
            let auth = site
                .get("hbase.security.authentication")
                .map_err(|e| Error::Config(e.to_string()))?;
            match auth {
                None => site.set("hbase.security.authentication", "kerberos"),
                Some(a) if a.trim().eq_ignore_ascii_case("kerberos") => {}
                Some(a) => {
                    return Err(Error::Config(format!(
                        "-p principal and -p keytab log in to Kerberos, but hbase.security.authentication={a}"
                    )))
                }
            }
            site.set("hbase.client.keytab.principal", principal.trim());
            site.set("hbase.client.keytab.file", keytab.trim());
            Ok(())
        }
        (None, None) => Ok(()),
        _ => Err(Error::Config(
            "Kerberos needs both -p principal=NAME@REALM and -p keytab=FILE".into(),
        )),
    }
}

/// The client configuration of the properties (see [`hbase_site`]).
pub fn client_config(p: &Properties, conf_dirs: &[String]) -> Result<ClientConfig, Error> {
    let site = hbase_site(p, conf_dirs)?;
    let mut builder = site
        .to_builder()
        .map_err(|e| Error::Config(e.to_string()))?;
    let secs = p.i64_in("hbase.client.connect.timeout.seconds", 10, 1, 3600)? as u64;
    builder = builder.connect_timeout(Duration::from_secs(secs));
    let limit = p.i64_in("writebufferlimit", DEFAULT_WRITE_BUFFER_LIMIT, 1, i64::MAX)?;
    builder = builder.write_buffer_limit(limit as usize);
    // Servers that register names this machine cannot reach (docker, NAT):
    // `host[:port]=host[:port],…`, see hbase_client::AddressMap.
    if let Some(map) = p.get("hbase.client.address.map") {
        let map = hbase_client::AddressMap::parse(map)
            .map_err(|e| Error::Config(format!("hbase.client.address.map: {e}")))?;
        builder = builder.address_mapper(map.into_mapper());
    }
    builder
        .build()
        .map_err(|e| Error::Config(format!("bad HBase settings: {e}")))
}

/// Connects to the cluster named by the properties.
pub async fn connect(p: &Properties, conf_dirs: &[String]) -> Result<Client, Error> {
    let config = client_config(p, conf_dirs)?;
    let registry = config.registry_description();
    Client::connect(config)
        .await
        .map_err(|e| Error::Connect(format!("cannot reach HBase through {registry}: {e}")))
}

/// `columnfamily`, or [`DEFAULT_COLUMN_FAMILY`].
pub fn column_family(p: &Properties) -> Result<String, Error> {
    match p.get("columnfamily").map(str::trim) {
        None => Ok(DEFAULT_COLUMN_FAMILY.to_string()),
        Some("") => Err(Error::Config(
            "columnfamily is empty: name the table's column family (default family)".into(),
        )),
        Some(cf) => Ok(cf.to_string()),
    }
}

fn parse_durability(s: &str) -> Result<Durability, Error> {
    Ok(match s.trim().to_ascii_uppercase().as_str() {
        "USE_DEFAULT" => Durability::UseDefault,
        "SKIP_WAL" => Durability::SkipWal,
        "ASYNC_WAL" => Durability::AsyncWal,
        "SYNC_WAL" => Durability::SyncWal,
        "FSYNC_WAL" => Durability::FsyncWal,
        other => {
            return Err(Error::Config(format!(
                "durability={other:?} is not one of USE_DEFAULT, SKIP_WAL, ASYNC_WAL, SYNC_WAL, FSYNC_WAL"
            )))
        }
    })
}

/// Split keys for a table of `regions` regions: YCSB's `user{1000 + i*(9999-1000)/n}` for hashed
/// keys, or evenly spaced key numbers for ordered inserts.
pub fn split_keys(p: &Properties, regions: i64) -> Result<Vec<Bytes>, Error> {
    if !(1..=MAX_REGIONS).contains(&regions) {
        return Err(Error::Config(format!(
            "the number of regions {regions} is out of range (accepted: 1 to {MAX_REGIONS})"
        )));
    }
    let ordered = p.get_or("insertorder", "hashed").trim() != "hashed";
    let mut keys = Vec::new();
    if ordered {
        let int_max = i32::MAX as i64;
        let mut record_count = p.i64_in("recordcount", 0, 0, int_max)?;
        if record_count == 0 {
            record_count = int_max;
        }
        let start = p.i64_in("insertstart", 0, 0, int_max)?;
        let count = p.i64_in("insertcount", record_count - start, 0, int_max)?;
        let pad = p.i64_in("zeropadding", 1, 0, crate::workload::MAX_ZERO_PADDING)? as usize;
        for i in 1..regions {
            keys.push(Bytes::from(build_key_name(
                start + i * count / regions,
                pad,
                true,
            )));
        }
    } else {
        for i in 1..regions {
            keys.push(Bytes::from(format!(
                "user{}",
                1000 + i * (9999 - 1000) / regions
            )));
        }
    }
    keys.dedup();
    Ok(keys)
}

/// Most regions `create-table` and `presplit` accept.
pub const MAX_REGIONS: i64 = 10_000;

/// Creates the table with `columnfamily`, pre-split into `regions` regions. Returns false when
/// it already existed (and was left alone).
pub async fn create_table(client: &Client, p: &Properties, regions: i64) -> Result<bool, Error> {
    let table = p.get_or("table", "usertable").trim().to_string();
    let cf = column_family(p)?;
    let name = TableName::parse(&table)
        .map_err(|e| Error::Config(format!("bad table name {table:?}: {e}")))?;
    let splits = split_keys(p, regions)?;
    let admin = client.admin();
    if admin
        .table_exists(&name)
        .await
        .map_err(|e| Error::Hbase(format!("cannot check table {table}: {e}")))?
    {
        return Ok(false);
    }
    let desc = TableDescriptor::new(name).family(ColumnFamily::new(cf));
    admin
        .create_table(&desc, &splits)
        .await
        .map_err(|e| Error::Hbase(format!("cannot create table {table}: {e}")))?;
    Ok(true)
}

/// How writes are buffered.
#[derive(Clone)]
enum Buffering {
    /// `clientbuffering=false`: every write is its own RPC.
    Off,
    /// YCSB's accounting: each thread has its own mutator of this size.
    PerThread(usize),
    /// `sharedwritebuffer=true`: one mutator for every thread, and its failures.
    Shared(BufferedMutator, Arc<FailureCounts>),
}

struct Shared {
    client: Client,
    table_name: String,
    table: Table,
    family: Bytes,
    buffering: Buffering,
    durability: Durability,
    load_phase: bool,
    /// How a failed put is told to be an insert or an update in a run.
    put_kinds: PutKinds,
    errors_printed: AtomicU64,
}

/// How a run tells a failed buffered put an insert or an update (a failed delete names itself;
/// in a load every put is an insert).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutKinds {
    /// By its fields: a workload whose inserts write all `fields` fields and whose updates
    /// write one (YCSB's `writeallfields=false`, `fieldcount` above 1). Exact, and nothing
    /// is kept per write.
    ByFields(usize),
    /// By the rows each thread inserted in the run (the shell, whose writes name their own
    /// fields, or a workload whose updates write every field): a row inserted and then updated
    /// in one buffer counts as two inserts.
    ByRows,
}

impl PutKinds {
    /// What `fieldcount` and `writeallfields` allow for a workload run.
    pub fn of_workload(fieldcount: usize, writeallfields: bool) -> PutKinds {
        if writeallfields || fieldcount < 2 {
            PutKinds::ByRows
        } else {
            PutKinds::ByFields(fieldcount)
        }
    }
}

/// One thread's write buffer: the mutator, and, with [`PutKinds::ByRows`] in a run, the rows
/// it inserted (so that its failed puts are counted against INSERT or UPDATE; a failed delete
/// names itself).
struct ThreadBuffer {
    mutator: BufferedMutator,
    inserted: Option<Arc<Mutex<HashSet<Bytes>>>>,
    failed: Arc<FailureCounts>,
}

/// A mutator's writes that failed for good, counted by its failure listener as each fails:
/// every one, also beyond the failures the mutator keeps for `flush`/`close` (it keeps
/// 10,000, and only counts the rest, without their rows).
#[derive(Default)]
struct FailureCounts {
    inserts: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
}

impl FailureCounts {
    /// A mutator config whose listener counts into `counts`: a failed delete as a delete (the
    /// failure carries its mutation); a failed put as an insert in a load, else as `kinds`
    /// says (by its fields, or when its row is in `inserted`), otherwise as an update.
    fn listening(
        config: MutatorConfig,
        counts: &Arc<FailureCounts>,
        load_phase: bool,
        kinds: PutKinds,
        inserted: Option<Arc<Mutex<HashSet<Bytes>>>>,
    ) -> MutatorConfig {
        let counts = counts.clone();
        config.on_failure(move |f| {
            let insert = |put: &Put| {
                load_phase
                    || match kinds {
                        PutKinds::ByFields(fields) => put.len() == fields,
                        PutKinds::ByRows => inserted
                            .as_ref()
                            .is_some_and(|rows| rows.lock().unwrap().contains(f.row())),
                    }
            };
            let n = match f.mutation() {
                Mutation::Delete(_) => &counts.deletes,
                Mutation::Put(put) if insert(put) => &counts.inserts,
                _ => &counts.updates,
            };
            n.fetch_add(1, Ordering::Relaxed);
        })
    }
}

/// The HBase binding. [`Db::for_thread`] gives each client thread its own write buffer.
#[derive(Clone)]
pub struct HbaseDb {
    shared: Arc<Shared>,
    thread: Option<Arc<ThreadBuffer>>,
}

thread_local! {
    /// The row keys of the operations run on this OS thread (the thread that runs tasks: a
    /// runtime worker, or the main thread on the one-thread runtime) are cut from its chunks.
    /// Per OS thread, not per client thread: with 10,000 client threads, each one's
    /// own chunk was out of the cache by its next operation (the cut and the drop of a key
    /// were each a miss on the chunk's shared count: `split_to` and `shared_v_drop`, 1.9% and
    /// 3.7% of the client's cycles in workload A, `perf`), while a thread's is in use all the
    /// time. A key is cut inside one synchronous call, so a task moving between threads never
    /// holds a chunk.
    static CARVER: std::cell::RefCell<Carver> = std::cell::RefCell::default();
}

/// A copy of `key`, cut from this thread's chunk.
fn carve_key(key: &str) -> bytes::Bytes {
    CARVER.with_borrow_mut(|c| c.copy(key.as_bytes()))
}

const MAX_PRINTED_ERRORS: u64 = 10;

/// `clientbuffering` (default on) and `sharedwritebuffer` (default off), each checked: read
/// before the client connects too, so a bad value costs no connection.
pub fn buffering_choice(p: &Properties) -> Result<(bool, bool), Error> {
    Ok((
        p.bool_or("clientbuffering", true)?,
        p.bool_or("sharedwritebuffer", false)?,
    ))
}

impl HbaseDb {
    /// Checks the table and its family, and sets up buffering. Nothing is written. `put_kinds`
    /// says how a run's failed puts are told inserts or updates.
    pub async fn open(
        client: &Client,
        p: &Properties,
        load_phase: bool,
        put_kinds: PutKinds,
    ) -> Result<HbaseDb, Error> {
        let table_name = p.get_or("table", "usertable").trim().to_string();
        let cf = column_family(p)?;
        let name = TableName::parse(&table_name)
            .map_err(|e| Error::Config(format!("bad table name {table_name:?}: {e}")))?;
        let durability = parse_durability(p.get_or("durability", "USE_DEFAULT"))?;
        let buffer = p.i64_in("writebuffersize", DEFAULT_WRITE_BUFFER, 1, 1 << 34)? as usize;
        let admin = client.admin();
        let exists = admin
            .table_exists(&name)
            .await
            .map_err(|e| Error::Hbase(format!("cannot check table {table_name}: {e}")))?;
        if !exists {
            return Err(Error::Config(format!(
                "table {table_name} does not exist: create it with `ycsb create-table --regions N` (same --zk/-P/-p options) or add -p createtable=true to the load"
            )));
        }
        let desc = admin
            .describe_table(&name)
            .await
            .map_err(|e| Error::Hbase(format!("cannot describe table {table_name}: {e}")))?;
        if desc.family_named(cf.as_bytes()).is_none() {
            let families: Vec<String> = desc
                .families()
                .iter()
                .map(|f| String::from_utf8_lossy(f.name()).into_owned())
                .collect();
            return Err(Error::Config(format!(
                "column family {cf} does not exist in table {table_name}; its families are: {} (choose one with -p columnfamily=NAME)",
                families.join(", ")
            )));
        }
        let table = client
            .table(&table_name)
            .map_err(|e| Error::Config(format!("bad table name {table_name:?}: {e}")))?;
        let (client_buffering, shared_buffer) = buffering_choice(p)?;
        let buffering = if !client_buffering {
            Buffering::Off
        } else if shared_buffer {
            // Run-phase inserts do not go through it: its failures are updates then.
            let failed = Arc::new(FailureCounts::default());
            let config = FailureCounts::listening(
                MutatorConfig::default().write_buffer_size(buffer),
                &failed,
                load_phase,
                put_kinds,
                None,
            );
            let m = client
                .buffered_mutator(&table_name, config)
                .map_err(|e| Error::Hbase(format!("cannot open a BufferedMutator: {e}")))?;
            Buffering::Shared(m, failed)
        } else {
            Buffering::PerThread(buffer)
        };
        Ok(HbaseDb {
            shared: Arc::new(Shared {
                client: client.clone(),
                table_name,
                table,
                family: Bytes::from(cf),
                buffering,
                durability,
                load_phase,
                put_kinds,
                errors_printed: AtomicU64::new(0),
            }),
            thread: None,
        })
    }

    fn report_error(&self, what: &str, key: &str, e: &HError) {
        let n = self.shared.errors_printed.fetch_add(1, Ordering::Relaxed);
        if n < MAX_PRINTED_ERRORS {
            eprintln!("ycsb: {what} {key}: {e}");
        } else if n == MAX_PRINTED_ERRORS {
            eprintln!("ycsb: more errors follow; they are counted in the report");
        }
    }

    /// The Put of `values`, whose random bytes are generated here, inside the timed call.
    fn put(&self, key: &str, values: Values) -> Put {
        let row = carve_key(key);
        let mut put = Put::with_capacity(row, values.len());
        for (f, v) in values {
            // The value is generated in the put's own buffer, where it is sent from.
            put = put.add_with(&self.shared.family, f.bytes(), v.len(), |out| {
                v.write_into(out)
            });
        }
        if self.shared.durability != Durability::UseDefault {
            put = put.durability(self.shared.durability);
        }
        put
    }

    async fn write(&self, key: &str, values: Values, insert: bool) -> Status {
        let put = self.put(key, values);
        let res = match (&self.shared.buffering, &self.thread) {
            (Buffering::PerThread(_), Some(t)) => {
                if let (true, Some(rows)) = (insert, &t.inserted) {
                    rows.lock().unwrap().insert(put.row().clone());
                }
                t.mutator.mutate(put).await
            }
            // Shared buffer: run-phase inserts are written at once, so that workload D's
            // "latest" reads find them (the accounting before YCSB's).
            (Buffering::Shared(m, _), _) if !insert || self.shared.load_phase => {
                m.mutate(put).await
            }
            _ => self.shared.table.put(put).await,
        };
        match res {
            Ok(()) => Status::Ok,
            Err(e) => {
                self.report_error(if insert { "insert" } else { "update" }, key, &e);
                Status::Error
            }
        }
    }

    /// What a mutator's `close` returned, and its listener counted: the failures are counted
    /// from `counts` (each one; `close` keeps only some), the first few printed.
    fn count_failures(&self, result: Result<(), HError>, counts: &FailureCounts) -> FlushOutcome {
        let mut outcome = FlushOutcome {
            failed_inserts: counts.inserts.swap(0, Ordering::Relaxed),
            failed_updates: counts.updates.swap(0, Ordering::Relaxed),
            failed_deletes: counts.deletes.swap(0, Ordering::Relaxed),
            error: None,
        };
        match result {
            Ok(()) => {}
            Err(HError::MutationsFailed { failures, .. }) => {
                for f in failures.iter().take(MAX_PRINTED_ERRORS as usize) {
                    eprintln!(
                        "ycsb: buffered {} of {} failed: {}",
                        match f.mutation() {
                            Mutation::Put(_) => "put",
                            Mutation::Delete(_) => "delete",
                        },
                        String::from_utf8_lossy(f.row()),
                        f.error()
                    );
                }
            }
            Err(e) => outcome.error = Some(e.to_string()),
        }
        outcome
    }
}

impl Db for HbaseDb {
    async fn read(
        &self,
        _table: &str,
        key: &str,
        fields: Option<&[String]>,
        out: &mut Record,
    ) -> Status {
        let mut get = Get::new(carve_key(key));
        match fields {
            None => get = get.family(self.shared.family.clone()),
            Some(fs) => {
                for f in fs {
                    get = get.column(
                        self.shared.family.clone(),
                        Bytes::copy_from_slice(f.as_bytes()),
                    );
                }
            }
        }
        // The row as it arrived: the workload looks at its cells only under dataintegrity.
        match self.shared.table.get_raw(get).await {
            Ok(Some(row)) if !row.is_empty() => {
                *out = Record::from_raw_row(row);
                Status::Ok
            }
            Ok(_) => Status::NotFound,
            Err(e) => {
                self.report_error("read", key, &e);
                Status::Error
            }
        }
    }

    async fn scan(
        &self,
        _table: &str,
        start_key: &str,
        count: usize,
        fields: Option<&[String]>,
        out: &mut Vec<Record>,
    ) -> Status {
        use futures::StreamExt;
        let mut scan = Scan::new()
            .start_row(Bytes::copy_from_slice(start_key.as_bytes()))
            .limit(count as u64)
            .caching(count.min(u32::MAX as usize) as u32);
        match fields {
            None => scan = scan.family(self.shared.family.clone()),
            Some(fs) => {
                for f in fs {
                    scan = scan.column(
                        self.shared.family.clone(),
                        Bytes::copy_from_slice(f.as_bytes()),
                    );
                }
            }
        }
        // The rows as they arrived, as for a read.
        let mut stream = self.shared.table.scan_raw(scan);
        // Room for the rows asked for, up to a thousand: grown row by row, the vector was
        // reallocated up to 7 times for a workload E scan (about 1,800 instructions).
        out.reserve(count.min(1000));
        while out.len() < count {
            match stream.next().await {
                Some(Ok(row)) => out.push(Record::from_raw_row(row)),
                Some(Err(e)) => {
                    self.report_error("scan from", start_key, &e);
                    return Status::Error;
                }
                None => break,
            }
        }
        Status::Ok
    }

    async fn update(&self, _table: &str, key: &str, values: Values) -> Status {
        self.write(key, values, false).await
    }

    async fn insert(&self, _table: &str, key: &str, values: Values) -> Status {
        self.write(key, values, true).await
    }

    async fn delete(&self, _table: &str, key: &str) -> Status {
        let d = Delete::new(Bytes::copy_from_slice(key.as_bytes()));
        // Buffered as YCSB's binding buffers a delete (a failure reports itself as a delete).
        let res = match (&self.shared.buffering, &self.thread) {
            (Buffering::PerThread(_), Some(t)) => t.mutator.mutate(d).await,
            (Buffering::Shared(m, _), _) => m.mutate(d).await,
            _ => self.shared.table.delete(d).await,
        };
        match res {
            Ok(()) => Status::Ok,
            Err(e) => {
                self.report_error("delete", key, &e);
                Status::Error
            }
        }
    }

    fn for_thread(&self) -> Self {
        let thread = match &self.shared.buffering {
            Buffering::PerThread(size) => {
                // A load counts every failed put as an insert; ByFields needs no rows.
                let inserted = (!self.shared.load_phase
                    && self.shared.put_kinds == PutKinds::ByRows)
                    .then(|| Arc::new(Mutex::new(HashSet::new())));
                let failed = Arc::new(FailureCounts::default());
                let config = FailureCounts::listening(
                    MutatorConfig::default().write_buffer_size(*size),
                    &failed,
                    self.shared.load_phase,
                    self.shared.put_kinds,
                    inserted.clone(),
                );
                self.shared
                    .client
                    .buffered_mutator(&self.shared.table_name, config)
                    .ok()
                    .map(|mutator| {
                        Arc::new(ThreadBuffer {
                            mutator,
                            inserted,
                            failed,
                        })
                    })
            }
            _ => None,
        };
        HbaseDb {
            shared: self.shared.clone(),
            thread,
        }
    }

    async fn cleanup(&self) -> FlushOutcome {
        match &self.thread {
            Some(t) => {
                let result = t.mutator.close().await;
                let outcome = self.count_failures(result, &t.failed);
                if let Some(rows) = &t.inserted {
                    rows.lock().unwrap().clear();
                }
                outcome
            }
            None => FlushOutcome::default(),
        }
    }

    fn cleanup_measurement(&self) -> Option<&'static str> {
        match self.shared.buffering {
            Buffering::PerThread(_) => Some("UPDATE"),
            Buffering::Off => Some("CLEANUP"),
            Buffering::Shared(..) => None,
        }
    }

    async fn flush(&self) -> FlushOutcome {
        match &self.shared.buffering {
            Buffering::Shared(m, failed) => {
                let result = m.close().await;
                self.count_failures(result, failed)
            }
            _ => FlushOutcome::default(),
        }
    }

    fn shared_buffer(&self) -> bool {
        matches!(self.shared.buffering, Buffering::Shared(..))
    }
}
