//! `Put`: write cells to one row.

use std::num::NonZeroU32;

use bytes::{Bytes, BytesMut};
use hbase_proto::mutation_proto::{self, column_value::QualifierValue, ColumnValue, MutationType};

use super::{
    add_qualifier_value, java_heap, mutation_proto, row_heap_size, CellBlockMutation, Mutation,
};
use crate::cell::{put_key_value, Cell, CellType, KEY_INFRASTRUCTURE, LATEST_TIMESTAMP};
use crate::error::Result;
use crate::rpc::cellblock::{check_family, check_row, check_size, family_error, CellBlockReader};

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

/// [`Put`]'s `java_heap` when it is not kept as cells are added: computed when asked.
const NOT_KEPT: u32 = u32::MAX;

/// The most the first cell of a [`Put::with_capacity`] put reserves for the cells to come.
const RESERVE_HINT_MAX: usize = 64 * 1024;

/// Writes cells to one row.
///
/// The cells are copied into the put as they are added, encoded as a `Multi` request's cell
/// block carries them (each with its own copy of the row, as HBase's KeyValues): a put is one
/// buffer, which a request copies in one piece.
// Before, a cell was three reference-counted slices (family, qualifier, value), whose counts a
// request's answer decremented on cold memory, cell by cell: about 8% of a buffered update's
// CPU (README, Round 15).
#[derive(Clone)]
pub struct Put {
    pub(crate) row: Bytes,
    /// The encoded cells; those added without a timestamp carry [`LATEST_TIMESTAMP`] (the
    /// put's own timestamp replaces it when the cells are sent).
    cells: Vec<u8>,
    /// The put's timestamp ([`LATEST_TIMESTAMP`]: none, the server's clock).
    timestamp: u64,
    /// How many cells `cells` holds.
    count: u32,
    /// The first family HBase refuses (empty, or longer than 127 bytes, so that its length
    /// may not even fit the encoding's byte): its length plus one, reported by `validate`.
    bad_family: Option<NonZeroU32>,
    /// Cells [`Put::with_capacity`] was told to expect: the first cell reserves room for
    /// that many of its size.
    expected: u16,
    durability: Durability,
    /// A cell too large for the encoding's 32-bit lengths was added.
    oversized: bool,
    /// Java's `Put.heapSize()` of this put ([`Put::heap_size`]), kept as cells are added
    /// while they are all of one family (so that a mutator's dispatcher reads it from the put
    /// alone, which its entry holds), or [`NOT_KEPT`]: cells of several families (or 4 GiB or
    /// more), computed from the cells when asked. (No flag of its own: one more byte made a
    /// put, and a mutator's entry, 8 bytes larger.)
    java_heap: u32,
}

impl Put {
    /// An empty put for `row`; add cells with [`Put::add`].
    pub fn new(row: impl Into<Bytes>) -> Put {
        let row: Bytes = row.into();
        // An empty put's: its row (`count_java_heap` adds each cell).
        let java_heap = java_heap::row(row.len()).min(NOT_KEPT as usize) as u32;
        Put {
            row,
            cells: Vec::new(),
            timestamp: LATEST_TIMESTAMP,
            count: 0,
            bad_family: None,
            expected: 1,
            durability: Durability::UseDefault,
            oversized: false,
            java_heap,
        }
    }

    /// An empty put for `row` that will have about `cells` cells of similar size: the first
    /// cell added reserves room for that many cells of its own size (up to 64 KiB in all), so
    /// that adding the others does not grow (and copy) the put's buffer.
    pub fn with_capacity(row: impl Into<Bytes>, cells: usize) -> Put {
        Put {
            expected: cells.clamp(1, u16::MAX as usize) as u16,
            ..Put::new(row)
        }
    }

    /// The row key.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// Adds `family:qualifier = value` at the put's timestamp. The bytes are copied into the
    /// put.
    pub fn add(
        mut self,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Put {
        self.add_cell(family.as_ref(), qualifier.as_ref(), None, value.as_ref());
        self
    }

    /// Adds `family:qualifier` with a value of `len` bytes that `fill` writes in place (it
    /// is given them zeroed): no buffer of the value's own. The timestamp is the put's.
    pub fn add_with(
        mut self,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Put {
        fill(self.push_cell(family.as_ref(), qualifier.as_ref(), None, len));
        self
    }

    /// Adds `family:qualifier = value` at an explicit timestamp. [`LATEST_TIMESTAMP`] is
    /// no timestamp: such a cell takes the put's, as one added with [`Put::add`].
    pub fn add_at(
        mut self,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        timestamp: u64,
        value: impl AsRef<[u8]>,
    ) -> Put {
        self.add_cell(
            family.as_ref(),
            qualifier.as_ref(),
            Some(timestamp),
            value.as_ref(),
        );
        self
    }

    /// [`Put::add`] and [`Put::add_at`]: the value copied in. By reference and inlined: a put
    /// moved in and out of an outlined call cost about 31 instructions a cell
    /// (`benches/instructions`, 10 cells a put: 9,419 against 9,110 per put with this form).
    #[inline]
    fn add_cell(&mut self, family: &[u8], qualifier: &[u8], ts: Option<u64>, value: &[u8]) {
        self.push_cell(family, qualifier, ts, value.len())
            .copy_from_slice(value);
    }

    /// Timestamp for cells added without one, before or after this call (default, and
    /// [`LATEST_TIMESTAMP`]: the server's clock).
    pub fn timestamp(mut self, timestamp: u64) -> Put {
        self.timestamp = timestamp;
        self
    }

    /// Durability of this put.
    pub fn durability(mut self, durability: Durability) -> Put {
        self.durability = durability;
        self
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the put has no cells (HBase rejects such puts).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Encodes a cell's key and lengths at the end of `cells`; returns its value's room,
    /// zeroed.
    fn push_cell(
        &mut self,
        family: &[u8],
        qualifier: &[u8],
        timestamp: Option<u64>,
        value_len: usize,
    ) -> &mut [u8] {
        if self.bad_family.is_none() && check_family(family).is_err() {
            let len = family.len().min(u32::MAX as usize - 1) as u32;
            self.bad_family = NonZeroU32::new(len + 1);
        }
        let key_len = KEY_INFRASTRUCTURE + self.row.len() + family.len() + qualifier.len();
        // Saturating: a length no buffer can hold fails in `reserve` below, not in arithmetic.
        let len = key_len.saturating_add(value_len).saturating_add(12);
        if len - 4 > u32::MAX as usize {
            // Refused by `validate`; its heap size is then an estimate (`heap_size_of_cells`).
            self.oversized = true;
            self.java_heap = NOT_KEPT;
        } else {
            // Below 4 GiB, so the figure's arithmetic cannot overflow (and the compiler, which
            // sees it, drops `java_heap`'s saturation checks here).
            self.count_java_heap(family, len - 4);
        }
        if self.cells.capacity() - self.cells.len() < len {
            // The hint counts for the first cell only, and only while it asks for little.
            let expected = self.expected as usize;
            let room = if self.count == 0 && len.saturating_mul(expected) <= RESERVE_HINT_MAX {
                len * expected
            } else {
                len
            };
            self.cells.reserve(room);
        }
        // Lengths that do not fit their fields are truncated here; `validate` refuses such a
        // put before anything is sent.
        let mut lengths = [0u8; 12];
        lengths[..4].copy_from_slice(&((8 + key_len + value_len) as u32).to_be_bytes());
        lengths[4..8].copy_from_slice(&(key_len as u32).to_be_bytes());
        lengths[8..].copy_from_slice(&(value_len as u32).to_be_bytes());
        put_key_value(
            &mut self.cells,
            &lengths,
            &self.row,
            family,
            qualifier,
            timestamp.unwrap_or(LATEST_TIMESTAMP),
            CellType::Put,
            &[],
        );
        self.count += 1;
        let start = self.cells.len();
        self.cells.resize(start.saturating_add(value_len), 0);
        &mut self.cells[start..]
    }

    pub(crate) fn validate(&self, max_kv: usize) -> Result<()> {
        if self.count == 0 {
            return Err(crate::Error::InvalidInput(
                "a put needs at least one cell".into(),
            ));
        }
        check_row(&self.row)?;
        if let Some(len) = self.bad_family {
            return Err(family_error(len.get() as usize - 1));
        }
        if self.oversized {
            // Whatever the limit (even none): the cell block's lengths are 32 bits.
            return Err(crate::Error::InvalidInput(format!(
                "KeyValue size too large: over {} bytes, which a cell's 32-bit lengths cannot say",
                u32::MAX
            )));
        }
        // Each cell's first length is its KeyValue size (key, value and their two lengths).
        let mut rest = &self.cells[..];
        while let Some(size) = rest.get(..4) {
            let size = u32::from_be_bytes(size.try_into().expect("4 bytes")) as usize;
            check_size(size, max_kv)?;
            rest = rest.get(4 + size..).unwrap_or_default();
        }
        Ok(())
    }

    /// Adds a cell of `family` whose `KeyValue` is `kv_len` bytes to `java_heap` (before the
    /// cell is encoded). Kept only while every cell is of the first cell's family, the common
    /// case: its list's size is then the put's cell count, so a cell adds its `KeyValue` and,
    /// every other cell, 8 bytes of references. A cell of another family leaves the figure to
    /// [`Put::heap_size`], which groups the cells as Java's family map does.
    #[inline]
    fn count_java_heap(&mut self, family: &[u8], kv_len: usize) {
        let cell = java_heap::cell(kv_len);
        if self.count == 0 {
            let first =
                java_heap::row(self.row.len()).saturating_add(java_heap::family(family.len(), 1));
            self.java_heap = first.saturating_add(cell).min(NOT_KEPT as usize) as u32;
            return;
        }
        if self.java_heap == NOT_KEPT {
            return;
        }
        // The list's references grow by 8 bytes at every odd cell count (aligned arrays).
        let references = (!self.count as usize & 1) * 8;
        let kept = (self.java_heap as u64).saturating_add(cell.saturating_add(references) as u64);
        // At 4 GiB or more it is not kept either: computed when asked.
        self.java_heap = if kept < NOT_KEPT as u64 && self.of_first_family(family) {
            kept as u32
        } else {
            NOT_KEPT
        };
    }

    /// Where a cell's family-length byte is, from the cell's start: after its three lengths
    /// (the cell's, its key's and its value's: 12 bytes), the row's length (2) and the row.
    #[inline]
    fn family_at(&self) -> usize {
        12 + 2 + self.row.len()
    }

    /// True when `family` is the first cell's (the put has one).
    #[inline]
    fn of_first_family(&self, family: &[u8]) -> bool {
        let at = self.family_at();
        match self.cells.get(at..at + 1 + family.len()) {
            Some([len, first @ ..]) => *len as usize == family.len() && same_short(first, family),
            _ => false,
        }
    }

    /// Java's `Mutation.heapSize()` for this put, exactly: what hbase-client 2.x counts for
    /// the same `Put` (its objects on a 64-bit JVM with compressed references). A
    /// [`BufferedMutator`](crate::BufferedMutator) adds this up against its
    /// [`write_buffer_size`](crate::MutatorConfig::write_buffer_size), as Java's adds up
    /// `heapSize()` against `hbase.client.write.buffer`, so both flush after as many puts.
    /// Not the memory this put holds here: the client's write budget counts that
    /// ([`BufferedMutator::budgeted_size`](crate::BufferedMutator::budgeted_size)).
    ///
    /// A YCSB put (a 23-byte row, ten 6-byte qualifiers of 100 bytes) is 2,384 bytes. Kept as
    /// cells are added while they are all of one family (reading it reads one field); a put
    /// of several families reads its cells' lengths and families each time it is asked,
    /// without allocating (up to 8 families).
    #[inline]
    pub fn heap_size(&self) -> usize {
        if self.java_heap != NOT_KEPT {
            return self.java_heap as usize;
        }
        self.heap_size_of_cells()
    }

    /// [`heap_size`](Self::heap_size) from the cells, grouped by family as Java's family map
    /// groups them. A put with a cell over 4 GiB (refused when sent) has lengths truncated to
    /// 32 bits, which would misread its cells: its figure is an estimate instead, its cells'
    /// bytes and a family's worth of Java's objects for each cell, saturating.
    #[inline(never)]
    fn heap_size_of_cells(&self) -> usize {
        if self.oversized {
            let per_cell = java_heap::cell(0).saturating_add(java_heap::family(0, 1));
            return java_heap::row(self.row.len())
                .saturating_add(self.cells.len())
                .saturating_add(per_cell.saturating_mul(self.len()));
        }
        // Each cell starts with its `KeyValue`'s length (4 bytes); its family's length and
        // family are at `family_at`.
        let at = self.family_at();
        let mut families = java_heap::Families::new();
        let mut rest = &self.cells[..];
        while let Some(total) = rest.get(..4) {
            let kv_len = u32::from_be_bytes(total.try_into().expect("4 bytes")) as usize;
            let len = rest.get(at).copied().unwrap_or(0) as usize;
            families.add(rest.get(at + 1..at + 1 + len).unwrap_or_default(), kv_len);
            rest = rest.get(4 + kv_len..).unwrap_or_default();
        }
        java_heap::row(self.row.len()).saturating_add(families.heap_size())
    }

    /// Memory this put holds: the put itself (as a [`Mutation`]), its row (and the shared
    /// header a clone of it allocates) and its cells' buffer. A buffered mutator counts its
    /// own bookkeeping on top
    /// ([`BufferedMutator::budgeted_size`](crate::BufferedMutator::budgeted_size)).
    pub(crate) fn memory_size(&self) -> usize {
        std::mem::size_of::<Mutation>() + row_heap_size(&self.row) + self.cells.capacity()
    }

    /// Starts loading the cells (see `prefetch.rs`).
    #[inline]
    pub(crate) fn prefetch_cells(&self) {
        crate::prefetch::prefetch(&self.cells);
    }

    /// Starts loading what dropping the put's cells will touch (see `prefetch.rs`).
    #[inline]
    pub(crate) fn prefetch_for_drop(&self) {
        crate::prefetch::prefetch_for_free(self.cells.as_ptr(), self.cells.capacity());
    }

    /// Bytes [`encode_cells`](Self::encode_cells) appends to the cell block.
    pub(crate) fn cellblock_len(&self) -> usize {
        self.cells.len()
    }

    /// Appends the cells to `block`; returns the mutation's header.
    pub(crate) fn encode_cells(&self, block: &mut BytesMut) -> CellBlockMutation<'_> {
        let start = block.len();
        block.extend_from_slice(&self.cells);
        if self.timestamp != LATEST_TIMESTAMP {
            // A put-level timestamp: each untimed cell of the copy just appended gets it, in
            // place. Only the two lengths `push_cell` wrote first in each cell are read (the
            // cell's total, then its key's); the timestamp and the type byte end the key.
            let word = |b: &[u8], at: usize| {
                u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize
            };
            let mut at = start;
            while at < block.len() {
                let (total, key_len) = (word(block, at), word(block, at + 4));
                let ts_at = at + 12 + key_len - 9;
                if block[ts_at..ts_at + 8] == LATEST_TIMESTAMP.to_be_bytes() {
                    block[ts_at..ts_at + 8].copy_from_slice(&self.timestamp.to_be_bytes());
                }
                at += 4 + total;
            }
        }
        // The row as the first cell's key holds it (after the cell's three lengths and the
        // row's own): the copy above just loaded those bytes, while the row's own buffer is a
        // separate allocation, out of the cache when a buffered put is sent (a load miss per
        // put, about 4% of a buffered update's cycles at 32 writers, `perf`).
        const ROW_IN_CELL: usize = 12 + 2;
        let row = self
            .cells
            .get(ROW_IN_CELL..ROW_IN_CELL + self.row.len())
            .unwrap_or(&self.row);
        debug_assert_eq!(row, &self.row[..]);
        CellBlockMutation {
            row,
            kind: MutationType::Put,
            timestamp: self.own_timestamp(),
            durability: (self.durability != Durability::UseDefault)
                .then(|| self.durability.to_proto()),
            cells: self.count as i32,
        }
    }

    /// The put's timestamp, if it has one.
    fn own_timestamp(&self) -> Option<u64> {
        (self.timestamp != LATEST_TIMESTAMP).then_some(self.timestamp)
    }

    /// The mutation with its cells inline (for a `Mutate` call), from a copy of the cells.
    pub(crate) fn to_proto(&self) -> hbase_proto::MutationProto {
        self.proto_with(Bytes::copy_from_slice(&self.cells))
    }

    /// [`to_proto`](Self::to_proto) without the copy: the message's fields slice the put's
    /// own buffer (a single-row put of a large value holds it once, not twice).
    pub(crate) fn into_proto(mut self) -> hbase_proto::MutationProto {
        let block = Bytes::from(std::mem::take(&mut self.cells));
        self.proto_with(block)
    }

    /// The message, its cells sliced from `block` (the put's cells).
    fn proto_with(&self, block: Bytes) -> hbase_proto::MutationProto {
        let mut column_value: Vec<ColumnValue> = Vec::new();
        for cell in cells_in(block) {
            let ts = cell.timestamp();
            let qv = QualifierValue {
                qualifier: Some(cell.qualifier_bytes()),
                value: Some(cell.value_bytes()),
                // Without one, the server gives the cell the mutation's timestamp.
                timestamp: (ts != LATEST_TIMESTAMP).then_some(ts),
                ..Default::default()
            };
            add_qualifier_value(&mut column_value, &cell.family_bytes(), qv);
        }
        let mut m = mutation_proto(
            self.row.clone(),
            MutationType::Put,
            column_value,
            self.own_timestamp(),
        );
        if self.durability != Durability::UseDefault {
            m.set_durability(self.durability.to_proto());
        }
        m
    }
}

impl std::fmt::Debug for Put {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cells: Vec<String> = cells_in(Bytes::copy_from_slice(&self.cells))
            .map(|c| {
                let ts = c.timestamp();
                format!(
                    "{}:{}{} = {}",
                    c.family().escape_ascii(),
                    c.qualifier().escape_ascii(),
                    if ts == LATEST_TIMESTAMP {
                        String::new()
                    } else {
                        format!(" @{ts}")
                    },
                    c.value().escape_ascii()
                )
            })
            .collect();
        let mut d = f.debug_struct("Put");
        d.field("row", &self.row).field("cells", &cells);
        if let Some(ts) = self.own_timestamp() {
            d.field("timestamp", &ts);
        }
        d.field("durability", &self.durability).finish()
    }
}

/// `a == b` for slices of one length, without a call for lengths up to 8 (a family's usual
/// length: each cell of a put is compared with the first's family, and a call to `memcmp` was
/// most of that cost): two loads that overlap cover them.
#[inline]
fn same_short(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    let word = |s: &[u8], at: usize| u32::from_ne_bytes(s[at..at + 4].try_into().expect("4 bytes"));
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=8 => word(a, 0) == word(b, 0) && word(a, n - 4) == word(b, n - 4),
        _ => a == b,
    }
}

/// A put's cells read back: its buffer is in the cell block's format, which the cell-block
/// reader reads (the buffer is the put's own encoding, so reading stops only at its end).
fn cells_in(block: Bytes) -> impl Iterator<Item = Cell> {
    let mut reader = CellBlockReader::new(block);
    std::iter::from_fn(move || match reader.next_cell() {
        Ok(cell) => cell,
        Err(e) => {
            debug_assert!(false, "a put's own cells did not read back: {e}");
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::cellblock::encode_cell;

    /// `same_short` is `==` at every length, whichever byte differs.
    #[test]
    fn same_short_is_slice_equality() {
        for n in 0..=12usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(same_short(&a, &a.clone()), "{n}");
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 1;
                assert!(!same_short(&a, &b), "{n}: byte {i}");
            }
        }
    }

    /// The cell block as encoded cell by cell from the parts (the encoding every other
    /// mutation uses).
    /// (family, qualifier, timestamp, value)
    type Parts<'a> = (&'a [u8], &'a [u8], u64, &'a [u8]);

    fn block_of(row: &[u8], cells: &[Parts<'_>]) -> BytesMut {
        let mut block = BytesMut::new();
        for (f, q, ts, v) in cells {
            encode_cell(&mut block, row, f, q, *ts, CellType::Put, v);
        }
        block
    }

    #[test]
    fn cells_are_sent_as_encoded_one_by_one_with_the_puts_timestamp_in_place_of_none() {
        let value = vec![7u8; 300];
        let put = Put::with_capacity("row-1", 3)
            .add("cf", "a", "1")
            .add_at("cf2", "b", 42, &value)
            .add_with("cf", "", 5, |out| {
                assert_eq!(out, &[0; 5]);
                out.copy_from_slice(b"hello")
            });
        assert_eq!(put.len(), 3);
        let mut block = BytesMut::from(&b"before"[..]);
        let header = put.encode_cells(&mut block);
        assert_eq!(header.cells, 3);
        assert_eq!(header.timestamp, None);
        assert_eq!(header.row, b"row-1");
        let expected = block_of(
            b"row-1",
            &[
                (b"cf", b"a", LATEST_TIMESTAMP, b"1"),
                (b"cf2", b"b", 42, &value),
                (b"cf", b"", LATEST_TIMESTAMP, b"hello"),
            ],
        );
        assert_eq!(&block[..6], b"before");
        assert_eq!(&block[6..], &expected[..]);
        assert_eq!(put.cellblock_len(), expected.len());

        // The put's timestamp goes to the cells added without one, before or after it was set.
        let put = put.timestamp(9).add("cf", "c", "");
        let mut block = BytesMut::from(&b"before"[..]);
        let header = put.encode_cells(&mut block);
        assert_eq!((header.cells, header.timestamp), (4, Some(9)));
        assert_eq!(header.row, b"row-1");
        let expected = block_of(
            b"row-1",
            &[
                (b"cf", b"a", 9, b"1"),
                (b"cf2", b"b", 42, &value),
                (b"cf", b"", 9, b"hello"),
                (b"cf", b"c", 9, b""),
            ],
        );
        assert_eq!(&block[..6], b"before");
        assert_eq!(&block[6..], &expected[..]);
    }

    #[test]
    fn with_capacity_reserves_for_the_expected_cells_at_the_first() {
        let put = Put::with_capacity("r", 10).add("f", "q", [1u8; 100]);
        let one = put.cellblock_len();
        assert!(put.cells.capacity() >= 10 * one, "{}", put.cells.capacity());
        let before = put.cells.as_ptr();
        let put = (1..10).fold(put, |p, i| p.add("f", "q", [i as u8; 100]));
        assert_eq!(put.cells.as_ptr(), before, "no growth");
        assert_eq!(put.cellblock_len(), 10 * one);
    }

    #[test]
    fn the_capacity_hint_reserves_little_for_a_large_first_cell() {
        // 65,535 cells of the first one's size would be 64 GiB.
        let put = Put::with_capacity("r", 65_535).add("f", "q", vec![0u8; 1 << 20]);
        assert!(put.cells.capacity() < 2 << 20, "{}", put.cells.capacity());
        let put = Put::with_capacity("r", 100).add("f", "q", [0u8; 100]);
        assert!(put.cells.capacity() >= 100 * put.cellblock_len());
    }

    #[test]
    fn a_cell_over_the_32_bit_lengths_is_refused_even_without_a_size_limit() {
        // Such a cell needs 4 GiB; the flag `push_cell` sets for it stands in.
        let mut put = Put::new("r").add("f", "q", "v");
        assert!(put.validate(usize::MAX).is_ok());
        put.oversized = true;
        match put.validate(usize::MAX) {
            Err(crate::Error::InvalidInput(m)) => assert!(m.contains("32-bit"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// An oversized put's cells have truncated lengths: its heap size is an estimate from its
    /// buffer's size (at least that), not a walk of lengths that may be wrong.
    #[test]
    fn an_oversized_puts_heap_size_is_estimated_without_reading_its_lengths() {
        // Such a cell needs 4 GiB; a put whose first length is wrong, flagged, stands in.
        let mut put = Put::new("r").add("f", "q", "v").add("g", "q", "v");
        put.oversized = true;
        put.cells[..4].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
        let heap = put.heap_size();
        assert!(heap >= put.cells.len(), "{heap}");
        assert!(heap < 1 << 20, "{heap}: not read from the wrong length");
    }

    #[test]
    fn debug_shows_the_cells() {
        let put = Put::new("r")
            .add("cf", "a", "1")
            .add_at("cf", "b\n", 5, "x");
        let text = format!("{put:?}");
        assert!(text.contains("\"cf:a = 1\""), "{text}");
        assert!(text.contains("cf:b\\\\n @5 = x"), "{text}");
    }

    #[test]
    fn the_inline_message_has_the_cells_by_family_and_their_own_timestamps_only() {
        let put = Put::new("r")
            .add("cf", "a", "1")
            .add_at("cf2", "b", 42, "2")
            .add("cf", "c", "3")
            .timestamp(7)
            .durability(Durability::SkipWal);
        let qv = |q: &'static str, v: &'static str, ts: Option<u64>| QualifierValue {
            qualifier: Some(Bytes::from_static(q.as_bytes())),
            value: Some(Bytes::from_static(v.as_bytes())),
            timestamp: ts,
            ..Default::default()
        };
        let mut expected = mutation_proto(
            Bytes::from_static(b"r"),
            MutationType::Put,
            vec![
                ColumnValue {
                    family: Bytes::from_static(b"cf"),
                    qualifier_value: vec![qv("a", "1", None), qv("c", "3", None)],
                },
                ColumnValue {
                    family: Bytes::from_static(b"cf2"),
                    qualifier_value: vec![qv("b", "2", Some(42))],
                },
            ],
            Some(7),
        );
        expected.set_durability(mutation_proto::Durability::SkipWal);
        assert_eq!(put.to_proto(), expected);
        assert_eq!(put.into_proto(), expected, "without the copy");
    }

    #[test]
    fn validation_reports_the_row_the_family_and_the_size() {
        let max = 1000;
        assert!(Put::new("r").validate(max).is_err(), "no cells");
        let ok = Put::new("r").add("f", "q", [0u8; 100]);
        assert!(ok.validate(max).is_ok());
        let message = |p: Put| match p.validate(max) {
            Err(crate::Error::InvalidInput(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(message(Put::new("").add("f", "q", "v")).contains("row key is empty"));
        let long_row = Put::new(vec![b'r'; 40_000]).add("f", "q", "v");
        assert!(message(long_row).contains("row key is 40000 bytes"));
        // Families whose length does not fit the encoding's byte, and the empty one.
        for len in [0, 128, 300] {
            let p = Put::new("r")
                .add("f", "q", "v")
                .add(vec![b'f'; len], "q", "v");
            assert!(
                message(p).contains(&format!("column family name is {len} bytes")),
                "{len}"
            );
        }
        // 13 + 12 + 4 bytes of lengths around the key and value: 1,000 fits, 1,001 does not.
        let sized = |v: usize| Put::new("r").add("f", "q", vec![0u8; v]);
        assert!(sized(1000 - 8 - 12 - 3).validate(max).is_ok());
        assert!(message(sized(1001 - 8 - 12 - 3)).contains("KeyValue size too large: 1001"));
    }

    #[test]
    fn a_put_is_no_larger_than_a_delete() {
        // Every buffered write holds one (and the mutator's room for one: `BOOKKEEPING` in
        // mutator/mod.rs).
        assert!(
            std::mem::size_of::<Put>() <= std::mem::size_of::<crate::Delete>() + 8,
            "{} bytes",
            std::mem::size_of::<Put>()
        );
        assert_eq!(std::mem::size_of::<Mutation>(), 80);
    }
}
