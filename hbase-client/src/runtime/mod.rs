//! The shared runtime below the operations: configuration, ZooKeeper bootstrap, the region
//! cache and meta lookup, the connection pool, statistics and the retry policy.

pub(crate) mod config;
pub(crate) mod locator;
pub(crate) mod pool;
pub(crate) mod region_cache;
pub(crate) mod retry;
pub(crate) mod stats;
pub(crate) mod zk;
