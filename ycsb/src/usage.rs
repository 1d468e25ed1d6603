//! What a run costs the client machine: CPU time (user + system, all threads) of this
//! process over the measured window, its peak resident set, and the same figures of a child
//! process as the kernel accounts them when it is reaped (`wait4`).
//!
//! A run with `-p artifacts.dir=DIR` writes [`ProcessUsage`] as `DIR/process.txt`.
//! `ycsb sweep` runs every point in its own `ycsb run` process, so the peak resident set
//! of a point is that point's alone (a high-water mark in one long process could only grow
//! from point to point, and Linux has no way to reset `VmHWM` of a running process).

use std::fmt::Write as _;
use std::path::Path;

/// CPU time, user and system, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// User time.
    pub user_us: u64,
    /// System (kernel) time.
    pub system_us: u64,
}

impl CpuTime {
    /// User + system.
    pub fn total_us(&self) -> u64 {
        self.user_us + self.system_us
    }

    /// `self - earlier`, per field (never negative).
    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            system_us: self.system_us.saturating_sub(earlier.system_us),
        }
    }

    fn from_rusage(ru: &libc::rusage) -> CpuTime {
        let us = |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000 + t.tv_usec.max(0) as u64;
        CpuTime {
            user_us: us(ru.ru_utime),
            system_us: us(ru.ru_stime),
        }
    }
}

/// CPU time of this process so far (every thread), from `getrusage(RUSAGE_SELF)`.
pub fn process_cpu() -> CpuTime {
    // SAFETY: getrusage only writes the struct it is given, which is a valid, zeroed rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return CpuTime::default();
    }
    CpuTime::from_rusage(&ru)
}

/// A `kB` field (`VmHWM`, `VmRSS`) of `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// The peak resident set of this process so far in KiB (`VmHWM`); None where there is no
/// `/proc` (not Linux).
pub fn peak_rss_kib() -> Option<u64> {
    status_kib("VmHWM")
}

/// What one run cost its process, as `process.txt` holds it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessUsage {
    /// CPU time of the whole process over the measured window (from the end of the warm-up,
    /// or the start of the operations, to the end of the run's final flushes).
    pub cpu: CpuTime,
    /// The operations counted in that window (the report's throughput operations).
    pub ops: u64,
    /// Peak resident set of the process at the end of the run (KiB), when known.
    pub peak_rss_kib: Option<u64>,
}

impl ProcessUsage {
    /// CPU microseconds per operation over the measured window (None without operations).
    pub fn cpu_us_per_op(&self) -> Option<f64> {
        (self.ops > 0).then(|| self.cpu.total_us() as f64 / self.ops as f64)
    }

    /// The text of `process.txt`: report-style lines `[PROCESS], name, value`.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "[PROCESS], CpuUser(us), {}", self.cpu.user_us);
        let _ = writeln!(s, "[PROCESS], CpuSystem(us), {}", self.cpu.system_us);
        let _ = writeln!(s, "[PROCESS], Operations, {}", self.ops);
        if let Some(kib) = self.peak_rss_kib {
            let _ = writeln!(s, "[PROCESS], PeakRSS(KiB), {kib}");
        }
        s
    }

    /// Parses [`ProcessUsage::to_text`]; None if a required line is missing.
    pub fn parse(text: &str) -> Option<ProcessUsage> {
        let field = |name: &str| -> Option<u64> {
            let prefix = format!("[PROCESS], {name}, ");
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .and_then(|v| v.trim().parse().ok())
        };
        Some(ProcessUsage {
            cpu: CpuTime {
                user_us: field("CpuUser(us)")?,
                system_us: field("CpuSystem(us)")?,
            },
            ops: field("Operations")?,
            peak_rss_kib: field("PeakRSS(KiB)"),
        })
    }

    /// Reads `dir/process.txt`, if the run wrote one.
    pub fn read(dir: &Path) -> Option<ProcessUsage> {
        ProcessUsage::parse(&std::fs::read_to_string(dir.join("process.txt")).ok()?)
    }
}

/// How a child process ended and what it cost, as the kernel accounted it.
#[derive(Debug, Clone, Copy)]
pub struct ChildUsage {
    /// Its exit status.
    pub status: std::process::ExitStatus,
    /// Its CPU time over its whole life (start-up and warm-up included).
    pub cpu: CpuTime,
    /// Its peak resident set (KiB, `ru_maxrss`).
    pub max_rss_kib: u64,
}

/// Waits for `child` to end and returns its exit status and rusage (`wait4`). Blocks the
/// calling thread.
pub fn wait_child(child: std::process::Child) -> std::io::Result<ChildUsage> {
    use std::os::unix::process::ExitStatusExt;
    let pid = child.id() as libc::pid_t;
    // The Child handle is not used again: we reap the process ourselves, with its rusage.
    drop(child);
    let mut status: libc::c_int = 0;
    // SAFETY: wait4 writes only the status int and the zeroed rusage struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if rc == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    Ok(ChildUsage {
        status: std::process::ExitStatus::from_raw(status),
        cpu: CpuTime::from_rusage(&ru),
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_text_round_trips() {
        let u = ProcessUsage {
            cpu: CpuTime {
                user_us: 1500,
                system_us: 500,
            },
            ops: 400,
            peak_rss_kib: Some(20_480),
        };
        assert_eq!(ProcessUsage::parse(&u.to_text()), Some(u));
        assert_eq!(u.cpu_us_per_op(), Some(5.0));
        assert_eq!(ProcessUsage::parse("[PROCESS], CpuUser(us), 1\n"), None);
    }

    #[test]
    fn this_process_burns_cpu_and_has_memory() {
        let before = process_cpu();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu().since(&before).total_us() > 0);
        assert!(peak_rss_kib().unwrap() > 0);
    }

    #[test]
    fn a_child_is_reaped_with_its_usage() {
        let child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3",
            ])
            .spawn()
            .unwrap();
        let u = wait_child(child).unwrap();
        assert_eq!(u.status.code(), Some(3));
        assert!(u.max_rss_kib > 0);
        assert!(u.cpu.total_us() > 0);
    }
}
