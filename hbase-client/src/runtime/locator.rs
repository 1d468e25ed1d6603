//! Finding the region (and server) of a row: the cache first, then a reversed scan of
//! `hbase:meta`, whose location comes from the connection registry.
//!
//! A lookup is one meta call, never retried here: it runs inside an operation's attempt, and
//! the operation's retrying caller decides what a failure means. Lookups for the same search
//! key share one meta call (the waiters each give up at their own deadline, the call goes on
//! for the others); lookups for different keys of a table run concurrently, up to eight at a
//! time (Java's `hbase.client.meta.max.concurrent.locate.per.table`).

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::error::exceptions::{self, CacheAction};
use crate::error::{Error, Result};
use crate::ops::{region_specifier, results_from_scan, RowResult};
use crate::region::{meta_search_key, meta_table_start};
use crate::region::{Location, RegionInfo, RegionLocation, ServerName, TableName};
use crate::rpc::frame::{RequestMeta, Service};
use crate::runtime::config::ClientConfig;
use crate::runtime::pool::ConnectionPool;
use crate::runtime::region_cache::RegionCache;
use crate::runtime::registry::ConnectionRegistry;

/// Priority of calls to `hbase:meta`, so they jump user calls in the server's queues.
pub(crate) const META_PRIORITY: u32 = 200;
/// HBase's largest row key (`HConstants.MAX_ROW_LENGTH`): a meta search key is a row of
/// `hbase:meta`, and the server refuses longer ones.
const MAX_ROW_LENGTH: usize = i16::MAX as usize;

/// Which region of a table to find.
#[derive(Clone, Copy)]
pub(crate) enum Seek<'a> {
    /// The region holding this row.
    Row(&'a [u8]),
    /// The region whose end key is this key: the one before the region starting there.
    EndingAt(&'a [u8]),
    /// The table's last region.
    Last,
}

impl Seek<'_> {
    fn is_answered_by(&self, region: &RegionInfo) -> bool {
        match self {
            Seek::Row(row) => region.contains(row),
            Seek::EndingAt(key) => &region.end_key[..] == *key,
            Seek::Last => region.end_key.is_empty(),
        }
    }

    /// The meta row a reversed scan starts from to find this region first.
    fn search_key(&self, table: &TableName) -> Vec<u8> {
        match self {
            Seek::Row(row) => meta_search_key(table, row),
            Seek::EndingAt(key) => [&table.to_bytes()[..], b",", key, b","].concat(),
            Seek::Last => [&table.to_bytes()[..], &[b',' + 1][..]].concat(),
        }
    }

    fn to_owned(self) -> OwnedSeek {
        match self {
            Seek::Row(r) => OwnedSeek::Row(Bytes::copy_from_slice(r)),
            Seek::EndingAt(k) => OwnedSeek::EndingAt(Bytes::copy_from_slice(k)),
            Seek::Last => OwnedSeek::Last,
        }
    }
}

impl std::fmt::Debug for Seek<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Seek::Row(r) => write!(f, "region of row {:?}", String::from_utf8_lossy(r)),
            Seek::EndingAt(k) => write!(f, "region ending at {:?}", String::from_utf8_lossy(k)),
            Seek::Last => write!(f, "last region"),
        }
    }
}

/// A [`Seek`] that owns its keys (for a lookup task, or a scan attempt whose position moves).
#[derive(Clone)]
pub(crate) enum OwnedSeek {
    Row(Bytes),
    EndingAt(Bytes),
    Last,
}

impl OwnedSeek {
    pub(crate) fn borrow(&self) -> Seek<'_> {
        match self {
            OwnedSeek::Row(r) => Seek::Row(r),
            OwnedSeek::EndingAt(k) => Seek::EndingAt(k),
            OwnedSeek::Last => Seek::Last,
        }
    }
}

/// A lookup's outcome, as its waiters see it.
type Lookup = Option<std::result::Result<Location, Arc<Error>>>;
/// Lookups in flight, by table and search key.
type Lookups = HashMap<(TableName, Vec<u8>), watch::Receiver<Lookup>>;

/// A lookup registered in `Inner::lookups`: answered once, and unregistered when answered or
/// dropped unanswered (its first caller gave up before its turn, or its task was dropped), so
/// a key is never left waiting on a lookup that will not answer.
struct PendingLookup {
    inner: Arc<Inner>,
    key: (TableName, Vec<u8>),
    /// This lookup's receiver, to tell its entry from a later lookup's of the same key.
    rx: watch::Receiver<Lookup>,
    tx: watch::Sender<Lookup>,
}

impl PendingLookup {
    fn answer(self, result: std::result::Result<Location, Arc<Error>>) {
        self.unregister();
        let _ = self.tx.send(Some(result));
    }

    fn unregister(&self) {
        let mut lookups = self.inner.lookups.lock().unwrap_or_else(|e| e.into_inner());
        if lookups
            .get(&self.key)
            .is_some_and(|rx| rx.same_channel(&self.rx))
        {
            lookups.remove(&self.key);
        }
    }
}

impl Drop for PendingLookup {
    fn drop(&mut self) {
        self.unregister();
    }
}

struct Inner {
    config: Arc<ClientConfig>,
    registry: Arc<dyn ConnectionRegistry>,
    pool: Arc<ConnectionPool>,
    cache: RegionCache,
    meta_server: Mutex<Option<ServerName>>,
    /// Lookups in flight, by table and search key.
    lookups: Mutex<Lookups>,
    /// Per table, the lookups allowed at once.
    per_table: Mutex<HashMap<TableName, Arc<Semaphore>>>,
}

#[derive(Clone)]
pub(crate) struct MetaLocator {
    inner: Arc<Inner>,
}

impl MetaLocator {
    pub(crate) fn new(
        config: Arc<ClientConfig>,
        registry: Arc<dyn ConnectionRegistry>,
        pool: Arc<ConnectionPool>,
    ) -> Self {
        MetaLocator {
            inner: Arc::new(Inner {
                config,
                registry,
                pool,
                cache: RegionCache::default(),
                meta_server: Mutex::new(None),
                lookups: Mutex::new(HashMap::new()),
                per_table: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub(crate) fn cache(&self) -> &RegionCache {
        &self.inner.cache
    }

    /// Locates each of `items` (rows of `table`, by `row`) that the cache holds, under one
    /// lock (`seek` takes the lock and looks the table up for every row): `located(item,
    /// location)` for each one found, counted as a cache hit like `seek`'s. The others are
    /// left to `seek`.
    pub(crate) fn find_cached<'t, T: 't>(
        &self,
        table: &TableName,
        items: impl Iterator<Item = &'t mut T>,
        row: impl Fn(&T) -> &[u8],
        mut located: impl FnMut(&mut T, Location),
    ) {
        let hits = self.inner.cache.with_table(table, |cached| {
            let mut hits = 0;
            for item in items {
                if let Some(loc) = cached.find(row(item)) {
                    located(item, loc);
                    hits += 1;
                }
            }
            hits
        });
        self.inner
            .pool
            .stats()
            .meta_cache_hits
            .fetch_add(hits, Relaxed);
    }

    /// The cached region that `seek` names, counted as a cache hit; `None` (nothing counted)
    /// when only [`seek`](Self::seek) can tell. Not async: a caller that finds its region
    /// here builds no lookup future (the state of a meta lookup it would not run).
    pub(crate) fn cached(&self, table: &TableName, seek: Seek<'_>) -> Option<Location> {
        let loc = self.inner.probe_cache(table, seek)?;
        self.inner
            .pool
            .stats()
            .meta_cache_hits
            .fetch_add(1, Relaxed);
        Some(loc)
    }

    /// The region, cached or looked up in meta, that `seek` names; waits for a lookup at most
    /// until `deadline`.
    pub(crate) async fn seek(
        &self,
        table: &TableName,
        seek: Seek<'_>,
        deadline: Instant,
    ) -> Result<Location> {
        if let Some(loc) = self.cached(table, seek) {
            return Ok(loc);
        }
        let inner = &self.inner;
        let stats = inner.pool.stats();
        stats.meta_cache_misses.fetch_add(1, Relaxed);
        if table.is_meta() {
            return tokio::time::timeout_at(deadline.into(), inner.locate_meta())
                .await
                .unwrap_or_else(|_| {
                    Err(Error::Timeout {
                        what: format!("locating {table} (asking the registry)"),
                        after: inner.config.operation_timeout,
                    })
                });
        }
        let key = seek.search_key(table);
        if key.len() > MAX_ROW_LENGTH {
            return Err(Error::InvalidInput(format!(
                "the meta search key for this row would be {} bytes (table name, row key and 15 \
                 more); HBase allows at most {MAX_ROW_LENGTH}",
                key.len()
            )));
        }
        let map_key = (table.clone(), key);
        let timed_out = |waiting: &str| Error::Timeout {
            what: format!("locating the {seek:?} of {table}{waiting}"),
            after: inner.config.operation_timeout,
        };
        loop {
            // The first caller of a search key registers its lookup at once, so that every
            // later caller of that key waits for the same answer. It then waits, in its own
            // future, for one of the table's turns to look meta up (at most the config's
            // at once, as Java's async client), and only then spawns the lookup (a task, so
            // that the callers it answers do not depend on this one waiting). Spawning first
            // cost a cold client with 10,000 misses at once a waiting task (about 3 KB) per
            // distinct row: 22 MB of heap kept for the whole run.
            let (mut outcome, registered) = {
                let mut lookups = inner.lookups.lock().unwrap_or_else(|e| e.into_inner());
                match lookups.get(&map_key) {
                    Some(rx) => (rx.clone(), None),
                    None => {
                        let (tx, rx) = watch::channel(None);
                        lookups.insert(map_key.clone(), rx.clone());
                        let pending = PendingLookup {
                            inner: inner.clone(),
                            key: map_key.clone(),
                            rx: rx.clone(),
                            tx,
                        };
                        (rx, Some(pending))
                    }
                }
            };
            if let Some(pending) = registered {
                let gate = inner.table_gate(table);
                let turn =
                    match tokio::time::timeout_at(deadline.into(), gate.acquire_owned()).await {
                        Ok(Ok(turn)) => turn,
                        Ok(Err(_)) => unreachable!("lookup gates are never closed"),
                        // `pending` dropped: the callers that joined it look again.
                        Err(_) => return Err(timed_out(" (waiting for a turn to look it up)")),
                    };
                // A lookup that ran while this caller waited may have found it.
                if let Some(loc) = inner.probe_cache(table, seek) {
                    pending.answer(Ok(loc.clone()));
                    return Ok(loc);
                }
                let inner = inner.clone();
                let seek = seek.to_owned();
                tokio::spawn(async move {
                    let result = inner.lookup(&pending.key.0, seek.borrow(), turn).await;
                    pending.answer(result.map_err(Arc::new));
                });
            }
            let waited =
                tokio::time::timeout_at(deadline.into(), outcome.wait_for(Option::is_some)).await;
            match waited {
                Ok(Ok(found)) => {
                    return match found.as_ref().expect("waited for an outcome") {
                        Ok(loc) => Ok(loc.clone()),
                        Err(e) => Err(e.duplicate()),
                    }
                }
                // The lookup ended without an answer (its first caller gave up before its
                // turn, or its task was dropped): look again, or take its place.
                Ok(Err(_)) => {
                    if let Some(loc) = inner.probe_cache(table, seek) {
                        return Ok(loc);
                    }
                }
                Err(_) => return Err(timed_out("")),
            }
        }
    }

    /// Every region of `table` with its server (None while unassigned), in key order: one
    /// scan of meta (one attempt; callers retry).
    pub(crate) async fn table_regions(
        &self,
        table: &TableName,
    ) -> Result<Vec<(RegionInfo, Option<ServerName>)>> {
        if table.is_meta() {
            let loc = self.inner.locate_meta().await?;
            return Ok(vec![(loc.region.clone(), Some(loc.server.clone()))]);
        }
        let mut stop = table.to_bytes();
        stop.push(b',' + 1);
        let mut scan = hbase_proto::Scan {
            column: vec![hbase_proto::Column {
                family: Bytes::from_static(b"info"),
                qualifier: vec![],
            }],
            start_row: Some(Bytes::from(meta_table_start(table))),
            stop_row: Some(Bytes::from(stop)),
            ..Default::default()
        };
        scan.set_read_type(hbase_proto::scan::ReadType::Pread);
        let rows = self.inner.scan_meta(scan, usize::MAX, false).await?;
        let mut out = Vec::new();
        for r in &rows {
            if let Some((region, server)) = parse_meta_row(r)? {
                if region.table == *table && !region.split && !region.offline {
                    out.push((region, server));
                }
            }
        }
        Ok(out)
    }
}

impl Inner {
    fn probe_cache(&self, table: &TableName, seek: Seek<'_>) -> Option<Location> {
        match seek {
            Seek::Row(row) => self.cache.find(table, row),
            Seek::EndingAt(key) => self.cache.find_ending_at(table, key),
            Seek::Last => self.cache.find_last(table),
        }
    }

    fn table_gate(&self, table: &TableName) -> Arc<Semaphore> {
        let mut gates = self.per_table.lock().unwrap_or_else(|e| e.into_inner());
        gates
            .entry(table.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.config.meta_lookups_per_table)))
            .clone()
    }

    /// A reversed meta scan from just above the wanted region down to `table,,`: the first row
    /// is the wanted region; the following ones are its predecessors, cached as a prefetch.
    /// Runs with one of the table's turns (`_turn`, held until it ends).
    async fn lookup(
        &self,
        table: &TableName,
        seek: Seek<'_>,
        _turn: OwnedSemaphorePermit,
    ) -> Result<Location> {
        // Found by a lookup that ended after this one's caller looked.
        if let Some(loc) = self.probe_cache(table, seek) {
            return Ok(loc);
        }
        let mut scan = hbase_proto::Scan {
            column: vec![hbase_proto::Column {
                family: Bytes::from_static(b"info"),
                qualifier: vec![],
            }],
            start_row: Some(Bytes::from(seek.search_key(table))),
            stop_row: Some(Bytes::from(meta_table_start(table))),
            include_stop_row: Some(true),
            reversed: Some(true),
            caching: Some(self.config.meta_prefetch),
            ..Default::default()
        };
        scan.set_read_type(hbase_proto::scan::ReadType::Pread);
        self.pool.stats().meta_lookups.fetch_add(1, Relaxed);
        let rows = self
            .scan_meta(scan, self.config.meta_prefetch as usize, true)
            .await?;
        let mut found: Option<Result<Location>> = None;
        for r in &rows {
            let Some((region, server)) = parse_meta_row(r)? else {
                continue;
            };
            if region.table != *table || region.split || region.offline {
                continue;
            }
            let is_target = found.is_none();
            let unavailable = || Error::RegionOffline {
                region: String::from_utf8_lossy(&region.name).into_owned(),
            };
            match server {
                Some(server) => {
                    let loc = Arc::new(RegionLocation { region, server });
                    self.cache.insert(loc.clone());
                    if is_target {
                        // Anything else is a hole in meta (a split half-done): try again shortly.
                        found = Some(if seek.is_answered_by(&loc.region) {
                            Ok(loc)
                        } else {
                            Err(Error::RegionOffline {
                                region: format!("{seek:?} of {table}"),
                            })
                        });
                    }
                }
                None if is_target => found = Some(Err(unavailable())),
                None => {}
            }
        }
        found.unwrap_or_else(|| Err(Error::TableNotFound(table.to_string())))
    }

    /// `hbase:meta`'s one region, at the server the registry names now: meta holds no row
    /// for itself (Java's client asks its meta locator for it too). Cached like any region,
    /// so a failure that drops the location sends the next caller to the registry again.
    async fn locate_meta(&self) -> Result<Location> {
        let server = self.registry.meta_server().await?;
        *self.meta_server.lock().unwrap_or_else(|e| e.into_inner()) = Some(server.clone());
        let loc = Arc::new(RegionLocation {
            region: RegionInfo::meta(),
            server,
        });
        self.cache.insert(loc.clone());
        Ok(loc)
    }

    async fn meta_server(&self) -> Result<ServerName> {
        if let Some(s) = self
            .meta_server
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Ok(s);
        }
        let s = self.registry.meta_server().await?;
        *self.meta_server.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
        Ok(s)
    }

    /// After a failed meta call: forgets meta's location if the exception table says the
    /// server's locations are stale, so the next lookup asks the registry again.
    fn note_meta_failure(&self, e: &Error) {
        if exceptions::verdict(e).cache != CacheAction::Keep {
            *self.meta_server.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// Scans `hbase:meta` (a single region) and returns up to `max_rows` rows. With
    /// `one_batch`, the open call also closes the scanner: one round trip.
    async fn scan_meta(
        &self,
        scan: hbase_proto::Scan,
        max_rows: usize,
        one_batch: bool,
    ) -> Result<Vec<RowResult>> {
        let meta = RegionInfo::meta();
        let batch = max_rows.min(1000) as u32;
        let mut rows = Vec::new();
        let open = hbase_proto::ScanRequest {
            region: Some(region_specifier(&meta.name)),
            scan: Some(scan),
            number_of_rows: Some(batch),
            close_scanner: Some(one_batch),
            client_handles_partials: Some(false),
            ..Default::default()
        };
        let mut resp = self.meta_call(&open).await?;
        let mut seq = 0u64;
        loop {
            for (row, _partial) in results_from_scan(&mut resp.0, resp.1.clone())? {
                rows.push(row);
            }
            let more = resp.0.more_results.unwrap_or(true)
                && resp.0.more_results_in_region.unwrap_or(true);
            let Some(scanner_id) = resp.0.scanner_id else {
                break;
            };
            if one_batch {
                break;
            }
            if !more || rows.len() >= max_rows {
                if more {
                    let close = hbase_proto::ScanRequest {
                        scanner_id: Some(scanner_id),
                        close_scanner: Some(true),
                        number_of_rows: Some(0),
                        ..Default::default()
                    };
                    let _ = self.meta_call(&close).await;
                }
                break;
            }
            let next = hbase_proto::ScanRequest {
                scanner_id: Some(scanner_id),
                number_of_rows: Some(batch),
                next_call_seq: Some(seq),
                ..Default::default()
            };
            seq += 1;
            resp = self.meta_call(&next).await?;
        }
        rows.truncate(max_rows);
        Ok(rows)
    }

    /// One call to meta's server (no retries: the operation around it retries).
    async fn meta_call(
        &self,
        req: &hbase_proto::ScanRequest,
    ) -> Result<(hbase_proto::ScanResponse, Bytes)> {
        let server = self.meta_server().await?;
        let timeout = self.config.rpc_timeout;
        let connect_by = Instant::now() + self.config.connect_timeout.max(Duration::from_millis(1));
        let conn = self
            .pool
            .get(&server, Service::Client, connect_by)
            .await
            .inspect_err(|e| self.note_meta_failure(e))?;
        let meta = RequestMeta {
            method: "Scan",
            timeout_ms: timeout.as_millis().min(u32::MAX as u128) as u32,
            priority: META_PRIORITY,
        };
        let body = conn
            .call(meta, req, None, std::time::Instant::now(), timeout)
            .await
            .map_err(|failed| failed.error)
            .inspect_err(|e| self.note_meta_failure(e))?;
        let resp: hbase_proto::ScanResponse = body.decode()?;
        Ok((resp, body.cellblock))
    }
}

/// Reads a region and its server (if assigned) from an `hbase:meta` row.
pub(crate) fn parse_meta_row(row: &RowResult) -> Result<Option<(RegionInfo, Option<ServerName>)>> {
    let Some(info) = row.value(b"info", b"regioninfo") else {
        return Ok(None);
    };
    let pb = info.strip_prefix(b"PBUF").unwrap_or(info);
    let region = hbase_proto::RegionInfo::decode(pb)
        .map_err(|e| Error::Protocol(format!("bad info:regioninfo in meta: {e}")))?;
    let region = RegionInfo::from_proto(&region);
    let server = row.value(b"info", b"server").and_then(|s| {
        let s = std::str::from_utf8(s).ok()?;
        let (host, port) = s.rsplit_once(':')?;
        let start_code = row
            .value(b"info", b"serverstartcode")
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_be_bytes)
            .unwrap_or(0);
        Some(ServerName {
            host: host.to_string(),
            port: port.parse().ok()?,
            start_code,
        })
    });
    Ok(Some((region, server)))
}
