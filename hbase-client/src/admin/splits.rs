//! Split-point computations for pre-split tables.

use bytes::Bytes;

use crate::error::{Error, Result};

/// Split keys for YCSB's `usertable` with `regions` regions, as YCSB's README suggests:
/// `user{1000 + i * (9999 - 1000) / regions}` for `i` in `1..regions`.
///
/// YCSB's keys are `user` followed by the decimal digits of a hashed record number, so these
/// points spread hashed keys evenly. Gives `regions - 1` keys (none for 0 or 1 regions); beyond
/// 8999 regions the points repeat and duplicates are dropped.
///
/// ```
/// let keys = hbase_client::admin::ycsb_split_keys(4);
/// assert_eq!(keys, vec!["user3249", "user5499", "user7749"]);
/// ```
pub fn ycsb_split_keys(regions: usize) -> Vec<Bytes> {
    let mut keys: Vec<Bytes> = (1..regions.max(1))
        .map(|i| Bytes::from(format!("user{}", 1000 + i * (9999 - 1000) / regions)))
        .collect();
    keys.dedup();
    keys
}

/// Split keys for `regions` regions between `start` and `end`, as HBase's
/// `Admin.createTable(desc, startKey, endKey, numRegions)` lays them out: the first region
/// ends at `start`, the last begins at `end`, and the `regions - 2` regions between them
/// divide `[start, end)` evenly, with keys read as big-endian numbers (the shorter key padded
/// with zero bytes, and one more zero byte of resolution added while the range is too narrow).
///
/// Gives `regions - 1` keys. Needs `regions >= 3` and `start < end`.
///
/// ```
/// let keys = hbase_client::admin::uniform_split_keys(b"a", b"e", 6).unwrap();
/// assert_eq!(keys, vec!["a", "b", "c", "d", "e"]);
/// ```
pub fn uniform_split_keys(start: &[u8], end: &[u8], regions: usize) -> Result<Vec<Bytes>> {
    if regions < 3 {
        return Err(Error::InvalidInput(format!(
            "a start and end key need at least 3 regions, got {regions}"
        )));
    }
    if start >= end {
        return Err(Error::InvalidInput(
            "the start key must sort before the end key".into(),
        ));
    }
    let intervals = (regions - 2) as u64;
    let len = start.len().max(end.len());
    let mut a = start.to_vec();
    let mut b = end.to_vec();
    a.resize(len, 0);
    b.resize(len, 0);
    // Add bytes of resolution until every interval is at least one unit wide.
    while !at_least(&sub(&b, &a), intervals) {
        a.push(0);
        b.push(0);
    }
    let diff = sub(&b, &a);
    let mut keys = Vec::with_capacity(regions - 1);
    keys.push(Bytes::copy_from_slice(start));
    for i in 1..intervals {
        let step = div_small(&mul_small(&diff, i), intervals);
        keys.push(Bytes::from(add(&a, &step)));
    }
    keys.push(Bytes::copy_from_slice(end));
    Ok(keys)
}

/// `b - a` for equal-length big-endian numbers with `a <= b`.
fn sub(b: &[u8], a: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; b.len()];
    let mut borrow = 0i16;
    for i in (0..b.len()).rev() {
        let mut d = b[i] as i16 - a[i] as i16 - borrow;
        borrow = 0;
        if d < 0 {
            d += 256;
            borrow = 1;
        }
        out[i] = d as u8;
    }
    out
}

/// `x >= n`.
fn at_least(x: &[u8], n: u64) -> bool {
    let mut high = 0u128;
    for (i, &byte) in x.iter().enumerate() {
        if i + 16 < x.len() && byte != 0 {
            return true;
        }
        high = (high << 8) | byte as u128;
        if high >= n as u128 {
            return true;
        }
    }
    high >= n as u128
}

/// `x * m`, as a number 8 bytes longer than `x`.
fn mul_small(x: &[u8], m: u64) -> Vec<u8> {
    let mut out = vec![0u8; x.len() + 8];
    let mut carry = 0u128;
    for i in (0..out.len()).rev() {
        let digit = if i >= 8 { x[i - 8] as u128 } else { 0 };
        let v = digit * m as u128 + carry;
        out[i] = v as u8;
        carry = v >> 8;
    }
    out
}

/// `x / d`, same length as `x`.
fn div_small(x: &[u8], d: u64) -> Vec<u8> {
    let mut out = vec![0u8; x.len()];
    let mut rem = 0u128;
    for (i, &byte) in x.iter().enumerate() {
        let v = (rem << 8) | byte as u128;
        out[i] = (v / d as u128) as u8;
        rem = v % d as u128;
    }
    out
}

/// `a + y` where `y` (possibly longer, with leading zeros) fits in `a`'s length.
fn add(a: &[u8], y: &[u8]) -> Vec<u8> {
    let mut out = a.to_vec();
    let offset = y.len() - a.len();
    let mut carry = 0u16;
    for i in (0..a.len()).rev() {
        let v = a[i] as u16 + y[i + offset] as u16 + carry;
        out[i] = v as u8;
        carry = v >> 8;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ycsb_points_follow_the_readme_formula() {
        let keys = ycsb_split_keys(200);
        assert_eq!(keys.len(), 199);
        assert_eq!(keys[0], "user1044");
        assert_eq!(keys[198], "user9954");
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(ycsb_split_keys(50).len(), 49);
        assert!(ycsb_split_keys(1).is_empty());
        assert!(ycsb_split_keys(0).is_empty());
    }

    #[test]
    fn uniform_keys_divide_the_range() {
        let keys = uniform_split_keys(&[0, 0], &[100, 0], 12).unwrap();
        assert_eq!(keys.len(), 11);
        assert_eq!(keys[0], Bytes::from_static(&[0, 0]));
        assert_eq!(keys[1], Bytes::from_static(&[10, 0]));
        assert_eq!(keys[9], Bytes::from_static(&[90, 0]));
        assert_eq!(keys[10], Bytes::from_static(&[100, 0]));
    }

    #[test]
    fn uniform_keys_gain_resolution_when_needed() {
        let keys = uniform_split_keys(b"a", b"b", 10).unwrap();
        assert_eq!(keys.len(), 9);
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        assert_eq!(keys[1], Bytes::from_static(&[b'a', 32]));
        // Different lengths: "abc" < ... < "b".
        let keys = uniform_split_keys(b"abc", b"b", 5).unwrap();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }

    #[test]
    fn uniform_keys_reject_bad_input() {
        assert!(uniform_split_keys(b"a", b"b", 2).is_err());
        assert!(uniform_split_keys(b"b", b"a", 5).is_err());
        assert!(uniform_split_keys(b"a", b"a", 5).is_err());
    }
}
