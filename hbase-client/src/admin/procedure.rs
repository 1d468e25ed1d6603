//! What the master runs: its procedures (`GetProcedures`) and the version it runs.
//!
//! DDL, region moves and, on HBase 2.6+, snapshots are master procedures. The list shows the
//! ones running and those finished recently: the master drops a finished procedure
//! `hbase.procedure.cleaner.acked.evict.ttl` (5 minutes by default) after a client read its
//! result, as this client does for every procedure it waits on, and
//! `hbase.procedure.cleaner.evict.ttl` (15 minutes) after it finished otherwise.

use super::Admin;
use crate::error::Result;

/// Where a master procedure is in its life, as HBase's `ProcedureState` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcedureState {
    /// Being built, not yet given to the executor.
    Initializing,
    /// Ready to run, or running.
    Runnable,
    /// Waiting for its child procedures.
    Waiting,
    /// Waiting for a timeout or an event.
    WaitingTimeout,
    /// Failed and rolled back.
    RolledBack,
    /// Finished successfully.
    Success,
    /// Failed (a rollback may follow).
    Failed,
    /// A state this client does not know (a newer server's).
    Other(i32),
}

impl ProcedureState {
    fn from_proto(state: i32) -> ProcedureState {
        use hbase_proto::ProcedureState as P;
        match P::try_from(state) {
            Ok(P::Initializing) => ProcedureState::Initializing,
            Ok(P::Runnable) => ProcedureState::Runnable,
            Ok(P::Waiting) => ProcedureState::Waiting,
            Ok(P::WaitingTimeout) => ProcedureState::WaitingTimeout,
            Ok(P::Rolledback) => ProcedureState::RolledBack,
            Ok(P::Success) => ProcedureState::Success,
            Ok(P::Failed) => ProcedureState::Failed,
            Err(_) => ProcedureState::Other(state),
        }
    }
}

/// One master procedure, as [`Admin::procedures`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcedureInfo {
    /// The master's id for it.
    pub id: u64,
    /// The procedure it is a step of, if it is one.
    pub parent_id: Option<u64>,
    /// Its Java class, e.g. `org.apache.hadoop.hbase.master.procedure.CreateTableProcedure`.
    pub class_name: String,
    /// Where it is.
    pub state: ProcedureState,
    /// Who submitted it.
    pub owner: Option<String>,
    /// When it was submitted, in milliseconds since the epoch.
    pub submitted_ms: u64,
    /// When it last changed, in milliseconds since the epoch.
    pub last_update_ms: u64,
    /// Why it failed (`class: message`), if it did.
    pub failure: Option<String>,
}

/// A procedure's failure as `class: message` (the master's `ForeignExceptionMessage`).
pub(super) fn failure_text(e: hbase_proto::ForeignExceptionMessage) -> String {
    let g = e.generic_exception.unwrap_or_default();
    format!(
        "{}: {}",
        g.class_name.unwrap_or_default(),
        g.message.unwrap_or_default()
    )
}

impl Admin {
    /// The master's procedures: those running and those finished recently, in the master's
    /// order (HBase's `Admin.getProcedures`). On a secured cluster this needs the admin
    /// permission.
    pub async fn procedures(&self) -> Result<Vec<ProcedureInfo>> {
        let resp: hbase_proto::GetProceduresResponse = self
            .master_call("GetProcedures", &hbase_proto::GetProceduresRequest {})
            .await?;
        Ok(resp
            .procedure
            .into_iter()
            .map(|p| ProcedureInfo {
                id: p.proc_id,
                parent_id: p.parent_id,
                state: ProcedureState::from_proto(p.state),
                owner: p.owner,
                submitted_ms: p.submitted_time,
                last_update_ms: p.last_update,
                failure: p.exception.map(failure_text),
                class_name: p.class_name,
            })
            .collect())
    }

    /// The HBase version the active master runs (`2.6.4`, `3.0.0-alpha-4`), from its cluster
    /// status.
    pub async fn hbase_version(&self) -> Result<String> {
        let req = hbase_proto::GetClusterStatusRequest {
            options: vec![hbase_proto::ClusterStatusOption::HbaseVersion as i32],
        };
        let resp: hbase_proto::GetClusterStatusResponse =
            self.master_call("GetClusterStatus", &req).await?;
        resp.cluster_status
            .hbase_version
            .map(|v| v.version)
            .ok_or_else(|| {
                crate::error::Error::Protocol("the master's cluster status has no version".into())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_map_by_hbase_number_and_unknown_ones_are_kept() {
        assert_eq!(ProcedureState::from_proto(1), ProcedureState::Initializing);
        assert_eq!(ProcedureState::from_proto(3), ProcedureState::Waiting);
        assert_eq!(ProcedureState::from_proto(5), ProcedureState::RolledBack);
        assert_eq!(ProcedureState::from_proto(6), ProcedureState::Success);
        assert_eq!(ProcedureState::from_proto(7), ProcedureState::Failed);
        assert_eq!(ProcedureState::from_proto(0), ProcedureState::Other(0));
        assert_eq!(ProcedureState::from_proto(42), ProcedureState::Other(42));
    }

    #[test]
    fn a_failure_reads_class_then_message() {
        let e = hbase_proto::ForeignExceptionMessage {
            source: Some("master".into()),
            generic_exception: Some(hbase_proto::GenericExceptionMessage {
                class_name: Some("org.apache.hadoop.hbase.snapshot.HBaseSnapshotException".into()),
                message: Some("regions moved".into()),
                ..Default::default()
            }),
        };
        assert_eq!(
            failure_text(e),
            "org.apache.hadoop.hbase.snapshot.HBaseSnapshotException: regions moved"
        );
    }
}
