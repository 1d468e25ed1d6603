//! `Increment` and `Append`: read-modify-write of columns, done atomically by the server,
//! which returns the new values.

use bytes::Bytes;
use hbase_proto::mutation_proto::{column_value::QualifierValue, MutationType};

use super::{add_qualifier_value, java_heap, mutation_proto};
use crate::error::{Error, Result};
use crate::rpc::cellblock::check_cell_limits;

/// Adds to 8-byte big-endian counters. A missing counter counts from 0.
#[derive(Debug, Clone)]
pub struct Increment {
    pub(crate) row: Bytes,
    columns: Vec<(Bytes, Bytes, i64)>,
}

impl Increment {
    /// An increment of `row`; add columns with [`Increment::add`].
    pub fn new(row: impl Into<Bytes>) -> Increment {
        Increment {
            row: row.into(),
            columns: Vec::new(),
        }
    }

    /// Adds `amount` to `family:qualifier`.
    pub fn add(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        amount: i64,
    ) -> Increment {
        self.columns.push((family.into(), qualifier.into(), amount));
        self
    }

    /// The row key.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        let columns = self.columns.iter().map(|(f, q, _)| (f, q, &[0u8; 8][..]));
        check_columns(&self.row, "increment", columns, max_kv)
    }

    /// The mutation (validate first).
    pub(crate) fn to_proto(&self) -> hbase_proto::MutationProto {
        let columns = self
            .columns
            .iter()
            .map(|(f, q, amount)| (f, q, Bytes::copy_from_slice(&amount.to_be_bytes())));
        column_mutation(&self.row, MutationType::Increment, columns)
    }

    /// Java's `Increment.heapSize()`, exactly: what hbase-client 2.x counts for the same
    /// `Increment` (each column a `KeyValue` of its 8-byte amount). What a
    /// [`Table::batch`](crate::Table::batch) counts against the client's
    /// [`max_request_size`](crate::ClientConfigBuilder::max_request_size).
    pub fn heap_size(&self) -> usize {
        columns_heap_size(&self.row, self.columns.iter().map(|(f, q, _)| (f, q, 8)))
    }
}

/// Appends bytes to the end of column values. A missing value counts as empty.
#[derive(Debug, Clone)]
pub struct Append {
    pub(crate) row: Bytes,
    columns: Vec<(Bytes, Bytes, Bytes)>,
}

impl Append {
    /// An append to `row`; add columns with [`Append::add`].
    pub fn new(row: impl Into<Bytes>) -> Append {
        Append {
            row: row.into(),
            columns: Vec::new(),
        }
    }

    /// Appends `value` to `family:qualifier`.
    pub fn add(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Append {
        self.columns
            .push((family.into(), qualifier.into(), value.into()));
        self
    }

    /// The row key.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        let columns = self.columns.iter().map(|(f, q, v)| (f, q, &v[..]));
        check_columns(&self.row, "append", columns, max_kv)
    }

    /// The mutation (validate first).
    pub(crate) fn to_proto(&self) -> hbase_proto::MutationProto {
        let columns = self.columns.iter().map(|(f, q, v)| (f, q, v.clone()));
        column_mutation(&self.row, MutationType::Append, columns)
    }

    /// Java's `Append.heapSize()`, exactly: what hbase-client 2.x counts for the same
    /// `Append` (each column a `KeyValue` of its value). What a
    /// [`Table::batch`](crate::Table::batch) counts against the client's
    /// [`max_request_size`](crate::ClientConfigBuilder::max_request_size).
    pub fn heap_size(&self) -> usize {
        columns_heap_size(
            &self.row,
            self.columns.iter().map(|(f, q, v)| (f, q, v.len())),
        )
    }
}

/// Checks an increment's or append's columns (family, qualifier, value length).
fn check_columns<'a>(
    row: &Bytes,
    what: &str,
    columns: impl Iterator<Item = (&'a Bytes, &'a Bytes, &'a [u8])>,
    max_kv: usize,
) -> Result<()> {
    let mut any = false;
    for (family, qualifier, value) in columns {
        check_cell_limits(row, family)?;
        crate::rpc::cellblock::check_cell_size(row, family, qualifier, value, max_kv)?;
        any = true;
    }
    if !any {
        return Err(Error::InvalidInput(format!(
            "an {what} needs at least one column"
        )));
    }
    Ok(())
}

/// Java's heap size of an increment or append of `row` with these columns (family,
/// qualifier, value length): a mutation's, and the `TimeRange` both carry.
fn columns_heap_size<'a>(
    row: &Bytes,
    columns: impl Iterator<Item = (&'a Bytes, &'a Bytes, usize)>,
) -> usize {
    let mut families = java_heap::Families::new();
    for (f, q, v) in columns {
        families.add(f, java_heap::kv_len(row.len(), f.len(), q.len(), v));
    }
    let heap = java_heap::row(row.len()).saturating_add(families.heap_size());
    java_heap::align(heap.saturating_add(java_heap::TIME_RANGE_EXTRA))
}

/// An increment or append of `row`: one column value per (family, qualifier, value).
fn column_mutation<'a>(
    row: &Bytes,
    kind: MutationType,
    columns: impl Iterator<Item = (&'a Bytes, &'a Bytes, Bytes)>,
) -> hbase_proto::MutationProto {
    let mut cvs = Vec::new();
    for (family, qualifier, value) in columns {
        let qv = QualifierValue {
            qualifier: Some(qualifier.clone()),
            value: Some(value),
            ..Default::default()
        };
        add_qualifier_value(&mut cvs, family, qv);
    }
    mutation_proto(row.clone(), kind, cvs, None)
}
