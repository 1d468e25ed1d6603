//! Protobuf varints and field keys, written with their one-byte case inline.
//!
//! prost's `encode_varint` is a loop the compiler keeps out of line: about 30 instructions a
//! call, and a get's request frame made nine such calls (field keys, lengths, the call id),
//! nearly all for values under 128 (callgrind, `ycsb` workload C: 267 instructions a read).
//! Here a value under 128 is one byte store in the caller (a constant key folds to a constant
//! byte); anything longer goes to prost's loop. The bytes are prost's, which the tests check.

use bytes::BufMut;
use prost::encoding::WireType;

/// Writes `value` as a varint, as `prost::encoding::encode_varint` does.
#[inline(always)]
pub(crate) fn put_varint(value: u64, buf: &mut impl BufMut) {
    if value < 0x80 {
        buf.put_u8(value as u8);
    } else {
        put_long_varint(value, buf);
    }
}

/// Two bytes or more (a call id past 127, a timeout in milliseconds, a length): prost's loop.
/// (Building the bytes in a scratch array and putting them at once was no cheaper.)
#[inline(never)]
fn put_long_varint(value: u64, buf: &mut impl BufMut) {
    prost::encoding::encode_varint(value, buf);
}

/// Writes the key of field `tag` with `wire_type`, as `prost::encoding::encode_key` does.
#[inline(always)]
pub(crate) fn put_key(tag: u32, wire_type: WireType, buf: &mut impl BufMut) {
    debug_assert!((1..=prost::encoding::MAX_TAG).contains(&tag));
    put_varint(u64::from(tag << 3 | wire_type as u32), buf);
}

/// The key and the length of a length-delimited field `tag` of `len` bytes (its bytes follow).
#[inline(always)]
pub(crate) fn put_len_key(tag: u32, len: usize, buf: &mut impl BufMut) {
    put_key(tag, WireType::LengthDelimited, buf);
    put_varint(len as u64, buf);
}

/// A `uint32` field, as `prost::encoding::uint32::encode` writes it.
#[inline(always)]
pub(crate) fn put_uint32(tag: u32, value: u32, buf: &mut impl BufMut) {
    put_key(tag, WireType::Varint, buf);
    put_varint(u64::from(value), buf);
}

/// A `uint64` field, as `prost::encoding::uint64::encode` writes it.
#[inline(always)]
pub(crate) fn put_uint64(tag: u32, value: u64, buf: &mut impl BufMut) {
    put_key(tag, WireType::Varint, buf);
    put_varint(value, buf);
}

/// An `int32` field, as `prost::encoding::int32::encode` writes it (a negative value
/// sign-extended to ten bytes).
#[inline(always)]
pub(crate) fn put_int32(tag: u32, value: i32, buf: &mut impl BufMut) {
    put_key(tag, WireType::Varint, buf);
    put_varint(value as i64 as u64, buf);
}

/// A `bool` field, as `prost::encoding::bool::encode` writes it.
#[inline(always)]
pub(crate) fn put_bool(tag: u32, value: bool, buf: &mut impl BufMut) {
    put_key(tag, WireType::Varint, buf);
    buf.put_u8(u8::from(value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use prost::encoding;

    /// Values around every length boundary of a varint, and the extremes.
    fn edges() -> Vec<u64> {
        let mut v = vec![0, 1, u64::MAX, u64::MAX - 1];
        for bits in (7..64).step_by(7) {
            let b = 1u64 << bits;
            v.extend([b - 1, b, b + 1]);
        }
        v
    }

    fn ours(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut b = Vec::new();
        f(&mut b);
        b
    }

    #[test]
    fn varints_at_every_length_boundary_are_prosts_bytes() {
        for v in edges() {
            let theirs = ours(|b| encoding::encode_varint(v, b));
            assert_eq!(ours(|b| put_varint(v, b)), theirs, "{v}");
            // Into a slice too (the get's fields are written into one).
            let mut arr = [0u8; 10];
            let mut rest: &mut [u8] = &mut arr[..];
            put_varint(v, &mut rest);
            let left = rest.len();
            assert_eq!(&arr[..10 - left], &theirs[..]);
        }
    }

    proptest! {
        #[test]
        fn fields_are_prosts_bytes(tag in 1u32..=encoding::MAX_TAG, v in any::<u64>(), shift in 0u32..64) {
            // Shifted, so that short values (the common case) are as likely as long ones.
            let v = v >> shift;
            prop_assert_eq!(ours(|b| put_varint(v, b)), ours(|b| encoding::encode_varint(v, b)));
            for wt in [WireType::Varint, WireType::LengthDelimited, WireType::SixtyFourBit] {
                prop_assert_eq!(ours(|b| put_key(tag, wt, b)), ours(|b| encoding::encode_key(tag, wt, b)));
            }
            prop_assert_eq!(ours(|b| put_uint64(tag, v, b)), ours(|b| encoding::uint64::encode(tag, &v, b)));
            let v32 = v as u32;
            prop_assert_eq!(ours(|b| put_uint32(tag, v32, b)), ours(|b| encoding::uint32::encode(tag, &v32, b)));
            let i = v as i32;
            prop_assert_eq!(ours(|b| put_int32(tag, i, b)), ours(|b| encoding::int32::encode(tag, &i, b)));
            let flag = v & 1 == 1;
            prop_assert_eq!(ours(|b| put_bool(tag, flag, b)), ours(|b| encoding::bool::encode(tag, &flag, b)));
            let len = (v >> 40) as usize;
            let mut theirs = ours(|b| encoding::encode_key(tag, WireType::LengthDelimited, b));
            encoding::encode_varint(len as u64, &mut theirs);
            prop_assert_eq!(ours(|b| put_len_key(tag, len, b)), theirs);
        }
    }
}
