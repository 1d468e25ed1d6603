//! Mixed actions for batches, and mutations for the buffered mutator.

use bytes::{Bytes, BytesMut};

use super::{Delete, Get, Put, RowResult};
use crate::error::Result;

/// A write: what a [`BufferedMutator`](crate::BufferedMutator) buffers.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Write cells.
    Put(Put),
    /// Delete cells.
    Delete(Delete),
}

impl Mutation {
    /// The row key.
    pub fn row(&self) -> &Bytes {
        match self {
            Mutation::Put(p) => p.row(),
            Mutation::Delete(d) => d.row(),
        }
    }

    /// Approximate memory held, for write-buffer accounting.
    pub fn heap_size(&self) -> usize {
        match self {
            Mutation::Put(p) => p.heap_size(),
            Mutation::Delete(d) => d.heap_size(),
        }
    }

    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        match self {
            Mutation::Put(p) => p.validate(max_kv),
            Mutation::Delete(d) => d.validate(),
        }
    }
}

impl From<Put> for Mutation {
    fn from(p: Put) -> Mutation {
        Mutation::Put(p)
    }
}

impl From<Delete> for Mutation {
    fn from(d: Delete) -> Mutation {
        Mutation::Delete(d)
    }
}

/// One action of a [`Table::batch`](crate::Table::batch).
#[derive(Debug, Clone)]
pub enum Action {
    /// Read a row.
    Get(Get),
    /// Write cells.
    Put(Put),
    /// Delete cells.
    Delete(Delete),
}

/// The outcome of one successful batch action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionResult {
    /// A get's row (`None` when the row has no matching cells).
    Row(Option<RowResult>),
    /// A put or delete was applied.
    Done,
}

impl Action {
    /// The row key.
    pub fn row(&self) -> &Bytes {
        match self {
            Action::Get(g) => g.row(),
            Action::Put(p) => p.row(),
            Action::Delete(d) => d.row(),
        }
    }

    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        match self {
            Action::Get(g) => crate::rpc::cellblock::check_row(g.row()),
            Action::Put(p) => p.validate(max_kv),
            Action::Delete(d) => d.validate(),
        }
    }

    /// The protobuf action; mutation cells go to `cellblock`.
    pub(crate) fn to_proto(&self, index: u32, cellblock: &mut BytesMut) -> hbase_proto::Action {
        let mut a = hbase_proto::Action {
            index: Some(index),
            ..Default::default()
        };
        match self {
            Action::Get(g) => a.get = Some(g.to_proto()),
            Action::Put(p) => a.mutation = Some(p.to_cellblock_proto(cellblock)),
            Action::Delete(d) => a.mutation = Some(d.to_cellblock_proto(cellblock)),
        }
        a
    }
}

impl From<Mutation> for Action {
    fn from(m: Mutation) -> Action {
        match m {
            Mutation::Put(p) => Action::Put(p),
            Mutation::Delete(d) => Action::Delete(d),
        }
    }
}
