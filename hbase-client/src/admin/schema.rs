//! Table and column family descriptors: built by callers to create tables, and read back from
//! the master by [`Admin::describe_table`](super::Admin::describe_table).
//!
//! HBase keeps a family's settings as string attributes (`VERSIONS`, `TTL`, `COMPRESSION`, …).
//! The descriptors keep that map, so settings this crate has no typed accessor for survive a
//! round trip, and offer typed setters and getters for the common ones.

use std::fmt;

use bytes::Bytes;

use crate::region::TableName;

/// HBase's "forever" TTL (`HConstants.FOREVER`, `Integer.MAX_VALUE` seconds).
const TTL_FOREVER: u32 = i32::MAX as u32;

/// Defines a string-valued setting enum with an `Other` variant for values this crate does not
/// know, and its HBase spelling.
macro_rules! setting_enum {
    (
        $(#[$meta:meta])*
        $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)+ }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value this client has no name for, as HBase spells it.
            Other(String),
        }

        impl $name {
            /// The value as HBase writes it in the family's attributes.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)+
                    $name::Other(s) => s,
                }
            }

            /// Parses HBase's spelling (case-insensitive); unknown values become `Other`.
            pub fn parse(s: &str) -> $name {
                let upper = s.trim().to_ascii_uppercase();
                match upper.as_str() {
                    $($text => $name::$variant,)+
                    _ => $name::Other(upper),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

setting_enum! {
    /// Compression of a family's HFile blocks (`COMPRESSION`). The codec must be available on
    /// the region servers, or the master rejects the table.
    Compression {
        /// No compression (the default).
        None => "NONE",
        /// Gzip (always available: Java's built-in deflate).
        Gz => "GZ",
        /// Snappy.
        Snappy => "SNAPPY",
        /// LZ4.
        Lz4 => "LZ4",
        /// LZO.
        Lzo => "LZO",
        /// Zstandard.
        Zstd => "ZSTD",
        /// Bzip2.
        Bzip2 => "BZIP2",
        /// Brotli.
        Brotli => "BROTLI",
    }
}

setting_enum! {
    /// The bloom filter a family keeps per HFile (`BLOOMFILTER`).
    BloomFilter {
        /// No bloom filter.
        None => "NONE",
        /// By row (the default).
        Row => "ROW",
        /// By row and column.
        RowCol => "ROWCOL",
        /// By a fixed-length row prefix.
        RowPrefixFixedLength => "ROWPREFIX_FIXED_LENGTH",
    }
}

setting_enum! {
    /// How keys are encoded inside data blocks (`DATA_BLOCK_ENCODING`).
    DataBlockEncoding {
        /// Plain key-values (the default).
        None => "NONE",
        /// Prefix compression of keys.
        Prefix => "PREFIX",
        /// Diff encoding.
        Diff => "DIFF",
        /// Fast diff encoding.
        FastDiff => "FAST_DIFF",
        /// Row index within blocks.
        RowIndexV1 => "ROW_INDEX_V1",
    }
}

/// Settings of one column family.
///
/// ```
/// use hbase_client::admin::{BloomFilter, ColumnFamily, Compression, DataBlockEncoding};
/// let cf = ColumnFamily::new("cf")
///     .max_versions(3)
///     .ttl_seconds(86_400)
///     .compression(Compression::Gz)
///     .bloom_filter(BloomFilter::RowCol)
///     .block_encoding(DataBlockEncoding::FastDiff)
///     .in_memory(true);
/// assert_eq!(cf.versions(), 3);
/// assert_eq!(cf.time_to_live(), Some(86_400));
/// assert_eq!(cf.compression_type(), Compression::Gz);
/// ```
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

    /// Time to live of cells, in seconds (`TTL`, default forever).
    pub fn ttl_seconds(self, ttl: u32) -> ColumnFamily {
        self.set("TTL", ttl.to_string())
    }

    /// Keep the family's blocks in memory with priority (`IN_MEMORY`).
    pub fn in_memory(self, in_memory: bool) -> ColumnFamily {
        self.set("IN_MEMORY", in_memory.to_string())
    }

    /// Block compression (`COMPRESSION`).
    pub fn compression(self, compression: Compression) -> ColumnFamily {
        self.set("COMPRESSION", compression.as_str().to_string())
    }

    /// Bloom filter type (`BLOOMFILTER`).
    pub fn bloom_filter(self, bloom: BloomFilter) -> ColumnFamily {
        self.set("BLOOMFILTER", bloom.as_str().to_string())
    }

    /// Data block encoding (`DATA_BLOCK_ENCODING`).
    pub fn block_encoding(self, encoding: DataBlockEncoding) -> ColumnFamily {
        self.set("DATA_BLOCK_ENCODING", encoding.as_str().to_string())
    }

    /// HFile block size in bytes (`BLOCKSIZE`, default 65536).
    pub fn block_size(self, bytes: u32) -> ColumnFamily {
        self.set("BLOCKSIZE", bytes.to_string())
    }

    /// Any other attribute, e.g. `("KEEP_DELETED_CELLS", "TRUE")`.
    pub fn attribute(self, key: &str, value: &str) -> ColumnFamily {
        self.set(key, value.to_string())
    }

    /// Every attribute set (or, for a described table, reported by the master), in order.
    pub fn attributes(&self) -> &[(String, String)] {
        &self.attributes
    }

    /// The value of attribute `key`, if set.
    pub fn attribute_value(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn parsed<T: std::str::FromStr>(&self, key: &str) -> Option<T> {
        self.attribute_value(key)?.trim().parse().ok()
    }

    /// Versions kept per cell (`VERSIONS`; 1 when unset).
    pub fn versions(&self) -> u32 {
        self.parsed("VERSIONS").unwrap_or(1)
    }

    /// Time to live of cells in seconds; `None` when unset or "forever".
    pub fn time_to_live(&self) -> Option<u32> {
        self.parsed::<u32>("TTL").filter(|&t| t != TTL_FOREVER)
    }

    /// Block compression (`COMPRESSION`; none when unset).
    pub fn compression_type(&self) -> Compression {
        self.attribute_value("COMPRESSION")
            .map(Compression::parse)
            .unwrap_or(Compression::None)
    }

    /// Bloom filter type (`BLOOMFILTER`; HBase's default `ROW` when unset).
    pub fn bloom_filter_type(&self) -> BloomFilter {
        self.attribute_value("BLOOMFILTER")
            .map(BloomFilter::parse)
            .unwrap_or(BloomFilter::Row)
    }

    /// Data block encoding (`DATA_BLOCK_ENCODING`; none when unset).
    pub fn block_encoding_type(&self) -> DataBlockEncoding {
        self.attribute_value("DATA_BLOCK_ENCODING")
            .map(DataBlockEncoding::parse)
            .unwrap_or(DataBlockEncoding::None)
    }

    /// Whether blocks are kept in memory with priority (`IN_MEMORY`; false when unset).
    pub fn is_in_memory(&self) -> bool {
        self.attribute_value("IN_MEMORY")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// HFile block size in bytes (`BLOCKSIZE`; 65536 when unset).
    pub fn block_size_bytes(&self) -> u32 {
        self.parsed("BLOCKSIZE").unwrap_or(65_536)
    }

    pub(crate) fn to_proto(&self) -> hbase_proto::ColumnFamilySchema {
        hbase_proto::ColumnFamilySchema {
            name: self.name.clone(),
            attributes: to_pairs(&self.attributes),
            configuration: Vec::new(),
        }
    }

    pub(crate) fn from_proto(p: &hbase_proto::ColumnFamilySchema) -> ColumnFamily {
        ColumnFamily {
            name: p.name.clone(),
            attributes: from_pairs(&p.attributes),
        }
    }
}

fn to_pairs(attributes: &[(String, String)]) -> Vec<hbase_proto::BytesBytesPair> {
    attributes
        .iter()
        .map(|(k, v)| hbase_proto::BytesBytesPair {
            first: Bytes::copy_from_slice(k.as_bytes()),
            second: Bytes::copy_from_slice(v.as_bytes()),
        })
        .collect()
}

fn from_pairs(pairs: &[hbase_proto::BytesBytesPair]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|p| {
            (
                String::from_utf8_lossy(&p.first).into_owned(),
                String::from_utf8_lossy(&p.second).into_owned(),
            )
        })
        .collect()
}

/// A table: its name, column families and table-level attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDescriptor {
    name: TableName,
    families: Vec<ColumnFamily>,
    attributes: Vec<(String, String)>,
}

impl TableDescriptor {
    /// A descriptor with no families yet.
    pub fn new(name: TableName) -> TableDescriptor {
        TableDescriptor {
            name,
            families: Vec::new(),
            attributes: Vec::new(),
        }
    }

    /// Adds a column family (replacing one of the same name).
    pub fn family(mut self, family: ColumnFamily) -> TableDescriptor {
        self.families.retain(|f| f.name != family.name);
        self.families.push(family);
        self
    }

    /// Sets a table attribute, e.g. `("MAX_FILESIZE", "10737418240")`.
    pub fn attribute(mut self, key: &str, value: &str) -> TableDescriptor {
        self.attributes.retain(|(k, _)| k != key);
        self.attributes.push((key.to_string(), value.to_string()));
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

    /// The family called `name`, if any.
    pub fn family_named(&self, name: &[u8]) -> Option<&ColumnFamily> {
        self.families.iter().find(|f| &f.name[..] == name)
    }

    /// The table attributes set (or reported by the master).
    pub fn attributes(&self) -> &[(String, String)] {
        &self.attributes
    }

    /// The value of table attribute `key`, if set.
    pub fn attribute_value(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn to_proto(&self) -> hbase_proto::TableSchema {
        hbase_proto::TableSchema {
            table_name: Some(self.name.to_proto()),
            attributes: to_pairs(&self.attributes),
            column_families: self.families.iter().map(ColumnFamily::to_proto).collect(),
            configuration: Vec::new(),
        }
    }

    /// `None` when the schema carries no table name.
    pub(crate) fn from_proto(p: &hbase_proto::TableSchema) -> Option<TableDescriptor> {
        Some(TableDescriptor {
            name: TableName::from_proto(p.table_name.as_ref()?),
            families: p
                .column_families
                .iter()
                .map(ColumnFamily::from_proto)
                .collect(),
            attributes: from_pairs(&p.attributes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_settings_round_trip_through_proto() {
        let cf = ColumnFamily::new("cf")
            .max_versions(5)
            .ttl_seconds(3600)
            .compression(Compression::Snappy)
            .bloom_filter(BloomFilter::None)
            .block_encoding(DataBlockEncoding::Prefix)
            .block_size(4096)
            .in_memory(true)
            .max_versions(7);
        let desc = TableDescriptor::new(TableName::parse("ns:t").unwrap())
            .family(cf)
            .attribute("MAX_FILESIZE", "1000");
        let back = TableDescriptor::from_proto(&desc.to_proto()).unwrap();
        assert_eq!(back, desc);
        let cf = back.family_named(b"cf").unwrap();
        assert_eq!(cf.versions(), 7);
        assert_eq!(cf.time_to_live(), Some(3600));
        assert_eq!(cf.compression_type(), Compression::Snappy);
        assert_eq!(cf.bloom_filter_type(), BloomFilter::None);
        assert_eq!(cf.block_encoding_type(), DataBlockEncoding::Prefix);
        assert_eq!(cf.block_size_bytes(), 4096);
        assert!(cf.is_in_memory());
        assert_eq!(back.attribute_value("MAX_FILESIZE"), Some("1000"));
    }

    #[test]
    fn defaults_and_unknown_values() {
        let cf = ColumnFamily::new("f")
            .attribute("TTL", "2147483647")
            .attribute("COMPRESSION", "brotli2");
        assert_eq!(cf.versions(), 1);
        assert_eq!(cf.time_to_live(), None);
        assert_eq!(
            cf.compression_type(),
            Compression::Other("BROTLI2".to_string())
        );
        assert_eq!(cf.bloom_filter_type(), BloomFilter::Row);
        assert_eq!(Compression::parse("gz"), Compression::Gz);
        assert!(!cf.is_in_memory());
    }
}
