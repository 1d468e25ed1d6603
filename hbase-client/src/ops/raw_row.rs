//! A row kept as the server encoded it: its cells stay in the block they arrived in, one
//! buffer, and are decoded as they are read.

use std::fmt;

use bytes::Bytes;

use super::row_result::{result_from_proto, RowResult};
use crate::cell::{Cell, CellRef};
use crate::error::{Error, Result};
use crate::rpc::cellblock::{self, CellBlockReader};

/// One row read by [`Table::get_raw`](crate::Table::get_raw): the cells as the server sent
/// them, in one shared buffer.
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
}

#[derive(Clone)]
enum RawCellsStore {
    /// `len` cells, back to back, as a cell block carries them; checked when stored.
    Block { block: Bytes, len: usize },
    /// Cells a server sent inside the protobuf `Result` (not a cell block).
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

    /// The row as a [`RowResult`], its cells sharing this row's buffer (no copy).
    pub fn to_row_result(&self) -> RowResult {
        let mut row = RowResult::from_cells(self.cells().map(|c| c.to_cell()).collect());
        row.set_stale(self.stale);
        row
    }
}

impl From<RawRow> for RowResult {
    fn from(row: RawRow) -> RowResult {
        row.to_row_result()
    }
}

impl PartialEq for RawRow {
    fn eq(&self, other: &RawRow) -> bool {
        self.stale == other.stale && self.len() == other.len() && self.cells().eq(other.cells())
    }
}

impl Eq for RawRow {}

impl fmt::Debug for RawRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawRow")
            .field("cells", &self.cells().collect::<Vec<_>>())
            .field("stale", &self.stale)
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
    if !r.cell.is_empty() {
        let row = result_from_proto(r, &mut CellBlockReader::new(cellblock))?;
        let stale = row.is_stale();
        return Ok(RawRow {
            cells: RawCellsStore::Cells(row.cells),
            stale,
        });
    }
    let associated = r.associated_cell_count.unwrap_or(0);
    if associated < 0 {
        return Err(Error::Protocol(format!(
            "negative associated cell count {associated}"
        )));
    }
    let len = associated as usize;
    let used = cellblock::check_cells(&cellblock, len)?;
    cellblock.truncate(used);
    Ok(RawRow {
        cells: RawCellsStore::Block {
            block: cellblock,
            len,
        },
        stale: r.stale.unwrap_or(false),
    })
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

    #[test]
    fn inline_cells_come_first_then_the_block() {
        let pb = hbase_proto::Result {
            cell: vec![super::super::row_result::proto_put(
                b"r", b"f", b"a", 5, b"1",
            )],
            associated_cell_count: Some(1),
            stale: Some(true),
            ..Default::default()
        };
        let block = block_of(&[(b"r", b"f", b"b", 5, b"2")]);
        let raw = raw_from_proto(pb, block).unwrap();
        let order: Vec<&[u8]> = raw.cells().map(|c| c.qualifier()).collect();
        assert_eq!(order, [&b"a"[..], &b"b"[..]]);
        assert_eq!(raw.len(), 2);
        assert!(raw.is_stale());
        assert_eq!(raw.value(b"f", b"a"), Some(&b"1"[..]));
        assert_eq!(raw.value(b"f", b"b"), Some(&b"2"[..]));
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
