//! The dispatcher's rows with unanswered placed mutations, each with a slot its mutations
//! carry from placement to answer.
//!
//! Every placed mutation used to look its row up in a map three times: when placed, when its
//! request was formed and when it was answered. With tens of thousands of rows unanswered (an
//! 8 MiB write budget holds about 55,000), each lookup could miss the cache twice (the bucket,
//! then the row key it compares), and the three, with their comparisons, made about 22% of a
//! buffered update's cycles at 32 writers. Now only placement looks the row up by its key.
//! The mutation then carries its row's slot number: forming the request reads the slot
//! directly, and the answer finds the row's entry in the hash table by the slot number it
//! holds (the table stores only slot numbers, 4 bytes each, so it stays small enough for the
//! cache) without comparing keys.

use bytes::Bytes;
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use slab::Slab;
use std::hash::BuildHasher;

/// What the dispatcher keeps of one row with unanswered placed mutations.
pub(super) struct PendingRow {
    /// The region queue that holds (or sent) all of them, so the row's writes go out in the
    /// order they were cut even when its region moved between two of them.
    pub(super) queue: Bytes,
    /// Placed and not yet answered.
    pub(super) placed: usize,
    /// Of those, in a request.
    pub(super) in_flight: usize,
    /// The last request that took one of its writes.
    pub(super) request: u64,
}

/// A slot number: the row's place in [`PendingRows`] while it has unanswered mutations.
pub(super) type RowSlot = u32;

struct Slot {
    row: Bytes,
    hash: u64,
    state: PendingRow,
}

/// Rows with unanswered placed mutations: found by key when a mutation is placed, then by the
/// slot number the mutation carries.
#[derive(Default)]
pub(super) struct PendingRows {
    /// Slot numbers of the rows in use, hashed by row key (FxHash: see `State::regions` in
    /// the dispatcher for why a non-keyed hash is acceptable here).
    index: HashTable<RowSlot>,
    /// The rows in use; a freed slot is the next one taken (the slab's free list).
    slots: Slab<Slot>,
}

impl PendingRows {
    fn hash(row: &[u8]) -> u64 {
        FxBuildHasher.hash_one(row)
    }

    /// The slot of `row`, made (with `fresh`'s state) if the row has none: its number, its
    /// state, and whether it was made now.
    pub(super) fn slot_of(
        &mut self,
        row: &Bytes,
        fresh: impl FnOnce() -> PendingRow,
    ) -> (RowSlot, &mut PendingRow, bool) {
        let hash = Self::hash(row);
        let slots = &self.slots;
        let found = self.index.find(hash, |&s| {
            slots.get(s as usize).is_some_and(|slot| slot.row == *row)
        });
        if let Some(&s) = found {
            return (s, &mut self.slots[s as usize].state, false);
        }
        // More rows pending than a u32 counts would need 4 billion mutations held by the write
        // budget at once: far beyond any budget's bytes.
        let s = RowSlot::try_from(self.slots.vacant_key()).expect("fewer than 2^32 rows pending");
        self.slots.insert(Slot {
            row: row.clone(),
            hash,
            state: fresh(),
        });
        let slots = &self.slots;
        self.index
            .insert_unique(hash, s, |&t| slots[t as usize].hash);
        (s, &mut self.slots[s as usize].state, true)
    }

    /// The state of the row in slot `s` (which must be in use).
    pub(super) fn get_mut(&mut self, s: RowSlot) -> &mut PendingRow {
        &mut self.slots[s as usize].state
    }

    /// One placed mutation of the row in slot `s` was answered (`in_flight`: from a request).
    /// The row's last one frees the slot, for another row to take.
    pub(super) fn settle(&mut self, s: RowSlot, in_flight: bool) {
        let Some(slot) = self.slots.get_mut(s as usize) else {
            debug_assert!(false, "settled a free row slot");
            return;
        };
        slot.state.placed -= 1;
        if in_flight {
            slot.state.in_flight -= 1;
        }
        if slot.state.placed > 0 {
            return;
        }
        let hash = slot.hash;
        if let Ok(entry) = self.index.find_entry(hash, |&t| t == s) {
            entry.remove();
        }
        self.slots.remove(s as usize);
    }

    /// Room for `n` more rows without growing the index one doubling at a time.
    pub(super) fn reserve(&mut self, n: usize) {
        let slots = &self.slots;
        self.index.reserve(n, |&t| slots[t as usize].hash);
    }

    /// Rows with unanswered placed mutations.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.index.len()
    }

    /// Frees the tables once no row is pending (the dispatcher calls it only when idle: while
    /// writes flow, the rows empty between two batches, and freeing then made each batch grow
    /// the tables again from nothing).
    pub(super) fn shed_if_empty(&mut self) {
        if self.index.is_empty() && (self.index.capacity() > 0 || self.slots.capacity() > 0) {
            *self = PendingRows::default();
        }
    }

    #[cfg(test)]
    fn row_of(&self, s: RowSlot) -> Option<&Bytes> {
        self.slots.get(s as usize).map(|slot| &slot.row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(queue: &'static str) -> impl FnOnce() -> PendingRow {
        move || PendingRow {
            queue: Bytes::from_static(queue.as_bytes()),
            placed: 1,
            in_flight: 0,
            request: 0,
        }
    }

    #[test]
    fn a_row_keeps_its_slot_until_its_last_mutation_is_answered() {
        let mut rows = PendingRows::default();
        let r1 = Bytes::from_static(b"row1");
        let (s1, _, made) = rows.slot_of(&r1, fresh("q1"));
        assert!(made);
        // A second write to the row (a different buffer with the same bytes) finds the slot.
        let (again, p, made) = rows.slot_of(&Bytes::copy_from_slice(b"row1"), fresh("q2"));
        assert_eq!((again, made), (s1, false));
        assert_eq!(&p.queue[..], b"q1");
        p.placed += 1;
        p.in_flight += 1;
        rows.settle(s1, true);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows.get_mut(s1).placed, 1);
        assert_eq!(rows.get_mut(s1).in_flight, 0);
        rows.settle(s1, false);
        assert_eq!(rows.len(), 0);
        assert_eq!(rows.row_of(s1), None);
        // Answered, the row is new again.
        let (_, p, made) = rows.slot_of(&r1, fresh("q3"));
        assert!(made);
        assert_eq!(&p.queue[..], b"q3");
    }

    #[test]
    fn freed_slots_are_reused_and_rows_never_share_one() {
        let mut rows = PendingRows::default();
        let keys: Vec<Bytes> = (0..1000).map(|i| Bytes::from(format!("user{i}"))).collect();
        let slots: Vec<RowSlot> = keys.iter().map(|k| rows.slot_of(k, fresh("q")).0).collect();
        assert_eq!(rows.len(), 1000);
        // Every other row answered: its slot is free, and new rows take those slots.
        for s in slots.iter().step_by(2) {
            rows.settle(*s, false);
        }
        assert_eq!(rows.len(), 500);
        let newer: Vec<Bytes> = (0..500).map(|i| Bytes::from(format!("new{i}"))).collect();
        for k in &newer {
            let (s, _, made) = rows.slot_of(k, fresh("q"));
            assert!(made);
            assert!(s < 1000, "slot {s} should be a reused one");
        }
        // Every row, old or new, finds its own slot, holding its own key.
        for (i, k) in keys.iter().enumerate().skip(1).step_by(2) {
            let (s, _, made) = rows.slot_of(k, fresh("q"));
            assert!(!made);
            assert_eq!(s, slots[i]);
            assert_eq!(rows.row_of(s), Some(k));
        }
        for k in &newer {
            let (s, _, made) = rows.slot_of(k, fresh("q"));
            assert!(!made);
            assert_eq!(rows.row_of(s), Some(k));
        }
        assert_eq!(rows.len(), 1000);
    }

    #[test]
    fn an_emptied_table_is_freed_only_when_asked_and_only_when_empty() {
        let mut rows = PendingRows::default();
        rows.reserve(64);
        let (a, _, _) = rows.slot_of(&Bytes::from_static(b"a"), fresh("q"));
        rows.shed_if_empty();
        assert_eq!(rows.len(), 1, "a pending row is kept");
        rows.settle(a, false);
        assert!(rows.index.capacity() > 0);
        rows.shed_if_empty();
        assert_eq!(rows.index.capacity(), 0);
        assert_eq!(rows.slots.capacity(), 0);
    }
}
