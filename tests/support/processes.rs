//! A multi-process local cluster (`scripts/hbase-local start --processes`) for crash tests:
//! ZooKeeper, two masters and three region servers, each its own JVM, so that one of them can
//! be killed with SIGKILL and started again.
//!
//! Ports: ZooKeeper on `HBASE_CRASH_ZK_PORT`, masters on `HBASE_CRASH_MASTER_PORT` and the next
//! port, region server n on `HBASE_CRASH_MASTER_PORT + 10 + n`. Unset, they sit next to the
//! shared cluster's: `HBASE_LOCAL_ZK_PORT + 1` (2182) and `HBASE_LOCAL_MASTER_PORT + 1`
//! (16001), so checkouts that move their shared cluster move this one too.
//!
//! `HBASE_CRASH_HBASE_VERSION` runs another HBase version (e.g. `2.4.18`), on jars of its own
//! in `target/hbase-crash-jars/<version>`.
//!
//! Waits for cluster events ([`wait_for`]) poll the real state and are bounded.

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hbase_client::{Client, ClientConfig, ClientConfigBuilder, ServerName};

/// Region servers of the cluster.
pub const REGION_SERVERS: u32 = 3;

/// How long a query of the cluster's state waits for a ZooKeeper that does not answer (it is
/// starting, or too busy to answer one query in time): as long as a daemon's start may take.
pub const ZK_ANSWER_LIMIT: Duration = Duration::from_secs(180);

fn env_port(name: &str) -> Option<u16> {
    std::env::var(name).ok().and_then(|p| p.trim().parse().ok())
}

/// One multi-process cluster, stopped (SIGKILL: every start begins afresh) when dropped.
/// When dropped during a panic, the tail of every daemon's log is printed first.
pub struct ProcessCluster {
    dir: PathBuf,
    zk_port: u16,
    master_port: u16,
    extra_site: String,
}

/// A daemon of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// ZooKeeper.
    Zk,
    /// Master 1 or 2.
    Master(u32),
    /// Region server 1..=3.
    Rs(u32),
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Zk => write!(f, "zk"),
            Role::Master(n) => write!(f, "master{n}"),
            Role::Rs(n) => write!(f, "rs{n}"),
        }
    }
}

impl ProcessCluster {
    /// Starts a fresh cluster in `target/<name>` on the crash tests' ports (see the module
    /// docs), with extra `hbase-site` properties.
    pub async fn start(name: &str, extra_site: &[(&str, &str)]) -> ProcessCluster {
        let zk_port = env_port("HBASE_CRASH_ZK_PORT")
            .unwrap_or_else(|| env_port("HBASE_LOCAL_ZK_PORT").unwrap_or(2181) + 1);
        let master_port = env_port("HBASE_CRASH_MASTER_PORT")
            .unwrap_or_else(|| env_port("HBASE_LOCAL_MASTER_PORT").unwrap_or(16000) + 1);
        ProcessCluster::start_on(name, zk_port, master_port, extra_site).await
    }

    /// Starts a fresh cluster in `target/<name>` with ZooKeeper on `zk_port` and the masters
    /// from `master_port` on.
    pub async fn start_on(
        name: &str,
        zk_port: u16,
        master_port: u16,
        extra_site: &[(&str, &str)],
    ) -> ProcessCluster {
        let root = env!("CARGO_MANIFEST_DIR");
        let cluster = ProcessCluster {
            dir: PathBuf::from(format!("{root}/target/{name}")),
            zk_port,
            master_port,
            extra_site: extra_site
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        };
        // A cluster left over by a killed run: start afresh.
        let _ = cluster.script(&["stop", "--kill"]).await;
        cluster.run(&["start", "--processes"]).await;
        cluster
    }

    /// ZooKeeper's port.
    pub fn zk_port(&self) -> u16 {
        self.zk_port
    }

    /// ZooKeeper address, `127.0.0.1:<port>`.
    pub fn zk(&self) -> String {
        format!("127.0.0.1:{}", self.zk_port)
    }

    /// RPC port of region server `n`.
    pub fn rs_port(&self, n: u32) -> u16 {
        self.master_port + 10 + n as u16
    }

    /// RPC port of master `n`.
    pub fn master_port(&self, n: u32) -> u16 {
        self.master_port + n as u16 - 1
    }

    /// The daemon serving `server` (by port).
    pub fn role_of(&self, server: &ServerName) -> Option<Role> {
        (1..=REGION_SERVERS)
            .find(|&n| self.rs_port(n) == server.port)
            .map(Role::Rs)
            .or_else(|| {
                (1..=2)
                    .find(|&n| self.master_port(n) == server.port)
                    .map(Role::Master)
            })
    }

    /// Region server number of `server`; panics if it is none of the cluster's.
    pub fn rs_number(&self, server: &ServerName) -> u32 {
        match self.role_of(server) {
            Some(Role::Rs(n)) => n,
            other => panic!("{server:?} is no region server of the cluster ({other:?})"),
        }
    }

    /// The HBase root directory (on the local filesystem).
    pub fn root_dir(&self) -> PathBuf {
        self.dir.join("run/hbase")
    }

    /// Log file of `role`.
    pub fn log_file(&self, role: Role) -> PathBuf {
        self.dir.join(format!("run/logs/{role}.log"))
    }

    /// A client config builder for this cluster.
    pub fn config(&self) -> ClientConfigBuilder {
        ClientConfig::builder(self.zk())
    }

    /// A client, tuned by `tune`.
    pub async fn client(
        &self,
        tune: impl FnOnce(ClientConfigBuilder) -> ClientConfigBuilder,
    ) -> Client {
        Client::connect(tune(self.config()).build().unwrap())
            .await
            .expect("connect to the multi-process cluster")
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut c = tokio::process::Command::new(format!("{root}/scripts/hbase-local"));
        c.args(args)
            .env("HBASE_LOCAL_DIR", &self.dir)
            .env(
                "HBASE_LOCAL_LIB_DIR",
                format!("{root}/target/hbase-local/lib"),
            )
            .env("HBASE_LOCAL_ZK_PORT", self.zk_port.to_string())
            .env("HBASE_LOCAL_MASTER_PORT", self.master_port.to_string())
            .env("HBASE_LOCAL_REGIONSERVERS", REGION_SERVERS.to_string())
            .env("HBASE_LOCAL_EXTRA_SITE", &self.extra_site)
            // Six JVMs starting on two busy cores: allow for it.
            .env(
                "HBASE_LOCAL_START_TIMEOUT",
                std::env::var("HBASE_LOCAL_START_TIMEOUT").unwrap_or_else(|_| "300".into()),
            )
            .env_remove("HBASE_LOCAL_PROCESSES")
            // Registered as 127.0.0.1.
            .env_remove("HBASE_LOCAL_HOSTNAME");
        // The default version on the shared jars, or HBASE_CRASH_HBASE_VERSION on jars of its own.
        match std::env::var("HBASE_CRASH_HBASE_VERSION") {
            Ok(v) if !v.trim().is_empty() => {
                let jars = format!("{root}/target/hbase-crash-jars");
                c.env("HBASE_LOCAL_HBASE_VERSION", v.trim())
                    .env("HBASE_LOCAL_LIB_DIR", format!("{jars}/{}", v.trim()));
            }
            _ => {
                c.env_remove("HBASE_LOCAL_HBASE_VERSION");
            }
        }
        c.kill_on_drop(true);
        c
    }

    /// Runs `scripts/hbase-local args` for this cluster.
    pub async fn script(&self, args: &[&str]) -> std::process::Output {
        self.command(args)
            .output()
            .await
            .expect("run scripts/hbase-local")
    }

    /// Runs `scripts/hbase-local args`, panics unless it succeeds; returns its stdout.
    pub async fn run(&self, args: &[&str]) -> String {
        let out = self.script(args).await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "scripts/hbase-local {} failed:\n{stdout}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "[cluster] {}",
            stdout.trim_end().replace('\n', "\n[cluster] ")
        );
        stdout
    }

    /// `kill -9` of region server `n`.
    pub async fn kill_rs(&self, n: u32) {
        self.run(&["kill-rs", &n.to_string()]).await;
    }

    /// Starts region server `n` again and waits until it is registered.
    pub async fn start_rs(&self, n: u32) {
        self.run(&["start-rs", &n.to_string()]).await;
    }

    /// Starts region server `n` with its ZooKeeper session through `zk_relay` and its
    /// outgoing RPCs through the SOCKS proxy `socks` (see [`crate::relay::Relay`]).
    pub async fn start_rs_behind(&self, n: u32, zk_relay: &str, socks: &str) {
        self.run(&[
            "start-rs",
            &n.to_string(),
            "--zk",
            zk_relay,
            "--socks",
            socks,
        ])
        .await;
    }

    /// `kill -9` of the region server hosting `hbase:meta`; returns its number.
    pub async fn kill_meta(&self) -> u32 {
        let out = self.run(&["kill-meta"]).await;
        let n = out
            .lines()
            .find_map(|l| l.strip_prefix("hbase-local: killed rs"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        n.unwrap_or_else(|| panic!("no killed region server in {out:?}"))
    }

    /// `kill -9` of the active master; returns its number.
    pub async fn kill_active_master(&self) -> u32 {
        let out = self.run(&["kill-master"]).await;
        let n = out
            .lines()
            .find_map(|l| l.strip_prefix("hbase-local: killed master"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        n.unwrap_or_else(|| panic!("no killed master in {out:?}"))
    }

    /// Starts every master that is down (as backups) and waits until they are registered.
    pub async fn start_masters(&self) {
        self.run(&["start-master"]).await;
    }

    /// `kill -9` of ZooKeeper.
    pub async fn kill_zk(&self) {
        self.run(&["kill-zk"]).await;
    }

    /// Starts ZooKeeper again and waits until it answers.
    pub async fn start_zk(&self) {
        self.run(&["start-zk"]).await;
    }

    /// `scripts/hbase-local status`, and from it the daemon named on the line `label`
    /// (`"meta on:"` or `"master:"`), e.g. `Some(Role::Rs(2))`; `None` if ZooKeeper names
    /// none. `status` prints those lines only when its ZooKeeper query was answered: one that
    /// was not (a busy ZooKeeper can miss one) is asked again, for at most [`ZK_ANSWER_LIMIT`],
    /// so that a missed answer is not read as "none". Not for while ZooKeeper is down.
    pub async fn status_role(&self, label: &str) -> Option<Role> {
        let line = wait_for(
            &format!("ZooKeeper to answer `scripts/hbase-local status` ({label})"),
            ZK_ANSWER_LIMIT,
            || async {
                let out = self.script(&["status"]).await;
                let text = String::from_utf8_lossy(&out.stdout);
                text.lines()
                    .find_map(|l| l.trim().strip_prefix(label))
                    .map(str::to_string)
            },
        )
        .await;
        let role = line.rsplit_once('(')?.1.trim_end_matches(')');
        if let Some(n) = role.strip_prefix("rs") {
            n.parse().ok().map(Role::Rs)
        } else {
            role.strip_prefix("master")?.parse().ok().map(Role::Master)
        }
    }

    /// The region server hosting `hbase:meta` now (per ZooKeeper).
    pub async fn meta_host(&self) -> Option<u32> {
        match self.status_role("meta on:").await {
            Some(Role::Rs(n)) => Some(n),
            _ => None,
        }
    }

    /// Whether `role`'s JVM is alive.
    pub async fn is_running(&self, role: Role) -> bool {
        self.script(&["pid", &role.to_string()])
            .await
            .status
            .success()
    }

    /// Resident memory (MiB) of each daemon that is running.
    pub async fn resident_mib(&self) -> Vec<(Role, u64)> {
        let mut roles = vec![Role::Zk, Role::Master(1), Role::Master(2)];
        roles.extend((1..=REGION_SERVERS).map(Role::Rs));
        let mut out = Vec::new();
        for role in roles {
            let pid = self.script(&["pid", &role.to_string()]).await;
            let pid = String::from_utf8_lossy(&pid.stdout).trim().to_string();
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let kib = status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(kib) = kib {
                out.push((role, kib / 1024));
            }
        }
        out
    }

    /// The last `lines` lines of `role`'s log.
    pub fn log_tail(&self, role: Role, lines: usize) -> String {
        let text = std::fs::read_to_string(self.log_file(role)).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for ProcessCluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut roles = vec![Role::Zk, Role::Master(1), Role::Master(2)];
            roles.extend((1..=REGION_SERVERS).map(Role::Rs));
            for role in roles {
                eprintln!(
                    "===== last 40 lines of {} =====",
                    self.log_file(role).display()
                );
                eprintln!("{}", self.log_tail(role, 40));
            }
        }
        let root = env!("CARGO_MANIFEST_DIR");
        let _ = std::process::Command::new(format!("{root}/scripts/hbase-local"))
            .args(["stop", "--kill"])
            .env("HBASE_LOCAL_DIR", &self.dir)
            .env(
                "HBASE_LOCAL_LIB_DIR",
                format!("{root}/target/hbase-local/lib"),
            )
            .output();
    }
}

/// Polls `check` every 200 ms until it yields `Some`, for at most `limit`; panics with `what`
/// after that. For waiting on cluster events (a server gone, a region reassigned), never on
/// the clock.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            start.elapsed() < limit,
            "gave up after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
