//! Values and checks the public API does not show, for the oracle tests that run the Java
//! client beside ours (`client_defaults_are_the_java_clients` in tests/hbase_site.rs,
//! `keyvalue_size_limit_is_the_java_clients` in tests/bad_input.rs). Not part of the public API.

use std::time::Duration;

use crate::error::{Error, RemoteException, Result};
use crate::ops::Mutation;
use crate::runtime::config::ClientConfig;

/// The pause `config`'s default retry policy takes before attempt `attempt + 1` after a
/// retried server exception (`NotServingRegionException`; with `overloaded`, a
/// `CallQueueTooBigException` with the server's overloaded flag), or `None` when it gives up.
pub fn backoff_pause(config: &ClientConfig, attempt: u32, overloaded: bool) -> Option<Duration> {
    let class = if overloaded {
        "org.apache.hadoop.hbase.CallQueueTooBigException"
    } else {
        "org.apache.hadoop.hbase.NotServingRegionException"
    };
    let error = Error::Remote {
        server: "rs1.example:16020".into(),
        exception: RemoteException {
            class_name: class.into(),
            message: String::new(),
            moved_to: None,
            do_not_retry: false,
            server_overloaded: overloaded,
        },
    };
    config.retry_policy().next_pause(attempt, &error)
}

/// The check every write path makes on a mutation before it is sent (`Table::put`,
/// `Table::batch`, a buffered mutator), with `max_kv` as the client's `keyvalue_max_size`.
pub fn validate_mutation(mutation: &Mutation, max_kv: usize) -> Result<()> {
    mutation.validate(max_kv)
}

/// The Kerberos principal this client asks for when it connects to a server the cluster
/// advertises as `host`, with `pattern` as the configured server principal
/// (`hbase/_HOST@REALM`), and `reverse_dns` as [`Kerberos::reverse_dns`](crate::Kerberos::reverse_dns):
/// the rule of `rpc/canonical_host.rs`.
pub async fn server_principal(pattern: &str, host: &str, reverse_dns: bool) -> String {
    crate::security::principal_of_server(pattern, host, reverse_dns).await
}
