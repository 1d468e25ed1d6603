//! A row kept as the server encoded it: its cells stay in the block they arrived in, one
//! buffer, and are decoded as they are read.

use std::fmt;

use bytes::Bytes;

use super::row_result::{result_from_proto, RowResult};
use super::scan_response::{rows_from_scan, RowDecoder};
use crate::cell::{Cell, CellRef};
use crate::error::{Error, Result};
use crate::rpc::cellblock::{self, CellBlockReader};

/// One row read by [`Table::get_raw`](crate::Table::get_raw), or one row (or piece of a row)
/// of [`Table::scan_raw`](crate::Table::scan_raw): the cells as the server sent them, in one
/// shared buffer.
///
/// That buffer is a slice of what the connection read, which a row keeps alive as long as it
/// lives (as a [`Cell`] does): up to 1 MiB or more after large scan answers. To keep a few
/// values long after the read, copy them out (`Bytes::copy_from_slice`).
///
/// A [`RowResult`] holds a [`Cell`] per cell, each a slice of the response with a reference
/// count of its own, in a vector allocated for the row. A `RawRow` of an answer whose cells
/// came in a cell block (as they do whenever the client asks for a codec, which it always
/// does) holds that block as it is: no allocation and one reference count for the whole row.
/// The block is checked when the row is made, so reading it cannot fail; each pass over the
/// cells ([`cells`](RawRow::cells), [`value`](RawRow::value), ...) reads their lengths again,
/// which costs a few instructions a cell. Cells a server sent inside the protobuf message
/// instead are kept as [`Cell`]s. The cells are [`CellRef`]s, borrowed from the row, with the
/// same accessors as a [`Cell`]; [`CellRef::to_cell`] and the `*_bytes` accessors share the
/// buffer. For a ten-cell row, `get_raw` costs about 1,000 instructions less than `get`.
///
/// ```no_run
/// # async fn example(table: hbase_client::Table) -> hbase_client::Result<()> {
/// use hbase_client::Get;
///
/// if let Some(row) = table.get_raw(Get::new("row1").family("cf")).await? {
///     for cell in row.cells() {
///         println!("{:?} = {:?}", cell.qualifier(), cell.value());
///     }
///     let value: Option<&[u8]> = row.value(b"cf", b"q");
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct RawRow {
    cells: RawCellsStore,
    stale: bool,
    /// More cells of this row follow in later results (batch or partial scans).
    more_cells: bool,
}

#[derive(Clone)]
enum RawCellsStore {
    /// `len` cells, back to back, as a cell block carries them; checked when stored.
    Block { block: Bytes, len: usize },
    /// Cells decoded: those a server sent inside the protobuf `Result` (not a cell block), and
    /// a scan's pieces of rows once joined, cut into batches or trimmed after a reopen.
    Cells(Vec<Cell>),
}

impl Default for RawCellsStore {
    fn default() -> Self {
        RawCellsStore::Cells(Vec::new())
    }
}

impl RawRow {
    /// The number of cells.
    pub fn len(&self) -> usize {
        match &self.cells {
            RawCellsStore::Block { len, .. } => *len,
            RawCellsStore::Cells(cells) => cells.len(),
        }
    }

    /// True when the row has no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The row key (empty for a row without cells).
    pub fn row(&self) -> &[u8] {
        self.cells().next().map_or(&[], |c| c.row())
    }

    /// The row key as an owned slice of the row's buffer (no copy; empty for a row without
    /// cells).
    pub fn row_bytes(&self) -> Bytes {
        self.cells()
            .next()
            .map(|c| c.row_bytes())
            .unwrap_or_default()
    }

    /// The cells, in the order the server returned them (family, qualifier, newest first).
    pub fn cells(&self) -> RawCells<'_> {
        RawCells(match &self.cells {
            RawCellsStore::Block { block, len } => CellsIter::Block {
                block,
                pos: 0,
                left: *len,
            },
            RawCellsStore::Cells(cells) => CellsIter::Cells(cells.iter()),
        })
    }

    /// The newest cell of `family:qualifier`, if the row has it.
    pub fn cell(&self, family: &[u8], qualifier: &[u8]) -> Option<CellRef<'_>> {
        self.cells()
            .find(|c| c.family() == family && c.qualifier() == qualifier)
    }

    /// The newest value of `family:qualifier`, if the row has it.
    pub fn value(&self, family: &[u8], qualifier: &[u8]) -> Option<&[u8]> {
        self.cell(family, qualifier).map(|c| c.value())
    }

    /// The newest value of `family:qualifier` as an owned `Bytes` that shares the row's
    /// buffer (no copy).
    pub fn value_bytes(&self, family: &[u8], qualifier: &[u8]) -> Option<Bytes> {
        self.cell(family, qualifier).map(|c| c.value_bytes())
    }

    /// True when a secondary replica answered (see
    /// [`Consistency::Timeline`](crate::Consistency::Timeline)): the row may miss recent
    /// writes. Always false for `STRONG` reads.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// True when this is a piece of a row and more of its cells follow in the next result, as
    /// [`RowResult::may_have_more_cells`]: scans with [`Scan::batch`](crate::Scan::batch) or
    /// [`Scan::allow_partial_results`](crate::Scan::allow_partial_results).
    pub fn may_have_more_cells(&self) -> bool {
        self.more_cells
    }

    /// The row as a [`RowResult`], its cells sharing this row's buffer (no copy).
    pub fn to_row_result(&self) -> RowResult {
        self.clone().into()
    }

    /// A row of decoded cells (inline cells of a `Result`; a scan's pieces after they were
    /// joined or cut).
    pub(crate) fn from_cells(cells: Vec<Cell>) -> RawRow {
        RawRow {
            cells: RawCellsStore::Cells(cells),
            stale: false,
            more_cells: false,
        }
    }

    /// The cells to change, decoded out of the block first if they are still in it: for the
    /// scanner's rare work on pieces of rows (joining, cutting, dropping cells seen before).
    pub(crate) fn cells_mut(&mut self) -> &mut Vec<Cell> {
        if let RawCellsStore::Block { .. } = &self.cells {
            self.cells = RawCellsStore::Cells(self.take_cells());
        }
        match &mut self.cells {
            RawCellsStore::Cells(cells) => cells,
            RawCellsStore::Block { .. } => unreachable!("decoded just above"),
        }
    }

    /// The cells as a vector, taken out of the row: those already decoded as they are, those
    /// in a block decoded by the cell decoder (which costs less than a `CellRef` each made
    /// into a `Cell`).
    fn take_cells(&mut self) -> Vec<Cell> {
        Self::decode(std::mem::take(&mut self.cells))
    }

    fn decode(store: RawCellsStore) -> Vec<Cell> {
        match store {
            RawCellsStore::Cells(cells) => cells,
            RawCellsStore::Block { block, len } => {
                let mut reader = CellBlockReader::new(block);
                let mut cells = Vec::with_capacity(len);
                // The block was checked when the row was made, so every cell decodes; were one
                // not to, the row would end there, as its iterator does, rather than panic.
                while cells.len() < len {
                    match reader.next_cell() {
                        Ok(Some(cell)) => cells.push(cell),
                        Ok(None) | Err(_) => break,
                    }
                }
                cells
            }
        }
    }

    pub(crate) fn set_stale(&mut self, stale: bool) {
        self.stale = stale;
    }

    pub(crate) fn set_more_cells(&mut self, more: bool) {
        self.more_cells = more;
    }
}

impl From<RawRow> for RowResult {
    /// Cells already decoded move over as they are; cells in a block are decoded.
    fn from(row: RawRow) -> RowResult {
        // Taken apart, so that nothing is left to drop.
        let RawRow {
            cells,
            stale,
            more_cells,
        } = row;
        let mut row = RowResult::from_cells(RawRow::decode(cells));
        row.set_stale(stale);
        row.set_more_cells(more_cells);
        row
    }
}

impl PartialEq for RawRow {
    fn eq(&self, other: &RawRow) -> bool {
        self.stale == other.stale
            && self.more_cells == other.more_cells
            && self.len() == other.len()
            && self.cells().eq(other.cells())
    }
}

impl Eq for RawRow {}

impl fmt::Debug for RawRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawRow")
            .field("cells", &self.cells().collect::<Vec<_>>())
            .field("stale", &self.stale)
            .field("more_cells", &self.more_cells)
            .finish()
    }
}

/// The cells of a [`RawRow`], borrowed from it ([`RawRow::cells`]).
#[derive(Clone)]
pub struct RawCells<'a>(CellsIter<'a>);

#[derive(Clone)]
enum CellsIter<'a> {
    Block {
        block: &'a Bytes,
        pos: usize,
        left: usize,
    },
    Cells(std::slice::Iter<'a, Cell>),
}

impl<'a> Iterator for RawCells<'a> {
    type Item = CellRef<'a>;

    fn next(&mut self) -> Option<CellRef<'a>> {
        match &mut self.0 {
            CellsIter::Block { block, pos, left } => {
                if *left == 0 {
                    return None;
                }
                // Checked when the row was made: no error here (stop rather than panic if
                // one came anyway).
                let (end, layout) = cellblock::cell_at(block.get(*pos..)?).ok()?;
                let kv = block.get(*pos + 12..*pos + end)?;
                *pos += end;
                *left -= 1;
                Some(CellRef::new(kv, block, layout))
            }
            CellsIter::Cells(cells) => cells.next().map(Cell::as_cell_ref),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.0 {
            CellsIter::Block { left, .. } => *left,
            CellsIter::Cells(cells) => cells.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for RawCells<'_> {}

/// Decodes one `Result` of a get into a [`RawRow`]: `associated_cell_count` cells at the
/// start of `cellblock` (the usual shape, kept as they are), or its inline cells followed by
/// those (decoded into cells).
pub(crate) fn raw_from_proto(r: hbase_proto::Result, mut cellblock: Bytes) -> Result<RawRow> {
    raw_from_result(r, &mut cellblock)
}

/// Decodes one `Result` whose `associated_cell_count` cells start `rest`, and takes them off
/// its front. A row of the whole block takes the block itself (no reference count).
/// Inlined, as the one function it was before scans shared it (a call and a `Bytes` moved
/// through it cost a get about 40 instructions).
#[inline(always)]
fn raw_from_result(r: hbase_proto::Result, rest: &mut Bytes) -> Result<RawRow> {
    if !r.cell.is_empty() {
        let mut reader = CellBlockReader::new(std::mem::take(rest));
        let row = result_from_proto(r, &mut reader)?;
        *rest = reader.into_remaining();
        let stale = row.is_stale();
        let mut raw = RawRow::from_cells(row.cells);
        raw.stale = stale;
        return Ok(raw);
    }
    let associated = r.associated_cell_count.unwrap_or(0);
    if associated < 0 {
        return Err(Error::Protocol(format!(
            "negative associated cell count {associated}"
        )));
    }
    let mut raw = take_block_row(rest, associated as usize)?;
    raw.stale = r.stale.unwrap_or(false);
    Ok(raw)
}

/// The row of the `len` cells that start `rest`, checked and taken off its front.
#[inline(always)]
fn take_block_row(rest: &mut Bytes, len: usize) -> Result<RawRow> {
    let used = cellblock::check_cells(rest, len)?;
    let block = if used == rest.len() {
        std::mem::take(rest)
    } else {
        rest.split_to(used)
    };
    Ok(RawRow {
        cells: RawCellsStore::Block { block, len },
        stale: false,
        more_cells: false,
    })
}

/// Decodes the rows of a ScanResponse, whichever shape the server chose, keeping cells in the
/// block they came in (as [`results_from_scan`](super::results_from_scan) does for
/// [`RowResult`]s, by the same rule).
pub(crate) fn raw_rows_from_scan(
    resp: &mut hbase_proto::ScanResponse,
    cellblock: Bytes,
) -> Result<Vec<(RawRow, bool)>> {
    rows_from_scan::<RawRows>(resp, cellblock)
}

/// Takes [`RawRow`]s out of a scan answer: what is left of its cell block. Its steps are a
/// few instructions a row around a check of the row's cells, so they are inlined into the
/// loop (as they are into a get); `ResultRows`' steps decode every cell, and inlining them
/// would gain nothing.
pub(crate) struct RawRows(Bytes);

impl RowDecoder for RawRows {
    type Row = RawRow;

    fn new(cellblock: Bytes) -> Self {
        RawRows(cellblock)
    }

    #[inline(always)]
    fn counted(&mut self, n: usize) -> Result<RawRow> {
        take_block_row(&mut self.0, n)
    }

    #[inline(always)]
    fn result(&mut self, r: hbase_proto::Result) -> Result<RawRow> {
        raw_from_result(r, &mut self.0)
    }

    fn mark_stale(row: &mut RawRow) {
        row.stale = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellType;
    use crate::rpc::cellblock::encode_cell;
    use bytes::BytesMut;
    use proptest::prelude::*;

    /// Row, family, qualifier, timestamp, value.
    type Spec<'a> = (&'a [u8], &'a [u8], &'a [u8], u64, &'a [u8]);

    fn block_of(cells: &[Spec<'_>]) -> Bytes {
        let mut b = BytesMut::new();
        for &(row, fam, q, ts, v) in cells {
            encode_cell(&mut b, row, fam, q, ts, CellType::Put, v);
        }
        b.freeze()
    }

    fn result(n: i32) -> hbase_proto::Result {
        hbase_proto::Result {
            associated_cell_count: Some(n),
            ..Default::default()
        }
    }

    #[test]
    fn a_raw_row_reads_what_a_row_result_holds() {
        let block = block_of(&[
            (b"r1", b"f", b"a", 7, b"1"),
            (b"r1", b"f", b"b", 7, b"22"),
            (b"r1", b"g", b"", 3, b""),
        ]);
        let raw = raw_from_proto(result(3), block.clone()).unwrap();
        let row = result_from_proto(result(3), &mut CellBlockReader::new(block)).unwrap();
        assert_eq!(raw.len(), 3);
        assert_eq!(raw.row(), b"r1");
        assert_eq!(&raw.row_bytes()[..], b"r1");
        assert_eq!(raw.value(b"f", b"b"), Some(&b"22"[..]));
        assert_eq!(raw.value(b"g", b""), Some(&b""[..]));
        assert_eq!(raw.value(b"f", b"c"), None);
        assert_eq!(raw.value_bytes(b"f", b"b"), row.value_bytes(b"f", b"b"));
        assert_eq!(raw.to_row_result(), row);
        let cells: Vec<Cell> = raw.cells().map(|c| c.to_cell()).collect();
        assert_eq!(cells, row.cells);
        assert_eq!(raw.cells().len(), 3);
        // Owned parts share the buffer.
        let v = raw.cell(b"f", b"b").unwrap().value_bytes();
        assert_eq!(&v[..], b"22");
    }

    #[test]
    fn cells_past_the_announced_count_are_not_part_of_the_row() {
        let block = block_of(&[(b"r", b"f", b"a", 1, b"x"), (b"r", b"f", b"b", 1, b"y")]);
        let raw = raw_from_proto(result(1), block).unwrap();
        assert_eq!(raw.len(), 1);
        assert_eq!(raw.cells().count(), 1);
    }

    #[test]
    fn a_short_or_negative_count_is_a_protocol_error() {
        let block = block_of(&[(b"r", b"f", b"a", 1, b"x")]);
        for n in [2, -1] {
            let err = raw_from_proto(result(n), block.clone()).unwrap_err();
            assert!(matches!(err, Error::Protocol(_)), "{n}: {err}");
        }
    }

    /// The inline cell sorts after the block's (z, y), so a row that sorted its cells
    /// instead of keeping their order fails.
    #[test]
    fn inline_cells_come_first_then_the_block() {
        let pb = hbase_proto::Result {
            cell: vec![super::super::row_result::proto_put(
                b"r", b"f", b"z", 5, b"1",
            )],
            associated_cell_count: Some(1),
            stale: Some(true),
            ..Default::default()
        };
        let block = block_of(&[(b"r", b"f", b"y", 5, b"2")]);
        let raw = raw_from_proto(pb, block).unwrap();
        let order: Vec<&[u8]> = raw.cells().map(|c| c.qualifier()).collect();
        assert_eq!(order, [&b"z"[..], &b"y"[..]]);
        assert_eq!(raw.len(), 2);
        assert!(raw.is_stale());
        assert_eq!(raw.value(b"f", b"z"), Some(&b"1"[..]));
        assert_eq!(raw.value(b"f", b"y"), Some(&b"2"[..]));
    }

    #[test]
    fn decoded_cells_and_flags_carry_over_to_a_row_result() {
        let block = block_of(&[(b"r", b"f", b"a", 1, b"x"), (b"r", b"f", b"b", 1, b"y")]);
        let mut raw = raw_from_proto(result(2), block).unwrap();
        raw.set_more_cells(true);
        raw.set_stale(true);
        let whole = RowResult::from(raw.clone());
        assert!(whole.may_have_more_cells() && whole.is_stale());
        assert_eq!(whole.cells.len(), 2);
        // Decoded out of the block and cut: the row still reads the same, and converts whole.
        let before: Vec<Cell> = raw.cells().map(|c| c.to_cell()).collect();
        assert_eq!(raw.cells_mut(), &before);
        raw.cells_mut().truncate(1);
        assert_eq!(raw.len(), 1);
        assert_eq!(raw.value(b"f", b"b"), None);
        let cut = RowResult::from(raw);
        assert_eq!(cut.cells, before[..1]);
        assert_eq!(&cut.row[..], b"r");
        assert!(cut.may_have_more_cells() && cut.is_stale());
    }

    proptest! {
        /// On any bytes and count, the raw row is made exactly when the cell decoder accepts
        /// the same cells, and holds the same cells.
        #[test]
        fn a_raw_row_agrees_with_the_cell_decoder_on_any_bytes(
            data in proptest::collection::vec(any::<u8>(), 0..200),
            n in 0i32..6,
            prefix_cells in 0usize..4,
        ) {
            // Well-formed cells first, so that the count is reached as often as not.
            let mut b = BytesMut::new();
            for i in 0..prefix_cells {
                encode_cell(&mut b, b"row", b"f", &[b'q', i as u8], i as u64, CellType::Put, &data[..data.len().min(i * 7)]);
            }
            b.extend_from_slice(&data);
            let block = b.freeze();
            let raw = raw_from_proto(result(n), block.clone());
            let cells = CellBlockReader::new(block).take(n as usize);
            match (raw, cells) {
                (Ok(raw), Ok(cells)) => {
                    let ours: Vec<Cell> = raw.cells().map(|c| c.to_cell()).collect();
                    prop_assert_eq!(ours, cells);
                    prop_assert_eq!(raw.len(), n as usize);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                (raw, cells) => prop_assert!(false, "raw {:?}, cells {:?}", raw.map(|r| r.len()), cells.map(|c| c.len())),
            }
        }
    }
}
