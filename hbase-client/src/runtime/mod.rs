//! The shared runtime below the operations: configuration, ZooKeeper bootstrap, the region
//! cache and meta lookup, the connection pool, statistics, the retry policy and the one
//! retrying caller. Operations (`table`, `multi`, `scanner`, `mutator`, `admin`) import from
//! here; nothing here imports an operation.

pub(crate) mod caller;
pub(crate) mod config;
pub(crate) mod locator;
pub(crate) mod pool;
pub(crate) mod region_cache;
pub(crate) mod retry;
pub(crate) mod stats;
pub(crate) mod zk;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::error::Result;
use crate::region::{ServerName, TableName};
use caller::{CallOptions, Idempotency, Operation, Target};
use config::ClientConfig;
use locator::MetaLocator;
use pool::ConnectionPool;
use stats::Stats;
use zk::ZkRegistry;

/// Everything one client's operations share. Cheap to reach through an `Arc`.
pub(crate) struct Runtime {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) zk: Arc<ZkRegistry>,
    pub(crate) pool: Arc<ConnectionPool>,
    pub(crate) locator: MetaLocator,
    /// Timeouts, priority and retry policy of operations that set none of their own.
    pub(crate) defaults: CallOptions,
    /// This client's nonce group: with a nonce per operation, it lets a region server
    /// recognise a retried increment, append or check-and-mutate (as the Java client's
    /// per-client random group does).
    pub(crate) nonce_group: u64,
    /// The active master, as ZooKeeper last said.
    master: Mutex<Option<ServerName>>,
}

impl Runtime {
    /// Opens the ZooKeeper session and reads where `hbase:meta` is.
    pub(crate) async fn start(config: ClientConfig) -> Result<Arc<Runtime>> {
        let config = Arc::new(config);
        let zk = Arc::new(ZkRegistry::new(&config));
        zk.meta_server().await?;
        let pool = Arc::new(ConnectionPool::new(
            config.clone(),
            Arc::new(Stats::default()),
        ));
        let locator = MetaLocator::new(config.clone(), zk.clone(), pool.clone());
        Ok(Arc::new(Runtime {
            defaults: CallOptions::from_config(&config),
            config,
            zk,
            pool,
            locator,
            nonce_group: new_nonce(),
            master: Mutex::new(None),
        }))
    }

    pub(crate) fn stats(&self) -> &Stats {
        self.pool.stats()
    }

    /// The active master: cached, else read from ZooKeeper.
    pub(crate) async fn master(&self) -> Result<ServerName> {
        if let Some(m) = self.lock_master().clone() {
            return Ok(m);
        }
        let m = self.zk.master().await?;
        *self.lock_master() = Some(m.clone());
        Ok(m)
    }

    /// Forgets the master's location (it failed or moved): the next call reads ZooKeeper.
    pub(crate) fn forget_master(&self) {
        *self.lock_master() = None;
    }

    fn lock_master(&self) -> std::sync::MutexGuard<'_, Option<ServerName>> {
        self.master.lock().unwrap_or_else(|e| e.into_inner())
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
