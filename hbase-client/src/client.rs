//! `Client`: the entry point. Holds the ZooKeeper registry, the connection pool and the region
//! cache that every table and admin handle share.

use std::sync::Arc;
use std::time::Duration;

use crate::admin::Admin;
use crate::config::ClientConfig;
use crate::error::{Error, Result};
use crate::mutator::{BufferedMutator, MutatorConfig, WriteBudget};
use crate::region::{Location, MetaLocator, RegionLocation, ServerName, TableName};
use crate::retry::{recovery, HBaseBackoff, Recovery, RetryPolicy};
use crate::rpc::connection::RpcConnection;
use crate::rpc::frame::Service;
use crate::rpc::pool::ConnectionPool;
use crate::stats::ServerCounters;
use crate::stats::{Stats, StatsSnapshot};
use crate::table::Table;
use crate::zk::ZkRegistry;

pub(crate) struct ClientInner {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) zk: Arc<ZkRegistry>,
    pub(crate) pool: Arc<ConnectionPool>,
    pub(crate) locator: MetaLocator,
    pub(crate) retry_policy: Box<dyn RetryPolicy>,
    /// The memory bound all BufferedMutators of this client share.
    pub(crate) write_budget: WriteBudget,
}

impl ClientInner {
    /// After a failed call to `server` on `conn` for the regions `locs`: drops the cached state
    /// the error shows to be stale (the regions, or everything on the server and its
    /// connection), installs a RegionMoved destination, and counts the retry it causes. The
    /// single-row loop, batches and scanners all recover through here.
    pub(crate) fn forget_stale<'a>(
        &self,
        server: &ServerName,
        conn: &Arc<RpcConnection>,
        locs: impl IntoIterator<Item = &'a Location>,
        e: &Error,
    ) {
        let rec = recovery(e);
        let counters = self.pool.stats().server(&server.address());
        if rec != Recovery::Fail {
            ServerCounters::add(&counters.retries, 1);
        }
        let cache = self.locator.cache();
        match rec {
            Recovery::Relocate => {
                for loc in locs {
                    ServerCounters::add(&counters.relocations, 1);
                    cache.invalidate(loc);
                    self.install_moved(loc, e);
                }
            }
            Recovery::DropServer => {
                cache.invalidate_server(server);
                self.pool.discard(server, Service::Client, conn);
            }
            Recovery::Backoff | Recovery::Fail => {}
        }
    }

    /// For a RegionMovedException, caches the region at its new server right away.
    fn install_moved(&self, loc: &Location, e: &Error) {
        let moved_to = e.remote().and_then(|r| r.moved_to.as_deref());
        if let Some((host, port)) = moved_to.and_then(|m| m.rsplit_once(':')) {
            if let Ok(port) = port.parse() {
                let server = ServerName {
                    host: host.to_string(),
                    port,
                    start_code: 0,
                };
                let region = loc.region.clone();
                self.locator
                    .cache()
                    .insert(Arc::new(RegionLocation { region, server }));
            }
        }
    }
}

/// A connection to one HBase cluster. Cheap to clone; clones share everything.
///
/// ```no_run
/// # async fn demo() -> hbase_client::Result<()> {
/// use hbase_client::{Client, ClientConfig, Get, Put};
/// let client = Client::connect(ClientConfig::builder("127.0.0.1:2181").build()?).await?;
/// let table = client.table("t")?;
/// table.put(Put::new("row1").add("cf", "q", "value")).await?;
/// let row = table.get(Get::new("row1")).await?.expect("row exists");
/// assert_eq!(&row.value(b"cf", b"q").unwrap()[..], b"value");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

impl Client {
    /// Connects to the cluster: opens a ZooKeeper session and reads where `hbase:meta` is.
    /// Fails within the connect timeout if ZooKeeper is unreachable.
    pub async fn connect(config: ClientConfig) -> Result<Client> {
        let config = Arc::new(config);
        let zk = Arc::new(ZkRegistry::new(&config));
        zk.meta_server().await?;
        let stats = Arc::new(Stats::default());
        let pool = Arc::new(ConnectionPool::new(config.clone(), stats));
        let locator = MetaLocator::new(config.clone(), zk.clone(), pool.clone());
        let write_budget = WriteBudget::new(config.write_buffer_limit);
        let retry_policy = Box::new(HBaseBackoff {
            pause: config.pause,
            pause_overloaded: config.pause.max(Duration::from_millis(500)),
            retries: config.retries,
        });
        Ok(Client {
            inner: Arc::new(ClientInner {
                config,
                zk,
                pool,
                locator,
                retry_policy,
                write_budget,
            }),
        })
    }

    /// A handle to table `name` (`ns:qualifier` or `qualifier`). Nothing is checked until the
    /// first operation, which reports a missing table as [`ErrorKind::NotFound`](crate::ErrorKind).
    pub fn table(&self, name: &str) -> Result<Table> {
        Ok(Table::new(self.inner.clone(), TableName::parse(name)?))
    }

    /// A write buffer for table `name`. See [`BufferedMutator`].
    pub fn buffered_mutator(&self, name: &str, config: MutatorConfig) -> Result<BufferedMutator> {
        Ok(BufferedMutator::new(
            self.inner.clone(),
            TableName::parse(name)?,
            config,
        ))
    }

    /// Table administration.
    pub fn admin(&self) -> Admin {
        Admin::new(self.inner.clone())
    }

    /// The configuration in use.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// Counters per server (calls, Multi calls, errors, retries, relocations, bytes) and of the
    /// meta cache.
    pub fn stats(&self) -> StatsSnapshot {
        self.inner.pool.stats().snapshot()
    }

    /// Number of open server connections.
    pub fn open_connections(&self) -> usize {
        self.inner.pool.open_connections()
    }
}
