//! The RPC connection registry against the real HBase (2.6.4 by default; the version matrix
//! runs it on 2.5, 2.6 and 3.0-alpha-4): bootstrap through `ClientMetaService` on the master or
//! on region servers alone, with no ZooKeeper session at all (the client's quorum is a listener
//! that counts every connection), failover past a dead first server, and a typed error when
//! every bootstrap server is dead. (The ZooKeeper registry's session during an outage is in
//! `tests/zk_registry.rs`: the matrix runs this file with ZooKeeper unreachable.)

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hbase_client::{
    Action, Client, ClientConfig, ClientConfigBuilder, Error, ErrorKind, Get, HbaseSite,
    MutatorConfig, Put, Registry, Scan,
};

/// A TCP listener standing where a ZooKeeper quorum would be: it counts the connections it
/// is offered and closes them.
struct CountingZk {
    addr: String,
    accepted: Arc<AtomicUsize>,
}

impl CountingZk {
    async fn start() -> CountingZk {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                drop(sock);
            }
        });
        CountingZk { addr, accepted }
    }

    fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// A loopback address nothing listens on (a port bound and released).
fn closed_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    addr
}

fn with_map(builder: ClientConfigBuilder) -> ClientConfigBuilder {
    let map = hbase_it::address_map();
    if map.is_empty() {
        builder
    } else {
        builder.address_mapper(map.clone().into_mapper())
    }
}

/// An RPC-registry config on `servers` whose ZooKeeper quorum is `zk` (never to be used).
fn rpc_config(zk: &str, servers: &[String]) -> ClientConfig {
    with_map(
        ClientConfig::builder(zk)
            .registry(Registry::Rpc)
            .bootstrap_servers(servers.to_vec())
            .connect_timeout(Duration::from_secs(5))
            .operation_timeout(Duration::from_secs(60)),
    )
    .build()
    .unwrap()
}

fn addresses(servers: &[hbase_client::ServerName]) -> BTreeSet<String> {
    servers.iter().map(|s| s.address()).collect()
}

/// What a test against the cluster starts from: the suite's own client (ZooKeeper, or the
/// registry of `HBASE_BOOTSTRAP_SERVERS`) and what it says about the cluster, and a counting
/// listener to stand as the ZooKeeper quorum of the clients under test.
struct Fixture {
    reference: Client,
    master: hbase_client::ServerName,
    servers: Vec<hbase_client::ServerName>,
    id: String,
    zk: CountingZk,
}

impl Fixture {
    async fn new() -> Fixture {
        let reference = hbase_it::client().await;
        let admin = reference.admin();
        let master = admin.master().await.unwrap();
        let servers = admin.region_servers().await.unwrap();
        let id = admin.cluster_id().await.unwrap();
        Fixture {
            reference,
            master,
            servers,
            id,
            zk: CountingZk::start().await,
        }
    }

    /// A client bootstrapped through the RPC registry on the master, every connection through
    /// `proxy`; its operation timeout 60 s.
    async fn rpc_client_through(&self, proxy: &hbase_it::proxy::FaultProxy) -> Client {
        let config = ClientConfig::builder(&self.zk.addr)
            .registry(Registry::Rpc)
            .bootstrap_servers(vec![self.master.address()])
            .connect_timeout(Duration::from_secs(5))
            .operation_timeout(Duration::from_secs(60))
            .address_mapper(proxy.mapper())
            .build()
            .unwrap();
        Client::connect(config)
            .await
            .expect("bootstrap through the proxy")
    }

    /// A client bootstrapped through the RPC registry on `servers`; its ZooKeeper quorum is
    /// the counting listener.
    async fn rpc_client(&self, servers: &[String]) -> hbase_client::Result<Client> {
        Client::connect(rpc_config(&self.zk.addr, servers)).await
    }
}

/// Creates a table through `client`, writes a row, reads it back and drops the table.
async fn round_trip(client: &Client, prefix: &str) {
    let name = hbase_it::unique_table(prefix);
    hbase_it::create_table(client, &name, &[]).await;
    let table = client.table(&name.to_string()).unwrap();
    table.put(Put::new("r").add("cf", "q", "v")).await.unwrap();
    let row = table
        .get(Get::new("r"))
        .await
        .unwrap()
        .expect("the row just written");
    assert_eq!(row.value(b"cf", b"q").unwrap(), b"v");
    hbase_it::drop_table(client, &name).await;
}

/// Data, batch, buffered writes, scans and admin through a client bootstrapped on the master
/// alone, its ZooKeeper quorum a counting listener that must see no connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_registry_bootstraps_without_a_zookeeper_session() {
    hbase_it::bounded(240, async {
        let f = Fixture::new().await;
        let Fixture {
            reference,
            master,
            servers,
            id,
            zk,
        } = &f;
        let client = f
            .rpc_client(&[master.address()])
            .await
            .expect("connect through the master's ClientMetaService");
        assert_eq!(client.config().registry(), Registry::Rpc);
        let admin = client.admin();
        assert_eq!(&admin.master().await.unwrap(), master);
        assert_eq!(&admin.cluster_id().await.unwrap(), id);
        assert_eq!(
            addresses(&admin.region_servers().await.unwrap()),
            addresses(servers)
        );
        assert!(addresses(servers).contains(&admin.meta_server().await.unwrap().address()));

        let name = hbase_it::unique_table("registry_rpc");
        hbase_it::create_table(&client, &name, &["m"]).await;
        let table = client.table(&name.to_string()).unwrap();
        table.put(Put::new("a").add("cf", "q", "1")).await.unwrap();
        let results = table
            .batch(&[
                Action::Put(Put::new("n").add("cf", "q", "2")),
                Action::Get(Get::new("a")),
            ])
            .await;
        assert_eq!(results.len(), 2);
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        let m = client
            .buffered_mutator(&name.to_string(), MutatorConfig::default())
            .unwrap();
        for i in 0..100 {
            m.mutate(Put::new(format!("z{i:03}")).add("cf", "q", "3"))
                .await
                .unwrap();
        }
        m.close().await.unwrap();
        let rows = table.scan(Scan::new()).collect_all().await.unwrap();
        assert_eq!(rows.len(), 102);
        let row = table.get(Get::new("n")).await.unwrap().unwrap();
        assert_eq!(row.value(b"cf", b"q").unwrap(), b"2");
        // The suite's own client reads what this one wrote.
        let seen = reference
            .table(&name.to_string())
            .unwrap()
            .scan(Scan::new())
            .collect_all()
            .await
            .unwrap();
        assert_eq!(seen.len(), 102);
        hbase_it::drop_table(&client, &name).await;

        // hbase-site.xml naming the RPC registry does the same.
        let mut site = HbaseSite::default();
        site.set("hbase.zookeeper.quorum", zk.addr.clone());
        site.set(
            "hbase.client.registry.impl",
            "org.apache.hadoop.hbase.client.RpcConnectionRegistry",
        );
        site.set("hbase.client.bootstrap.servers", master.address());
        let from_site = Client::connect(with_map(site.to_builder().unwrap()).build().unwrap())
            .await
            .expect("connect through hbase-site.xml's RPC registry");
        assert_eq!(&from_site.admin().cluster_id().await.unwrap(), id);

        assert_eq!(
            zk.connections(),
            0,
            "the RPC registry connected to ZooKeeper"
        );
    })
    .await;
}

/// Region servers alone (HBase 2.5+) are enough: the client learns the master and meta from
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn region_servers_alone_bootstrap_the_client() {
    hbase_it::bounded(180, async {
        let f = Fixture::new().await;
        let list: Vec<String> = f.servers.iter().map(|s| s.address()).collect();
        let client = f
            .rpc_client(&list)
            .await
            .expect("connect through the region servers' ClientMetaService");
        let admin = client.admin();
        assert_eq!(admin.master().await.unwrap(), f.master);
        assert_eq!(admin.cluster_id().await.unwrap(), f.id);
        assert!(admin
            .list_namespaces()
            .await
            .unwrap()
            .iter()
            .any(|n| n == "hbase"));
        // The master found through a region server's answer creates a table; meta, located
        // the same way, finds its region.
        round_trip(&client, "registry_rs").await;
        assert_eq!(f.zk.connections(), 0);
    })
    .await;
}

/// The first listed bootstrap server is dead (a closed port): the client connects through the
/// next one, and the dead one's failed connect is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_first_bootstrap_server_is_skipped() {
    hbase_it::bounded(180, async {
        let f = Fixture::new().await;
        let dead = closed_port();
        let client = f
            .rpc_client(&[dead.clone(), f.master.address()])
            .await
            .expect("the second bootstrap server answers");
        assert_eq!(client.admin().cluster_id().await.unwrap(), f.id);
        let stats = client.stats();
        let dead_stats = stats
            .server(&dead)
            .expect("the dead server was tried first");
        assert!(dead_stats.failed_connects >= 1, "{dead_stats:?}");
        assert_eq!(dead_stats.connects, dead_stats.failed_connects);
        round_trip(&client, "registry_failover").await;
        assert_eq!(f.zk.connections(), 0);
    })
    .await;
}

/// Finding the master ends at the caller's deadline: an Admin call with a 2 s timeout, made
/// while the registry's server has stopped answering (its connections frozen by the proxy),
/// fails with a timeout instead of waiting out the registry's own bound (the client's
/// operation timeout, 60 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_the_master_ends_at_the_callers_deadline() {
    hbase_it::bounded(40, async {
        let f = Fixture::new().await;
        let proxy = hbase_it::proxy::FaultProxy::new();
        let client = f.rpc_client_through(&proxy).await;
        let ctl = proxy.control(&f.master.address());
        ctl.freeze_existing();
        let err = client
            .admin()
            .with_timeout(Duration::from_secs(2))
            .list_tables(None, None)
            .await
            .unwrap_err();
        eprintln!("an Admin call while the registry is frozen: {err}");
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        ctl.thaw();
        assert_eq!(f.zk.connections(), 0);
    })
    .await;
}

/// The refresh of the bootstrap nodes that follows a registry answer (every 5 minutes) holds
/// that answer back for a second at most: a server that does not answer `GetBootstrapNodes`
/// delayed the client's connect by the whole operation timeout (60 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_bootstrap_node_refresh_does_not_hold_back_the_answer() {
    hbase_it::bounded(40, async {
        let f = Fixture::new().await;
        let proxy = hbase_it::proxy::FaultProxy::new();
        proxy
            .control(&f.master.address())
            .swallow_requests(u32::MAX, |r| r.method == "GetBootstrapNodes");
        let client = f.rpc_client_through(&proxy).await;
        assert_eq!(client.admin().cluster_id().await.unwrap(), f.id);
        assert!(proxy.control(&f.master.address()).swallowed() >= 1);
        assert_eq!(f.zk.connections(), 0);
    })
    .await;
}

/// Every bootstrap server dead: `connect` fails (no hang) with the registry's typed error,
/// naming each server and what it did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_dead_bootstrap_servers_are_a_typed_error() {
    hbase_it::bounded(120, async {
        let zk = CountingZk::start().await;
        let dead = [closed_port(), closed_port()];
        let e = match Client::connect(rpc_config(&zk.addr, &dead)).await {
            Ok(_) => panic!("connected through dead servers"),
            Err(e) => e,
        };
        match &e {
            Error::Bootstrap {
                servers,
                what,
                message,
            } => {
                assert_eq!(servers, &dead.to_vec());
                assert_eq!(what, "GetMetaRegionLocations");
                for d in &dead {
                    assert!(message.contains(d.as_str()), "{message}");
                }
            }
            other => panic!("expected Error::Bootstrap, got {other:?}"),
        }
        assert_eq!(e.kind(), ErrorKind::Retryable, "{e}");
        assert_eq!(zk.connections(), 0);
    })
    .await;
}

/// `ycsb` on the RPC registry (`-p hbase.client.registry.impl=… -p
/// hbase.client.bootstrap.servers=…`), its `--zk` a counting listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_runs_on_the_rpc_registry() {
    hbase_it::bounded(180, async {
        let f = Fixture::new().await;
        let Fixture {
            reference: client,
            master,
            zk,
            ..
        } = &f;
        let name = hbase_it::unique_table("registry_ycsb");
        let common = format!(
            "--zk {} -p hbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry \
             -p hbase.client.bootstrap.servers={},{} {} -p table={name} -p columnfamily=family \
             -p recordcount=300 -threads 2",
            zk.addr,
            closed_port(),
            master.address(),
            hbase_it::ycsb_map_args()
        );
        let run = |line: String| async move { hbase_it::ycsb(&line).await };
        run(format!("create-table {common} --regions 2")).await;
        let load = run(format!("load {common} -P workloada")).await;
        assert_eq!(hbase_it::ycsb_count(&load, "INSERT", "Return=OK"), 300, "{load}");
        let rows = client
            .table(&name.to_string())
            .unwrap()
            .scan(Scan::new())
            .collect_all()
            .await
            .unwrap();
        assert_eq!(rows.len(), 300);
        hbase_it::drop_table(client, &name).await;
        assert_eq!(zk.connections(), 0);
    })
    .await;
}
