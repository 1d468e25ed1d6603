//! A mutator's open cuts: for each buffer it cut, how many of the cut's mutations are still
//! unanswered. `flush` waits until no cut up to its own is open.
//!
//! Every answer counts one mutation off here, under the mutator's lock. With thousands of
//! mutators (ycsb at 10,000 threads, one mutator each) the mutator an answer goes to is out of
//! the cache; a map kept apart from the mutator's state (a `BTreeMap`'s node) was one more miss
//! per answer, about a third of the answer's cycles (`perf`). A mutator usually has only a few
//! cuts open at a time, so they are kept inline, in the state the answer's lock already loads,
//! and spill to the heap only beyond that. (A cut answered while an older one is still open
//! stays as an empty marker until the older ones are answered: one mutation held back, by a
//! frozen region say, keeps every later cut's 16 bytes until it is answered or times out.)

use smallvec::SmallVec;

/// Cuts held inline before they spill to the heap.
const INLINE: usize = 4;

/// Open cuts, oldest first (cut numbers only grow).
#[derive(Debug, Default)]
pub(super) struct OpenCuts {
    /// `(cut, unanswered mutations)`, in cut order. Those before `start` are all answered
    /// (kept until the front is dropped in one go, so answering the oldest cut of many does
    /// not shift the rest each time); a cut answered out of order keeps its place with a count
    /// of 0 until every cut before it is answered too.
    cuts: SmallVec<[(u64, usize); INLINE]>,
    start: usize,
}

impl OpenCuts {
    /// Opens `cut` with `n` unanswered mutations (`cut` is newer than every cut held).
    pub(super) fn open(&mut self, cut: u64, n: usize) {
        debug_assert!(self.cuts.last().is_none_or(|&(last, _)| last < cut));
        if n > 0 {
            self.cuts.push((cut, n));
        }
    }

    /// One of `cut`'s mutations was answered.
    #[inline]
    pub(super) fn answered(&mut self, cut: u64) {
        if let Some(i) = self.find(cut) {
            let left = &mut self.cuts[i].1;
            *left -= 1;
            // Only an emptied oldest cut moves the front.
            if *left == 0 && i == self.start {
                self.drop_answered_front();
            }
        }
    }

    /// Forgets `cut` whole (it was never handed on).
    pub(super) fn close(&mut self, cut: u64) {
        if let Some(i) = self.find(cut) {
            self.cuts[i].1 = 0;
            self.drop_answered_front();
        }
    }

    /// Whether a cut numbered `cut` or lower is still open.
    pub(super) fn any_up_to(&self, cut: u64) -> bool {
        self.cuts.get(self.start).is_some_and(|&(c, _)| c <= cut)
    }

    /// Unanswered mutations, over every open cut.
    pub(super) fn unanswered(&self) -> usize {
        self.cuts[self.start..].iter().map(|&(_, n)| n).sum()
    }

    #[inline]
    fn find(&self, cut: u64) -> Option<usize> {
        let open = &self.cuts[self.start..];
        // The oldest is the usual one; else a binary search (cut numbers are sorted).
        match open.first() {
            Some(&(c, n)) if c == cut && n > 0 => Some(self.start),
            _ => open
                .binary_search_by_key(&cut, |&(c, _)| c)
                .ok()
                .filter(|&i| open[i].1 > 0)
                .map(|i| self.start + i),
        }
    }

    /// Moves `start` past the answered cuts at the front; drops them once they are all
    /// answered or make up half of what is held (so each is moved at most once on average).
    fn drop_answered_front(&mut self) {
        while self.cuts.get(self.start).is_some_and(|&(_, n)| n == 0) {
            self.start += 1;
        }
        if self.start == self.cuts.len() {
            if self.cuts.spilled() {
                // An emptied heap buffer is freed: an idle mutator holds nothing.
                self.cuts = SmallVec::new();
            } else {
                self.cuts.clear();
            }
            self.start = 0;
        } else if self.start > INLINE && self.start * 2 > self.cuts.len() {
            self.cuts.drain(..self.start);
            self.start = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_is_open_until_each_of_its_mutations_is_answered() {
        let mut c = OpenCuts::default();
        c.open(1, 2);
        c.open(2, 1);
        assert!(c.any_up_to(1));
        assert_eq!(c.unanswered(), 3);
        c.answered(2);
        // Cut 2 is answered out of order: cut 1 still holds `flush(upto 1)` and `flush(upto 2)`.
        assert!(c.any_up_to(1) && c.any_up_to(2));
        assert_eq!(c.unanswered(), 2);
        c.answered(1);
        assert!(c.any_up_to(1));
        c.answered(1);
        assert!(!c.any_up_to(1) && !c.any_up_to(2) && !c.any_up_to(u64::MAX));
        assert_eq!(c.unanswered(), 0);
        // A cut of nothing opens nothing; answering a cut not held changes nothing.
        c.open(3, 0);
        c.answered(3);
        assert!(!c.any_up_to(3));
    }

    #[test]
    fn a_closed_cut_is_forgotten_whole() {
        let mut c = OpenCuts::default();
        c.open(1, 1);
        c.open(2, 5);
        c.close(2);
        assert_eq!(c.unanswered(), 1);
        assert!(!c.any_up_to(0) && c.any_up_to(2));
        c.answered(1);
        assert!(!c.any_up_to(2));
    }

    /// Against a model (a map of counts), over many cuts answered in a scrambled order: the
    /// inline part spills, the answered front is dropped and the buffer freed, and every
    /// count and `any_up_to` agrees with the model throughout.
    #[test]
    fn many_cuts_answered_in_any_order_agree_with_a_map() {
        use std::collections::BTreeMap;
        let mut c = OpenCuts::default();
        let mut model: BTreeMap<u64, usize> = BTreeMap::new();
        let mut pending: Vec<u64> = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |bound: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % bound as u64) as usize
        };
        let mut cut = 0;
        for round in 0..2_000 {
            if round % 3 != 2 {
                cut += 1;
                let n = 1 + next(3);
                c.open(cut, n);
                model.insert(cut, n);
                pending.extend(std::iter::repeat_n(cut, n));
            }
            // Two answers a round on average, against 2.7 mutations cut: the open cuts pile
            // up, spill, and their answered front is dropped many times over.
            for _ in 0..next(5) {
                if pending.is_empty() {
                    break;
                }
                // Mostly the oldest, sometimes any.
                let i = if next(4) == 0 { next(pending.len()) } else { 0 };
                let answered = pending.remove(i);
                c.answered(answered);
                let n = model.get_mut(&answered).unwrap();
                *n -= 1;
                if *n == 0 {
                    model.remove(&answered);
                }
            }
            assert_eq!(c.unanswered(), model.values().sum::<usize>());
            // Around the oldest open cut, and anywhere.
            let oldest = model.keys().next().copied().unwrap_or(cut + 1);
            for probe in [oldest - 1, oldest, next(cut as usize + 2) as u64] {
                assert_eq!(
                    c.any_up_to(probe),
                    model.keys().next().is_some_and(|&k| k <= probe),
                    "round {round}, probe {probe}"
                );
            }
        }
        for a in pending {
            c.answered(a);
        }
        assert_eq!(c.unanswered(), 0);
        assert!(!c.cuts.spilled() && c.cuts.is_empty());
    }
}
