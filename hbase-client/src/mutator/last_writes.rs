//! The dispatcher's record, per row, of the region queue and number of the row's last placed
//! write: how a row's next write finds the queue that still holds an unanswered earlier one.
//!
//! The record is looked at once per mutation, when it is placed, and never when it is
//! answered. It used to be a count of each row's unanswered writes, kept exact: placement
//! looked the row up (or made its entry), forming its request counted it in flight, and its
//! answer counted it off and freed the entry with its last one. With tens of thousands of
//! rows unanswered (an 8 MiB write budget holds about 55,000), each of those three touches
//! missed the cache, and they cost about 16% of a buffered update's cycles at 32 writers
//! (`perf`: two misses in the answer's count-off alone, 9.9%).
//!
//! Now a write's answer touches nothing here. Whether a recorded write is answered is read
//! from its queue instead: a queue sends its writes in placement order and knows the first
//! write it has not had answered ([`answered_below`](super::dispatch)), so a record whose
//! number is below that, or whose queue is gone, is of an answered write. Such records are
//! left in place and dropped in a sweep just before the table would grow, which keeps it
//! within twice the rows with unanswered writes (plus the sweep's floor) at a cost per
//! placement that is constant on average.
//!
//! Rows are recorded by their 64-bit hash alone, so the table holds no keys (holding them
//! would also keep their buffers alive until a sweep). Two rows with one hash share a record:
//! the second then follows the first's queue while the first's write is unanswered, which
//! keeps both rows' writes in order (a queue sends what it holds in order, and the multi
//! layer routes each write by its own location), at worst one request later than needed.

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::hash::BuildHasher;

/// A placed write's number: the dispatcher's placement order, from 1 (0: none).
pub(super) type Seq = u64;

/// A region queue's incarnation: unique for the dispatcher's life, never reused (0: none).
pub(super) type QueueId = u64;

/// The last placed write of the rows with one hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LastWrite {
    hash: u64,
    /// The queue it was placed in (0: no write recorded yet).
    pub(super) queue: QueueId,
    /// Its number.
    pub(super) seq: Seq,
}

/// Rows' last placed writes, by row hash.
#[derive(Default)]
pub(super) struct LastWrites {
    table: HashTable<LastWrite>,
}

/// Below this many records no sweep runs: the table just grows (a sweep of a small table
/// would run every few placements).
const SWEEP_FLOOR: usize = 1024;

impl LastWrites {
    /// The hash rows are recorded by (FxHash: see `State::regions` in the dispatcher for why
    /// a non-keyed hash is acceptable here).
    pub(super) fn hash(row: &[u8]) -> u64 {
        FxBuildHasher.hash_one(row)
    }

    /// The record of the last placed write of the rows with `hash`: an empty one (queue 0)
    /// made now if there is none. Before the table would grow to make one, the records of
    /// answered writes are dropped: those whose queue is not among `queues` (each queue's
    /// id and [first unanswered number](super::dispatch), asked for only then) or whose
    /// number is below its queue's first unanswered one.
    pub(super) fn of(
        &mut self,
        hash: u64,
        queues: impl FnOnce() -> FxHashMap<QueueId, Seq>,
    ) -> &mut LastWrite {
        match self.table.find_entry(hash, |w| w.hash == hash) {
            Ok(found) => found.into_mut(),
            Err(absent) => {
                let table = absent.into_table();
                if table.len() == table.capacity() && table.len() >= SWEEP_FLOOR {
                    let queues = queues();
                    sweep(table, |w| queues.get(&w.queue).is_none_or(|&b| w.seq < b));
                }
                table
                    .insert_unique(
                        hash,
                        LastWrite {
                            hash,
                            queue: 0,
                            seq: 0,
                        },
                        |w| w.hash,
                    )
                    .into_mut()
            }
        }
    }

    /// Forgets every record (all are of answered writes: the dispatcher has no queue left)
    /// and frees the table.
    pub(super) fn shed(&mut self) {
        if self.table.capacity() > 0 {
            *self = LastWrites::default();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.len()
    }
}

/// Drops the records of answered writes from a full `table`. The rest move to a table of the
/// same capacity, or of room for as many again as the full one held when more than half are
/// kept, so the next sweep comes after at least half as many new rows as this one went over.
/// (Dropped in place, they would leave tombstones that count against the table's capacity,
/// and sweeps would come ever sooner.)
fn sweep(table: &mut HashTable<LastWrite>, answered: impl Fn(&LastWrite) -> bool) {
    let cap = table.capacity();
    let mut kept = HashTable::with_capacity(cap);
    for w in table.drain() {
        if !answered(&w) {
            kept.insert_unique(w.hash, w, |w| w.hash);
        }
    }
    if kept.len() > cap / 2 {
        kept.reserve(cap, |w| w.hash);
    }
    *table = kept;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Queue 1, none of its writes answered.
    fn none_answered() -> FxHashMap<QueueId, Seq> {
        FxHashMap::from_iter([(1, 0)])
    }

    #[test]
    fn a_row_finds_its_record_and_a_new_row_gets_an_empty_one() {
        let mut w = LastWrites::default();
        let k = LastWrites::hash(b"row1");
        assert_eq!(
            *w.of(k, none_answered),
            LastWrite {
                hash: k,
                queue: 0,
                seq: 0
            }
        );
        let r = w.of(k, none_answered);
        r.queue = 3;
        r.seq = 17;
        // The same bytes in another buffer hash the same.
        let again = LastWrites::hash(&bytes::Bytes::copy_from_slice(b"row1"));
        let r = *w.of(again, none_answered);
        assert_eq!((r.queue, r.seq), (3, 17));
        let other = LastWrites::hash(b"row2");
        assert_ne!(other, k);
        assert_eq!(w.of(other, none_answered).queue, 0);
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn answered_records_are_swept_only_when_the_table_would_grow() {
        let mut w = LastWrites::default();
        // Past the floor, up to the table's capacity, with nothing answered: no sweep. Every
        // tenth row's write is in queue 7, the others in queue 1.
        let queue_of = |seq: Seq| if seq % 10 == 0 { 7 } else { 1 };
        let mut seq = 0;
        while w.len() < SWEEP_FLOOR || w.len() < w.table.capacity() {
            seq += 1;
            let r = w.of(LastWrites::hash(format!("user{seq}").as_bytes()), || {
                panic!("swept before the table was full")
            });
            r.queue = queue_of(seq);
            r.seq = seq;
        }
        let full = seq;
        let cap = w.table.capacity();
        // A known row never sweeps, even in a full table.
        let known = w.of(LastWrites::hash(b"user1"), || {
            panic!("swept for a known row")
        });
        assert_eq!(known.seq, 1);
        // A new row in a full table: queue 1 has had its writes up to `half` answered, and
        // queue 7 is gone. Those records go; room is made without growing.
        let half = full / 2;
        let r = w.of(LastWrites::hash(b"new"), || {
            FxHashMap::from_iter([(1, half + 1)])
        });
        r.queue = 1;
        r.seq = seq + 1;
        let kept = |s: Seq| s > half && queue_of(s) == 1;
        assert_eq!(w.len(), (1..=full).filter(|&s| kept(s)).count() + 1);
        assert_eq!(w.table.capacity(), cap);
        for s in 1..=full {
            let h = LastWrites::hash(format!("user{s}").as_bytes());
            let found = w.table.find(h, |r| r.hash == h).is_some();
            assert_eq!(found, kept(s), "user{s}");
        }
        // The next sweep comes only when the table is full again.
        while w.len() < cap {
            seq += 1;
            w.of(LastWrites::hash(format!("later{seq}").as_bytes()), || {
                panic!("swept again before the table was full")
            });
        }
    }

    #[test]
    fn a_table_of_unanswered_writes_grows() {
        let mut w = LastWrites::default();
        for i in 0..5 * SWEEP_FLOOR {
            let r = w.of(LastWrites::hash(format!("r{i}").as_bytes()), none_answered);
            r.queue = 1;
            r.seq = i as Seq + 1;
        }
        assert_eq!(w.len(), 5 * SWEEP_FLOOR);
        w.shed();
        assert_eq!(w.len(), 0);
        assert_eq!(w.table.capacity(), 0);
    }
}
