//! The shared runtime below the operations: configuration, the connection registry (ZooKeeper
//! or RPC bootstrap), the region cache and meta lookup, the connection pool, statistics, the retry policy and the one
//! retrying caller. Operations (`table`, `multi`, `scanner`, `mutator`, `admin`) import from
//! here; nothing here imports an operation.

pub(crate) mod caller;
pub(crate) mod config;
pub(crate) mod locator;
pub(crate) mod pool;
pub(crate) mod region_cache;
pub(crate) mod region_map;
pub(crate) mod registry;
pub(crate) mod retry;
pub(crate) mod rpc_registry;
#[cfg(test)]
pub(crate) mod silent_server;
pub(crate) mod stats;
pub(crate) mod zk;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::region::{ServerName, TableName};
use crate::rpc::secure::Security;
use caller::{CallOptions, Idempotency, Operation, Target};
use config::ClientConfig;
use locator::MetaLocator;
use pool::ConnectionPool;
use registry::ConnectionRegistry;
use stats::Stats;

/// Everything one client's operations share. Cheap to reach through an `Arc`.
pub(crate) struct Runtime {
    pub(crate) config: Arc<ClientConfig>,
    /// ZooKeeper or the RPC connection registry, as configured.
    pub(crate) registry: Arc<dyn ConnectionRegistry>,
    pub(crate) pool: Arc<ConnectionPool>,
    pub(crate) locator: MetaLocator,
    /// Timeouts, priority and retry policy of operations that set none of their own.
    pub(crate) defaults: CallOptions,
    /// This client's nonce group: with a nonce per operation, it lets a region server
    /// recognise a retried increment, append or check-and-mutate (as the Java client's
    /// per-client random group does).
    pub(crate) nonce_group: u64,
    /// The active master, as the registry last said.
    master: Mutex<Option<ServerName>>,
}

impl Runtime {
    /// Logs in to Kerberos and reads the TLS files (when configured), then opens the registry
    /// (a ZooKeeper session, or nothing until the first call to a bootstrap server) and asks
    /// it where `hbase:meta` is.
    pub(crate) async fn start(config: ClientConfig) -> Result<Arc<Runtime>> {
        let config = Arc::new(config);
        let security = Security::new(config.kerberos.as_ref(), config.tls.as_ref()).await?;
        let pool = Arc::new(ConnectionPool::new(
            config.clone(),
            Arc::new(Stats::default()),
            Arc::new(security),
        ));
        let registry = registry::open(&config, &pool);
        registry.meta_server().await?;
        let locator = MetaLocator::new(config.clone(), registry.clone(), pool.clone());
        Ok(Arc::new(Runtime {
            defaults: CallOptions::from_config(&config),
            config,
            registry,
            pool,
            locator,
            nonce_group: new_nonce(),
            master: Mutex::new(None),
        }))
    }

    pub(crate) fn stats(&self) -> &Stats {
        self.pool.stats()
    }

    /// The active master: cached, else asked of the registry, giving up at `deadline` (the
    /// registry's own bound is the client's operation timeout, for ZooKeeper as for the RPC
    /// registry, which may be longer than a short operation's).
    pub(crate) async fn master(&self, deadline: Instant) -> Result<ServerName> {
        if let Some(m) = self.lock_master().clone() {
            return Ok(m);
        }
        let asked = Instant::now();
        let m = match tokio::time::timeout_at(deadline.into(), self.registry.master()).await {
            Ok(m) => m?,
            Err(_) => {
                return Err(Error::Timeout {
                    what: "finding the active master (the registry did not answer)".into(),
                    after: deadline.saturating_duration_since(asked),
                })
            }
        };
        *self.lock_master() = Some(m.clone());
        Ok(m)
    }

    /// Forgets the master's location (it failed or moved): the next call asks the registry.
    pub(crate) fn forget_master(&self) {
        *self.lock_master() = None;
    }

    fn lock_master(&self) -> std::sync::MutexGuard<'_, Option<ServerName>> {
        self.master.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live region servers: from the registry when it knows them (ZooKeeper's `/hbase/rs`),
    /// else the master's cluster status (its live servers), sorted by address.
    pub(crate) async fn region_servers(&self) -> Result<Vec<ServerName>> {
        if let Some(listed) = self.registry.region_servers() {
            return listed.await;
        }
        let op = Operation::new(self, &self.defaults, Idempotency::Read);
        let req = hbase_proto::GetClusterStatusRequest {
            options: vec![hbase_proto::ClusterStatusOption::LiveServers as i32],
        };
        let status = op
            .retry(|| async {
                let ep = op.resolve(Target::Master).await?;
                let resp: hbase_proto::GetClusterStatusResponse = op
                    .call(&ep, "GetClusterStatus", &req, None)
                    .await?
                    .decode()?;
                Ok(resp.cluster_status)
            })
            .await?;
        let mut servers: Vec<ServerName> = status
            .live_servers
            .iter()
            .map(|l| ServerName::from_proto(&l.server))
            .collect();
        servers.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
        Ok(servers)
    }

    /// True when the master says `table` is disabled; false when it is enabled or the master
    /// cannot say by `deadline`. The retrying caller asks at most once per operation.
    pub(crate) async fn table_disabled(&self, table: &TableName, deadline: Instant) -> bool {
        let op = Operation::new(self, &self.defaults, Idempotency::Read).until(deadline);
        let req = hbase_proto::GetTableStateRequest {
            table_name: table.to_proto(),
        };
        let state = op
            .retry(|| async {
                let ep = op.resolve(Target::Master).await?;
                let resp: hbase_proto::GetTableStateResponse =
                    op.call(&ep, "GetTableState", &req, None).await?.decode()?;
                Ok(resp.table_state.state())
            })
            .await;
        matches!(state, Ok(hbase_proto::table_state::State::Disabled))
    }
}

/// A random non-zero nonce (zero is HBase's "no nonce").
pub(crate) fn new_nonce() -> u64 {
    loop {
        let n: u64 = rand::random();
        if n != 0 {
            return n;
        }
    }
}
