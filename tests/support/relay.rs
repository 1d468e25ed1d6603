//! The tests' byte relay: it copies TCP bytes both ways between a client and loopback
//! servers, for what the HBase-aware [`FaultProxy`](crate::proxy::FaultProxy) does not do.
//!
//! - In front of one address ([`Relay::to`]): a ZooKeeper session (the client's, or a region
//!   server's); as a SOCKS5 proxy ([`Relay::socks5`]): a region server's own outgoing RPCs (to
//!   the master and to other region servers), through Hadoop's `SocksSocketFactory`.
//! - Through the client's address mapper ([`Relay::new`], [`Relay::mapper`]): a listener per
//!   server the client dials, which also keeps a copy of everything relayed ([`Relay::saw`]),
//!   to see what travels on the wire of a secured connection.
//!
//! [`Relay::partition`] drops everything both ways: no byte is forwarded on the open
//! connections (their sockets stay open, as with a pulled cable) and new connections are
//! accepted and then hear nothing. [`Relay::heal`] lets the bytes flow again; connections that
//! the peers gave up meanwhile are closed by them. [`Relay::close_all`] closes every open
//! connection, both sides.
//!
//! Loopback only; every task belongs to the relay and ends when it is dropped.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// Where a listener sends what it accepts.
#[derive(Debug, Clone)]
enum Target {
    /// Always this address.
    Fixed(String),
    /// Wherever the client's SOCKS5 CONNECT asks (loopback only).
    Socks,
}

/// Most bytes a recording relay keeps (then it keeps the latest).
const MAX_SEEN: usize = 64 << 20;

/// How long the relay waits for a loopback server to take its connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

struct Shared {
    /// Keep a copy of what is relayed (the mapper's relays, which look at the wire).
    record: bool,
    partitioned: AtomicBool,
    /// The relay is dropped: every connection ends.
    closed: AtomicBool,
    /// [`Relay::close_all`] calls so far: a connection opened before the latest one ends.
    resets: AtomicU64,
    /// Bumped on every change of the three above.
    changes: watch::Sender<u64>,
    accepted: AtomicU64,
    bytes: AtomicU64,
    /// Local ports of the relay's connections to its upstreams, newest last.
    upstream_ports: Mutex<Vec<u16>>,
    seen: Mutex<Vec<u8>>,
    /// The mapper's listeners: upstream address → local address.
    listeners: Mutex<HashMap<String, String>>,
    accept_tasks: Mutex<Vec<AbortHandle>>,
}

impl Shared {
    fn new(record: bool) -> Arc<Shared> {
        Arc::new(Shared {
            record,
            partitioned: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            resets: AtomicU64::new(0),
            changes: watch::channel(0).0,
            accepted: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            upstream_ports: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
            listeners: Mutex::new(HashMap::new()),
            accept_tasks: Mutex::new(Vec::new()),
        })
    }

    fn changed(&self) {
        self.changes.send_modify(|v| *v += 1);
    }

    /// Whether a connection opened after `reset` resets must end.
    fn ended(&self, reset: u64) -> bool {
        self.closed.load(SeqCst) || self.resets.load(SeqCst) != reset
    }

    /// Waits until bytes may flow (not partitioned); `Err` when the connection must end.
    async fn until_open(&self, reset: u64, changes: &mut watch::Receiver<u64>) -> Result<(), ()> {
        loop {
            if self.ended(reset) {
                return Err(());
            }
            if !self.partitioned.load(SeqCst) {
                return Ok(());
            }
            changes.changed().await.map_err(|_| ())?;
        }
    }

    fn keep(&self, bytes: &[u8]) {
        if !self.record {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() + bytes.len() > MAX_SEEN {
            let excess = (seen.len() + bytes.len() - MAX_SEEN).min(seen.len());
            seen.drain(..excess);
        }
        seen.extend_from_slice(bytes);
    }

    /// A listener relaying to `target`; returns its address.
    fn listen(self: &Arc<Shared>, listener: TcpListener, target: Target) -> SocketAddr {
        let addr = listener.local_addr().expect("the relay's local address");
        let task = tokio::spawn(accept_loop(listener, target, self.clone())).abort_handle();
        self.accept_tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(task);
        addr
    }

    /// The local address of the mapper's listener for `upstream`, opened on first use.
    fn local_for(self: &Arc<Shared>, upstream: &str) -> String {
        let mut map = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(local) = map.get(upstream) {
            return local.clone();
        }
        let host = upstream.rsplit_once(':').map_or(upstream, |(h, _)| h);
        assert!(
            host == "localhost" || host.starts_with("127."),
            "the relay serves loopback servers only, not {upstream}"
        );
        // Bound here, synchronously: the mapper is no async function.
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a relay");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let listener = TcpListener::from_std(std_listener).expect("inside a tokio runtime");
        // The relay dials what the server advertises (its name, so TLS and Kerberos see it).
        let local = self
            .listen(listener, Target::Fixed(upstream.to_string()))
            .to_string();
        map.insert(upstream.to_string(), local.clone());
        local
    }
}

/// A relay: listeners on `127.0.0.1`, each relaying to a fixed address or, as a SOCKS5 proxy,
/// to the address each connection asks for. Dropping it ends every connection.
pub struct Relay {
    /// The listener of [`Relay::to`] and [`Relay::socks5`].
    addr: Option<SocketAddr>,
    shared: Arc<Shared>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.closed.store(true, SeqCst);
        for task in self
            .shared
            .accept_tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            task.abort();
        }
        // Wakes the connection tasks so they notice the relay is gone.
        self.shared.changed();
    }
}

impl Default for Relay {
    fn default() -> Relay {
        Relay::new()
    }
}

impl Relay {
    /// A relay to `target` (`host:port`, loopback).
    pub async fn to(target: &str) -> Relay {
        Relay::start(Target::Fixed(target.to_string())).await
    }

    /// A SOCKS5 proxy (no authentication, CONNECT only) to loopback addresses.
    pub async fn socks5() -> Relay {
        Relay::start(Target::Socks).await
    }

    async fn start(target: Target) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a relay");
        let shared = Shared::new(false);
        let addr = shared.listen(listener, target);
        Relay {
            addr: Some(addr),
            shared,
        }
    }

    /// A relay with no listener yet, which keeps a copy of what it relays: its listeners
    /// appear as the client maps addresses through [`Relay::mapper`].
    pub fn new() -> Relay {
        Relay {
            addr: None,
            shared: Shared::new(true),
        }
    }

    /// The address mapper to give `ClientConfigBuilder::address_mapper`: each server address
    /// the client dials is mapped to a listener of this relay in front of it.
    pub fn mapper(&self) -> impl Fn(&str) -> String + Send + Sync + 'static {
        let shared = self.shared.clone();
        move |addr: &str| shared.local_for(addr)
    }

    /// `127.0.0.1:<port>` of the listener of [`Relay::to`] or [`Relay::socks5`].
    pub fn address(&self) -> String {
        self.addr
            .expect("a relay of Relay::to or Relay::socks5 (Relay::new has only the mapper's)")
            .to_string()
    }

    /// Drops everything both ways, on open and new connections, until [`Relay::heal`].
    pub fn partition(&self) {
        self.shared.partitioned.store(true, SeqCst);
        self.shared.changed();
    }

    /// Lets bytes flow again.
    pub fn heal(&self) {
        self.shared.partitioned.store(false, SeqCst);
        self.shared.changed();
    }

    /// Closes every connection open now (both sides); new ones are relayed as before.
    pub fn close_all(&self) {
        self.shared.resets.fetch_add(1, SeqCst);
        self.shared.changed();
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(SeqCst)
    }

    /// Bytes forwarded so far (both ways).
    pub fn bytes(&self) -> u64 {
        self.shared.bytes.load(SeqCst)
    }

    /// The local ports of the connections the relay opened to its upstreams, oldest first
    /// (how the upstream sees them, e.g. in ZooKeeper's `cons`).
    pub fn upstream_ports(&self) -> Vec<u16> {
        self.shared
            .upstream_ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Everything relayed so far, both directions (a relay of [`Relay::new`]).
    pub fn seen(&self) -> Vec<u8> {
        self.shared
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether `needle` appears in what was relayed (a relay of [`Relay::new`]).
    pub fn saw(&self, needle: &[u8]) -> bool {
        crate::contains_bytes(
            &self.shared.seen.lock().unwrap_or_else(|e| e.into_inner()),
            needle,
        )
    }
}

async fn accept_loop(listener: TcpListener, target: Target, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        shared.accepted.fetch_add(1, SeqCst);
        let (target, shared) = (target.clone(), shared.clone());
        tokio::spawn(async move {
            let _ = serve(client, target, shared).await;
        });
    }
}

async fn serve(mut client: TcpStream, target: Target, shared: Arc<Shared>) -> std::io::Result<()> {
    let reset = shared.resets.load(SeqCst);
    let mut changes = shared.changes.subscribe();
    // A partition also swallows the handshake of a connection accepted during it.
    if shared.until_open(reset, &mut changes).await.is_err() {
        return Ok(());
    }
    let upstream = match target {
        Target::Fixed(addr) => addr,
        Target::Socks => socks5_handshake(&mut client).await?,
    };
    let host = upstream
        .rsplit_once(':')
        .map_or(upstream.as_str(), |(h, _)| h);
    if !(host.starts_with("127.") || host == "localhost") {
        return Ok(()); // loopback only
    }
    let server = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&upstream)).await {
        Ok(Ok(s)) => s,
        _ => return Ok(()),
    };
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    if let Ok(local) = server.local_addr() {
        shared
            .upstream_ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(local.port());
    }
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    // Either direction ending closes both.
    tokio::select! {
        _ = pump(cr, sw, &shared, reset) => {}
        _ = pump(sr, cw, &shared, reset) => {}
    }
    Ok(())
}

/// Copies `from` to `to` while not partitioned, holding the bytes back while partitioned,
/// until either side closes or the connection must end.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    shared: &Shared,
    reset: u64,
) -> std::io::Result<()> {
    let mut changes = shared.changes.subscribe();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if shared.until_open(reset, &mut changes).await.is_err() {
            return Ok(());
        }
        tokio::select! {
            n = from.read(&mut buf) => {
                let n = n?;
                if n == 0 {
                    let _ = to.shutdown().await;
                    return Ok(());
                }
                // Bytes read just as a partition began are held until it heals.
                if shared.until_open(reset, &mut changes).await.is_err() {
                    return Ok(());
                }
                shared.keep(&buf[..n]);
                to.write_all(&buf[..n]).await?;
                shared.bytes.fetch_add(n as u64, SeqCst);
            }
            r = changes.changed() => {
                if r.is_err() {
                    return Ok(());
                }
            }
        }
    }
}

/// The server side of a SOCKS5 CONNECT without authentication (RFC 1928); returns the
/// requested `host:port`. Java's `SocksSocketImpl` offers "no authentication" and asks for an
/// IPv4 address or a domain name.
async fn socks5_handshake(c: &mut TcpStream) -> std::io::Result<String> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut head = [0u8; 2];
    c.read_exact(&mut head).await?;
    if head[0] != 5 {
        return Err(bad("not SOCKS5"));
    }
    let mut methods = vec![0u8; head[1] as usize];
    c.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        c.write_all(&[5, 0xff]).await?;
        return Err(bad("no acceptable authentication method"));
    }
    c.write_all(&[5, 0]).await?;
    let mut req = [0u8; 4];
    c.read_exact(&mut req).await?;
    if req[0] != 5 || req[1] != 1 {
        c.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
        return Err(bad("only CONNECT is supported"));
    }
    let host = match req[3] {
        1 => {
            let mut ip = [0u8; 4];
            c.read_exact(&mut ip).await?;
            std::net::Ipv4Addr::from(ip).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            c.read_exact(&mut len).await?;
            let mut name = vec![0u8; len[0] as usize];
            c.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => {
            c.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            return Err(bad("address type not supported"));
        }
    };
    let mut port = [0u8; 2];
    c.read_exact(&mut port).await?;
    // Success, bound to 0.0.0.0:0 (the client does not use it).
    c.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
    Ok(format!("{host}:{}", u16::from_be_bytes(port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> String {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = l.accept().await.unwrap();
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    async fn roundtrip(s: &mut TcpStream, msg: &[u8]) -> Vec<u8> {
        s.write_all(msg).await.unwrap();
        let mut got = vec![0u8; msg.len()];
        s.read_exact(&mut got).await.unwrap();
        got
    }

    #[tokio::test]
    async fn relays_partitions_and_heals() {
        let echo = echo_server().await;
        let relay = Relay::to(&echo).await;
        let mut s = TcpStream::connect(relay.address()).await.unwrap();
        assert_eq!(roundtrip(&mut s, b"hello").await, b"hello");
        relay.partition();
        s.write_all(b"lost?").await.unwrap();
        let mut buf = [0u8; 5];
        let read = tokio::time::timeout(Duration::from_millis(300), s.read_exact(&mut buf)).await;
        assert!(read.is_err(), "a byte crossed the partition");
        relay.heal();
        // Held back, not dropped: TCP does not lose bytes, it delays them.
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"lost?");
        assert_eq!(roundtrip(&mut s, b"again").await, b"again");
    }

    #[tokio::test]
    async fn mapper_listeners_record_and_close_all() {
        let echo = echo_server().await;
        let relay = Relay::new();
        let map = relay.mapper();
        let local = map(&echo);
        assert_eq!(map(&echo), local, "one listener per server");
        let mut s = TcpStream::connect(&local).await.unwrap();
        assert_eq!(roundtrip(&mut s, b"marker-1").await, b"marker-1");
        assert!(relay.saw(b"marker-1"));
        relay.close_all();
        let mut buf = [0u8; 1];
        assert!(
            matches!(s.read(&mut buf).await, Ok(0) | Err(_)),
            "close_all left the connection open"
        );
        // New connections are relayed as before.
        let mut again = TcpStream::connect(&local).await.unwrap();
        assert_eq!(roundtrip(&mut again, b"again").await, b"again");
        assert_eq!(relay.accepted(), 2);
    }

    #[tokio::test]
    async fn dropping_the_relay_ends_its_connections() {
        let echo = echo_server().await;
        let relay = Relay::to(&echo).await;
        let mut s = TcpStream::connect(relay.address()).await.unwrap();
        assert_eq!(roundtrip(&mut s, b"before").await, b"before");
        drop(relay);
        let mut buf = [0u8; 1];
        // The bound only turns a hang (the connection outliving the relay) into a failure.
        let read = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf)).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "a connection outlived its relay: {read:?}"
        );
    }

    #[tokio::test]
    async fn socks5_connects_where_asked() {
        let echo = echo_server().await;
        let relay = Relay::socks5().await;
        let mut s = TcpStream::connect(relay.address()).await.unwrap();
        s.write_all(&[5, 1, 0]).await.unwrap();
        let mut hello = [0u8; 2];
        s.read_exact(&mut hello).await.unwrap();
        assert_eq!(hello, [5, 0]);
        let addr: SocketAddr = echo.parse().unwrap();
        let SocketAddr::V4(v4) = addr else { panic!() };
        let mut req = vec![5, 1, 0, 1];
        req.extend_from_slice(&v4.ip().octets());
        req.extend_from_slice(&v4.port().to_be_bytes());
        s.write_all(&req).await.unwrap();
        let mut reply = [0u8; 10];
        s.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply[1], 0, "CONNECT succeeded");
        assert_eq!(roundtrip(&mut s, b"via socks").await, b"via socks");
    }
}
