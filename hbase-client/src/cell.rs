//! Cells: the unit of data HBase stores, one (row, family, qualifier, timestamp, type) → value.

use bytes::Bytes;

/// The kind of a cell, as HBase encodes it in the last byte of a KeyValue key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellType {
    /// A value written by a put.
    Put,
    /// Deletes one version of a column.
    Delete,
    /// Deletes one version across a family.
    DeleteFamilyVersion,
    /// Deletes all versions of a column up to a timestamp.
    DeleteColumn,
    /// Deletes all columns of a family up to a timestamp.
    DeleteFamily,
    /// Any other type byte, kept as is (e.g. the MINIMUM/MAXIMUM sentinels).
    Other(u8),
}

impl CellType {
    /// The KeyValue type byte.
    pub fn code(self) -> u8 {
        match self {
            CellType::Put => 4,
            CellType::Delete => 8,
            CellType::DeleteFamilyVersion => 10,
            CellType::DeleteColumn => 12,
            CellType::DeleteFamily => 14,
            CellType::Other(b) => b,
        }
    }

    /// The type for a KeyValue type byte.
    pub fn from_code(code: u8) -> CellType {
        match code {
            4 => CellType::Put,
            8 => CellType::Delete,
            10 => CellType::DeleteFamilyVersion,
            12 => CellType::DeleteColumn,
            14 => CellType::DeleteFamily,
            other => CellType::Other(other),
        }
    }
}

/// One HBase cell. All byte fields are cheap `Bytes` slices, usually into the response buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Row key.
    pub row: Bytes,
    /// Column family.
    pub family: Bytes,
    /// Column qualifier.
    pub qualifier: Bytes,
    /// Version timestamp in milliseconds since the epoch.
    pub timestamp: u64,
    /// Put or one of the delete markers.
    pub cell_type: CellType,
    /// The value.
    pub value: Bytes,
}

impl Cell {
    /// The order of cells in a region, HBase's cell comparator on the key: row, family and
    /// qualifier ascending (as bytes), then timestamp descending (newest first), then type
    /// byte descending (a delete marker before the put it covers). The value plays no part.
    pub(crate) fn key_order(&self, other: &Cell) -> std::cmp::Ordering {
        self.row
            .cmp(&other.row)
            .then_with(|| self.family.cmp(&other.family))
            .then_with(|| self.qualifier.cmp(&other.qualifier))
            .then_with(|| other.timestamp.cmp(&self.timestamp))
            .then_with(|| other.cell_type.code().cmp(&self.cell_type.code()))
    }
}

/// `i64::MAX`: HBase's "latest timestamp", which the server replaces with its own clock.
pub const LATEST_TIMESTAMP: u64 = i64::MAX as u64;
