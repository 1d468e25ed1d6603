//! `Scan`: read a range of rows, as a stream.

use bytes::Bytes;

use super::Filter;

/// Rows per scan RPC when neither the [`Scan`] nor the client config says
/// ([`ClientConfigBuilder::scanner_caching`](crate::ClientConfigBuilder::scanner_caching)):
/// 1000 (bounded by the result size). The Java client's is `Integer.MAX_VALUE`, leaving the cut
/// to the result size alone (a difference we keep; `client_defaults_are_the_java_clients` in
/// tests/hbase_site.rs expects it).
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
    pub(crate) batch: Option<u32>,
    pub(crate) allow_partial_results: bool,
    raw: bool,
    read_type: ReadType,
    consistency: Consistency,
    pub(crate) scan_metrics: bool,
}

/// How a region server reads the store files of a scan (Java's `Scan.ReadType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadType {
    /// The server decides: positional reads first, switching to streaming reads once the
    /// scan has read enough (`hbase.storescanner.pread.max.bytes`).
    #[default]
    Default,
    /// Streaming (sequential) reads: best for long scans.
    Stream,
    /// Positional reads: best for short scans and random seeks.
    Pread,
}

/// Which replicas may answer a read (Java's `Consistency`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Consistency {
    /// Only the primary replica answers: the read sees every acknowledged write.
    #[default]
    Strong,
    /// A secondary replica may answer, with possibly stale data
    /// ([`RowResult::is_stale`](crate::RowResult::is_stale) says so). This client sends the
    /// read to the primary region, so results are never stale today; the server accepts the
    /// setting on tables with or without replicas.
    Timeline,
}

impl Consistency {
    pub(crate) fn to_proto(self) -> Option<i32> {
        match self {
            Consistency::Strong => None,
            Consistency::Timeline => Some(hbase_proto::Consistency::Timeline as i32),
        }
    }
}

/// The attribute that makes a scan raw (Java's `Scan.setRaw`), with `Bytes.toBytes(true)`.
const RAW_ATTRIBUTE: &str = "_raw_";
/// The attribute Java's `Scan.setScanMetricsEnabled(true)` sets, with `Bytes.toBytes(true)`.
/// Servers before 2.6 count the bytes a scan reads (`BYTES_READ_FROM_FS`,
/// `…_BLOCK_CACHE`, `…_MEMSTORE`) only for a scan that carries it; the request's
/// `track_scan_metrics` alone gets those counters as zeros (HBase 2.5.12, tests/scan_metrics.rs
/// in the version matrix). Java sends it after `_raw_`.
const METRICS_ATTRIBUTE: &str = "scan.attributes.metrics.enable";

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
            batch: None,
            allow_partial_results: false,
            raw: false,
            read_type: ReadType::Default,
            consistency: Consistency::Strong,
            scan_metrics: false,
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

    /// At most `cells` cells per result (Java's `setBatch`): a wider row comes as several
    /// results, in order, each but the last of a row with
    /// [`RowResult::may_have_more_cells`](crate::RowResult::may_have_more_cells) set. A
    /// [`limit`](Scan::limit) still counts whole rows. With
    /// [`allow_partial_results`](Scan::allow_partial_results) too, results are the server's
    /// pieces: at most `cells` cells, but fewer where the result size cut the row (as Java's).
    pub fn batch(mut self, cells: u32) -> Scan {
        self.batch = Some(cells.max(1));
        self
    }

    /// Return rows in the pieces the server sends (Java's `setAllowPartialResults`), each at
    /// most about [`max_result_size`](Scan::max_result_size) bytes, instead of stitching
    /// them back into whole rows: a huge row is never held in memory whole. Pieces of one
    /// row come in order; all but the last have
    /// [`RowResult::may_have_more_cells`](crate::RowResult::may_have_more_cells) set. If a
    /// scanner is reopened within a row, the cells already returned are not returned again.
    /// Without it (the default), partial rows are joined before they are returned.
    pub fn allow_partial_results(mut self, allow: bool) -> Scan {
        self.allow_partial_results = allow;
        self
    }

    /// A raw scan (Java's `setRaw`): delete markers and the versions they delete are
    /// returned too, as cells of their [`CellType`](crate::CellType). Combine with
    /// [`max_versions`](Scan::max_versions) to see more than the newest version.
    pub fn raw(mut self, raw: bool) -> Scan {
        self.raw = raw;
        self
    }

    /// How the servers read store files (default [`ReadType::Default`]).
    pub fn read_type(mut self, read_type: ReadType) -> Scan {
        self.read_type = read_type;
        self
    }

    /// Which replicas may answer (default [`Consistency::Strong`]).
    pub fn consistency(mut self, consistency: Consistency) -> Scan {
        self.consistency = consistency;
        self
    }

    /// Collect [`ScanMetrics`](crate::ScanMetrics) (Java's `setScanMetricsEnabled`): the
    /// client's counts, and the servers' (`ROWS_SCANNED`, …) returned with each response.
    /// Read them with [`ScanStream::metrics`](crate::ScanStream::metrics) (or
    /// [`RawScanStream::metrics`](crate::RawScanStream::metrics)).
    pub fn scan_metrics(mut self, enabled: bool) -> Scan {
        self.scan_metrics = enabled;
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
            time_range: self.time_range.map(super::time_range_proto),
            max_versions: self.max_versions,
            cache_blocks: Some(self.cache_blocks),
            max_result_size: Some(
                self.max_result_size
                    .unwrap_or(DEFAULT_SCANNER_MAX_RESULT_SIZE),
            ),
            reversed: Some(self.reversed),
            caching: Some(self.caching.unwrap_or(DEFAULT_SCANNER_CACHING)),
            allow_partial_results: Some(self.allow_partial_results),
            batch_size: self.batch,
            attribute: [
                (self.raw, RAW_ATTRIBUTE),
                (self.scan_metrics, METRICS_ATTRIBUTE),
            ]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| hbase_proto::NameBytesPair {
                name: name.to_string(),
                value: Some(bytes::Bytes::from_static(&[0xFF])),
            })
            .collect(),
            read_type: match self.read_type {
                ReadType::Default => None,
                ReadType::Stream => Some(hbase_proto::scan::ReadType::Stream as i32),
                ReadType::Pread => Some(hbase_proto::scan::ReadType::Pread as i32),
            },
            consistency: self.consistency.to_proto(),
            ..Default::default()
        }
    }
}
