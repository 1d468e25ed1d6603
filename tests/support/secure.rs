//! The secured local clusters of `scripts/hbase-local` (its Kerberos and TLS modes). What
//! travels on their wire is seen through [`crate::relay::Relay::new`].
//!
//! Each cluster is started on first use and left running for later tests and test binaries;
//! `scripts/test` stops the ones it did not find running. Directories and ports (defaults beside
//! the main cluster's 2181 and the fault cluster's 2191):
//!
//! | cluster  | mode | state directory        | ZooKeeper (env, default)      | master  | KDC               |
//! |----------|------|------------------------|-------------------------------|---------|-------------------|
//! | Kerberos | `kerberos,tls`: Kerberos required, TLS optional (plaintext too; client certificates wanted) | `target/hbase-kerberos`| `HBASE_KERBEROS_ZK_PORT` 2193 | ZK+13819| `HBASE_KDC_PORT` 17088 |
//! | TLS      | `tls`: TLS required, client certificates needed, SIMPLE | `target/hbase-tls`     | `HBASE_TLS_ZK_PORT` 2194      | ZK+13819| -                 |

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// A running secured cluster and what its `security.env` says.
pub struct SecureCluster {
    mode: &'static str,
    /// `HBASE_LOCAL_EXTRA_SITE` and `HBASE_LOCAL_TLS_CLIENT_AUTH` of the mode.
    extra_site: &'static str,
    client_auth: &'static str,
    dir: PathBuf,
    zk_port: u16,
    env: HashMap<String, String>,
}

fn port_from_env(var: &str, default: u16) -> u16 {
    std::env::var(var)
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(default)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

impl SecureCluster {
    fn script(&self, args: &[&str]) -> std::process::Output {
        let root = root();
        let mut cmd = Command::new(root.join("scripts/hbase-local"));
        cmd.args(args)
            .env("HBASE_LOCAL_DIR", &self.dir)
            .env("HBASE_LOCAL_LIB_DIR", root.join("target/hbase-local/lib"))
            .env("HBASE_LOCAL_SECURITY", self.mode)
            .env("HBASE_LOCAL_ZK_PORT", self.zk_port.to_string())
            .env(
                "HBASE_LOCAL_MASTER_PORT",
                (self.zk_port + 13819).to_string(),
            )
            .env(
                "HBASE_LOCAL_KDC_PORT",
                port_from_env("HBASE_KDC_PORT", 17088).to_string(),
            )
            .env("HBASE_LOCAL_REGIONSERVERS", "2")
            .env("HBASE_LOCAL_HEAP", "1g")
            .env("HBASE_LOCAL_EXTRA_SITE", self.extra_site)
            .env("HBASE_LOCAL_TLS_CLIENT_AUTH", self.client_auth);
        cmd.output().expect("run scripts/hbase-local")
    }

    fn start(
        mode: &'static str,
        extra_site: &'static str,
        client_auth: &'static str,
        dir: &str,
        zk_port: u16,
    ) -> SecureCluster {
        let mut cluster = SecureCluster {
            mode,
            extra_site,
            client_auth,
            dir: root().join(dir),
            zk_port,
            env: HashMap::new(),
        };
        let env_file = cluster.dir.join("run/security/security.env");
        let mut running = cluster.script(&["status"]).status.success();
        // A cluster left running by an older test binary in another mode is restarted.
        let same_mode = std::fs::read_to_string(&env_file)
            .is_ok_and(|t| t.lines().any(|l| l == format!("SECURITY={mode}")));
        if running && !same_mode {
            let out = cluster.script(&["stop"]);
            assert!(
                out.status.success(),
                "stop the {mode} cluster of another mode"
            );
            running = false;
        }
        if !running {
            let out = cluster.script(&["start"]);
            assert!(
                out.status.success(),
                "the {mode} cluster failed to start:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let text = std::fs::read_to_string(&env_file)
            .unwrap_or_else(|e| panic!("read {}: {e}", env_file.display()));
        cluster.env = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        cluster
    }

    /// The Kerberos cluster (servers offer all three protection levels), which also takes TLS
    /// (client certificates wanted, not needed) beside plaintext. Points this process's
    /// MIT Kerberos at its KDC (`KRB5_CONFIG`) unless that is set already (scripts/test sets it).
    pub fn kerberos() -> &'static SecureCluster {
        static CLUSTER: OnceLock<SecureCluster> = OnceLock::new();
        CLUSTER.get_or_init(|| {
            let c = SecureCluster::start(
                "kerberos,tls",
                // Kerberos over plain TCP and over TLS on the same servers.
                "hbase.server.netty.tls.supportplaintext=true",
                "WANT",
                "target/hbase-kerberos",
                port_from_env("HBASE_KERBEROS_ZK_PORT", 2193),
            );
            let want = c.get("KRB5_CONFIG").to_string();
            if std::env::var("KRB5_CONFIG").ok().as_deref() != Some(want.as_str()) {
                // Before any Kerberos call of this process; see the module comment.
                std::env::set_var("KRB5_CONFIG", &want);
            }
            c
        })
    }

    /// The TLS cluster (client certificates required, no plaintext).
    pub fn tls() -> &'static SecureCluster {
        static CLUSTER: OnceLock<SecureCluster> = OnceLock::new();
        CLUSTER.get_or_init(|| {
            SecureCluster::start(
                "tls",
                "",
                "NEED",
                "target/hbase-tls",
                port_from_env("HBASE_TLS_ZK_PORT", 2194),
            )
        })
    }

    /// ZooKeeper `host:port`.
    pub fn zk(&self) -> String {
        format!("127.0.0.1:{}", self.zk_port)
    }

    /// A `security.env` value (paths, principals).
    pub fn get(&self, key: &str) -> &str {
        self.env.get(key).unwrap_or_else(|| {
            panic!(
                "no {key} in {}/run/security/security.env",
                self.dir.display()
            )
        })
    }
}
