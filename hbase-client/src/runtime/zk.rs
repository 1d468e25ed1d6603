//! The ZooKeeper registry: where `hbase:meta` and the active master are, the cluster id and
//! the live region servers, read from HBase's znodes under `zookeeper.znode.parent`.
//!
//! One session at a time, connected single-flight: a caller that needs a session when there is
//! none (or the one there has ended) starts one connect attempt, in a task of its own, bounded
//! by the connect timeout; every caller that needs a session meanwhile waits for that same
//! attempt, each only until its own deadline (the operation timeout, counted from its call).
//! So while ZooKeeper is unreachable, any number of callers cost one attempt at a time, and
//! none waits longer than its own deadline: it fails with [`Error::Timeout`] and leaves the
//! attempt running for the others and for the next caller.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prost::Message;
use tokio::sync::watch;
use zookeeper_client::Client as ZkClient;

use crate::error::{Error, Result};
use crate::region::ServerName;
use crate::runtime::config::ClientConfig;
use crate::runtime::registry::{Answer, ConnectionRegistry};
use crate::znode;

/// The end of a connect attempt, as every caller waiting for it reads it.
type Outcome = std::result::Result<ZkClient, Arc<Error>>;

/// The session, as the registry's callers share it.
enum Slot {
    /// No session, and no attempt under way.
    Idle,
    /// A session (it may have ended since: the next caller finds out and replaces it).
    Open(ZkClient),
    /// An attempt under way, which its callers wait for.
    Connecting(Attempt),
}

/// A connect attempt under way.
struct Attempt {
    /// Which attempt (its task replaces the slot only while the slot still holds it).
    id: u64,
    /// `None` until the attempt ends.
    done: watch::Receiver<Option<Outcome>>,
    task: tokio::task::AbortHandle,
}

/// A ZooKeeper session used only to read HBase's bootstrap znodes.
pub(crate) struct ZkRegistry {
    quorum: String,
    parent: String,
    session_timeout: Duration,
    connect_timeout: Duration,
    /// Every call's own bound, from its start: the client's operation timeout.
    operation_timeout: Duration,
    session: Arc<Mutex<Slot>>,
    attempts: AtomicU64,
}

impl Drop for ZkRegistry {
    fn drop(&mut self) {
        if let Slot::Connecting(a) = &*lock(&self.session) {
            a.task.abort();
        }
    }
}

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

impl ZkRegistry {
    pub(crate) fn new(config: &ClientConfig) -> Self {
        ZkRegistry {
            quorum: config.zk_quorum.clone(),
            parent: config.znode_parent.trim_end_matches('/').to_string(),
            session_timeout: config.zk_session_timeout,
            connect_timeout: config.connect_timeout,
            operation_timeout: config.operation_timeout,
            session: Arc::new(Mutex::new(Slot::Idle)),
            attempts: AtomicU64::new(0),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::ZooKeeper {
            quorum: self.quorum.clone(),
            message: message.into(),
        }
    }

    /// The deadline of a call starting now.
    fn deadline(&self) -> Instant {
        Instant::now() + self.operation_timeout
    }

    /// The session: the open one, else the attempt under way, else a new attempt; waited for
    /// until `deadline` at most.
    async fn session(&self, deadline: Instant) -> Result<ZkClient> {
        let mut done = {
            let mut slot = lock(&self.session);
            match &*slot {
                Slot::Open(client) if !client.state().is_terminated() => return Ok(client.clone()),
                // An attempt whose task ended without settling the slot was dropped with its
                // runtime (a client used from several runtimes): waiting for it would fail every
                // later caller, so it is replaced like a dead session. (One on a runtime that
                // lives on but is never driven again is waited for to each caller's deadline,
                // as the session itself, whose I/O runs where it was connected.)
                Slot::Connecting(attempt) if !attempt.task.is_finished() => attempt.done.clone(),
                Slot::Open(_) | Slot::Idle | Slot::Connecting(_) => {
                    let attempt = self.start_attempt();
                    let done = attempt.done.clone();
                    *slot = Slot::Connecting(attempt);
                    done
                }
            }
        };
        let waited = Instant::now();
        let outcome = tokio::time::timeout_at(deadline.into(), async {
            match done.wait_for(Option::is_some).await {
                Ok(outcome) => match &*outcome {
                    Some(Ok(client)) => Ok(client.clone()),
                    Some(Err(e)) => Err(e.duplicate()),
                    None => Err(self.error("a connect attempt ended without an outcome")),
                },
                // Its task ended without an outcome: cancelled with its runtime, or panicked
                // (the next caller starts another attempt).
                Err(_) => Err(self.error("the connect attempt was abandoned")),
            }
        })
        .await;
        outcome.unwrap_or_else(|_| {
            Err(Error::Timeout {
                what: format!("waiting for a ZooKeeper session to {}", self.quorum),
                after: deadline.saturating_duration_since(waited),
            })
        })
    }

    /// Starts a connect attempt in a task of its own, so that it goes on when the caller
    /// that started it gives up; it leaves its outcome in the slot and tells its waiters.
    fn start_attempt(&self) -> Attempt {
        let id = self.attempts.fetch_add(1, Ordering::Relaxed);
        let (tell, done) = watch::channel(None);
        let slot = Arc::downgrade(&self.session);
        let quorum = self.quorum.clone();
        let (session_timeout, connect_timeout) = (self.session_timeout, self.connect_timeout);
        tracing::debug!(%quorum, attempt = id, "connecting to ZooKeeper");
        let task = tokio::spawn(async move {
            let connect = ZkClient::connector()
                .with_session_timeout(session_timeout)
                .connect(&quorum);
            let outcome: Outcome = match tokio::time::timeout(connect_timeout, connect).await {
                Ok(Ok(client)) => Ok(client),
                Ok(Err(e)) => Err(Arc::new(Error::ZooKeeper {
                    quorum: quorum.clone(),
                    message: format!("cannot connect: {e}"),
                })),
                Err(_) => Err(Arc::new(Error::Timeout {
                    what: format!("connecting to ZooKeeper {quorum}"),
                    after: connect_timeout,
                })),
            };
            if let Err(e) = &outcome {
                tracing::debug!(%quorum, attempt = id, error = %e, "ZooKeeper connect failed");
            }
            // The slot first, so that a waiter woken below finds it settled.
            if let Some(slot) = slot.upgrade() {
                let mut slot = lock(&slot);
                if matches!(&*slot, Slot::Connecting(a) if a.id == id) {
                    *slot = match &outcome {
                        Ok(client) => Slot::Open(client.clone()),
                        Err(_) => Slot::Idle,
                    };
                }
            }
            tell.send_replace(Some(outcome));
        });
        Attempt {
            id,
            done,
            task: task.abort_handle(),
        }
    }

    /// Forgets `client`'s session if it is still the one in use: the next caller starts
    /// another.
    fn forget(&self, client: &ZkClient) {
        let mut slot = lock(&self.session);
        if matches!(&*slot, Slot::Open(c) if c.session_id() == client.session_id()) {
            *slot = Slot::Idle;
        }
    }

    /// Runs `request` on the session, for one caller: by `deadline`, each request also within
    /// the connect timeout. A request the session fails forgets the session; when it failed
    /// because the session ended (expired or closed), the request is tried once more on a new
    /// session.
    async fn ask<T, F, Fut>(&self, what: &str, request: F) -> Result<T>
    where
        F: Fn(ZkClient) -> Fut,
        Fut: Future<Output = std::result::Result<T, zookeeper_client::Error>>,
    {
        let deadline = self.deadline();
        let mut retried = false;
        loop {
            let client = self.session(deadline).await?;
            let bound = self
                .connect_timeout
                .min(deadline.saturating_duration_since(Instant::now()));
            match tokio::time::timeout(bound, request(client.clone())).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(zookeeper_client::Error::NoNode)) => {
                    return Err(self.error(format!(
                        "{what}: no such znode: is HBase running, and is the znode parent right?"
                    )))
                }
                Ok(Err(e)) => {
                    self.forget(&client);
                    if !retried && client.state().is_terminated() {
                        retried = true;
                        continue;
                    }
                    return Err(self.error(format!("{what}: {e}")));
                }
                Err(_) => {
                    return Err(Error::Timeout {
                        what: format!("{what} on ZooKeeper {}", self.quorum),
                        after: bound,
                    })
                }
            }
        }
    }

    async fn read(&self, node: &str) -> Result<Vec<u8>> {
        let path = format!("{}/{}", self.parent, node);
        let what = format!("reading znode {path}");
        self.ask(&what, |client| {
            let path = path.clone();
            async move { client.get_data(&path).await.map(|(data, _stat)| data) }
        })
        .await
    }

    /// The region server hosting `hbase:meta`.
    pub(crate) async fn meta_server(&self) -> Result<ServerName> {
        let data = self.read("meta-region-server").await?;
        parse_meta_region_server(&data)
    }

    /// The live region servers: the children of `/hbase/rs`, each `host,port,startcode`.
    pub(crate) async fn region_servers(&self) -> Result<Vec<ServerName>> {
        let path = format!("{}/rs", self.parent);
        let what = format!("listing znode {path}");
        let children = self
            .ask(&what, |client| {
                let path = path.clone();
                async move { client.list_children(&path).await }
            })
            .await?;
        let mut servers: Vec<ServerName> = children
            .iter()
            .filter_map(|c| ServerName::parse_comma_form(c))
            .collect();
        servers.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
        Ok(servers)
    }

    /// The active master.
    pub(crate) async fn master(&self) -> Result<ServerName> {
        let data = self.read("master").await?;
        let payload = znode::protobuf_payload(&data)?;
        let master = hbase_proto::Master::decode(payload)
            .map_err(|e| Error::Protocol(format!("master znode: {e}")))?;
        Ok(ServerName::from_proto(&master.master))
    }

    /// The cluster id: the `hbaseid` znode.
    pub(crate) async fn cluster_id(&self) -> Result<String> {
        let data = self.read("hbaseid").await?;
        let payload = znode::protobuf_payload(&data)?;
        let id = hbase_proto::ClusterId::decode(payload)
            .map_err(|e| Error::Protocol(format!("hbaseid znode: {e}")))?;
        Ok(id.cluster_id)
    }
}

impl ConnectionRegistry for ZkRegistry {
    fn meta_server(&self) -> Answer<'_, ServerName> {
        Box::pin(ZkRegistry::meta_server(self))
    }

    fn master(&self) -> Answer<'_, ServerName> {
        Box::pin(ZkRegistry::master(self))
    }

    fn cluster_id(&self) -> Answer<'_, String> {
        Box::pin(ZkRegistry::cluster_id(self))
    }

    fn region_servers(&self) -> Option<Answer<'_, Vec<ServerName>>> {
        Some(Box::pin(ZkRegistry::region_servers(self)))
    }
}

/// Decodes the `meta-region-server` znode.
pub(crate) fn parse_meta_region_server(data: &[u8]) -> Result<ServerName> {
    let payload = znode::protobuf_payload(data)?;
    let meta = hbase_proto::MetaRegionServer::decode(payload)
        .map_err(|e| Error::Protocol(format!("meta-region-server znode: {e}")))?;
    Ok(ServerName::from_proto(&meta.server))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connect attempt whose task was dropped unfinished (its runtime shut down) is not
    /// waited for again: the next caller starts another. Without that, the slot kept the dead
    /// attempt and every later call failed at once with "the connect attempt was abandoned".
    #[test]
    fn a_connect_attempt_dropped_unfinished_is_replaced() {
        // A "ZooKeeper" that accepts and says nothing: every attempt waits.
        let port = crate::runtime::silent_server::silent_listener();
        let config = ClientConfig::builder(format!("127.0.0.1:{port}"))
            .operation_timeout(Duration::from_millis(300))
            .build()
            .unwrap();
        let registry = ZkRegistry::new(&config);
        let build = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        // Runtime A: the first caller starts the attempt (its task spawned, never run), gives
        // up, and the runtime goes with the task.
        let first = build();
        first.block_on(async {
            let call = registry.master();
            assert!(futures_util::FutureExt::now_or_never(call).is_none());
        });
        drop(first);
        assert_eq!(registry.attempts.load(Ordering::Relaxed), 1);
        let err = build().block_on(registry.master()).unwrap_err();
        assert_eq!(registry.attempts.load(Ordering::Relaxed), 2, "{err}");
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
    }
}
