//! One connection per (server, service), shared by every task, reconnected on demand.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::rpc::connection::RpcConnection;
use crate::rpc::frame::Service;
use crate::config::ClientConfig;
use crate::error::Result;
use crate::region::ServerName;
use crate::stats::Stats;

#[derive(Default)]
struct Slot {
    current: Mutex<Option<Arc<RpcConnection>>>,
    /// Held while connecting, so only one reconnect per server runs at a time.
    connecting: tokio::sync::Mutex<()>,
}

impl Slot {
    fn open(&self) -> Option<Arc<RpcConnection>> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        current.as_ref().filter(|c| c.is_open()).cloned()
    }
}

pub(crate) struct ConnectionPool {
    config: Arc<ClientConfig>,
    stats: Arc<Stats>,
    slots: Mutex<HashMap<(String, Service), Arc<Slot>>>,
}

impl ConnectionPool {
    pub(crate) fn new(config: Arc<ClientConfig>, stats: Arc<Stats>) -> Self {
        ConnectionPool {
            config,
            stats,
            slots: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The open connection to `server` for `service`, connecting if there is none.
    pub(crate) async fn get(
        &self,
        server: &ServerName,
        service: Service,
    ) -> Result<Arc<RpcConnection>> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots
                .entry((server.address(), service))
                .or_default()
                .clone()
        };
        if let Some(conn) = slot.open() {
            return Ok(conn);
        }
        let _connecting = slot.connecting.lock().await;
        if let Some(conn) = slot.open() {
            return Ok(conn);
        }
        let addr = self.config.map_address(&server.address());
        let conn = Arc::new(
            RpcConnection::connect(
                &addr,
                &self.config.user,
                service,
                self.config.connect_timeout,
                self.stats.server(&server.address()),
                self.config.compression,
                self.config.max_in_flight_per_server,
            )
            .await?,
        );
        *slot.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
        Ok(conn)
    }

    /// Drops the connection to `server` if it is the one given (it failed).
    pub(crate) fn discard(&self, server: &ServerName, service: Service, conn: &Arc<RpcConnection>) {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(server.address(), service))
            .cloned();
        if let Some(slot) = slot {
            let mut current = slot.current.lock().unwrap_or_else(|e| e.into_inner());
            if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
                *current = None;
            }
        }
    }

    /// Number of open connections (for tests and stats).
    pub(crate) fn open_connections(&self) -> usize {
        let slots: Vec<_> = self
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        slots.iter().filter(|s| s.open().is_some()).count()
    }
}
