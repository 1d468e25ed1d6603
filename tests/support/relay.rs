//! A byte relay with a partition switch, for the connections the HBase-aware
//! [`FaultProxy`](crate::proxy::FaultProxy) does not carry: a ZooKeeper session (the client's,
//! or a region server's), and a region server's own outgoing RPCs (to the master and to other
//! region servers), which reach it as a SOCKS5 proxy (Hadoop's `SocksSocketFactory`).
//!
//! [`Relay::partition`] drops everything both ways: no byte is forwarded on the open
//! connections (their sockets stay open, as with a pulled cable) and new connections are
//! accepted and then hear nothing. [`Relay::heal`] lets the bytes flow again; connections that
//! the peers gave up meanwhile are closed by them.
//!
//! Loopback only; every task belongs to the relay and ends when it is dropped.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// Where a relay sends what it accepts.
#[derive(Debug, Clone)]
enum Target {
    /// Always this address.
    Fixed(String),
    /// Wherever the client's SOCKS5 CONNECT asks (loopback only).
    Socks,
}

struct Shared {
    partitioned: AtomicBool,
    changes: watch::Sender<u64>,
    accepted: AtomicU64,
    bytes: AtomicU64,
    /// Local ports of the relay's connections to its upstreams, newest last.
    upstream_ports: Mutex<Vec<u16>>,
}

/// A listener on `127.0.0.1:<port>` relaying to a fixed address or, as a SOCKS5 proxy, to
/// the address each connection asks for.
pub struct Relay {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept_task: AbortHandle,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept_task.abort();
        // Wakes the connection tasks so they notice the relay is gone.
        self.shared.changes.send_modify(|v| *v += 1);
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
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            partitioned: AtomicBool::new(false),
            changes: watch::channel(0).0,
            accepted: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            upstream_ports: Mutex::new(Vec::new()),
        });
        let accept_task =
            tokio::spawn(accept_loop(listener, target, shared.clone())).abort_handle();
        Relay {
            addr,
            shared,
            accept_task,
        }
    }

    /// `127.0.0.1:<port>` of the listener.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// Drops everything both ways, on open and new connections, until [`Relay::heal`].
    pub fn partition(&self) {
        self.shared.partitioned.store(true, SeqCst);
        self.shared.changes.send_modify(|v| *v += 1);
    }

    /// Lets bytes flow again.
    pub fn heal(&self) {
        self.shared.partitioned.store(false, SeqCst);
        self.shared.changes.send_modify(|v| *v += 1);
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

/// Waits until the relay is not partitioned (or is dropped: `Err`).
async fn until_healed(shared: &Shared, changes: &mut watch::Receiver<u64>) -> Result<(), ()> {
    while shared.partitioned.load(SeqCst) {
        changes.changed().await.map_err(|_| ())?;
    }
    Ok(())
}

async fn serve(mut client: TcpStream, target: Target, shared: Arc<Shared>) -> std::io::Result<()> {
    let mut changes = shared.changes.subscribe();
    // A partition also swallows the handshake of a connection accepted during it.
    if until_healed(&shared, &mut changes).await.is_err() {
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
    let server =
        match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&upstream)).await {
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
        _ = pump(cr, sw, &shared) => {}
        _ = pump(sr, cw, &shared) => {}
    }
    Ok(())
}

/// Copies `from` to `to` while not partitioned; holds the bytes back while partitioned.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    shared: &Shared,
) -> std::io::Result<()> {
    let mut changes = shared.changes.subscribe();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if until_healed(shared, &mut changes).await.is_err() {
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
                if until_healed(shared, &mut changes).await.is_err() {
                    return Ok(());
                }
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
