//! `Admin`: table management through the master. Every call that starts a master procedure
//! waits for the procedure to finish.

mod schema;

pub use schema::{ColumnFamily, TableDescriptor};

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;

use crate::client::ClientInner;
use crate::error::{Error, Result};
use crate::region::{RegionInfo, ServerName, TableName};
use crate::retry::{recovery, Recovery};
use crate::rpc::frame::{RequestMeta, Service};

/// Priority of master admin calls (HBase's ADMIN_QOS).
const ADMIN_PRIORITY: u32 = 100;

/// A region of a table and the server it is assigned to (none while in transition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRegion {
    /// The region.
    pub region: RegionInfo,
    /// Its server, if assigned.
    pub server: Option<ServerName>,
}

/// Table administration. Obtained from [`Client::admin`](crate::Client::admin).
#[derive(Clone)]
pub struct Admin {
    inner: Arc<ClientInner>,
}

impl Admin {
    pub(crate) fn new(inner: Arc<ClientInner>) -> Admin {
        Admin { inner }
    }

    /// Creates a table, pre-split at `split_keys` (n keys give n + 1 regions), and waits until
    /// its regions are open.
    pub async fn create_table(&self, desc: &TableDescriptor, split_keys: &[Bytes]) -> Result<()> {
        if desc.families().is_empty() {
            return Err(Error::InvalidInput(format!(
                "table {} needs at least one column family",
                desc.name()
            )));
        }
        let mut keys: Vec<Bytes> = split_keys.to_vec();
        keys.sort();
        keys.dedup();
        if keys.len() != split_keys.len() || keys.iter().any(|k| k.is_empty()) {
            return Err(Error::InvalidInput(
                "split keys must be distinct and non-empty".into(),
            ));
        }
        let req = hbase_proto::CreateTableRequest {
            table_schema: desc.to_proto(),
            split_keys: keys,
            nonce_group: None,
            nonce: None,
        };
        let resp: hbase_proto::CreateTableResponse = self.master_call("CreateTable", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.inner.locator.cache().invalidate_table(desc.name());
        Ok(())
    }

    /// Disables a table and waits until all its regions are closed.
    pub async fn disable_table(&self, table: &TableName) -> Result<()> {
        let req = hbase_proto::DisableTableRequest {
            table_name: table.to_proto(),
            ..Default::default()
        };
        let resp: hbase_proto::DisableTableResponse =
            self.master_call("DisableTable", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.inner.locator.cache().invalidate_table(table);
        Ok(())
    }

    /// Enables a disabled table and waits until its regions are open.
    pub async fn enable_table(&self, table: &TableName) -> Result<()> {
        let req = hbase_proto::EnableTableRequest {
            table_name: table.to_proto(),
            ..Default::default()
        };
        let resp: hbase_proto::EnableTableResponse = self.master_call("EnableTable", &req).await?;
        self.wait_procedure(resp.proc_id).await
    }

    /// Deletes a disabled table and waits until it is gone.
    pub async fn delete_table(&self, table: &TableName) -> Result<()> {
        let req = hbase_proto::DeleteTableRequest {
            table_name: table.to_proto(),
            ..Default::default()
        };
        let resp: hbase_proto::DeleteTableResponse = self.master_call("DeleteTable", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.inner.locator.cache().invalidate_table(table);
        Ok(())
    }

    /// True when the table exists.
    pub async fn table_exists(&self, table: &TableName) -> Result<bool> {
        let req = hbase_proto::GetTableStateRequest {
            table_name: table.to_proto(),
        };
        match self
            .master_call::<_, hbase_proto::GetTableStateResponse>("GetTableState", &req)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == crate::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// True when the table exists and is enabled.
    pub async fn is_table_enabled(&self, table: &TableName) -> Result<bool> {
        let req = hbase_proto::GetTableStateRequest {
            table_name: table.to_proto(),
        };
        let resp: hbase_proto::GetTableStateResponse =
            self.master_call("GetTableState", &req).await?;
        Ok(resp.table_state.state() == hbase_proto::table_state::State::Enabled)
    }

    /// The regions of a table in key order, with their servers, read from `hbase:meta`.
    pub async fn list_regions(&self, table: &TableName) -> Result<Vec<TableRegion>> {
        let regions = self.inner.locator.table_regions(table).await?;
        if regions.is_empty() && !self.table_exists(table).await? {
            return Err(Error::TableNotFound(table.to_string()));
        }
        Ok(regions
            .into_iter()
            .map(|(region, server)| TableRegion { region, server })
            .collect())
    }

    /// Calls the master, retrying while it is starting up or unreachable.
    pub(crate) async fn master_call<Req: Message, Resp: Message + Default>(
        &self,
        method: &'static str,
        req: &Req,
    ) -> Result<Resp> {
        let config = &self.inner.config;
        let deadline = Instant::now() + config.operation_timeout;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let err = match self.master_call_once(method, req).await {
                Ok(resp) => return Ok(resp),
                Err(e) => e,
            };
            let retryable = recovery(&err) != Recovery::Fail;
            let pause = if retryable {
                self.inner.retry_policy.next_pause(attempts, &err)
            } else {
                None
            };
            match pause {
                Some(pause) if Instant::now() + pause < deadline => {
                    tracing::debug!(method, error = %err, "master call failed; retrying");
                    tokio::time::sleep(pause).await;
                }
                _ => return Err(err),
            }
        }
    }

    async fn master_call_once<Req: Message, Resp: Message + Default>(
        &self,
        method: &'static str,
        req: &Req,
    ) -> Result<Resp> {
        let inner = &self.inner;
        let master = inner.zk.master().await?;
        let conn = inner.pool.get(&master, Service::Master).await?;
        let timeout = inner.config.rpc_timeout;
        let meta = RequestMeta {
            method,
            timeout_ms: timeout.as_millis() as u32,
            priority: ADMIN_PRIORITY,
        };
        match conn.call(meta, req, None, timeout).await {
            Ok(body) => body.decode(),
            Err(e) => {
                if recovery(&e) == Recovery::DropServer {
                    inner.pool.discard(&master, Service::Master, &conn);
                }
                Err(e)
            }
        }
    }

    /// Polls the master until procedure `proc_id` finishes, with growing pauses.
    async fn wait_procedure(&self, proc_id: Option<u64>) -> Result<()> {
        let Some(proc_id) = proc_id else {
            return Ok(());
        };
        use hbase_proto::get_procedure_result_response::State;
        let limit = self.inner.config.operation_timeout;
        let deadline = Instant::now() + limit;
        let mut pause = Duration::from_millis(20);
        loop {
            let req = hbase_proto::GetProcedureResultRequest { proc_id };
            let resp: hbase_proto::GetProcedureResultResponse =
                self.master_call("getProcedureResult", &req).await?;
            match resp.state() {
                State::Finished => {
                    return match resp.exception {
                        None => Ok(()),
                        Some(ex) => {
                            let generic = ex.generic_exception.unwrap_or_default();
                            Err(Error::ProcedureFailed {
                                proc_id,
                                message: format!(
                                    "{}: {}",
                                    generic.class_name.unwrap_or_default(),
                                    generic.message.unwrap_or_default()
                                ),
                            })
                        }
                    }
                }
                State::NotFound => {
                    return Err(Error::ProcedureFailed {
                        proc_id,
                        message: "the master does not know this procedure".into(),
                    })
                }
                State::Running => {}
            }
            if Instant::now() + pause >= deadline {
                return Err(Error::Timeout {
                    what: format!("waiting for master procedure {proc_id}"),
                    after: limit,
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }
}
