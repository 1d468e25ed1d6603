//! `Put`: write cells to one row.

use bytes::{Bytes, BytesMut};
use hbase_proto::mutation_proto::{self, column_value::QualifierValue, ColumnValue, MutationType};

use super::{add_qualifier_value, mutation_proto, CellBlockMutation, Mutation};
use crate::cell::{CellType, LATEST_TIMESTAMP};
use crate::error::Result;
use crate::rpc::cellblock::{check_cell_size, check_family, check_row, encode_cell, encoded_len};

/// How durably the server persists a mutation before acknowledging it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// The table's setting (normally `SyncWal`).
    #[default]
    UseDefault,
    /// No write-ahead log: fast, lost if the server dies before a flush.
    SkipWal,
    /// Write the WAL asynchronously.
    AsyncWal,
    /// Write the WAL synchronously.
    SyncWal,
    /// Write and fsync the WAL.
    FsyncWal,
}

impl Durability {
    pub(crate) fn to_proto(self) -> mutation_proto::Durability {
        match self {
            Durability::UseDefault => mutation_proto::Durability::UseDefault,
            Durability::SkipWal => mutation_proto::Durability::SkipWal,
            Durability::AsyncWal => mutation_proto::Durability::AsyncWal,
            Durability::SyncWal => mutation_proto::Durability::SyncWal,
            Durability::FsyncWal => mutation_proto::Durability::FsyncWal,
        }
    }
}

/// Writes cells to one row.
#[derive(Debug, Clone)]
pub struct Put {
    pub(crate) row: Bytes,
    timestamp: Option<u64>,
    durability: Durability,
    /// (family, qualifier, timestamp, value)
    cells: Vec<(Bytes, Bytes, Option<u64>, Bytes)>,
}

impl Put {
    /// An empty put for `row`; add cells with [`Put::add`].
    pub fn new(row: impl Into<Bytes>) -> Put {
        Put {
            row: row.into(),
            timestamp: None,
            durability: Durability::UseDefault,
            cells: Vec::new(),
        }
    }

    /// An empty put for `row` with room for `cells` cells, so that adding them does not
    /// grow (and copy) the cell list.
    pub fn with_capacity(row: impl Into<Bytes>, cells: usize) -> Put {
        Put {
            cells: Vec::with_capacity(cells),
            ..Put::new(row)
        }
    }

    /// The row key.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// Adds `family:qualifier = value` at the put's timestamp.
    pub fn add(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Put {
        self.cells
            .push((family.into(), qualifier.into(), None, value.into()));
        self
    }

    /// Adds `family:qualifier = value` at an explicit timestamp.
    pub fn add_at(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: u64,
        value: impl Into<Bytes>,
    ) -> Put {
        self.cells.push((
            family.into(),
            qualifier.into(),
            Some(timestamp),
            value.into(),
        ));
        self
    }

    /// Timestamp for cells added without one (default: the server's clock).
    pub fn timestamp(mut self, timestamp: u64) -> Put {
        self.timestamp = Some(timestamp);
        self
    }

    /// Durability of this put.
    pub fn durability(mut self, durability: Durability) -> Put {
        self.durability = durability;
        self
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// True when the put has no cells (HBase rejects such puts).
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        if self.cells.is_empty() {
            return Err(crate::Error::InvalidInput(
                "a put needs at least one cell".into(),
            ));
        }
        // The row once, not per cell: the first failing check is the same as when every
        // cell checked the row first (the first cell would have failed on it).
        check_row(&self.row)?;
        for (family, qualifier, _, value) in &self.cells {
            check_family(family)?;
            check_cell_size(&self.row, family, qualifier, value, max_kv)?;
        }
        Ok(())
    }

    /// Memory this put holds while buffered, for write-buffer accounting: the put itself
    /// and a buffer entry's bookkeeping, its row (and the shared header a clone of it
    /// allocates), its cell list's capacity, and every cell's family, qualifier and value.
    /// Measured against the heap of a buffered YCSB-style put (tests/mutator_memory.rs), it
    /// is an upper bound: the budget's bytes are bytes the process holds, not a fraction.
    pub fn heap_size(&self) -> usize {
        /// A buffer entry's fields besides the mutation (mutator.rs `Entry`).
        const ENTRY: usize = 40;
        /// The header `Bytes` allocates when a row copied from a `Vec` is first cloned.
        const SHARED: usize = 32;
        const CELL: usize = std::mem::size_of::<(Bytes, Bytes, Option<u64>, Bytes)>();
        let data: usize = self
            .cells
            .iter()
            .map(|(f, q, _, v)| f.len() + q.len() + v.len())
            .sum();
        ENTRY
            + std::mem::size_of::<Mutation>()
            + self.row.len()
            + SHARED
            + self.cells.capacity() * CELL
            + data
    }

    /// Bytes [`encode_cells`](Self::encode_cells) appends to the cell block (exactly: every
    /// cell repeats the row).
    pub(crate) fn cellblock_len(&self) -> usize {
        self.cells
            .iter()
            .map(|(f, q, _, v)| encoded_len(&self.row, f, q, v))
            .sum()
    }

    /// Appends the cells to `block`; returns the mutation's header.
    pub(crate) fn encode_cells(&self, block: &mut BytesMut) -> CellBlockMutation<'_> {
        let default_ts = self.timestamp.unwrap_or(LATEST_TIMESTAMP);
        for (family, qualifier, ts, value) in &self.cells {
            let ts = ts.unwrap_or(default_ts);
            encode_cell(
                block,
                &self.row,
                family,
                qualifier,
                ts,
                CellType::Put,
                value,
            );
        }
        CellBlockMutation {
            row: &self.row,
            kind: MutationType::Put,
            timestamp: self.timestamp,
            durability: (self.durability != Durability::UseDefault)
                .then(|| self.durability.to_proto()),
            cells: self.cells.len() as i32,
        }
    }

    pub(crate) fn to_proto(&self) -> hbase_proto::MutationProto {
        let mut column_value: Vec<ColumnValue> = Vec::new();
        for (family, qualifier, ts, value) in &self.cells {
            let qv = QualifierValue {
                qualifier: Some(qualifier.clone()),
                value: Some(value.clone()),
                timestamp: *ts,
                ..Default::default()
            };
            add_qualifier_value(&mut column_value, family, qv);
        }
        let mut m = mutation_proto(&self.row, MutationType::Put, column_value, self.timestamp);
        if self.durability != Durability::UseDefault {
            m.set_durability(self.durability.to_proto());
        }
        m
    }
}
