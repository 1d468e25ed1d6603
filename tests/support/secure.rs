//! The secured local clusters of `scripts/hbase-local` (its Kerberos and TLS modes), and a raw
//! byte relay that sees what travels on the wire.
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
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

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

/// A plain TCP relay in front of loopback servers, through the client's address mapper: it
/// copies bytes both ways, keeps a copy of everything it relayed, and can close every open
/// connection (so the client must connect, and authenticate, again).
#[derive(Clone, Default)]
pub struct Relay {
    inner: Arc<RelayInner>,
}

struct RelayInner {
    listeners: Mutex<HashMap<String, String>>,
    seen: Mutex<Vec<u8>>,
    accepted: AtomicU64,
    resets: watch::Sender<u64>,
}

impl Default for RelayInner {
    fn default() -> Self {
        RelayInner {
            listeners: Mutex::new(HashMap::new()),
            seen: Mutex::new(Vec::new()),
            accepted: AtomicU64::new(0),
            resets: watch::channel(0).0,
        }
    }
}

/// Most bytes the relay keeps (then it keeps the latest).
const MAX_SEEN: usize = 64 << 20;

impl Relay {
    /// A relay with no listeners yet; they appear as the client maps addresses.
    pub fn new() -> Relay {
        Relay::default()
    }

    /// The address mapper to give `ClientConfigBuilder::address_mapper`.
    pub fn mapper(&self) -> impl Fn(&str) -> String + Send + Sync + 'static {
        let inner = self.inner.clone();
        move |addr: &str| RelayInner::local_for(&inner, addr)
    }

    /// Everything relayed so far, both directions.
    pub fn seen(&self) -> Vec<u8> {
        self.inner.seen.lock().unwrap().clone()
    }

    /// Whether `needle` appears in what was relayed.
    pub fn saw(&self, needle: &[u8]) -> bool {
        self.inner
            .seen
            .lock()
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.inner.accepted.load(SeqCst)
    }

    /// Closes every connection open now (both sides).
    pub fn close_all(&self) {
        self.inner.resets.send_modify(|n| *n += 1);
    }
}

impl RelayInner {
    fn local_for(inner: &Arc<RelayInner>, upstream: &str) -> String {
        let mut map = inner.listeners.lock().unwrap();
        if let Some(local) = map.get(upstream) {
            return local.clone();
        }
        let host = upstream.rsplit_once(':').map_or(upstream, |(h, _)| h);
        assert!(
            host == "localhost" || host.starts_with("127."),
            "the relay serves loopback servers only, not {upstream}"
        );
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let local = std_listener.local_addr().expect("local addr").to_string();
        let listener = TcpListener::from_std(std_listener).expect("inside a tokio runtime");
        // The relay dials what the server advertises (its name, so TLS and Kerberos see it).
        tokio::spawn(accept_loop(
            listener,
            upstream.to_string(),
            Arc::downgrade(inner),
        ));
        map.insert(upstream.to_string(), local.clone());
        local
    }
}

async fn accept_loop(listener: TcpListener, upstream: String, inner: std::sync::Weak<RelayInner>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let Some(relay) = inner.upgrade() else { return };
        relay.accepted.fetch_add(1, SeqCst);
        let resets = relay.resets.subscribe();
        let upstream = upstream.clone();
        let weak = inner.clone();
        tokio::spawn(async move {
            let Ok(server) = TcpStream::connect(&upstream).await else {
                return;
            };
            pipe(client, server, weak, resets).await;
        });
    }
}

async fn pipe(
    client: TcpStream,
    server: TcpStream,
    inner: std::sync::Weak<RelayInner>,
    mut resets: watch::Receiver<u64>,
) {
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let up = tokio::spawn(copy(cr, sw, inner.clone()));
    let down = tokio::spawn(copy(sr, cw, inner));
    let _ = resets.changed().await;
    // Stop both directions; dropping the halves closes both sockets.
    up.abort();
    down.abort();
}

async fn copy(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    inner: std::sync::Weak<RelayInner>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some(relay) = inner.upgrade() {
            let mut seen = relay.seen.lock().unwrap();
            if seen.len() + n > MAX_SEEN {
                let excess = (seen.len() + n - MAX_SEEN).min(seen.len());
                seen.drain(..excess);
            }
            seen.extend_from_slice(&buf[..n]);
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
