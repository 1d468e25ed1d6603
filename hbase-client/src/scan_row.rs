//! What the scanner needs of the rows it hands out: [`RowResult`]s for a `ScanStream`,
//! [`RawRow`]s for a `RawScanStream`. One scanner serves both, each stream paying only for its
//! own row type (a `ScanStream` whose rows went through `RawRow`s first spent about 5% more
//! instructions a scan).

use bytes::Bytes;

use crate::cell::{Cell, CellRef};
use crate::error::Result;
use crate::ops::{raw_rows_from_scan, results_from_scan, RawRow, RowResult};

/// A row, or a piece of one, as the scanner assembles them.
pub(crate) trait ScanRow: Sized + Send + Sync + 'static {
    /// The rows of a scan response, each with its partial flag.
    fn rows_of(resp: &mut hbase_proto::ScanResponse, cellblock: Bytes)
        -> Result<Vec<(Self, bool)>>;

    /// The row key (empty for a row without cells).
    fn key(&self) -> Bytes;

    /// The number of cells.
    fn cell_count(&self) -> usize;

    /// The cells, as a vector to change (joining pieces, dropping cells seen before).
    fn cells_mut(&mut self) -> &mut Vec<Cell>;

    /// The first `n` cells as a piece of their own, which the caller gives its flags; this
    /// keeps the rest and its stale flag. (A `RowResult` keeps its row key even when no cell is
    /// left; a `RawRow`'s key is its first cell's, so the scanner keeps the key of the row in
    /// progress itself.)
    fn take_front(&mut self, n: usize) -> Self;

    /// The cells, for the scan's metrics.
    fn cell_refs(&self) -> impl Iterator<Item = CellRef<'_>>;

    /// The last cell.
    fn last_cell(&self) -> Option<Cell>;

    /// Answered by a secondary replica.
    fn stale(&self) -> bool;

    /// Marks the row as answered by a secondary replica, or not.
    fn mark_stale(&mut self, stale: bool);

    /// Marks the row as a piece that more cells of it follow.
    fn mark_more_cells(&mut self, more: bool);
}

/// The flag methods, which both row types have under the same names.
macro_rules! row_flags {
    () => {
        fn stale(&self) -> bool {
            self.is_stale()
        }

        fn mark_stale(&mut self, stale: bool) {
            self.set_stale(stale);
        }

        fn mark_more_cells(&mut self, more: bool) {
            self.set_more_cells(more);
        }
    };
}

impl ScanRow for RowResult {
    fn rows_of(
        resp: &mut hbase_proto::ScanResponse,
        cellblock: Bytes,
    ) -> Result<Vec<(Self, bool)>> {
        results_from_scan(resp, cellblock)
    }

    fn key(&self) -> Bytes {
        self.row.clone()
    }

    fn cell_count(&self) -> usize {
        self.cells.len()
    }

    fn cells_mut(&mut self) -> &mut Vec<Cell> {
        &mut self.cells
    }

    fn take_front(&mut self, n: usize) -> Self {
        let rest = self.cells.split_off(n.min(self.cells.len()));
        RowResult::from_cells(std::mem::replace(&mut self.cells, rest))
    }

    fn cell_refs(&self) -> impl Iterator<Item = CellRef<'_>> {
        self.cells.iter().map(Cell::as_cell_ref)
    }

    fn last_cell(&self) -> Option<Cell> {
        self.cells.last().cloned()
    }

    row_flags!();
}

impl ScanRow for RawRow {
    fn rows_of(
        resp: &mut hbase_proto::ScanResponse,
        cellblock: Bytes,
    ) -> Result<Vec<(Self, bool)>> {
        raw_rows_from_scan(resp, cellblock)
    }

    fn key(&self) -> Bytes {
        self.row_bytes()
    }

    fn cell_count(&self) -> usize {
        self.len()
    }

    fn cells_mut(&mut self) -> &mut Vec<Cell> {
        RawRow::cells_mut(self)
    }

    fn take_front(&mut self, n: usize) -> Self {
        if n >= self.len() {
            // All of them, as they came (a RawRow's key is its first cell's).
            let mut rest = RawRow::default();
            rest.set_stale(self.is_stale());
            return std::mem::replace(self, rest);
        }
        let rest = self.cells_mut().split_off(n);
        RawRow::from_cells(std::mem::replace(self.cells_mut(), rest))
    }

    fn cell_refs(&self) -> impl Iterator<Item = CellRef<'_>> {
        self.cells()
    }

    fn last_cell(&self) -> Option<Cell> {
        self.cells().last().map(|c| c.to_cell())
    }

    row_flags!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellType;
    use crate::ops::raw_from_proto;
    use crate::rpc::cellblock::encode_cell;

    fn qualifiers<R: ScanRow>(row: &R) -> Vec<Vec<u8>> {
        row.cell_refs().map(|c| c.qualifier().to_vec()).collect()
    }

    /// Cuts a stale row of five cells q0..q4 into 2, then the rest, then nothing.
    fn cut<R: ScanRow>(mut row: R, what: &str) -> R {
        row.mark_stale(true);
        let front = row.take_front(2);
        assert_eq!(
            qualifiers(&front),
            [b"q0".to_vec(), b"q1".to_vec()],
            "{what}"
        );
        assert_eq!(&front.key()[..], b"r", "{what}");
        assert_eq!(row.cell_count(), 3, "{what}");
        assert_eq!(row.cell_refs().next().unwrap().qualifier(), b"q2", "{what}");
        assert!(row.stale(), "{what}: the rest keeps its stale flag");
        let rest = row.take_front(10);
        assert_eq!(rest.cell_count(), 3, "{what}");
        assert_eq!(rest.last_cell().unwrap().qualifier(), b"q4", "{what}");
        assert_eq!(row.cell_count(), 0, "{what}");
        assert!(row.stale(), "{what}");
        row
    }

    #[test]
    fn both_row_types_cut_alike() {
        let cells: Vec<Cell> = (0..5)
            .map(|i| Cell::new("r", "f", format!("q{i}"), 1, CellType::Put, "v"))
            .collect();
        let emptied = cut(RowResult::from_cells(cells.clone()), "RowResult");
        assert_eq!(&emptied.key()[..], b"r", "a RowResult keeps its key");
        let mut block = bytes::BytesMut::new();
        for c in &cells {
            encode_cell(
                &mut block,
                c.row(),
                c.family(),
                c.qualifier(),
                1,
                CellType::Put,
                c.value(),
            );
        }
        let result = hbase_proto::Result {
            associated_cell_count: Some(5),
            ..Default::default()
        };
        let raw = raw_from_proto(result, block.freeze()).unwrap();
        cut(raw.clone(), "RawRow in its block");
        let mut decoded = raw;
        decoded.cells_mut();
        cut(decoded, "RawRow decoded");
    }
}
