//! `Admin`: table management and region topology through the master (and, for a few calls,
//! the region servers' AdminService). Every call that starts a master procedure waits for it
//! to finish, polling with growing pauses, bounded by [`Admin::timeout`].
//!
//! - tables: [`Admin::create_table`] (with split keys), [`Admin::create_table_with_regions`],
//!   enable, disable, delete, [`Admin::truncate_table`], exists, [`Admin::list_tables`],
//!   [`Admin::describe_table`];
//! - topology: [`Admin::list_regions`], [`Admin::region_for_row`], [`Admin::split_region`],
//!   [`Admin::split_table_at`], [`Admin::move_region`], [`Admin::region_servers`],
//!   [`Admin::master`], the balancer switch, [`Admin::flush_region`],
//!   [`Admin::compact_region`], [`Admin::stop_region_server`];
//! - namespaces: [`Admin::create_namespace`], [`Admin::delete_namespace`],
//!   [`Admin::list_namespaces`];
//! - snapshots: [`Admin::snapshot`], [`Admin::list_snapshots`], [`Admin::clone_snapshot`],
//!   [`Admin::restore_snapshot`], [`Admin::delete_snapshot`];
//! - the master: [`Admin::procedures`], [`Admin::hbase_version`];
//! - split points: [`ycsb_split_keys`], [`uniform_split_keys`].

mod namespace;
mod procedure;
mod schema;
mod snapshot;
mod splits;
mod topology;

pub use procedure::{ProcedureInfo, ProcedureState};
pub use schema::{BloomFilter, ColumnFamily, Compression, DataBlockEncoding, TableDescriptor};
pub use snapshot::SnapshotInfo;
pub use splits::{uniform_split_keys, ycsb_split_keys};
pub use topology::TableRegion;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::region::{RegionInfo, ServerName, TableName};
use crate::runtime::caller::{CallOptions, Idempotency, Operation, Target};
use crate::runtime::Runtime;

/// Table administration. Obtained from [`Client::admin`](crate::Client::admin).
#[derive(Clone)]
pub struct Admin {
    rt: Arc<Runtime>,
    timeout: Duration,
    /// The client's nonce group: with a fresh nonce per request, it lets the master recognise
    /// a retried procedure request (after a lost response) instead of starting the procedure
    /// twice.
    nonce_group: u64,
}

impl Admin {
    pub(crate) fn new(rt: Arc<Runtime>) -> Admin {
        let timeout = rt.config.operation_timeout;
        let nonce_group = rt.nonce_group;
        Admin {
            rt,
            timeout,
            nonce_group,
        }
    }

    /// The same admin, waiting at most `timeout` for each procedure or topology change
    /// (default: the client's operation timeout). Waits that run out fail with
    /// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout).
    pub fn with_timeout(mut self, timeout: Duration) -> Admin {
        self.timeout = crate::runtime::config::capped(timeout);
        self
    }

    /// How long procedures and topology changes are waited for.
    pub fn timeout(&self) -> Duration {
        self.timeout
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
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::CreateTableResponse = self.master_call("CreateTable", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.rt.locator.cache().invalidate_table(desc.name());
        Ok(())
    }

    /// Creates a table with `regions` regions as HBase's `createTable(desc, startKey, endKey,
    /// numRegions)` does: split at `start`, at `end`, and evenly between (see
    /// [`uniform_split_keys`]). Needs `regions >= 3`.
    pub async fn create_table_with_regions(
        &self,
        desc: &TableDescriptor,
        start: &[u8],
        end: &[u8],
        regions: usize,
    ) -> Result<()> {
        let keys = uniform_split_keys(start, end, regions)?;
        self.create_table(desc, &keys).await
    }

    /// Disables a table and waits until all its regions are closed.
    pub async fn disable_table(&self, table: &TableName) -> Result<()> {
        let req = hbase_proto::DisableTableRequest {
            table_name: table.to_proto(),
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::DisableTableResponse =
            self.master_call("DisableTable", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.rt.locator.cache().invalidate_table(table);
        Ok(())
    }

    /// Enables a disabled table and waits until its regions are open.
    pub async fn enable_table(&self, table: &TableName) -> Result<()> {
        let req = hbase_proto::EnableTableRequest {
            table_name: table.to_proto(),
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::EnableTableResponse = self.master_call("EnableTable", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.rt.locator.cache().invalidate_table(table);
        Ok(())
    }

    /// Removes every row of a table: disables it if it is enabled, recreates its regions
    /// (with the same split keys when `preserve_splits`, else as one region) and waits until
    /// the table is enabled again.
    pub async fn truncate_table(&self, table: &TableName, preserve_splits: bool) -> Result<()> {
        if self.is_table_enabled(table).await? {
            self.disable_table(table).await?;
        }
        let req = hbase_proto::TruncateTableRequest {
            table_name: table.to_proto(),
            preserve_splits: Some(preserve_splits),
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::TruncateTableResponse =
            self.master_call("truncateTable", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.rt.locator.cache().invalidate_table(table);
        Ok(())
    }

    /// Deletes a disabled table and waits until it is gone.
    pub async fn delete_table(&self, table: &TableName) -> Result<()> {
        let req = hbase_proto::DeleteTableRequest {
            table_name: table.to_proto(),
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::DeleteTableResponse = self.master_call("DeleteTable", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.rt.locator.cache().invalidate_table(table);
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

    /// The user tables, optionally only those whose name matches `regex` (a Java regular
    /// expression, matched by the master against the full name, e.g. `"ns:.*"` or `"t_.*"`) or
    /// those in `namespace`. In name order.
    pub async fn list_tables(
        &self,
        regex: Option<&str>,
        namespace: Option<&str>,
    ) -> Result<Vec<TableName>> {
        let req = hbase_proto::GetTableNamesRequest {
            regex: regex.map(str::to_string),
            include_sys_tables: Some(false),
            namespace: namespace.map(str::to_string),
        };
        let resp: hbase_proto::GetTableNamesResponse =
            self.master_call("GetTableNames", &req).await?;
        let mut names: Vec<TableName> =
            resp.table_names.iter().map(TableName::from_proto).collect();
        names.sort();
        Ok(names)
    }

    /// The table's schema as the master holds it: its families with all their settings.
    /// A missing table is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound).
    pub async fn describe_table(&self, table: &TableName) -> Result<TableDescriptor> {
        let req = hbase_proto::GetTableDescriptorsRequest {
            table_names: vec![table.to_proto()],
            include_sys_tables: Some(true),
            ..Default::default()
        };
        let resp: hbase_proto::GetTableDescriptorsResponse =
            self.master_call("GetTableDescriptors", &req).await?;
        resp.table_schema
            .iter()
            .filter_map(TableDescriptor::from_proto)
            .find(|d| d.name() == table)
            .ok_or_else(|| Error::TableNotFound(table.to_string()))
    }

    /// Timeouts and retry policy of admin calls: the client's, with [`Admin::timeout`] for
    /// whole operations.
    fn options(&self) -> CallOptions {
        CallOptions {
            operation_timeout: self.timeout,
            ..self.rt.defaults.clone()
        }
    }

    /// Calls the master, retrying while it is starting up or unreachable (the runtime's
    /// retrying caller). Procedure requests carry nonces, so a retry never starts one twice.
    pub(crate) async fn master_call<Req, Resp>(
        &self,
        method: &'static str,
        req: &Req,
    ) -> Result<Resp>
    where
        Req: Message + Sync,
        Resp: Message + Default,
    {
        let opts = self.options();
        let op = Operation::new(&self.rt, &opts, Idempotency::Idempotent);
        op.retry(|| async {
            let ep = op.resolve(Target::Master).await?;
            op.call(&ep, method, req, None).await?.decode()
        })
        .await
    }

    /// One call to a region server's AdminService (no retries: callers poll). `idempotency`
    /// says what an unanswered call means: nothing for a read (`GetRegionInfo`, which a poll
    /// asks again), an unknown outcome for an action (a flush, a compaction, a stop).
    pub(crate) async fn region_server_call<Req, Resp>(
        &self,
        server: &ServerName,
        method: &'static str,
        req: &Req,
        idempotency: Idempotency,
    ) -> Result<Resp>
    where
        Req: Message + Sync,
        Resp: Message + Default,
    {
        let opts = self.options();
        let op = Operation::new(&self.rt, &opts, idempotency);
        let answer = async {
            let ep = op.resolve(Target::Server(server)).await?;
            op.call(&ep, method, req, None).await?.decode()
        };
        // As every retried operation ends: a call that went unanswered (it may have been
        // carried out: a flush, a stop) fails with an unknown outcome, not a timeout.
        answer.await.map_err(|e| op.final_error(e))
    }

    /// The regions of `table` with their servers, read from `hbase:meta` now (retried).
    pub(crate) async fn meta_regions(
        &self,
        table: &TableName,
    ) -> Result<Vec<(RegionInfo, Option<ServerName>)>> {
        let opts = self.options();
        let op = Operation::new(&self.rt, &opts, Idempotency::Read);
        op.retry(|| self.rt.locator.table_regions(table)).await
    }

    /// Polls the master until procedure `proc_id` finishes, with growing pauses, for at most
    /// [`Admin::timeout`].
    pub(crate) async fn wait_procedure(&self, proc_id: Option<u64>) -> Result<()> {
        let Some(proc_id) = proc_id else {
            return Ok(());
        };
        self.wait_procedure_until(proc_id, Instant::now() + self.timeout)
            .await
    }

    /// Polls the master until procedure `proc_id` finishes, with growing pauses, until
    /// `deadline` (for a caller whose wait began before the procedure did).
    pub(crate) async fn wait_procedure_until(&self, proc_id: u64, deadline: Instant) -> Result<()> {
        use hbase_proto::get_procedure_result_response::State;
        let limit = self.timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            let req = hbase_proto::GetProcedureResultRequest { proc_id };
            let resp: hbase_proto::GetProcedureResultResponse =
                self.master_call("getProcedureResult", &req).await?;
            match resp.state() {
                State::Finished => {
                    return match resp.exception {
                        None => Ok(()),
                        Some(ex) => Err(Error::ProcedureFailed {
                            proc_id,
                            message: procedure::failure_text(ex),
                        }),
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
