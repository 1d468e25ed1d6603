//! `Increment` and `Append`: read-modify-write of columns, done atomically by the server,
//! which returns the new values.

use bytes::Bytes;
use hbase_proto::mutation_proto::{column_value::QualifierValue, MutationType};

use super::{add_qualifier_value, mutation_proto};
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

    pub(crate) fn to_proto(&self, max_kv: usize) -> Result<hbase_proto::MutationProto> {
        let columns = self
            .columns
            .iter()
            .map(|(f, q, amount)| (f, q, Bytes::copy_from_slice(&amount.to_be_bytes())));
        column_mutation(
            &self.row,
            MutationType::Increment,
            "increment",
            columns,
            max_kv,
        )
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

    pub(crate) fn to_proto(&self, max_kv: usize) -> Result<hbase_proto::MutationProto> {
        let columns = self.columns.iter().map(|(f, q, v)| (f, q, v.clone()));
        column_mutation(&self.row, MutationType::Append, "append", columns, max_kv)
    }
}

/// An increment or append of `row`: one checked column value per (family, qualifier, value).
fn column_mutation<'a>(
    row: &Bytes,
    kind: MutationType,
    what: &str,
    columns: impl Iterator<Item = (&'a Bytes, &'a Bytes, Bytes)>,
    max_kv: usize,
) -> Result<hbase_proto::MutationProto> {
    let mut cvs = Vec::new();
    for (family, qualifier, value) in columns {
        check_cell_limits(row, family)?;
        crate::rpc::cellblock::check_cell_size(row, family, qualifier, &value, max_kv)?;
        let qv = QualifierValue {
            qualifier: Some(qualifier.clone()),
            value: Some(value),
            ..Default::default()
        };
        add_qualifier_value(&mut cvs, family, qv);
    }
    if cvs.is_empty() {
        return Err(Error::InvalidInput(format!(
            "an {what} needs at least one column"
        )));
    }
    Ok(mutation_proto(row, kind, cvs, None))
}
