//! Region names, which are also the row keys of `hbase:meta`.
//!
//! `<table>,<start key>,<region id>[_<replica as %04X>].<md5 hex>.` where the MD5 is taken over
//! everything before the final `.<md5>.` part.

use md5::{Digest, Md5};

use super::TableName;

/// The full region name for a region of `table` starting at `start_key`.
pub fn region_name(
    table: &TableName,
    start_key: &[u8],
    region_id: u64,
    replica_id: i32,
) -> Vec<u8> {
    let mut name = table.to_bytes();
    name.push(b',');
    name.extend_from_slice(start_key);
    name.push(b',');
    name.extend_from_slice(region_id.to_string().as_bytes());
    if replica_id > 0 {
        name.extend_from_slice(format!("_{replica_id:04X}").as_bytes());
    }
    let md5 = Md5::digest(&name);
    name.push(b'.');
    for byte in md5 {
        name.extend_from_slice(format!("{byte:02x}").as_bytes());
    }
    name.push(b'.');
    name
}

/// The encoded name of a full region name: the MD5 hex between the last two dots.
pub fn encoded_region_name(name: &[u8]) -> String {
    let hex_part = name
        .strip_suffix(b".")
        .and_then(|n| n.len().checked_sub(32).map(|start| &n[start..]))
        .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit));
    match hex_part {
        Some(hex) => String::from_utf8_lossy(hex).into_owned(),
        // Old-style names (such as hbase:meta's) have no MD5 part.
        None => String::from_utf8_lossy(name).into_owned(),
    }
}

/// The meta row key that sorts after every region of `table` that could hold `row`:
/// `table,row,99999999999999`. A reversed meta scan from it finds the region of `row` first.
pub(crate) fn meta_search_key(table: &TableName, row: &[u8]) -> Vec<u8> {
    let mut key = table.to_bytes();
    key.push(b',');
    key.extend_from_slice(row);
    key.extend_from_slice(b",99999999999999");
    key
}

/// The lowest meta row key of `table`: `table,,`.
pub(crate) fn meta_table_start(table: &TableName) -> Vec<u8> {
    let mut key = table.to_bytes();
    key.extend_from_slice(b",,");
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_name_matches_hbase_format() {
        // Worked by hand: the name body is "t1,row5,1700000000000"; its MD5 computed with
        // coreutils `printf 't1,row5,1700000000000' | md5sum`.
        let table = TableName::parse("t1").unwrap();
        let name = region_name(&table, b"row5", 1_700_000_000_000, 0);
        let body = b"t1,row5,1700000000000";
        assert_eq!(&name[..body.len()], body);
        assert_eq!(
            name,
            b"t1,row5,1700000000000.2f0a1f39f4faead3f95c55463a2f8c86.".to_vec()
        );
        assert_eq!(
            encoded_region_name(&name),
            "2f0a1f39f4faead3f95c55463a2f8c86"
        );
    }

    #[test]
    fn namespaced_replica_and_meta_names() {
        let table = TableName::parse("ns:t").unwrap();
        let name = region_name(&table, b"", 5, 1);
        assert!(name.starts_with(b"ns:t,,5_0001."));
        assert_eq!(encoded_region_name(b"hbase:meta,,1"), "hbase:meta,,1");
        assert_eq!(meta_search_key(&table, b"k"), b"ns:t,k,99999999999999");
        assert_eq!(meta_table_start(&TableName::parse("t").unwrap()), b"t,,");
    }
}
