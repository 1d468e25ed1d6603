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
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName {
    namespace: Bytes,
    qualifier: Bytes,
}

impl TableName {
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
        Ok(TableName {
            namespace: Bytes::copy_from_slice(ns.as_bytes()),
            qualifier: Bytes::copy_from_slice(q.as_bytes()),
        })
    }

    /// `hbase:meta`.
    pub fn meta() -> TableName {
        TableName {
            namespace: Bytes::from_static(b"hbase"),
            qualifier: Bytes::from_static(b"meta"),
        }
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
        TableName {
            namespace: p.namespace.clone(),
            qualifier: p.qualifier.clone(),
        }
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
