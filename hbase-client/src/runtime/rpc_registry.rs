//! The RPC connection registry: bootstrap without ZooKeeper. The client asks the servers of
//! `hbase.client.bootstrap.servers` (or `hbase.masters`) through `ClientMetaService` for the
//! cluster id, the active master and the location of `hbase:meta`. Masters serve it since
//! HBase 2.3, region servers too since 2.5; HBase 3.0 uses it by default.
//!
//! Each question goes to the servers in turn, the one that answered last first, until one
//! answers: connecting to each is bounded by the connect timeout, its answer by the RPC
//! timeout, and the whole question by the operation timeout. A server that just refused a
//! connection is skipped at once (the pool's failed-server memory). When none answers, the
//! error ([`Error::Bootstrap`]) says what each did. After an answer (and then every five
//! minutes), the answering server is asked for the cluster's current bootstrap nodes
//! (`GetBootstrapNodes`, HBase 2.5+), which are tried after the configured servers, so a client
//! outlives the servers it was configured with.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use prost::Message;

use crate::error::{Error, Result};
use crate::region::ServerName;
use crate::rpc::frame::{RequestMeta, Service};
use crate::runtime::config::ClientConfig;
use crate::runtime::pool::ConnectionPool;
use crate::runtime::registry::{Answer, ConnectionRegistry};
use std::sync::Arc;

/// How long an answer waits for the refresh of the bootstrap nodes that follows it. A refresh
/// that takes longer is given up until the next refresh interval
/// ([`ClientConfig::bootstrap_refresh_interval`]); the list stays as it was.
const REFRESH_WAIT: Duration = Duration::from_secs(1);

pub(crate) struct RpcRegistry {
    /// The configured servers, always tried first, in their order.
    configured: Vec<ServerName>,
    /// The configured servers, then the bootstrap nodes the cluster named.
    servers: Mutex<Vec<ServerName>>,
    /// The server that answered last: asked first.
    preferred: Mutex<Option<ServerName>>,
    refreshed_at: Mutex<Option<Instant>>,
    /// How often the bootstrap nodes are asked for again.
    refresh_interval: Duration,
    pool: Arc<ConnectionPool>,
    connect_timeout: Duration,
    rpc_timeout: Duration,
    operation_timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `host:port` as a server name without a start code (the config builder checked the form).
fn parse_address(addr: &str) -> Option<ServerName> {
    let (host, port) = addr.trim().rsplit_once(':')?;
    Some(ServerName {
        host: host.to_string(),
        port: port.parse().ok()?,
        start_code: 0,
    })
}

impl RpcRegistry {
    pub(crate) fn new(config: &ClientConfig, pool: Arc<ConnectionPool>) -> Self {
        let configured: Vec<ServerName> = config
            .bootstrap_servers
            .iter()
            .filter_map(|s| parse_address(s))
            .collect();
        RpcRegistry {
            servers: Mutex::new(configured.clone()),
            configured,
            preferred: Mutex::new(None),
            refreshed_at: Mutex::new(None),
            refresh_interval: config.bootstrap_refresh_interval,
            pool,
            connect_timeout: config.connect_timeout,
            rpc_timeout: config.rpc_timeout,
            operation_timeout: config.operation_timeout,
        }
    }

    /// The servers to try, in order: the one that answered last, then the rest as listed.
    fn candidates(&self) -> Vec<ServerName> {
        let mut servers = lock(&self.servers).clone();
        if let Some(p) = lock(&self.preferred).as_ref() {
            if let Some(i) = servers.iter().position(|s| s.address() == p.address()) {
                let first = servers.remove(i);
                servers.insert(0, first);
            }
        }
        servers
    }

    /// One call of `method` on `server`, within `deadline`.
    async fn ask_one<Req: Message, Resp: Message + Default>(
        &self,
        server: &ServerName,
        method: &'static str,
        req: &Req,
        deadline: Instant,
    ) -> Result<Resp> {
        let connect_by = deadline.min(Instant::now() + self.connect_timeout);
        let conn = self
            .pool
            .get(server, Service::ClientMeta, connect_by)
            .await?;
        let timeout = self
            .rpc_timeout
            .min(deadline.saturating_duration_since(Instant::now()))
            .max(Duration::from_millis(1));
        let meta = RequestMeta {
            method,
            timeout_ms: timeout.as_millis().min(u32::MAX as u128) as u32,
            priority: 0,
        };
        conn.call(meta, req, None, std::time::Instant::now(), timeout)
            .await
            .map_err(|failed| failed.error)?
            .decode()
    }

    /// Asks the servers in turn until one gives an answer `accept` takes.
    async fn ask<Req, Resp, T>(
        &self,
        method: &'static str,
        req: Req,
        accept: impl Fn(Resp) -> Result<T> + Send,
    ) -> Result<T>
    where
        Req: Message + Sync,
        Resp: Message + Default,
    {
        let deadline = Instant::now() + self.operation_timeout;
        let candidates = self.candidates();
        let mut failures = Vec::with_capacity(candidates.len());
        for server in &candidates {
            if Instant::now() >= deadline {
                failures.push(format!(
                    "{}: not tried, the operation timeout ({:?}) passed",
                    server.address(),
                    self.operation_timeout
                ));
                continue;
            }
            let answer = self
                .ask_one::<Req, Resp>(server, method, &req, deadline)
                .await
                .and_then(&accept);
            match answer {
                Ok(value) => {
                    *lock(&self.preferred) = Some(server.clone());
                    self.refresh_if_due(server, deadline).await;
                    return Ok(value);
                }
                Err(e) => {
                    tracing::debug!(server = %server.address(), method, error = %e, "bootstrap server did not answer");
                    failures.push(format!("{}: {e}", server.address()));
                }
            }
        }
        Err(Error::Bootstrap {
            servers: candidates.iter().map(ServerName::address).collect(),
            what: method.to_string(),
            message: failures.join("; "),
        })
    }

    /// Learns the cluster's bootstrap nodes from `server` (which just answered), at most every
    /// refresh interval. Servers that do not know the call (HBase before 2.5) leave the
    /// list as configured.
    async fn refresh_if_due(&self, server: &ServerName, deadline: Instant) {
        {
            let mut at = lock(&self.refreshed_at);
            if at.is_some_and(|t| t.elapsed() < self.refresh_interval) {
                return;
            }
            *at = Some(Instant::now());
        }
        let req = hbase_proto::GetBootstrapNodesRequest {};
        // The caller's answer is in hand and waits for this: a server slow to answer it
        // delays the answer by at most REFRESH_WAIT, not the operation timeout.
        let deadline = deadline.min(Instant::now() + REFRESH_WAIT);
        match self
            .ask_one::<_, hbase_proto::GetBootstrapNodesResponse>(
                server,
                "GetBootstrapNodes",
                &req,
                deadline,
            )
            .await
        {
            Ok(resp) => {
                let mut servers = self.configured.clone();
                for node in resp.server_name.iter().map(ServerName::from_proto) {
                    if !servers.iter().any(|s| s.address() == node.address()) {
                        servers.push(node);
                    }
                }
                tracing::debug!(servers = servers.len(), "bootstrap servers refreshed");
                *lock(&self.servers) = servers;
            }
            Err(e) => {
                tracing::debug!(server = %server.address(), error = %e, "no bootstrap nodes (HBase before 2.5?)");
            }
        }
    }
}

/// The default replica's server among meta's locations.
fn default_replica(resp: hbase_proto::GetMetaRegionLocationsResponse) -> Result<ServerName> {
    resp.meta_locations
        .iter()
        .filter(|l| l.region_info.replica_id.unwrap_or(0) == 0)
        .find_map(|l| l.server_name.as_ref().map(ServerName::from_proto))
        .ok_or_else(|| Error::RegionOffline {
            region: "hbase:meta (the server knows no location of it yet)".into(),
        })
}

impl ConnectionRegistry for RpcRegistry {
    fn meta_server(&self) -> Answer<'_, ServerName> {
        Box::pin(self.ask(
            "GetMetaRegionLocations",
            hbase_proto::GetMetaRegionLocationsRequest {},
            default_replica,
        ))
    }

    fn master(&self) -> Answer<'_, ServerName> {
        Box::pin(self.ask(
            "GetActiveMaster",
            hbase_proto::GetActiveMasterRequest {},
            |resp: hbase_proto::GetActiveMasterResponse| {
                resp.server_name
                    .as_ref()
                    .map(ServerName::from_proto)
                    .ok_or_else(|| Error::Protocol("the server knows no active master".into()))
            },
        ))
    }

    fn cluster_id(&self) -> Answer<'_, String> {
        Box::pin(self.ask(
            "GetClusterId",
            hbase_proto::GetClusterIdRequest {},
            |resp: hbase_proto::GetClusterIdResponse| {
                resp.cluster_id
                    .filter(|id| !id.is_empty())
                    .ok_or_else(|| Error::Protocol("the server knows no cluster id".into()))
            },
        ))
    }

    fn region_servers(&self) -> Option<Answer<'_, Vec<ServerName>>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn location(replica: Option<i32>, server: Option<&str>) -> hbase_proto::RegionLocation {
        hbase_proto::RegionLocation {
            region_info: hbase_proto::RegionInfo {
                replica_id: replica,
                ..Default::default()
            },
            server_name: server.map(|h| hbase_proto::ServerName {
                host_name: h.into(),
                port: Some(16020),
                start_code: Some(7),
            }),
            seq_num: 0,
        }
    }

    #[test]
    fn meta_is_the_default_replica_with_a_server() {
        let resp = hbase_proto::GetMetaRegionLocationsResponse {
            meta_locations: vec![
                location(Some(1), Some("replica1")),
                location(None, None),
                location(Some(0), Some("rs2")),
            ],
        };
        let s = default_replica(resp).unwrap();
        assert_eq!((s.host.as_str(), s.port, s.start_code), ("rs2", 16020, 7));
        let none = hbase_proto::GetMetaRegionLocationsResponse {
            meta_locations: vec![location(Some(1), Some("replica1"))],
        };
        assert!(matches!(
            default_replica(none),
            Err(Error::RegionOffline { .. })
        ));
    }

    #[test]
    fn addresses_become_server_names() {
        let s = parse_address(" m1.example:16000").unwrap();
        assert_eq!((s.host.as_str(), s.port), ("m1.example", 16000));
        assert!(parse_address("m1").is_none());
        assert!(parse_address("m1:x").is_none());
    }
}
