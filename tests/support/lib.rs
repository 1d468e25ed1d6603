//! Shared setup for the integration tests in `tests/`. They run against the real HBase started by
//! `scripts/hbase-local start`; `HBASE_ZK` overrides its ZooKeeper address.

pub mod browser;
pub mod proxy;

use std::time::{SystemTime, UNIX_EPOCH};

use hbase_client::{
    Client, ClientConfig, ClientConfigBuilder, ColumnFamily, TableDescriptor, TableName,
};

/// ZooKeeper address of the test cluster.
pub fn zk() -> String {
    std::env::var("HBASE_ZK").unwrap_or_else(|_| "127.0.0.1:2181".into())
}

/// A client with test-friendly timeouts.
pub async fn client() -> Client {
    let config = ClientConfig::builder(zk()).build().expect("config");
    Client::connect(config).await.unwrap_or_else(|e| {
        panic!(
            "cannot reach HBase at {} (run `scripts/hbase-local start`): {e}",
            zk()
        )
    })
}

/// A client whose every server connection goes through `proxy`; `tune` adjusts the config
/// (timeouts, retries).
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

/// A table name unique to this test run.
pub fn unique_table(prefix: &str) -> TableName {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    TableName::parse(&format!(
        "{prefix}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000
    ))
    .unwrap()
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

/// Disables and deletes `name`.
pub async fn drop_table(client: &Client, name: &TableName) {
    let admin = client.admin();
    admin.disable_table(name).await.expect("disable");
    admin.delete_table(name).await.expect("delete");
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

/// The server hosting `hbase:meta` in the local cluster, from `scripts/hbase-local status`
/// (run with this process's environment, so it names the cluster the tests use).
pub fn meta_server() -> hbase_client::ServerName {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/hbase-local");
    let out = std::process::Command::new(script)
        .arg("status")
        .output()
        .expect("run scripts/hbase-local status");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("meta on:"))
        .and_then(|s| hbase_client::ServerName::parse_comma_form(s.trim()))
        .unwrap_or_else(|| panic!("no meta server in status:\n{text}"))
}

/// Tests of this process holding the balancer off, and its state before the first of them.
static BALANCER_OFF: std::sync::Mutex<(usize, bool)> = std::sync::Mutex::new((0, true));

/// Switches the balancer off for a test, and back on (to what it was before) when the last
/// test of this process holding it off drops its guard, also when a test fails: other tests
/// on the same cluster expect it on.
pub async fn balancer_off(client: &Client) -> BalancerGuard {
    let was_on = client
        .admin()
        .set_balancer_enabled(false)
        .await
        .expect("switch the balancer off");
    let mut held = BALANCER_OFF.lock().unwrap_or_else(|e| e.into_inner());
    if held.0 == 0 {
        held.1 = was_on;
    }
    held.0 += 1;
    BalancerGuard {
        config: client.config().clone(),
    }
}

/// Restores the balancer switch on drop; see [`balancer_off`].
pub struct BalancerGuard {
    config: ClientConfig,
}

impl Drop for BalancerGuard {
    fn drop(&mut self) {
        let on = {
            let mut held = BALANCER_OFF.lock().unwrap_or_else(|e| e.into_inner());
            held.0 -= 1;
            if held.0 > 0 {
                return;
            }
            held.1
        };
        let config = self.config.clone();
        // Drop cannot await, and may run inside a runtime: restore from a thread of its own.
        let restored = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime to restore the balancer");
            rt.block_on(async {
                let client = Client::connect(config).await?;
                client.admin().set_balancer_enabled(on).await
            })
        })
        .join();
        if !matches!(restored, Ok(Ok(_))) {
            eprintln!("could not restore the balancer switch to {on}: {restored:?}");
        }
    }
}
