//! Latency measurements (HdrHistogram per operation, in µs) and the report YCSB users parse.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;

use crate::util::{decimal_2, java_double};

/// Which latency is recorded (`measurement.interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalMode {
    /// From the actual start of each operation (YCSB's default).
    Op,
    /// From the intended start (coordinated-omission corrected), as `Intended-<OP>`.
    Intended,
    /// Both.
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

/// One named measurement: an interval histogram (reset by each status line), the total, and
/// the return codes.
#[derive(Debug)]
pub struct OneMeasurement {
    name: String,
    interval: Mutex<(Histogram<u64>, Instant)>,
    total: Mutex<Histogram<u64>>,
    return_codes: Mutex<Vec<(String, i64)>>,
    log: Option<Mutex<Vec<LoggedInterval>>>,
    base: Instant,
}

impl OneMeasurement {
    fn new(name: &str, log: bool, base: Instant) -> OneMeasurement {
        OneMeasurement {
            name: name.to_string(),
            interval: Mutex::new((new_histogram(), Instant::now())),
            total: Mutex::new(new_histogram()),
            return_codes: Mutex::new(Vec::new()),
            log: log.then(|| Mutex::new(Vec::new())),
            base,
        }
    }

    /// The measurement's name, e.g. `READ` or `Intended-READ`.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn record(&self, us: i64) {
        let v = us.max(0) as u64;
        let mut g = self.interval.lock().unwrap();
        if g.0.record(v).is_err() {
            g.0.saturating_record(v);
        }
    }

    fn report_status(&self, status: &str, delta: i64) {
        let mut rc = self.return_codes.lock().unwrap();
        if let Some(e) = rc.iter_mut().find(|(s, _)| s == status) {
            e.1 += delta;
        } else {
            rc.push((status.to_string(), delta));
        }
    }

    /// Takes the interval histogram, adds it to the total and starts a new interval.
    fn take_interval(&self) -> Histogram<u64> {
        let (h, started) = {
            let mut g = self.interval.lock().unwrap();
            let now = Instant::now();
            let h = std::mem::replace(&mut g.0, new_histogram());
            let started = std::mem::replace(&mut g.1, now);
            (h, started)
        };
        self.total
            .lock()
            .unwrap()
            .add(&h)
            .expect("auto-resizing histogram");
        if let Some(log) = &self.log {
            log.lock().unwrap().push(LoggedInterval {
                start: started.saturating_duration_since(self.base),
                duration: started.elapsed(),
                histogram: h.clone(),
            });
        }
        h
    }

    fn summary(&self) -> String {
        let h = self.take_interval();
        format!(
            "[{}: Count={}, Max={}, Min={}, Avg={}, 50={}, 90={}, 99={}, 99.9={}, 99.99={}]",
            self.name,
            h.len(),
            h.max(),
            h.min(),
            decimal_2(java_mean(&h)),
            decimal_2(value_at_percentile(&h, 50.0) as f64),
            decimal_2(value_at_percentile(&h, 90.0) as f64),
            decimal_2(value_at_percentile(&h, 99.0) as f64),
            decimal_2(value_at_percentile(&h, 99.9) as f64),
            decimal_2(value_at_percentile(&h, 99.99) as f64),
        )
    }

    /// The total histogram so far (after folding in the current interval).
    pub fn total(&self) -> Histogram<u64> {
        self.take_interval();
        self.total.lock().unwrap().clone()
    }

    /// The return codes in the order first seen.
    pub fn return_codes(&self) -> Vec<(String, i64)> {
        self.return_codes.lock().unwrap().clone()
    }

    /// The logged intervals, for the HdrHistogram log.
    pub fn logged_intervals(&self) -> Vec<LoggedInterval> {
        self.log
            .as_ref()
            .map(|l| l.lock().unwrap().clone())
            .unwrap_or_default()
    }
}

/// HdrHistogram's `getMean`, summed as Java sums it (median-equivalent values times counts,
/// divided once at the end).
pub fn java_mean(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let mut total = 0.0f64;
    for v in h.iter_recorded() {
        total += (h.median_equivalent(v.value_iterated_to()) * v.count_at_value()) as f64;
    }
    total / h.len() as f64
}

/// HdrHistogram's `getValueAtPercentile`, as Java computes it.
pub fn value_at_percentile(h: &Histogram<u64>, percentile: f64) -> u64 {
    if h.is_empty() {
        return 0;
    }
    h.value_at_quantile(percentile / 100.0)
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

/// All measurements of one run.
#[derive(Debug)]
pub struct Measurements {
    mode: IntervalMode,
    percentiles: Vec<f64>,
    ops: RwLock<HashMap<String, Arc<OneMeasurement>>>,
    log: bool,
    base: Instant,
    base_wall: SystemTime,
    /// Nanoseconds after `base` before which nothing is recorded (warmup).
    record_from_ns: AtomicU64,
}

impl Measurements {
    /// A set with the given interval mode and report percentiles.
    pub fn new(mode: IntervalMode, percentiles: Vec<f64>, log: bool) -> Measurements {
        Measurements {
            mode,
            percentiles,
            ops: RwLock::new(HashMap::new()),
            log,
            base: Instant::now(),
            base_wall: SystemTime::now(),
            record_from_ns: AtomicU64::new(0),
        }
    }

    /// The interval mode.
    pub fn mode(&self) -> IntervalMode {
        self.mode
    }

    /// Records nothing until `until`.
    pub fn set_warmup_until(&self, until: Instant) {
        let ns = until.saturating_duration_since(self.base).as_nanos() as u64;
        self.record_from_ns.store(ns, Ordering::SeqCst);
    }

    /// False during the warmup.
    pub fn is_recording(&self) -> bool {
        self.base.elapsed().as_nanos() as u64 >= self.record_from_ns.load(Ordering::Relaxed)
    }

    /// The wall-clock time the measurements started (base of the HdrHistogram logs).
    pub fn base_wall(&self) -> SystemTime {
        self.base_wall
    }

    fn get(&self, name: &str) -> Arc<OneMeasurement> {
        if let Some(m) = self.ops.read().unwrap().get(name) {
            return m.clone();
        }
        let mut w = self.ops.write().unwrap();
        w.entry(name.to_string())
            .or_insert_with(|| Arc::new(OneMeasurement::new(name, self.log, self.base)))
            .clone()
    }

    /// Records a latency (µs) under `op` (op mode).
    pub fn measure(&self, op: &str, us: i64) {
        if self.mode == IntervalMode::Intended || !self.is_recording() {
            return;
        }
        self.get(op).record(us);
    }

    /// Records a latency from the intended start (µs) under `Intended-<op>`.
    pub fn measure_intended(&self, op: &str, us: i64) {
        if self.mode == IntervalMode::Op || !self.is_recording() {
            return;
        }
        self.get(&format!("Intended-{op}")).record(us);
    }

    /// Counts one `Return=<status>` under `op`.
    pub fn report_status(&self, op: &str, status: &str) {
        if !self.is_recording() {
            return;
        }
        self.get(op).report_status(status, 1);
    }

    /// Moves `n` returns of `op` from `from` to `to` (a buffered write that failed later).
    pub fn reclassify(&self, op: &str, from: &str, to: &str, n: i64) {
        let m = self.get(op);
        m.report_status(from, -n);
        m.report_status(to, n);
    }

    /// The measurements in report order.
    pub fn all(&self) -> Vec<Arc<OneMeasurement>> {
        let mut v: Vec<_> = self.ops.read().unwrap().values().cloned().collect();
        v.sort_by_key(|m| sort_key(m.name()));
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

    /// The report lines for every measurement.
    pub fn export(&self) -> Vec<ReportLine> {
        let mut lines = Vec::new();
        for m in self.all() {
            let h = m.total();
            lines.extend(block_lines(
                m.name(),
                &h,
                &self.percentiles,
                &m.return_codes(),
            ));
        }
        lines
    }
}

const OP_ORDER: [&str; 9] = [
    "INSERT",
    "READ",
    "UPDATE",
    "SCAN",
    "READ-MODIFY-WRITE",
    "DELETE",
    "VERIFY",
    "CLEANUP",
    "FLUSH",
];

fn sort_key(name: &str) -> (bool, usize, String) {
    let (intended, rest) = match name.strip_prefix("Intended-") {
        Some(r) => (true, r),
        None => (false, name),
    };
    let base = rest.strip_suffix("-FAILED").unwrap_or(rest);
    let rank = OP_ORDER
        .iter()
        .position(|o| *o == base)
        .unwrap_or(OP_ORDER.len());
    (intended, rank, rest.to_string())
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

/// The lines of one operation's block.
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
        line("MinLatency(us)".into(), Value::Int(h.min() as i64)),
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

/// The `[OVERALL]` lines.
pub fn overall_lines(runtime_ms: u64, ops: u64) -> Vec<ReportLine> {
    let throughput = 1000.0 * ops as f64 / runtime_ms as f64;
    vec![
        ReportLine {
            metric: "OVERALL".into(),
            measurement: "RunTime(ms)".into(),
            value: Value::Int(runtime_ms as i64),
        },
        ReportLine {
            metric: "OVERALL".into(),
            measurement: "Throughput(ops/sec)".into(),
            value: Value::Float(throughput),
        },
    ]
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
            Exporter::Json => {
                let objs: Vec<String> = lines.iter().map(json_object).collect();
                let mut s = objs.join(" ");
                s.push('\n');
                s
            }
            Exporter::JsonArray => {
                let objs: Vec<String> = lines.iter().map(json_object).collect();
                if objs.is_empty() {
                    "[ ]\n".into()
                } else {
                    format!("[ {} ]\n", objs.join(", "))
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
    format!(
        "{{\n  \"metric\" : {},\n  \"measurement\" : {},\n  \"value\" : {}\n}}",
        json_string(&l.metric),
        json_string(&l.measurement),
        l.value.render()
    )
}

/// Writes `intervals` as an HdrHistogram interval log (V2, compressed).
pub fn write_hdr_log(
    path: &std::path::Path,
    base: SystemTime,
    intervals: &[LoggedInterval],
) -> std::io::Result<()> {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
    use hdrhistogram::serialization::V2DeflateSerializer;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut writer = IntervalLogWriterBuilder::new()
            .with_base_time(base)
            .with_start_time(base)
            .begin_log_with(&mut file, &mut serializer)?;
        for i in intervals {
            writer
                .write_histogram(&i.histogram, i.start, i.duration, None)
                .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        }
    }
    use std::io::Write;
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
        assert_eq!(ordinal(95.0), "95th");
        assert_eq!(ordinal(99.0), "99th");
        assert_eq!(ordinal(99.9), "99.9");
        assert_eq!(ordinal(101.0), "101st");
        assert_eq!(ordinal(111.0), "111th");
    }

    fn fixed_histogram() -> Histogram<u64> {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 10).unwrap();
        }
        h.record(123_456).unwrap();
        h
    }

    #[test]
    fn golden_text_report() {
        let h = fixed_histogram();
        let mut lines = overall_lines(3079, 10000);
        lines.extend(block_lines(
            "READ",
            &h,
            &[50.0, 95.0, 99.0, 99.9],
            &[("OK".into(), 990), ("NOT_FOUND".into(), 11)],
        ));
        let mut empty = new_histogram();
        empty.reset();
        lines.extend(block_lines("CLEANUP", &empty, &[95.0, 99.0], &[]));
        let text = render_text(&lines);
        let golden = "\
[OVERALL], RunTime(ms), 3079
[OVERALL], Throughput(ops/sec), 3247.807729782397
[READ], Operations, 1001
[READ], AverageLatency(us), 5124.162837162838
[READ], MinLatency(us), 10
[READ], MaxLatency(us), 123519
[READ], 50thPercentileLatency(us), 5011
[READ], 95thPercentileLatency(us), 9511
[READ], 99thPercentileLatency(us), 9911
[READ], 99.9PercentileLatency(us), 10007
[READ], Return=OK, 990
[READ], Return=NOT_FOUND, 11
[CLEANUP], Operations, 0
[CLEANUP], AverageLatency(us), 0.0
[CLEANUP], MinLatency(us), 0
[CLEANUP], MaxLatency(us), 0
[CLEANUP], 95thPercentileLatency(us), 0
[CLEANUP], 99thPercentileLatency(us), 0
";
        assert_eq!(text, golden);
    }

    #[test]
    fn json_array_format() {
        let lines = overall_lines(1000, 1500);
        let s = Exporter::JsonArray.render(&lines);
        assert_eq!(
            s,
            "[ {\n  \"metric\" : \"OVERALL\",\n  \"measurement\" : \"RunTime(ms)\",\n  \"value\" : 1000\n}, {\n  \"metric\" : \"OVERALL\",\n  \"measurement\" : \"Throughput(ops/sec)\",\n  \"value\" : 1500.0\n} ]\n"
        );
        assert_eq!(
            Exporter::parse("site.ycsb.measurements.exporter.JSONArrayMeasurementsExporter"),
            Some(Exporter::JsonArray)
        );
        assert_eq!(
            Exporter::parse("com.yahoo.ycsb.measurements.exporter.TextMeasurementsExporter"),
            Some(Exporter::Text)
        );
        assert_eq!(Exporter::parse("nope"), None);
    }

    #[test]
    fn failures_and_intended() {
        let m = Measurements::new(IntervalMode::Both, vec![95.0], false);
        m.measure("READ", 100);
        m.measure_intended("READ", 150);
        m.measure("READ-FAILED", 5);
        m.report_status("READ", "OK");
        m.report_status("READ", "NOT_FOUND");
        let names: Vec<String> = m.all().iter().map(|x| x.name().to_string()).collect();
        assert_eq!(names, vec!["READ", "READ-FAILED", "Intended-READ"]);
        let text = render_text(&m.export());
        assert!(text.contains("[READ], Return=NOT_FOUND, 1\n"));
        assert!(text.contains("[Intended-READ], MaxLatency(us), 150\n"));
        assert!(m.summary().starts_with("[READ: Count=0"));
    }
}
