//! Bytes for the HBase binding's row keys, carved from small shared chunks.
//!
//! A key in a `Vec` of its own took a second allocation (the `Bytes` shared header) when the
//! mutator first cloned it. Carved, keys share one allocation per chunk (about twenty of
//! YCSB's 23-byte keys). A read's row key is cut from the chunks too. (Values were carved as
//! well until a put generated its values in its own buffer.) The HBase binding keeps one
//! carver per thread that runs tasks, a runtime worker or the main thread of the one-thread
//! runtime (it kept one per client thread until 10,000 threads' chunks proved cold at every
//! use). A chunk is freed when the last row carved from it is dropped.

use bytes::{Bytes, BytesMut};

/// Bytes per chunk (a larger piece gets a chunk of its own size).
pub const CHUNK: usize = 512;

/// One thread's current chunk.
#[derive(Default)]
pub struct Carver(BytesMut);

impl Carver {
    /// `len` bytes written by `fill` (given them zeroed), shared with the chunk they are cut
    /// from.
    pub fn carve(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Bytes {
        // After each cut the chunk is empty, with what is left of its room.
        if self.0.capacity() < len {
            self.0 = BytesMut::with_capacity(CHUNK.max(len));
        }
        self.0.resize(len, 0);
        fill(&mut self.0[..]);
        self.0.split().freeze()
    }

    /// A copy of `bytes`.
    pub fn copy(&mut self, bytes: &[u8]) -> Bytes {
        self.carve(bytes.len(), |out| out.copy_from_slice(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_cut_one_after_another_from_one_chunk() {
        let mut c = Carver::default();
        let key = c.copy(b"user1234");
        let value = c.carve(100, |out| out.fill(b'v'));
        assert_eq!(&key[..], b"user1234");
        assert_eq!(&value[..], &[b'v'; 100][..]);
        // Adjacent in one allocation.
        assert_eq!(value.as_ptr(), key.as_ptr().wrapping_add(key.len()));
        // Given zeroed, whatever the chunk held before.
        let zeroed = c.carve(10, |_| {});
        assert_eq!(&zeroed[..], &[0; 10][..]);
    }

    #[test]
    fn a_full_chunk_is_replaced_and_the_pieces_cut_from_it_stay() {
        let mut c = Carver::default();
        let pieces: Vec<Bytes> = (0..100u8)
            .map(|i| c.carve(100, |out| out.fill(i)))
            .collect();
        for (i, p) in pieces.iter().enumerate() {
            assert_eq!(&p[..], &[i as u8; 100][..], "piece {i}");
        }
        // 5 pieces of 100 bytes fit a 512-byte chunk: 20 chunks.
        let starts = pieces
            .windows(2)
            .filter(|w| w[1].as_ptr() != w[0].as_ptr().wrapping_add(100))
            .count();
        assert_eq!(starts + 1, 100usize.div_ceil(CHUNK / 100));
        // Larger than a chunk: a chunk of its own size.
        let big = c.carve(5000, |out| out.fill(7));
        assert_eq!(big.len(), 5000);
        assert!(big.iter().all(|&b| b == 7));
        assert_eq!(&c.copy(b"after")[..], b"after");
    }
}
