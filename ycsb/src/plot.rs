//! `report.html` for sweeps (`ycsb sweep`) and for saved result directories (`ycsb plot
//! DIR...`, which overlays several): self-contained, inline SVG, no script and no network.
//!
//! A result directory holds `points/<id>/` per measured point, each with `point.json`
//! (workload, threads, target, warm-up, and the point process's CPU time and peak resident
//! set as `wait4` reported them), and the run's artifacts (`report.txt`, `process.txt` and
//! one HdrHistogram interval log per operation, as `-p artifacts.dir` writes them).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use crate::measurements::{java_mean, value_at_percentile};
use crate::merge::{counted_intervals, merged_histograms, read_run, RunArtifacts};
use crate::usage::{ChildUsage, ProcessUsage};
use crate::Error;

/// One measured point of a sweep.
#[derive(Debug, Clone)]
pub struct Point {
    /// Directory name under `points/`.
    pub id: String,
    /// Workload file as given (`workloada`, a path, ...).
    pub workload: String,
    /// Client threads.
    pub threads: u64,
    /// Target ops/s (0 = unthrottled).
    pub target: f64,
    /// Warm-up seconds excluded from the measurements.
    pub warmup_s: f64,
    /// `[OVERALL], Throughput(ops/sec)` of the point.
    pub throughput: f64,
    /// Total histogram per operation (µs).
    pub histograms: BTreeMap<String, Histogram<u64>>,
    /// Errors (non-OK return codes) per operation.
    pub errors: BTreeMap<String, i64>,
    /// Calls per region server during the point (from `servers.txt`).
    pub server_calls: BTreeMap<String, u64>,
    /// Client CPU time (user + system, µs) per operation over the measured window, from the
    /// point's `process.txt`.
    pub cpu_us_per_op: Option<f64>,
    /// CPU time of the point's whole process (start-up and warm-up included), seconds.
    pub process_cpu_s: Option<f64>,
    /// Peak resident set of the point's process, MiB.
    pub peak_rss_mib: Option<f64>,
    /// The run's interval logs and report.
    pub run: RunArtifacts,
}

/// The metadata `ycsb sweep` writes next to each point's artifacts, with what the point's
/// process cost (when it ran in one).
pub fn point_json(
    workload: &str,
    threads: u64,
    target: f64,
    warmup_s: f64,
    usage: Option<&ChildUsage>,
) -> String {
    let process = usage
        .map(|u| {
            format!(
                ", \"process_cpu_us\": {}, \"max_rss_kib\": {}",
                u.cpu.total_us(),
                u.max_rss_kib
            )
        })
        .unwrap_or_default();
    format!(
        "{{\"workload\": {}, \"threads\": {threads}, \"target\": {target}, \"warmup_s\": {warmup_s}{process}}}\n",
        json_string(workload)
    )
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The value of `"key": ...` in our own flat `point.json` (numbers or a string).
fn json_field(text: &str, key: &str) -> Option<String> {
    let at = text.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(out),
                '\\' => out.push(chars.next()?),
                c => out.push(c),
            }
        }
        None
    } else {
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim().to_string())
    }
}

/// Reads every complete point of a result directory, in the order of their ids. A point
/// directory without `point.json` is one whose run failed or was interrupted (`ycsb sweep`
/// writes it last): it is left out with a warning on stderr.
pub fn read_points(dir: &Path) -> Result<Vec<Point>, Error> {
    let points_dir = dir.join("points");
    let mut ids: Vec<PathBuf> = std::fs::read_dir(&points_dir)
        .map_err(|e| {
            Error::Io(format!(
                "{}: {e} (not a sweep directory?)",
                points_dir.display()
            ))
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    ids.sort();
    let mut points = Vec::new();
    for p in ids {
        let meta_path = p.join("point.json");
        let meta = match std::fs::read_to_string(&meta_path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!(
                    "ycsb: warning: {} has no point.json (its run failed or was interrupted); left out",
                    p.display()
                );
                continue;
            }
            Err(e) => return Err(Error::Io(format!("{}: {e}", meta_path.display()))),
        };
        let num = |k: &str| -> Result<f64, Error> {
            json_field(&meta, k)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| Error::Io(format!("{}: no number {k}", meta_path.display())))
        };
        let run = read_run(&p)?;
        let report = std::fs::read_to_string(p.join("report.txt")).unwrap_or_default();
        let throughput = report
            .lines()
            .find_map(|l| l.strip_prefix("[OVERALL], Throughput(ops/sec), "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0);
        let histograms = merged_histograms(std::slice::from_ref(&run))?;
        let errors = run
            .return_codes
            .iter()
            .map(|(op, codes)| {
                let bad: i64 = codes
                    .iter()
                    .filter(|(c, _)| c != "OK")
                    .map(|(_, n)| n)
                    .sum();
                (op.clone(), bad)
            })
            .collect();
        let servers = std::fs::read_to_string(p.join("servers.txt")).unwrap_or_default();
        let server_calls = servers
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("[RS ")?;
                let (server, rest) = rest.split_once("], Calls, ")?;
                Some((server.to_string(), rest.trim().parse().ok()?))
            })
            .collect();
        let opt = |k: &str| json_field(&meta, k).and_then(|v| v.parse::<f64>().ok());
        points.push(Point {
            server_calls,
            cpu_us_per_op: ProcessUsage::read(&p).and_then(|u| u.cpu_us_per_op()),
            process_cpu_s: opt("process_cpu_us").map(|us| us / 1e6),
            peak_rss_mib: opt("max_rss_kib").map(|kib| kib / 1024.0),
            id: p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            workload: json_field(&meta, "workload").unwrap_or_default(),
            threads: num("threads")? as u64,
            target: num("target")?,
            warmup_s: num("warmup_s").unwrap_or(0.0),
            throughput,
            histograms,
            errors,
            run,
        });
    }
    if points.is_empty() {
        return Err(Error::Io(format!(
            "{}: no complete point (none has a point.json)",
            points_dir.display()
        )));
    }
    Ok(points)
}

/// The percentiles of the summary and the charts.
pub const PERCENTILES: [(f64, &str); 5] = [
    (50.0, "p50"),
    (95.0, "p95"),
    (99.0, "p99"),
    (99.9, "p99.9"),
    (100.0, "max"),
];

/// Operations worth plotting (not CLEANUP, not the intended-latency shadows).
fn plotted_ops(p: &Point) -> impl Iterator<Item = (&String, &Histogram<u64>)> {
    p.histograms
        .iter()
        .filter(|(op, _)| op.as_str() != "CLEANUP" && !op.starts_with("Intended-"))
}

/// An optional figure for the CSV (empty when unknown).
fn csv_opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}")).unwrap_or_default()
}

/// An optional figure for JSON (`null` when unknown).
fn json_opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}"))
        .unwrap_or_else(|| "null".into())
}

/// `summary.csv`: one line per point and operation. The point's process figures (CPU per
/// operation over the measured window, the process's whole CPU time, its peak RSS) repeat on
/// each of its lines.
pub fn summary_csv(points: &[Point]) -> String {
    let mut s = String::from(
        "point,workload,threads,target,throughput,operation,count,avg_us,p50_us,p95_us,p99_us,p999_us,max_us,errors,cpu_us_per_op,process_cpu_s,peak_rss_mib\n",
    );
    for p in points {
        for (op, h) in &p.histograms {
            let _ = writeln!(
                s,
                "{},{},{},{},{:.2},{},{},{:.2},{},{},{},{},{},{},{},{},{}",
                p.id,
                p.workload,
                p.threads,
                p.target,
                p.throughput,
                op,
                h.len(),
                java_mean(h),
                value_at_percentile(h, 50.0),
                value_at_percentile(h, 95.0),
                value_at_percentile(h, 99.0),
                value_at_percentile(h, 99.9),
                h.max(),
                p.errors.get(op).copied().unwrap_or(0),
                csv_opt(p.cpu_us_per_op, 2),
                csv_opt(p.process_cpu_s, 3),
                csv_opt(p.peak_rss_mib, 1)
            );
        }
    }
    s
}

/// `summary.json`: the same as the CSV, as an array of points.
pub fn summary_json(points: &[Point]) -> String {
    let mut items = Vec::new();
    for p in points {
        let ops: Vec<String> = p
            .histograms
            .iter()
            .map(|(op, h)| {
                format!(
                    "{{\"operation\": {}, \"count\": {}, \"avg_us\": {:.2}, \"p50_us\": {}, \"p95_us\": {}, \"p99_us\": {}, \"p999_us\": {}, \"max_us\": {}, \"errors\": {}}}",
                    json_string(op),
                    h.len(),
                    java_mean(h),
                    value_at_percentile(h, 50.0),
                    value_at_percentile(h, 95.0),
                    value_at_percentile(h, 99.0),
                    value_at_percentile(h, 99.9),
                    h.max(),
                    p.errors.get(op).copied().unwrap_or(0)
                )
            })
            .collect();
        items.push(format!(
            "{{\"point\": {}, \"workload\": {}, \"threads\": {}, \"target\": {}, \"throughput\": {:.2}, \"cpu_us_per_op\": {}, \"process_cpu_s\": {}, \"peak_rss_mib\": {}, \"operations\": [{}]}}",
            json_string(&p.id),
            json_string(&p.workload),
            p.threads,
            p.target,
            p.throughput,
            json_opt(p.cpu_us_per_op, 2),
            json_opt(p.process_cpu_s, 3),
            json_opt(p.peak_rss_mib, 1),
            ops.join(", ")
        ));
    }
    format!("[\n  {}\n]\n", items.join(",\n  "))
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend text.
    pub name: String,
    /// (x, y) points, drawn in order.
    pub points: Vec<(f64, f64)>,
}

/// A chart: title, axes and lines; rendered as inline SVG.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Log-scale X.
    pub x_log: bool,
    /// Log-scale Y.
    pub y_log: bool,
    /// A shaded X range (the warm-up).
    pub shade: Option<(f64, f64)>,
    /// The data.
    pub lines: Vec<Line>,
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn nice(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

impl Chart {
    /// The chart as an `<svg>` element (with `data-chart` and `data-points` attributes that
    /// tests and scripts can read).
    pub fn svg(&self) -> String {
        let (w, h) = (640.0, 360.0);
        let (left, right, top, bottom) = (70.0, 170.0, 30.0, 50.0);
        let (pw, ph) = (w - left - right, h - top - bottom);
        let all: Vec<(f64, f64)> = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().copied())
            .filter(|(x, y)| {
                x.is_finite()
                    && y.is_finite()
                    && (!self.x_log || *x > 0.0)
                    && (!self.y_log || *y > 0.0)
            })
            .collect();
        let n_points = all.len();
        let tr = |v: f64, log: bool| if log { v.log10() } else { v };
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in &all {
            x0 = x0.min(tr(x, self.x_log));
            x1 = x1.max(tr(x, self.x_log));
            y0 = y0.min(tr(y, self.y_log));
            y1 = y1.max(tr(y, self.y_log));
        }
        if all.is_empty() {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        if !self.y_log {
            y0 = y0.min(0.0);
        }
        if (x1 - x0).abs() < 1e-12 {
            x1 = x0 + 1.0;
        }
        if (y1 - y0).abs() < 1e-12 {
            y1 = y0 + 1.0;
        }
        let px = |x: f64| left + (tr(x, self.x_log) - x0) / (x1 - x0) * pw;
        let py = |y: f64| top + ph - (tr(y, self.y_log) - y0) / (y1 - y0) * ph;
        let mut s = String::new();
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" data-chart=\"{}\" data-points=\"{n_points}\">",
            escape(&self.title)
        );
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>",
            left,
            escape(&self.title)
        );
        if let Some((a, b)) = self.shade {
            let (sa, sb) = (px(a.max(if self.x_log { 1e-9 } else { a })), px(b));
            let _ = write!(
                s,
                "<rect x=\"{sa:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{ph}\" fill=\"#eee\"><title>warm-up</title></rect>",
                (sb - sa).max(0.0)
            );
        }
        let _ = write!(
            s,
            "<rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#888\"/>"
        );
        // Ticks: five per axis (decades' values on log axes).
        for i in 0..=4 {
            let f = i as f64 / 4.0;
            let xv = x0 + f * (x1 - x0);
            let yv = y0 + f * (y1 - y0);
            let xl = if self.x_log { 10f64.powf(xv) } else { xv };
            let yl = if self.y_log { 10f64.powf(yv) } else { yv };
            let xp = left + f * pw;
            let yp = top + ph - f * ph;
            let _ = write!(
                s,
                "<text x=\"{xp:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                top + ph + 14.0,
                nice(xl)
            );
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text><line x1=\"{left}\" x2=\"{:.1}\" y1=\"{yp:.1}\" y2=\"{yp:.1}\" stroke=\"#ddd\"/>",
                left - 4.0,
                yp + 3.0,
                nice(yl),
                left + pw
            );
        }
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            left + pw / 2.0,
            h - 12.0,
            escape(&self.x_label)
        );
        let _ = write!(
            s,
            "<text x=\"14\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1})\">{}</text>",
            top + ph / 2.0,
            top + ph / 2.0,
            escape(&self.y_label)
        );
        for (i, line) in self.lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let pts: Vec<(f64, f64)> = line
                .points
                .iter()
                .copied()
                .filter(|(x, y)| {
                    x.is_finite()
                        && y.is_finite()
                        && (!self.x_log || *x > 0.0)
                        && (!self.y_log || *y > 0.0)
                })
                .collect();
            let path: Vec<String> = pts
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = write!(
                s,
                "<g data-series=\"{}\"><polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>",
                escape(&line.name),
                path.join(" ")
            );
            if pts.len() <= 200 {
                for &(x, y) in &pts {
                    let _ = write!(
                        s,
                        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{color}\"><title>{}: {} , {}</title></circle>",
                        px(x),
                        py(y),
                        escape(&line.name),
                        nice(x),
                        nice(y)
                    );
                }
            }
            let ly = top + 12.0 + i as f64 * 14.0;
            let _ = write!(
                s,
                "</g><rect x=\"{:.1}\" y=\"{:.1}\" width=\"10\" height=\"3\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{}</text>",
                left + pw + 10.0,
                ly - 4.0,
                left + pw + 24.0,
                ly,
                escape(&line.name)
            );
        }
        s.push_str("</svg>");
        s
    }
}

/// The charts of one or several result directories (`series`: a name and its points).
pub fn charts(series: &[(String, Vec<Point>)]) -> Vec<Chart> {
    let multi = series.len() > 1;
    let name = |s: &str, rest: &str| {
        if multi {
            format!("{s} {rest}")
        } else {
            rest.to_string()
        }
    };
    let mut charts = Vec::new();
    // Groups of points that differ only in threads (no target) or only in target.
    let mut by_threads = Vec::new();
    let mut cpu_threads = Vec::new();
    let mut rss_threads = Vec::new();
    let mut by_target = Vec::new();
    let mut latency_threads = Vec::new();
    for (sname, points) in series {
        let mut workloads: Vec<&str> = points.iter().map(|p| p.workload.as_str()).collect();
        workloads.dedup();
        for w in workloads {
            let unthrottled: Vec<&Point> = points
                .iter()
                .filter(|p| p.workload == w && p.target == 0.0)
                .collect();
            if !unthrottled.is_empty() {
                by_threads.push(Line {
                    name: name(sname, w),
                    points: unthrottled
                        .iter()
                        .map(|p| (p.threads as f64, p.throughput))
                        .collect(),
                });
                let per_point = |f: fn(&Point) -> Option<f64>| -> Vec<(f64, f64)> {
                    unthrottled
                        .iter()
                        .filter_map(|p| f(p).map(|v| (p.threads as f64, v)))
                        .collect()
                };
                let cpu = per_point(|p| p.cpu_us_per_op);
                if !cpu.is_empty() {
                    cpu_threads.push(Line {
                        name: name(sname, w),
                        points: cpu,
                    });
                }
                let rss = per_point(|p| p.peak_rss_mib);
                if !rss.is_empty() {
                    rss_threads.push(Line {
                        name: name(sname, w),
                        points: rss,
                    });
                }
                let mut ops: Vec<&String> = Vec::new();
                for p in &unthrottled {
                    for (op, _) in plotted_ops(p) {
                        if !ops.contains(&op) {
                            ops.push(op);
                        }
                    }
                }
                for op in ops {
                    for (pct, label) in [(50.0, "p50"), (99.0, "p99")] {
                        latency_threads.push(Line {
                            name: name(sname, &format!("{w} {op} {label}")),
                            points: unthrottled
                                .iter()
                                .filter_map(|p| {
                                    p.histograms.get(op).map(|h| {
                                        (p.threads as f64, value_at_percentile(h, pct) as f64)
                                    })
                                })
                                .collect(),
                        });
                    }
                }
            }
            let throttled: Vec<&Point> = points
                .iter()
                .filter(|p| p.workload == w && p.target > 0.0)
                .collect();
            for op in throttled
                .iter()
                .flat_map(|p| plotted_ops(p).map(|(o, _)| o.clone()))
                .collect::<std::collections::BTreeSet<_>>()
            {
                by_target.push(Line {
                    name: name(sname, &format!("{w} {op} p99")),
                    points: throttled
                        .iter()
                        .filter_map(|p| {
                            p.histograms
                                .get(&op)
                                .map(|h| (p.throughput, value_at_percentile(h, 99.0) as f64))
                        })
                        .collect(),
                });
            }
        }
    }
    if by_threads.iter().any(|l| l.points.len() > 1) || !by_threads.is_empty() {
        charts.push(Chart {
            title: "Throughput vs threads".into(),
            x_label: "client threads".into(),
            y_label: "ops/s".into(),
            x_log: true,
            y_log: false,
            shade: None,
            lines: by_threads,
        });
        charts.push(Chart {
            title: "Latency percentiles vs threads".into(),
            x_label: "client threads".into(),
            y_label: "latency (µs, log)".into(),
            x_log: true,
            y_log: true,
            shade: None,
            lines: latency_threads,
        });
    }
    if !cpu_threads.is_empty() {
        charts.push(Chart {
            title: "Client CPU per operation vs threads".into(),
            x_label: "client threads".into(),
            y_label: "CPU µs (user + system) per op".into(),
            x_log: true,
            y_log: false,
            shade: None,
            lines: cpu_threads,
        });
    }
    if !rss_threads.is_empty() {
        charts.push(Chart {
            title: "Peak RSS vs threads".into(),
            x_label: "client threads".into(),
            y_label: "peak resident set (MiB)".into(),
            x_log: true,
            y_log: false,
            shade: None,
            lines: rss_threads,
        });
    }
    if !by_target.is_empty() {
        charts.push(Chart {
            title: "Latency vs throughput (target sweep)".into(),
            x_label: "achieved ops/s".into(),
            y_label: "p99 latency (µs, log)".into(),
            x_log: false,
            y_log: true,
            shade: None,
            lines: by_target,
        });
    }
    // Calls per region server: how evenly the work spread.
    let mut per_server = Vec::new();
    for (sname, points) in series {
        let mut servers: Vec<&String> = points.iter().flat_map(|p| p.server_calls.keys()).collect();
        servers.sort();
        servers.dedup();
        for server in servers {
            per_server.push(Line {
                name: name(sname, server),
                points: points
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| {
                        p.server_calls
                            .get(server)
                            .map(|c| ((i + 1) as f64, *c as f64))
                    })
                    .collect(),
            });
        }
    }
    if !per_server.is_empty() {
        charts.push(Chart {
            title: "Calls per region server".into(),
            x_label: "point (in the order of the table above)".into(),
            y_label: "RPCs".into(),
            x_log: false,
            y_log: false,
            shade: None,
            lines: per_server,
        });
    }
    // Per point: latency by percentile, and throughput / p99 over time.
    for (sname, points) in series {
        for p in points {
            let label = format!(
                "{}{} {} threads{}",
                if multi {
                    format!("{sname}: ")
                } else {
                    String::new()
                },
                p.workload,
                p.threads,
                if p.target > 0.0 {
                    format!(", target {}", p.target)
                } else {
                    String::new()
                }
            );
            let dist: Vec<Line> = plotted_ops(p)
                .map(|(op, h)| percentile_line(op.clone(), h))
                .collect();
            charts.push(percentile_chart(&label, dist));
            let shade = (p.warmup_s > 0.0).then_some((0.0, p.warmup_s));
            let throughput = Line {
                name: "ops/s".into(),
                points: throughput_over_time(&p.run, p.run.start),
            };
            charts.push(throughput_chart(&label, shade, vec![throughput]));
            charts.push(p99_chart(
                &label,
                shade,
                p99_over_time(&p.run, p.run.start, ""),
            ));
        }
    }
    charts
}

/// Operations drawn over time and by percentile (not CLEANUP, not the intended shadows).
fn plotted_op(op: &str) -> bool {
    op != "CLEANUP" && !op.starts_with("Intended-")
}

/// HDR's "latency by percentile" curve of one histogram.
fn percentile_line(name: String, h: &Histogram<u64>) -> Line {
    Line {
        name,
        points: [
            0.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999,
        ]
        .iter()
        .map(|&q: &f64| {
            (
                100.0 / (100.0 - q.min(99.9999)),
                value_at_percentile(h, q) as f64,
            )
        })
        .collect(),
    }
}

fn percentile_chart(label: &str, lines: Vec<Line>) -> Chart {
    Chart {
        title: format!("Latency by percentile: {label}"),
        x_label: "1/(1-percentile): 2 = p50, 10 = p90, 100 = p99, 1000 = p99.9".into(),
        y_label: "latency (µs, log)".into(),
        x_log: true,
        y_log: true,
        shade: None,
        lines,
    }
}

/// Interval ends closer than this are one take: the run takes every measurement's interval
/// at once (a status line, the report), one after another, and the logs keep milliseconds.
const SAME_TAKE: f64 = 0.005;

/// (seconds since `origin`, ops/s) of `run` between its interval takes, its operations
/// counted as its report counts them ([`counted_intervals`]).
fn throughput_over_time(run: &RunArtifacts, origin: f64) -> Vec<(f64, f64)> {
    let counted = counted_intervals(run);
    let Some(first) = counted.iter().map(|c| c.start).reduce(f64::min) else {
        return Vec::new();
    };
    let mut ends: Vec<f64> = counted.iter().map(|c| c.end).collect();
    ends.sort_by(f64::total_cmp);
    let mut takes: Vec<f64> = Vec::new();
    for e in ends {
        match takes.last_mut() {
            Some(last) if e - *last <= SAME_TAKE => *last = e,
            _ => takes.push(e),
        }
    }
    let mut from = first;
    let mut points = Vec::new();
    for to in takes {
        let ops: f64 = counted
            .iter()
            .map(|c| {
                // An interval of no length belongs to the span its instant ends.
                let share = if c.end > c.start {
                    c.share(from, to)
                } else if (c.start > from || from == first) && c.start <= to {
                    1.0
                } else {
                    0.0
                };
                share * c.ops
            })
            .sum();
        points.push((from - origin, ops / (to - from).max(1e-3)));
        from = to;
    }
    points
}

/// One line per plotted operation of `run`: (seconds since `origin`, p99 of the interval).
fn p99_over_time(run: &RunArtifacts, origin: f64, prefix: &str) -> Vec<Line> {
    run.intervals
        .iter()
        .filter(|(op, _)| plotted_op(op))
        .map(|(op, intervals)| Line {
            name: format!("{prefix}{op}"),
            points: intervals
                .iter()
                .map(|iv| {
                    (
                        iv.start - origin,
                        value_at_percentile(&iv.histogram, 99.0) as f64,
                    )
                })
                .collect(),
        })
        .collect()
}

fn throughput_chart(label: &str, shade: Option<(f64, f64)>, lines: Vec<Line>) -> Chart {
    over_time_chart(
        format!("Throughput over time: {label}"),
        "ops/s",
        false,
        shade,
        lines,
    )
}

fn p99_chart(label: &str, shade: Option<(f64, f64)>, lines: Vec<Line>) -> Chart {
    let title = format!("p99 over time: {label}");
    over_time_chart(title, "p99 latency (µs, log)", true, shade, lines)
}

fn over_time_chart(
    title: String,
    y_label: &str,
    y_log: bool,
    shade: Option<(f64, f64)>,
    lines: Vec<Line>,
) -> Chart {
    Chart {
        title,
        x_label: "seconds since start (warm-up shaded)".into(),
        y_label: y_label.into(),
        x_log: false,
        y_log,
        shade,
        lines,
    }
}

/// The charts of runs merged by `ycsb merge`: the merged latency distribution beside each
/// run's, every run's throughput over time on one clock (seconds since the first start) with
/// their sum, and every run's p99 over time.
pub fn merged_charts(
    runs: &[RunArtifacts],
    merged: &BTreeMap<String, Histogram<u64>>,
) -> Result<Vec<Chart>, Error> {
    let origin = runs.iter().map(|r| r.start).fold(f64::INFINITY, f64::min);
    let name = |r: &RunArtifacts| {
        r.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| r.dir.display().to_string())
    };
    let mut dist: Vec<Line> = merged
        .iter()
        .filter(|(op, _)| plotted_op(op))
        .map(|(op, h)| percentile_line(format!("merged {op}"), h))
        .collect();
    for r in runs {
        for (op, h) in merged_histograms(std::slice::from_ref(r))? {
            if plotted_op(&op) {
                dist.push(percentile_line(format!("{} {op}", name(r)), &h));
            }
        }
    }
    // The sum over time: each run's intervals spread over whole seconds of the common clock.
    let mut sum: BTreeMap<i64, f64> = BTreeMap::new();
    let mut throughput = Vec::new();
    let mut p99 = Vec::new();
    for r in runs {
        for c in counted_intervals(r) {
            let (a, b) = (c.start - origin, (c.end - origin).max(c.start - origin));
            let len = (b - a).max(1e-3);
            let mut sec = a.floor();
            while sec < b || sec == a.floor() {
                let inside = (b.min(sec + 1.0) - a.max(sec)).max(0.0);
                let share = if b > a { inside / len } else { 1.0 };
                *sum.entry(sec as i64).or_default() += share * c.ops;
                sec += 1.0;
            }
        }
        throughput.push(Line {
            name: name(r),
            points: throughput_over_time(r, origin),
        });
        p99.extend(p99_over_time(r, origin, &format!("{} ", name(r))));
    }
    throughput.insert(
        0,
        Line {
            name: "all runs".into(),
            points: sum.iter().map(|(s, n)| (*s as f64, *n)).collect(),
        },
    );
    Ok(vec![
        percentile_chart("merged", dist),
        throughput_chart("merged", None, throughput),
        p99_chart("merged", None, p99),
    ])
}

/// The page `ycsb merge --out FILE` writes: the merged table and [`merged_charts`].
pub fn merged_report_html(runs: &[RunArtifacts]) -> Result<String, Error> {
    let merged = merged_histograms(runs)?;
    let mut s = page_head("ycsb merge");
    let dirs: Vec<String> = runs
        .iter()
        .map(|r| escape(&r.dir.display().to_string()))
        .collect();
    let _ = write!(
        s,
        "<p>{} runs: {}</p>\n<table data-summary=\"merged\"><tr><th>operation</th><th>count</th><th>avg µs</th>",
        runs.len(),
        dirs.join(", ")
    );
    for (_, label) in PERCENTILES {
        let _ = write!(s, "<th>{label} µs</th>");
    }
    s.push_str("</tr>\n");
    for (op, h) in &merged {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{:.1}</td>",
            escape(op),
            h.len(),
            java_mean(h)
        );
        for (q, _) in PERCENTILES {
            let _ = write!(s, "<td>{}</td>", value_at_percentile(h, q));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    for chart in merged_charts(runs, &merged)? {
        s.push_str(&chart.svg());
        s.push('\n');
    }
    s.push_str("</body></html>\n");
    Ok(s)
}

fn page_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:sans-serif;margin:20px}} table{{border-collapse:collapse}} \
         td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}} svg{{margin:8px;border:1px solid #eee}}</style>\
         </head><body>\n<h1>{title}</h1>\n"
    )
}

/// The whole page.
pub fn report_html(series: &[(String, Vec<Point>)]) -> String {
    let mut s = page_head("ycsb report");
    for (name, points) in series {
        let _ = write!(
            s,
            "<h2>{}</h2>\n<table data-summary=\"{}\"><tr><th>point</th><th>workload</th><th>threads</th><th>target</th><th>ops/s</th><th>operation</th><th>count</th><th>avg µs</th>",
            escape(name),
            escape(name)
        );
        for (_, label) in PERCENTILES {
            let _ = write!(s, "<th>{label} µs</th>");
        }
        s.push_str(
            "<th>errors</th><th>CPU µs/op</th><th>process CPU s</th><th>peak RSS MiB</th></tr>\n",
        );
        for p in points {
            for (op, h) in &p.histograms {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{:.1}</td>",
                    escape(&p.id),
                    escape(&p.workload),
                    p.threads,
                    p.target,
                    p.throughput,
                    escape(op),
                    h.len(),
                    java_mean(h)
                );
                for (q, _) in PERCENTILES {
                    let _ = write!(s, "<td>{}</td>", value_at_percentile(h, q));
                }
                let _ = writeln!(
                    s,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    p.errors.get(op).copied().unwrap_or(0),
                    csv_opt(p.cpu_us_per_op, 1),
                    csv_opt(p.process_cpu_s, 2),
                    csv_opt(p.peak_rss_mib, 0)
                );
            }
        }
        s.push_str("</table>\n");
    }
    for chart in charts(series) {
        s.push_str(&chart.svg());
        s.push('\n');
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_fields_round_trip() {
        let j = point_json("work\"loads/a", 32, 0.0, 5.0, None);
        assert_eq!(json_field(&j, "workload").unwrap(), "work\"loads/a");
        assert_eq!(json_field(&j, "threads").unwrap(), "32");
        assert_eq!(json_field(&j, "warmup_s").unwrap(), "5");
    }

    fn interval(start: f64, end: f64, n: u64) -> crate::merge::Interval {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for i in 0..n {
            h.record(100 + i).unwrap();
        }
        crate::merge::Interval {
            start,
            end,
            histogram: h,
        }
    }

    fn artifacts(dir: &str, start: f64, intervals: Vec<crate::merge::Interval>) -> RunArtifacts {
        let mut map = BTreeMap::new();
        map.insert("INSERT".to_string(), intervals);
        RunArtifacts {
            dir: PathBuf::from(dir),
            start,
            end: start + 3.0,
            runtime_ms: 3000,
            ops: vec!["INSERT".into()],
            intervals: map,
            return_codes: BTreeMap::new(),
        }
    }

    #[test]
    fn merged_throughput_sums_every_operation_once() {
        // Two runs on one clock, intervals straddling whole seconds of it.
        let a = artifacts(
            "a",
            10.0,
            vec![interval(10.0, 11.5, 30), interval(11.5, 12.0, 10)],
        );
        let b = artifacts("b", 10.25, vec![interval(10.25, 12.25, 40)]);
        let merged = merged_histograms(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(merged["INSERT"].len(), 80);
        let charts = merged_charts(&[a, b], &merged).unwrap();
        let all = &charts[1].lines[0];
        assert_eq!(all.name, "all runs");
        let total: f64 = all.points.iter().map(|(_, n)| n).sum();
        assert!((total - 80.0).abs() < 1e-9, "{all:?}");
        // Seconds 0, 1 and 2 of the common clock.
        let secs: Vec<f64> = all.points.iter().map(|(s, _)| *s).collect();
        assert_eq!(secs, vec![0.0, 1.0, 2.0]);
        // Second 0: 2/3 of a's first interval and 3/8 of b's.
        assert!((all.points[0].1 - (20.0 + 15.0)).abs() < 1e-9, "{all:?}");
        // Merged distribution first, then one line per run.
        let names: Vec<&str> = charts[0].lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, vec!["merged INSERT", "a INSERT", "b INSERT"]);
    }

    /// Workload F at 10 operations a second for 2 s on 2 threads with client buffering: 10
    /// reads and 10 read-modify-writes (each also a READ and an UPDATE sample), and each
    /// thread's mutator close as an UPDATE sample in the last interval.
    fn workload_f(dir: &str, start: f64) -> RunArtifacts {
        let mut run = artifacts(dir, start, vec![]);
        run.intervals.clear();
        let two = |n: [u64; 2]| {
            vec![
                interval(start, start + 1.0, n[0]),
                interval(start + 1.0, start + 2.0, n[1]),
            ]
        };
        run.intervals.insert("READ".into(), two([10, 10]));
        run.intervals.insert("UPDATE".into(), two([5, 7]));
        run.intervals
            .insert("READ-MODIFY-WRITE".into(), two([5, 5]));
        run.intervals.insert("VERIFY".into(), two([5, 5]));
        run.intervals.insert("CLEANUP".into(), two([0, 2]));
        run.return_codes
            .insert("UPDATE".into(), vec![("OK".into(), 8), ("ERROR".into(), 2)]);
        run
    }

    #[test]
    fn throughput_over_time_counts_the_operations_of_the_run() {
        let run = workload_f("f", 10.0);
        assert_eq!(
            throughput_over_time(&run, 10.0),
            vec![(0.0, 10.0), (1.0, 10.0)]
        );
        let merged = merged_histograms(std::slice::from_ref(&run)).unwrap();
        let charts = merged_charts(&[run], &merged).unwrap();
        assert_eq!(charts[1].lines[0].points, vec![(0.0, 10.0), (1.0, 10.0)]);
    }

    #[test]
    fn chart_counts_its_points() {
        let c = Chart {
            title: "t <x>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_log: true,
            y_log: true,
            shade: None,
            lines: vec![Line {
                name: "a".into(),
                points: vec![(1.0, 10.0), (2.0, 20.0), (0.0, 5.0)],
            }],
        };
        let svg = c.svg();
        // The point at x = 0 cannot be drawn on a log axis.
        assert!(svg.contains("data-points=\"2\""), "{svg}");
        assert!(svg.contains("t &lt;x&gt;"));
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
