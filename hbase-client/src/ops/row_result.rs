//! Rows read back from HBase, decoded from either response shape: cells inside the protobuf
//! `Result`, or cells in the cell block counted by `associated_cell_count`/`cells_per_result`.

use bytes::Bytes;

use super::scan_response::{rows_from_scan, RowDecoder};
use crate::cell::{Cell, CellType};
use crate::error::{Error, Result};
use crate::rpc::cellblock::CellBlockReader;

/// The cells of one row, sorted as the server returned them (family, qualifier, newest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowResult {
    /// The row key.
    pub row: Bytes,
    /// The cells.
    pub cells: Vec<Cell>,
    /// Answered by a secondary replica (a `TIMELINE` read), so possibly behind.
    stale: bool,
    /// More cells of this row follow in later results (batch or partial scans).
    more_cells: bool,
}

impl RowResult {
    /// The newest value of `family:qualifier`, if the row has it.
    pub fn value(&self, family: &[u8], qualifier: &[u8]) -> Option<&[u8]> {
        self.cell(family, qualifier).map(Cell::value)
    }

    /// The newest value of `family:qualifier` as an owned `Bytes` that shares the cell's
    /// buffer (no copy).
    pub fn value_bytes(&self, family: &[u8], qualifier: &[u8]) -> Option<Bytes> {
        self.cell(family, qualifier).map(Cell::value_bytes)
    }

    /// The newest cell of `family:qualifier`, if the row has it.
    pub fn cell(&self, family: &[u8], qualifier: &[u8]) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.family() == family && c.qualifier() == qualifier)
    }

    /// True when the row has no cells.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// True when a secondary replica answered (see
    /// [`Consistency::Timeline`](crate::Consistency::Timeline)): the row may miss recent
    /// writes. Always false for `STRONG` reads.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// True when this is a piece of a row and more of its cells follow in the next result
    /// (Java's `mayHaveMoreCellsInRow`): scans with [`Scan::batch`](crate::Scan::batch) or
    /// [`Scan::allow_partial_results`](crate::Scan::allow_partial_results). The last piece
    /// of a row, and every whole row, says false.
    pub fn may_have_more_cells(&self) -> bool {
        self.more_cells
    }

    pub(crate) fn from_cells(cells: Vec<Cell>) -> RowResult {
        let row = cells.first().map(Cell::row_bytes).unwrap_or_default();
        RowResult {
            row,
            cells,
            stale: false,
            more_cells: false,
        }
    }

    pub(crate) fn set_stale(&mut self, stale: bool) {
        self.stale = stale;
    }

    pub(crate) fn set_more_cells(&mut self, more: bool) {
        self.more_cells = more;
    }
}

fn cell_from_proto(c: hbase_proto::Cell) -> Cell {
    Cell::new(
        c.row.as_deref().unwrap_or_default(),
        c.family.as_deref().unwrap_or_default(),
        c.qualifier.as_deref().unwrap_or_default(),
        c.timestamp.unwrap_or(crate::cell::LATEST_TIMESTAMP),
        CellType::from_code(c.cell_type.unwrap_or(4) as u8),
        c.value.as_deref().unwrap_or_default(),
    )
}

/// Decodes one `Result`: its inline cells, then `associated_cell_count` cells from `block`.
pub(crate) fn result_from_proto(
    r: hbase_proto::Result,
    block: &mut CellBlockReader,
) -> Result<RowResult> {
    let associated = r.associated_cell_count.unwrap_or(0);
    if associated < 0 {
        return Err(Error::Protocol(format!(
            "negative associated cell count {associated}"
        )));
    }
    let stale = r.stale.unwrap_or(false);
    // The usual shape is all cells in the block: take them as one list, not into a second.
    let cells = if r.cell.is_empty() {
        block.take(associated as usize)?
    } else {
        let mut cells: Vec<Cell> = r.cell.into_iter().map(cell_from_proto).collect();
        cells.extend(block.take(associated as usize)?);
        cells
    };
    let mut row = RowResult::from_cells(cells);
    row.stale = stale;
    Ok(row)
}

/// Decodes the rows of a ScanResponse, whichever shape the server chose. The flag says whether
/// each row is partial (more cells of it follow in a later response); a stale response (from
/// a secondary replica) makes every row stale.
pub fn results_from_scan(
    resp: &mut hbase_proto::ScanResponse,
    cellblock: Bytes,
) -> Result<Vec<(RowResult, bool)>> {
    rows_from_scan::<ResultRows>(resp, cellblock)
}

/// Takes [`RowResult`]s out of a scan answer, every cell decoded.
pub(crate) struct ResultRows(CellBlockReader);

impl RowDecoder for ResultRows {
    type Row = RowResult;

    fn new(cellblock: Bytes) -> Self {
        ResultRows(CellBlockReader::new(cellblock))
    }

    fn counted(&mut self, n: usize) -> Result<RowResult> {
        Ok(RowResult::from_cells(self.0.take(n)?))
    }

    fn result(&mut self, r: hbase_proto::Result) -> Result<RowResult> {
        result_from_proto(r, &mut self.0)
    }

    fn mark_stale(row: &mut RowResult) {
        row.stale = true;
    }
}

/// A put's cell as a server sends it inside a protobuf `Result` (for tests).
#[cfg(test)]
pub(crate) fn proto_put(
    row: &'static [u8],
    family: &'static [u8],
    qualifier: &'static [u8],
    timestamp: u64,
    value: &'static [u8],
) -> hbase_proto::Cell {
    hbase_proto::Cell {
        row: Some(Bytes::from_static(row)),
        family: Some(Bytes::from_static(family)),
        qualifier: Some(Bytes::from_static(qualifier)),
        timestamp: Some(timestamp),
        cell_type: Some(4),
        value: Some(Bytes::from_static(value)),
        tags: None,
    }
}
