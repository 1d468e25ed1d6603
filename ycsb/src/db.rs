//! The database interface the workload drives (YCSB's `DB`), its status codes, and an
//! in-memory implementation for tests and dry runs.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// YCSB's `Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success.
    Ok,
    /// A failure.
    Error,
    /// The record does not exist.
    NotFound,
    /// The binding does not implement the operation.
    NotImplemented,
    /// Data integrity check failed.
    UnexpectedState,
    /// Bad request.
    BadRequest,
    /// Forbidden.
    Forbidden,
    /// Service unavailable.
    ServiceUnavailable,
    /// Buffered, to be written later.
    BatchedOk,
}

impl Status {
    /// The name in `Return=<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Error => "ERROR",
            Status::NotFound => "NOT_FOUND",
            Status::NotImplemented => "NOT_IMPLEMENTED",
            Status::UnexpectedState => "UNEXPECTED_STATE",
            Status::BadRequest => "BAD_REQUEST",
            Status::Forbidden => "FORBIDDEN",
            Status::ServiceUnavailable => "SERVICE_UNAVAILABLE",
            Status::BatchedOk => "BATCHED_OK",
        }
    }

    /// Every status, in YCSB's declaration order.
    pub const ALL: [Status; 9] = [
        Status::Ok,
        Status::Error,
        Status::NotFound,
        Status::NotImplemented,
        Status::UnexpectedState,
        Status::BadRequest,
        Status::Forbidden,
        Status::ServiceUnavailable,
        Status::BatchedOk,
    ];

    /// The status called `name` (`OK`, `NOT_FOUND`, …).
    pub fn from_name(name: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.name() == name)
    }

    /// YCSB's description of the status; part of its `hashCode`, which orders the `Return=`
    /// lines of a block.
    pub fn description(self) -> &'static str {
        match self {
            Status::Ok => "The operation completed successfully.",
            Status::Error => "The operation failed.",
            Status::NotFound => "The requested record was not found.",
            Status::NotImplemented => "The operation is not implemented for the current binding.",
            Status::UnexpectedState => {
                "The operation reported success, but the result was not as expected."
            }
            Status::BadRequest => "The request was not valid.",
            Status::Forbidden => "The operation is forbidden.",
            Status::ServiceUnavailable => {
                "Dependant service for the current binding is not available."
            }
            Status::BatchedOk => {
                "The operation has been batched by the binding to be executed later."
            }
        }
    }

    /// `Status.hashCode()`: `31·(31 + description.hashCode()) + name.hashCode()`.
    pub fn java_hash(self) -> i32 {
        use crate::util::java_string_hash as h;
        31i32
            .wrapping_mul(31i32.wrapping_add(h(self.description())))
            .wrapping_add(h(self.name()))
    }

    /// OK or BATCHED_OK.
    pub fn is_ok(self) -> bool {
        matches!(self, Status::Ok | Status::BatchedOk)
    }
}

/// A field name. Its UTF-8 text is held in shared bytes, so the workload makes each name once
/// and every operation's [`Values`] and [`Record`] share it (a reference count, not a `String`
/// per field per operation), and the HBase binding uses it as the column qualifier as it is.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Field(Bytes);

impl Field {
    /// The name of a column qualifier: its bytes shared when they are UTF-8, else the text
    /// with invalid sequences replaced (as `String::from_utf8_lossy`).
    pub fn from_qualifier(bytes: Bytes) -> Field {
        // ASCII (every YCSB field name) is UTF-8, and far cheaper to check for a short name:
        // `from_utf8` cost about 86 instructions a qualifier, 860 a read of 10 fields.
        if bytes.is_ascii() || std::str::from_utf8(&bytes).is_ok() {
            Field(bytes)
        } else {
            Field::from(String::from_utf8_lossy(&bytes).into_owned())
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        // Every constructor checks or keeps UTF-8, so this cannot fail.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The name's bytes (shared, not copied).
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }
}

impl From<String> for Field {
    fn from(name: String) -> Field {
        Field(Bytes::from(name))
    }
}

impl From<&str> for Field {
    fn from(name: &str) -> Field {
        Field(Bytes::copy_from_slice(name.as_bytes()))
    }
}

impl std::ops::Deref for Field {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Field {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::hash::Hash for Field {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As the `str` it borrows as, so that maps keyed by `Field` find `&str` keys.
        self.as_str().hash(state)
    }
}

impl PartialEq<str> for Field {
    fn eq(&self, other: &str) -> bool {
        self.0[..] == *other.as_bytes()
    }
}

impl PartialEq<&str> for Field {
    fn eq(&self, other: &&str) -> bool {
        self.0[..] == *other.as_bytes()
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A row a binding read: field name → value, in the order the binding returned them.
///
/// An HBase row is kept as the cells it arrived in and turned into names and values only when
/// someone asks. The workload asks only under `dataintegrity`, and naming ten fields and
/// slicing their values cost about 2,100 of a read's 18,000 instructions (callgrind).
#[derive(Clone, Default)]
pub struct Record(RecordCells);

#[derive(Clone)]
enum RecordCells {
    Pairs(Vec<(Field, Bytes)>),
    Hbase(Vec<hbase_client::Cell>),
    /// A row read with `Table::get_raw` or `Table::scan_raw`: its cells still in the block they
    /// arrived in.
    Raw(hbase_client::RawRow),
}

impl Default for RecordCells {
    fn default() -> Self {
        RecordCells::Pairs(Vec::new())
    }
}

impl Record {
    /// An empty record.
    pub fn new() -> Record {
        Record::default()
    }

    /// A record of HBase cells: each cell's qualifier names a field, its value is the field's.
    pub fn from_cells(cells: Vec<hbase_client::Cell>) -> Record {
        Record(RecordCells::Hbase(cells))
    }

    /// A record of an HBase row as it arrived: each cell's qualifier names a field, its value
    /// is the field's.
    pub fn from_raw_row(row: hbase_client::RawRow) -> Record {
        Record(RecordCells::Raw(row))
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        match &self.0 {
            RecordCells::Pairs(p) => p.len(),
            RecordCells::Hbase(c) => c.len(),
            RecordCells::Raw(r) => r.len(),
        }
    }

    /// True when the record has no field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fields and their values (sharing the record's bytes, not copying them). A qualifier
    /// that is not UTF-8 is named as [`Field::from_qualifier`] names it.
    pub fn fields(&self) -> impl Iterator<Item = (Field, Bytes)> + '_ {
        let (pairs, cells, raw) = match &self.0 {
            RecordCells::Pairs(p) => (&p[..], &[][..], None),
            RecordCells::Hbase(c) => (&[][..], &c[..], None),
            RecordCells::Raw(r) => (&[][..], &[][..], Some(r)),
        };
        let field = |c: hbase_client::CellRef<'_>| {
            (Field::from_qualifier(c.qualifier_bytes()), c.value_bytes())
        };
        pairs
            .iter()
            .cloned()
            .chain(cells.iter().map(move |c| field(c.as_cell_ref())))
            .chain(raw.into_iter().flat_map(move |r| r.cells().map(field)))
    }

    /// The fields and their values as a vector.
    pub fn into_pairs(self) -> Vec<(Field, Bytes)> {
        match self.0 {
            RecordCells::Pairs(p) => p,
            cells => Record(cells).fields().collect(),
        }
    }
}

impl From<Vec<(Field, Bytes)>> for Record {
    fn from(pairs: Vec<(Field, Bytes)>) -> Record {
        Record(RecordCells::Pairs(pairs))
    }
}

impl FromIterator<(Field, Bytes)> for Record {
    fn from_iter<I: IntoIterator<Item = (Field, Bytes)>>(iter: I) -> Record {
        Record(RecordCells::Pairs(iter.into_iter().collect()))
    }
}

impl PartialEq for Record {
    fn eq(&self, other: &Record) -> bool {
        self.len() == other.len() && self.fields().eq(other.fields())
    }
}

impl Eq for Record {}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.fields()).finish()
    }
}

/// One field's value as the workload hands it to a binding. Random values are generated by the
/// binding, inside the timed call, as YCSB's lazy `RandomByteIterator` is consumed by its
/// binding's `update`/`insert`: the workload only draws the first 32 random bits (what the
/// iterator's constructor draws) from the thread's random source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    /// Fixed bytes (dataintegrity values, shell input).
    Fixed(Bytes),
    /// `len` random printable bytes: the first six from `first`, the rest from `seed`.
    Random {
        /// Length in bytes.
        len: usize,
        /// The 32 bits drawn when the value was built.
        first: u32,
        /// Seed of the rest of the bytes.
        seed: u64,
    },
}

/// The six characters YCSB makes of 32 random bits, as the low six bytes of a little-endian
/// word (the top two are zero).
fn six_chars_word(r: u32) -> u64 {
    // YCSB's RandomByteIterator: six printable characters per 32 random bits (the last group
    // cut at the value's length): `' ' + ((r >> 5i) & mask_i)`, masks 31, 63, 95, 31, 63, 95.
    // All six at once in one u64: `r << 3i` puts `r >> 5i` at byte i, the masks keep each
    // byte's bits, and no byte carries into the next (95 + 32 < 256).
    const MASKS: [u64; 6] = [31, 63 << 8, 95 << 16, 31 << 24, 63 << 32, 95 << 40];
    let r = r as u64;
    let spread = (r & MASKS[0])
        | ((r << 3) & MASKS[1])
        | ((r << 6) & MASKS[2])
        | ((r << 9) & MASKS[3])
        | ((r << 12) & MASKS[4])
        | ((r << 15) & MASKS[5]);
    spread + 0x2020_2020_2020
}

impl FieldValue {
    /// Random printable bytes.
    pub fn random(len: usize, first: u32, seed: u64) -> FieldValue {
        FieldValue::Random { len, first, seed }
    }

    /// The value's bytes (generated now, for a random value).
    #[expect(
        clippy::slow_vector_initialization,
        reason = "`vec![0; len]` is a calloc, slower here (measured)"
    )]
    pub fn to_bytes(&self) -> Bytes {
        match self {
            FieldValue::Fixed(b) => b.clone(),
            &FieldValue::Random { len, first, seed } => {
                // Exactly `len` bytes: a `Vec` with spare room would cost `Bytes` a second
                // allocation (its shared header). Zeroed by `resize`, not `vec![0; len]` (a
                // `calloc`: about 100 instructions more).
                let mut v = Vec::with_capacity(len);
                v.resize(len, 0);
                fill_random(&mut v, first, seed);
                Bytes::from(v)
            }
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            FieldValue::Fixed(b) => b.len(),
            FieldValue::Random { len, .. } => *len,
        }
    }

    /// True for an empty value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the value's bytes, as [`to_bytes`](FieldValue::to_bytes) gives them, into
    /// `out`, which is [`len`](FieldValue::len) bytes long (so a write can generate its value
    /// in the place it is sent from).
    pub fn write_into(&self, out: &mut [u8]) {
        match self {
            FieldValue::Fixed(b) => out.copy_from_slice(b),
            &FieldValue::Random { first, seed, .. } => fill_random(out, first, seed),
        }
    }
}

/// Fills `out` as YCSB's RandomByteIterator would: six characters from `first`, then from the
/// draws of a source seeded with `seed`. Each 64-bit draw is two groups' 32 bits, written twelve
/// bytes at a time as two words: about 650 instructions for a 100-byte value, against 990
/// drawing 32 bits a group and writing six bytes at a time (callgrind). The low half has weak
/// linear dependencies that rand's `next_u32` avoids; filler bytes need no better (YCSB's own
/// are whatever `ThreadLocalRandom` gives).
fn fill_random(out: &mut [u8], first: u32, seed: u64) {
    use rand::{RngCore, SeedableRng};
    // Copies of a length known only at run time (the head when the value is shorter than
    // six bytes, the tail) would be calls to `memmove`, two per value: fixed-size ones
    // compile to plain moves.
    let head = six_chars_word(first).to_le_bytes();
    let Some((head_room, rest_of_value)) = out.split_first_chunk_mut::<6>() else {
        copy_short(out, &head);
        return;
    };
    head_room.copy_from_slice(&head[..6]);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    // Two groups as two words: the first eight bytes, then the last four.
    let mut twelve = || {
        let both = rng.next_u64();
        let (low, high) = (
            six_chars_word(both as u32),
            six_chars_word((both >> 32) as u32),
        );
        (low | high << 48, (high >> 16) as u32)
    };
    let mut pairs = rest_of_value.chunks_exact_mut(12);
    for pair in &mut pairs {
        let (first8, last4) = twelve();
        pair[..8].copy_from_slice(&first8.to_le_bytes());
        pair[8..].copy_from_slice(&last4.to_le_bytes());
    }
    let tail = pairs.into_remainder();
    if !tail.is_empty() {
        let (first8, last4) = twelve();
        let mut bytes = [0u8; 12];
        bytes[..8].copy_from_slice(&first8.to_le_bytes());
        bytes[8..].copy_from_slice(&last4.to_le_bytes());
        copy_short(tail, &bytes);
    }
}

/// Fills `out` (at most 12 bytes, and no longer than `from`) from the start of `from`, with
/// copies of fixed sizes: two overlapping ones of 8 or 4 bytes, or single bytes below 4, as
/// `memmove` itself does, without the call.
#[inline(always)]
fn copy_short(out: &mut [u8], from: &[u8]) {
    let n = out.len();
    debug_assert!(n <= 12 && n <= from.len());
    if n >= 8 {
        out[..8].copy_from_slice(&from[..8]);
        out[n - 8..].copy_from_slice(&from[n - 8..n]);
    } else if n >= 4 {
        out[..4].copy_from_slice(&from[..4]);
        out[n - 4..].copy_from_slice(&from[n - 4..n]);
    } else if n > 0 {
        out[0] = from[0];
        out[n / 2] = from[n / 2];
        out[n - 1] = from[n - 1];
    }
}

/// Field name → value to write.
pub type Values = Vec<(Field, FieldValue)>;

/// Generates the bytes of `values`.
pub fn materialize(values: Values) -> Vec<(Field, Bytes)> {
    values.into_iter().map(|(f, v)| (f, v.to_bytes())).collect()
}

/// What a thread's cleanup (or the shared final flush) found: buffered writes that failed.
#[derive(Debug, Default)]
pub struct FlushOutcome {
    /// Buffered inserts that failed.
    pub failed_inserts: u64,
    /// Buffered updates that failed.
    pub failed_updates: u64,
    /// Buffered deletes that failed.
    pub failed_deletes: u64,
    /// An error that was not tied to particular rows.
    pub error: Option<String>,
}

/// A database binding (YCSB's `DB`). One value is made per client thread with
/// [`Db::for_thread`], as YCSB makes one `DB` object per thread.
pub trait Db: Clone + Send + Sync + 'static {
    /// Reads `key`; `fields` of `None` means all. Fills `out`.
    fn read(
        &self,
        table: &str,
        key: &str,
        fields: Option<&[String]>,
        out: &mut Record,
    ) -> impl Future<Output = Status> + Send;

    /// Reads up to `count` rows from `start_key` on.
    fn scan(
        &self,
        table: &str,
        start_key: &str,
        count: usize,
        fields: Option<&[String]>,
        out: &mut Vec<Record>,
    ) -> impl Future<Output = Status> + Send;

    /// Writes `values` to an existing row.
    fn update(&self, table: &str, key: &str, values: Values)
        -> impl Future<Output = Status> + Send;

    /// Writes a new row.
    fn insert(&self, table: &str, key: &str, values: Values)
        -> impl Future<Output = Status> + Send;

    /// Deletes a row.
    fn delete(&self, table: &str, key: &str) -> impl Future<Output = Status> + Send;

    /// The handle of one client thread (its own write buffer, for one). Default: a clone.
    fn for_thread(&self) -> Self {
        self.clone()
    }

    /// The thread's cleanup (YCSB's `DB.cleanup`): closes what the thread owns, flushing its
    /// write buffer. Timed by the caller.
    fn cleanup(&self) -> impl Future<Output = FlushOutcome> + Send {
        async { FlushOutcome::default() }
    }

    /// The measurement the binding itself records its cleanup time under (op latency only), as
    /// YCSB's HBase binding records its mutator close: `UPDATE` when buffering, else `CLEANUP`.
    fn cleanup_measurement(&self) -> Option<&'static str> {
        None
    }

    /// Once, after every thread is done (only for a buffer shared by all threads): writes what
    /// is buffered. Reported in its own `[FLUSH]` block.
    fn flush(&self) -> impl Future<Output = FlushOutcome> + Send {
        async { FlushOutcome::default() }
    }

    /// Whether all threads share one write buffer that [`Db::flush`] empties.
    fn shared_buffer(&self) -> bool {
        false
    }
}

/// An in-memory table (`-db memory`), for tests and dry runs.
#[derive(Clone, Default)]
pub struct MemoryDb {
    rows: Arc<Mutex<BTreeMap<String, BTreeMap<Field, Bytes>>>>,
}

impl MemoryDb {
    /// An empty database.
    pub fn new() -> MemoryDb {
        MemoryDb::default()
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.lock().unwrap().len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn pick(row: &BTreeMap<Field, Bytes>, fields: Option<&[String]>) -> Record {
    match fields {
        None => row.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Some(f) => f
            .iter()
            .filter_map(|k| row.get_key_value(k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

impl Db for MemoryDb {
    async fn read(
        &self,
        _table: &str,
        key: &str,
        fields: Option<&[String]>,
        out: &mut Record,
    ) -> Status {
        let rows = self.rows.lock().unwrap();
        match rows.get(key) {
            Some(row) => {
                *out = pick(row, fields);
                Status::Ok
            }
            None => Status::NotFound,
        }
    }

    async fn scan(
        &self,
        _table: &str,
        start_key: &str,
        count: usize,
        fields: Option<&[String]>,
        out: &mut Vec<Record>,
    ) -> Status {
        let rows = self.rows.lock().unwrap();
        for (_, row) in rows.range(start_key.to_string()..).take(count) {
            out.push(pick(row, fields));
        }
        Status::Ok
    }

    async fn update(&self, _table: &str, key: &str, values: Values) -> Status {
        let values = materialize(values);
        let mut rows = self.rows.lock().unwrap();
        let row = rows.entry(key.to_string()).or_default();
        for (k, v) in values {
            row.insert(k, v);
        }
        Status::Ok
    }

    async fn insert(&self, table: &str, key: &str, values: Values) -> Status {
        self.update(table, key, values).await
    }

    async fn delete(&self, _table: &str, key: &str) -> Status {
        match self.rows.lock().unwrap().remove(key) {
            Some(_) => Status::Ok,
            None => Status::NotFound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hbase_client::{Cell, CellType};

    #[test]
    fn a_record_of_hbase_cells_names_its_fields_in_cell_order_as_pairs_would() {
        let cells = vec![
            Cell::new("user1", "family", "field3", 7, CellType::Put, b"value-3"),
            Cell::new("user1", "family", b"f\xffx", 7, CellType::Put, b""),
            Cell::new("user1", "family", "field0", 7, CellType::Put, b"\x00\x01"),
        ];
        let record = Record::from_cells(cells);
        assert_eq!(record.len(), 3);
        assert!(!record.is_empty());
        let expected: Vec<(Field, Bytes)> = vec![
            (Field::from("field3"), Bytes::from_static(b"value-3")),
            (Field::from("f\u{fffd}x"), Bytes::new()),
            (Field::from("field0"), Bytes::from_static(b"\x00\x01")),
        ];
        assert_eq!(record.fields().collect::<Vec<_>>(), expected);
        assert_eq!(record, Record::from(expected.clone()));
        assert_eq!(record.clone().into_pairs(), expected);
        assert!(Record::from_cells(Vec::new()).is_empty());
        assert_eq!(Record::from_cells(Vec::new()), Record::new());
    }

    #[test]
    fn a_qualifier_becomes_its_field_name_shared_when_it_is_utf8() {
        let ascii = Bytes::from_static(b"field7");
        let f = Field::from_qualifier(ascii.clone());
        assert_eq!(f.as_str(), "field7");
        assert_eq!(
            f.bytes().as_ptr(),
            ascii.as_ptr(),
            "ASCII names share the bytes"
        );
        let utf8 = Bytes::from("champ\u{e9}".as_bytes().to_vec());
        let f = Field::from_qualifier(utf8.clone());
        assert_eq!(f.as_str(), "champ\u{e9}");
        assert_eq!(
            f.bytes().as_ptr(),
            utf8.as_ptr(),
            "UTF-8 names share the bytes"
        );
        let f = Field::from_qualifier(Bytes::from_static(b"bad\xff"));
        assert_eq!(f.as_str(), "bad\u{fffd}");
    }

    #[test]
    fn random_values_take_six_characters_from_each_draw() {
        use rand::{RngCore, SeedableRng};
        // The draws as RandomByteIterator consumes them: `first`, then the seeded source's.
        // Every head length (0 to 6) and every tail length (0 to 11), then longer values.
        for len in (0usize..=30).chain([100, 1000]) {
            // Each 64-bit draw of the seeded source gives two groups: its low half, then its high.
            let mut draws = vec![0xdead_beefu32];
            let mut rng = rand::rngs::SmallRng::seed_from_u64(99);
            for _ in 0..len / 12 + 1 {
                let both = rng.next_u64();
                draws.extend([both as u32, (both >> 32) as u32]);
            }
            let expect: Vec<u8> = draws
                .iter()
                .flat_map(|&r| {
                    [(0, 31), (5, 63), (10, 95), (15, 31), (20, 63), (25, 95)]
                        .map(|(shift, mask)| b' ' + ((r as i32 >> shift) & mask) as u8)
                })
                .take(len)
                .collect();
            let value = FieldValue::random(len, 0xdead_beef, 99);
            assert_eq!(&value.to_bytes()[..], &expect[..]);
            let mut written = vec![b'x'; value.len()];
            value.write_into(&mut written);
            assert_eq!(&written[..], &expect[..]);
        }
    }
}
