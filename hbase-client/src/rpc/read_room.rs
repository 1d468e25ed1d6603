//! How much room the connection's reader keeps ahead of the bytes it has read.
//!
//! A read fills whatever room the buffer has. A frame that does not fit the room left goes to
//! a new buffer, and the part of it already read is copied there. Frames of a few hundred
//! bytes (gets, mutations) seldom straddle the end of a 64 KiB buffer; scan answers of 100 KiB
//! and more straddled nearly every one, and the copies (and the reallocations of a buffer that
//! grew in steps) were an eighth of a workload E scan's instructions. So the room follows the
//! frames: when a buffer must be replaced, the new one has room for twice the largest recent
//! frame, from 64 KiB up to 1 MiB beyond what its frame needs.
//!
//! Memory: a buffer never shrinks, and frames split from it (the rows of an answer) keep it
//! alive. After large answers a connection holds a buffer of up to about 1 MiB plus its
//! largest frame, where it held 64 KiB plus its largest frame before; answers over 1 MiB (a
//! scan's `max_result_size` is 2 MiB by default) still straddle and are copied.

use bytes::BytesMut;

/// The largest recent frame, and the room it asks for.
#[derive(Debug)]
pub(crate) struct ReadRoom {
    /// The largest frame lately, decaying by a sixteenth with each frame after it.
    recent: usize,
}

impl ReadRoom {
    /// The least room a new buffer has (and a connection's first).
    pub(crate) const MIN: usize = 64 * 1024;
    /// The most room a new buffer is given beyond what its frame needs.
    pub(crate) const MAX: usize = 1 << 20;

    pub(crate) fn new() -> ReadRoom {
        ReadRoom { recent: 0 }
    }

    /// A frame of `len` bytes arrived.
    #[inline]
    pub(crate) fn saw(&mut self, len: usize) {
        self.recent = len.max(self.recent - self.recent / 16);
    }

    /// The room a new buffer gets.
    pub(crate) fn size(&self) -> usize {
        self.recent.saturating_mul(2).clamp(Self::MIN, Self::MAX)
    }

    /// Frames from this size on are made room for before they arrive.
    const LARGE: usize = Self::MIN / 4;

    /// Before a read, when recent frames are large: when the room left cannot take one, room
    /// for two (the bytes not yet split off, at most the start of a frame, copied over). Not
    /// for small frames: they seldom straddle, and a buffer replaced before the read, while
    /// the caller of its last frame still holds it, cannot be reused (gets allocated a new
    /// 64 KiB buffer every 40 calls that way, instead of none).
    #[inline]
    pub(crate) fn make(&self, buf: &mut BytesMut) {
        let frame = self.recent.min(Self::MAX);
        if frame >= Self::LARGE && buf.capacity() - buf.len() < frame {
            self.grow(buf, frame);
        }
    }

    /// `buf` holds the start of a frame of `total` bytes (its length included): when the rest
    /// does not fit, a new buffer with room for it and for recent frames after it. Asks for
    /// at most 1 MiB (or the room) more at a time, so a corrupt length below the frame limit
    /// does not allocate hundreds of MiB before the bytes arrive (`BytesMut` may double a
    /// buffer it owns alone; the next growth then waits for bytes to fill it).
    #[inline]
    pub(crate) fn fit(&self, buf: &mut BytesMut, total: usize) {
        let rest = total.saturating_sub(buf.len());
        if buf.capacity() - buf.len() < rest {
            self.grow(buf, rest.min(1 << 20));
        }
    }

    /// Room for at least `additional` more bytes, and for [`size`](ReadRoom::size) in all with
    /// the bytes already there: asking for no more than that lets a buffer whose frames were all
    /// dropped be reused (its bytes moved to its front) instead of a new one allocated, as gets
    /// of a few KiB do nearly every time.
    fn grow(&self, buf: &mut BytesMut, additional: usize) {
        buf.reserve(additional.max(self.size().saturating_sub(buf.len())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    #[test]
    fn the_room_follows_the_largest_recent_frame_within_bounds() {
        let mut room = ReadRoom::new();
        assert_eq!(room.size(), ReadRoom::MIN);
        room.saw(300);
        assert_eq!(room.size(), ReadRoom::MIN);
        room.saw(160_000);
        assert_eq!(room.size(), 320_000);
        room.saw(500);
        assert_eq!(room.size(), 2 * (160_000 - 10_000));
        room.saw(5 << 20);
        assert_eq!(room.size(), ReadRoom::MAX);
        // Small frames only: back to the least room.
        for _ in 0..200 {
            room.saw(100);
        }
        assert_eq!(room.size(), ReadRoom::MIN);
    }

    #[test]
    fn a_buffer_is_replaced_only_when_its_room_is_short() {
        let mut room = ReadRoom::new();
        let mut buf = BytesMut::with_capacity(ReadRoom::MIN);
        buf.put_slice(&[7; 100]);
        let before = buf.as_ptr();
        room.make(&mut buf);
        assert_eq!(buf.as_ptr(), before, "no recent frame asks for room");
        room.saw(200_000);
        room.make(&mut buf);
        assert!(buf.capacity() >= 400_000);
        assert_eq!(&buf[..], &[7; 100], "the unread bytes come along");
        let before = buf.as_ptr();
        room.make(&mut buf);
        assert_eq!(buf.as_ptr(), before, "the room is there now");
    }

    #[test]
    fn small_frames_reuse_a_buffer_whose_frames_were_dropped() {
        let mut room = ReadRoom::new();
        let mut buf = BytesMut::with_capacity(ReadRoom::MIN);
        let start = buf.as_ptr();
        buf.put_slice(&[5; 62_000]);
        drop(buf.split_to(61_000).freeze());
        room.saw(4_000);
        // 1,000 bytes left and 3,536 of room after them: small frames wait for the read.
        room.make(&mut buf);
        assert_eq!(buf.capacity(), 4_536, "nothing done before the read");
        // A frame of 5,000 bytes does not fit: the buffer is reused, its bytes moved to its front.
        room.fit(&mut buf, 5_000);
        assert_eq!(buf.as_ptr(), start, "the same allocation");
        assert_eq!(&buf[..], &[5; 1_000]);
        assert!(buf.capacity() - buf.len() >= 4_000);
        // While a frame of it is held: a new buffer.
        buf.put_slice(&[6; 61_000]);
        let frame = buf.split_to(61_500).freeze();
        room.fit(&mut buf, 5_000);
        assert_ne!(buf.as_ptr(), start);
        assert_eq!(&buf[..], &[6; 500]);
        drop(frame);
    }

    #[test]
    fn a_frame_that_does_not_fit_gets_room_for_its_rest_and_more() {
        let mut room = ReadRoom::new();
        let mut buf = BytesMut::with_capacity(ReadRoom::MIN);
        buf.put_slice(&[1; 1000]);
        let before = buf.as_ptr();
        room.fit(&mut buf, 50_000);
        assert_eq!(buf.as_ptr(), before, "the rest fits");
        room.saw(300_000);
        room.fit(&mut buf, 300_000);
        assert!(buf.capacity() >= 600_000, "{}", buf.capacity());
        assert_eq!(&buf[..], &[1; 1000]);
        // A length far past the bytes grows the buffer by 1 MiB or the room, not to the length.
        let mut buf = BytesMut::with_capacity(16);
        room.fit(&mut buf, 500 << 20);
        assert!(buf.capacity() <= 2 << 20, "{}", buf.capacity());
        assert!(buf.capacity() >= 1 << 20);
    }
}
