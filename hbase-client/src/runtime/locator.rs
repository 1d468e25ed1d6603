//! Finding the region (and server) of a row: the cache first, then a reversed scan of
//! `hbase:meta`, whose location comes from ZooKeeper.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;

use crate::region::{meta_search_key, meta_table_start};
use crate::region::{Location, RegionCache, RegionInfo, RegionLocation, ServerName, TableName};
use crate::config::ClientConfig;
use crate::error::{Error, Result};
use crate::ops::{region_specifier, results_from_scan, RowResult};
use crate::retry::{recovery, Recovery, RETRY_BACKOFF};
use crate::rpc::frame::{RequestMeta, Service};
use crate::runtime::pool::ConnectionPool;
use crate::zk::ZkRegistry;

/// Priority of calls to `hbase:meta`, so they jump user calls in the server's queues.
const META_PRIORITY: u32 = 200;
/// Attempts at reaching meta before a lookup fails.
const META_ATTEMPTS: u32 = 10;

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

pub(crate) struct MetaLocator {
    config: Arc<ClientConfig>,
    zk: Arc<ZkRegistry>,
    pool: Arc<ConnectionPool>,
    cache: RegionCache,
    meta_server: Mutex<Option<ServerName>>,
    /// One meta lookup per table at a time; waiters then find the result in the cache.
    lookups: Mutex<HashMap<TableName, Arc<tokio::sync::Mutex<()>>>>,
}

impl MetaLocator {
    pub(crate) fn new(
        config: Arc<ClientConfig>,
        zk: Arc<ZkRegistry>,
        pool: Arc<ConnectionPool>,
    ) -> Self {
        MetaLocator {
            config,
            zk,
            pool,
            cache: RegionCache::default(),
            meta_server: Mutex::new(None),
            lookups: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn cache(&self) -> &RegionCache {
        &self.cache
    }

    /// The location of the region of `table` holding `row`.
    pub(crate) async fn locate(&self, table: &TableName, row: &[u8]) -> Result<Location> {
        self.seek(table, Seek::Row(row)).await
    }

    /// [`MetaLocator::locate`], given up at `deadline` (the operation's), so a meta lookup
    /// that keeps failing cannot outlast the operation timeout (`limit`, for the error).
    pub(crate) async fn locate_before(
        &self,
        table: &TableName,
        row: &[u8],
        deadline: Instant,
        limit: Duration,
    ) -> Result<Location> {
        let timed_out = || Error::Timeout {
            what: format!("locating a region of {table}"),
            after: limit,
        };
        if Instant::now() >= deadline {
            return Err(timed_out());
        }
        let deadline = tokio::time::Instant::from_std(deadline);
        tokio::time::timeout_at(deadline, self.locate(table, row))
            .await
            .unwrap_or_else(|_| Err(timed_out()))
    }

    /// The region, cached or looked up in meta, that `seek` names.
    pub(crate) async fn seek(&self, table: &TableName, seek: Seek<'_>) -> Result<Location> {
        let stats = self.pool.stats();
        if let Some(loc) = self.probe_cache(table, seek) {
            stats.meta_cache_hits.fetch_add(1, Relaxed);
            return Ok(loc);
        }
        stats.meta_cache_misses.fetch_add(1, Relaxed);
        let gate = {
            let mut lookups = self.lookups.lock().unwrap_or_else(|e| e.into_inner());
            lookups.entry(table.clone()).or_default().clone()
        };
        let _turn = gate.lock().await;
        if let Some(loc) = self.probe_cache(table, seek) {
            return Ok(loc);
        }
        self.lookup(table, seek).await
    }

    fn probe_cache(&self, table: &TableName, seek: Seek<'_>) -> Option<Location> {
        match seek {
            Seek::Row(row) => self.cache.find(table, row),
            Seek::EndingAt(key) => self.cache.find_ending_at(table, key),
            Seek::Last => self.cache.find_last(table),
        }
    }

    /// A reversed meta scan from just above the wanted region down to `table,,`: the first row
    /// is the wanted region; the following ones are its predecessors, cached as a prefetch.
    async fn lookup(&self, table: &TableName, seek: Seek<'_>) -> Result<Location> {
        let search_key = match seek {
            Seek::Row(row) => meta_search_key(table, row),
            Seek::EndingAt(key) => [&table.to_bytes()[..], b",", key, b","].concat(),
            Seek::Last => [&table.to_bytes()[..], &[b',' + 1][..]].concat(),
        };
        let mut scan = hbase_proto::Scan {
            column: vec![hbase_proto::Column {
                family: Bytes::from_static(b"info"),
                qualifier: vec![],
            }],
            start_row: Some(Bytes::from(search_key)),
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

    /// Every region of `table` with its server (None while unassigned), in key order.
    pub(crate) async fn table_regions(
        &self,
        table: &TableName,
    ) -> Result<Vec<(RegionInfo, Option<ServerName>)>> {
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
        let rows = self.scan_meta(scan, usize::MAX, false).await?;
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

    async fn meta_server(&self) -> Result<ServerName> {
        if let Some(s) = self
            .meta_server
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Ok(s);
        }
        let s = self.zk.meta_server().await?;
        *self.meta_server.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
        Ok(s)
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
                    let _ = self.meta_call_once(&close).await;
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
            // A lost `next` cannot be retried (sequence numbers), so call once.
            resp = self.meta_call_once(&next).await?;
        }
        rows.truncate(max_rows);
        Ok(rows)
    }

    async fn meta_call_once(
        &self,
        req: &hbase_proto::ScanRequest,
    ) -> Result<(hbase_proto::ScanResponse, Bytes)> {
        let server = self.meta_server().await?;
        let conn = self.pool.get(&server, Service::Client).await?;
        let meta = RequestMeta {
            method: "Scan",
            timeout_ms: self.config.rpc_timeout.as_millis() as u32,
            priority: META_PRIORITY,
        };
        let body = conn
            .call(meta, req, None, self.config.rpc_timeout)
            .await
            .inspect_err(|e| {
                if recovery(e) == Recovery::DropServer {
                    self.pool.discard(&server, Service::Client, &conn);
                }
            })?;
        let resp: hbase_proto::ScanResponse = body.decode()?;
        Ok((resp, body.cellblock))
    }

    /// A meta call that re-reads meta's location from ZooKeeper and retries on failure.
    async fn meta_call(
        &self,
        req: &hbase_proto::ScanRequest,
    ) -> Result<(hbase_proto::ScanResponse, Bytes)> {
        let deadline = Instant::now() + self.config.operation_timeout;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let err = match self.meta_call_once(req).await {
                Ok(r) => return Ok(r),
                Err(e) => e,
            };
            if recovery(&err) == Recovery::Fail || attempt >= META_ATTEMPTS {
                return Err(err);
            }
            tracing::debug!(error = %err, attempt, "meta lookup failed; retrying");
            if recovery(&err) != Recovery::Backoff {
                *self.meta_server.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            let pause = self.config.pause * RETRY_BACKOFF[(attempt as usize - 1).min(12)];
            if Instant::now() + pause > deadline {
                return Err(err);
            }
            tokio::time::sleep(pause.min(Duration::from_secs(5))).await;
        }
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
            .and_then(|b| <[u8; 8]>::try_from(&b[..]).ok())
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
