//! The HBase binding, with the semantics of YCSB's hbase2 binding: read → Get, scan → Scan
//! with a limit, update and insert → Put (through a BufferedMutator when `clientbuffering`),
//! delete → Delete.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hbase_client::{
    BufferedMutator, Client, ClientConfig, ColumnFamily, Delete, Durability, Error as HError, Get,
    MutatorConfig, Put, Scan, Table, TableDescriptor, TableName,
};

use crate::db::{Db, FlushOutcome, Record, Status};
use crate::props::Properties;
use crate::workload::build_key_name;
use crate::Error;

/// Default `writebuffersize`: 12 MiB, as YCSB's binding.
pub const DEFAULT_WRITE_BUFFER: i64 = 12 * 1024 * 1024;

/// The ZooKeeper quorum from the properties (`hbase.zookeeper.quorum`, with
/// `hbase.zookeeper.property.clientPort` for hosts without a port).
pub fn zk_quorum(p: &Properties) -> String {
    let quorum = p.get_or("hbase.zookeeper.quorum", "127.0.0.1:2181").trim();
    let port = p
        .get_or("hbase.zookeeper.property.clientPort", "2181")
        .trim();
    quorum
        .split(',')
        .map(|h| h.trim())
        .filter(|h| !h.is_empty())
        .map(|h| {
            if h.contains(':') {
                h.to_string()
            } else {
                format!("{h}:{port}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Connects to the cluster named by the properties.
pub async fn connect(p: &Properties) -> Result<Client, Error> {
    let quorum = zk_quorum(p);
    let mut builder = ClientConfig::builder(quorum.clone());
    if let Some(parent) = p.get("zookeeper.znode.parent") {
        builder = builder.znode_parent(parent.trim());
    }
    let secs = p.i64_or("hbase.client.connect.timeout.seconds", 10)?.max(1) as u64;
    builder = builder.connect_timeout(Duration::from_secs(secs));
    // Servers that register names this machine cannot reach (docker, NAT):
    // `host[:port]=host[:port],…`, see hbase_client::AddressMap.
    if let Some(map) = p.get("hbase.client.address.map") {
        let map = hbase_client::AddressMap::parse(map)
            .map_err(|e| Error::Config(format!("hbase.client.address.map: {e}")))?;
        builder = builder.address_mapper(map.into_mapper());
    }
    let config = builder
        .build()
        .map_err(|e| Error::Config(format!("bad HBase settings: {e}")))?;
    Client::connect(config).await.map_err(|e| {
        Error::Connect(format!(
            "cannot reach HBase through ZooKeeper {quorum}: {e}"
        ))
    })
}

/// The required `columnfamily`.
pub fn column_family(p: &Properties) -> Result<String, Error> {
    match p.get("columnfamily").map(str::trim) {
        Some(cf) if !cf.is_empty() => Ok(cf.to_string()),
        _ => Err(Error::Config(
            "the HBase binding needs a column family: pass --columnfamily NAME or -p columnfamily=NAME".into(),
        )),
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
                "unknown durability {other:?} (choose USE_DEFAULT, SKIP_WAL, ASYNC_WAL, SYNC_WAL or FSYNC_WAL)"
            )))
        }
    })
}

/// Split keys for a table of `regions` regions: YCSB's `user{1000 + i*(9999-1000)/n}` for hashed
/// keys, or evenly spaced key numbers for ordered inserts.
pub fn split_keys(p: &Properties, regions: i64) -> Result<Vec<Bytes>, Error> {
    if regions < 1 {
        return Err(Error::Config(
            "the number of regions must be at least 1".into(),
        ));
    }
    let ordered = p.get_or("insertorder", "hashed").trim() != "hashed";
    let mut keys = Vec::new();
    if ordered {
        let mut record_count = p.i64_or("recordcount", 0)?;
        if record_count == 0 {
            record_count = i32::MAX as i64;
        }
        let start = p.i64_or("insertstart", 0)?;
        let count = p.i64_or("insertcount", record_count - start)?;
        let pad = p.i64_or("zeropadding", 1)?.max(0) as usize;
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

struct Inner {
    table: Table,
    family: Bytes,
    mutator: Option<BufferedMutator>,
    durability: Durability,
    load_phase: bool,
    errors_printed: AtomicU64,
}

/// The HBase binding; clones share one client and one write buffer.
#[derive(Clone)]
pub struct HbaseDb {
    inner: Arc<Inner>,
}

const MAX_PRINTED_ERRORS: u64 = 10;

impl HbaseDb {
    /// Checks the table and family, and sets up buffering. Nothing is written.
    pub async fn open(client: &Client, p: &Properties, load_phase: bool) -> Result<HbaseDb, Error> {
        let table_name = p.get_or("table", "usertable").trim().to_string();
        let cf = column_family(p)?;
        let name = TableName::parse(&table_name)
            .map_err(|e| Error::Config(format!("bad table name {table_name:?}: {e}")))?;
        let durability = parse_durability(p.get_or("durability", "USE_DEFAULT"))?;
        let buffering = p.bool_or("clientbuffering", true);
        let buffer = p.i64_or("writebuffersize", DEFAULT_WRITE_BUFFER)?.max(1) as usize;
        let exists = client
            .admin()
            .table_exists(&name)
            .await
            .map_err(|e| Error::Hbase(format!("cannot check table {table_name}: {e}")))?;
        if !exists {
            return Err(Error::Config(format!(
                "table {table_name} does not exist: create it with `ycsb create-table --regions N` (same --zk/-P/-p options) or add -p createtable=true to the load"
            )));
        }
        let table = client
            .table(&table_name)
            .map_err(|e| Error::Config(format!("bad table name {table_name:?}: {e}")))?;
        // Probe the family with a read of a row that is never written.
        match table
            .get(Get::new(Bytes::from_static(b"\x00ycsb-probe")).family(cf.clone()))
            .await
        {
            Ok(_) => {}
            Err(e) => {
                let msg = e.to_string();
                if msg.contains("NoSuchColumnFamily") {
                    return Err(Error::Config(format!(
                        "column family {cf} does not exist in table {table_name} (-p columnfamily=)"
                    )));
                }
                return Err(Error::Hbase(format!("cannot read table {table_name}: {e}")));
            }
        }
        let mutator = if buffering {
            Some(
                client
                    .buffered_mutator(
                        &table_name,
                        MutatorConfig::default().write_buffer_size(buffer),
                    )
                    .map_err(|e| Error::Hbase(format!("cannot open a BufferedMutator: {e}")))?,
            )
        } else {
            None
        };
        Ok(HbaseDb {
            inner: Arc::new(Inner {
                table,
                family: Bytes::from(cf),
                mutator,
                durability,
                load_phase,
                errors_printed: AtomicU64::new(0),
            }),
        })
    }

    fn report_error(&self, what: &str, key: &str, e: &HError) {
        let n = self.inner.errors_printed.fetch_add(1, Ordering::Relaxed);
        if n < MAX_PRINTED_ERRORS {
            eprintln!("ycsb: {what} {key}: {e}");
        } else if n == MAX_PRINTED_ERRORS {
            eprintln!("ycsb: more errors follow; they are counted in the report");
        }
    }

    fn put(&self, key: &str, values: Record) -> Put {
        let mut put = Put::new(Bytes::copy_from_slice(key.as_bytes()));
        for (f, v) in values {
            put = put.add(self.inner.family.clone(), Bytes::from(f), v);
        }
        if self.inner.durability != Durability::UseDefault {
            put = put.durability(self.inner.durability);
        }
        put
    }

    async fn write(&self, key: &str, values: Record, insert: bool) -> Status {
        let put = self.put(key, values);
        // Run-phase inserts are written at once even with client buffering: the workload makes
        // an inserted key readable (workload D's "latest") as soon as the insert returns.
        let res = match &self.inner.mutator {
            Some(m) if !insert || self.inner.load_phase => m.mutate(put).await,
            _ => self.inner.table.put(put).await,
        };
        match res {
            Ok(()) => Status::Ok,
            Err(e) => {
                self.report_error(if insert { "insert" } else { "update" }, key, &e);
                Status::Error
            }
        }
    }

    fn record_of(&self, row: &hbase_client::RowResult) -> Record {
        row.cells
            .iter()
            .map(|c| {
                (
                    String::from_utf8_lossy(&c.qualifier).into_owned(),
                    c.value.clone(),
                )
            })
            .collect()
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
        let mut get = Get::new(Bytes::copy_from_slice(key.as_bytes()));
        match fields {
            None => get = get.family(self.inner.family.clone()),
            Some(fs) => {
                for f in fs {
                    get = get.column(
                        self.inner.family.clone(),
                        Bytes::copy_from_slice(f.as_bytes()),
                    );
                }
            }
        }
        match self.inner.table.get(get).await {
            Ok(Some(row)) if !row.is_empty() => {
                *out = self.record_of(&row);
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
            None => scan = scan.family(self.inner.family.clone()),
            Some(fs) => {
                for f in fs {
                    scan = scan.column(
                        self.inner.family.clone(),
                        Bytes::copy_from_slice(f.as_bytes()),
                    );
                }
            }
        }
        let mut stream = self.inner.table.scan(scan);
        while out.len() < count {
            match stream.next().await {
                Some(Ok(row)) => out.push(self.record_of(&row)),
                Some(Err(e)) => {
                    self.report_error("scan from", start_key, &e);
                    return Status::Error;
                }
                None => break,
            }
        }
        Status::Ok
    }

    async fn update(&self, _table: &str, key: &str, values: Record) -> Status {
        self.write(key, values, false).await
    }

    async fn insert(&self, _table: &str, key: &str, values: Record) -> Status {
        self.write(key, values, true).await
    }

    async fn delete(&self, _table: &str, key: &str) -> Status {
        let d = Delete::new(Bytes::copy_from_slice(key.as_bytes()));
        let res = match &self.inner.mutator {
            Some(m) => m.mutate(d).await,
            None => self.inner.table.delete(d).await,
        };
        match res {
            Ok(()) => Status::Ok,
            Err(e) => {
                self.report_error("delete", key, &e);
                Status::Error
            }
        }
    }

    async fn flush(&self) -> FlushOutcome {
        let mut outcome = FlushOutcome::default();
        let Some(m) = &self.inner.mutator else {
            return outcome;
        };
        match m.close().await {
            Ok(()) => {}
            Err(HError::MutationsFailed { failures }) => {
                for (i, f) in failures.iter().enumerate() {
                    if (i as u64) < MAX_PRINTED_ERRORS {
                        eprintln!(
                            "ycsb: buffered write to {} failed: {}",
                            String::from_utf8_lossy(&f.row),
                            f.error
                        );
                    }
                    // Only load-phase inserts and updates are buffered.
                    if self.inner.load_phase {
                        outcome.failed_inserts += 1;
                    } else {
                        outcome.failed_updates += 1;
                    }
                }
            }
            Err(e) => outcome.error = Some(e.to_string()),
        }
        outcome
    }

    fn buffered(&self) -> bool {
        self.inner.mutator.is_some()
    }
}
