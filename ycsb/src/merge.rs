//! `ycsb merge DIR...`: one report for runs made at the same time by several `ycsb`
//! processes (on one or several client machines), each run saved with
//! `-p artifacts.dir=DIR`.
//!
//! Averaging the averages (or the percentiles) of N reports is wrong; adding the histograms is
//! exact. So each run keeps its HdrHistogram interval log per operation (`DIR/<OP>.hdr`, as
//! `hdrhistogram.fileoutput` writes them) and its text report (`DIR/report.txt`). Merge adds
//! every interval histogram of an operation across runs, sums the return codes, and computes
//! throughput over the window in which all runs were running (the overlap), counting the
//! operations of the intervals inside that window (an interval that straddles its edge counts
//! in proportion). RunTime is the whole window, from the first start to the last end. A run's
//! window is its measured one, as its own RunTime: it ends with its last interval and starts
//! RunTime before that, after any `warmuptime`.
//!
//! What merge assumes: the client machines' clocks agree (NTP; the logs carry absolute start
//! times), the runs did disjoint work (disjoint `insertstart`/`insertcount` in a load), and
//! every run used the same operation names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::Histogram;

use crate::db::Status;
use crate::measurements::{block_lines, ReportLine, Value};
use crate::Error;

/// One interval of one operation, at absolute times (seconds since the epoch).
#[derive(Debug, Clone)]
pub struct Interval {
    /// Start.
    pub start: f64,
    /// End.
    pub end: f64,
    /// The latencies recorded in it (µs).
    pub histogram: Histogram<u64>,
}

/// What one run left in its artifacts directory.
#[derive(Debug, Clone)]
pub struct RunArtifacts {
    /// The directory.
    pub dir: PathBuf,
    /// The interval logs' start time (seconds since the epoch): the process's clock origin,
    /// before any warm-up.
    pub start: f64,
    /// End of the measured window (seconds since the epoch): the end of the last interval,
    /// which the run's report closes when RunTime stops.
    pub end: f64,
    /// `[OVERALL], RunTime(ms)` of its report: the measured window, after any warm-up.
    pub runtime_ms: u64,
    /// Operation names in report order.
    pub ops: Vec<String>,
    /// Interval histograms by operation.
    pub intervals: BTreeMap<String, Vec<Interval>>,
    /// Return codes by operation, in report order.
    pub return_codes: BTreeMap<String, Vec<(String, i64)>>,
}

impl RunArtifacts {
    /// Start of the measured window (seconds since the epoch): RunTime before its end. With
    /// `warmuptime` this is the end of the warm-up, not the logs' start time.
    pub fn measured_start(&self) -> f64 {
        self.end - self.runtime_ms as f64 / 1000.0
    }
}

fn io(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Io(format!("{}: {e}", path.display()))
}

/// A year of seconds: HdrHistogram's reader takes interval stamps more than this before the
/// StartTime as offsets from it.
const YEAR_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// Reads one interval log: its start time and its intervals at absolute times. The stamps
/// are offsets from BaseTime when the log has one (earlier `ycsb` versions wrote it); without
/// one, as YCSB 0.17.0 (and we) write them, offsets from StartTime, by HdrHistogram's rule
/// (stamps a year or more before StartTime are offsets, later ones absolute).
pub fn read_hdr_log(path: &Path) -> Result<(f64, Vec<Interval>), Error> {
    let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
    let mut start = None;
    let mut base = None;
    let mut raw = Vec::new();
    for entry in IntervalLogIterator::new(&bytes) {
        match entry.map_err(|e| io(path, format!("not an HdrHistogram interval log: {e:?}")))? {
            LogEntry::StartTime(t) => start = Some(t.as_secs_f64()),
            LogEntry::BaseTime(t) => base = Some(t.as_secs_f64()),
            LogEntry::Interval(h) => {
                let encoded = base64::engine::general_purpose::STANDARD
                    .decode(h.encoded_histogram())
                    .map_err(|e| io(path, format!("bad histogram encoding: {e}")))?;
                let histogram = crate::hdr_log::decode(&encoded)
                    .map_err(|e| io(path, format!("bad histogram: {e}")))?;
                raw.push((h.start_timestamp(), h.duration(), histogram));
            }
        }
    }
    let base = base.unwrap_or(match (start, raw.first()) {
        (Some(s), Some((at, _, _))) if at.as_secs_f64() < s - YEAR_SECS => s,
        (Some(s), None) => s,
        _ => 0.0,
    });
    let start = start.unwrap_or(base);
    let intervals = raw
        .into_iter()
        .map(|(at, len, histogram): (Duration, Duration, _)| {
            let s = base + at.as_secs_f64();
            Interval {
                start: s,
                end: s + len.as_secs_f64(),
                histogram,
            }
        })
        .collect();
    Ok((start, intervals))
}

/// The operation a measurement measures: `HdrREAD` (the HdrHistogram half of
/// `hdrhistogram+histogram` and `hdrhistogram+raw`, its log `HdrREAD.hdr` as YCSB names it) is
/// `READ`.
fn operation_of(name: &str) -> &str {
    name.strip_prefix("Hdr")
        .filter(|op| !op.is_empty())
        .unwrap_or(name)
}

/// Reads a run's artifacts directory.
pub fn read_run(dir: &Path) -> Result<RunArtifacts, Error> {
    let report_path = dir.join("report.txt");
    let report = std::fs::read_to_string(&report_path).map_err(|e| {
        io(
            &report_path,
            format!(
                "{e} (was the run made with -p artifacts.dir={}?)",
                dir.display()
            ),
        )
    })?;
    let mut runtime_ms = None;
    let mut ops: Vec<String> = Vec::new();
    let mut return_codes: BTreeMap<String, Vec<(String, i64)>> = BTreeMap::new();
    for line in report.lines() {
        let Some(rest) = line.strip_prefix('[') else {
            continue;
        };
        let Some((metric, rest)) = rest.split_once("], ") else {
            continue;
        };
        let Some((measurement, value)) = rest.rsplit_once(", ") else {
            continue;
        };
        if metric == "OVERALL" {
            if measurement == "RunTime(ms)" {
                runtime_ms = value.trim().parse::<f64>().ok().map(|v| v as u64);
            }
            continue;
        }
        if metric.starts_with("TOTAL_G") {
            continue;
        }
        let metric = operation_of(metric);
        if !ops.iter().any(|o| o == metric) {
            ops.push(metric.to_string());
        }
        if let Some(code) = measurement.strip_prefix("Return=") {
            let n = value
                .trim()
                .parse::<i64>()
                .map_err(|_| io(&report_path, format!("bad count in line {line:?}")))?;
            return_codes
                .entry(metric.to_string())
                .or_default()
                .push((code.to_string(), n));
        }
    }
    let runtime_ms =
        runtime_ms.ok_or_else(|| io(&report_path, "no [OVERALL], RunTime(ms) line"))?;
    let mut intervals = BTreeMap::new();
    let mut logs: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut start: Option<f64> = None;
    let entries = std::fs::read_dir(dir).map_err(|e| io(dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| io(dir, e))?.path();
        if path.extension().is_some_and(|e| e == "hdr") {
            let op = path
                .file_stem()
                .map(|s| operation_of(&s.to_string_lossy()).to_string())
                .unwrap_or_default();
            // READ.hdr and HdrREAD.hdr (a two-in-one measurement type's name) are one
            // operation's: two runs' logs in one directory, which one run cannot have written.
            if let Some(other) = logs.insert(op.clone(), path.clone()) {
                return Err(io(
                    dir,
                    format!(
                        "{} and {} both log {op}: logs of two runs (remove the older one)",
                        other.display(),
                        path.display()
                    ),
                ));
            }
            let (s, iv) = read_hdr_log(&path)?;
            start = Some(start.map_or(s, |x: f64| x.min(s)));
            intervals.insert(op, iv);
        }
    }
    let start = start.ok_or_else(|| io(dir, "no <OP>.hdr interval logs"))?;
    // The report takes every operation's last interval when RunTime stops; a run without a
    // single interval ends RunTime after its logs' start.
    let last = intervals
        .values()
        .flatten()
        .map(|iv: &Interval| iv.end)
        .fold(f64::NEG_INFINITY, f64::max);
    let end = if last.is_finite() {
        last
    } else {
        start + runtime_ms as f64 / 1000.0
    };
    Ok(RunArtifacts {
        dir: dir.to_path_buf(),
        start,
        end,
        runtime_ms,
        ops,
        intervals,
        return_codes,
    })
}

/// Adds `h` into `total` (starting it on the first call). A deserialized histogram covers only
/// the range its own values needed, so the sum starts as an empty auto-resizing histogram: a
/// later interval's larger values widen it instead of failing the add.
pub fn add_into(total: &mut Option<Histogram<u64>>, h: &Histogram<u64>) -> Result<(), String> {
    let t = match total {
        Some(t) => t,
        None => {
            let mut empty = Histogram::<u64>::new(h.sigfig()).map_err(|e| format!("{e:?}"))?;
            empty.auto(true);
            total.insert(empty)
        }
    };
    t.add(h).map_err(|e| format!("{e:?}"))
}

/// Every operation's intervals of all `runs` added into one histogram per operation.
pub fn merged_histograms(runs: &[RunArtifacts]) -> Result<BTreeMap<String, Histogram<u64>>, Error> {
    let mut out: BTreeMap<String, Option<Histogram<u64>>> = BTreeMap::new();
    for r in runs {
        for (op, intervals) in &r.intervals {
            let total = out.entry(op.clone()).or_default();
            for iv in intervals {
                add_into(total, &iv.histogram)
                    .map_err(|e| Error::Io(format!("{}: {e}", r.dir.display())))?;
            }
        }
    }
    Ok(out
        .into_iter()
        .filter_map(|(op, h)| h.map(|h| (op, h)))
        .collect())
}

/// The measurements that time the workload's own operations.
const OPERATIONS: [&str; 4] = ["READ", "UPDATE", "INSERT", "SCAN"];

/// Whether the samples of measurement `name` are operations of the workload: an operation's
/// own (`READ`) or a failed one's (`READ-FAILED`, `READ-NOT_FOUND`, ...). Not
/// READ-MODIFY-WRITE, VERIFY, FLUSH, CLEANUP nor the `Intended-` shadows.
fn is_operation(name: &str) -> bool {
    OPERATIONS.iter().any(|op| {
        name == *op
            || name
                .strip_prefix(op)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|status| {
                    status == "FAILED" || Status::ALL.iter().any(|s| s.name() == status)
                })
    })
}

/// Some of a run's operations, over an interval (seconds since the epoch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counted {
    /// Start.
    pub start: f64,
    /// End.
    pub end: f64,
    /// Operations; negative for the samples an interval of the run's histograms took off.
    pub ops: f64,
}

impl Counted {
    /// The share of it inside `[from, to]`: in proportion to the time inside, all or nothing
    /// for an interval of no length.
    pub fn share(&self, from: f64, to: f64) -> f64 {
        let len = self.end - self.start;
        if len > 0.0 {
            (self.end.min(to) - self.start.max(from)).max(0.0) / len
        } else if self.start >= from && self.start <= to {
            1.0
        } else {
            0.0
        }
    }
}

/// The operations of `run` over time, as its report counts them for its throughput: one per
/// transaction (or insert of a load), whatever it returned. Its histograms hold other samples
/// too: a read-modify-write is timed as READ-MODIFY-WRITE and as the READ and the UPDATE it
/// made (so each READ-MODIFY-WRITE sample takes one off), and with client buffering each
/// thread's final mutator close is timed as an UPDATE without a return code (so the UPDATE
/// samples beyond UPDATE's return codes come off UPDATE's last intervals, where the closes
/// are). The sum of the `ops` is the run's operations.
pub fn counted_intervals(run: &RunArtifacts) -> Vec<Counted> {
    let mut out = Vec::new();
    let mut update_samples = 0u64;
    for (name, intervals) in &run.intervals {
        let sign = if is_operation(name) {
            1.0
        } else if name == "READ-MODIFY-WRITE" {
            -1.0
        } else {
            continue;
        };
        if name == "UPDATE" || name.starts_with("UPDATE-") {
            update_samples += intervals.iter().map(|iv| iv.histogram.len()).sum::<u64>();
        }
        if name == "UPDATE" {
            continue;
        }
        out.extend(intervals.iter().map(|iv| Counted {
            start: iv.start,
            end: iv.end,
            ops: sign * iv.histogram.len() as f64,
        }));
    }
    let returns: i64 = run
        .return_codes
        .get("UPDATE")
        .map(|codes| codes.iter().map(|(_, n)| n).sum())
        .unwrap_or(0);
    let mut closes = update_samples.saturating_sub(returns.max(0) as u64);
    let updates = run
        .intervals
        .get("UPDATE")
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut kept: Vec<Counted> = updates
        .iter()
        .rev()
        .map(|iv| {
            let n = iv.histogram.len();
            let off = n.min(closes);
            closes -= off;
            Counted {
                start: iv.start,
                end: iv.end,
                ops: (n - off) as f64,
            }
        })
        .collect();
    kept.reverse();
    out.extend(kept);
    out
}

/// The merged report lines of `runs`, with `percentiles` in each block.
pub fn merge(runs: &[RunArtifacts], percentiles: &[f64]) -> Result<Vec<ReportLine>, Error> {
    if runs.is_empty() {
        return Err(Error::Usage(
            "ycsb merge needs at least one run directory".into(),
        ));
    }
    // The measured windows: a warm-up is neither in a run's RunTime nor in its throughput.
    let first_start = runs
        .iter()
        .map(|r| r.measured_start())
        .fold(f64::INFINITY, f64::min);
    let last_end = runs.iter().map(|r| r.end).fold(f64::NEG_INFINITY, f64::max);
    let overlap_start = runs
        .iter()
        .map(|r| r.measured_start())
        .fold(f64::NEG_INFINITY, f64::max);
    let overlap_end = runs.iter().map(|r| r.end).fold(f64::INFINITY, f64::min);
    let overlap = overlap_end - overlap_start;

    // Operation order: as the first run reports them, then any others.
    let mut ops: Vec<String> = Vec::new();
    for r in runs {
        for op in r.ops.iter().chain(r.intervals.keys()) {
            if !ops.contains(op) {
                ops.push(op.clone());
            }
        }
    }
    let counted: Vec<Counted> = runs.iter().flat_map(counted_intervals).collect();
    let in_window: f64 = counted
        .iter()
        .map(|c| c.share(overlap_start, overlap_end) * c.ops)
        .sum();
    let mut blocks = Vec::new();
    for op in &ops {
        let mut total: Option<Histogram<u64>> = None;
        let mut codes: Vec<(String, i64)> = Vec::new();
        for r in runs {
            for iv in r.intervals.get(op).map(Vec::as_slice).unwrap_or(&[]) {
                add_into(&mut total, &iv.histogram)
                    .map_err(|e| Error::Io(format!("{}: {e}", r.dir.display())))?;
            }
            for (code, n) in r.return_codes.get(op).map(Vec::as_slice).unwrap_or(&[]) {
                match codes.iter_mut().find(|(c, _)| c == code) {
                    Some((_, m)) => *m += n,
                    None => codes.push((code.clone(), *n)),
                }
            }
        }
        if let Some(h) = total {
            blocks.extend(block_lines(op, &h, percentiles, &codes));
        }
    }
    let runtime_ms = ((last_end - first_start) * 1000.0).round() as i64;
    let throughput = if overlap > 0.0 {
        in_window / overlap
    } else {
        // Runs that never ran together: all operations over the whole window.
        let ops: f64 = counted.iter().map(|c| c.ops).sum();
        ops * 1000.0 / runtime_ms.max(1) as f64
    };
    let overall = |m: &str, v: Value| ReportLine {
        metric: "OVERALL".into(),
        measurement: m.into(),
        value: v,
    };
    let mut lines = vec![
        overall("RunTime(ms)", Value::Int(runtime_ms)),
        overall("Throughput(ops/sec)", Value::Float(throughput)),
        overall("Runs", Value::Int(runs.len() as i64)),
        overall(
            "OverlapTime(ms)",
            Value::Int((overlap.max(0.0) * 1000.0).round() as i64),
        ),
    ];
    lines.extend(blocks);
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    /// As a deserialized interval is: a fixed range that only just holds its own values.
    fn narrow(values: &[u64]) -> Histogram<u64> {
        let max = values.iter().copied().max().unwrap_or(1).max(2);
        let mut h = Histogram::<u64>::new_with_bounds(1, max, 3).unwrap();
        h.auto(false);
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn a_later_interval_with_larger_values_widens_the_sum() {
        let mut a = run(100.0, 2000, vec![]);
        let ivs = a.intervals.get_mut("READ").unwrap();
        for (start, values) in [(100.0, vec![5u64, 9]), (101.0, vec![3_000_000])] {
            ivs.push(Interval {
                start,
                end: start + 1.0,
                histogram: narrow(&values),
            });
        }
        let lines = merge(&[a], &[50.0]).unwrap();
        assert_eq!(value(&lines, "READ", "Operations"), "3");
        let max: u64 = value(&lines, "READ", "MaxLatency(us)").parse().unwrap();
        assert!((2_999_000..=3_001_000).contains(&max), "{max}");
    }

    fn run(start: f64, runtime_ms: u64, intervals: Vec<(f64, f64, Vec<u64>)>) -> RunArtifacts {
        let mut map = BTreeMap::new();
        map.insert(
            "READ".to_string(),
            intervals
                .into_iter()
                .map(|(s, e, v)| Interval {
                    start: s,
                    end: e,
                    histogram: hist(&v),
                })
                .collect(),
        );
        let mut codes = BTreeMap::new();
        codes.insert("READ".to_string(), vec![("OK".to_string(), 4)]);
        RunArtifacts {
            dir: PathBuf::from("x"),
            start,
            end: start + runtime_ms as f64 / 1000.0,
            runtime_ms,
            ops: vec!["READ".into()],
            intervals: map,
            return_codes: codes,
        }
    }

    fn value(lines: &[ReportLine], metric: &str, m: &str) -> String {
        lines
            .iter()
            .find(|l| l.metric == metric && l.measurement == m)
            .map(|l| match &l.value {
                Value::Int(i) => i.to_string(),
                Value::Float(f) => f.to_string(),
            })
            .unwrap_or_else(|| panic!("no [{metric}], {m}"))
    }

    /// A log as `ycsb` wrote it before Round 34 (the `hdrhistogram` crate's V2 encoding, a
    /// BaseTime line, stamps relative to it) still reads: absolute interval times, the same
    /// counts.
    #[test]
    fn a_log_of_an_earlier_ycsb_version_reads() {
        use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
        use hdrhistogram::serialization::V2DeflateSerializer;
        let base = std::time::UNIX_EPOCH + Duration::from_millis(1_796_000_000_250);
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record_n(250, 3).unwrap();
        h.record(9_000).unwrap();
        let mut bytes = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        {
            let mut writer = IntervalLogWriterBuilder::new()
                .with_base_time(base)
                .with_start_time(base)
                .begin_log_with(&mut bytes, &mut serializer)
                .unwrap();
            for at in [0, 2] {
                writer
                    .write_histogram(&h, Duration::from_secs(at), Duration::from_secs(1), None)
                    .unwrap();
            }
        }
        let path = std::env::temp_dir().join(format!("ycsb-old-log-{}.hdr", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let (start, intervals) = read_hdr_log(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(start, 1_796_000_000.25);
        let times: Vec<(f64, f64)> = intervals.iter().map(|i| (i.start, i.end)).collect();
        assert_eq!(
            times,
            [
                (1_796_000_000.25, 1_796_000_001.25),
                (1_796_000_002.25, 1_796_000_003.25)
            ]
        );
        assert!(intervals
            .iter()
            .all(|i| i.histogram.len() == 4 && i.histogram.max() == h.max()));
    }

    /// `READ.hdr` beside `HdrREAD.hdr` (an older two-in-one run's log left beside a newer
    /// one's) is refused, naming both; before, one of them was dropped unseen.
    #[test]
    fn two_logs_of_one_operation_are_refused() {
        let dir = std::env::temp_dir().join(format!("ycsb-merge-two-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("report.txt"),
            "[OVERALL], RunTime(ms), 1000\n[READ], Operations, 1\n",
        )
        .unwrap();
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(100).unwrap();
        let interval = crate::series::LoggedInterval {
            start: std::time::Duration::ZERO,
            duration: std::time::Duration::from_secs(1),
            histogram: h,
        };
        for name in ["READ.hdr", "HdrREAD.hdr"] {
            let mut f = std::fs::File::create(dir.join(name)).unwrap();
            crate::hdr_log::write_log(
                &mut f,
                "READ",
                std::time::SystemTime::now(),
                std::slice::from_ref(&interval),
            )
            .unwrap();
        }
        let e = read_run(&dir).unwrap_err().to_string();
        assert!(
            e.contains("READ.hdr") && e.contains("HdrREAD.hdr") && e.contains("both log READ"),
            "{e}"
        );
        std::fs::remove_file(dir.join("READ.hdr")).unwrap();
        assert_eq!(read_run(&dir).unwrap().intervals["READ"].len(), 1);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn histograms_add_and_codes_sum() {
        // Two runs of 2 s; the second starts 1 s later: overlap 1 s, whole window 3 s.
        let a = run(
            100.0,
            2000,
            vec![(100.0, 101.0, vec![10, 20]), (101.0, 102.0, vec![30, 40])],
        );
        let b = run(
            101.0,
            2000,
            vec![(101.0, 102.0, vec![50, 60]), (102.0, 103.0, vec![70, 80])],
        );
        let lines = merge(&[a, b], &[50.0]).unwrap();
        assert_eq!(value(&lines, "READ", "Operations"), "8");
        assert_eq!(value(&lines, "READ", "Return=OK"), "8");
        assert_eq!(value(&lines, "READ", "MaxLatency(us)"), "80");
        assert_eq!(value(&lines, "OVERALL", "RunTime(ms)"), "3000");
        assert_eq!(value(&lines, "OVERALL", "OverlapTime(ms)"), "1000");
        // Inside [101, 102]: 2 operations of each run.
        assert_eq!(value(&lines, "OVERALL", "Throughput(ops/sec)"), "4");
    }
}
