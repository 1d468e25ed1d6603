//! Counters the client keeps per server and for the meta cache, read with
//! [`Client::stats`](crate::Client::stats).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use crate::error::Error;

/// Live counters of one server (`host:port`).
#[derive(Debug, Default)]
pub(crate) struct ServerCounters {
    pub(crate) calls: AtomicU64,
    pub(crate) multi_calls: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) relocations: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    pub(crate) bytes_received: AtomicU64,
    pub(crate) connects: AtomicU64,
    pub(crate) failed_connects: AtomicU64,
    pub(crate) read_timeouts: AtomicU64,
    pub(crate) abandoned_unsent: AtomicU64,
}

impl ServerCounters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }
}

#[derive(Debug, Default)]
pub(crate) struct Stats {
    servers: Mutex<BTreeMap<String, Arc<ServerCounters>>>,
    pub(crate) meta_cache_hits: AtomicU64,
    pub(crate) meta_cache_misses: AtomicU64,
    pub(crate) meta_lookups: AtomicU64,
    /// Retried failures by cause (see [`retry_cause`]).
    retry_causes: Mutex<BTreeMap<String, u64>>,
}

/// The cause a retried failure is counted under: the exception class a server raised, or
/// what failed in the client (connect, connection, timeout, ZooKeeper, ...).
pub(crate) fn retry_cause(e: &Error) -> String {
    match e {
        Error::Remote { exception, .. } => exception.short_class_name().to_string(),
        Error::RetriesExhausted { last, .. } | Error::OutcomeUnknown { last, .. } => {
            retry_cause(last)
        }
        Error::MutationsFailed { failures, .. } => failures
            .first()
            .map_or_else(|| "mutations failed".to_string(), |f| retry_cause(&f.error)),
        Error::Connect { .. } => "connect failed".to_string(),
        Error::RecentlyFailed { .. } => "server failed recently".to_string(),
        Error::Connection { .. } => "connection failed".to_string(),
        Error::ConnectionClosed { .. } => "connection closed".to_string(),
        Error::Timeout { .. } => "timeout".to_string(),
        Error::ZooKeeper { .. } => "ZooKeeper".to_string(),
        Error::RegionOffline { .. } => "region offline".to_string(),
        Error::TableNotFound(_) => "table not found".to_string(),
        Error::TableDisabled(_) => "table disabled".to_string(),
        Error::Protocol(_) => "protocol error".to_string(),
        Error::InvalidInput(_) => "invalid input".to_string(),
        Error::ProcedureFailed { .. } => "procedure failed".to_string(),
        Error::MutatorClosed { .. } => "mutator closed".to_string(),
        Error::ScanAborted { .. } => "scan aborted".to_string(),
        Error::Authentication { .. } => "authentication".to_string(),
        Error::Tls { .. } => "TLS".to_string(),
        Error::Bootstrap { .. } => "bootstrap".to_string(),
    }
}

impl Stats {
    /// Counts one retried failure under its cause.
    pub(crate) fn retried(&self, e: &Error) {
        let mut causes = self.retry_causes.lock().unwrap_or_else(|e| e.into_inner());
        *causes.entry(retry_cause(e)).or_default() += 1;
    }

    /// The counters of `server` (`host:port`, as advertised, before address mapping).
    pub(crate) fn server(&self, server: &str) -> Arc<ServerCounters> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = servers.get(server) {
            return c.clone();
        }
        servers.entry(server.to_string()).or_default().clone()
    }

    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        StatsSnapshot {
            servers: servers
                .iter()
                .map(|(name, c)| ServerStats {
                    server: name.clone(),
                    calls: c.calls.load(Relaxed),
                    multi_calls: c.multi_calls.load(Relaxed),
                    errors: c.errors.load(Relaxed),
                    retries: c.retries.load(Relaxed),
                    relocations: c.relocations.load(Relaxed),
                    bytes_sent: c.bytes_sent.load(Relaxed),
                    bytes_received: c.bytes_received.load(Relaxed),
                    connects: c.connects.load(Relaxed),
                    failed_connects: c.failed_connects.load(Relaxed),
                    read_timeouts: c.read_timeouts.load(Relaxed),
                    abandoned_unsent: c.abandoned_unsent.load(Relaxed),
                })
                .collect(),
            meta_cache_hits: self.meta_cache_hits.load(Relaxed),
            meta_cache_misses: self.meta_cache_misses.load(Relaxed),
            meta_lookups: self.meta_lookups.load(Relaxed),
            retries_by_cause: self
                .retry_causes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }
}

/// Counters of one server since the client was created.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerStats {
    /// `host:port` as the server advertises itself.
    pub server: String,
    /// RPCs sent (all methods), counted as each request is queued to be written.
    pub calls: u64,
    /// `Multi` RPCs sent (batches and buffered flushes), counted as each request is queued to
    /// be written.
    pub multi_calls: u64,
    /// Calls that failed after their request was queued to be sent: answered with an
    /// exception, timed out, or lost with their connection (either of the last two, when none
    /// of the call's bytes was written, counted in `abandoned_unsent` too). Not counted: calls refused
    /// before their request was queued (no place under the in-flight cap in time, the
    /// connection already closed, a request too large for a frame or that failed to
    /// compress), calls whose caller dropped them, and failed actions inside a Multi that was
    /// answered.
    pub errors: u64,
    /// Attempts on this server that failed with a retryable error (each is followed by a retry
    /// unless the retry budget or the operation timeout ran out).
    pub retries: u64,
    /// Times a region of this server was found moved, split or closed and looked up again.
    pub relocations: u64,
    /// Request bytes written.
    pub bytes_sent: u64,
    /// Response bytes read.
    pub bytes_received: u64,
    /// Connection attempts (one attempt serves every caller waiting for it).
    pub connects: u64,
    /// Connection attempts that failed (refused, unreachable, no handshake in time).
    pub failed_connects: u64,
    /// Connections closed because nothing was read for the read timeout while calls were
    /// outstanding.
    pub read_timeouts: u64,
    /// Calls given up (timed out, dropped, or lost with their connection) before any of their
    /// bytes was written, and so never sent.
    pub abandoned_unsent: u64,
}

/// A point-in-time copy of the client's counters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatsSnapshot {
    /// Per server, sorted by address.
    pub servers: Vec<ServerStats>,
    /// Region lookups answered by the cache.
    pub meta_cache_hits: u64,
    /// Region lookups that missed the cache.
    pub meta_cache_misses: u64,
    /// Scans of `hbase:meta` run to fill the cache.
    pub meta_lookups: u64,
    /// Retried failures (the per-server `retries`, summed) by cause: the short class name of
    /// the exception a server raised (`NotServingRegionException`, `RegionMovedException`,
    /// ...), or what failed in the client (`connect failed`, `server failed recently`,
    /// `connection failed`, `connection closed`, `timeout`, `region offline`, `ZooKeeper`, ...).
    pub retries_by_cause: BTreeMap<String, u64>,
}

impl StatsSnapshot {
    /// The counters of one server, if it was used.
    pub fn server(&self, server: &str) -> Option<&ServerStats> {
        self.servers.iter().find(|s| s.server == server)
    }

    /// Connections made again to a server after its first (summed over servers): each
    /// follows a connection lost to a crash, a timeout or an idle close.
    pub fn reconnects(&self) -> u64 {
        self.servers
            .iter()
            .map(|s| s.connects.saturating_sub(1))
            .sum()
    }

    /// Sum of a counter over all servers.
    pub fn total(&self, counter: impl Fn(&ServerStats) -> u64) -> u64 {
        self.servers.iter().map(counter).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RemoteException;

    #[test]
    fn retries_are_counted_by_cause() {
        let stats = Stats::default();
        let nsre = Error::Remote {
            server: "h:1".into(),
            exception: RemoteException::from_name_and_message(
                "org.apache.hadoop.hbase.NotServingRegionException".into(),
                "region r is not online".into(),
            ),
        };
        stats.retried(&nsre);
        stats.retried(&Error::RetriesExhausted {
            attempts: 3,
            last: Box::new(nsre.duplicate()),
        });
        stats.retried(&Error::ConnectionClosed {
            addr: "h:1".into(),
            reason: "eof".into(),
        });
        let snap = stats.snapshot();
        let causes: Vec<(&str, u64)> = snap
            .retries_by_cause
            .iter()
            .map(|(c, n)| (c.as_str(), *n))
            .collect();
        assert_eq!(
            causes,
            [("NotServingRegionException", 2), ("connection closed", 1)]
        );
    }

    #[test]
    fn reconnects_count_connections_after_the_first() {
        let snap = StatsSnapshot {
            servers: vec![
                ServerStats {
                    connects: 3,
                    ..ServerStats::default()
                },
                ServerStats {
                    connects: 1,
                    ..ServerStats::default()
                },
                ServerStats::default(),
            ],
            ..StatsSnapshot::default()
        };
        assert_eq!(snap.reconnects(), 2);
    }
}
