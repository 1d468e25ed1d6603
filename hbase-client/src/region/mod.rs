//! Tables, servers and regions: names, the location cache and the meta lookup.

mod name;

pub use name::{encoded_region_name, region_name};
pub(crate) use name::{meta_search_key, meta_table_start};

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};

/// A table name: a namespace and a qualifier. Written `ns:qualifier`, or just `qualifier` in the
/// `default` namespace.
#[derive(Clone)]
pub struct TableName {
    namespace: Bytes,
    qualifier: Bytes,
    /// A hash of the two, computed once ([`TableName::new`]): the region cache finds a table's
    /// regions by its name for every located row, and hashing the names there cost about 60
    /// instructions a get (`ycsb` workload C, callgrind). Equal names have equal digests.
    /// It is FxHash, unkeyed: `Hash` gives a map only this word, so a `HashMap` keyed by
    /// table names resists no chosen collisions (table names are few and the cluster's own).
    digest: u64,
}

impl PartialEq for TableName {
    fn eq(&self, other: &TableName) -> bool {
        self.digest == other.digest
            && self.namespace == other.namespace
            && self.qualifier == other.qualifier
    }
}

impl Eq for TableName {}

impl std::hash::Hash for TableName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.digest);
    }
}

impl PartialOrd for TableName {
    fn partial_cmp(&self, other: &TableName) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TableName {
    /// By namespace, then qualifier.
    fn cmp(&self, other: &TableName) -> std::cmp::Ordering {
        (&self.namespace, &self.qualifier).cmp(&(&other.namespace, &other.qualifier))
    }
}

impl fmt::Debug for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableName")
            .field("namespace", &self.namespace)
            .field("qualifier", &self.qualifier)
            .finish()
    }
}

impl TableName {
    /// The one constructor: every name gets its digest here.
    fn new(namespace: Bytes, qualifier: Bytes) -> TableName {
        use std::hash::Hasher;
        let mut h = rustc_hash::FxHasher::default();
        // Each `write` folds its bytes and their length into one word of the hash, so the
        // parts hash apart: ("ab", "c") and ("a", "bc") differ (tested).
        h.write(&namespace);
        h.write(&qualifier);
        TableName {
            namespace,
            qualifier,
            digest: h.finish(),
        }
    }

    /// Parses `ns:qualifier` or `qualifier`.
    pub fn parse(name: &str) -> Result<TableName> {
        let (ns, q) = match name.split_once(':') {
            Some((ns, q)) => (ns, q),
            None => ("default", name),
        };
        let valid = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        };
        if !valid(ns) || !valid(q) || q.starts_with('.') || q.starts_with('-') {
            return Err(Error::InvalidInput(format!(
                "invalid table name {name:?}: use [namespace:]qualifier with letters, digits, _ - ."
            )));
        }
        Ok(TableName::new(
            Bytes::copy_from_slice(ns.as_bytes()),
            Bytes::copy_from_slice(q.as_bytes()),
        ))
    }

    /// `hbase:meta`.
    pub fn meta() -> TableName {
        TableName::new(Bytes::from_static(b"hbase"), Bytes::from_static(b"meta"))
    }

    /// Whether this is `hbase:meta`.
    pub fn is_meta(&self) -> bool {
        &self.namespace[..] == b"hbase" && &self.qualifier[..] == b"meta"
    }

    /// The namespace.
    pub fn namespace(&self) -> &[u8] {
        &self.namespace
    }

    /// The qualifier (the name within the namespace).
    pub fn qualifier(&self) -> &[u8] {
        &self.qualifier
    }

    /// The name as HBase writes it into region names and meta rows.
    pub fn to_bytes(&self) -> Vec<u8> {
        if &self.namespace[..] == b"default" {
            self.qualifier.to_vec()
        } else {
            [&self.namespace[..], b":", &self.qualifier[..]].concat()
        }
    }

    pub(crate) fn to_proto(&self) -> hbase_proto::TableName {
        hbase_proto::TableName {
            namespace: self.namespace.clone(),
            qualifier: self.qualifier.clone(),
        }
    }

    pub(crate) fn from_proto(p: &hbase_proto::TableName) -> TableName {
        TableName::new(p.namespace.clone(), p.qualifier.clone())
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_bytes()))
    }
}

/// A region server's identity: host, port and start code (which changes on every restart).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerName {
    /// Host name as the server advertises it.
    pub host: String,
    /// RPC port.
    pub port: u16,
    /// Start time of the server process; tells restarts apart.
    pub start_code: u64,
}

impl ServerName {
    /// `host:port`, the address to connect to (before any address mapping).
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    pub(crate) fn from_proto(p: &hbase_proto::ServerName) -> ServerName {
        ServerName {
            host: p.host_name.clone(),
            port: p.port.unwrap_or(0) as u16,
            start_code: p.start_code.unwrap_or(0),
        }
    }

    /// Parses HBase's `host,port,startcode` form (as in `/hbase/rs` children and `info:sn`).
    pub fn parse_comma_form(s: &str) -> Option<ServerName> {
        let mut parts = s.split(',');
        let host = parts.next()?.to_string();
        let port = parts.next()?.parse().ok()?;
        let start_code = parts.next()?.parse().ok()?;
        Some(ServerName {
            host,
            port,
            start_code,
        })
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{}", self.host, self.port, self.start_code)
    }
}

/// A region: a table's key range `[start_key, end_key)`, where an empty end key means "to the end".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// The table.
    pub table: TableName,
    /// First row (inclusive); empty for the first region.
    pub start_key: Bytes,
    /// End row (exclusive); empty for the last region.
    pub end_key: Bytes,
    /// Creation time id of the region.
    pub region_id: u64,
    /// Replica id; 0 for the primary.
    pub replica_id: i32,
    /// The full region name (also its row key in `hbase:meta`).
    pub name: Bytes,
    /// The encoded name (32 hex characters of MD5), used by admin calls such as move.
    pub encoded_name: String,
    /// The region is offline.
    pub offline: bool,
    /// The region is a split parent.
    pub split: bool,
}

impl RegionInfo {
    /// The region that `hbase:meta` itself lives in.
    pub fn meta() -> RegionInfo {
        RegionInfo {
            table: TableName::meta(),
            start_key: Bytes::new(),
            end_key: Bytes::new(),
            region_id: 1,
            replica_id: 0,
            name: Bytes::from_static(b"hbase:meta,,1"),
            encoded_name: "1588230740".into(),
            offline: false,
            split: false,
        }
    }

    /// Builds a region from its protobuf form.
    pub(crate) fn from_proto(p: &hbase_proto::RegionInfo) -> RegionInfo {
        let table = TableName::from_proto(&p.table_name);
        let start_key = p.start_key.clone().unwrap_or_default();
        let replica_id = p.replica_id.unwrap_or(0);
        let name = region_name(&table, &start_key, p.region_id, replica_id);
        let encoded_name = encoded_region_name(&name);
        RegionInfo {
            table,
            start_key,
            end_key: p.end_key.clone().unwrap_or_default(),
            region_id: p.region_id,
            replica_id,
            name: Bytes::from(name),
            encoded_name,
            offline: p.offline.unwrap_or(false),
            split: p.split.unwrap_or(false),
        }
    }

    /// True when `row` falls in this region's key range.
    pub fn contains(&self, row: &[u8]) -> bool {
        row >= &self.start_key[..] && (self.end_key.is_empty() || row < &self.end_key[..])
    }
}

/// Where a region is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionLocation {
    /// The region.
    pub region: RegionInfo,
    /// The server hosting it.
    pub server: ServerName,
}

/// Shared handle to a cached location.
pub(crate) type Location = Arc<RegionLocation>;

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn table_names_equal_by_their_parts_however_made() {
        let parsed = TableName::parse("ns:t").unwrap();
        let decoded = TableName::from_proto(&parsed.to_proto());
        assert_eq!(parsed, decoded);
        assert_eq!(parsed.digest, decoded.digest);
        assert_eq!(
            TableName::meta().digest,
            TableName::parse("hbase:meta").unwrap().digest
        );
        assert_eq!(
            TableName::parse("t").unwrap(),
            TableName::parse("default:t").unwrap()
        );
        assert_eq!(TableName::parse("hbase:meta").unwrap(), TableName::meta());
        // The digest separates the parts: moving a byte across the colon is another name,
        // and another digest (not only unequal parts).
        let ab_c = TableName::parse("ab:c").unwrap();
        let a_bc = TableName::parse("a:bc").unwrap();
        assert_ne!(ab_c, a_bc);
        assert_ne!(ab_c.digest, a_bc.digest);
        let set: HashSet<TableName> = ["ns:t", "t", "default:t", "ns:u", "ab:c", "a:bc"]
            .iter()
            .map(|n| TableName::parse(n).unwrap())
            .collect();
        assert_eq!(set.len(), 5);
        assert!(set.contains(&decoded));
        // Ordered by namespace, then qualifier, as before the digest.
        let mut names = [
            TableName::parse("b:a").unwrap(),
            TableName::parse("a:b").unwrap(),
            TableName::parse("a:a").unwrap(),
        ];
        names.sort();
        let sorted: Vec<String> = names.iter().map(ToString::to_string).collect();
        assert_eq!(sorted, ["a:a", "a:b", "b:a"]);
        assert_eq!(
            format!("{:?}", TableName::parse("ns:t").unwrap()),
            r#"TableName { namespace: b"ns", qualifier: b"t" }"#
        );
    }
}
