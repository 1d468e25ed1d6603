//! `Delete`: remove a row, families, or columns.

use bytes::{Bytes, BytesMut};
use hbase_proto::mutation_proto::{
    column_value::QualifierValue, ColumnValue, DeleteType, MutationType,
};

use super::{add_qualifier_value, mutation_proto};
use crate::cell::{CellType, LATEST_TIMESTAMP};
use crate::error::Result;
use crate::rpc::cellblock::{check_cell_limits, check_row, encode_cell};

#[derive(Debug, Clone)]
enum Target {
    Family(Bytes),
    /// Column, and whether to delete all versions (else only the newest / the given one).
    Column(Bytes, Bytes, bool, Option<u64>),
}

/// Deletes a whole row, or only some families or columns of it.
#[derive(Debug, Clone)]
pub struct Delete {
    pub(crate) row: Bytes,
    timestamp: Option<u64>,
    targets: Vec<Target>,
}

impl Delete {
    /// Deletes every cell of `row` (unless narrowed with the methods below).
    pub fn new(row: impl Into<Bytes>) -> Delete {
        Delete {
            row: row.into(),
            timestamp: None,
            targets: Vec::new(),
        }
    }

    /// The row key.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// Deletes all versions of all columns of `family`.
    pub fn family(mut self, family: impl Into<Bytes>) -> Delete {
        self.targets.push(Target::Family(family.into()));
        self
    }

    /// Deletes all versions of `family:qualifier`.
    pub fn column(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Delete {
        self.targets
            .push(Target::Column(family.into(), qualifier.into(), true, None));
        self
    }

    /// Deletes one version of `family:qualifier`: the one at `timestamp`, or the newest.
    pub fn column_version(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: Option<u64>,
    ) -> Delete {
        self.targets.push(Target::Column(
            family.into(),
            qualifier.into(),
            false,
            timestamp,
        ));
        self
    }

    /// Only deletes cells at or older than `timestamp`.
    pub fn timestamp(mut self, timestamp: u64) -> Delete {
        self.timestamp = Some(timestamp);
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        check_row(&self.row)?;
        for t in &self.targets {
            let (Target::Family(f) | Target::Column(f, ..)) = t;
            check_cell_limits(&self.row, f)?;
        }
        Ok(())
    }

    /// Approximate memory held by this delete, for write-buffer accounting.
    pub fn heap_size(&self) -> usize {
        let targets: usize = self
            .targets
            .iter()
            .map(|t| match t {
                Target::Family(f) => 48 + f.len(),
                Target::Column(f, q, ..) => 48 + f.len() + q.len(),
            })
            .sum();
        64 + self.row.len() + targets
    }

    /// The mutation header for a cell-block encoding; delete markers go to `block`.
    pub(crate) fn to_cellblock_proto(&self, block: &mut BytesMut) -> hbase_proto::MutationProto {
        let default_ts = self.timestamp.unwrap_or(LATEST_TIMESTAMP);
        for target in &self.targets {
            match target {
                Target::Family(f) => encode_cell(
                    block,
                    &self.row,
                    f,
                    b"",
                    default_ts,
                    CellType::DeleteFamily,
                    b"",
                ),
                Target::Column(f, q, true, _) => encode_cell(
                    block,
                    &self.row,
                    f,
                    q,
                    default_ts,
                    CellType::DeleteColumn,
                    b"",
                ),
                Target::Column(f, q, false, ts) => {
                    let ts = ts.unwrap_or(default_ts);
                    encode_cell(block, &self.row, f, q, ts, CellType::Delete, b"")
                }
            }
        }
        let mut m = mutation_proto(&self.row, MutationType::Delete, Vec::new(), self.timestamp);
        m.associated_cell_count = Some(self.targets.len() as i32);
        m
    }

    pub(crate) fn to_proto(&self) -> hbase_proto::MutationProto {
        let mut column_value: Vec<ColumnValue> = Vec::new();
        for target in &self.targets {
            let (family, qv) = match target {
                Target::Family(f) => {
                    let mut qv = QualifierValue::default();
                    qv.set_delete_type(DeleteType::DeleteFamily);
                    (f, qv)
                }
                Target::Column(f, q, all, ts) => {
                    let mut qv = QualifierValue {
                        qualifier: Some(q.clone()),
                        timestamp: *ts,
                        ..Default::default()
                    };
                    qv.set_delete_type(if *all {
                        DeleteType::DeleteMultipleVersions
                    } else {
                        DeleteType::DeleteOneVersion
                    });
                    (f, qv)
                }
            };
            add_qualifier_value(&mut column_value, family, qv);
        }
        mutation_proto(
            &self.row,
            MutationType::Delete,
            column_value,
            self.timestamp,
        )
    }
}
