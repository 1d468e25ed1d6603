//! Mixed actions for batches, and mutations for the buffered mutator.

use bytes::{Bytes, BytesMut};

use super::{Append, CellBlockMutation, Delete, Get, Increment, Put, RowResult};
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

    /// Java's `Mutation.heapSize()` for it ([`Put::heap_size`], [`Delete::heap_size`]): what a
    /// [`BufferedMutator`](crate::BufferedMutator) adds up against its write buffer's size,
    /// as Java's does.
    pub fn heap_size(&self) -> usize {
        match self {
            Mutation::Put(p) => p.heap_size(),
            Mutation::Delete(d) => d.heap_size(),
        }
    }

    /// Its cells: a put's, or a delete's markers (one per target; none for a whole row).
    pub(crate) fn cells(&self) -> usize {
        match self {
            Mutation::Put(p) => p.len(),
            Mutation::Delete(d) => d.markers(),
        }
    }

    /// Memory the mutation holds. A buffered mutator counts its own bookkeeping on top
    /// ([`BufferedMutator::budgeted_size`](crate::BufferedMutator::budgeted_size)).
    pub(crate) fn memory_size(&self) -> usize {
        match self {
            Mutation::Put(p) => p.memory_size(),
            Mutation::Delete(d) => d.memory_size(),
        }
    }

    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        match self {
            Mutation::Put(p) => p.validate(max_kv),
            Mutation::Delete(d) => d.validate(),
        }
    }

    /// The mutation with its cells inline (for a `Mutate` call).
    pub(crate) fn to_proto(&self) -> hbase_proto::MutationProto {
        match self {
            Mutation::Put(p) => p.to_proto(),
            Mutation::Delete(d) => d.to_proto(),
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
#[non_exhaustive]
pub enum Action {
    /// Read a row.
    Get(Get),
    /// Write cells.
    Put(Put),
    /// Delete cells.
    Delete(Delete),
    /// Add to counters (carries a nonce: applied once however often it is retried).
    Increment(Increment),
    /// Append to values (carries a nonce).
    Append(Append),
}

/// The outcome of one successful batch action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionResult {
    /// A get's row (`None` when the row has no matching cells), or the new values an
    /// increment or append wrote.
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
            Action::Increment(i) => i.row(),
            Action::Append(a) => a.row(),
        }
    }

    /// The action's size for splitting batches into requests: for a put, delete, increment
    /// or append, the Java client's `heapSize()` of it, exactly (a YCSB put of 10 × 100-byte
    /// fields is 2,384 bytes); a get counts its row and 64 bytes (Java counts a get as
    /// nothing, and sends a batch's gets to one server in one request, however many).
    pub fn heap_size(&self) -> usize {
        match self {
            Action::Get(g) => g.row().len() + 64,
            Action::Put(p) => p.heap_size(),
            Action::Delete(d) => d.heap_size(),
            Action::Increment(i) => i.heap_size(),
            Action::Append(a) => a.heap_size(),
        }
    }

    /// Bytes [`to_proto`](Self::to_proto) appends to the cell block, exactly (puts and
    /// deletes; the others carry their cells inline).
    pub(crate) fn cellblock_len(&self) -> usize {
        match self {
            Action::Put(p) => p.cellblock_len(),
            Action::Delete(d) => d.cellblock_len(),
            _ => 0,
        }
    }

    /// Starts loading the cells a put will copy into its request (see `prefetch.rs`).
    #[inline]
    pub(crate) fn prefetch_cells(&self) {
        if let Action::Put(p) = self {
            p.prefetch_cells();
        }
    }

    /// Starts loading what dropping a put's cells will touch (see `prefetch.rs`).
    #[inline]
    pub(crate) fn prefetch_for_drop(&self) {
        if let Action::Put(p) = self {
            p.prefetch_for_drop();
        }
    }

    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        match self {
            Action::Get(g) => crate::rpc::cellblock::check_row(g.row()),
            Action::Put(p) => p.validate(max_kv),
            Action::Delete(d) => d.validate(),
            Action::Increment(i) => i.validate(max_kv),
            Action::Append(a) => a.validate(max_kv),
        }
    }

    /// The put or delete as a [`Mutation`] (a clone: a put's cells are copied), for reporting
    /// a buffered mutation that failed; `None` for the other actions, which a buffered
    /// mutator never holds.
    pub(crate) fn to_mutation(&self) -> Option<Mutation> {
        match self {
            Action::Put(p) => Some(Mutation::Put(p.clone())),
            Action::Delete(d) => Some(Mutation::Delete(d.clone())),
            _ => None,
        }
    }

    /// True for the actions that change data.
    pub(crate) fn is_write(&self) -> bool {
        !matches!(self, Action::Get(_))
    }

    /// True when applying it twice differs from applying it once and no nonce can guard it
    /// (a delete of a column's newest version, [`Delete::applies_once`]): it is not sent
    /// again after a round that may have applied it.
    pub(crate) fn applies_once(&self) -> bool {
        matches!(self, Action::Delete(d) if d.applies_once())
    }

    /// True when applying it twice differs from applying it once: it carries a nonce.
    pub(crate) fn needs_nonce(&self) -> bool {
        matches!(self, Action::Increment(_) | Action::Append(_))
    }

    /// A put's or delete's header, its cells appended to `cellblock`; `None` for the other
    /// actions (which carry their cells inline).
    pub(crate) fn encode_cells(&self, cellblock: &mut BytesMut) -> Option<CellBlockMutation<'_>> {
        match self {
            Action::Put(p) => Some(p.encode_cells(cellblock)),
            Action::Delete(d) => Some(d.encode_cells(cellblock)),
            _ => None,
        }
    }

    /// The protobuf action; put and delete cells go to `cellblock`.
    pub(crate) fn to_proto(
        &self,
        index: u32,
        nonce: Option<u64>,
        cellblock: &mut BytesMut,
    ) -> hbase_proto::Action {
        let mut a = hbase_proto::Action {
            index: Some(index),
            ..Default::default()
        };
        let mutation = match self {
            Action::Get(g) => {
                a.get = Some(g.to_proto());
                return a;
            }
            Action::Put(p) => p.encode_cells(cellblock).to_proto(nonce),
            Action::Delete(d) => d.encode_cells(cellblock).to_proto(nonce),
            Action::Increment(i) => i.to_proto(),
            Action::Append(a) => a.to_proto(),
        };
        a.mutation = Some(hbase_proto::MutationProto { nonce, ..mutation });
        a
    }
}

impl From<Increment> for Action {
    fn from(i: Increment) -> Action {
        Action::Increment(i)
    }
}

impl From<Append> for Action {
    fn from(a: Append) -> Action {
        Action::Append(a)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The Multi path reserves the cell block from `cellblock_len`: it must be the exact
    /// encoded size, also for long rows (every cell repeats the row; the heap-size estimate
    /// it replaced counted the row once and undershot for rows of more than about 24 bytes).
    #[test]
    fn cellblock_len_is_the_encoded_size() {
        let long_row = vec![b'r'; 300];
        let put = Put::new(long_row.clone())
            .add("cf", "q1", vec![b'v'; 100])
            .add_at("cf", "q2", 7, "")
            .add("family", "", "x");
        let delete = Delete::new(long_row)
            .column("cf", "q")
            .column_version("cf", "q", Some(5))
            .family("cf")
            .family_version("cf", 9);
        let whole_row = Delete::new("row");
        let get = Get::new("row");
        for action in [
            Action::Put(put),
            Action::Delete(delete),
            Action::Delete(whole_row),
            Action::Get(get),
        ] {
            let mut block = BytesMut::new();
            action.to_proto(0, None, &mut block);
            assert_eq!(action.cellblock_len(), block.len(), "{action:?}");
        }
    }
}
