//! The ZooKeeper registry: where `hbase:meta` and the active master are, the cluster id and
//! the live region servers, read from HBase's znodes under `zookeeper.znode.parent`.

use std::time::Duration;

use prost::Message;

use crate::error::{Error, Result};
use crate::region::ServerName;
use crate::runtime::config::ClientConfig;
use crate::runtime::registry::{Answer, ConnectionRegistry};
use crate::znode;

/// A ZooKeeper session used only to read HBase's bootstrap znodes.
pub(crate) struct ZkRegistry {
    quorum: String,
    parent: String,
    session_timeout: Duration,
    connect_timeout: Duration,
    client: tokio::sync::Mutex<Option<zookeeper_client::Client>>,
}

impl ZkRegistry {
    pub(crate) fn new(config: &ClientConfig) -> Self {
        ZkRegistry {
            quorum: config.zk_quorum.clone(),
            parent: config.znode_parent.trim_end_matches('/').to_string(),
            session_timeout: config.zk_session_timeout,
            connect_timeout: config.connect_timeout,
            client: tokio::sync::Mutex::new(None),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::ZooKeeper {
            quorum: self.quorum.clone(),
            message: message.into(),
        }
    }

    /// Connects (or reconnects) the session; bounded by the connect timeout.
    pub(crate) async fn ensure_connected(&self) -> Result<zookeeper_client::Client> {
        let mut guard = self.client.lock().await;
        if let Some(client) = guard.as_ref() {
            if !client.state().is_terminated() {
                return Ok(client.clone());
            }
        }
        let connect = zookeeper_client::Client::connector()
            .with_session_timeout(self.session_timeout)
            .connect(&self.quorum);
        let client = match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(self.error(format!("cannot connect: {e}"))),
            Err(_) => {
                return Err(Error::Timeout {
                    what: format!("connecting to ZooKeeper {}", self.quorum),
                    after: self.connect_timeout,
                })
            }
        };
        *guard = Some(client.clone());
        Ok(client)
    }

    async fn read(&self, node: &str) -> Result<Vec<u8>> {
        let path = format!("{}/{}", self.parent, node);
        let client = self.ensure_connected().await?;
        match tokio::time::timeout(self.connect_timeout, client.get_data(&path)).await {
            Ok(Ok((data, _stat))) => Ok(data),
            Ok(Err(zookeeper_client::Error::NoNode)) => Err(self.error(format!(
                "znode {path} does not exist: is HBase running, and is the znode parent right?"
            ))),
            Ok(Err(e)) => {
                // Drop the session so the next read reconnects.
                *self.client.lock().await = None;
                Err(self.error(format!("reading {path}: {e}")))
            }
            Err(_) => Err(Error::Timeout {
                what: format!("reading ZooKeeper znode {path}"),
                after: self.connect_timeout,
            }),
        }
    }

    /// The region server hosting `hbase:meta`.
    pub(crate) async fn meta_server(&self) -> Result<ServerName> {
        let data = self.read("meta-region-server").await?;
        parse_meta_region_server(&data)
    }

    /// The live region servers: the children of `/hbase/rs`, each `host,port,startcode`.
    pub(crate) async fn region_servers(&self) -> Result<Vec<ServerName>> {
        let path = format!("{}/rs", self.parent);
        let client = self.ensure_connected().await?;
        match tokio::time::timeout(self.connect_timeout, client.list_children(&path)).await {
            Ok(Ok(children)) => {
                let mut servers: Vec<ServerName> = children
                    .iter()
                    .filter_map(|c| ServerName::parse_comma_form(c))
                    .collect();
                servers.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
                Ok(servers)
            }
            Ok(Err(e)) => {
                *self.client.lock().await = None;
                Err(self.error(format!("listing {path}: {e}")))
            }
            Err(_) => Err(Error::Timeout {
                what: format!("listing ZooKeeper znode {path}"),
                after: self.connect_timeout,
            }),
        }
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
