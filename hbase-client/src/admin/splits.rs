//! Split-point computations for pre-split tables.

use bytes::Bytes;

use crate::error::{Error, Result};

/// Split keys for YCSB's `usertable` with `regions` regions, after the formula of YCSB's HBase
/// README: `user{1000 + i * (9999 - 1000) / regions}` for `i` in `1..regions`. (The README's
/// Ruby takes `i` in `1..n_splits`, inclusive: `n_splits` keys, the last `user9999`, so
/// `n_splits + 1` regions; here `regions` is the number of regions.)
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

/// Split keys for `regions` regions between `start` and `end`, as the Java client's
/// `Admin.createTable(desc, startKey, endKey, numRegions)` computes them (`tests/admin.rs`
/// runs the Java client's own computation beside this): the first region ends at `start`, the
/// last begins at `end`, and the `regions - 2` regions between them are as wide as each other
/// (the range's width divided by `regions - 2`, rounded down, the remainder going to the last
/// of them), with keys read as big-endian numbers, the shorter key padded with zero bytes.
/// While the range is narrower than `regions - 2` units, both keys get one more zero byte of
/// resolution, and then the first and last split keys are those padded keys.
///
/// Gives `regions - 1` keys. Needs `regions >= 3`, a start key that is not empty, and
/// `start < end` once the shorter is padded (`a` and `a\0` are refused, as Java refuses them).
///
/// ```
/// let keys = hbase_client::admin::uniform_split_keys(b"a", b"e", 6).unwrap();
/// assert_eq!(keys, vec!["a", "b", "c", "d", "e"]);
/// // Too narrow for 8 regions in one byte: a second byte, and "a" becomes "a\0".
/// let keys = hbase_client::admin::uniform_split_keys(b"a", b"b", 8).unwrap();
/// assert_eq!(keys[0], &b"a\0"[..]);
/// assert_eq!(keys[1], &b"a*"[..]);
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
    if start.is_empty() {
        return Err(Error::InvalidInput(
            "the start key is a split key and must not be empty".into(),
        ));
    }
    if regions == 3 {
        return Ok(vec![
            Bytes::copy_from_slice(start),
            Bytes::copy_from_slice(end),
        ]);
    }
    let intervals = (regions - 2) as u64;
    let len = start.len().max(end.len());
    let mut a = start.to_vec();
    let mut b = end.to_vec();
    a.resize(len, 0);
    b.resize(len, 0);
    if a >= b {
        return Err(Error::InvalidInput(format!(
            "the start key must sort before the end key once the shorter is padded with zero bytes to {len} bytes"
        )));
    }
    // Add bytes of resolution until every interval is at least one unit wide; the first and
    // last split keys are then the padded keys (Java returns the keys of its last round).
    let (mut first, mut last) = (start.to_vec(), end.to_vec());
    while !at_least(&sub(&b, &a), intervals) {
        a.push(0);
        b.push(0);
        first.clone_from(&a);
        last.clone_from(&b);
    }
    let interval = div_small(&sub(&b, &a), intervals);
    let mut keys = Vec::with_capacity(regions - 1);
    keys.push(Bytes::from(first));
    for i in 1..intervals {
        keys.push(Bytes::from(add(&a, &mul_small(&interval, i))));
    }
    keys.push(Bytes::from(last));
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
        // Equal once padded: before, more resolution was added forever (a hang).
        assert!(uniform_split_keys(b"a", b"a\0", 5).is_err());
        assert!(uniform_split_keys(b"", b"b", 5).is_err());
    }
}
