//! The connection registry: where a client learns the cluster's id, its active master and the
//! server of `hbase:meta`. Two implementations behind one trait, chosen by
//! [`ClientConfig::registry`](crate::ClientConfig::registry) (`hbase.client.registry.impl`):
//! ZooKeeper's znodes (`zk.rs`, HBase 2.x's default) and the RPC connection registry
//! (`rpc_registry.rs`: `ClientMetaService` on the bootstrap servers, HBase 3.0's default), which
//! opens no ZooKeeper session at all.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::error::Result;
use crate::region::ServerName;
use crate::runtime::config::{ClientConfig, Registry};
use crate::runtime::pool::ConnectionPool;
use crate::runtime::rpc_registry::RpcRegistry;
use crate::runtime::zk::ZkRegistry;

/// A registry answer, boxed so that the registry can sit behind `dyn`.
pub(crate) type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// What a client asks its registry. Every call is bounded by the client's operation timeout,
/// counted from the call (no hangs; a ZooKeeper session being reconnected is waited for only
/// so long), and fails with a typed error; callers cache the answers and ask again after a
/// failure.
pub(crate) trait ConnectionRegistry: Send + Sync {
    /// The region server hosting `hbase:meta` (its default replica).
    fn meta_server(&self) -> Answer<'_, ServerName>;
    /// The active master.
    fn master(&self) -> Answer<'_, ServerName>;
    /// The cluster id (the UUID HBase keeps in `hbase.id`).
    fn cluster_id(&self) -> Answer<'_, String>;
    /// The live region servers, when this registry knows them itself (ZooKeeper's `/hbase/rs`);
    /// `None`: ask the master.
    fn region_servers(&self) -> Option<Answer<'_, Vec<ServerName>>>;
}

/// The registry `config` names; the RPC registry calls through `pool`.
pub(crate) fn open(
    config: &Arc<ClientConfig>,
    pool: &Arc<ConnectionPool>,
) -> Arc<dyn ConnectionRegistry> {
    match config.registry {
        Registry::ZooKeeper => Arc::new(ZkRegistry::new(config)),
        Registry::Rpc => Arc::new(RpcRegistry::new(config, pool.clone())),
    }
}
