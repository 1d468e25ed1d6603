//! One connection per (server, service), shared by every task, reconnected on demand.
//!
//! Per server and service the pool keeps a slot that outlives its connections: the in-flight
//! cap (a replacement connection inherits the permits its predecessor's calls still hold),
//! the one connect attempt in progress (every caller that needs the connection waits for that
//! attempt, each until its own deadline), and the memory of a failed attempt: for the
//! failed-server expiry (Java's `hbase.ipc.client.failed.servers.expiry`, 2 s) callers fail at
//! once with [`Error::RecentlyFailed`] instead of connecting again, so they relocate.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use rustc_hash::FxHashMap;
use tokio::sync::{watch, Semaphore};

use crate::error::exceptions::{self, Retry};
use crate::error::{Error, Result};
use crate::region::ServerName;
use crate::rpc::connection::{ConnectionParams, RpcConnection};
use crate::rpc::frame::Service;
use crate::rpc::secure::Security;
use crate::runtime::config::ClientConfig;
use crate::runtime::stats::{ServerCounters, Stats};

/// The outcome of a connect attempt, as its waiters see it.
type Attempt = Option<std::result::Result<Arc<RpcConnection>, Arc<Error>>>;

#[derive(Default)]
struct SlotState {
    current: Option<Arc<RpcConnection>>,
    /// The connect attempt in progress.
    connecting: Option<watch::Receiver<Attempt>>,
    /// The last attempt failed: until when to refuse, and why.
    failed: Option<(Instant, Arc<Error>)>,
}

struct Slot {
    state: Mutex<SlotState>,
    /// Calls in flight to this server (`ClientConfig::max_in_flight_per_server`).
    in_flight: Arc<Semaphore>,
}

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open(&self) -> Option<Arc<RpcConnection>> {
        self.lock()
            .current
            .as_ref()
            .filter(|c| c.is_open())
            .cloned()
    }
}

/// The slots of one host, by port and service (a short list; looked up without building an
/// address string, which would cost more than the rest of the lookup).
type HostSlots = Vec<(u16, Service, Arc<Slot>)>;

/// The slot of `server` and `service` among the pool's, if it has one.
fn find_slot<'a>(
    slots: &'a FxHashMap<String, HostSlots>,
    server: &ServerName,
    service: Service,
) -> Option<&'a Arc<Slot>> {
    let (.., slot) = slots
        .get(server.host.as_str())?
        .iter()
        .find(|(port, s, _)| *port == server.port && *s == service)?;
    Some(slot)
}

pub(crate) struct ConnectionPool {
    config: Arc<ClientConfig>,
    stats: Arc<Stats>,
    /// The client's TLS settings and Kerberos identity, for every connection.
    security: Arc<Security>,
    /// FxHash: host names come from the cluster's own metadata, a few per cluster; SipHash's
    /// defence against chosen keys is not needed for them and cost about 180 instructions per
    /// call (one lookup per call, `benches/instructions`).
    slots: Mutex<FxHashMap<String, HostSlots>>,
}

impl ConnectionPool {
    pub(crate) fn new(
        config: Arc<ClientConfig>,
        stats: Arc<Stats>,
        security: Arc<Security>,
    ) -> Self {
        ConnectionPool {
            config,
            stats,
            security,
            slots: Mutex::new(FxHashMap::default()),
        }
    }

    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    pub(crate) fn security(&self) -> &Security {
        &self.security
    }

    fn slot(&self, server: &ServerName, service: Service) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = find_slot(&slots, server, service) {
            return slot.clone();
        }
        let slot = Arc::new(Slot {
            state: Mutex::default(),
            in_flight: Arc::new(Semaphore::new(self.config.max_in_flight_per_server)),
        });
        slots
            .entry(server.host.clone())
            .or_default()
            .push((server.port, service, slot.clone()));
        slot
    }

    /// The open connection to `server` for `service`, if there is one. Not async: a caller
    /// that finds its connection here builds no connect-and-wait future.
    ///
    /// The slot is read under the pool's lock, not cloned out of it (a reference count up and
    /// down per call). Lock order: the pool's, then a slot's; nothing takes them the other way.
    /// A slot's lock is held only briefly (by `get` while it starts a connect attempt, by an
    /// attempt as it stores its outcome), and so is the pool's here. A server without a slot
    /// has no open connection: `get` makes the slot.
    pub(crate) fn open(&self, server: &ServerName, service: Service) -> Option<Arc<RpcConnection>> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        find_slot(&slots, server, service)?.open()
    }

    /// The open connection to `server` for `service`, connecting if there is none; gives up
    /// at `deadline`.
    pub(crate) async fn get(
        &self,
        server: &ServerName,
        service: Service,
        deadline: Instant,
    ) -> Result<Arc<RpcConnection>> {
        let slot = self.slot(server, service);
        // Whether this caller already replaced an abandoned attempt: a second one abandoned
        // too (its runtime is shutting down) ends the wait rather than spinning.
        let mut replaced = false;
        loop {
            let mut attempt = {
                let mut st = slot.lock();
                if let Some(conn) = st.current.as_ref().filter(|c| c.is_open()) {
                    return Ok(conn.clone());
                }
                // An attempt whose task was dropped before it ended (its runtime shut down)
                // has no sender left: it is not waited for, another is started.
                let live = st
                    .connecting
                    .as_ref()
                    .filter(|rx| rx.has_changed().is_ok())
                    .cloned();
                match (live, &st.failed) {
                    (Some(rx), _) => rx,
                    (None, Some((until, error))) if Instant::now() < *until => {
                        // A failure no retry can cure (refused credentials) is repeated as it
                        // is, so that callers stop; others make callers relocate.
                        if exceptions::verdict(error).retry == Retry::No {
                            return Err(error.duplicate());
                        }
                        return Err(Error::RecentlyFailed {
                            addr: server.address(),
                            reason: error.to_string(),
                        });
                    }
                    _ => {
                        let (tx, rx) = watch::channel(None);
                        st.connecting = Some(rx.clone());
                        tokio::spawn(self.connect(slot.clone(), server, service, tx));
                        rx
                    }
                }
            };
            let waited =
                tokio::time::timeout_at(deadline.into(), attempt.wait_for(Option::is_some)).await;
            return match waited {
                Ok(Ok(outcome)) => match outcome.as_ref().expect("waited for an outcome") {
                    Ok(conn) => Ok(conn.clone()),
                    Err(e) => Err(e.duplicate()),
                },
                // The attempt's task was dropped while this caller waited: look again (and
                // start another attempt), within the same deadline, once.
                Ok(Err(_)) if !replaced => {
                    replaced = true;
                    continue;
                }
                Ok(Err(_)) => Err(Error::ConnectionClosed {
                    addr: server.address(),
                    reason: "the connect attempt was abandoned (its runtime shut down)".into(),
                }),
                Err(_) => Err(Error::Timeout {
                    what: format!("waiting for a connection to {}", server.address()),
                    after: self.config.connect_timeout,
                }),
            };
        }
    }

    /// One connect attempt, for every waiter; bounded by the connect timeout.
    fn connect(
        &self,
        slot: Arc<Slot>,
        server: &ServerName,
        service: Service,
        outcome: watch::Sender<Attempt>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let counters = self.stats.server(&server.address());
        let params = ConnectionParams {
            addr: self.config.map_address(&server.address()),
            host: server.host.clone(),
            security: self.security.clone(),
            user: self.config.user.clone(),
            service,
            connect_timeout: self.config.connect_timeout,
            read_timeout: self.config.read_timeout(),
            counters: counters.clone(),
            compression: self.config.compression,
            in_flight: slot.in_flight.clone(),
        };
        let expiry = self.config.failed_server_expiry;
        async move {
            ServerCounters::add(&counters.connects, 1);
            let result = RpcConnection::connect(params).await.map(Arc::new);
            let mut st = slot.lock();
            st.connecting = None;
            let shared = match result {
                Ok(conn) => {
                    st.current = Some(conn.clone());
                    st.failed = None;
                    Ok(conn)
                }
                Err(e) => {
                    ServerCounters::add(&counters.failed_connects, 1);
                    tracing::debug!(error = %e, "connect failed");
                    let e = Arc::new(e);
                    st.failed = Some((Instant::now() + expiry, e.clone()));
                    Err(e)
                }
            };
            drop(st);
            let _ = outcome.send(Some(shared));
        }
    }

    /// Number of open connections (for tests and stats).
    pub(crate) fn open_connections(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .flat_map(|host| host.iter().map(|(.., slot)| slot.clone()))
            .collect();
        slots.iter().filter(|s| s.open().is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A connect attempt whose task is dropped before it ends (its runtime shut down) is not
    /// waited for again: the next caller starts another. Before, the slot kept the dead
    /// attempt and every later call failed at once with "the connect attempt was abandoned".
    #[test]
    fn a_connect_attempt_dropped_unfinished_is_replaced() {
        // A server that says nothing is enough for the preamble and the connection header,
        // which get no answer.
        let port = crate::runtime::silent_server::silent_listener();
        let server = ServerName {
            host: "127.0.0.1".into(),
            port,
            start_code: 1,
        };
        let config = Arc::new(ClientConfig::builder("127.0.0.1:1").build().unwrap());
        let build = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        let security = build().block_on(Security::new(None, None)).unwrap();
        let pool = Arc::new(ConnectionPool::new(
            config,
            Arc::new(Stats::default()),
            Arc::new(security),
        ));
        // Runtime A: the first caller starts the attempt (its task is spawned, not run) and
        // gives up; then the runtime, with the attempt's task, is dropped.
        let first = build();
        first.block_on(async {
            let get = pool.get(
                &server,
                Service::Client,
                Instant::now() + Duration::from_secs(5),
            );
            // Polled once: the attempt's task is spawned and never runs.
            assert!(futures_util::FutureExt::now_or_never(get).is_none());
        });
        drop(first);
        let conn = build().block_on(pool.get(
            &server,
            Service::Client,
            Instant::now() + Duration::from_secs(5),
        ));
        assert!(conn.is_ok(), "{:?}", conn.err());
    }
}
