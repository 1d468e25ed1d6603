//! Client configuration, built with [`ClientConfig::builder`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::rpc::CellBlockCompression;
use crate::runtime::retry::{HBaseBackoff, RetryPolicy};
use crate::security::{Kerberos, Tls};

/// Rewrites a server address (`host:port`) before the client connects to it.
///
/// For clusters behind docker or NAT, whose servers advertise names the client cannot reach, and
/// for tests that route traffic through a proxy.
pub type AddressMapper = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// How a client finds the cluster: its id, active master and `hbase:meta`
/// (`hbase.client.registry.impl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Registry {
    /// HBase's znodes, through a ZooKeeper session on [`ClientConfig::zk_quorum`]
    /// (`ZKConnectionRegistry`, HBase 2.x's default).
    #[default]
    ZooKeeper,
    /// `ClientMetaService` on the [`bootstrap servers`](ClientConfig::bootstrap_servers):
    /// masters (HBase 2.3+) or region servers (2.5+); no ZooKeeper session at all
    /// (`RpcConnectionRegistry`, HBase 3.0's default; `MasterRegistry` on masters).
    Rpc,
}

/// Everything that tunes a [`Client`](crate::Client). Cheap to clone.
#[derive(Clone)]
pub struct ClientConfig {
    pub(crate) zk_quorum: String,
    pub(crate) znode_parent: String,
    pub(crate) user: String,
    pub(crate) connect_timeout: Duration,
    pub(crate) rpc_timeout: Duration,
    pub(crate) operation_timeout: Duration,
    pub(crate) zk_session_timeout: Duration,
    pub(crate) retries: u32,
    pub(crate) pause: Duration,
    pub(crate) pause_server_overloaded: Option<Duration>,
    pub(crate) meta_prefetch: u32,
    pub(crate) meta_lookups_per_table: usize,
    pub(crate) bootstrap_refresh_interval: Duration,
    pub(crate) address_mapper: Option<AddressMapper>,
    pub(crate) compression: CellBlockCompression,
    pub(crate) max_in_flight_per_server: usize,
    pub(crate) read_timeout: Option<Duration>,
    pub(crate) failed_server_expiry: Duration,
    pub(crate) retry_policy: Option<Arc<dyn RetryPolicy>>,
    pub(crate) write_buffer_size: usize,
    pub(crate) write_buffer_limit: usize,
    pub(crate) write_buffer_periodic_flush: Option<Duration>,
    pub(crate) write_buffer_max_mutations: Option<usize>,
    pub(crate) max_tasks_per_server: usize,
    pub(crate) max_tasks_per_region: usize,
    pub(crate) max_request_size: usize,
    pub(crate) max_request_rows: usize,
    pub(crate) scanner_caching: u32,
    pub(crate) scanner_max_result_size: u64,
    pub(crate) keyvalue_max_size: usize,
    pub(crate) bootstrap_servers: Vec<String>,
    pub(crate) kerberos: Option<Kerberos>,
    pub(crate) tls: Option<Tls>,
    pub(crate) registry: Registry,
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("zk_quorum", &self.zk_quorum)
            .field("znode_parent", &self.znode_parent)
            .field("user", &self.user)
            .field("connect_timeout", &self.connect_timeout)
            .field("rpc_timeout", &self.rpc_timeout)
            .field("operation_timeout", &self.operation_timeout)
            .field("zk_session_timeout", &self.zk_session_timeout)
            .field("retries", &self.retries)
            .field("pause", &self.pause)
            .field("pause_server_overloaded", &self.pause_server_overloaded())
            .field("meta_prefetch", &self.meta_prefetch)
            .field("meta_lookups_per_table", &self.meta_lookups_per_table)
            .field(
                "bootstrap_refresh_interval",
                &self.bootstrap_refresh_interval,
            )
            .field("address_mapper", &self.address_mapper.is_some())
            .field("compression", &self.compression)
            .field("max_in_flight_per_server", &self.max_in_flight_per_server)
            .field("read_timeout", &self.read_timeout())
            .field("failed_server_expiry", &self.failed_server_expiry)
            .field("retry_policy", &self.retry_policy)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("write_buffer_limit", &self.write_buffer_limit)
            .field(
                "write_buffer_periodic_flush",
                &self.write_buffer_periodic_flush,
            )
            .field(
                "write_buffer_max_mutations",
                &self.write_buffer_max_mutations,
            )
            .field("max_tasks_per_server", &self.max_tasks_per_server)
            .field("max_tasks_per_region", &self.max_tasks_per_region)
            .field("max_request_size", &self.max_request_size)
            .field("max_request_rows", &self.max_request_rows)
            .field("scanner_caching", &self.scanner_caching)
            .field("scanner_max_result_size", &self.scanner_max_result_size)
            .field("keyvalue_max_size", &self.keyvalue_max_size)
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("kerberos", &self.kerberos)
            .field("tls", &self.tls)
            .field("registry", &self.registry)
            .finish()
    }
}

impl ClientConfig {
    /// A builder for a cluster whose ZooKeeper quorum is `zk_quorum`
    /// (`host:port[,host:port…]`).
    pub fn builder(zk_quorum: impl Into<String>) -> ClientConfigBuilder {
        ClientConfigBuilder {
            config: ClientConfig {
                zk_quorum: zk_quorum.into(),
                znode_parent: "/hbase".into(),
                user: std::env::var("USER").unwrap_or_else(|_| "hbase-rust".into()),
                connect_timeout: Duration::from_secs(10),
                rpc_timeout: Duration::from_secs(60),
                operation_timeout: Duration::from_secs(120),
                zk_session_timeout: Duration::from_secs(30),
                retries: 15,
                pause: Duration::from_millis(100),
                pause_server_overloaded: None,
                meta_prefetch: 10,
                meta_lookups_per_table: 8,
                bootstrap_refresh_interval: Duration::from_secs(300),
                address_mapper: None,
                compression: CellBlockCompression::None,
                max_in_flight_per_server: 64,
                read_timeout: None,
                failed_server_expiry: Duration::from_secs(2),
                retry_policy: None,
                write_buffer_size: DEFAULT_WRITE_BUFFER_SIZE,
                write_buffer_limit: DEFAULT_WRITE_BUFFER_LIMIT,
                write_buffer_periodic_flush: None,
                write_buffer_max_mutations: None,
                max_tasks_per_server: 2,
                max_tasks_per_region: 1,
                max_request_size: DEFAULT_MAX_REQUEST_SIZE,
                max_request_rows: DEFAULT_MAX_REQUEST_ROWS,
                scanner_caching: DEFAULT_SCANNER_CACHING,
                scanner_max_result_size: DEFAULT_SCANNER_MAX_RESULT_SIZE,
                keyvalue_max_size: crate::rpc::cellblock::MAX_KEYVALUE_SIZE,
                bootstrap_servers: Vec::new(),
                kerberos: None,
                tls: None,
                registry: Registry::ZooKeeper,
            },
        }
    }

    /// A builder for a cluster reached through the RPC connection registry: no ZooKeeper,
    /// the cluster's masters or (HBase 2.5+) region servers as `host:port`, tried in turn.
    ///
    /// ```
    /// # fn demo() -> hbase_client::Result<()> {
    /// use hbase_client::{ClientConfig, Registry};
    /// let config = ClientConfig::bootstrap_builder(["rs1:16020", "rs2:16020"]).build()?;
    /// assert_eq!(config.registry(), Registry::Rpc);
    /// # Ok(()) }
    /// ```
    pub fn bootstrap_builder<S: Into<String>>(
        servers: impl IntoIterator<Item = S>,
    ) -> ClientConfigBuilder {
        ClientConfig::builder("")
            .registry(Registry::Rpc)
            .bootstrap_servers(servers.into_iter().map(Into::into).collect())
    }

    /// How this client finds the cluster.
    pub fn registry(&self) -> Registry {
        self.registry
    }

    /// Where the registry asks, for messages: `ZooKeeper zk1:2181` or
    /// `bootstrap servers m1:16000,m2:16000`.
    pub fn registry_description(&self) -> String {
        match self.registry {
            Registry::ZooKeeper => format!("ZooKeeper {}", self.zk_quorum),
            Registry::Rpc => format!("bootstrap servers {}", self.bootstrap_servers.join(",")),
        }
    }

    /// Reads `hbase-site.xml` from `dir_or_file` (a directory holding it, or the file itself):
    /// the client properties of [`HbaseSite`](crate::HbaseSite) (ZooKeeper quorum and port,
    /// znode parent, timeouts, retries, pause, write buffer, scanner caching and result size,
    /// KeyValue size limit, cell-block compressor). Unknown properties are ignored; a bad value
    /// is an [`Error::InvalidInput`] naming the property.
    pub fn from_hbase_site(dir_or_file: impl AsRef<std::path::Path>) -> Result<ClientConfig> {
        crate::site::HbaseSite::load(dir_or_file)?
            .to_builder()?
            .build()
    }

    /// The znode parent (`zookeeper.znode.parent`).
    pub fn znode_parent(&self) -> &str {
        &self.znode_parent
    }

    /// Retries after the first attempt.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// Base pause between retries.
    pub fn pause(&self) -> Duration {
        self.pause
    }

    /// Base pause between retries after a server said it is overloaded: the one configured, or
    /// the [`pause`](Self::pause), and never less than it (as Java's
    /// `hbase.client.pause.server.overloaded`).
    pub fn pause_server_overloaded(&self) -> Duration {
        self.pause_server_overloaded
            .unwrap_or(self.pause)
            .max(self.pause)
    }

    /// Limit on establishing one TCP connection.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The ZooKeeper session timeout.
    pub fn zk_session_timeout(&self) -> Duration {
        self.zk_session_timeout
    }

    /// Regions fetched per meta lookup.
    pub fn meta_prefetch(&self) -> u32 {
        self.meta_prefetch
    }

    /// Meta lookups of one table running at once.
    pub fn meta_lookups_per_table(&self) -> usize {
        self.meta_lookups_per_table
    }

    /// Calls in flight at once on one server connection.
    pub fn max_in_flight_per_server(&self) -> usize {
        self.max_in_flight_per_server
    }

    /// How often the RPC registry asks the cluster for its bootstrap nodes again.
    pub fn bootstrap_refresh_interval(&self) -> Duration {
        self.bootstrap_refresh_interval
    }

    /// How long callers fail at once after a failed connect to a server.
    pub fn failed_server_expiry(&self) -> Duration {
        self.failed_server_expiry
    }

    /// Default write buffer of a [`BufferedMutator`](crate::BufferedMutator)
    /// (`hbase.client.write.buffer`).
    pub fn write_buffer_size(&self) -> usize {
        self.write_buffer_size
    }

    /// Bound on the bytes all mutators of one client hold together.
    pub fn write_buffer_limit(&self) -> usize {
        self.write_buffer_limit
    }

    /// How often mutators flush what they buffer, if at all (`None`: only when full).
    pub fn write_buffer_periodic_flush(&self) -> Option<Duration> {
        self.write_buffer_periodic_flush
    }

    /// Mutations a mutator buffers before it flushes, whatever their size (`None`: no count
    /// limit).
    pub fn write_buffer_max_mutations(&self) -> Option<usize> {
        self.write_buffer_max_mutations
    }

    /// Requests (`Multi`s) in flight to one server at once, for one batch, or for all the
    /// mutators of this client writing to one table (they share one dispatcher).
    pub fn max_tasks_per_server(&self) -> usize {
        self.max_tasks_per_server
    }

    /// Requests in flight to one region at once, for one batch, or for all the mutators of
    /// this client writing to one table.
    pub fn max_tasks_per_region(&self) -> usize {
        self.max_tasks_per_region
    }

    /// Bytes of mutations in one `Multi` request, by Java's count
    /// ([`Mutation::heap_size`](crate::Mutation::heap_size)).
    pub fn max_request_size(&self) -> usize {
        self.max_request_size
    }

    /// Actions (rows) in one `Multi` request, at most.
    pub fn max_request_rows(&self) -> usize {
        self.max_request_rows
    }

    /// Rows per scan RPC when a [`Scan`](crate::Scan) does not say.
    pub fn scanner_caching(&self) -> u32 {
        self.scanner_caching
    }

    /// Bytes per scan response when a [`Scan`](crate::Scan) does not say.
    pub fn scanner_max_result_size(&self) -> u64 {
        self.scanner_max_result_size
    }

    /// Largest KeyValue a mutation may carry (`hbase.client.keyvalue.maxsize`).
    pub fn keyvalue_max_size(&self) -> usize {
        self.keyvalue_max_size
    }

    /// The cell-block compression.
    pub fn cellblock_compression(&self) -> CellBlockCompression {
        self.compression
    }

    /// `hbase.client.bootstrap.servers` (or `hbase.masters`): the servers the RPC connection
    /// registry asks.
    pub fn bootstrap_servers(&self) -> &[String] {
        &self.bootstrap_servers
    }

    /// The ZooKeeper quorum string.
    pub fn zk_quorum(&self) -> &str {
        &self.zk_quorum
    }

    /// Timeout of a single RPC.
    pub fn rpc_timeout(&self) -> Duration {
        self.rpc_timeout
    }

    /// Timeout of a whole operation, all retries included.
    pub fn operation_timeout(&self) -> Duration {
        self.operation_timeout
    }

    /// How long a connection may read nothing while calls are outstanding before it is
    /// declared dead (default: twice the RPC timeout).
    pub fn read_timeout(&self) -> Duration {
        self.read_timeout.unwrap_or(self.rpc_timeout * 2)
    }

    /// The retry policy: the configured one, or [`HBaseBackoff`] from the pause and retries.
    pub(crate) fn retry_policy(&self) -> Arc<dyn RetryPolicy> {
        match &self.retry_policy {
            Some(p) => p.clone(),
            None => Arc::new(HBaseBackoff {
                pause: self.pause,
                pause_overloaded: self.pause_server_overloaded(),
                retries: self.retries,
            }),
        }
    }

    pub(crate) fn map_address(&self, addr: &str) -> String {
        match &self.address_mapper {
            Some(map) => map(addr),
            None => addr.to_string(),
        }
    }
}

/// The longest a timeout, pause or flush interval is taken as: ten years, in effect none. A
/// longer one (`Duration::MAX`, say, to turn a timeout off) is read as this, here and in
/// [`TableBuilder`](crate::TableBuilder), [`MutatorConfig`](crate::MutatorConfig) and
/// [`Admin::with_timeout`](crate::Admin::with_timeout), so that the deadlines made from it
/// (now plus a timeout, twice a timeout, a pause's multiple) cannot overflow. (The bootstrap
/// refresh interval, only ever compared with the time elapsed, keeps its value: Java reads it
/// as a `long` of seconds.)
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

/// `d`, at most [`MAX_DURATION`].
pub(crate) fn capped(d: Duration) -> Duration {
    d.min(MAX_DURATION)
}

/// Default [`ClientConfig::write_buffer_size`]: 2 MiB, as HBase's `hbase.client.write.buffer`.
pub const DEFAULT_WRITE_BUFFER_SIZE: usize = 2 * 1024 * 1024;
/// Default [`ClientConfig::write_buffer_limit`]: 256 MiB for all mutators of one client.
pub const DEFAULT_WRITE_BUFFER_LIMIT: usize = 256 * 1024 * 1024;
/// Default [`ClientConfig::max_request_size`]: 4 MiB of mutations per `Multi` request, as
/// HBase's `hbase.client.max.perrequest.heapsize`.
pub const DEFAULT_MAX_REQUEST_SIZE: usize = 4 * 1024 * 1024;
/// Default [`ClientConfig::max_request_rows`]: 2,048 actions per `Multi` request, as HBase's
/// `hbase.client.max.perrequest.rows` (which Java's 2.x `BufferedMutator` applies; its
/// `Table.batch` and the 3.0 client send one `Multi` per server).
pub const DEFAULT_MAX_REQUEST_ROWS: usize = 2048;
// The scanner defaults belong to the request type that falls back on them.
pub use crate::ops::{DEFAULT_SCANNER_CACHING, DEFAULT_SCANNER_MAX_RESULT_SIZE};

/// Builder for [`ClientConfig`]. Every setting has a production default.
#[derive(Debug, Clone)]
pub struct ClientConfigBuilder {
    config: ClientConfig,
}

impl ClientConfigBuilder {
    /// ZooKeeper parent znode of the cluster. Default `/hbase`.
    pub fn znode_parent(mut self, parent: impl Into<String>) -> Self {
        self.config.znode_parent = parent.into();
        self
    }

    /// User name sent in the connection header (SIMPLE auth). Default: `$USER`.
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.config.user = user.into();
        self
    }

    /// Limit on establishing one TCP connection (and on the first ZooKeeper session).
    /// Default 10 s, as Java's `hbase.ipc.client.socket.timeout.connect` (read from
    /// `hbase-site.xml`).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = capped(timeout);
        self
    }

    /// Limit on one RPC, also sent to the server as the call's deadline. Default 60 s.
    pub fn rpc_timeout(mut self, timeout: Duration) -> Self {
        self.config.rpc_timeout = capped(timeout);
        self
    }

    /// Limit on one operation including all its retries. Default 120 s, where the Java client's
    /// `hbase.client.operation.timeout` is 1,200 s (a difference we keep: a caller learns of an
    /// outage within two minutes; Java's 20 minutes outlasts its 15 retries' 128 s of pauses,
    /// so there the retries end first). Set 20 minutes for Java's.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.config.operation_timeout = capped(timeout);
        self
    }

    /// ZooKeeper session timeout. Default 30 s, where the Java client's
    /// `zookeeper.session.timeout` is 90 s (a difference we keep; the session only reads the
    /// registry's znodes). The property is read from `hbase-site.xml`.
    pub fn zk_session_timeout(mut self, timeout: Duration) -> Self {
        self.config.zk_session_timeout = capped(timeout);
        self
    }

    /// Retries after the first attempt. Default 15, as in the Java client. From
    /// `hbase-site.xml`, a negative `hbase.client.retries.number` is 0, as the Java client
    /// makes one attempt for it (it keeps the negative number itself).
    pub fn retries(mut self, retries: u32) -> Self {
        self.config.retries = retries;
        self
    }

    /// Base pause between retries, scaled by HBase's backoff table. Default 100 ms.
    pub fn pause(mut self, pause: Duration) -> Self {
        self.config.pause = capped(pause);
        self
    }

    /// Base pause between retries after a server said it is overloaded (its call queue is full:
    /// `CallQueueTooBigException`, `CallDroppedException`), scaled by the same backoff table.
    /// Default: the [`pause`](Self::pause), as the Java client's
    /// `hbase.client.pause.server.overloaded` (unset in `hbase-default.xml`); a value below the
    /// pause counts as the pause, as there. Set it higher when a server's call queue keeps
    /// filling up.
    pub fn pause_server_overloaded(mut self, pause: Duration) -> Self {
        self.config.pause_server_overloaded = Some(capped(pause));
        self
    }

    /// Regions fetched per meta lookup, so neighbours are cached too. Default 10, as Java's
    /// `hbase.client.locate.prefetch.limit`.
    pub fn meta_prefetch(mut self, regions: u32) -> Self {
        self.config.meta_prefetch = regions.max(1);
        self
    }

    /// Meta lookups of one table that run at once; more wait for a turn (a lookup answers
    /// every caller of its region). Default 8, as Java's
    /// `hbase.client.meta.max.concurrent.locate.per.table`; at least 1 (at most what a tokio
    /// semaphore holds).
    pub fn meta_lookups_per_table(mut self, lookups: usize) -> Self {
        self.config.meta_lookups_per_table = lookups.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        self
    }

    /// How often the RPC connection registry ([`Registry::Rpc`]) asks the server that answered
    /// for the cluster's bootstrap nodes again. Default 300 s, as Java's
    /// `hbase.client.bootstrap.refresh_interval_secs`; at least 1 s.
    pub fn bootstrap_refresh_interval(mut self, interval: Duration) -> Self {
        self.config.bootstrap_refresh_interval = interval.max(Duration::from_secs(1));
        self
    }

    /// Compression of cell blocks (mutations sent, rows received). Default none; snappy
    /// trades client and server CPU for fewer bytes on the network.
    pub fn cellblock_compression(mut self, compression: CellBlockCompression) -> Self {
        self.config.compression = compression;
        self
    }

    /// Calls in flight at once on one server connection; further calls wait in the client, in
    /// order, until one completes (the wait counts against the RPC timeout). Default 64; at
    /// least 1 (at most what a tokio semaphore holds).
    ///
    /// A region server rejects calls beyond its call queue (`CallQueueTooBigException`, by
    /// default 10 × `hbase.regionserver.handler.count`), and the client must then back off
    /// ([`pause_server_overloaded`](Self::pause_server_overloaded)): with thousands of
    /// concurrent tasks, queueing here keeps the server busy
    /// without rejections.
    pub fn max_in_flight_per_server(mut self, calls: usize) -> Self {
        self.config.max_in_flight_per_server = calls.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        self
    }

    /// How long a connection may read nothing at all while calls are outstanding before it is
    /// declared dead and closed (the calls on it fail and are retried elsewhere). Default:
    /// twice the RPC timeout, so that one slow or lost call never costs the connection; a
    /// call that times out fails alone. While a call whose own timeout is longer (a table's
    /// RPC timeout) waits, the connection may be silent for that timeout.
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.config.read_timeout = Some(capped(timeout));
        self
    }

    /// After a failed connect, how long callers fail at once
    /// ([`Error::RecentlyFailed`](crate::Error::RecentlyFailed)) instead of connecting to
    /// that server again, so that they look the region up again. Default 2 s (Java's
    /// `hbase.ipc.client.failed.servers.expiry`).
    pub fn failed_server_expiry(mut self, expiry: Duration) -> Self {
        self.config.failed_server_expiry = capped(expiry);
        self
    }

    /// Decides the pauses between attempts and when to give up (default: [`HBaseBackoff`]
    /// with [`pause`](Self::pause) and [`retries`](Self::retries)). The client never retries
    /// a do-not-retry error, and never waits past the operation timeout, whatever the policy
    /// says.
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.config.retry_policy = Some(Arc::new(policy));
        self
    }

    /// Default write buffer of mutators whose [`MutatorConfig`](crate::MutatorConfig) sets
    /// none. Default 2 MiB.
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.config.write_buffer_size = bytes.max(1);
        self
    }

    /// The most bytes all [`BufferedMutator`](crate::BufferedMutator)s of one client may hold
    /// together, buffered or in flight (default 256 MiB). A mutation that would pass it waits
    /// until acknowledged (or failed) batches release room; idle buffers are flushed so the
    /// wait always ends. Nothing is dropped. A single mutation larger than the limit is let
    /// through when nothing else is held. Failures kept for the next `flush` hold their
    /// mutations and are not counted here (see
    /// [`MutatorConfig::max_failures_kept`](crate::MutatorConfig::max_failures_kept)).
    pub fn write_buffer_limit(mut self, bytes: usize) -> Self {
        self.config.write_buffer_limit = bytes.max(1);
        self
    }

    /// Mutators flush whatever they buffer every `interval` (default: off; only full buffers,
    /// `flush` and `close` send), as HBase's `hbase.client.write.buffer.periodicflush.timeout.ms`.
    /// A [`MutatorConfig`](crate::MutatorConfig) may set its own. That property is read as
    /// milliseconds, as `hbase-default.xml` documents it and Java's blocking `BufferedMutator`
    /// reads it; Java's async client (2.6.4) keeps the same number as nanoseconds, so that
    /// there 250 flushes 250 ns after a mutation is buffered (a difference we keep).
    pub fn write_buffer_periodic_flush(mut self, interval: Option<Duration>) -> Self {
        self.config.write_buffer_periodic_flush = interval.filter(|d| !d.is_zero()).map(capped);
        self
    }

    /// A mutator flushes once it buffers this many mutations, even below its byte size
    /// (default: no count limit), as HBase's `hbase.client.write.buffer.maxmutations`.
    pub fn write_buffer_max_mutations(mut self, mutations: Option<usize>) -> Self {
        self.config.write_buffer_max_mutations = mutations.map(|n| n.max(1));
        self
    }

    /// Requests one batch or mutator keeps in flight to one server at once (default 2, as
    /// HBase's `hbase.client.max.perserver.tasks`). Servers are written to concurrently, so one
    /// slow server does not hold up the others.
    pub fn max_tasks_per_server(mut self, tasks: usize) -> Self {
        self.config.max_tasks_per_server = tasks.max(1);
        self
    }

    /// Requests one batch or mutator keeps in flight to one region at once (default 1, as
    /// HBase's `hbase.client.max.perregion.tasks`).
    pub fn max_tasks_per_region(mut self, tasks: usize) -> Self {
        self.config.max_tasks_per_region = tasks.max(1);
        self
    }

    /// Bytes of mutations in one `Multi` request, counted as Java's client counts them (each
    /// mutation's [`heap_size`](crate::Mutation::heap_size), Java's `heapSize()`); larger
    /// batches and flushes are split into several (default 4 MiB, as HBase's
    /// `hbase.client.max.perrequest.heapsize`; a single larger mutation still goes alone).
    pub fn max_request_size(mut self, bytes: usize) -> Self {
        self.config.max_request_size = bytes.max(1);
        self
    }

    /// Actions (rows: puts, deletes, gets, ...) in one `Multi` request; larger batches are
    /// split into several (default 2,048, as HBase's `hbase.client.max.perrequest.rows`). A
    /// region server logs every request of more than `hbase.rpc.rows.warning.threshold`
    /// (5,000) rows as a large batch, and refuses them when
    /// `hbase.rpc.rows.size.threshold.reject` is true. Applies to buffered mutators (as in
    /// Java's 2.x `BufferedMutator`) and to [`Table::batch`](crate::Table::batch) (where
    /// Java's `Table.batch` sends one request per server, however large).
    pub fn max_request_rows(mut self, rows: usize) -> Self {
        self.config.max_request_rows = rows.max(1);
        self
    }

    /// Rows per scan RPC for scans that set no caching. Default 1000, where the Java client's
    /// `hbase.client.scanner.caching` is `Integer.MAX_VALUE`, leaving the cut to the
    /// [result size](Self::scanner_max_result_size) (a difference we keep: rows of under 2 KiB
    /// take more RPCs here; set `i32::MAX as u32` for Java's).
    pub fn scanner_caching(mut self, rows: u32) -> Self {
        self.config.scanner_caching = rows.max(1);
        self
    }

    /// Bytes per scan response for scans that set no maximum. Default 2 MiB.
    pub fn scanner_max_result_size(mut self, bytes: u64) -> Self {
        self.config.scanner_max_result_size = bytes.max(1);
        self
    }

    /// Largest KeyValue (key + value + 8 bytes of lengths) a mutation may carry; checked before
    /// sending. Default 10 MiB, as HBase's `hbase.client.keyvalue.maxsize`; `usize::MAX` turns
    /// the check off (the server keeps its own limit).
    pub fn keyvalue_max_size(mut self, bytes: usize) -> Self {
        self.config.keyvalue_max_size = bytes;
        self
    }

    /// Servers (`host:port`) of the RPC connection registry (`hbase.client.bootstrap.servers`),
    /// tried in this order. Used only with [`Registry::Rpc`].
    pub fn bootstrap_servers(mut self, servers: Vec<String>) -> Self {
        self.config.bootstrap_servers = servers;
        self
    }

    /// Authenticates with Kerberos (SASL/GSSAPI) instead of SIMPLE, as a cluster with
    /// `hbase.security.authentication=kerberos` requires. See [`Kerberos`].
    pub fn kerberos(mut self, kerberos: Kerberos) -> Self {
        self.config.kerberos = Some(kerberos);
        self
    }

    /// Connects to every server over TLS (HBase 2.6 native RPC TLS). See [`Tls`].
    pub fn tls(mut self, tls: Tls) -> Self {
        self.config.tls = Some(tls);
        self
    }

    /// How the client finds the cluster. Default [`Registry::ZooKeeper`].
    pub fn registry(mut self, registry: Registry) -> Self {
        self.config.registry = registry;
        self
    }

    /// Rewrites every server address before connecting. See [`AddressMapper`].
    pub fn address_mapper(mut self, map: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        self.config.address_mapper = Some(Arc::new(map));
        self
    }

    /// Checks the settings and returns the config.
    pub fn build(self) -> Result<ClientConfig> {
        let c = &self.config;
        match c.registry {
            Registry::ZooKeeper if c.zk_quorum.trim().is_empty() => {
                return Err(Error::InvalidInput("ZooKeeper quorum is empty".into()));
            }
            Registry::Rpc if c.bootstrap_servers.is_empty() => {
                return Err(Error::InvalidInput(
                    "the RPC connection registry needs bootstrap servers (hbase.client.bootstrap.servers or hbase.masters)".into(),
                ));
            }
            _ => {}
        }
        for s in &c.bootstrap_servers {
            let ok = s
                .trim()
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
            if !ok {
                return Err(Error::InvalidInput(format!(
                    "bootstrap server {s:?} is not host:port"
                )));
            }
        }
        for zero in [
            ("connect_timeout", c.connect_timeout),
            ("rpc_timeout", c.rpc_timeout),
            ("operation_timeout", c.operation_timeout),
            ("zk_session_timeout", c.zk_session_timeout),
            ("read_timeout", c.read_timeout.unwrap_or(c.rpc_timeout)),
        ] {
            if zero.1.is_zero() {
                return Err(Error::InvalidInput(format!(
                    "{} must be above zero",
                    zero.0
                )));
            }
        }
        if let Some(kerberos) = &c.kerberos {
            if cfg!(not(feature = "kerberos")) {
                return Err(Error::InvalidInput(
                    "Kerberos is configured but hbase-client was built without its `kerberos` feature".into(),
                ));
            }
            kerberos.validate()?;
        }
        if c.tls.is_some() && cfg!(not(feature = "tls")) {
            return Err(Error::InvalidInput(
                "TLS is configured but hbase-client was built without its `tls` feature".into(),
            ));
        }
        if !c.znode_parent.starts_with('/') {
            return Err(Error::InvalidInput(format!(
                "znode parent {:?} must start with '/'",
                c.znode_parent
            )));
        }
        Ok(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Duration::MAX` (a timeout turned off) is read as `MAX_DURATION` by every timeout, pause
    /// and flush interval, and what the client makes of them (twice the RPC timeout as the
    /// read timeout, a deadline from now) does not overflow. The bootstrap refresh interval, a
    /// Java `long` of seconds only compared with the time elapsed, keeps its value.
    #[test]
    fn durations_are_capped() {
        let max = Duration::MAX;
        let c = ClientConfig::builder("zk1:2181")
            .connect_timeout(max)
            .rpc_timeout(max)
            .operation_timeout(max)
            .zk_session_timeout(max)
            .pause(max)
            .pause_server_overloaded(max)
            .failed_server_expiry(max)
            .write_buffer_periodic_flush(Some(max))
            .build()
            .unwrap();
        for d in [
            c.connect_timeout(),
            c.rpc_timeout(),
            c.operation_timeout(),
            c.zk_session_timeout(),
            c.pause(),
            c.pause_server_overloaded(),
            c.failed_server_expiry(),
            c.write_buffer_periodic_flush().unwrap(),
        ] {
            assert_eq!(d, MAX_DURATION);
        }
        assert_eq!(c.read_timeout(), MAX_DURATION * 2);
        let _ = std::time::Instant::now() + c.read_timeout() + c.operation_timeout();
        let c = ClientConfig::builder("zk1:2181")
            .read_timeout(max)
            .build()
            .unwrap();
        assert_eq!(c.read_timeout(), MAX_DURATION);
        let long = Duration::from_secs(1 << 31);
        let c = ClientConfig::builder("zk1:2181")
            .bootstrap_refresh_interval(long)
            .build()
            .unwrap();
        assert_eq!(c.bootstrap_refresh_interval(), long, "Java's long, kept");
    }

    /// Lookups per table are at least 1 and at most what the per-table semaphore can hold
    /// (tokio's `Semaphore::new` panics above it, at the table's first lookup).
    #[test]
    fn meta_lookups_per_table_fit_a_semaphore() {
        let lookups = |n| {
            ClientConfig::builder("zk1:2181")
                .meta_lookups_per_table(n)
                .build()
                .unwrap()
                .meta_lookups_per_table()
        };
        assert_eq!(lookups(0), 1);
        assert_eq!(lookups(usize::MAX), tokio::sync::Semaphore::MAX_PERMITS);
        let _ = tokio::sync::Semaphore::new(lookups(usize::MAX));
    }

    /// The same for calls in flight per server (the semaphore is made at the server's first
    /// connection: a larger value panicked there).
    #[test]
    fn calls_in_flight_per_server_fit_a_semaphore() {
        let calls = |n| {
            ClientConfig::builder("zk1:2181")
                .max_in_flight_per_server(n)
                .build()
                .unwrap()
                .max_in_flight_per_server()
        };
        assert_eq!(calls(0), 1);
        assert_eq!(calls(usize::MAX), tokio::sync::Semaphore::MAX_PERMITS);
        let _ = tokio::sync::Semaphore::new(calls(usize::MAX));
    }
}
