//! One measurement (YCSB's `OneMeasurement`): the latencies of one operation name, kept the way
//! `measurementtype` asks, with its return codes, its status-line summary and its report
//! block, each in YCSB's own format:
//!
//! - `hdrhistogram` (the default): an HdrHistogram (3 significant digits), percentiles from
//!   `hdrhistogram.percentiles`;
//! - `histogram`: 1 ms buckets (`histogram.buckets`, default 1000), mean, variance, 95th and
//!   99th percentile at bucket resolution;
//! - `timeseries`: the average latency per `timeseries.granularity` ms;
//! - `raw`: every data point, written to `measurement.raw.output_file` (or stdout), and exact
//!   percentiles;
//! - `hdrhistogram+histogram` and `hdrhistogram+raw`: two of them side by side (`Hdr<OP>` and
//!   `Bucket<OP>`/`Raw<OP>`), the return codes in the first.

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::db::Status;
use crate::java::concurrent_hash_map_order;
use crate::measurements::{java_mean, ordinal, value_at_percentile, MeasurementConfig};
use crate::measurements::{MeasurementType, ReportLine, Value};
use crate::util::{decimal_2, java_format_2f};

/// HdrHistogram's `getMinValue` as YCSB's version (2.1.4) returns it: `Long.MAX_VALUE` for an
/// empty histogram.
pub fn java_min(h: &Histogram<u64>) -> i64 {
    if h.is_empty() {
        i64::MAX
    } else {
        h.min() as i64
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is valid")
}

/// An interval histogram kept for the HdrHistogram log.
#[derive(Debug, Clone)]
pub struct LoggedInterval {
    /// Start, relative to the log's base time.
    pub start: Duration,
    /// Length.
    pub duration: Duration,
    /// The values recorded in it.
    pub histogram: Histogram<u64>,
}

/// `intervals` cut to the measured window `[from, to]` (durations after the log's base). Samples
/// are recorded only inside it (none before a warm-up ends, none after the run's last flush),
/// but an interval is stamped when it is taken: the first one may have begun during the
/// warm-up and the last one is taken after RunTime stopped. `ycsb merge` reads a run's window
/// from its last interval's end and RunTime, so an interval stamped past the window shifts the
/// window later and its operations count in proportion only.
pub fn clamp_to_window(
    intervals: &[LoggedInterval],
    from: Duration,
    to: Duration,
) -> Vec<LoggedInterval> {
    intervals
        .iter()
        .map(|i| {
            let start = i.start.clamp(from, to.max(from));
            let end = (i.start + i.duration).clamp(start, to.max(start));
            LoggedInterval {
                start,
                duration: end - start,
                histogram: i.histogram.clone(),
            }
        })
        .collect()
}

/// Interval histograms per series: each recording thread writes to its own (threads take
/// shards in turn), so the client threads' tasks on different tokio workers never contend for
/// one lock; a status line or the report adds the shards up.
const SHARDS: usize = 8;

fn shard() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

/// `OneMeasurementHdrHistogram`: the histogram of the current interval (taken by each status
/// line), the total, and optionally every interval for the HdrHistogram log.
#[derive(Debug)]
pub struct HdrSeries {
    /// The current interval's start (its lock also orders interval takes).
    interval_start: Mutex<Instant>,
    shards: Box<[Mutex<Histogram<u64>>; SHARDS]>,
    total: Mutex<Option<Histogram<u64>>>,
    log: Option<Mutex<Vec<LoggedInterval>>>,
    base: Instant,
}

impl HdrSeries {
    fn new(log: bool, base: Instant) -> HdrSeries {
        HdrSeries {
            interval_start: Mutex::new(Instant::now()),
            shards: Box::new(std::array::from_fn(|_| Mutex::new(new_histogram()))),
            total: Mutex::new(None),
            log: log.then(|| Mutex::new(Vec::new())),
            base,
        }
    }

    fn record(&self, us: i32) {
        let v = us.max(0) as u64;
        let mut g = self.shards[shard()].lock().unwrap();
        if g.record(v).is_err() {
            g.saturating_record(v);
        }
    }

    /// Takes the interval histogram, adds it to the total and starts a new interval.
    fn take_interval(&self) -> Histogram<u64> {
        let (h, started) = {
            let mut start = self.interval_start.lock().unwrap();
            let mut h = new_histogram();
            for shard in self.shards.iter() {
                let part = std::mem::replace(&mut *shard.lock().unwrap(), new_histogram());
                h.add(&part).expect("auto-resizing histogram");
            }
            (h, std::mem::replace(&mut *start, Instant::now()))
        };
        {
            let mut total = self.total.lock().unwrap();
            match total.as_mut() {
                Some(t) => t.add(&h).expect("auto-resizing histogram"),
                None => *total = Some(h.clone()),
            }
        }
        if let Some(log) = &self.log {
            log.lock().unwrap().push(LoggedInterval {
                start: started.saturating_duration_since(self.base),
                duration: started.elapsed(),
                histogram: h.clone(),
            });
        }
        h
    }

    /// The total histogram so far (after folding in the current interval).
    pub fn total(&self) -> Histogram<u64> {
        self.take_interval();
        self.total
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(new_histogram)
    }

    /// The logged intervals, for the HdrHistogram log.
    pub fn logged_intervals(&self) -> Vec<LoggedInterval> {
        self.log
            .as_ref()
            .map(|l| l.lock().unwrap().clone())
            .unwrap_or_default()
    }

    fn summary(&self, name: &str) -> String {
        let h = self.take_interval();
        format!(
            "[{name}: Count={}, Max={}, Min={}, Avg={}, 90={}, 99={}, 99.9={}, 99.99={}]",
            h.len(),
            h.max(),
            java_min(&h),
            decimal_2(java_mean(&h)),
            value_at_percentile(&h, 90.0),
            value_at_percentile(&h, 99.0),
            value_at_percentile(&h, 99.9),
            value_at_percentile(&h, 99.99),
        )
    }
}

/// `OneMeasurementHistogram`: 1 ms buckets.
#[derive(Debug)]
struct Buckets {
    histogram: Vec<i64>,
    overflow: i64,
    operations: i64,
    total_latency: i64,
    total_squared: f64,
    window_operations: i64,
    window_latency: i64,
    min: i32,
    max: i32,
}

impl Buckets {
    fn new(buckets: usize) -> Buckets {
        Buckets {
            histogram: vec![0; buckets],
            overflow: 0,
            operations: 0,
            total_latency: 0,
            total_squared: 0.0,
            window_operations: 0,
            window_latency: 0,
            min: -1,
            max: -1,
        }
    }

    fn measure(&mut self, us: i32) {
        let bucket = (us / 1000) as i64;
        if bucket >= self.histogram.len() as i64 || bucket < 0 {
            self.overflow += 1;
        } else {
            self.histogram[bucket as usize] += 1;
        }
        self.operations += 1;
        self.total_latency += us as i64;
        self.total_squared += us as f64 * us as f64;
        self.window_operations += 1;
        self.window_latency += us as i64;
        if self.min < 0 || us < self.min {
            self.min = us;
        }
        if self.max < 0 || us > self.max {
            self.max = us;
        }
    }
}

/// `OneMeasurementTimeSeries`: the average per `granularity` ms since the first value.
#[derive(Debug)]
struct TimeSeries {
    granularity: i64,
    units: Vec<(i64, f64)>,
    start: i64,
    current_unit: i64,
    count: i64,
    sum: i64,
    operations: i64,
    total_latency: i64,
    window_operations: i64,
    window_latency: i64,
    min: i32,
    max: i32,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl TimeSeries {
    fn new(granularity: i64) -> TimeSeries {
        TimeSeries {
            granularity: granularity.max(1),
            units: Vec::new(),
            start: -1,
            current_unit: -1,
            count: 0,
            sum: 0,
            operations: 0,
            total_latency: 0,
            window_operations: 0,
            window_latency: 0,
            min: -1,
            max: -1,
        }
    }

    fn check_end_of_unit(&mut self, force: bool) {
        let now = now_ms();
        if self.start < 0 {
            self.current_unit = 0;
            self.start = now;
        }
        let unit = ((now - self.start) / self.granularity) * self.granularity;
        if unit > self.current_unit || force {
            let avg = self.sum as f64 / self.count as f64;
            self.units.push((self.current_unit, avg));
            self.current_unit = unit;
            self.count = 0;
            self.sum = 0;
        }
    }

    fn measure(&mut self, us: i32) {
        self.check_end_of_unit(false);
        self.count += 1;
        self.sum += us as i64;
        self.total_latency += us as i64;
        self.operations += 1;
        self.window_operations += 1;
        self.window_latency += us as i64;
        if us > self.max {
            self.max = us;
        }
        if us < self.min || self.min < 0 {
            self.min = us;
        }
    }
}

/// `OneMeasurementRaw`: every data point, with the wall-clock time it was recorded at.
#[derive(Debug)]
struct Raw {
    points: Vec<(i64, i32)>,
    total_latency: i64,
    window_operations: i64,
    window_latency: i64,
}

/// Where a raw measurement writes its data points.
#[derive(Debug)]
pub enum RawOutput {
    /// Into the text that goes to stdout before the report.
    Stdout,
    /// Appended to this file.
    File(std::path::PathBuf),
}

#[derive(Debug)]
enum Kind {
    Hdr(HdrSeries),
    Buckets(Mutex<Buckets>),
    Time(Mutex<TimeSeries>),
    Raw(Mutex<Raw>, RawOutput),
    Two(Box<Series>, Box<Series>),
}

/// One named measurement: `READ`, `Intended-READ`, `UPDATE-FAILED`, …
#[derive(Debug)]
pub struct Series {
    name: String,
    codes: Mutex<Vec<(Status, i64)>>,
    kind: Kind,
}

/// What exporting a series writes besides its report lines: raw data points for stdout.
#[derive(Debug, Default)]
pub struct ExportSideOutput {
    /// Text for stdout (raw data points when no output file is set).
    pub stdout: String,
    /// A raw output file that could not be written.
    pub error: Option<String>,
}

impl Series {
    /// A measurement of the configured type. `stdout` receives what YCSB prints on creating a
    /// raw measurement.
    pub fn new(
        name: &str,
        config: &MeasurementConfig,
        base: Instant,
        stdout: &mut String,
    ) -> Series {
        let hdr = |n: &str| Series::plain(n, Kind::Hdr(HdrSeries::new(config.hdr_log, base)));
        let buckets = |n: &str| {
            Series::plain(
                n,
                Kind::Buckets(Mutex::new(Buckets::new(config.histogram_buckets))),
            )
        };
        let raw = |n: &str, stdout: &mut String| {
            let output = match &config.raw_output_file {
                Some(path) => {
                    stdout.push_str(&format!(
                        "Raw data measurement: will output to result file: {path}\n"
                    ));
                    RawOutput::File(path.into())
                }
                None => {
                    stdout.push_str("Raw data measurement: will output to stdout.\n");
                    RawOutput::Stdout
                }
            };
            Series::plain(
                n,
                Kind::Raw(
                    Mutex::new(Raw {
                        points: Vec::new(),
                        total_latency: 0,
                        window_operations: 0,
                        window_latency: 0,
                    }),
                    output,
                ),
            )
        };
        match config.kind {
            MeasurementType::HdrHistogram => hdr(name),
            MeasurementType::Histogram => buckets(name),
            MeasurementType::TimeSeries => Series::plain(
                name,
                Kind::Time(Mutex::new(TimeSeries::new(config.granularity_ms))),
            ),
            MeasurementType::Raw => raw(name, stdout),
            MeasurementType::HdrAndHistogram => Series::plain(
                name,
                Kind::Two(
                    Box::new(hdr(&format!("Hdr{name}"))),
                    Box::new(buckets(&format!("Bucket{name}"))),
                ),
            ),
            MeasurementType::HdrAndRaw => {
                let first = hdr(&format!("Hdr{name}"));
                let second = raw(&format!("Raw{name}"), stdout);
                Series::plain(name, Kind::Two(Box::new(first), Box::new(second)))
            }
        }
    }

    fn plain(name: &str, kind: Kind) -> Series {
        Series {
            name: name.to_string(),
            codes: Mutex::new(Vec::new()),
            kind,
        }
    }

    /// The measurement's name, e.g. `READ` or `Intended-READ`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The HdrHistogram behind this measurement, if it keeps one.
    pub fn hdr(&self) -> Option<&HdrSeries> {
        match &self.kind {
            Kind::Hdr(h) => Some(h),
            Kind::Two(a, _) => a.hdr(),
            _ => None,
        }
    }

    /// The name of the measurement that keeps the HdrHistogram, which names its interval log
    /// as YCSB's does: `READ`, or `HdrREAD` beside `BucketREAD`/`RawREAD` with
    /// `hdrhistogram+histogram`/`hdrhistogram+raw`.
    pub fn hdr_name(&self) -> Option<&str> {
        match &self.kind {
            Kind::Hdr(_) => Some(&self.name),
            Kind::Two(a, _) => a.hdr_name(),
            _ => None,
        }
    }

    /// Records a latency in µs (YCSB's `int`).
    pub fn measure(&self, us: i32) {
        match &self.kind {
            Kind::Hdr(h) => h.record(us),
            Kind::Buckets(b) => b.lock().unwrap().measure(us),
            Kind::Time(t) => t.lock().unwrap().measure(us),
            Kind::Raw(r, _) => {
                let mut r = r.lock().unwrap();
                r.total_latency += us as i64;
                r.window_latency += us as i64;
                r.window_operations += 1;
                r.points.push((now_ms(), us));
            }
            Kind::Two(a, b) => {
                a.measure(us);
                b.measure(us);
            }
        }
    }

    /// Adds `delta` to the count of `status`.
    pub fn report_status(&self, status: Status, delta: i64) {
        if let Kind::Two(a, _) = &self.kind {
            return a.report_status(status, delta);
        }
        let mut codes = self.codes.lock().unwrap();
        match codes.iter_mut().find(|(s, _)| *s == status) {
            Some(e) => e.1 += delta,
            None => codes.push((status, delta)),
        }
    }

    /// The return codes in the order YCSB prints them (its `ConcurrentHashMap` of statuses).
    pub fn return_codes(&self) -> Vec<(Status, i64)> {
        if let Kind::Two(a, _) = &self.kind {
            return a.return_codes();
        }
        let codes = self.codes.lock().unwrap().clone();
        let hashes: Vec<i32> = codes.iter().map(|(s, _)| s.java_hash()).collect();
        concurrent_hash_map_order(&hashes)
            .into_iter()
            .map(|i| codes[i])
            .collect()
    }

    /// The status-line summary of the interval since the last one (empty for the
    /// non-HdrHistogram types when nothing was recorded).
    pub fn summary(&self) -> String {
        match &self.kind {
            Kind::Hdr(h) => h.summary(&self.name),
            Kind::Buckets(b) => {
                let mut b = b.lock().unwrap();
                let b = &mut *b;
                window_average(&self.name, &mut b.window_operations, &mut b.window_latency)
            }
            Kind::Time(t) => {
                let mut t = t.lock().unwrap();
                let t = &mut *t;
                window_average(&self.name, &mut t.window_operations, &mut t.window_latency)
            }
            Kind::Raw(r, _) => {
                let mut r = r.lock().unwrap();
                if r.window_operations == 0 {
                    return String::new();
                }
                let avg = r.window_latency as f64 / r.window_operations as f64;
                let s = format!(
                    "{} count: {}, average latency(us): {}",
                    self.name,
                    r.window_operations,
                    java_format_2f(avg)
                );
                r.window_operations = 0;
                r.window_latency = 0;
                s
            }
            Kind::Two(a, b) => format!("{}\n{}", a.summary(), b.summary()),
        }
    }

    fn code_lines(&self, out: &mut Vec<ReportLine>) {
        for (status, n) in self.return_codes() {
            out.push(line(
                &self.name,
                &format!("Return={}", status.name()),
                Value::Int(n),
            ));
        }
    }

    /// Appends this measurement's report block to `out`.
    pub fn export(
        &self,
        config: &MeasurementConfig,
        out: &mut Vec<ReportLine>,
    ) -> ExportSideOutput {
        let mut side = ExportSideOutput::default();
        let name = self.name.as_str();
        match &self.kind {
            Kind::Hdr(hdr) => {
                let h = hdr.total();
                out.push(line(name, "Operations", Value::Int(h.len() as i64)));
                out.push(line(
                    name,
                    "AverageLatency(us)",
                    Value::Float(java_mean(&h)),
                ));
                out.push(line(name, "MinLatency(us)", Value::Int(java_min(&h))));
                out.push(line(name, "MaxLatency(us)", Value::Int(h.max() as i64)));
                for &p in &config.percentiles {
                    out.push(line(
                        name,
                        &format!("{}PercentileLatency(us)", ordinal(p)),
                        Value::Int(value_at_percentile(&h, p) as i64),
                    ));
                }
                self.code_lines(out);
                if config.verbose {
                    for v in h.iter_recorded() {
                        let value = v.value_iterated_to().min(i32::MAX as u64);
                        out.push(line(
                            name,
                            &value.to_string(),
                            Value::Float(v.count_at_value() as f64),
                        ));
                    }
                }
            }
            Kind::Buckets(b) => {
                let b = b.lock().unwrap();
                let ops = b.operations as f64;
                let mean = b.total_latency as f64 / ops;
                let variance = b.total_squared / ops - mean * mean;
                out.push(line(name, "Operations", Value::Int(b.operations)));
                out.push(line(name, "AverageLatency(us)", Value::Float(mean)));
                out.push(line(name, "LatencyVariance(us)", Value::Float(variance)));
                out.push(line(name, "MinLatency(us)", Value::Int(b.min as i64)));
                out.push(line(name, "MaxLatency(us)", Value::Int(b.max as i64)));
                let mut seen = 0i64;
                let mut done95 = false;
                for (i, &n) in b.histogram.iter().enumerate() {
                    seen += n;
                    let fraction = seen as f64 / ops;
                    if !done95 && fraction >= 0.95 {
                        let v = Value::Int(i as i64 * 1000);
                        out.push(line(name, "95thPercentileLatency(us)", v));
                        done95 = true;
                    }
                    if fraction >= 0.99 {
                        let v = Value::Int(i as i64 * 1000);
                        out.push(line(name, "99thPercentileLatency(us)", v));
                        break;
                    }
                }
                self.code_lines(out);
                if config.verbose {
                    for (i, &n) in b.histogram.iter().enumerate() {
                        out.push(line(name, &i.to_string(), Value::Int(n)));
                    }
                    let over = format!(">{}", b.histogram.len());
                    out.push(line(name, &over, Value::Int(b.overflow)));
                }
            }
            Kind::Time(t) => {
                let mut t = t.lock().unwrap();
                t.check_end_of_unit(true);
                let avg = t.total_latency as f64 / t.operations as f64;
                out.push(line(name, "Operations", Value::Int(t.operations)));
                out.push(line(name, "AverageLatency(us)", Value::Float(avg)));
                out.push(line(name, "MinLatency(us)", Value::Int(t.min as i64)));
                out.push(line(name, "MaxLatency(us)", Value::Int(t.max as i64)));
                self.code_lines(out);
                for &(time, avg) in &t.units {
                    out.push(line(name, &time.to_string(), Value::Float(avg)));
                }
            }
            Kind::Raw(r, output) => {
                let mut r = r.lock().unwrap();
                let mut data = format!("{name} latency raw data: op, timestamp(ms), latency(us)\n");
                for (ts, v) in &r.points {
                    data.push_str(&format!("{name},{ts},{v}\n"));
                }
                match output {
                    RawOutput::Stdout => side.stdout.push_str(&data),
                    RawOutput::File(path) => {
                        let res = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(path)
                            .and_then(|mut f| f.write_all(data.as_bytes()));
                        if let Err(e) = res {
                            side.error = Some(format!(
                                "cannot write measurement.raw.output_file {}: {e}",
                                path.display()
                            ));
                        }
                    }
                }
                let total = r.points.len();
                out.push(line(name, "Total Operations", Value::Int(total as i64)));
                if total > 0 && !config.raw_no_summary {
                    out.push(line(
                        name,
                        "Below is a summary of latency in microseconds:",
                        Value::Int(-1),
                    ));
                    let avg = r.total_latency as f64 / total as f64;
                    out.push(line(name, "Average", Value::Float(avg)));
                    // A stable sort by value, as Collections.sort.
                    r.points.sort_by_key(|p| p.1);
                    let at = |f: f64| Value::Int(r.points[(total as f64 * f) as usize].1 as i64);
                    out.push(line(name, "Min", Value::Int(r.points[0].1 as i64)));
                    out.push(line(name, "Max", Value::Int(r.points[total - 1].1 as i64)));
                    for (label, f) in [
                        ("p1", 0.01),
                        ("p5", 0.05),
                        ("p50", 0.5),
                        ("p90", 0.9),
                        ("p95", 0.95),
                        ("p99", 0.99),
                        ("p99.9", 0.999),
                        ("p99.99", 0.9999),
                    ] {
                        out.push(line(name, label, at(f)));
                    }
                }
                drop(r);
                self.code_lines(out);
            }
            Kind::Two(a, b) => {
                let s1 = a.export(config, out);
                let s2 = b.export(config, out);
                side.stdout = s1.stdout + &s2.stdout;
                side.error = s1.error.or(s2.error);
            }
        }
        side
    }
}

fn window_average(name: &str, ops: &mut i64, latency: &mut i64) -> String {
    if *ops == 0 {
        return String::new();
    }
    let avg = *latency as f64 / *ops as f64;
    *ops = 0;
    *latency = 0;
    format!("[{name} AverageLatency(us)={}]", decimal_2(avg))
}

fn line(metric: &str, measurement: &str, value: Value) -> ReportLine {
    ReportLine {
        metric: metric.to_string(),
        measurement: measurement.to_string(),
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(start_ms: u64, len_ms: u64) -> LoggedInterval {
        let mut histogram = new_histogram();
        histogram.record(7).unwrap();
        LoggedInterval {
            start: Duration::from_millis(start_ms),
            duration: Duration::from_millis(len_ms),
            histogram,
        }
    }

    fn span(i: &LoggedInterval) -> (u128, u128) {
        (i.start.as_millis(), (i.start + i.duration).as_millis())
    }

    #[test]
    fn intervals_are_cut_to_the_measured_window() {
        let ms = Duration::from_millis;
        // Begun during a warm-up that ended at 1,000 ms; taken 8 ms after RunTime stopped at
        // 1,503 ms; one inside; one taken after the end.
        let got = clamp_to_window(
            &[interval(990, 300), interval(1_290, 221), interval(1_511, 2)],
            ms(1_000),
            ms(1_503),
        );
        let spans: Vec<_> = got.iter().map(span).collect();
        assert_eq!(spans, [(1_000, 1_290), (1_290, 1_503), (1_503, 1_503)]);
        assert!(got.iter().all(|i| i.histogram.len() == 1), "samples kept");
        // Without a warm-up the window starts at 0: an interval inside is untouched.
        let inside = clamp_to_window(&[interval(5, 10)], ms(0), ms(20));
        assert_eq!(span(&inside[0]), (5, 15));
    }
}
