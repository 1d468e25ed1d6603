//! `ScanMetrics`: what one scan cost, counted by the client and (when the scan asks for
//! them) by the region servers.
//!
//! [`ScanMetrics::to_map`] has the keys of the Java client's `ScanMetrics.getMetricsMap()`
//! (hbase-shaded-client 2.6.4: 19 counters, zeros included), so tools that print Java's scan
//! metrics print ours the same way. `tests/scan_metrics.rs` runs the same scans through the
//! Java client and ours against a real HBase and compares the two maps.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::cell::CellRef;

/// Counters of one scan, read with [`ScanStream::metrics`](crate::ScanStream::metrics) (or
/// [`RawScanStream::metrics`](crate::RawScanStream::metrics)) while it runs or after it ends. Enabled by [`Scan::scan_metrics`](crate::Scan::scan_metrics).
///
/// "Remote" follows the Java client: a server is remote unless its host name is this
/// machine's host name.
///
/// Proven against the Java client 2.6.4 on HBase 2.6.4 (`tests/scan_metrics.rs`: full,
/// ranged, reversed, limited, filtered, batched, partial, small-caching and empty-range scans
/// over 4 regions, cells in store files and memstores): the same keys in
/// [`to_map`](ScanMetrics::to_map), also for a scan whose servers sent no counters; the same
/// values of `RPC_CALLS`, `REMOTE_RPC_CALLS`, `REGIONS_SCANNED`, `RPC_RETRIES`,
/// `REMOTE_RPC_RETRIES`, `NOT_SERVING_REGION_EXCEPTION`, `ROWS_SCANNED`, `ROWS_FILTERED`,
/// `BYTES_IN_RESULTS`, `BYTES_IN_REMOTE_RESULTS`, `BLOCK_BYTES_SCANNED`,
/// `BYTES_READ_FROM_MEMSTORE`, and of the sum `BYTES_READ_FROM_FS` +
/// `BYTES_READ_FROM_BLOCK_CACHE`. How that sum splits, and `BLOCK_READ_OPS_COUNT`, depend on
/// what the servers' block cache held, and the times (`MILLIS_BETWEEN_NEXTS`, `FS_READ_TIME`,
/// `RPC_SCAN_PROCESSING_TIME`, `RPC_SCAN_QUEUE_WAIT_TIME`) on the clock: only their presence
/// is compared. `millis_between_nexts` here sums RPC times; Java's sums the time between its
/// scanner's fetches (the consumer's time included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScanMetrics {
    /// Scan RPCs sent (opens, nexts, lease renewals and closes).
    pub rpc_calls: u64,
    /// The RPCs of `rpc_calls` sent to a remote server.
    pub remote_rpc_calls: u64,
    /// Milliseconds from sending each open or next call to its answer, summed (what the
    /// Java client reports as `MILLIS_BETWEEN_NEXTS`).
    pub millis_between_nexts: u64,
    /// `NotServingRegionException`s answered to the scan's calls.
    pub not_serving_region_exceptions: u64,
    /// Bytes of the cells received, each counted as its KeyValue encoding (4-byte length,
    /// key and value lengths, key, value), as Java's `BYTES_IN_RESULTS`.
    pub bytes_in_results: u64,
    /// The bytes of `bytes_in_results` received from remote servers.
    pub bytes_in_remote_results: u64,
    /// Region scanners opened (a region reopened after a failure counts again).
    pub regions_scanned: u64,
    /// Region scans retried after a failure.
    pub rpc_retries: u64,
    /// The retries of `rpc_retries` against remote servers.
    pub remote_rpc_retries: u64,
    /// Rows the region servers read for the scan (`ROWS_SCANNED`; filtered rows included).
    pub rows_scanned: u64,
    /// Rows the region servers read and filtered out (`ROWS_FILTERED`).
    pub rows_filtered: u64,
    /// Every counter the servers reported, by the server's name, summed over the scan's
    /// responses: only the names the servers sent, including any the Java client does not
    /// know (which [`to_map`](ScanMetrics::to_map) leaves out). HBase 2.6.4 sends the ten of
    /// [`SERVER_COUNTERS`](ScanMetrics::SERVER_COUNTERS); older servers send fewer.
    pub server: BTreeMap<String, u64>,
}

impl ScanMetrics {
    /// The Java client's names of the counters the servers report (its `ServerSideScanMetrics`,
    /// hbase-shaded-client 2.6.4), which [`ScanMetrics::to_map`] always has.
    pub const SERVER_COUNTERS: [&str; 10] = [
        "ROWS_SCANNED",
        "ROWS_FILTERED",
        "BLOCK_BYTES_SCANNED",
        "FS_READ_TIME",
        "BYTES_READ_FROM_FS",
        "BYTES_READ_FROM_BLOCK_CACHE",
        "BYTES_READ_FROM_MEMSTORE",
        "BLOCK_READ_OPS_COUNT",
        "RPC_SCAN_PROCESSING_TIME",
        "RPC_SCAN_QUEUE_WAIT_TIME",
    ];

    /// Every counter by the Java client's name, the keys of Java's `getMetricsMap()`: the
    /// client's nine (`RPC_CALLS`, `REMOTE_RPC_CALLS`, `MILLIS_BETWEEN_NEXTS`,
    /// `NOT_SERVING_REGION_EXCEPTION`, `BYTES_IN_RESULTS`, `BYTES_IN_REMOTE_RESULTS`,
    /// `REGIONS_SCANNED`, `RPC_RETRIES`, `REMOTE_RPC_RETRIES`) and the servers' ten of
    /// [`SERVER_COUNTERS`](ScanMetrics::SERVER_COUNTERS). Java makes every counter when the
    /// scan starts, so a counter no server sent is 0 here too. A server counter of another
    /// name is left out, as Java's `ServerSideScanMetrics.addToCounter` ignores a name it has
    /// no counter for (read in its source; HBase 2.6.4 servers send none such, so the oracle
    /// test cannot show it); it stays in [`server`](ScanMetrics::server).
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        let mut map: BTreeMap<String, u64> = Self::SERVER_COUNTERS
            .iter()
            .map(|name| {
                (
                    name.to_string(),
                    self.server.get(*name).copied().unwrap_or(0),
                )
            })
            .collect();
        for (name, value) in [
            ("RPC_CALLS", self.rpc_calls),
            ("REMOTE_RPC_CALLS", self.remote_rpc_calls),
            ("MILLIS_BETWEEN_NEXTS", self.millis_between_nexts),
            (
                "NOT_SERVING_REGION_EXCEPTION",
                self.not_serving_region_exceptions,
            ),
            ("BYTES_IN_RESULTS", self.bytes_in_results),
            ("BYTES_IN_REMOTE_RESULTS", self.bytes_in_remote_results),
            ("REGIONS_SCANNED", self.regions_scanned),
            ("RPC_RETRIES", self.rpc_retries),
            ("REMOTE_RPC_RETRIES", self.remote_rpc_retries),
            ("ROWS_SCANNED", self.rows_scanned),
            ("ROWS_FILTERED", self.rows_filtered),
        ] {
            map.insert(name.to_string(), value);
        }
        map
    }

    /// Adds the counters a server returned with one response.
    pub(crate) fn add_server(&mut self, metrics: &hbase_proto::ScanMetrics) {
        for pair in &metrics.metrics {
            let (Some(name), Some(value)) = (&pair.name, pair.value) else {
                continue;
            };
            // The server's numbers: summed without overflow, whatever they are.
            let value = value.max(0) as u64;
            match name.as_str() {
                "ROWS_SCANNED" => self.rows_scanned = self.rows_scanned.saturating_add(value),
                "ROWS_FILTERED" => self.rows_filtered = self.rows_filtered.saturating_add(value),
                _ => {}
            }
            let sum = self.server.entry(name.clone()).or_default();
            *sum = sum.saturating_add(value);
        }
    }

    /// Counts one RPC to `host`.
    pub(crate) fn add_call(&mut self, host: &str) {
        self.rpc_calls += 1;
        if is_remote(host) {
            self.remote_rpc_calls += 1;
        }
    }

    /// Counts the cells received from `host`.
    pub(crate) fn add_cells<'c>(&mut self, host: &str, cells: impl Iterator<Item = CellRef<'c>>) {
        let bytes: u64 = cells.map(encoded_size).sum();
        self.bytes_in_results += bytes;
        if is_remote(host) {
            self.bytes_in_remote_results += bytes;
        }
    }

    /// Counts a retried region scan against `host`.
    pub(crate) fn add_retry(&mut self, host: &str) {
        self.rpc_retries += 1;
        if is_remote(host) {
            self.remote_rpc_retries += 1;
        }
    }
}

/// A cell's size in KeyValue encoding (as the server counts a result's bytes).
fn encoded_size(c: CellRef<'_>) -> u64 {
    c.encoded_len() as u64
}

/// Whether `host` is another machine than this one, by host name as Java decides it.
fn is_remote(host: &str) -> bool {
    static LOCAL: OnceLock<Option<String>> = OnceLock::new();
    let local = LOCAL.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
    });
    local.as_ref().is_none_or(|l| !l.eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_bytes_are_the_keyvalue_encoding() {
        let cell = crate::Cell::new(b"row1", b"cf", b"q", 1, crate::CellType::Put, b"value");
        let mut block = bytes::BytesMut::new();
        crate::rpc::cellblock::encode_cell(
            &mut block,
            cell.row(),
            cell.family(),
            cell.qualifier(),
            1,
            crate::CellType::Put,
            cell.value(),
        );
        assert_eq!(encoded_size(cell.as_cell_ref()), block.len() as u64);
    }

    /// Counters are the server's numbers: any values, summed over any number of answers,
    /// neither panic (a debug build's overflow check) nor wrap.
    #[test]
    fn server_counters_saturate() {
        let mut m = ScanMetrics::default();
        let pb = hbase_proto::ScanMetrics {
            metrics: vec![hbase_proto::NameInt64Pair {
                name: Some("ROWS_SCANNED".into()),
                value: Some(i64::MAX),
            }],
        };
        for _ in 0..3 {
            m.add_server(&pb);
        }
        assert_eq!(m.rows_scanned, u64::MAX);
        assert_eq!(m.server["ROWS_SCANNED"], u64::MAX);
    }

    #[test]
    fn server_counters_add_up_and_keep_their_names() {
        let mut m = ScanMetrics::default();
        let pb = |rows: i64| hbase_proto::ScanMetrics {
            metrics: vec![
                hbase_proto::NameInt64Pair {
                    name: Some("ROWS_SCANNED".into()),
                    value: Some(rows),
                },
                hbase_proto::NameInt64Pair {
                    name: Some("BLOCK_BYTES_SCANNED".into()),
                    value: Some(100),
                },
            ],
        };
        m.add_server(&pb(3));
        m.add_server(&pb(4));
        assert_eq!(m.rows_scanned, 7);
        let map = m.to_map();
        assert_eq!(map["ROWS_SCANNED"], 7);
        assert_eq!(map["BLOCK_BYTES_SCANNED"], 200);
        assert_eq!(map["RPC_CALLS"], 0);
    }

    #[test]
    fn map_has_every_counter_and_only_the_java_clients() {
        let mut m = ScanMetrics::default();
        assert_eq!(m.to_map().len(), 19);
        assert!(m.to_map().values().all(|&v| v == 0));
        m.add_server(&hbase_proto::ScanMetrics {
            metrics: vec![hbase_proto::NameInt64Pair {
                name: Some("A_FUTURE_COUNTER".into()),
                value: Some(5),
            }],
        });
        assert_eq!(m.server["A_FUTURE_COUNTER"], 5);
        assert_eq!(m.to_map().len(), 19);
        assert!(!m.to_map().contains_key("A_FUTURE_COUNTER"));
    }
}
