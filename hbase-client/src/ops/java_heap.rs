//! The Java client's heap-size arithmetic for mutations: what hbase-client 2.x's
//! `Mutation.heapSize()` returns for the same mutation, which its `BufferedMutator` adds up
//! against `hbase.client.write.buffer` and its request controller against
//! `hbase.client.max.perrequest.heapsize`. Our write buffers count the same figure so that
//! they flush after as many mutations as Java's (`tests/heap_size.rs` compares it with the
//! Java client's own on hundreds of mutations).
//!
//! Java counts its own objects: the mutation, its row array, a `TreeMap` entry, a family
//! array, an `ArrayList` and its array of references per family, and per cell a `KeyValue`
//! and its backing array. The figures are `ClassSize`'s on a 64-bit JVM with compressed
//! references (the default below 32 GiB of heap): a 12-byte object header, 4-byte
//! references, a 16-byte array header, everything aligned to 8 bytes. None of it is memory
//! this client holds (see `memory_size` for that).
//!
//! All of it saturates: a put counts a cell before it reserves the cell's room, so lengths
//! no buffer can hold reach it (such a put is refused before it is sent; its figure is then
//! an estimate, `usize::MAX` at most).

use std::collections::HashMap;

/// `ClassSize.align`: rounded up to a multiple of 8.
pub(crate) const fn align(n: usize) -> usize {
    n.saturating_add(7) & !7
}

/// `ClassSize.sizeOfByteArray`: a `byte[]` of `len` bytes (16-byte header).
pub(crate) const fn array(len: usize) -> usize {
    align(len.saturating_add(16))
}

/// `Mutation.MUTATION_OVERHEAD`: the object (header, row and attribute references, timestamp,
/// durability and family-map references, priority) and its empty `TreeMap`.
const MUTATION_OVERHEAD: usize = 104;

/// A `TreeMap` entry (`ClassSize.MAP_ENTRY`), one per family.
const MAP_ENTRY: usize = 40;

/// An `ArrayList` (`ClassSize.ARRAYLIST`), one per family.
const ARRAYLIST: usize = 40;

/// What `Increment` and `Append` add (`extraHeapSize`): a reference and a `TimeRange`.
pub(crate) const TIME_RANGE_EXTRA: usize = 36;

/// The mutation's own part: its overhead and its row array.
pub(crate) const fn row(row_len: usize) -> usize {
    array(row_len).saturating_add(MUTATION_OVERHEAD)
}

/// One family's part: its map entry, its name array, its `ArrayList` and that list's array of
/// `cells` references (its size, not its capacity).
pub(crate) const fn family(family_len: usize, cells: usize) -> usize {
    let references = align(cells.saturating_mul(4).saturating_add(16));
    array(family_len)
        .saturating_add(MAP_ENTRY + ARRAYLIST)
        .saturating_add(references)
}

/// `KeyValue.heapSize()` of a cell that owns its array: the object (header, array reference,
/// offset, length, sequence id) and the array of `kv_len` bytes (the cell's two lengths, key
/// and value: what our cell block encodes after the cell's total length).
pub(crate) const fn cell(kv_len: usize) -> usize {
    array(kv_len).saturating_add(32)
}

/// A cell's `KeyValue` length: its key (row, family, qualifier and their infrastructure) and
/// value, and the two lengths before them.
pub(crate) const fn kv_len(row: usize, family: usize, qualifier: usize, value: usize) -> usize {
    (8 + crate::cell::KEY_INFRASTRUCTURE)
        .saturating_add(row)
        .saturating_add(family)
        .saturating_add(qualifier)
        .saturating_add(value)
}

/// The families of a mutation's cells, added cell by cell as Java's family map groups them:
/// each distinct family once, with its cells. Up to `INLINE` families are kept without
/// allocating; a mutation of more (rare) spills them into a map, so that many families cost
/// a hash each, not a search of all the others.
pub(crate) struct Families<'a> {
    inline: [(&'a [u8], usize, usize); INLINE],
    len: usize,
    spilled: HashMap<&'a [u8], (usize, usize)>,
}

const INLINE: usize = 8;

impl<'a> Families<'a> {
    pub(crate) fn new() -> Families<'a> {
        Families {
            inline: [(&[], 0, 0); INLINE],
            len: 0,
            spilled: HashMap::new(),
        }
    }

    /// A cell of `family` whose `KeyValue` is `kv_len` bytes, added to its family's list.
    pub(crate) fn add(&mut self, family: &'a [u8], kv_len: usize) {
        let cell = cell(kv_len);
        let (cells, bytes) = match self.inline[..self.len].iter_mut().find(|e| e.0 == family) {
            Some((_, cells, bytes)) => (cells, bytes),
            None if self.len < INLINE => {
                self.inline[self.len] = (family, 0, 0);
                self.len += 1;
                let (_, cells, bytes) = &mut self.inline[self.len - 1];
                (cells, bytes)
            }
            None => {
                let (cells, bytes) = self.spilled.entry(family).or_insert((0, 0));
                (cells, bytes)
            }
        };
        *cells += 1;
        *bytes = bytes.saturating_add(cell);
    }

    /// The families' part of the heap size: the parts of the families and their cells.
    pub(crate) fn heap_size(&self) -> usize {
        let spilled = self
            .spilled
            .iter()
            .map(|(f, &(cells, bytes))| (*f, cells, bytes));
        self.inline[..self.len]
            .iter()
            .copied()
            .chain(spilled)
            .map(|(f, cells, bytes)| family(f.len(), cells).saturating_add(bytes))
            .fold(0, usize::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figure the README quotes, worked by hand from Java's formula: a YCSB put (row
    /// `user` + 19 digits, ten 6-byte qualifiers of 100 bytes in the family `family`) is
    /// 2,384 bytes by `Put.heapSize()`.
    /// Lengths no buffer holds saturate instead of overflowing (a put counts a cell before it
    /// reserves its room); families past the inline ones are counted alike.
    #[test]
    fn huge_lengths_saturate() {
        let huge = usize::MAX - 3;
        assert_eq!(align(usize::MAX), usize::MAX & !7);
        assert!(array(huge) >= usize::MAX - 7);
        assert!(cell(huge) >= usize::MAX - 7);
        assert!(kv_len(huge, huge, huge, huge) >= usize::MAX - 7);
        assert!(row(huge) >= usize::MAX - 7);
        assert!(family(huge, huge) >= usize::MAX - 7);
        let mut families = Families::new();
        let names: Vec<[u8; 1]> = (0..12u8).map(|i| [i]).collect();
        for name in &names {
            families.add(name, huge);
            families.add(name, huge);
        }
        assert!(families.heap_size() >= usize::MAX - 7);
    }

    #[test]
    fn a_ycsb_put_is_2384_bytes() {
        let mut families = Families::new();
        for _ in 0..10 {
            families.add(b"family", kv_len(23, 6, 6, 100));
        }
        assert_eq!(row(23) + families.heap_size(), 2384);
    }
}
