//! Table and column family descriptors, as sent to the master.

use bytes::Bytes;

use crate::region::TableName;

/// Settings of one column family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnFamily {
    name: Bytes,
    attributes: Vec<(String, String)>,
}

impl ColumnFamily {
    /// A family with HBase's defaults.
    pub fn new(name: impl Into<Bytes>) -> ColumnFamily {
        ColumnFamily {
            name: name.into(),
            attributes: Vec::new(),
        }
    }

    /// The family name.
    pub fn name(&self) -> &Bytes {
        &self.name
    }

    fn set(mut self, key: &str, value: String) -> ColumnFamily {
        self.attributes.retain(|(k, _)| k != key);
        self.attributes.push((key.to_string(), value));
        self
    }

    /// Versions kept per cell (`VERSIONS`, default 1).
    pub fn max_versions(self, versions: u32) -> ColumnFamily {
        self.set("VERSIONS", versions.to_string())
    }

    /// Time to live of cells, in seconds (`TTL`).
    pub fn ttl_seconds(self, ttl: u32) -> ColumnFamily {
        self.set("TTL", ttl.to_string())
    }

    /// Keep the family's blocks in memory with priority (`IN_MEMORY`).
    pub fn in_memory(self, in_memory: bool) -> ColumnFamily {
        self.set("IN_MEMORY", in_memory.to_string())
    }

    /// Any other attribute, e.g. `("COMPRESSION", "SNAPPY")` or `("BLOOMFILTER", "ROW")`.
    pub fn attribute(self, key: &str, value: &str) -> ColumnFamily {
        self.set(key, value.to_string())
    }

    pub(crate) fn to_proto(&self) -> hbase_proto::ColumnFamilySchema {
        hbase_proto::ColumnFamilySchema {
            name: self.name.clone(),
            attributes: self
                .attributes
                .iter()
                .map(|(k, v)| hbase_proto::BytesBytesPair {
                    first: Bytes::copy_from_slice(k.as_bytes()),
                    second: Bytes::copy_from_slice(v.as_bytes()),
                })
                .collect(),
            configuration: Vec::new(),
        }
    }
}

/// A table to create: its name and column families.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDescriptor {
    name: TableName,
    families: Vec<ColumnFamily>,
}

impl TableDescriptor {
    /// A descriptor with no families yet.
    pub fn new(name: TableName) -> TableDescriptor {
        TableDescriptor {
            name,
            families: Vec::new(),
        }
    }

    /// Adds a column family.
    pub fn family(mut self, family: ColumnFamily) -> TableDescriptor {
        self.families.push(family);
        self
    }

    /// The table name.
    pub fn name(&self) -> &TableName {
        &self.name
    }

    /// The families.
    pub fn families(&self) -> &[ColumnFamily] {
        &self.families
    }

    pub(crate) fn to_proto(&self) -> hbase_proto::TableSchema {
        hbase_proto::TableSchema {
            table_name: Some(self.name.to_proto()),
            attributes: Vec::new(),
            column_families: self.families.iter().map(ColumnFamily::to_proto).collect(),
            configuration: Vec::new(),
        }
    }
}
