//! The client: runs the workload on N tasks ("threads"), paces them for `-target`, prints the
//! status line, stops at `maxexecutiontime`, flushes, and collects the report.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rand::Rng;
use tokio::sync::Notify;

use crate::db::Db;
use crate::measurements::{overall_lines, Measurements, ReportLine};
use crate::util::{decimal_2, status_timestamp};
use crate::workload::CoreWorkload;

/// How to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Run-phase transactions (true) or load-phase inserts (false).
    pub transactions: bool,
    /// Number of client tasks.
    pub threads: usize,
    /// Target ops/s for the whole run; 0 is unthrottled.
    pub target: f64,
    /// Operations in total; 0 is unlimited (until `max_execution_time`).
    pub opcount: u64,
    /// Print the status line.
    pub status: bool,
    /// Status line interval.
    pub status_interval: Duration,
    /// Status line label.
    pub label: String,
    /// Stop after this long.
    pub max_execution_time: Option<Duration>,
    /// Measure nothing for this long at the start.
    pub warmup: Option<Duration>,
    /// Fixed seeds for reproducible tests (task i uses seed + i).
    pub seed: Option<u64>,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunResult {
    /// `[OVERALL], RunTime(ms)`.
    pub runtime_ms: u64,
    /// Operations counted for the throughput.
    pub ops: u64,
    /// The `[OVERALL]` lines followed by each measurement's block.
    pub lines: Vec<ReportLine>,
    /// Messages for the user (failed flushes and such).
    pub warnings: Vec<String>,
}

/// YCSB's `RemainingFormatter`.
fn remaining(mut seconds: i64) -> String {
    let mut s = String::new();
    let days = seconds / 86_400;
    if days > 0 {
        s.push_str(&format!(
            "{days}{}",
            if days == 1 { " day " } else { " days " }
        ));
        seconds -= days * 86_400;
    }
    let hours = seconds / 3600;
    if hours > 0 {
        s.push_str(&format!(
            "{hours}{}",
            if hours == 1 { " hour " } else { " hours " }
        ));
        seconds -= hours * 3600;
    }
    if days < 1 {
        let minutes = seconds / 60;
        if minutes > 0 {
            s.push_str(&format!(
                "{minutes}{}",
                if minutes == 1 {
                    " minute "
                } else {
                    " minutes "
                }
            ));
            seconds -= minutes * 60;
        }
    }
    if s.is_empty() {
        s.push_str(&seconds.to_string());
        // YCSB checks the length after appending the number: one digit reads "second".
        s.push_str(if s.len() == 1 {
            " second "
        } else {
            " seconds "
        });
    }
    s
}

/// One status line, as YCSB's `StatusThread.computeStats` prints it.
#[allow(clippy::too_many_arguments)]
fn status_line(
    label: &str,
    start: Instant,
    interval_start: Instant,
    now: Instant,
    total_ops: u64,
    last_total_ops: u64,
    todo_ops: u64,
    summary: &str,
) -> String {
    let interval_ms = now.duration_since(start).as_millis() as i64;
    let throughput = 1000.0 * (total_ops as f64 / interval_ms as f64);
    let cur_ms = now.duration_since(interval_start).as_millis() as f64;
    let cur = 1000.0 * ((total_ops - last_total_ops) as f64 / cur_ms);
    let est = (todo_ops as f64 / throughput).ceil() as i64;
    let mut msg = format!(
        "{label}{} {} sec: {total_ops} operations; ",
        status_timestamp(SystemTime::now()),
        interval_ms / 1000
    );
    if total_ops != 0 {
        msg.push_str(&format!("{} current ops/sec; ", decimal_2(cur)));
    }
    if todo_ops != 0 {
        msg.push_str(&format!("est completion in {}", remaining(est)));
    }
    msg.push_str(summary);
    msg
}

/// Runs the workload and returns the report.
pub async fn run<D: Db>(
    cfg: &RunConfig,
    workload: Arc<CoreWorkload>,
    db: D,
    measurements: Arc<Measurements>,
) -> RunResult {
    let mut threads = cfg.threads.max(1);
    if cfg.opcount > 0 && threads as u64 > cfg.opcount {
        threads = cfg.opcount as usize;
        eprintln!(
            "Warning: the threadcount is bigger than the operation count, the threadcount will be {threads}!"
        );
    }
    let tick_ns: u64 = if cfg.target > 0.0 {
        let per_thread_per_ms = cfg.target / threads as f64 / 1000.0;
        (1_000_000.0 / per_thread_per_ms) as u64
    } else {
        0
    };
    let jitter = cfg.target > 0.0 && cfg.target / threads as f64 / 1000.0 <= 1.0;

    let start = Instant::now();
    let warmup_end = cfg.warmup.map(|w| start + w);
    if let Some(w) = warmup_end {
        measurements.set_warmup_until(w);
    }
    let total_ops = Arc::new(AtomicU64::new(0));
    let measured_ops = Arc::new(AtomicU64::new(0));

    // maxexecutiontime
    let done = Arc::new(AtomicBool::new(false));
    let done_notify = Arc::new(Notify::new());
    let terminator = cfg.max_execution_time.map(|t| {
        let w = workload.clone();
        tokio::spawn(async move {
            tokio::time::sleep(t).await;
            eprintln!("Maximum execution time specified as: {} secs", t.as_secs());
            w.request_stop();
        })
    });

    // Status line.
    let status_task = cfg.status.then(|| {
        let total = total_ops.clone();
        let m = measurements.clone();
        let label = cfg.label.clone();
        let interval = cfg.status_interval.max(Duration::from_millis(10));
        let opcount = cfg.opcount;
        let done = done.clone();
        let notify = done_notify.clone();
        tokio::spawn(async move {
            let mut interval_start = start;
            let mut last = 0u64;
            let mut deadline = start + interval;
            // One status line, then the interval restarts.
            let print_status = |last: &mut u64, interval_start: &mut Instant| {
                let now = Instant::now();
                let t = total.load(Ordering::Relaxed);
                let todo = if opcount > 0 {
                    opcount.saturating_sub(t)
                } else {
                    0
                };
                let line = status_line(
                    &label,
                    start,
                    *interval_start,
                    now,
                    t,
                    *last,
                    todo,
                    &m.summary(),
                );
                eprintln!("{line}");
                *last = t;
                *interval_start = now;
            };
            loop {
                print_status(&mut last, &mut interval_start);
                let notified = notify.notified();
                if done.load(Ordering::SeqCst) {
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline.into()) => {}
                    _ = notified => {}
                }
                if done.load(Ordering::SeqCst) {
                    break;
                }
                deadline += interval;
            }
            print_status(&mut last, &mut interval_start);
        })
    });

    let mut handles = Vec::with_capacity(threads);
    for id in 0..threads {
        let mut task_ops = cfg.opcount / threads as u64;
        if (id as u64) < cfg.opcount % threads as u64 {
            task_ops += 1;
        }
        let w = workload.clone();
        let db = db.clone();
        let total = total_ops.clone();
        let measured = measured_ops.clone();
        let m = measurements.clone();
        let transactions = cfg.transactions;
        let seed = cfg.seed.map(|s| s + id as u64);
        handles.push(tokio::spawn(async move {
            let mut st = w.init_task(seed);
            if jitter && tick_ns > 0 {
                let delay = rand::rng().random_range(0..tick_ns);
                tokio::time::sleep(Duration::from_nanos(delay)).await;
            }
            let task_start = Instant::now();
            let mut done_ops = 0u64;
            while (task_ops == 0 || done_ops < task_ops) && !w.is_stop_requested() {
                let ok = if transactions {
                    w.do_transaction(&db, &mut st).await
                } else {
                    // A failed insert is counted as an error; unlike YCSB the task goes on.
                    w.do_insert(&db, &mut st).await;
                    true
                };
                if !ok {
                    break;
                }
                done_ops += 1;
                total.fetch_add(1, Ordering::Relaxed);
                if m.is_recording() {
                    measured.fetch_add(1, Ordering::Relaxed);
                }
                if tick_ns > 0 {
                    let deadline = task_start + Duration::from_nanos(done_ops * tick_ns);
                    tokio::time::sleep_until(deadline.into()).await;
                    st.intended_start = Some(deadline);
                }
            }
            st.intended_start = None;
            w.db_cleanup(&db).await;
        }));
    }
    let mut warnings = Vec::new();
    for h in handles {
        if let Err(e) = h.await {
            warnings.push(format!("a client task failed: {e}"));
        }
    }

    // The final flush of buffered writes: its own [FLUSH] block, inside RunTime.
    if db.buffered() {
        let t0 = Instant::now();
        let outcome = db.flush().await;
        let us = t0.elapsed().as_micros() as i64;
        measurements.measure("FLUSH", us);
        measurements.measure_intended("FLUSH", us);
        let failed = outcome.failed_inserts + outcome.failed_updates;
        let status = if failed > 0 || outcome.error.is_some() {
            "ERROR"
        } else {
            "OK"
        };
        measurements.report_status("FLUSH", status);
        if outcome.failed_inserts > 0 {
            measurements.reclassify("INSERT", "OK", "ERROR", outcome.failed_inserts as i64);
        }
        if outcome.failed_updates > 0 {
            measurements.reclassify("UPDATE", "OK", "ERROR", outcome.failed_updates as i64);
        }
        if failed > 0 {
            warnings.push(format!(
                "{failed} buffered writes failed ({} inserts, {} updates); they are counted as Return=ERROR",
                outcome.failed_inserts, outcome.failed_updates
            ));
        }
        if let Some(e) = outcome.error {
            warnings.push(format!("the final flush failed: {e}"));
        }
    }
    let end = Instant::now();
    done.store(true, Ordering::SeqCst);
    done_notify.notify_waiters();
    if let Some(t) = status_task {
        let _ = t.await;
    }
    if let Some(t) = terminator {
        t.abort();
    }

    let measure_start = match warmup_end {
        Some(w) if w < end => w,
        _ => start,
    };
    let runtime_ms = end.duration_since(measure_start).as_millis() as u64;
    let ops = if warmup_end.is_some() {
        measured_ops.load(Ordering::SeqCst)
    } else {
        total_ops.load(Ordering::SeqCst)
    };
    let mut lines = overall_lines(runtime_ms, ops);
    lines.extend(measurements.export());
    RunResult {
        runtime_ms,
        ops,
        lines,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{FlushOutcome, MemoryDb, Record, Status};
    use crate::measurements::{render_text, IntervalMode};
    use crate::props::Properties;

    /// Buffers nothing, but reports 3 failed buffered updates at the final flush.
    #[derive(Clone, Default)]
    struct FailingFlush(MemoryDb);

    impl Db for FailingFlush {
        async fn read(&self, t: &str, k: &str, f: Option<&[String]>, o: &mut Record) -> Status {
            self.0.read(t, k, f, o).await
        }
        async fn scan(
            &self,
            t: &str,
            k: &str,
            n: usize,
            f: Option<&[String]>,
            o: &mut Vec<Record>,
        ) -> Status {
            self.0.scan(t, k, n, f, o).await
        }
        async fn update(&self, t: &str, k: &str, v: Record) -> Status {
            self.0.update(t, k, v).await
        }
        async fn insert(&self, t: &str, k: &str, v: Record) -> Status {
            self.0.insert(t, k, v).await
        }
        async fn delete(&self, t: &str, k: &str) -> Status {
            self.0.delete(t, k).await
        }
        async fn flush(&self) -> FlushOutcome {
            FlushOutcome {
                failed_updates: 3,
                ..Default::default()
            }
        }
        fn buffered(&self) -> bool {
            true
        }
    }

    #[tokio::test]
    async fn failed_buffered_writes_become_errors() {
        let mut p = Properties::new();
        p.set("recordcount", "10");
        p.set("readproportion", "0");
        p.set("updateproportion", "1");
        let m = Arc::new(Measurements::new(IntervalMode::Op, vec![95.0], false));
        let w = Arc::new(CoreWorkload::new(&p, m.clone()).unwrap());
        let cfg = RunConfig {
            transactions: true,
            threads: 2,
            target: 0.0,
            opcount: 20,
            status: false,
            status_interval: Duration::from_secs(10),
            label: String::new(),
            max_execution_time: None,
            warmup: None,
            seed: Some(1),
        };
        let r = run(&cfg, w, FailingFlush::default(), m).await;
        let text = render_text(&r.lines);
        assert!(text.contains("[UPDATE], Return=OK, 17\n"), "{text}");
        assert!(text.contains("[UPDATE], Return=ERROR, 3\n"), "{text}");
        assert!(text.contains("[FLUSH], Return=ERROR, 1\n"), "{text}");
        assert_eq!(r.ops, 20);
        assert_eq!(r.warnings.len(), 1);
    }

    #[test]
    fn remaining_like_ycsb() {
        assert_eq!(remaining(0), "0 second ");
        assert_eq!(remaining(9), "9 second ");
        assert_eq!(remaining(10), "10 seconds ");
        assert_eq!(remaining(61), "1 minute ");
        assert_eq!(remaining(3 * 3600 + 120), "3 hours 2 minutes ");
        assert_eq!(remaining(86_400 * 2 + 3600), "2 days 1 hour ");
    }

    #[test]
    fn status_line_format() {
        let start = Instant::now();
        let later = start + Duration::from_millis(10_000);
        let s = status_line(
            "lbl",
            start,
            start,
            later,
            5000,
            0,
            5000,
            "[READ: Count=1] ",
        );
        let (_, rest) = s.split_at(3 + 23);
        assert_eq!(
            rest,
            " 10 sec: 5000 operations; 500 current ops/sec; est completion in 10 seconds [READ: Count=1] "
        );
        assert!(s.starts_with("lbl20"));
    }
}
