//! `RegionMap`: one table's cached regions by start key, with a lookup by row that costs a few
//! integer comparisons.
//!
//! Every located row pays for this lookup: each Get, each buffered mutation when the
//! dispatcher places it. With `BTreeMap::range(..=row).next_back()` it cost about 400
//! instructions on a 12-region table and 720 on a 200-region one (callgrind), most of it the
//! range machinery and a `memcmp` for each key a node's search passes; this map takes about
//! 240 and 320. Here each entry carries the first sixteen bytes of its start
//! key as a big-endian integer; a binary search compares those integers and reads whole keys
//! only where two share their first sixteen bytes.
//!
//! Entries sit in sorted chunks of at most [`CHUNK`], so a region learned in a table of 100,000
//! moves at most one chunk's entries, not the table's.

use std::cmp::Ordering;

use bytes::Bytes;

/// The most entries one chunk holds before it is split in two.
const CHUNK: usize = 512;

/// The first sixteen bytes of `key`, big-endian, zero-padded. Ordering by it and then by the
/// whole key is the keys' byte order: where the prefixes differ, they differ at the first byte
/// where the keys differ, or where the shorter key ends (its padding, zero, is the least byte
/// and it is the lesser key); where they are equal, the whole keys decide. Sixteen, not eight:
/// keys of one table often share their first eight bytes (`row00000123`), rarely sixteen.
#[inline]
fn prefix(key: &[u8]) -> u128 {
    match key.first_chunk::<16>() {
        // One load, not a copy of a variable length.
        Some(first) => u128::from_be_bytes(*first),
        None => {
            let mut bytes = [0u8; 16];
            bytes[..key.len()].copy_from_slice(key);
            u128::from_be_bytes(bytes)
        }
    }
}

struct Entry<V> {
    prefix: u128,
    start: Bytes,
    value: V,
}

impl<V> Entry<V> {
    /// Whether this entry's start key is below `key` (whose prefix is `p`), or equal to it
    /// when `inclusive`. The prefixes decide unless they are equal.
    #[inline]
    fn is_below(&self, p: u128, key: &[u8], inclusive: bool) -> bool {
        if self.prefix != p {
            return self.prefix < p;
        }
        match self.start[..].cmp(key) {
            Ordering::Less => true,
            Ordering::Equal => inclusive,
            Ordering::Greater => false,
        }
    }
}

/// Start key → value, in key order.
pub(crate) struct RegionMap<V> {
    /// Sorted, each non-empty, each chunk's keys below the next chunk's.
    chunks: Vec<Vec<Entry<V>>>,
    chunk_limit: usize,
}

impl<V> Default for RegionMap<V> {
    fn default() -> Self {
        RegionMap::with_chunk_limit(CHUNK)
    }
}

impl<V> RegionMap<V> {
    /// A map whose chunks hold at most `limit` entries (tests use small ones).
    fn with_chunk_limit(limit: usize) -> Self {
        RegionMap {
            chunks: Vec::new(),
            chunk_limit: limit.max(2),
        }
    }

    /// Where the entries whose keys are below `key` (or at most `key`, when `inclusive`) end:
    /// the chunk holding the last of them and the index after it, or `None` if there are none.
    fn end_of_keys_below(&self, key: &[u8], inclusive: bool) -> Option<(usize, usize)> {
        let p = prefix(key);
        let below = |e: &Entry<V>| e.is_below(p, key, inclusive);
        let chunk = match self.chunks.len() {
            // Up to CHUNK regions (most tables): no search among chunks.
            1 => 0,
            _ => self
                .chunks
                .partition_point(|c| below(&c[0]))
                .checked_sub(1)?,
        };
        let end = self.chunks.get(chunk)?.partition_point(below);
        (end > 0).then_some((chunk, end))
    }

    /// The value of the last key at most `key` (the region that holds row `key`, if any does).
    pub(crate) fn floor(&self, key: &[u8]) -> Option<(&Bytes, &V)> {
        let (c, i) = self.end_of_keys_below(key, true)?;
        let e = &self.chunks[c][i - 1];
        Some((&e.start, &e.value))
    }

    /// The value of the last key below `key`.
    pub(crate) fn below(&self, key: &[u8]) -> Option<(&Bytes, &V)> {
        let (c, i) = self.end_of_keys_below(key, false)?;
        let e = &self.chunks[c][i - 1];
        Some((&e.start, &e.value))
    }

    /// The value at exactly `key`.
    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        self.floor(key)
            .and_then(|(k, v)| (k[..] == *key).then_some(v))
    }

    /// The entry with the greatest key.
    pub(crate) fn last(&self) -> Option<(&Bytes, &V)> {
        let e = self.chunks.last()?.last()?;
        Some((&e.start, &e.value))
    }

    /// Puts `value` at `key`; returns the value it replaced.
    pub(crate) fn insert(&mut self, key: Bytes, value: V) -> Option<V> {
        let entry = Entry {
            prefix: prefix(&key),
            start: key,
            value,
        };
        let Some((c, i)) = self.end_of_keys_below(&entry.start, true) else {
            // Below every key: the front of the first chunk.
            match self.chunks.first_mut() {
                Some(first) => first.insert(0, entry),
                None => self.chunks.push(vec![entry]),
            }
            self.split_if_full(0);
            return None;
        };
        let chunk = &mut self.chunks[c];
        if chunk[i - 1].start == entry.start {
            return Some(std::mem::replace(&mut chunk[i - 1].value, entry.value));
        }
        chunk.insert(i, entry);
        self.split_if_full(c);
        None
    }

    fn split_if_full(&mut self, c: usize) {
        if self.chunks[c].len() > self.chunk_limit {
            let half = self.chunks[c].len() / 2;
            let upper = self.chunks[c].split_off(half);
            self.chunks.insert(c + 1, upper);
        }
    }

    /// Removes the entry at exactly `key`; returns its value.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        let (c, i) = self.end_of_keys_below(key, true)?;
        if self.chunks[c][i - 1].start[..] != *key {
            return None;
        }
        let removed = self.chunks[c].remove(i - 1);
        if self.chunks[c].is_empty() {
            self.chunks.remove(c);
        }
        Some(removed.value)
    }

    /// The entries from the first key at least `key` on, in order.
    pub(crate) fn from(&self, key: &[u8]) -> impl Iterator<Item = (&Bytes, &V)> {
        let (c, i) = self.end_of_keys_below(key, false).unwrap_or((0, 0));
        self.chunks
            .get(c)
            .map_or(&[][..], |chunk| &chunk[i..])
            .iter()
            .chain(self.chunks.iter().skip(c + 1).flatten())
            .map(|e| (&e.start, &e.value))
    }

    /// Keeps only the entries for which `keep` is true.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Bytes, &V) -> bool) {
        for chunk in &mut self.chunks {
            chunk.retain(|e| keep(&e.start, &e.value));
        }
        self.chunks.retain(|c| !c.is_empty());
    }

    /// Number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::Bound;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn prefix_order_is_byte_order_at_the_edges() {
        let keys: [&[u8]; 11] = [
            b"",
            b"\0",
            b"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            b"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            b"ab",
            b"ab\0",
            b"ab\0\x01",
            b"user123456789012",
            b"user1234567890123",
            b"user123456789013",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for a in keys {
            for b in keys {
                let by_prefix = prefix(a).cmp(&prefix(b)).then_with(|| a.cmp(b));
                assert_eq!(by_prefix, a.cmp(b), "{a:?} against {b:?}");
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>, u32),
        Remove(Vec<u8>),
        Retain(u32),
    }

    /// Keys from a small alphabet that includes zero bytes and shares long prefixes, so ties
    /// of the sixteen-byte prefix and keys that are prefixes of others are common.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(b'u')], 0..20),
            (0u32..400).prop_map(|i| format!("user00000000000{i}").into_bytes()),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (key(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            2 => key().prop_map(Op::Remove),
            1 => (2u32..5).prop_map(Op::Retain),
        ]
    }

    proptest! {
        /// Every operation and lookup agrees with a `BTreeMap`, with chunks small enough that
        /// entries split across many of them.
        #[test]
        fn agrees_with_a_btreemap(
            ops in proptest::collection::vec(op(), 1..300),
            probes in proptest::collection::vec(key(), 1..40),
            limit in 2usize..6,
        ) {
            let mut map = RegionMap::with_chunk_limit(limit);
            let mut model: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        prop_assert_eq!(map.insert(Bytes::from(k.clone()), v), model.insert(k, v));
                    }
                    Op::Remove(k) => prop_assert_eq!(map.remove(&k), model.remove(&k)),
                    Op::Retain(m) => {
                        map.retain(|_, v| v % m != 0);
                        model.retain(|_, v| *v % m != 0);
                    }
                }
                prop_assert_eq!(map.len(), model.len());
                prop_assert!(map.chunks.iter().all(|c| !c.is_empty() && c.len() <= limit));
            }
            let all: Vec<(Vec<u8>, u32)> = map.from(b"").map(|(k, v)| (k.to_vec(), *v)).collect();
            let expected: Vec<(Vec<u8>, u32)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(all, expected);
            let pair = |e: Option<(&Vec<u8>, &u32)>| e.map(|(k, v)| (k.clone(), *v));
            let ours = |e: Option<(&Bytes, &u32)>| e.map(|(k, v)| (k.to_vec(), *v));
            prop_assert_eq!(ours(map.last()), pair(model.iter().next_back()));
            for p in probes {
                let floor = model.range::<[u8], _>((Bound::Unbounded, Bound::Included(&p[..]))).next_back();
                prop_assert_eq!(ours(map.floor(&p)), pair(floor));
                let below = model.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(&p[..]))).next_back();
                prop_assert_eq!(ours(map.below(&p)), pair(below));
                prop_assert_eq!(map.get(&p), model.get(&p));
                let from: Vec<Vec<u8>> = map.from(&p).map(|(k, _)| k.to_vec()).collect();
                let expected: Vec<Vec<u8>> = model.range::<[u8], _>((Bound::Included(&p[..]), Bound::Unbounded)).map(|(k, _)| k.clone()).collect();
                prop_assert_eq!(from, expected);
            }
        }
    }
}
