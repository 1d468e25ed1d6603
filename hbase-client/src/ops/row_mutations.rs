//! `RowMutations`: several mutations of one row, applied atomically (HBase's `RowMutations`,
//! sent as one atomic `RegionAction`).

use bytes::{Bytes, BytesMut};

use super::{Append, Delete, Increment, Put};
use crate::error::{Error, Result};

/// One mutation of a [`RowMutations`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RowMutation {
    /// Write cells.
    Put(Put),
    /// Delete cells.
    Delete(Delete),
    /// Add to counters.
    Increment(Increment),
    /// Append to values.
    Append(Append),
}

impl RowMutation {
    fn row(&self) -> &Bytes {
        match self {
            RowMutation::Put(p) => p.row(),
            RowMutation::Delete(d) => d.row(),
            RowMutation::Increment(i) => i.row(),
            RowMutation::Append(a) => a.row(),
        }
    }

    fn validate(&self, max_kv: usize) -> Result<()> {
        match self {
            RowMutation::Put(p) => p.validate(max_kv),
            RowMutation::Delete(d) => d.validate(),
            RowMutation::Increment(i) => i.validate(max_kv),
            RowMutation::Append(a) => a.validate(max_kv),
        }
    }

    /// The mutation of a `Multi` action; puts' and deletes' cells go to `cellblock`.
    fn to_proto(&self, cellblock: &mut BytesMut) -> hbase_proto::MutationProto {
        match self {
            RowMutation::Put(p) => p.encode_cells(cellblock).to_proto(None),
            RowMutation::Delete(d) => d.encode_cells(cellblock).to_proto(None),
            RowMutation::Increment(i) => i.to_proto(),
            RowMutation::Append(a) => a.to_proto(),
        }
    }
}

/// Mutations of one row that HBase applies together or not at all, in order: see
/// [`Table::mutate_row`](crate::Table::mutate_row) and
/// [`CheckAndMutate::then_mutate`](crate::CheckAndMutate::then_mutate).
///
/// ```
/// use hbase_client::{Delete, Increment, Put, RowMutations};
/// let m = RowMutations::new("order-7")
///     .put(Put::new("order-7").add("cf", "state", "shipped"))
///     .delete(Delete::new("order-7").column("cf", "eta"))
///     .increment(Increment::new("order-7").add("cf", "revision", 1));
/// assert_eq!(m.len(), 3);
/// ```
#[derive(Debug, Clone)]
pub struct RowMutations {
    row: Bytes,
    mutations: Vec<RowMutation>,
}

impl RowMutations {
    /// No mutations yet, of `row`; every mutation added must be of this row.
    pub fn new(row: impl Into<Bytes>) -> RowMutations {
        RowMutations {
            row: row.into(),
            mutations: Vec::new(),
        }
    }

    /// Adds a put.
    pub fn put(mut self, put: Put) -> RowMutations {
        self.mutations.push(RowMutation::Put(put));
        self
    }

    /// Adds a delete.
    pub fn delete(mut self, delete: Delete) -> RowMutations {
        self.mutations.push(RowMutation::Delete(delete));
        self
    }

    /// Adds an increment.
    pub fn increment(mut self, increment: Increment) -> RowMutations {
        self.mutations.push(RowMutation::Increment(increment));
        self
    }

    /// Adds an append.
    pub fn append(mut self, append: Append) -> RowMutations {
        self.mutations.push(RowMutation::Append(append));
        self
    }

    /// The row key.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// The mutations, in order.
    pub fn mutations(&self) -> &[RowMutation] {
        &self.mutations
    }

    /// Number of mutations.
    pub fn len(&self) -> usize {
        self.mutations.len()
    }

    /// True when there are none (HBase refuses that).
    pub fn is_empty(&self) -> bool {
        self.mutations.is_empty()
    }

    /// Checks them; `max_kv` is the client's largest KeyValue.
    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        if self.mutations.is_empty() {
            return Err(Error::InvalidInput(
                "row mutations need at least one mutation".into(),
            ));
        }
        for m in &self.mutations {
            if m.row() != &self.row {
                return Err(Error::InvalidInput(format!(
                    "row mutations of {:?} hold a mutation of row {:?}",
                    String::from_utf8_lossy(&self.row),
                    String::from_utf8_lossy(m.row())
                )));
            }
            m.validate(max_kv)?;
        }
        Ok(())
    }

    /// True when applying them twice would differ from applying them once (an increment or
    /// an append among them): they need a nonce.
    pub(crate) fn needs_nonce(&self) -> bool {
        self.mutations
            .iter()
            .any(|m| matches!(m, RowMutation::Increment(_) | RowMutation::Append(_)))
    }

    /// True when a delete among them must not be applied twice and no nonce guards it
    /// ([`Delete::applies_once`](super::Delete)).
    pub(crate) fn applies_once(&self) -> bool {
        self.mutations
            .iter()
            .any(|m| matches!(m, RowMutation::Delete(d) if d.applies_once()))
    }

    /// The actions of their atomic `RegionAction`, every mutation carrying `nonce`.
    pub(crate) fn to_actions(
        &self,
        nonce: Option<u64>,
        cellblock: &mut BytesMut,
    ) -> Vec<hbase_proto::Action> {
        self.mutations
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mut mutation = m.to_proto(cellblock);
                mutation.nonce = nonce;
                hbase_proto::Action {
                    index: Some(i as u32),
                    mutation: Some(mutation),
                    ..Default::default()
                }
            })
            .collect()
    }
}
