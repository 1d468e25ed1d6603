//! `Scan`: read a range of rows, as a stream.

use bytes::Bytes;

use super::Filter;

/// Rows per scan RPC when neither the [`Scan`] nor the client config says
/// ([`ClientConfigBuilder::scanner_caching`](crate::ClientConfigBuilder::scanner_caching)):
/// 1000 (bounded by the result size).
pub const DEFAULT_SCANNER_CACHING: u32 = 1000;
/// Bytes per scan response when neither the [`Scan`] nor the client config says: 2 MiB, as
/// HBase's.
pub const DEFAULT_SCANNER_MAX_RESULT_SIZE: u64 = 2 * 1024 * 1024;

/// A range read. Build it, then pass it to [`Table::scan`](crate::Table::scan).
#[derive(Debug, Clone)]
pub struct Scan {
    pub(crate) start_row: Bytes,
    pub(crate) stop_row: Bytes,
    pub(crate) include_stop_row: bool,
    pub(crate) reversed: bool,
    pub(crate) limit: Option<u64>,
    pub(crate) caching: Option<u32>,
    pub(crate) max_result_size: Option<u64>,
    columns: super::columns::Columns,
    filter: Option<Filter>,
    max_versions: Option<u32>,
    time_range: Option<(u64, u64)>,
    cache_blocks: bool,
}

impl Default for Scan {
    fn default() -> Self {
        Scan::new()
    }
}

impl Scan {
    /// A scan of the whole table.
    pub fn new() -> Scan {
        Scan {
            start_row: Bytes::new(),
            stop_row: Bytes::new(),
            include_stop_row: false,
            reversed: false,
            limit: None,
            caching: None,
            max_result_size: None,
            columns: Default::default(),
            filter: None,
            max_versions: None,
            time_range: None,
            cache_blocks: true,
        }
    }

    /// First row (inclusive). For a reversed scan, the highest row, where it starts.
    pub fn start_row(mut self, row: impl Into<Bytes>) -> Scan {
        self.start_row = row.into();
        self
    }

    /// Row where the scan stops (exclusive). For a reversed scan, the lower bound.
    pub fn stop_row(mut self, row: impl Into<Bytes>) -> Scan {
        self.stop_row = row.into();
        self
    }

    /// Include the stop row itself.
    pub fn include_stop_row(mut self, include: bool) -> Scan {
        self.include_stop_row = include;
        self
    }

    /// Scan from high keys to low keys.
    pub fn reversed(mut self, reversed: bool) -> Scan {
        self.reversed = reversed;
        self
    }

    /// Return at most `rows` rows.
    pub fn limit(mut self, rows: u64) -> Scan {
        self.limit = Some(rows);
        self
    }

    /// Rows fetched per RPC (default: the client's `scanner_caching`, 1000 unless
    /// `hbase.client.scanner.caching` says otherwise; also bounded by the max result size).
    pub fn caching(mut self, rows: u32) -> Scan {
        self.caching = Some(rows.max(1));
        self
    }

    /// Bytes per RPC response (default: the client's `scanner_max_result_size`, 2 MiB). Rows
    /// larger than this arrive in parts, which the client stitches back together.
    pub fn max_result_size(mut self, bytes: u64) -> Scan {
        self.max_result_size = Some(bytes.max(1));
        self
    }

    /// Fills in the caching and result size the scan left to the client's configuration.
    pub(crate) fn with_defaults(mut self, caching: u32, max_result_size: u64) -> Scan {
        self.caching.get_or_insert(caching);
        self.max_result_size.get_or_insert(max_result_size);
        self
    }

    /// Adds a whole family.
    pub fn family(mut self, family: impl Into<Bytes>) -> Scan {
        self.columns.add_family(family.into());
        self
    }

    /// Adds one column.
    pub fn column(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Scan {
        self.columns.add_column(family.into(), qualifier.into());
        self
    }

    /// A server-side filter.
    pub fn filter(mut self, filter: Filter) -> Scan {
        self.filter = Some(filter);
        self
    }

    /// Versions per column (default 1).
    pub fn max_versions(mut self, n: u32) -> Scan {
        self.max_versions = Some(n.max(1));
        self
    }

    /// Only cells with `from <= timestamp < to`.
    pub fn time_range(mut self, from: u64, to: u64) -> Scan {
        self.time_range = Some((from, to));
        self
    }

    /// Whether the server should cache the blocks read (default true; false for big scans).
    pub fn cache_blocks(mut self, cache: bool) -> Scan {
        self.cache_blocks = cache;
        self
    }

    /// The protobuf scan, starting at `start` (inclusive or not).
    pub(crate) fn to_proto(&self, start: &Bytes, include_start: bool) -> hbase_proto::Scan {
        hbase_proto::Scan {
            column: self.columns.to_proto(),
            start_row: (!start.is_empty()).then(|| start.clone()),
            stop_row: (!self.stop_row.is_empty()).then(|| self.stop_row.clone()),
            include_start_row: Some(include_start),
            include_stop_row: Some(self.include_stop_row),
            filter: self.filter.as_ref().map(Filter::to_proto),
            time_range: self.time_range.map(|(from, to)| hbase_proto::TimeRange {
                from: Some(from),
                to: Some(to),
            }),
            max_versions: self.max_versions,
            cache_blocks: Some(self.cache_blocks),
            max_result_size: Some(
                self.max_result_size
                    .unwrap_or(DEFAULT_SCANNER_MAX_RESULT_SIZE),
            ),
            reversed: Some(self.reversed),
            caching: Some(self.caching.unwrap_or(DEFAULT_SCANNER_CACHING)),
            allow_partial_results: Some(false),
            ..Default::default()
        }
    }
}
