//! Table snapshots: take, list, clone into a new table, restore in place, delete.
//!
//! Taking a snapshot sends a nonce, as HBase's Java client does since 2.6. A 2.6+ master then
//! runs the snapshot as a master procedure (`SnapshotProcedure`, with a child procedure per
//! region) and answers with its id, which is waited on like table DDL. An older master (2.4, 2.5), or one with `hbase.snapshot.procedure.enabled` off, takes
//! it the older way, coordinated through ZooKeeper, and answers without an id; the client then
//! polls `IsSnapshotDone`, which raises the snapshot's failure if it failed. Without the nonce
//! a 2.6 master took every snapshot the older way, where one of CI's failed once with "had an
//! error. Procedure … { waiting=[] done=[] }" (cause not established).
//!
//! Restore and clone are one RPC (`RestoreSnapshot`) that the master turns into a clone when
//! the target table does not exist, and into a restore when it does; both are procedures
//! waited on like table DDL.

use std::time::{Duration, Instant};

use hbase_proto::snapshot_description::Type as SnapshotType;
use hbase_proto::SnapshotDescription;

use super::Admin;
use crate::error::{Error, Result};
use crate::region::TableName;

/// A completed snapshot, as [`Admin::list_snapshots`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotInfo {
    /// The snapshot's name.
    pub name: String,
    /// The table it was taken of, as HBase prints it (`name` or `namespace:name`).
    pub table: String,
    /// When it was taken, in milliseconds since the epoch.
    pub creation_time_ms: i64,
    /// Seconds after which the master may delete it; 0 = never.
    pub ttl_secs: i64,
}

impl Admin {
    /// Takes a snapshot named `name` of `table` (memstores flushed first, as HBase's
    /// default `FLUSH` type does) and waits until it is complete: on HBase 2.6+ as a master
    /// procedure, on older masters by polling `IsSnapshotDone` (see the module's notes).
    ///
    /// Fails with [`Error::InvalidInput`] for a name HBase would refuse, and with the master's
    /// error when it refuses the request (for example `SnapshotExistsException`, or a table that
    /// does not exist). A snapshot that fails once under way is the master's
    /// `HBaseSnapshotException` on the older path, and [`Error::ProcedureFailed`] (the
    /// procedure's id and the failure's `class: message`) on 2.6+. Waiting longer than
    /// [`Admin::timeout`] fails with [`ErrorKind::Timeout`](crate::ErrorKind::Timeout), which
    /// names the snapshot, or on 2.6+ its procedure.
    pub async fn snapshot(&self, name: &str, table: &TableName) -> Result<()> {
        check_snapshot_name(name)?;
        let desc = SnapshotDescription {
            name: name.to_string(),
            table: Some(table.to_string()),
            r#type: Some(SnapshotType::Flush as i32),
            ..Default::default()
        };
        let deadline = Instant::now() + self.timeout;
        let req = hbase_proto::SnapshotRequest {
            snapshot: desc.clone(),
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
        };
        let resp: hbase_proto::SnapshotResponse = self.master_call("Snapshot", &req).await?;
        // A procedure id: a 2.6+ master took it as a procedure.
        if let Some(proc_id) = resp.proc_id {
            let proc_id = u64::try_from(proc_id)
                .map_err(|_| Error::Protocol(format!("snapshot {name}: procedure id {proc_id}")))?;
            return self.wait_procedure_until(proc_id, deadline).await;
        }
        let mut pause = Duration::from_millis(20);
        loop {
            let req = hbase_proto::IsSnapshotDoneRequest {
                snapshot: Some(desc.clone()),
            };
            let resp: hbase_proto::IsSnapshotDoneResponse =
                self.master_call("IsSnapshotDone", &req).await?;
            if resp.done() {
                return Ok(());
            }
            if Instant::now() + pause >= deadline {
                return Err(Error::Timeout {
                    what: format!("waiting for snapshot {name} of {table}"),
                    after: self.timeout,
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// Lists the completed snapshots of the cluster.
    pub async fn list_snapshots(&self) -> Result<Vec<SnapshotInfo>> {
        let resp: hbase_proto::GetCompletedSnapshotsResponse = self
            .master_call(
                "GetCompletedSnapshots",
                &hbase_proto::GetCompletedSnapshotsRequest {},
            )
            .await?;
        Ok(resp
            .snapshots
            .into_iter()
            .map(|s| SnapshotInfo {
                creation_time_ms: s.creation_time(),
                ttl_secs: s.ttl(),
                table: s.table.unwrap_or_default(),
                name: s.name,
            })
            .collect())
    }

    /// Creates table `target` with the contents and schema that snapshot `name` recorded, and
    /// waits until its regions are open. `target` must not exist.
    pub async fn clone_snapshot(&self, name: &str, target: &TableName) -> Result<()> {
        check_snapshot_name(name)?;
        if self.table_exists(target).await? {
            return Err(Error::InvalidInput(format!(
                "cannot clone snapshot {name} into {target}: the table exists"
            )));
        }
        self.restore_or_clone(name, target).await
    }

    /// Puts the table that snapshot `name` was taken of back to the snapshot's contents and
    /// waits until the restore procedure finishes. As in HBase, the table must be disabled
    /// first ([`Admin::disable_table`]) and enabled again afterwards.
    pub async fn restore_snapshot(&self, name: &str) -> Result<()> {
        check_snapshot_name(name)?;
        let snapshot = self
            .list_snapshots()
            .await?
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| Error::InvalidInput(format!("no snapshot named {name}")))?;
        let table = TableName::parse(&snapshot.table)?;
        self.restore_or_clone(name, &table).await
    }

    /// Deletes snapshot `name` (its files go once no clone references them).
    pub async fn delete_snapshot(&self, name: &str) -> Result<()> {
        check_snapshot_name(name)?;
        let req = hbase_proto::DeleteSnapshotRequest {
            snapshot: SnapshotDescription {
                name: name.to_string(),
                ..Default::default()
            },
        };
        let _: hbase_proto::DeleteSnapshotResponse =
            self.master_call("DeleteSnapshot", &req).await?;
        Ok(())
    }

    async fn restore_or_clone(&self, name: &str, table: &TableName) -> Result<()> {
        let req = hbase_proto::RestoreSnapshotRequest {
            snapshot: SnapshotDescription {
                name: name.to_string(),
                table: Some(table.to_string()),
                ..Default::default()
            },
            nonce_group: Some(self.nonce_group),
            nonce: Some(crate::runtime::new_nonce()),
            restore_acl: Some(false),
        };
        let resp: hbase_proto::RestoreSnapshotResponse =
            self.master_call("RestoreSnapshot", &req).await?;
        self.wait_procedure(resp.proc_id).await?;
        self.rt.locator.cache().invalidate_table(table);
        Ok(())
    }
}

/// HBase's rule for snapshot names: a letter, digit or `_`, then letters, digits, `_`, `-`
/// or `.`.
fn check_snapshot_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
            chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "illegal snapshot name {name:?}: use [a-zA-Z_0-9][a-zA-Z_0-9-.]*"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::check_snapshot_name;

    #[test]
    fn snapshot_names_follow_hbase_rule() {
        for good in ["s", "_s1", "9snap", "a-b.c_d"] {
            assert!(check_snapshot_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-s", ".s", "a b", "a:b", "a/b", "é"] {
            assert!(check_snapshot_name(bad).is_err(), "{bad}");
        }
    }
}
