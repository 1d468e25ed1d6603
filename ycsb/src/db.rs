//! The database interface the workload drives (YCSB's `DB`), its status codes, and an
//! in-memory implementation for tests and dry runs.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// YCSB's `Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success.
    Ok,
    /// A failure.
    Error,
    /// The record does not exist.
    NotFound,
    /// The binding does not implement the operation.
    NotImplemented,
    /// Data integrity check failed.
    UnexpectedState,
    /// Bad request.
    BadRequest,
    /// Forbidden.
    Forbidden,
    /// Service unavailable.
    ServiceUnavailable,
    /// Buffered, to be written later.
    BatchedOk,
}

impl Status {
    /// The name in `Return=<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Error => "ERROR",
            Status::NotFound => "NOT_FOUND",
            Status::NotImplemented => "NOT_IMPLEMENTED",
            Status::UnexpectedState => "UNEXPECTED_STATE",
            Status::BadRequest => "BAD_REQUEST",
            Status::Forbidden => "FORBIDDEN",
            Status::ServiceUnavailable => "SERVICE_UNAVAILABLE",
            Status::BatchedOk => "BATCHED_OK",
        }
    }

    /// OK or BATCHED_OK.
    pub fn is_ok(self) -> bool {
        matches!(self, Status::Ok | Status::BatchedOk)
    }
}

/// Field name → value.
pub type Record = Vec<(String, Bytes)>;

/// What the final flush of buffered writes found.
#[derive(Debug, Default)]
pub struct FlushOutcome {
    /// Buffered inserts that failed.
    pub failed_inserts: u64,
    /// Buffered updates that failed.
    pub failed_updates: u64,
    /// An error that was not tied to particular rows.
    pub error: Option<String>,
}

/// A database binding. One value is cloned into every client task.
pub trait Db: Clone + Send + Sync + 'static {
    /// Reads `key`; `fields` of `None` means all. Fills `out`.
    fn read(
        &self,
        table: &str,
        key: &str,
        fields: Option<&[String]>,
        out: &mut Record,
    ) -> impl Future<Output = Status> + Send;

    /// Reads up to `count` rows from `start_key` on.
    fn scan(
        &self,
        table: &str,
        start_key: &str,
        count: usize,
        fields: Option<&[String]>,
        out: &mut Vec<Record>,
    ) -> impl Future<Output = Status> + Send;

    /// Writes `values` to an existing row.
    fn update(&self, table: &str, key: &str, values: Record)
        -> impl Future<Output = Status> + Send;

    /// Writes a new row.
    fn insert(&self, table: &str, key: &str, values: Record)
        -> impl Future<Output = Status> + Send;

    /// Deletes a row.
    fn delete(&self, table: &str, key: &str) -> impl Future<Output = Status> + Send;

    /// Per-task cleanup.
    fn cleanup(&self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Once, after every task is done: writes what is buffered.
    fn flush(&self) -> impl Future<Output = FlushOutcome> + Send {
        async { FlushOutcome::default() }
    }

    /// Whether writes are buffered (a `[FLUSH]` block is reported then).
    fn buffered(&self) -> bool {
        false
    }
}

/// An in-memory table (`-db memory`), for tests and dry runs.
#[derive(Clone, Default)]
pub struct MemoryDb {
    rows: Arc<Mutex<BTreeMap<String, BTreeMap<String, Bytes>>>>,
}

impl MemoryDb {
    /// An empty database.
    pub fn new() -> MemoryDb {
        MemoryDb::default()
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.lock().unwrap().len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn pick(row: &BTreeMap<String, Bytes>, fields: Option<&[String]>) -> Record {
    match fields {
        None => row.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Some(f) => f
            .iter()
            .filter_map(|k| row.get(k).map(|v| (k.clone(), v.clone())))
            .collect(),
    }
}

impl Db for MemoryDb {
    async fn read(
        &self,
        _table: &str,
        key: &str,
        fields: Option<&[String]>,
        out: &mut Record,
    ) -> Status {
        let rows = self.rows.lock().unwrap();
        match rows.get(key) {
            Some(row) => {
                *out = pick(row, fields);
                Status::Ok
            }
            None => Status::NotFound,
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
        let rows = self.rows.lock().unwrap();
        for (_, row) in rows.range(start_key.to_string()..).take(count) {
            out.push(pick(row, fields));
        }
        Status::Ok
    }

    async fn update(&self, _table: &str, key: &str, values: Record) -> Status {
        let mut rows = self.rows.lock().unwrap();
        let row = rows.entry(key.to_string()).or_default();
        for (k, v) in values {
            row.insert(k, v);
        }
        Status::Ok
    }

    async fn insert(&self, table: &str, key: &str, values: Record) -> Status {
        self.update(table, key, values).await
    }

    async fn delete(&self, _table: &str, key: &str) -> Status {
        match self.rows.lock().unwrap().remove(key) {
            Some(_) => Status::Ok,
            None => Status::NotFound,
        }
    }
}
