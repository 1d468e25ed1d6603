//! `Client`: the entry point. Starts the shared runtime (ZooKeeper registry, connection pool,
//! region cache, retrying caller) and hands out `Table`, `BufferedMutator` and `Admin`
//! handles on it.

use std::sync::Arc;

use crate::admin::Admin;
use crate::error::Result;
use crate::mutator::{BufferedMutator, Dispatchers, MutatorConfig, WriteBudget};
use crate::region::TableName;
use crate::runtime::config::ClientConfig;
use crate::runtime::stats::StatsSnapshot;
use crate::runtime::Runtime;
use crate::security::SecurityStatus;
use crate::table::{Table, TableBuilder};

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
    rt: Arc<Runtime>,
    /// The memory bound all BufferedMutators of this client share.
    write_budget: Arc<WriteBudget>,
    /// The dispatchers its BufferedMutators share, one per table (see [`BufferedMutator`]).
    dispatchers: Arc<Dispatchers>,
}

impl Client {
    /// Connects to the cluster: logs in to Kerberos and reads the TLS files when configured,
    /// opens a ZooKeeper session and reads where `hbase:meta` is. Fails within the connect
    /// timeout if ZooKeeper is unreachable, and with
    /// [`ErrorKind::Authentication`](crate::ErrorKind) if the Kerberos login fails.
    ///
    /// On a secured cluster ZooKeeper is read anonymously: HBase leaves the znodes a client
    /// needs (`meta-region-server`, `master`) world-readable under its SASL ACLs.
    pub async fn connect(config: ClientConfig) -> Result<Client> {
        let write_budget = Arc::new(WriteBudget::new(config.write_buffer_limit));
        Ok(Client {
            rt: Runtime::start(config).await?,
            write_budget,
            dispatchers: Arc::default(),
        })
    }

    /// A handle to table `name` (`ns:qualifier` or `qualifier`), with the client's timeouts.
    /// Nothing is checked until the first operation, which reports a missing table as
    /// [`ErrorKind::NotFound`](crate::ErrorKind).
    pub fn table(&self, name: &str) -> Result<Table> {
        Ok(self.table_builder(name)?.build())
    }

    /// A builder for a handle to table `name` with its own timeouts, retries and priority.
    pub fn table_builder(&self, name: &str) -> Result<TableBuilder> {
        Ok(TableBuilder::new(self.rt.clone(), TableName::parse(name)?))
    }

    /// A write buffer for table `name`. See [`BufferedMutator`].
    pub fn buffered_mutator(&self, name: &str, config: MutatorConfig) -> Result<BufferedMutator> {
        Ok(BufferedMutator::new(
            &self.rt,
            self.write_budget.clone(),
            &self.dispatchers,
            TableName::parse(name)?,
            config,
        ))
    }

    /// Table administration.
    pub fn admin(&self) -> Admin {
        Admin::new(self.rt.clone())
    }

    /// The configuration in use.
    pub fn config(&self) -> &ClientConfig {
        &self.rt.config
    }

    /// Counters per server (calls, Multi calls, errors, retries, relocations, bytes,
    /// connects) and of the meta cache.
    pub fn stats(&self) -> StatsSnapshot {
        self.rt.stats().snapshot()
    }

    /// What the client's security has done: the Kerberos principal and ticket expiry, logins
    /// and renewals, completed SASL exchanges per protection level, TLS handshakes, refusals.
    pub fn security(&self) -> SecurityStatus {
        self.rt.pool.security().status()
    }

    /// Number of open server connections.
    pub fn open_connections(&self) -> usize {
        self.rt.pool.open_connections()
    }
}
