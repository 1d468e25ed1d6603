//! Counters the client keeps per server and for the meta cache, read with
//! [`Client::stats`](crate::Client::stats).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

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
}

impl Stats {
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
        }
    }
}

/// Counters of one server since the client was created.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerStats {
    /// `host:port` as the server advertises itself.
    pub server: String,
    /// RPCs sent (all methods).
    pub calls: u64,
    /// `Multi` RPCs sent (batches and buffered flushes).
    pub multi_calls: u64,
    /// RPCs or actions that failed.
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
    /// Calls given up (timed out or dropped) before any of their bytes was written, and so
    /// never sent.
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
}

impl StatsSnapshot {
    /// The counters of one server, if it was used.
    pub fn server(&self, server: &str) -> Option<&ServerStats> {
        self.servers.iter().find(|s| s.server == server)
    }

    /// Sum of a counter over all servers.
    pub fn total(&self, counter: impl Fn(&ServerStats) -> u64) -> u64 {
        self.servers.iter().map(counter).sum()
    }
}
