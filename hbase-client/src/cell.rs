//! Cells: the unit of data HBase stores, one (row, family, qualifier, timestamp, type) → value.

use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};

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

/// One HBase cell: row, family, qualifier, timestamp and type, and the value.
///
/// A cell holds a single [`Bytes`] buffer in HBase's KeyValue layout (the key, then the
/// value) plus the offsets of its parts. A decoded cell's buffer is a slice of the response,
/// so decoding costs one reference count per cell and no copies. The `&[u8]` accessors
/// ([`row`](Cell::row), [`value`](Cell::value), ...) borrow from it; the `*_bytes`
/// accessors ([`value_bytes`](Cell::value_bytes), ...) return owned zero-copy slices of it.
///
/// Equality and `Debug` are by the parts (row, family, qualifier, timestamp, type, value),
/// never by how the buffer was laid out.
#[derive(Clone)]
pub struct Cell {
    /// `row_len:u16 | row | fam_len:u8 | family | qualifier | timestamp:u64 | type:u8 | value`.
    /// The two length fields are never read back: the layout says where the parts are (a
    /// cell built by [`Cell::new`] may have a row or family too long for them).
    buf: Bytes,
    layout: KeyValueLayout,
}

/// Where the parts of one KeyValue (its key, then its value) lie in its bytes.
///
/// Checked against the bytes when made ([`KeyValueLayout::parse`]), so that no accessor of a
/// cell can go out of bounds. The timestamp and the type byte, the key's last 9 bytes, are
/// read from the bytes when asked for: a decoded row's cells are built far more often than
/// their timestamps are read, and each cell is 16 bytes smaller.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyValueLayout {
    /// End of the row, which starts at 2. Invariant: `2 <= row_end`, `row_end + 1 <= qual_start`.
    row_end: usize,
    /// Start of the qualifier (= end of the family, which starts at `row_end + 1`).
    /// Invariant: `qual_start + 9 <= key_len`.
    qual_start: usize,
    /// Length of the key (the qualifier ends 9 bytes before it); the value is the rest.
    /// Invariant: `key_len <=` the length of the bytes.
    key_len: usize,
}

impl KeyValueLayout {
    /// The layout of `kv`, one KeyValue's key (`key_len` bytes) followed by its value, as a
    /// cell block carries it. Checks that the key's own lengths fit inside it; the error says
    /// what is wrong.
    #[inline(always)]
    pub(crate) fn parse(kv: &[u8], key_len: usize) -> Result<KeyValueLayout, &'static str> {
        if key_len < KEY_INFRASTRUCTURE {
            return Err("key too short");
        }
        if key_len > kv.len() {
            return Err("key runs past the cell");
        }
        let row_end = 2 + u16::from_be_bytes([kv[0], kv[1]]) as usize;
        if row_end + 1 > key_len {
            return Err("row length past key");
        }
        let qual_start = row_end + 1 + kv[row_end] as usize;
        let ts_start = key_len - 9;
        if qual_start > ts_start {
            return Err("family length past key");
        }
        Ok(KeyValueLayout {
            row_end,
            qual_start,
            key_len,
        })
    }
}

/// Bytes of a KeyValue key besides row, family and qualifier: row length, family length,
/// timestamp, type.
pub(crate) const KEY_INFRASTRUCTURE: usize = 2 + 1 + 8 + 1;

impl Cell {
    /// A cell from its parts, copied into one buffer (one allocation). For cells built in
    /// code, and for cells a server sent inside a protobuf message rather than a cell block.
    ///
    /// ```
    /// use hbase_client::{Cell, CellType};
    ///
    /// let cell = Cell::new(b"row1", b"cf", b"q", 42, CellType::Put, b"v");
    /// assert_eq!(cell.row(), b"row1");
    /// assert_eq!(cell.family(), b"cf");
    /// assert_eq!(cell.qualifier(), b"q");
    /// assert_eq!(cell.timestamp(), 42);
    /// assert_eq!(cell.cell_type(), CellType::Put);
    /// assert_eq!(cell.value(), b"v");
    /// ```
    pub fn new(
        row: impl AsRef<[u8]>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
        timestamp: u64,
        cell_type: CellType,
        value: impl AsRef<[u8]>,
    ) -> Cell {
        let (row, family, qualifier, value) = (
            row.as_ref(),
            family.as_ref(),
            qualifier.as_ref(),
            value.as_ref(),
        );
        let key_len = KEY_INFRASTRUCTURE + row.len() + family.len() + qualifier.len();
        let mut buf = BytesMut::with_capacity(key_len + value.len());
        // The length bytes are as in a KeyValue when the parts fit them (truncated otherwise:
        // they are never read back).
        put_key_value(
            &mut buf,
            &[],
            row,
            family,
            qualifier,
            timestamp,
            cell_type,
            value,
        );
        let row_end = 2 + row.len();
        Cell {
            buf: buf.freeze(),
            layout: KeyValueLayout {
                row_end,
                qual_start: row_end + 1 + family.len(),
                key_len,
            },
        }
    }

    /// A cell over `buf`, one KeyValue's key (`key_len` bytes) followed by its value, as a
    /// cell block carries it. Checks that the key's own lengths fit inside it, so that no
    /// accessor can go out of bounds; the error says what is wrong.
    #[cfg(test)]
    pub(crate) fn from_key_value(buf: Bytes, key_len: usize) -> Result<Cell, &'static str> {
        let layout = KeyValueLayout::parse(&buf, key_len)?;
        Ok(Cell { buf, layout })
    }

    /// A cell over `buf`, whose layout was checked against these very bytes.
    #[inline(always)]
    pub(crate) fn from_checked(buf: Bytes, layout: KeyValueLayout) -> Cell {
        Cell { buf, layout }
    }

    /// The cell borrowed: the same accessors, from the same buffer.
    #[inline(always)]
    pub fn as_cell_ref(&self) -> CellRef<'_> {
        CellRef {
            kv: &self.buf,
            block: &self.buf,
            layout: self.layout,
        }
    }

    /// Row key.
    #[inline]
    pub fn row(&self) -> &[u8] {
        self.as_cell_ref().row()
    }

    /// Column family.
    #[inline]
    pub fn family(&self) -> &[u8] {
        self.as_cell_ref().family()
    }

    /// Column qualifier.
    #[inline]
    pub fn qualifier(&self) -> &[u8] {
        self.as_cell_ref().qualifier()
    }

    /// The value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.as_cell_ref().value()
    }

    /// Version timestamp in milliseconds since the epoch.
    #[inline]
    pub fn timestamp(&self) -> u64 {
        self.as_cell_ref().timestamp()
    }

    /// Put or one of the delete markers.
    #[inline]
    pub fn cell_type(&self) -> CellType {
        self.as_cell_ref().cell_type()
    }

    /// The row key as an owned slice of the cell's buffer (no copy).
    pub fn row_bytes(&self) -> Bytes {
        self.as_cell_ref().row_bytes()
    }

    /// The column family as an owned slice of the cell's buffer (no copy).
    pub fn family_bytes(&self) -> Bytes {
        self.as_cell_ref().family_bytes()
    }

    /// The column qualifier as an owned slice of the cell's buffer (no copy).
    pub fn qualifier_bytes(&self) -> Bytes {
        self.as_cell_ref().qualifier_bytes()
    }

    /// The value as an owned slice of the cell's buffer (no copy).
    pub fn value_bytes(&self) -> Bytes {
        self.as_cell_ref().value_bytes()
    }

    /// The order of cells in a region, HBase's cell comparator on the key: row, family and
    /// qualifier ascending (as bytes), then timestamp descending (newest first), then type
    /// byte descending (a delete marker before the put it covers). The value plays no part.
    pub(crate) fn key_order(&self, other: &Cell) -> std::cmp::Ordering {
        self.row()
            .cmp(other.row())
            .then_with(|| self.family().cmp(other.family()))
            .then_with(|| self.qualifier().cmp(other.qualifier()))
            .then_with(|| other.timestamp().cmp(&self.timestamp()))
            .then_with(|| other.cell_type().code().cmp(&self.cell_type().code()))
    }
}

impl PartialEq for Cell {
    fn eq(&self, other: &Cell) -> bool {
        self.as_cell_ref() == other.as_cell_ref()
    }
}

impl Eq for Cell {}

impl fmt::Debug for Cell {
    // As the derived `Debug` of the parts as `Bytes` (b"..." strings).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_cell_ref().fmt_parts("Cell", f)
    }
}

/// A cell borrowed from the buffer that holds it: a [`Cell`]'s, or a
/// [`RawRow`](crate::RawRow)'s, whose cells stay in the block the server sent. The same
/// accessors as a [`Cell`]'s; the `*_bytes` ones and [`to_cell`](CellRef::to_cell) share the
/// buffer (a reference count, no copy).
///
/// Equality and `Debug` are by the parts, as a [`Cell`]'s.
#[derive(Clone, Copy)]
pub struct CellRef<'a> {
    /// The KeyValue: its key, then its value (within `block`).
    kv: &'a [u8],
    /// The buffer `kv` lies in, for the owned slices.
    block: &'a Bytes,
    layout: KeyValueLayout,
}

impl<'a> CellRef<'a> {
    /// The cell of `kv`, which lies in `block` and whose layout was checked against it.
    #[inline(always)]
    pub(crate) fn new(kv: &'a [u8], block: &'a Bytes, layout: KeyValueLayout) -> CellRef<'a> {
        CellRef { kv, block, layout }
    }

    /// Row key.
    #[inline]
    pub fn row(&self) -> &'a [u8] {
        &self.kv[2..self.layout.row_end]
    }

    /// Column family.
    #[inline]
    pub fn family(&self) -> &'a [u8] {
        &self.kv[self.layout.row_end + 1..self.layout.qual_start]
    }

    /// Column qualifier.
    #[inline]
    pub fn qualifier(&self) -> &'a [u8] {
        &self.kv[self.layout.qual_start..self.layout.key_len - 9]
    }

    /// The value.
    #[inline]
    pub fn value(&self) -> &'a [u8] {
        &self.kv[self.layout.key_len..]
    }

    /// Version timestamp in milliseconds since the epoch.
    #[inline]
    pub fn timestamp(&self) -> u64 {
        let key_len = self.layout.key_len;
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&self.kv[key_len - 9..key_len - 1]);
        u64::from_be_bytes(ts)
    }

    /// Put or one of the delete markers.
    #[inline]
    pub fn cell_type(&self) -> CellType {
        CellType::from_code(self.kv[self.layout.key_len - 1])
    }

    /// The row key as an owned slice of the buffer (no copy).
    pub fn row_bytes(&self) -> Bytes {
        self.block.slice_ref(self.row())
    }

    /// The column family as an owned slice of the buffer (no copy).
    pub fn family_bytes(&self) -> Bytes {
        self.block.slice_ref(self.family())
    }

    /// The column qualifier as an owned slice of the buffer (no copy).
    pub fn qualifier_bytes(&self) -> Bytes {
        self.block.slice_ref(self.qualifier())
    }

    /// The value as an owned slice of the buffer (no copy).
    pub fn value_bytes(&self) -> Bytes {
        self.block.slice_ref(self.value())
    }

    /// The cell's size in a KeyValue cell block: total length, key length and value length
    /// (4 bytes each), then the key and the value.
    pub(crate) fn encoded_len(&self) -> usize {
        12 + self.kv.len()
    }

    /// The cell as an owned [`Cell`], sharing the buffer (no copy).
    pub fn to_cell(&self) -> Cell {
        Cell::from_checked(self.block.slice_ref(self.kv), self.layout)
    }

    fn fmt_parts(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("row", &self.row_bytes())
            .field("family", &self.family_bytes())
            .field("qualifier", &self.qualifier_bytes())
            .field("timestamp", &self.timestamp())
            .field("cell_type", &self.cell_type())
            .field("value", &self.value_bytes())
            .finish()
    }
}

impl PartialEq for CellRef<'_> {
    fn eq(&self, other: &CellRef<'_>) -> bool {
        self.timestamp() == other.timestamp()
            && self.cell_type() == other.cell_type()
            && self.row() == other.row()
            && self.family() == other.family()
            && self.qualifier() == other.qualifier()
            && self.value() == other.value()
    }
}

impl Eq for CellRef<'_> {}

impl fmt::Debug for CellRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_parts("CellRef", f)
    }
}

/// Appends `lead` (at most 12 bytes: a cell block's three lengths, or nothing for a bare
/// KeyValue), then a KeyValue's key and value:
/// `u16 row_len | row | u8 fam_len | family | qualifier | u64 timestamp | u8 type | value`.
/// The lengths are truncated to their widths; callers that send the bytes check them first.
///
/// The fixed-width fields go in with their neighbours (`lead` with the row length, the
/// timestamp with the type): every append checks the buffer's capacity, and appending each
/// field alone cost a buffered put (ten cells) about 500 instructions more.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn put_key_value(
    buf: &mut impl BufMut,
    lead: &[u8],
    row: &[u8],
    family: &[u8],
    qualifier: &[u8],
    timestamp: u64,
    cell_type: CellType,
    value: &[u8],
) {
    let mut head = [0u8; 14];
    let n = lead.len();
    head[..n].copy_from_slice(lead);
    head[n..n + 2].copy_from_slice(&(row.len() as u16).to_be_bytes());
    buf.put_slice(&head[..n + 2]);
    buf.put_slice(row);
    buf.put_u8(family.len() as u8);
    buf.put_slice(family);
    buf.put_slice(qualifier);
    let mut tail = [0u8; 9];
    tail[..8].copy_from_slice(&timestamp.to_be_bytes());
    tail[8] = cell_type.code();
    buf.put_slice(&tail);
    buf.put_slice(value);
}

/// `i64::MAX`: HBase's "latest timestamp", which the server replaces with its own clock.
pub const LATEST_TIMESTAMP: u64 = i64::MAX as u64;

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(c: &Cell) -> (Vec<u8>, Vec<u8>, Vec<u8>, u64, CellType, Vec<u8>) {
        (
            c.row().to_vec(),
            c.family().to_vec(),
            c.qualifier().to_vec(),
            c.timestamp(),
            c.cell_type(),
            c.value().to_vec(),
        )
    }

    #[test]
    fn new_packs_a_keyvalue_and_gives_the_parts_back() {
        let c = Cell::new(b"r1", b"cf", b"q", 7, CellType::Put, b"val");
        // The buffer is the cell-block encoding without its 12 bytes of lengths.
        let mut block = BytesMut::new();
        crate::rpc::cellblock::encode_cell(
            &mut block,
            b"r1",
            b"cf",
            b"q",
            7,
            CellType::Put,
            b"val",
        );
        assert_eq!(&c.buf[..], &block[12..]);
        let back = Cell::from_key_value(c.buf.clone(), c.layout.key_len).unwrap();
        assert_eq!(parts(&back), parts(&c));
        assert_eq!(back, c);
        assert_eq!(&c.row_bytes()[..], b"r1");
        assert_eq!(&c.family_bytes()[..], b"cf");
        assert_eq!(&c.qualifier_bytes()[..], b"q");
        assert_eq!(&c.value_bytes()[..], b"val");
    }

    #[test]
    fn a_cell_is_one_buffer_and_its_offsets() {
        // One `Bytes` (4 words) and three offsets: 56 bytes on 64-bit targets, where four
        // `Bytes` fields alone took 128 (and 72 with the timestamp and type kept beside).
        assert!(std::mem::size_of::<Cell>() <= 56);
    }

    #[test]
    fn new_takes_parts_longer_than_the_keyvalue_length_bytes() {
        let row = vec![7u8; 70_000];
        let family = vec![8u8; 300];
        let c = Cell::new(&row, &family, b"", 1, CellType::Delete, b"");
        assert_eq!(c.row(), &row[..]);
        assert_eq!(c.family(), &family[..]);
        assert!(c.qualifier().is_empty() && c.value().is_empty());
        assert_eq!(c.cell_type(), CellType::Delete);
    }

    #[test]
    fn empty_parts() {
        let c = Cell::new(b"", b"", b"", 0, CellType::Other(0), b"");
        assert!(c.row().is_empty() && c.family().is_empty());
        assert!(c.qualifier().is_empty() && c.value().is_empty());
        assert!(c.row_bytes().is_empty() && c.value_bytes().is_empty());
    }

    #[test]
    fn equality_and_debug_are_by_the_parts() {
        let a = Cell::new(b"r", b"f", b"q", 5, CellType::Put, b"v\n");
        // The same parts in a bigger buffer, at other offsets.
        let mut big = BytesMut::new();
        big.put_slice(b"junk");
        big.put_slice(&a.buf);
        let b = Cell::from_key_value(big.freeze().slice(4..), a.layout.key_len).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, Cell::new(b"r", b"f", b"q", 5, CellType::Put, b"w"));
        assert_ne!(a, Cell::new(b"r", b"f", b"q", 6, CellType::Put, b"v\n"));
        assert_ne!(a, Cell::new(b"rf", b"", b"q", 5, CellType::Put, b"v\n"));
        assert_eq!(
            format!("{a:?}"),
            "Cell { row: b\"r\", family: b\"f\", qualifier: b\"q\", timestamp: 5, \
             cell_type: Put, value: b\"v\\n\" }"
        );
    }

    #[test]
    fn key_order_is_hbases() {
        let c = |row: &[u8], q: &[u8], ts, t| Cell::new(row, b"f", q, ts, t, b"");
        let mut cells = [
            c(b"b", b"q", 1, CellType::Put),
            c(b"a", b"r", 1, CellType::Put),
            c(b"a", b"q", 1, CellType::Put),
            c(b"a", b"q", 2, CellType::Put),
            c(b"a", b"q", 1, CellType::DeleteColumn),
        ];
        cells.sort_by(|x, y| x.key_order(y));
        let got: Vec<_> = cells
            .iter()
            .map(|x| (x.row(), x.qualifier(), x.timestamp(), x.cell_type()))
            .collect();
        assert_eq!(
            got,
            vec![
                (&b"a"[..], &b"q"[..], 2, CellType::Put),
                (b"a", b"q", 1, CellType::DeleteColumn),
                (b"a", b"q", 1, CellType::Put),
                (b"a", b"r", 1, CellType::Put),
                (b"b", b"q", 1, CellType::Put),
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn from_key_value_never_panics_and_accessors_stay_in_bounds(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            key_len in 0usize..80,
        ) {
            if let Ok(c) = Cell::from_key_value(Bytes::from(data), key_len) {
                let _ = (c.row(), c.family(), c.qualifier(), c.value(), format!("{c:?}"));
                let _ = (c.row_bytes(), c.family_bytes(), c.qualifier_bytes(), c.value_bytes());
            }
        }

        #[test]
        fn new_round_trips_any_parts(
            row in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            family in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            qualifier in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            value in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            ts in proptest::prelude::any::<u64>(),
            code in proptest::prelude::any::<u8>(),
        ) {
            let t = CellType::from_code(code);
            let c = Cell::new(&row, &family, &qualifier, ts, t, &value);
            proptest::prop_assert_eq!(
                parts(&c),
                (row, family, qualifier, ts, t, value)
            );
        }
    }
}
