//! Shared setup for the integration tests in `tests/`. They run against the real HBase started by
//! `scripts/hbase-local start`, or against any other cluster named by the environment:
//!
//! - `HBASE_ZK`: its ZooKeeper quorum (default `127.0.0.1:2181`);
//! - `HBASE_ADDRESS_MAP`: addresses to rewrite, for servers that register names this machine
//!   cannot reach (HBase in docker): `host[:port]=host[:port],…`, see
//!   [`hbase_client::AddressMap`]. Every client the tests build (ours, `ycsb`, `pe`, and the Java
//!   programs through a JVM hosts file) follows it;
//! - `HBASE_BOOTSTRAP_SERVERS`: when set (`host:port,…`), every client the tests build
//!   bootstraps through the RPC connection registry on these servers instead of ZooKeeper
//!   (`scripts/version-matrix` runs the compatibility suite so, with `HBASE_ZK` pointing at a
//!   closed port, on HBase 2.5+);
//! - `HBASE_TEST_REGION_SERVERS`: how many live region servers the cluster has (default 3).
//!
//! The tests create and drop only tables (and a namespace, and snapshots) whose names start with
//! [`TABLE_PREFIX`], and leave the balancer switch as they found it. The exceptions are the
//! examples that `tests/examples.rs` and `tests/security.rs` run ([`run_example`]): each makes
//! and drops a table of its own name (`quickstart`, `example_*`, `secure_example`).

pub mod browser;
pub mod live_heap;
pub mod processes;
pub mod proxy;
pub mod relay;
pub mod secure;
pub mod ycsb_java;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use hbase_client::{
    AddressMap, Admin, Client, ClientConfig, ClientConfigBuilder, ColumnFamily, Registry,
    StatsSnapshot, TableDescriptor, TableName,
};

/// Every table, namespace and snapshot the tests create starts with this.
pub const TABLE_PREFIX: &str = "hbrs_it_";

/// ZooKeeper address of the test cluster.
pub fn zk() -> String {
    std::env::var("HBASE_ZK").unwrap_or_else(|_| "127.0.0.1:2181".into())
}

/// The configuration directory `scripts/hbase-local` writes for the running cluster (its
/// `hbase-site.xml`): `$HBASE_LOCAL_DIR/run/conf`, by default `target/hbase-local/run/conf`.
pub fn hbase_conf_dir() -> std::path::PathBuf {
    let base = std::env::var_os("HBASE_LOCAL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/hbase-local")
        });
    base.join("run/conf")
}

/// A directory whose `hbase-site.xml` names the test cluster: the one `scripts/hbase-local`
/// wrote ([`hbase_conf_dir`]) when it is that cluster's, else one written from [`zk`] (an
/// external cluster) under `target/it-conf`.
pub fn hbase_site_dir() -> std::path::PathBuf {
    let local = hbase_conf_dir();
    let same = ClientConfig::from_hbase_site(&local)
        .map(|c| c.zk_quorum() == zk())
        .unwrap_or(false);
    if same {
        return local;
    }
    let zk = zk();
    let mut port = "2181".to_string();
    let hosts: Vec<String> = zk
        .split(',')
        .map(|hp| match hp.rsplit_once(':') {
            Some((h, p)) => {
                port = p.to_string();
                h.to_string()
            }
            None => hp.to_string(),
        })
        .collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/it-conf/{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create target/it-conf");
    std::fs::write(
        dir.join("hbase-site.xml"),
        format!(
            "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>hbase.zookeeper.quorum</name><value>{}</value></property>\n  <property><name>hbase.zookeeper.property.clientPort</name><value>{port}</value></property>\n</configuration>\n",
            hosts.join(",")
        ),
    )
    .expect("write hbase-site.xml");
    dir
}

/// `ycsb`'s option for the address map (`-p hbase.client.address.map=…`), or nothing.
pub fn ycsb_map_args() -> String {
    let map = address_map();
    if map.is_empty() {
        String::new()
    } else {
        format!("-p hbase.client.address.map={map}")
    }
}

/// The address map of `HBASE_ADDRESS_MAP` (empty when unset). A malformed value panics with
/// the parser's message.
pub fn address_map() -> &'static AddressMap {
    static MAP: OnceLock<AddressMap> = OnceLock::new();
    MAP.get_or_init(|| match std::env::var("HBASE_ADDRESS_MAP") {
        Ok(text) => {
            AddressMap::parse(&text).unwrap_or_else(|e| panic!("HBASE_ADDRESS_MAP={text:?}: {e}"))
        }
        Err(_) => AddressMap::default(),
    })
}

/// `addr` (`host:port`, as the cluster advertises it) after `HBASE_ADDRESS_MAP`.
pub fn map_address(addr: &str) -> String {
    address_map().map(addr)
}

/// The servers of `HBASE_BOOTSTRAP_SERVERS` (empty when unset: bootstrap through ZooKeeper).
pub fn bootstrap_servers() -> Vec<String> {
    std::env::var("HBASE_BOOTSTRAP_SERVERS")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// A config builder naming the test cluster, without the address map: its ZooKeeper, or the
/// RPC connection registry on `HBASE_BOOTSTRAP_SERVERS`.
pub fn registry_builder() -> ClientConfigBuilder {
    let servers = bootstrap_servers();
    let builder = ClientConfig::builder(zk());
    if servers.is_empty() {
        builder
    } else {
        builder.registry(Registry::Rpc).bootstrap_servers(servers)
    }
}

/// A config builder for the test cluster: its registry ([`registry_builder`]), and the address
/// map if one is set.
pub fn config_builder() -> ClientConfigBuilder {
    let builder = registry_builder();
    let map = address_map();
    if map.is_empty() {
        builder
    } else {
        builder.address_mapper(map.clone().into_mapper())
    }
}

/// `ycsb`'s options naming the test cluster: `--zk …` (or the RPC registry's properties when
/// `HBASE_BOOTSTRAP_SERVERS` is set), and the address map if one is set.
pub fn ycsb_cluster_args() -> String {
    let servers = bootstrap_servers();
    let registry = if servers.is_empty() {
        format!("--zk {}", zk())
    } else {
        format!(
            "-p hbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry -p hbase.client.bootstrap.servers={}",
            servers.join(",")
        )
    };
    let map = address_map();
    if map.is_empty() {
        registry
    } else {
        format!("{registry} -p hbase.client.address.map={map}")
    }
}

/// JVM options that make a Java client on this machine follow `HBASE_ADDRESS_MAP`: a private
/// hosts file (`-Djdk.net.hosts.file`) that resolves each mapped host name to its target.
/// Empty without a map. A name resolver cannot change ports, so a map with `host:port` pairs
/// that move a port cannot be followed by Java: that panics with an explanation.
pub fn java_resolver_opts() -> Vec<String> {
    let map = address_map();
    if map.is_empty() {
        return Vec::new();
    }
    let mut hosts: Vec<(String, String)> = map.host_pairs();
    for (from, to) in map.exact_pairs() {
        let (fh, fp) = from.rsplit_once(':').expect("exact pairs have ports");
        let (th, tp) = to.rsplit_once(':').expect("exact pairs have ports");
        assert_eq!(
            fp, tp,
            "HBASE_ADDRESS_MAP maps {from} to {to}: the Java programs of the tests can only \
             follow maps that keep ports (host=host, or host:port=host:same-port); publish the \
             servers' ports unchanged (see README, \"An external cluster\")"
        );
        hosts.push((fh.to_string(), th.to_string()));
    }
    let mut lines = vec!["127.0.0.1 localhost".to_string()];
    for (from, to) in hosts {
        let ip = resolve_ipv4(&to);
        lines.push(format!("{ip} {from}"));
    }
    // Names the JVM looks up for itself (the file replaces the system resolver).
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let h = h.trim();
        if !h.is_empty() {
            let ip = try_resolve_ipv4(h).unwrap_or_else(|| "127.0.0.1".into());
            lines.push(format!("{ip} {h}"));
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/it-java");
    std::fs::create_dir_all(&dir).expect("create target/it-java");
    let file = dir.join(format!("hosts-{}", std::process::id()));
    std::fs::write(&file, lines.join("\n") + "\n").expect("write the JVM hosts file");
    vec![format!("-Djdk.net.hosts.file={}", file.display())]
}

/// Runs `cmd` to its end; panics with its output unless it succeeded.
pub(crate) fn run_checked(what: &str, cmd: &mut std::process::Command) {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("{what}: cannot run {cmd:?}: {e} (JDK 17 and Maven are needed)")
    });
    assert_succeeded(what, &out);
}

/// Panics with the output of `what` (a process that has ended) unless it succeeded.
pub(crate) fn assert_succeeded(what: &str, out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Bytes as a token of the Java interop program's specs and dumps: `x` and lower-case hex
/// (`x` alone is empty).
pub fn spec_bytes(b: &[u8]) -> String {
    let mut s = String::with_capacity(1 + 2 * b.len());
    s.push('x');
    for byte in b {
        s.push_str(&format!("{byte:02x}"));
    }
    s
}

/// Runs the Java interop program (`tests/java/interop/run`, the Java client from Maven Central)
/// on the spec file `spec` against the test cluster; panics with its output if it fails. The
/// spec's format is in `tests/java/interop/Interop.java`.
pub fn run_java_interop(spec: &std::path::Path) {
    let repo = env!("CARGO_MANIFEST_DIR");
    run_checked(
        "the Java side",
        std::process::Command::new(format!("{repo}/tests/java/interop/run"))
            .arg("--zk")
            .arg(zk())
            .arg(spec)
            .env("HBASE_INTEROP_JAVA_OPTS", java_resolver_opts().join(" ")),
    );
}

/// Runs `program`, another program of `tests/java/interop/` (on hbase-shaded-client's
/// classpath, no cluster), with `args`: its standard output; panics with its output unless it
/// succeeded.
pub fn run_java_program<S: AsRef<std::ffi::OsStr>>(program: &str, args: &[S]) -> String {
    let repo = env!("CARGO_MANIFEST_DIR");
    stdout_of(
        &format!("the Java side ({program}; JDK 17 and Maven are needed)"),
        std::process::Command::new(format!("{repo}/tests/java/interop/run"))
            .args(["--program", program])
            .args(args),
    )
}

/// Runs `cmd` (`what` names it in a failure) to its end: its standard output, as UTF-8;
/// panics with its output unless it succeeded.
pub fn stdout_of(what: &str, cmd: &mut std::process::Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert_succeeded(what, &out);
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("{what}: output not UTF-8: {e}"))
}

/// The IPv4 address of `host` (a target of the address map), by the system resolver.
fn resolve_ipv4(host: &str) -> String {
    try_resolve_ipv4(host)
        .unwrap_or_else(|| panic!("cannot resolve {host} (a target of HBASE_ADDRESS_MAP)"))
}

fn try_resolve_ipv4(host: &str) -> Option<String> {
    use std::net::ToSocketAddrs;
    if host.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some(host.to_string());
    }
    (host, 0)
        .to_socket_addrs()
        .ok()?
        .find(|a| a.is_ipv4())
        .map(|a| a.ip().to_string())
}

/// How many live region servers the test cluster has: `HBASE_TEST_REGION_SERVERS`, default 3
/// (`scripts/hbase-local`'s).
pub fn region_servers_expected() -> usize {
    std::env::var("HBASE_TEST_REGION_SERVERS")
        .ok()
        .map(|n| {
            n.parse()
                .unwrap_or_else(|_| panic!("HBASE_TEST_REGION_SERVERS={n:?} is not a number"))
        })
        .unwrap_or(3)
}

/// A client with test-friendly timeouts.
pub async fn client() -> Client {
    let config = config_builder().build().expect("config");
    Client::connect(config).await.unwrap_or_else(|e| {
        panic!(
            "cannot reach HBase at {} (run `scripts/hbase-local start`): {e}",
            config_builder()
                .build()
                .expect("config")
                .registry_description()
        )
    })
}

/// A client whose every server connection goes through `proxy` (which relays to the address
/// `HBASE_ADDRESS_MAP` gives); `tune` adjusts the config (timeouts, retries).
pub async fn proxied_client(
    proxy: &proxy::FaultProxy,
    tune: impl FnOnce(ClientConfigBuilder) -> ClientConfigBuilder,
) -> Client {
    let builder = ClientConfig::builder(zk()).address_mapper(proxy.mapper());
    let config = tune(builder).build().expect("config");
    Client::connect(config)
        .await
        .expect("connect through the proxy")
}

/// The balancer switch, shared by the tests of one process: [`balancer_off`] holders keep it
/// off together, [`balancer_exclusive`] waits until none holds it.
static BALANCER_TURN: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());
/// (holders, whether it was on before the first holder).
static BALANCER_HOLDERS: tokio::sync::Mutex<(usize, bool)> =
    tokio::sync::Mutex::const_new((0, false));

/// Keeps the balancer off until [`BalancerOff::release`]: regions moved by a test stay where it
/// put them. The last holder of the process restores the switch as the first one found it.
pub struct BalancerOff {
    admin: Admin,
    _turn: tokio::sync::RwLockReadGuard<'static, ()>,
}

/// Turns the balancer off (if no other test of this process already holds it off).
pub async fn balancer_off(admin: &Admin) -> BalancerOff {
    let turn = BALANCER_TURN.read().await;
    let mut holders = BALANCER_HOLDERS.lock().await;
    if holders.0 == 0 {
        holders.1 = admin
            .set_balancer_enabled(false)
            .await
            .expect("switch the balancer off");
    }
    holders.0 += 1;
    BalancerOff {
        admin: admin.clone(),
        _turn: turn,
    }
}

impl BalancerOff {
    /// Gives the switch back; the last holder turns the balancer on again if it was on.
    pub async fn release(self) {
        let mut holders = BALANCER_HOLDERS.lock().await;
        holders.0 -= 1;
        if holders.0 == 0 && holders.1 {
            self.admin
                .set_balancer_enabled(true)
                .await
                .expect("switch the balancer back on");
        }
    }
}

/// Exclusive use of the balancer switch (for a test that flips it), once no [`balancer_off`]
/// holder runs.
pub async fn balancer_exclusive() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    BALANCER_TURN.write().await
}

/// A `ycsb` command line split into its arguments (whitespace-separated, no quoting).
pub fn ycsb_args(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

/// Runs `ycsb line` in this process and returns its standard output; panics, naming the line,
/// if it fails.
pub async fn ycsb(line: &str) -> String {
    match ycsb::execute(&ycsb_args(line)).await {
        Ok(out) => out.stdout,
        Err(e) => panic!("ycsb {line}: {e}"),
    }
}

/// The number in a YCSB report line `[metric], measurement, N`; panics if there is none.
pub fn ycsb_count(report: &str, metric: &str, measurement: &str) -> u64 {
    let prefix = format!("[{metric}], {measurement}, ");
    report
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count [{metric}], {measurement} in\n{report}"))
}

/// Resident memory of this process in KiB (`VmRSS` of /proc/self/status).
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// A name unique to this test run, `TABLE_PREFIX` + `prefix` + process id + clock + a count
/// of the names this process made. The clock tells apart processes that reused a process id;
/// the count tells apart the parallel tests of one process, which can read the clock in the
/// same nanosecond.
pub fn unique_name(prefix: &str) -> String {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{TABLE_PREFIX}{prefix}_{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000,
        MADE.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether `needle` occurs in `haystack` (an empty needle always does).
pub fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// A table name (in the default namespace) unique to this test run; starts with
/// [`TABLE_PREFIX`].
pub fn unique_table(prefix: &str) -> TableName {
    TableName::parse(&unique_name(prefix)).unwrap()
}

/// Creates `name` with family `cf`, split at `splits`.
pub async fn create_table(client: &Client, name: &TableName, splits: &[&str]) {
    let desc = TableDescriptor::new(name.clone()).family(ColumnFamily::new("cf"));
    let keys: Vec<bytes::Bytes> = splits
        .iter()
        .map(|s| bytes::Bytes::copy_from_slice(s.as_bytes()))
        .collect();
    client
        .admin()
        .create_table(&desc, &keys)
        .await
        .expect("create table");
}

/// The master's snapshot procedures (class `…SnapshotProcedure`; HBase 2.6+ runs one per
/// snapshot a client sends with a nonce), as [`Admin::procedures`] lists them now.
pub async fn snapshot_procedures(admin: &Admin) -> Vec<hbase_client::admin::ProcedureInfo> {
    admin
        .procedures()
        .await
        .expect("list the master's procedures")
        .into_iter()
        .filter(|p| p.class_name.ends_with(".SnapshotProcedure"))
        .collect()
}

/// The procedures of `later` whose ids `earlier` does not have.
pub fn procedures_added(
    earlier: &[hbase_client::admin::ProcedureInfo],
    later: Vec<hbase_client::admin::ProcedureInfo>,
) -> Vec<hbase_client::admin::ProcedureInfo> {
    later
        .into_iter()
        .filter(|p| !earlier.iter().any(|e| e.id == p.id))
        .collect()
}

/// The rows of `name`, counted by a full scan.
pub async fn count_rows(client: &Client, name: &TableName) -> usize {
    client
        .table(&name.to_string())
        .expect("table handle")
        .scan(hbase_client::Scan::new())
        .collect_all()
        .await
        .expect("scan")
        .len()
}

/// Disables and deletes `name`.
pub async fn drop_table(client: &Client, name: &TableName) {
    let admin = client.admin();
    admin.disable_table(name).await.expect("disable");
    admin.delete_table(name).await.expect("delete");
}

/// The client's counters as one line: totals (relocations, reconnects, retries), retries by
/// cause, then errors, retries and relocations per server.
pub fn stats_line(s: &StatsSnapshot) -> String {
    let mut line = format!(
        "calls {}, Multi calls {}, errors {}, retries {}, relocations {}, connects {}, reconnects {}, failed connects {}, read timeouts {}, meta lookups {}, meta cache misses {}",
        s.total(|x| x.calls),
        s.total(|x| x.multi_calls),
        s.total(|x| x.errors),
        s.total(|x| x.retries),
        s.total(|x| x.relocations),
        s.total(|x| x.connects),
        s.reconnects(),
        s.total(|x| x.failed_connects),
        s.total(|x| x.read_timeouts),
        s.meta_lookups,
        s.meta_cache_misses,
    );
    if !s.retries_by_cause.is_empty() {
        let causes: Vec<String> = s
            .retries_by_cause
            .iter()
            .map(|(cause, n)| format!("{cause} {n}"))
            .collect();
        line.push_str(&format!("; retries by cause: {}", causes.join(", ")));
    }
    for srv in &s.servers {
        if srv.retries > 0 || srv.relocations > 0 || srv.errors > 0 {
            line.push_str(&format!(
                "; {}: {} errors, {} retries, {} relocations, {} connects",
                srv.server, srv.errors, srv.retries, srv.relocations, srv.connects
            ));
        }
    }
    line
}

/// Runs a whole scenario within `secs`; a hang fails the test instead of blocking CI. (A
/// bound on a hang, not a speed assertion: it is far above what any scenario needs.)
pub async fn bounded<T>(secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("scenario did not finish within {secs} s"))
}

/// The server hosting `row` of `table` now, per `hbase:meta`.
pub async fn server_of(client: &Client, table: &TableName, row: &str) -> hbase_client::ServerName {
    client
        .admin()
        .region_for_row(table, row.as_bytes())
        .await
        .expect("region of row")
        .server
        .expect("region assigned")
}

/// A new table of one region (family `cf`), its location known to `client` (one put of row
/// "warm"), and `proxy`'s control of the region's server.
pub async fn one_region_table(
    client: &Client,
    proxy: &proxy::FaultProxy,
    prefix: &str,
) -> (
    TableName,
    hbase_client::Table,
    std::sync::Arc<proxy::ProxyControl>,
) {
    let name = unique_table(prefix);
    create_table(client, &name, &[]).await;
    let table = client.table(&name.to_string()).unwrap();
    table
        .put(hbase_client::Put::new("warm").add("cf", "q", "x"))
        .await
        .unwrap();
    let server = server_of(client, &name, "warm").await.address();
    (name, table, proxy.control(&server))
}

/// Runs example `name` of `hbase-client/examples/` (built by cargo first if needed) with
/// `args`, and returns its standard output; panics with its standard error if it fails or is
/// still running after 10 minutes (which covers building it).
pub fn run_example(name: &str, args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = std::process::Command::new(cargo)
        .args([
            "run",
            "--quiet",
            "-p",
            "hbase-client",
            "--example",
            name,
            "--",
        ])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cargo runs");
    // Read both pipes while it runs, so that a full pipe cannot stall it.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).map(|_| s)
    });
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(600);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the example") {
            break status;
        }
        if std::time::Instant::now() > give_up {
            let _ = child.kill();
            panic!("example {name} still running after 10 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = out.join().expect("reader").unwrap_or_default();
    let err = err.join().expect("reader").unwrap_or_default();
    assert!(
        status.success(),
        "example {name} {args:?}: {status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    out
}

/// A small deterministic generator of `u64`s (xorshift64; `seed` must not be 0): test cases
/// drawn the same on every run.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod unique_name_tests {
    use std::collections::HashSet;

    /// The tests of one binary run on parallel threads and each makes its table at about the
    /// same time: two threads that read the clock in the same nanosecond got the same name, and
    /// the second create failed with TableExistsException (tests/scan.rs in CI, stop 29).
    #[test]
    fn names_made_at_once_on_parallel_threads_are_distinct() {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..20_000)
                        .map(|_| super::unique_name("t"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut seen = HashSet::new();
        for t in threads {
            for name in t.join().unwrap() {
                assert!(seen.insert(name.clone()), "{name} was made twice");
            }
        }
    }
}
