//! Shared setup for the integration tests in `tests/`. They run against the real HBase started by
//! `scripts/hbase-local start`; `HBASE_ZK` overrides its ZooKeeper address.

pub mod browser;
pub mod processes;
pub mod proxy;
pub mod relay;

use std::time::{SystemTime, UNIX_EPOCH};

use hbase_client::{
    Client, ClientConfig, ClientConfigBuilder, ColumnFamily, StatsSnapshot, TableDescriptor,
    TableName,
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

/// The client's counters as one line: totals, then retries and relocations per server.
pub fn stats_line(s: &StatsSnapshot) -> String {
    let mut line = format!(
        "calls {}, Multi calls {}, errors {}, retries {}, relocations {}, meta lookups {}, meta cache misses {}",
        s.total(|x| x.calls),
        s.total(|x| x.multi_calls),
        s.total(|x| x.errors),
        s.total(|x| x.retries),
        s.total(|x| x.relocations),
        s.meta_lookups,
        s.meta_cache_misses,
    );
    for srv in &s.servers {
        if srv.retries > 0 || srv.relocations > 0 || srv.errors > 0 {
            line.push_str(&format!(
                "; {}: {} errors, {} retries, {} relocations",
                srv.server, srv.errors, srv.retries, srv.relocations
            ));
        }
    }
    line
}
