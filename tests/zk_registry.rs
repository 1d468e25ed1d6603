//! The ZooKeeper registry's session during an outage, against the real ZooKeeper of the local
//! HBase: one reconnect attempt shared by every caller, each caller bounded by its own
//! deadline. (Apart from `tests/registry.rs`, which the version matrix also runs with
//! ZooKeeper unreachable, to prove the RPC registry never uses it.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hbase_client::{Client, ClientConfig, ErrorKind};

/// A relay in front of the real ZooKeeper that can stage an outage as a client meets it: when
/// the outage begins, every open connection is cut; during it, a connection that reconnects an
/// existing session is answered as ZooKeeper answers a session it expired (a connect response
/// with session id 0), and a connection that asks for a new session is counted and then hears
/// nothing until the outage ends, when it is relayed on (its connect request included).
struct ZkOutageRelay {
    addr: String,
    outage: tokio::sync::watch::Sender<bool>,
    new_sessions: Arc<AtomicUsize>,
    expired: Arc<AtomicUsize>,
    accept: tokio::task::AbortHandle,
}

impl Drop for ZkOutageRelay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl ZkOutageRelay {
    async fn start(upstream: String) -> ZkOutageRelay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (outage, _) = tokio::sync::watch::channel(false);
        let new_sessions = Arc::new(AtomicUsize::new(0));
        let expired = Arc::new(AtomicUsize::new(0));
        let (tx, counts) = (outage.clone(), (new_sessions.clone(), expired.clone()));
        let accept = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let (rx, upstream, counts) = (tx.subscribe(), upstream.clone(), counts.clone());
                tokio::spawn(async move {
                    let _ = Self::serve(sock, &upstream, rx, counts).await;
                });
            }
        })
        .abort_handle();
        ZkOutageRelay {
            addr,
            outage,
            new_sessions,
            expired,
            accept,
        }
    }

    async fn serve(
        mut client: tokio::net::TcpStream,
        upstream: &str,
        mut outage: tokio::sync::watch::Receiver<bool>,
        (new_sessions, expired): (Arc<AtomicUsize>, Arc<AtomicUsize>),
    ) -> std::io::Result<()> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut first = Vec::new();
        if *outage.borrow_and_update() {
            // The connect request: u32 length, protocol version (i32), last zxid seen (i64),
            // session timeout (i32), session id (i64), …
            let mut len = [0u8; 4];
            client.read_exact(&mut len).await?;
            let mut body = vec![0u8; (u32::from_be_bytes(len) as usize).min(1 << 16)];
            client.read_exact(&mut body).await?;
            let session = body
                .get(16..24)
                .map_or(0, |b| i64::from_be_bytes(b.try_into().unwrap()));
            if session != 0 {
                // Protocol version 0, timeout 0, session id 0, a 16-byte password, read-only
                // false: the session is expired.
                let mut reply = Vec::new();
                reply.extend_from_slice(&37u32.to_be_bytes());
                reply.extend_from_slice(&[0u8; 16]);
                reply.extend_from_slice(&16u32.to_be_bytes());
                reply.extend_from_slice(&[0u8; 17]);
                client.write_all(&reply).await?;
                expired.fetch_add(1, Ordering::SeqCst);
                return Ok(());
            }
            new_sessions.fetch_add(1, Ordering::SeqCst);
            if outage.wait_for(|on| !*on).await.is_err() {
                return Ok(());
            }
            first.extend_from_slice(&len);
            first.extend_from_slice(&body);
        }
        let mut server = tokio::net::TcpStream::connect(upstream).await?;
        server.write_all(&first).await?;
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
            // An outage cuts every open connection.
            _ = outage.wait_for(|on| *on) => {}
        }
        Ok(())
    }

    fn set_outage(&self, on: bool) {
        self.outage.send_replace(on);
    }

    /// Connections that asked for a new session during an outage.
    fn new_sessions(&self) -> usize {
        self.new_sessions.load(Ordering::SeqCst)
    }

    /// Reconnections of an existing session answered "expired".
    fn expired(&self) -> usize {
        self.expired.load(Ordering::SeqCst)
    }
}

/// ZooKeeper unreachable, its session expired: eight concurrent callers that need ZooKeeper
/// (the Admin's registry accessors: master, meta server, cluster id, region servers) share one
/// reconnect attempt, and each fails with a timeout at its own deadline (the operation
/// timeout, here far shorter than the connect timeout, so the attempt is still under way when
/// all of them have given up). Once ZooKeeper is back, the next call succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_reconnects_once_for_all_its_callers() {
    hbase_it::bounded(600, async {
        let relay = ZkOutageRelay::start(hbase_it::zk()).await;
        let mut builder = ClientConfig::builder(&relay.addr)
            .operation_timeout(Duration::from_secs(2))
            // Longer than every caller's deadline; the session timeout, 2/5 of which the
            // ZooKeeper client waits for a connect response, longer still.
            .connect_timeout(Duration::from_secs(20))
            .zk_session_timeout(Duration::from_secs(90));
        let map = hbase_it::address_map();
        if !map.is_empty() {
            builder = builder.address_mapper(map.clone().into_mapper());
        }
        let config = builder.build().unwrap();
        let client = Client::connect(config)
            .await
            .expect("connect through the relay");
        let admin = client.admin();
        let master = admin.master().await.unwrap();
        let meta = admin.meta_server().await.unwrap();
        let id = admin.cluster_id().await.unwrap();

        relay.set_outage(true);
        // The client's session reconnects and is told it expired.
        while relay.expired() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let callers: Vec<_> = (0..8)
            .map(|i| {
                let admin = admin.clone();
                tokio::spawn(async move {
                    match i % 4 {
                        0 => admin.master().await.map(|_| ()),
                        1 => admin.meta_server().await.map(|_| ()),
                        2 => admin.cluster_id().await.map(|_| ()),
                        _ => admin.region_servers().await.map(|_| ()),
                    }
                })
            })
            .collect();
        let mut kinds = Vec::new();
        for caller in callers {
            let e = caller.await.unwrap().expect_err("ZooKeeper is unreachable");
            kinds.push((e.kind(), e.to_string()));
        }
        let attempts = relay.new_sessions();
        eprintln!("8 callers during the outage: {attempts} new-session attempts; {kinds:?}");
        assert_eq!(attempts, 1, "new-session attempts for 8 callers: {kinds:?}");
        for (kind, e) in &kinds {
            assert_eq!(*kind, ErrorKind::Timeout, "{e}");
        }

        relay.set_outage(false);
        assert_eq!(admin.master().await.unwrap(), master);
        assert_eq!(admin.meta_server().await.unwrap(), meta);
        assert_eq!(admin.cluster_id().await.unwrap(), id);
    })
    .await;
}
