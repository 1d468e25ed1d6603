//! The client: runs the workload on N tasks ("threads"), paces them for `-target`, prints the
//! status line, stops at `maxexecutiontime`, flushes, and collects the report.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rand::Rng;
use tokio::sync::Notify;

use crate::db::{Db, FlushOutcome, Status};
use crate::measurements::{report_lines, Measurements, ReportLine};
use crate::pacer;
use crate::usage::{process_cpu, CpuTime};
use crate::util::{decimal_2, status_timestamp};
use crate::workload::CoreWorkload;
use crate::Error;

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
    /// When RunTime starts: before the binding connects, as YCSB's clock starts before its
    /// threads' `DB.init`.
    pub started: Instant,
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
    /// Set when threads stopped early because inserts failed for good: the run is reported,
    /// and then fails.
    pub incomplete: Option<String>,
    /// CPU time of the whole process over the measured window: from the end of the warm-up
    /// (or the start of the operations) to the end of the final flushes.
    pub cpu: CpuTime,
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
pub fn status_line(
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

/// The first panic message of a task that panicked.
fn panic_message(e: tokio::task::JoinError) -> String {
    if e.is_panic() {
        let p = e.into_panic();
        if let Some(s) = p.downcast_ref::<&str>() {
            return (*s).to_string();
        }
        if let Some(s) = p.downcast_ref::<String>() {
            return s.clone();
        }
        "a panic".into()
    } else {
        "cancelled".into()
    }
}

/// What one client task did.
struct TaskOutcome {
    ops: u64,
    cleanup: FlushOutcome,
    insert_failed: bool,
}

/// Runs the workload and returns the report. A client task that panics fails the whole run
/// ([`Error::Worker`]): no report that looks like success.
pub async fn run<D: Db>(
    cfg: &RunConfig,
    workload: Arc<CoreWorkload>,
    db: D,
    measurements: Arc<Measurements>,
) -> Result<RunResult, Error> {
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
    let spin_ahead = pacer::spin_ahead_for(cfg.target);

    let start = cfg.started;
    let warmup_end = cfg.warmup.map(|w| Instant::now() + w);
    if let Some(w) = warmup_end {
        measurements.set_warmup_until(w);
    }
    // The process's CPU at the start of the measured window: now, or when the warm-up ends.
    let cpu_at_start = process_cpu();
    let cpu_after_warmup = Arc::new(std::sync::Mutex::new(None::<CpuTime>));
    let warmup_clock = warmup_end.map(|w| {
        let slot = cpu_after_warmup.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(w.into()).await;
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(process_cpu());
        })
    });
    let total_ops = Arc::new(AtomicU64::new(0));
    let measured_ops = Arc::new(AtomicU64::new(0));

    // maxexecutiontime
    let done = Arc::new(AtomicBool::new(false));
    let done_notify = Arc::new(Notify::new());
    // When maxexecutiontime ends the run: a thread whose pace would sleep past it stops there.
    let stop_at = cfg.max_execution_time.map(|t| Instant::now() + t);
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
            let status_start = Instant::now();
            let mut interval_start = status_start;
            let mut last = 0u64;
            let mut deadline = status_start + interval;
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
                    status_start,
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
        let db = db.for_thread();
        let total = total_ops.clone();
        let measured = measured_ops.clone();
        let m = measurements.clone();
        let transactions = cfg.transactions;
        let seed = cfg.seed;
        handles.push(tokio::spawn(async move {
            let mut st = w.init_task(seed, id as u64);
            let mut ended = false;
            if jitter && tick_ns > 0 {
                let delay = rand::rng().random_range(0..tick_ns);
                let until = Instant::now() + Duration::from_nanos(delay);
                ended = stop_at.is_some_and(|s| until >= s);
                pacer::sleep_until(stop_at.map_or(until, |s| until.min(s)), spin_ahead).await;
            }
            let task_start = Instant::now();
            let mut done_ops = 0u64;
            let mut insert_failed = false;
            while !ended && (task_ops == 0 || done_ops < task_ops) && !w.is_stop_requested() {
                let ok = if transactions {
                    w.do_transaction(&db, &mut st).await
                } else {
                    let ok = w.do_insert(&db, &mut st).await;
                    insert_failed = !ok;
                    ok
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
                    if let Some(s) = stop_at.filter(|s| deadline >= *s) {
                        pacer::sleep_until(s, spin_ahead).await;
                        break;
                    }
                    pacer::sleep_until(deadline, spin_ahead).await;
                    st.intended_start = Some(deadline);
                }
                // An operation that never waits (the memory and basic databases) never gives
                // the thread back, nor does a pacer that is behind its schedule: on the
                // one-thread runtime the maxexecutiontime timer and the status line would
                // never run. This yields once the task has used its scheduling budget
                // (tokio's, 128 units; I/O uses it too).
                tokio::task::consume_budget().await;
            }
            st.intended_start = None;
            let cleanup = w.db_cleanup(&db).await;
            TaskOutcome {
                ops: done_ops,
                cleanup,
                insert_failed,
            }
        }));
    }
    let mut warnings = Vec::new();
    let mut panics = Vec::new();
    let mut failed_inserts = 0u64;
    let mut failed_updates = 0u64;
    let mut failed_deletes = 0u64;
    let mut stopped_threads = 0usize;
    for h in handles {
        match h.await {
            Ok(t) => {
                let _ = t.ops;
                failed_inserts += t.cleanup.failed_inserts;
                failed_updates += t.cleanup.failed_updates;
                failed_deletes += t.cleanup.failed_deletes;
                if let Some(e) = t.cleanup.error {
                    warnings.push(format!("a thread's final flush failed: {e}"));
                }
                if t.insert_failed {
                    stopped_threads += 1;
                }
            }
            Err(e) => panics.push(panic_message(e)),
        }
    }

    // The shared-buffer accounting: the final flush of the one buffer, in its own [FLUSH]
    // block, inside RunTime.
    if db.shared_buffer() {
        let t0 = Instant::now();
        let outcome = db.flush().await;
        let us = t0.elapsed().as_micros() as i64;
        measurements.measure("FLUSH", us);
        measurements.measure_intended("FLUSH", us);
        let failed = outcome.failed_inserts + outcome.failed_updates + outcome.failed_deletes;
        let status = if failed > 0 || outcome.error.is_some() {
            Status::Error
        } else {
            Status::Ok
        };
        measurements.report_status("FLUSH", status);
        failed_inserts += outcome.failed_inserts;
        failed_updates += outcome.failed_updates;
        failed_deletes += outcome.failed_deletes;
        if let Some(e) = outcome.error {
            warnings.push(format!("the final flush failed: {e}"));
        }
    }
    if failed_inserts > 0 {
        measurements.reclassify("INSERT", Status::Ok, Status::Error, failed_inserts as i64);
    }
    if failed_updates > 0 {
        measurements.reclassify("UPDATE", Status::Ok, Status::Error, failed_updates as i64);
    }
    if failed_deletes > 0 {
        measurements.reclassify("DELETE", Status::Ok, Status::Error, failed_deletes as i64);
    }
    if failed_inserts + failed_updates + failed_deletes > 0 {
        warnings.push(format!(
            "{} buffered writes failed ({failed_inserts} inserts, {failed_updates} updates, {failed_deletes} deletes); they are counted as Return=ERROR",
            failed_inserts + failed_updates + failed_deletes
        ));
    }
    let end = Instant::now();
    let cpu_at_end = process_cpu();
    if let Some(t) = warmup_clock {
        t.abort();
    }
    let cpu_from = cpu_after_warmup
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or(cpu_at_start);
    done.store(true, Ordering::SeqCst);
    done_notify.notify_waiters();
    if let Some(t) = status_task {
        let _ = t.await;
    }
    if let Some(t) = terminator {
        t.abort();
    }
    if !panics.is_empty() {
        return Err(Error::Worker(format!(
            "{} of {threads} client threads panicked ({}); the run is void",
            panics.len(),
            panics[0]
        )));
    }

    let measure_start = match warmup_end {
        Some(w) if w < end => w,
        _ => start,
    };
    let runtime_ms = end.duration_since(measure_start).as_millis() as u64;
    // The report's final interval takes come after `end`: the logs are stamped inside RunTime,
    // counted back from `end` in RunTime's whole milliseconds (as merge counts it back).
    measurements.set_measured_window(end - Duration::from_millis(runtime_ms), end);
    let ops = if warmup_end.is_some() {
        measured_ops.load(Ordering::SeqCst)
    } else {
        total_ops.load(Ordering::SeqCst)
    };
    let lines = report_lines(runtime_ms, ops, &measurements)?;
    // A load is incomplete when an insert failed for good, written at once (its thread
    // stopped) or buffered (found at the buffer's flush or close).
    let incomplete = if stopped_threads > 0 {
        Some(format!(
            "{stopped_threads} of {threads} threads stopped after an insert failed for good (core_workload_insertion_retry_limit); the load is incomplete"
        ))
    } else if !cfg.transactions && failed_inserts > 0 {
        Some(format!(
            "{failed_inserts} buffered inserts failed; the load is incomplete"
        ))
    } else {
        None
    };
    Ok(RunResult {
        runtime_ms,
        ops,
        lines,
        warnings,
        incomplete,
        cpu: cpu_at_end.since(&cpu_from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{MemoryDb, Record, Values};
    use crate::measurements::{render_text, IntervalMode};
    use crate::props::Properties;

    /// Buffers nothing, but each thread's cleanup reports 3 failed buffered updates, timed as
    /// the HBase binding times its close (UPDATE).
    #[derive(Clone, Default)]
    struct FailingClose(MemoryDb);

    impl Db for FailingClose {
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
        async fn update(&self, t: &str, k: &str, v: Values) -> Status {
            self.0.update(t, k, v).await
        }
        async fn insert(&self, t: &str, k: &str, v: Values) -> Status {
            self.0.insert(t, k, v).await
        }
        async fn delete(&self, t: &str, k: &str) -> Status {
            self.0.delete(t, k).await
        }
        async fn cleanup(&self) -> FlushOutcome {
            FlushOutcome {
                failed_updates: 3,
                ..Default::default()
            }
        }
        fn cleanup_measurement(&self) -> Option<&'static str> {
            Some("UPDATE")
        }
    }

    fn config(threads: usize, opcount: u64, transactions: bool) -> RunConfig {
        RunConfig {
            transactions,
            threads,
            target: 0.0,
            opcount,
            status: false,
            status_interval: Duration::from_secs(10),
            label: String::new(),
            max_execution_time: None,
            warmup: None,
            seed: Some(1),
            started: Instant::now(),
        }
    }

    fn workload(pairs: &[(&str, &str)], m: &Arc<Measurements>) -> Arc<CoreWorkload> {
        let mut p = Properties::new();
        for (k, v) in pairs {
            p.set(*k, *v);
        }
        Arc::new(CoreWorkload::new(&p, m.clone()).unwrap())
    }

    fn count(text: &str, line: &str) -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix(line))
            .unwrap_or_else(|| panic!("no {line} in\n{text}"))
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn cleanup_is_an_update_sample_and_failed_writes_become_errors() {
        let m = Arc::new(Measurements::new(IntervalMode::Op, vec![95.0], false));
        let w = workload(
            &[
                ("recordcount", "10"),
                ("readproportion", "0"),
                ("updateproportion", "1"),
            ],
            &m,
        );
        let r = run(&config(2, 20, true), w, FailingClose::default(), m)
            .await
            .unwrap();
        let text = render_text(&r.lines);
        // 20 updates and one close per thread, as YCSB's HBase binding records them.
        assert_eq!(count(&text, "[UPDATE], Operations, "), 22, "{text}");
        assert_eq!(count(&text, "[UPDATE], Return=OK, "), 14, "{text}");
        assert_eq!(count(&text, "[UPDATE], Return=ERROR, "), 6, "{text}");
        assert_eq!(count(&text, "[CLEANUP], Operations, "), 2, "{text}");
        assert!(!text.contains("[FLUSH]"), "{text}");
        assert_eq!(r.ops, 20);
        assert_eq!(r.warnings.len(), 1);
        assert!(text.contains("[TOTAL_GCs], Count, 0\n"), "{text}");
    }

    /// `maxexecutiontime` ends a run whose pace sleeps past it (a low `-target`): the run ends
    /// at its time, not at the thread's next tick (before, a 0.2 s run at one operation a
    /// minute per thread lasted a minute).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_run_ends_at_maxexecutiontime_however_slow_its_pace() {
        let m = Arc::new(Measurements::new(IntervalMode::Op, vec![95.0], false));
        let w = workload(&[("recordcount", "10")], &m);
        let mut cfg = config(2, 0, true);
        cfg.target = 2.0 / 60.0;
        cfg.max_execution_time = Some(Duration::from_millis(200));
        let r = run(&cfg, w, MemoryDb::default(), m).await.unwrap();
        assert!(r.runtime_ms < 30_000, "ran {} ms", r.runtime_ms);
        assert!(r.runtime_ms >= 200, "ran {} ms", r.runtime_ms);
    }

    /// Every operation panics.
    #[derive(Clone, Default)]
    struct Panics;

    impl Db for Panics {
        async fn read(&self, _: &str, _: &str, _: Option<&[String]>, _: &mut Record) -> Status {
            panic!("read exploded")
        }
        async fn scan(
            &self,
            _: &str,
            _: &str,
            _: usize,
            _: Option<&[String]>,
            _: &mut Vec<Record>,
        ) -> Status {
            panic!("scan exploded")
        }
        async fn update(&self, _: &str, _: &str, _: Values) -> Status {
            panic!("update exploded")
        }
        async fn insert(&self, _: &str, _: &str, _: Values) -> Status {
            Status::Error
        }
        async fn delete(&self, _: &str, _: &str) -> Status {
            Status::Ok
        }
    }

    #[tokio::test]
    async fn a_panicking_thread_voids_the_run() {
        let m = Arc::new(Measurements::new(IntervalMode::Op, vec![95.0], false));
        let w = workload(&[("recordcount", "10")], &m);
        let err = run(&config(3, 30, true), w, Panics, m).await.unwrap_err();
        assert!(matches!(err, Error::Worker(_)), "{err}");
        assert!(err.to_string().contains("exploded"), "{err}");
    }

    #[tokio::test]
    async fn a_failed_load_insert_stops_its_thread_after_the_retry_limit() {
        let m = Arc::new(Measurements::new(IntervalMode::Op, vec![95.0], false));
        let w = workload(
            &[
                ("recordcount", "100"),
                ("core_workload_insertion_retry_limit", "2"),
                ("core_workload_insertion_retry_interval", "0"),
            ],
            &m,
        );
        let r = run(&config(4, 100, false), w, Panics, m).await.unwrap();
        let text = render_text(&r.lines);
        // Each of the 4 threads tried its first insert 1 + 2 times, then stopped.
        assert_eq!(count(&text, "[INSERT], Return=ERROR, "), 12, "{text}");
        assert_eq!(count(&text, "[INSERT-FAILED], Operations, "), 12, "{text}");
        assert_eq!(r.ops, 0);
        assert!(r.incomplete.unwrap().contains("4 of 4 threads stopped"));
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
}
