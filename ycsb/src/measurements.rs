//! Latency measurements and the report YCSB users parse: YCSB's `Measurements` (one
//! measurement per operation name, of the `measurementtype` asked for, in the order its
//! `ConcurrentHashMap` iterates them), the `[OVERALL]` and GC lines, and the text, JSON and
//! JSON-array exporters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;

use crate::db::Status;
use crate::java::concurrent_hash_map_order;
use crate::props::Properties;
use crate::series::Series;
pub use crate::series::{HdrSeries, LoggedInterval};
use crate::util::{java_double, java_string_hash};
use crate::Error;

/// Which latency is recorded (`measurement.interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalMode {
    /// From the actual start of each operation (YCSB's default).
    Op,
    /// From the intended start (coordinated-omission corrected), under the plain names.
    Intended,
    /// Both: the intended latencies as `Intended-<OP>`.
    Both,
}

impl IntervalMode {
    /// Parses `op`, `intended` or `both`.
    pub fn parse(s: &str) -> Option<IntervalMode> {
        match s.trim() {
            "op" => Some(IntervalMode::Op),
            "intended" => Some(IntervalMode::Intended),
            "both" => Some(IntervalMode::Both),
            _ => None,
        }
    }
}

/// `measurementtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasurementType {
    /// `hdrhistogram` (the default).
    HdrHistogram,
    /// `histogram`: 1 ms buckets.
    Histogram,
    /// `hdrhistogram+histogram`.
    HdrAndHistogram,
    /// `hdrhistogram+raw`.
    HdrAndRaw,
    /// `timeseries`.
    TimeSeries,
    /// `raw`.
    Raw,
}

impl MeasurementType {
    /// Parses YCSB's names.
    pub fn parse(s: &str) -> Option<MeasurementType> {
        Some(match s.trim() {
            "hdrhistogram" => MeasurementType::HdrHistogram,
            "histogram" => MeasurementType::Histogram,
            "hdrhistogram+histogram" => MeasurementType::HdrAndHistogram,
            "hdrhistogram+raw" => MeasurementType::HdrAndRaw,
            "timeseries" => MeasurementType::TimeSeries,
            "raw" => MeasurementType::Raw,
            _ => return None,
        })
    }

    /// True when the type keeps an HdrHistogram (and so writes interval logs when asked).
    pub fn has_hdr(self) -> bool {
        matches!(
            self,
            MeasurementType::HdrHistogram
                | MeasurementType::HdrAndHistogram
                | MeasurementType::HdrAndRaw
        )
    }
}

/// YCSB 0.17.0's default `hdrhistogram.percentiles`.
pub const DEFAULT_PERCENTILES: &str = "95,99";

/// How measurements are kept and reported.
#[derive(Debug, Clone)]
pub struct MeasurementConfig {
    /// `measurementtype`.
    pub kind: MeasurementType,
    /// `measurement.interval`.
    pub interval: IntervalMode,
    /// `hdrhistogram.percentiles`.
    pub percentiles: Vec<f64>,
    /// `measurement.histogram.verbose`: every bucket in the report.
    pub verbose: bool,
    /// `histogram.buckets` (1 ms each).
    pub histogram_buckets: usize,
    /// `timeseries.granularity` (ms).
    pub granularity_ms: i64,
    /// `measurement.raw.output_file` (`None`: stdout).
    pub raw_output_file: Option<String>,
    /// `measurement.raw.no_summary`.
    pub raw_no_summary: bool,
    /// Keep every interval histogram (`hdrhistogram.fileoutput`, `artifacts.dir`).
    pub hdr_log: bool,
}

impl MeasurementConfig {
    /// HdrHistograms with these percentiles, interval mode `interval`.
    pub fn new(interval: IntervalMode, percentiles: Vec<f64>) -> MeasurementConfig {
        MeasurementConfig {
            kind: MeasurementType::HdrHistogram,
            interval,
            percentiles,
            verbose: false,
            histogram_buckets: 1000,
            granularity_ms: 1000,
            raw_output_file: None,
            raw_no_summary: false,
            hdr_log: false,
        }
    }

    /// From YCSB's properties, each checked.
    pub fn from_properties(p: &Properties) -> Result<MeasurementConfig, Error> {
        let kind_s = p.get_or("measurementtype", "hdrhistogram");
        let kind = MeasurementType::parse(kind_s).ok_or_else(|| {
            Error::Config(format!(
                "measurementtype={kind_s:?} is not one of hdrhistogram, histogram, hdrhistogram+histogram, hdrhistogram+raw, timeseries, raw"
            ))
        })?;
        let interval_s = p.get_or("measurement.interval", "op");
        let interval = IntervalMode::parse(interval_s).ok_or_else(|| {
            Error::Config(format!(
                "measurement.interval={interval_s:?} is not one of op, intended, both"
            ))
        })?;
        let percentiles =
            parse_percentiles(p.get_or("hdrhistogram.percentiles", DEFAULT_PERCENTILES))?;
        let buckets = p.i64_in("histogram.buckets", 1000, 1, 100_000_000)? as usize;
        let granularity = p.i64_in("timeseries.granularity", 1000, 1, i32::MAX as i64)?;
        let raw_output_file = p
            .get("measurement.raw.output_file")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        Ok(MeasurementConfig {
            kind,
            interval,
            percentiles,
            verbose: p.bool_or("measurement.histogram.verbose", false)?,
            histogram_buckets: buckets,
            granularity_ms: granularity,
            raw_output_file,
            raw_no_summary: p.bool_or("measurement.raw.no_summary", false)?,
            hdr_log: false,
        })
    }
}

/// Parses `hdrhistogram.percentiles` (`95,99`, `50,99.9`): each within 0..=100.
pub fn parse_percentiles(s: &str) -> Result<Vec<f64>, Error> {
    s.split(',')
        .map(|x| x.trim())
        .filter(|x| !x.is_empty())
        .map(|x| {
            x.parse::<f64>()
                .ok()
                .filter(|v| (0.0..=100.0).contains(v))
                .ok_or_else(|| {
                    Error::Config(format!(
                        "hdrhistogram.percentiles: {x:?} is not a percentile (0 to 100)"
                    ))
                })
        })
        .collect()
}

/// HdrHistogram's `getMean`, summed as Java sums it (median-equivalent values times counts,
/// divided once at the end): `NaN` for an empty histogram, as YCSB prints it.
pub fn java_mean(h: &Histogram<u64>) -> f64 {
    let mut total = 0.0f64;
    for v in h.iter_recorded() {
        total += (h.median_equivalent(v.value_iterated_to()) * v.count_at_value()) as f64;
    }
    total / h.len() as f64
}

/// HdrHistogram's `getValueAtPercentile` as YCSB's HdrHistogram (2.1.4) computes it: the rank
/// is `percentile/100 · count` rounded to nearest (at least 1), and the value is the highest
/// equivalent value of the bucket where the cumulative count reaches it (the lowest, for 0).
pub fn value_at_percentile(h: &Histogram<u64>, percentile: f64) -> u64 {
    let requested = percentile.min(100.0);
    let rank = ((requested / 100.0 * h.len() as f64) + 0.5) as u64;
    let rank = rank.max(1);
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            let at = v.value_iterated_to();
            return if percentile == 0.0 {
                h.lowest_equivalent(at)
            } else {
                h.highest_equivalent(at)
            };
        }
    }
    0
}

/// A value in the report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// Printed as an integer.
    Int(i64),
    /// Printed as Java's `Double.toString`.
    Float(f64),
}

impl Value {
    fn render(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(f) => java_double(*f),
        }
    }
}

/// One `[METRIC], Measurement, value` line.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportLine {
    /// `OVERALL`, `READ`, …
    pub metric: String,
    /// `RunTime(ms)`, `Operations`, …
    pub measurement: String,
    /// The value.
    pub value: Value,
}

/// The series by key, and the keys in insertion order.
type SeriesMap = (HashMap<String, Arc<Series>>, Vec<(String, Arc<Series>)>);

/// Measurements keyed by operation, remembered in insertion order; reported in the order
/// YCSB's `ConcurrentHashMap` iterates the same keys.
#[derive(Debug, Default)]
struct Registry {
    inner: RwLock<SeriesMap>,
}

impl Registry {
    fn get(&self, key: &str, make: impl FnOnce() -> Series) -> Arc<Series> {
        if let Some(m) = self.inner.read().unwrap().0.get(key) {
            return m.clone();
        }
        let mut w = self.inner.write().unwrap();
        if let Some(m) = w.0.get(key) {
            return m.clone();
        }
        let m = Arc::new(make());
        w.0.insert(key.to_string(), m.clone());
        w.1.push((key.to_string(), m.clone()));
        m
    }

    fn in_order(&self) -> Vec<Arc<Series>> {
        let r = self.inner.read().unwrap();
        let hashes: Vec<i32> = r.1.iter().map(|(k, _)| java_string_hash(k)).collect();
        concurrent_hash_map_order(&hashes)
            .into_iter()
            .map(|i| r.1[i].1.clone())
            .collect()
    }
}

/// The series of one operation name, resolved once per run instead of once per operation (a
/// hashed name, a lock and an `Arc` clone each time). Resolved lazily, on the first record, so a
/// series still exists only once something was recorded under it, and in the same order, as
/// with [`Measurements::measure`].
#[derive(Debug)]
pub struct OpHandle {
    name: &'static str,
    op: OnceLock<Arc<Series>>,
    intended: OnceLock<Arc<Series>>,
}

impl OpHandle {
    /// A handle for `name` (`READ`, `UPDATE`, …).
    pub const fn new(name: &'static str) -> OpHandle {
        OpHandle {
            name,
            op: OnceLock::new(),
            intended: OnceLock::new(),
        }
    }

    /// The operation's name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// All measurements of one run (YCSB's `Measurements`).
#[derive(Debug)]
pub struct Measurements {
    config: MeasurementConfig,
    op: Registry,
    intended: Registry,
    base: Instant,
    base_wall: SystemTime,
    /// Nanoseconds after `base` before which nothing is recorded (warmup).
    record_from_ns: AtomicU64,
    /// What YCSB would print on stdout besides the report (raw measurements).
    stdout: Mutex<String>,
    /// The measured window (after `base`): set when the run ends.
    window: Mutex<Option<(Duration, Duration)>>,
}

impl Measurements {
    /// HdrHistograms with the given interval mode and report percentiles; `log` keeps every
    /// interval for the HdrHistogram log.
    pub fn new(mode: IntervalMode, percentiles: Vec<f64>, log: bool) -> Measurements {
        let mut config = MeasurementConfig::new(mode, percentiles);
        config.hdr_log = log;
        Measurements::with_config(config)
    }

    /// Measurements of any type.
    pub fn with_config(config: MeasurementConfig) -> Measurements {
        Measurements {
            config,
            op: Registry::default(),
            intended: Registry::default(),
            base: Instant::now(),
            base_wall: SystemTime::now(),
            record_from_ns: AtomicU64::new(0),
            stdout: Mutex::new(String::new()),
            window: Mutex::new(None),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &MeasurementConfig {
        &self.config
    }

    /// The interval mode.
    pub fn mode(&self) -> IntervalMode {
        self.config.interval
    }

    /// Records nothing until `until`.
    pub fn set_warmup_until(&self, until: Instant) {
        let ns = until.saturating_duration_since(self.base).as_nanos() as u64;
        self.record_from_ns.store(ns, Ordering::SeqCst);
    }

    /// False during the warmup.
    pub fn is_recording(&self) -> bool {
        // Asked twice per operation: without a warmup, or once it has ended, answered without
        // reading the clock (two clock reads were about 120 of a read's 16,000 instructions).
        let from = self.record_from_ns.load(Ordering::Relaxed);
        if from == 0 {
            return true;
        }
        if (self.base.elapsed().as_nanos() as u64) < from {
            return false;
        }
        // Ended: later calls need no clock. Only if no new warmup was set meanwhile.
        let _ = self
            .record_from_ns
            .compare_exchange(from, 0, Ordering::Relaxed, Ordering::Relaxed);
        true
    }

    /// The run's measured window, `[from, to]`: RunTime's start (the end of any warm-up) and
    /// its end. The HdrHistogram logs are stamped inside it ([`Measurements::hdr_log`]).
    pub fn set_measured_window(&self, from: Instant, to: Instant) {
        let since = |t: Instant| t.saturating_duration_since(self.base);
        *self.window.lock().unwrap() = Some((since(from), since(to)));
    }

    /// The intervals of `hdr` for its HdrHistogram log: cut to the measured window once it is
    /// set ([`crate::series::clamp_to_window`]), as kept before that.
    pub fn hdr_log(&self, hdr: &HdrSeries) -> Vec<LoggedInterval> {
        let intervals = hdr.logged_intervals();
        match *self.window.lock().unwrap() {
            Some((from, to)) => crate::series::clamp_to_window(&intervals, from, to),
            None => intervals,
        }
    }

    /// The wall-clock time the measurements started (base of the HdrHistogram logs).
    pub fn base_wall(&self) -> SystemTime {
        self.base_wall
    }

    fn make(&self, name: &str) -> Series {
        let mut out = self.stdout.lock().unwrap();
        Series::new(name, &self.config, self.base, &mut out)
    }

    fn op_series(&self, op: &str) -> Arc<Series> {
        self.op.get(op, || self.make(op))
    }

    fn intended_series(&self, op: &str) -> Arc<Series> {
        self.intended.get(op, || {
            if self.config.interval == IntervalMode::Intended {
                self.make(op)
            } else {
                self.make(&format!("Intended-{op}"))
            }
        })
    }

    /// The series return codes of `op` are counted in: the intended one under
    /// `measurement.interval=intended`, else the op one.
    fn status_series(&self, op: &str) -> Arc<Series> {
        if self.config.interval == IntervalMode::Intended {
            self.intended_series(op)
        } else {
            self.op_series(op)
        }
    }

    /// Whether latencies from the intended start are recorded (`measurement.interval` is
    /// `intended` or `both`): else the caller need not compute them.
    pub fn records_intended(&self) -> bool {
        self.config.interval != IntervalMode::Op
    }

    /// Records a latency (µs) under `op`; nothing under `measurement.interval=intended`.
    pub fn measure(&self, op: &str, us: i64) {
        if self.config.interval == IntervalMode::Intended || !self.is_recording() {
            return;
        }
        self.op_series(op).measure(clamp_us(us));
    }

    /// Records a latency from the intended start (µs): under `op` with
    /// `measurement.interval=intended`, `Intended-<op>` with `both`, nowhere with `op`.
    pub fn measure_intended(&self, op: &str, us: i64) {
        if !self.records_intended() || !self.is_recording() {
            return;
        }
        self.intended_series(op).measure(clamp_us(us));
    }

    /// Counts one `Return=<status>` under `op`.
    pub fn report_status(&self, op: &str, status: Status) {
        if !self.is_recording() {
            return;
        }
        self.status_series(op).report_status(status, 1);
    }

    fn op_series_of<'a>(&self, h: &'a OpHandle) -> &'a Arc<Series> {
        h.op.get_or_init(|| self.op_series(h.name))
    }

    fn intended_series_of<'a>(&self, h: &'a OpHandle) -> &'a Arc<Series> {
        h.intended.get_or_init(|| self.intended_series(h.name))
    }

    /// [`measure`](Measurements::measure), [`measure_intended`](Measurements::measure_intended)
    /// and [`report_status`](Measurements::report_status) of one successful or failed operation
    /// through its handle: the same records, in the same order, without the name lookups. A
    /// handle belongs to one `Measurements`.
    pub fn record_op(&self, h: &OpHandle, status: Status, us: i64, intended_us: i64) {
        if !self.is_recording() {
            return;
        }
        let intended_mode = self.config.interval;
        if intended_mode != IntervalMode::Intended {
            self.op_series_of(h).measure(clamp_us(us));
        }
        if self.records_intended() {
            self.intended_series_of(h).measure(clamp_us(intended_us));
        }
        let codes = if intended_mode == IntervalMode::Intended {
            self.intended_series_of(h)
        } else {
            self.op_series_of(h)
        };
        codes.report_status(status, 1);
    }

    /// Moves `n` returns of `op` from `from` to `to` (a buffered write that failed later).
    pub fn reclassify(&self, op: &str, from: Status, to: Status, n: i64) {
        let m = self.status_series(op);
        m.report_status(from, -n);
        m.report_status(to, n);
    }

    /// Every measurement in report order: the op ones, then the intended ones.
    pub fn all(&self) -> Vec<Arc<Series>> {
        let mut v = self.op.in_order();
        v.extend(self.intended.in_order());
        v
    }

    /// The status line's per-operation summary of the interval since the last call.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        for m in self.all() {
            s.push_str(&m.summary());
            s.push(' ');
        }
        s
    }

    /// The report lines for every measurement. Raw data points meant for stdout are kept for
    /// [`Measurements::take_stdout`]; a raw output file that cannot be written is an error.
    pub fn export(&self) -> Result<Vec<ReportLine>, Error> {
        let mut lines = Vec::new();
        for m in self.all() {
            let side = m.export(&self.config, &mut lines);
            self.stdout.lock().unwrap().push_str(&side.stdout);
            if let Some(e) = side.error {
                return Err(Error::Io(e));
            }
        }
        Ok(lines)
    }

    /// What YCSB prints on stdout before the report (raw measurements' notes and data).
    pub fn take_stdout(&self) -> String {
        std::mem::take(&mut *self.stdout.lock().unwrap())
    }
}

/// YCSB measures latencies as `int` µs.
fn clamp_us(us: i64) -> i32 {
    us.clamp(0, i32::MAX as i64) as i32
}

/// YCSB's ordinal for a percentile: `50th`, `1st`, `99.9`.
pub fn ordinal(p: f64) -> String {
    if p.fract() == 0.0 {
        let j = p as i64;
        let suffix = match j % 100 {
            11..=13 => "th",
            _ => match j % 10 {
                1 => "st",
                2 => "nd",
                3 => "rd",
                _ => "th",
            },
        };
        format!("{j}{suffix}")
    } else {
        java_double(p)
    }
}

/// The lines of one HdrHistogram operation block (`ycsb merge`): Operations, average, min,
/// max, the percentiles, then the return codes in the order given.
pub fn block_lines(
    name: &str,
    h: &Histogram<u64>,
    percentiles: &[f64],
    return_codes: &[(String, i64)],
) -> Vec<ReportLine> {
    let line = |m: String, v: Value| ReportLine {
        metric: name.to_string(),
        measurement: m,
        value: v,
    };
    let mut v = vec![
        line("Operations".into(), Value::Int(h.len() as i64)),
        line("AverageLatency(us)".into(), Value::Float(java_mean(h))),
        line(
            "MinLatency(us)".into(),
            Value::Int(crate::series::java_min(h)),
        ),
        line("MaxLatency(us)".into(), Value::Int(h.max() as i64)),
    ];
    for &p in percentiles {
        v.push(line(
            format!("{}PercentileLatency(us)", ordinal(p)),
            Value::Int(value_at_percentile(h, p) as i64),
        ));
    }
    for (status, n) in return_codes {
        if *n != 0 || status == "OK" {
            v.push(line(format!("Return={status}"), Value::Int(*n)));
        }
    }
    v
}

fn overall(metric: &str, measurement: &str, value: Value) -> ReportLine {
    ReportLine {
        metric: metric.into(),
        measurement: measurement.into(),
        value,
    }
}

/// The `[OVERALL]` lines: RunTime and `1000·ops/runtime`.
pub fn overall_lines(runtime_ms: u64, ops: u64) -> Vec<ReportLine> {
    let throughput = 1000.0 * ops as f64 / runtime_ms as f64;
    vec![
        overall("OVERALL", "RunTime(ms)", Value::Int(runtime_ms as i64)),
        overall("OVERALL", "Throughput(ops/sec)", Value::Float(throughput)),
    ]
}

/// YCSB's JVM garbage-collection totals. This driver has no garbage collector, so they are 0
/// (and the per-collector `[TOTAL_GCS_<name>]` lines are left out): printed so that parsers
/// expecting YCSB's lines find them.
pub fn gc_lines(runtime_ms: u64) -> Vec<ReportLine> {
    vec![
        overall("TOTAL_GCs", "Count", Value::Int(0)),
        overall("TOTAL_GC_TIME", "Time(ms)", Value::Int(0)),
        overall(
            "TOTAL_GC_TIME_%",
            "Time(%)",
            Value::Float(0.0 / runtime_ms as f64 * 100.0),
        ),
    ]
}

/// The whole report of a run: `[OVERALL]`, the GC lines, then every measurement's block.
pub fn report_lines(
    runtime_ms: u64,
    ops: u64,
    measurements: &Measurements,
) -> Result<Vec<ReportLine>, Error> {
    let mut lines = overall_lines(runtime_ms, ops);
    lines.extend(gc_lines(runtime_ms));
    lines.extend(measurements.export()?);
    Ok(lines)
}

/// Output formats (`exporter=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exporter {
    /// `TextMeasurementsExporter`.
    Text,
    /// `JSONMeasurementsExporter`: a sequence of JSON objects.
    Json,
    /// `JSONArrayMeasurementsExporter`: one JSON array.
    JsonArray,
}

impl Exporter {
    /// From the class name (either package, or just the simple name).
    pub fn parse(s: &str) -> Option<Exporter> {
        let simple = s.trim().rsplit('.').next().unwrap_or("");
        match simple {
            "TextMeasurementsExporter" => Some(Exporter::Text),
            "JSONMeasurementsExporter" => Some(Exporter::Json),
            "JSONArrayMeasurementsExporter" => Some(Exporter::JsonArray),
            _ => None,
        }
    }

    /// Renders the report.
    pub fn render(self, lines: &[ReportLine]) -> String {
        match self {
            Exporter::Text => render_text(lines),
            // As Jackson's pretty printer writes them: no newline at the end.
            Exporter::Json => {
                let objs: Vec<String> = lines.iter().map(json_object).collect();
                objs.join(" ")
            }
            Exporter::JsonArray => {
                let objs: Vec<String> = lines.iter().map(json_object).collect();
                if objs.is_empty() {
                    "[ ]".into()
                } else {
                    format!("[ {} ]", objs.join(", "))
                }
            }
        }
    }
}

/// The text report: `[METRIC], Measurement, value` per line.
pub fn render_text(lines: &[ReportLine]) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(&format!(
            "[{}], {}, {}\n",
            l.metric,
            l.measurement,
            l.value.render()
        ));
    }
    s
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_object(l: &ReportLine) -> String {
    // Jackson writes the non-finite doubles as strings ("NaN", "Infinity").
    let value = match l.value {
        Value::Float(f) if !f.is_finite() => json_string(&java_double(f)),
        v => v.render(),
    };
    format!(
        "{{\n  \"metric\" : {},\n  \"measurement\" : {},\n  \"value\" : {value}\n}}",
        json_string(&l.metric),
        json_string(&l.measurement),
    )
}

/// Writes `intervals` of measurement `name` as YCSB 0.17.0 writes its `<OP>.hdr`
/// ([`crate::hdr_log`]).
pub fn write_hdr_log(
    path: &std::path::Path,
    name: &str,
    base: SystemTime,
    intervals: &[LoggedInterval],
) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    crate::hdr_log::write_log(&mut file, name, base, intervals)?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals() {
        assert_eq!(ordinal(1.0), "1st");
        assert_eq!(ordinal(2.0), "2nd");
        assert_eq!(ordinal(3.0), "3rd");
        assert_eq!(ordinal(11.0), "11th");
        assert_eq!(ordinal(12.0), "12th");
        assert_eq!(ordinal(13.0), "13th");
        assert_eq!(ordinal(50.0), "50th");
        assert_eq!(ordinal(99.9), "99.9");
        assert_eq!(ordinal(111.0), "111th");
    }

    fn names(m: &Measurements) -> Vec<String> {
        m.all().iter().map(|x| x.name().to_string()).collect()
    }

    #[test]
    fn nothing_is_recorded_until_the_warmup_ends_and_everything_after() {
        let m = Measurements::new(IntervalMode::Op, vec![95.0], false);
        assert!(m.is_recording(), "no warmup: recording from the start");
        m.set_warmup_until(Instant::now() + std::time::Duration::from_secs(3600));
        assert!(!m.is_recording());
        m.measure("READ", 100);
        m.report_status("READ", Status::Ok);
        assert!(names(&m).is_empty(), "{:?}", names(&m));
        // A warmup that has ended (the clock is monotonic): recording, and it stays so.
        m.set_warmup_until(Instant::now());
        assert!(m.is_recording());
        assert!(m.is_recording());
        m.measure("READ", 100);
        assert_eq!(names(&m), ["READ"]);
    }

    #[test]
    fn interval_modes_name_the_blocks() {
        let both = Measurements::new(IntervalMode::Both, vec![95.0], false);
        both.measure("READ", 100);
        both.measure_intended("READ", 150);
        both.report_status("READ", Status::Ok);
        assert_eq!(names(&both), ["READ", "Intended-READ"]);
        // intended: the intended latencies under the plain name, and nothing else.
        let intended = Measurements::new(IntervalMode::Intended, vec![95.0], false);
        intended.measure("READ", 100);
        intended.measure_intended("READ", 150);
        intended.report_status("READ", Status::Ok);
        assert_eq!(names(&intended), ["READ"]);
        let text = render_text(&intended.export().unwrap());
        assert!(text.contains("[READ], MaxLatency(us), 150\n"), "{text}");
        assert!(text.contains("[READ], Return=OK, 1\n"), "{text}");
    }

    #[test]
    fn percentile_ranks_round_to_nearest() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=10u64 {
            h.record(v).unwrap();
        }
        // 10 values: the 95th percentile's rank is 9.5 → 10 (nearest), the 94th's 9.4 → 9.
        assert_eq!(value_at_percentile(&h, 95.0), 10);
        assert_eq!(value_at_percentile(&h, 94.0), 9);
        assert_eq!(value_at_percentile(&h, 0.0), 1);
        assert!(java_mean(&Histogram::<u64>::new(3).unwrap()).is_nan());
    }
}
