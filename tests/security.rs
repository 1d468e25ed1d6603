//! Kerberos (SASL/GSSAPI) and TLS against the secured clusters of `scripts/hbase-local`
//! (a real MIT KDC; HBase 2.6 native RPC TLS with certificates made on start). See
//! `tests/support/secure.rs` for the clusters and `tests/support/relay.rs` for the byte relay
//! used to look at the wire.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::StreamExt;
use hbase_client::{
    Action, ActionResult, Client, ClientConfig, ClientConfigBuilder, Error, ErrorKind, Get,
    HbaseSite, Kerberos, MutatorConfig, Protection, Put, Scan, Tls,
};
use hbase_it::relay::Relay;
use hbase_it::secure::SecureCluster;

/// Guards against a hang; no test waits anywhere near this on a healthy machine.
const HANG_GUARD: Duration = Duration::from_secs(300);

fn kerberos_client(
    c: &SecureCluster,
    principal: &str,
    keytab: &str,
    level: Protection,
) -> Kerberos {
    let server = c.get("SERVER_PRINCIPAL");
    Kerberos::from_keytab(principal, keytab)
        .protection(level)
        .regionserver_principal(server)
        .master_principal(server)
}

async fn connect(builder: ClientConfigBuilder) -> hbase_client::Result<Client> {
    Client::connect(builder.build().expect("config")).await
}

async fn connect_err(builder: ClientConfigBuilder) -> Error {
    match connect(builder).await {
        Ok(_) => panic!("the client connected"),
        Err(e) => e,
    }
}

/// One put and get on a fresh table, then drops it.
async fn round_trip(client: &Client, prefix: &str) {
    let name = hbase_it::unique_table(prefix);
    hbase_it::create_table(client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    t.put(Put::new("row").add("cf", "q", "v")).await.unwrap();
    let row = t.get(Get::new("row")).await.unwrap().expect("row");
    assert_eq!(row.value(b"cf", b"q").unwrap(), b"v");
    hbase_it::drop_table(client, &name).await;
}

/// Puts, gets, scans, a batch and a buffered mutator on a fresh table, through admin calls to
/// the master; checks every row read back. `marker` is written as a value.
async fn data_path(client: &Client, prefix: &str, marker: &str) {
    let name = hbase_it::unique_table(prefix);
    hbase_it::create_table(client, &name, &["r5"]).await;
    let t = client.table(&name.to_string()).unwrap();
    for i in 0..10 {
        t.put(Put::new(format!("r{i}")).add("cf", "q", format!("{marker}-{i}")))
            .await
            .unwrap();
    }
    let row = t.get(Get::new("r3")).await.unwrap().expect("r3 exists");
    assert_eq!(
        row.value(b"cf", b"q").unwrap(),
        &Bytes::from(format!("{marker}-3"))
    );
    // a batch over both regions: puts and gets
    let actions: Vec<Action> = (10..20)
        .map(|i| Action::Put(Put::new(format!("r{i}")).add("cf", "q", format!("{marker}-{i}"))))
        .chain([Action::Get(Get::new("r1")), Action::Get(Get::new("r7"))])
        .collect();
    let results = t.batch(&actions).await;
    assert_eq!(results.len(), 12);
    for (i, r) in results.into_iter().enumerate() {
        match (i, r.unwrap()) {
            (10, ActionResult::Row(Some(row))) => {
                assert_eq!(
                    row.value(b"cf", b"q").unwrap(),
                    &Bytes::from(format!("{marker}-1"))
                )
            }
            (11, ActionResult::Row(Some(row))) => {
                assert_eq!(
                    row.value(b"cf", b"q").unwrap(),
                    &Bytes::from(format!("{marker}-7"))
                )
            }
            (i, ActionResult::Done) if i < 10 => {}
            (i, other) => panic!("action {i}: {other:?}"),
        }
    }
    let mutator = client
        .buffered_mutator(&name.to_string(), MutatorConfig::default())
        .unwrap();
    for i in 20..520 {
        mutator
            .mutate(Put::new(format!("r{i}")).add("cf", "q", format!("{marker}-{i}")))
            .await
            .unwrap();
    }
    mutator.close().await.unwrap();
    let mut rows = t.scan(Scan::new().caching(100));
    let mut n = 0;
    while let Some(row) = rows.next().await {
        let row = row.unwrap();
        let key = String::from_utf8_lossy(&row.row).to_string();
        let i: u32 = key[1..].parse().unwrap();
        assert_eq!(
            row.value(b"cf", b"q").unwrap(),
            &Bytes::from(format!("{marker}-{i}"))
        );
        n += 1;
    }
    assert_eq!(n, 520);
    // Values far larger than one sealed piece (64 KiB) or TLS record, written concurrently so
    // that one batch of the writer holds several, and read back byte for byte.
    let big = |i: usize| Bytes::from((0..2 << 20).map(|b| (b * 7 + i) as u8).collect::<Vec<u8>>());
    let puts = (0..3).map(|i| t.put(Put::new(format!("big{i}")).add("cf", "q", big(i))));
    for r in futures_util::future::join_all(puts).await {
        r.unwrap();
    }
    for i in 0..3 {
        let row = t
            .get(Get::new(format!("big{i}")))
            .await
            .unwrap()
            .expect("big row");
        assert!(
            row.value(b"cf", b"q").unwrap() == big(i),
            "big{i} read back"
        );
    }
    let admin = client.admin();
    assert!(admin.table_exists(&name).await.unwrap());
    hbase_it::drop_table(client, &name).await;
    assert!(!admin.table_exists(&name).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kerberos_data_path_at_each_protection_level() {
    let c = SecureCluster::kerberos();
    for level in [
        Protection::Authentication,
        Protection::Integrity,
        Protection::Privacy,
    ] {
        let relay = Relay::new();
        let client = connect(
            ClientConfig::builder(c.zk())
                .address_mapper(relay.mapper())
                .kerberos(kerberos_client(
                    c,
                    c.get("CLIENT_PRINCIPAL"),
                    c.get("CLIENT_KEYTAB"),
                    level,
                )),
        )
        .await
        .unwrap();
        let marker = format!("plain-text-marker-{}", level.name());
        tokio::time::timeout(HANG_GUARD, data_path(&client, "krb", &marker))
            .await
            .expect("no hang");
        let status = client.security();
        assert_eq!(status.principal.as_deref(), Some(c.get("CLIENT_PRINCIPAL")));
        // every connection (master and region servers) negotiated exactly this level
        let sasl = status.sasl_handshakes;
        assert_eq!(sasl.at(level), sasl.total(), "{level}: {sasl:?}");
        assert!(sasl.total() >= 2, "master and a region server: {sasl:?}");
        assert_eq!(
            sasl.total(),
            relay.accepted(),
            "one SASL exchange per connection"
        );
        // on the wire: values in clear text unless the level encrypts
        assert_eq!(
            relay.saw(marker.as_bytes()),
            level != Protection::Privacy,
            "{level}: marker visible on the wire?"
        );
        assert!(relay.saw(b"client@HBASE.TEST") || level != Protection::Authentication);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_bootstrap_reads_only_world_readable_znodes() {
    // What the client relies on: HBase's ACLs leave meta-region-server, master and rs readable
    // by anyone, and keep the rest to its own principal. The client reads anonymously.
    let c = SecureCluster::kerberos();
    let zk = zookeeper_client::Client::connect(&c.zk()).await.unwrap();
    for readable in ["/hbase/meta-region-server", "/hbase/master"] {
        zk.get_data(readable)
            .await
            .unwrap_or_else(|e| panic!("{readable}: {e}"));
    }
    assert!(!zk.list_children("/hbase/rs").await.unwrap().is_empty());
    match zk.get_data("/hbase/running").await {
        Err(zookeeper_client::Error::NoAuth) => {}
        other => panic!("/hbase/running should be closed to anonymous readers: {other:?}"),
    }
    let acl = zk.get_acl("/hbase/meta-region-server").await.unwrap().0;
    assert!(
        acl.iter().any(|a| a.scheme() == "sasl"),
        "meta-region-server carries HBase's SASL ACL: {acl:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_client_is_refused_after_one_attempt() {
    let c = SecureCluster::kerberos();
    let relay = Relay::new();
    let client = connect(ClientConfig::builder(c.zk()).address_mapper(relay.mapper()))
        .await
        .expect("ZooKeeper bootstrap needs no credentials");
    let t = client.table("hbase:meta").unwrap();
    let err = tokio::time::timeout(HANG_GUARD, t.get(Get::new("x")))
        .await
        .expect("no hang")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
    assert!(
        matches!(err, Error::Authentication { .. }),
        "not retried, not wrapped: {err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("Authentication is required"), "{text}");
    assert!(text.contains("ClientConfig::kerberos"), "{text}");
    assert_eq!(relay.accepted(), 1, "one attempt, one connection");
    eprintln!(
        "SIMPLE client: {err} (connections made: {})",
        relay.accepted()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_without_credentials_is_refused_before_any_server() {
    let c = SecureCluster::kerberos();
    let empty = std::env::temp_dir().join(format!("hbase-rs-no-ccache-{}", std::process::id()));
    let cache = format!("FILE:{}", empty.display());
    let relay = Relay::new();
    let err = connect_err(
        ClientConfig::builder(c.zk())
            .address_mapper(relay.mapper())
            .kerberos(Kerberos::from_ticket_cache(Some(&cache))),
    )
    .await;
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
    let text = err.to_string();
    assert!(text.contains(&cache), "names the cache: {text}");
    assert!(text.contains("no usable Kerberos ticket"), "{text}");
    assert_eq!(relay.accepted(), 0, "no server was contacted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_keytabs_and_unknown_principals_name_what_failed() {
    let c = SecureCluster::kerberos();
    let cases = [
        // the key in the keytab was changed on the KDC afterwards
        (
            c.get("STALE_PRINCIPAL"),
            c.get("STALE_KEYTAB").to_string(),
            "outdated",
        ),
        // the principal was deleted from the KDC
        (
            c.get("GHOST_PRINCIPAL"),
            c.get("GHOST_KEYTAB").to_string(),
            "not found in Kerberos database",
        ),
        // the keytab holds another principal's keys
        (
            c.get("CLIENT_PRINCIPAL"),
            c.get("SHORT_KEYTAB").to_string(),
            "keytab",
        ),
        // no keytab there at all
        (
            c.get("CLIENT_PRINCIPAL"),
            format!("{}.missing", c.get("CLIENT_KEYTAB")),
            "cannot read the keytab",
        ),
    ];
    for (principal, keytab, why) in cases {
        let err = connect_err(ClientConfig::builder(c.zk()).kerberos(kerberos_client(
            c,
            principal,
            &keytab,
            Protection::Authentication,
        )))
        .await;
        assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
        let text = err.to_string();
        assert!(text.contains(principal), "names the principal: {text}");
        assert!(text.contains(&keytab), "names the keytab: {text}");
        assert!(text.contains(why), "says why ({why}): {text}");
        eprintln!("{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_server_principal_is_named() {
    let c = SecureCluster::kerberos();
    let client = connect(
        ClientConfig::builder(c.zk()).kerberos(
            Kerberos::from_keytab(c.get("CLIENT_PRINCIPAL"), c.get("CLIENT_KEYTAB"))
                .regionserver_principal("nosuchservice/_HOST"),
        ),
    )
    .await
    .unwrap();
    let err = client
        .table("hbase:meta")
        .unwrap()
        .get(Get::new("x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("nosuchservice/localhost"),
        "names the server principal: {text}"
    );
    assert!(text.contains("not found in Kerberos database"), "{text}");
}

/// The principal asked for a server advertised under a name is the Java client's: its own
/// `RpcConnection.getServerPrincipal` (hbase-shaded-client 2.6.4, run beside ours by
/// `tests/java/interop/ServerPrincipals.java`) on this machine's resolver, by default and with
/// `hbase.unsafe.client.kerberos.hostname.disable.reversedns`. By default a `_HOST` takes the
/// canonical name of the host's address (reverse lookup, forward-checked, else the address in
/// Java's text), not the advertised name: this machine's own host name, for one, is a name of
/// 127.0.0.1, whose canonical name is `localhost`. Needs no cluster.
#[tokio::test]
async fn server_principals_are_the_java_clients() {
    let pattern = "hbase/_HOST@EXAMPLE.COM";
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("host name")
        .trim()
        .to_string();
    let mut hosts: Vec<String> = [
        "127.0.0.1",
        "localhost",
        "LocalHost",
        "127.0.0.2",
        "::1",
        "0:0:0:0:0:0:0:1",
        "no-such-host.invalid",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    hosts.push(machine.clone());
    hosts.push(machine.to_uppercase());
    let mut args = vec![pattern.to_string()];
    args.extend(hosts.iter().cloned());
    let java = hbase_it::run_java_program("ServerPrincipals.java", &args);
    let mut differences = Vec::new();
    let mut lines = java.lines();
    for host in &hosts {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("no Java line for {host}: {java}"));
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 3, "HOST<tab>PRINCIPAL<tab>PRINCIPAL: {line}");
        assert_eq!(fields[0], host, "Java's lines in the hosts' order");
        for (reverse_dns, theirs) in [(true, fields[1]), (false, fields[2])] {
            let ours =
                hbase_client::client_oracle::server_principal(pattern, host, reverse_dns).await;
            if ours != theirs {
                differences.push(format!(
                    "{host} (reverse DNS {reverse_dns}): ours {ours}, Java's {theirs}"
                ));
            }
        }
    }
    // Java cannot connect to a server whose name does not resolve; ours may, through an
    // address map, and then asks for the principal of the name as written.
    let unresolvable = |on: bool| {
        format!(
            "no-such-host.invalid (reverse DNS {on}): ours hbase/no-such-host.invalid@EXAMPLE.COM, Java's unresolved"
        )
    };
    assert_eq!(
        differences,
        vec![unresolvable(true), unresolvable(false)],
        "server principals that differ from the Java client's"
    );
    eprintln!(
        "server principals: {} host names x 2 settings compared with the Java client's; kept: an unresolvable name",
        hosts.len()
    );
}

/// A client bootstrapped through the RPC registry on the master's address (127.0.0.1, as a
/// user writes it in `hbase.client.bootstrap.servers`) asks for the principal of the address's
/// canonical name, `hbase/localhost`, the servers' principal: Java's rule
/// (`server_principals_are_the_java_clients`). With the advertised name (the address as
/// written) it asked for `hbase/127.0.0.1`, which no KDC holds, and failed to bootstrap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kerberos_bootstrap_on_an_address_asks_for_its_hosts_principal() {
    let c = SecureCluster::kerberos();
    let login = || {
        kerberos_client(
            c,
            c.get("CLIENT_PRINCIPAL"),
            c.get("CLIENT_KEYTAB"),
            Protection::Authentication,
        )
    };
    let reference = connect(ClientConfig::builder(c.zk()).kerberos(login()))
        .await
        .expect("the ZooKeeper-bootstrapped client");
    let master = reference.admin().master().await.expect("the active master");
    assert_eq!(master.host, "localhost", "the cluster advertises localhost");
    let client = connect(
        ClientConfig::builder(c.zk())
            .registry(hbase_client::Registry::Rpc)
            .bootstrap_servers(vec![format!("127.0.0.1:{}", master.port)])
            .kerberos(login()),
    )
    .await
    .expect("bootstrap on 127.0.0.1 with Kerberos");
    round_trip(&client, "krb_bootstrap_by_address").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticket_cache_login() {
    let c = SecureCluster::kerberos();
    let client = connect(
        ClientConfig::builder(c.zk()).kerberos(
            Kerberos::from_ticket_cache(Some(c.get("CLIENT_CCACHE")))
                .protection(Protection::Integrity)
                .regionserver_principal(c.get("SERVER_PRINCIPAL"))
                .master_principal(c.get("SERVER_PRINCIPAL")),
        ),
    )
    .await
    .unwrap();
    round_trip(&client, "ccache").await;
    let status = client.security();
    assert_eq!(status.principal.as_deref(), Some(c.get("CLIENT_PRINCIPAL")));
    let sasl = status.sasl_handshakes;
    assert!(
        sasl.integrity >= 2 && sasl.integrity == sasl.total(),
        "{sasl:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiring_ticket_is_renewed_from_the_keytab_without_failed_operations() {
    // short@REALM's tickets live HBASE_LOCAL_SHORT_TICKET_LIFETIME seconds (30). The client
    // works on while the relay drops its connections after every round, so every round
    // authenticates anew; it ends once the first ticket has expired and a connection made
    // after that expiry (with a renewed ticket) has served operations.
    let c = SecureCluster::kerberos();
    let relay = Relay::new();
    let client = connect(
        ClientConfig::builder(c.zk())
            .address_mapper(relay.mapper())
            .kerberos(kerberos_client(
                c,
                c.get("SHORT_PRINCIPAL"),
                c.get("SHORT_KEYTAB"),
                Protection::Privacy,
            )),
    )
    .await
    .unwrap();
    let first = client.security();
    let first_expiry = first
        .ticket_expires
        .expect("a keytab login knows its expiry");
    let lifetime: u64 = c.get("SHORT_TICKET_LIFETIME").parse().unwrap();
    assert!(
        first_expiry <= SystemTime::now() + Duration::from_secs(lifetime + 5),
        "the KDC issued a short ticket"
    );
    let name = hbase_it::unique_table("renew");
    hbase_it::create_table(&client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    let mut round = 0u64;
    let mut after_expiry_rounds = 0;
    let run = async {
        while after_expiry_rounds < 3 {
            round += 1;
            let value = format!("v{round}");
            t.put(Put::new("row").add("cf", "q", value.clone()))
                .await
                .expect("put");
            let row = t.get(Get::new("row")).await.expect("get").expect("row");
            assert_eq!(row.value(b"cf", b"q").unwrap(), &Bytes::from(value));
            let expired = SystemTime::now() > first_expiry;
            relay.close_all();
            if expired {
                after_expiry_rounds += 1;
            }
            // pace the rounds a little: connections through the relay need the loop to yield
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(lifetime * 10 + 120), run)
        .await
        .expect("the first ticket expires eventually");
    let status = client.security();
    assert!(status.renewals >= 1, "renewed from the keytab: {status:?}");
    assert!(status.logins >= 2);
    assert!(
        status.ticket_expires.unwrap() > first_expiry,
        "a later ticket: {status:?}"
    );
    assert!(
        status.sasl_handshakes.privacy > first.sasl_handshakes.privacy + 3,
        "connections kept authenticating: {status:?}"
    );
    assert_eq!(status.failures, 0);
    eprintln!(
        "renewal: first ticket expired at {first_expiry:?}; {round} rounds, {} renewals, \
         now valid until {:?}; {} SASL (privacy) exchanges, 0 failed operations",
        status.renewals,
        status.ticket_expires.unwrap(),
        status.sasl_handshakes.privacy
    );
    hbase_it::drop_table(&client, &name).await;
}

// ---------------------------------------------------------------------------------------------
// TLS

fn tls_settings(c: &SecureCluster) -> Tls {
    Tls::new(c.get("CA_PEM")).client_certificate(c.get("CLIENT_CERT_PEM"), c.get("CLIENT_KEY_PEM"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_data_path() {
    let c = SecureCluster::tls();
    let relay = Relay::new();
    let client = connect(
        ClientConfig::builder(c.zk())
            .address_mapper(relay.mapper())
            .tls(tls_settings(c)),
    )
    .await
    .unwrap();
    tokio::time::timeout(
        HANG_GUARD,
        data_path(&client, "tls", "plain-text-marker-tls"),
    )
    .await
    .expect("no hang");
    let status = client.security();
    assert!(status.tls_handshakes >= 2, "{status:?}");
    assert_eq!(status.tls_handshakes, relay.accepted());
    assert!(
        !relay.saw(b"plain-text-marker-tls"),
        "values are encrypted on the wire"
    );
}

/// Kerberos over TLS, configured only by the cluster's client `hbase-site.xml` (its
/// `hbase.security.authentication`, server principals, TLS trust store and PEM keystore) and a
/// keytab login: the data path at `authentication` (TLS encrypts) and at `privacy` (both do).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kerberos_over_tls_from_the_site_file() {
    let c = SecureCluster::kerberos();
    assert_eq!(c.get("SECURITY"), "kerberos,tls");
    let mut site = HbaseSite::load(c.get("CLIENT_CONF_DIR")).unwrap();
    site.set("hbase.client.keytab.principal", c.get("CLIENT_PRINCIPAL"));
    site.set("hbase.client.keytab.file", c.get("CLIENT_KEYTAB"));
    for level in [Protection::Authentication, Protection::Privacy] {
        site.set("hbase.rpc.protection", level.name());
        let relay = Relay::new();
        let client = connect(site.to_builder().unwrap().address_mapper(relay.mapper()))
            .await
            .unwrap();
        let marker = format!("plain-text-marker-krb-tls-{}", level.name());
        tokio::time::timeout(HANG_GUARD, data_path(&client, "krbtls", &marker))
            .await
            .expect("no hang");
        let status = client.security();
        let connections = relay.accepted();
        assert!(connections >= 2, "master and a region server: {status:?}");
        // every connection: one TLS handshake, then one SASL exchange at this level
        assert_eq!(status.tls_handshakes, connections, "{status:?}");
        assert_eq!(status.sasl_handshakes.at(level), connections, "{status:?}");
        assert_eq!(status.sasl_handshakes.total(), connections, "{status:?}");
        assert_eq!(status.principal.as_deref(), Some(c.get("CLIENT_PRINCIPAL")));
        // nothing in clear text on the wire: neither values nor the principal
        assert!(!relay.saw(marker.as_bytes()), "{level}: marker on the wire");
        assert!(!relay.saw(c.get("CLIENT_PRINCIPAL").as_bytes()), "{level}");
    }
}

async fn first_call_error(builder: ClientConfigBuilder) -> Error {
    let client = connect(builder).await.unwrap();
    let t = client.table("hbase:meta").unwrap();
    tokio::time::timeout(HANG_GUARD, t.get(Get::new("x")))
        .await
        .expect("no hang")
        .unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_server_certificate_from_an_unknown_ca_is_refused() {
    let c = SecureCluster::tls();
    let err = first_call_error(
        ClientConfig::builder(c.zk()).tls(
            Tls::new(c.get("OTHER_CA_PEM"))
                .client_certificate(c.get("CLIENT_CERT_PEM"), c.get("CLIENT_KEY_PEM")),
        ),
    )
    .await;
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err}");
    assert!(matches!(err, Error::Tls { .. }), "not retried: {err:?}");
    let text = err.to_string();
    assert!(
        text.contains("not signed by a CA in the trust store"),
        "{text}"
    );
    assert!(
        text.contains(c.get("OTHER_CA_PEM")),
        "names the trust store: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_host_name_mismatch_is_refused() {
    // The servers' certificate names IP 127.0.0.1 only; reach them as "localhost".
    let c = SecureCluster::tls();
    let err = first_call_error(
        ClientConfig::builder(c.zk())
            .address_mapper(|addr: &str| addr.replace("127.0.0.1:", "localhost:"))
            .tls(tls_settings(c)),
    )
    .await;
    assert!(matches!(err, Error::Tls { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("not valid for the host name \"localhost\""),
        "{text}"
    );

    // With the check off, the chain of trust alone lets the same connection through.
    let client = connect(
        ClientConfig::builder(c.zk())
            .address_mapper(|addr: &str| addr.replace("127.0.0.1:", "localhost:"))
            .tls(tls_settings(c).verify_hostname(false)),
    )
    .await
    .unwrap();
    round_trip(&client, "tlsname").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_without_the_required_client_certificate_is_refused() {
    let c = SecureCluster::tls();
    assert_eq!(c.get("TLS_CLIENT_AUTH"), "NEED");
    let err = first_call_error(
        ClientConfig::builder(c.zk())
            .retries(0)
            .tls(Tls::new(c.get("CA_PEM"))),
    )
    .await;
    assert_eq!(err.kind(), ErrorKind::Authentication, "{err:?}");
    assert!(err.to_string().contains("client certificate"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// ycsb against the Kerberos cluster, with YCSB's principal and keytab properties only

async fn ycsb(line: &str) -> String {
    let args: Vec<String> = line.split_whitespace().map(String::from).collect();
    match ycsb::execute(&args).await {
        Ok(out) => out.stdout,
        Err(e) => panic!("ycsb {line}: {e}"),
    }
}

fn report_count(report: &str, op: &str, measurement: &str) -> u64 {
    let prefix = format!("[{op}], {measurement}, ");
    report
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no [{op}], {measurement} in\n{report}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_load_and_run_with_principal_and_keytab() {
    let c = SecureCluster::kerberos();
    let table = hbase_it::unique_table("ycsb_krb");
    let common = format!(
        "--zk {} -p table={table} -p columnfamily=family -p principal={} -p keytab={}",
        c.zk(),
        c.get("CLIENT_PRINCIPAL"),
        c.get("CLIENT_KEYTAB")
    );
    let out = ycsb(&format!("create-table --regions 4 {common}")).await;
    assert!(out.contains("created table"), "{out}");
    let counts = "-p recordcount=2000 -p operationcount=2000 -threads 4";
    let load = ycsb(&format!("load {common} -P workloadc {counts}")).await;
    assert_eq!(report_count(&load, "INSERT", "Return=OK"), 2000, "{load}");
    let run = ycsb(&format!("run {common} -P workloadc {counts}")).await;
    assert_eq!(report_count(&run, "READ", "Return=OK"), 2000, "{run}");
    for bad in ["Return=ERROR", "Return=NOT_FOUND", "-FAILED]"] {
        assert!(
            !load.contains(bad) && !run.contains(bad),
            "{bad} in\n{load}\n{run}"
        );
    }
    // the same, encrypted
    let run = ycsb(&format!(
        "run {common} -P workloadc {counts} -p hbase.rpc.protection=privacy"
    ))
    .await;
    assert_eq!(report_count(&run, "READ", "Return=OK"), 2000, "{run}");
    // the cluster's client site file (-cp): Kerberos over TLS, with only the keytab login
    // given as YCSB's properties
    let run = ycsb(&format!(
        "run -cp {} -p table={table} -p columnfamily=family -p principal={} -p keytab={} \
         -P workloadc {counts}",
        c.get("CLIENT_CONF_DIR"),
        c.get("CLIENT_PRINCIPAL"),
        c.get("CLIENT_KEYTAB")
    ))
    .await;
    assert_eq!(report_count(&run, "READ", "Return=OK"), 2000, "{run}");
    assert!(!run.contains("Return=ERROR"), "{run}");

    let client = connect(ClientConfig::builder(c.zk()).kerberos(kerberos_client(
        c,
        c.get("CLIENT_PRINCIPAL"),
        c.get("CLIENT_KEYTAB"),
        Protection::Authentication,
    )))
    .await
    .unwrap();
    hbase_it::drop_table(&client, &table).await;
}

/// The `secure` example, run as its documentation says, over TLS with a client certificate
/// and with a Kerberos keytab at `privacy`: it writes, reads back and drops its table.
#[test]
fn the_secure_example_runs_over_tls_and_kerberos() {
    let tls = SecureCluster::tls();
    let out = hbase_it::run_example(
        "secure",
        &[
            "--zk",
            &tls.zk(),
            "--ca",
            tls.get("CA_PEM"),
            "--cert",
            tls.get("CLIENT_CERT_PEM"),
            "--key",
            tls.get("CLIENT_KEY_PEM"),
        ],
    );
    assert!(out.contains(r#"read back "secret""#), "{out}");
    let handshakes: u64 = out
        .rsplit("TLS handshakes ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no TLS handshake count in\n{out}"));
    assert!(handshakes >= 1, "{out}");
    let krb = SecureCluster::kerberos();
    let out = hbase_it::run_example(
        "secure",
        &[
            "--zk",
            &krb.zk(),
            "--principal",
            krb.get("CLIENT_PRINCIPAL"),
            "--keytab",
            krb.get("CLIENT_KEYTAB"),
            "--protection",
            "privacy",
            "--server-principal",
            krb.get("SERVER_PRINCIPAL"),
        ],
    );
    assert!(out.contains(r#"read back "secret""#), "{out}");
    assert!(out.contains(krb.get("CLIENT_PRINCIPAL")), "{out}");
    // The SASL exchanges counted by level (`SaslHandshakes`' Debug): these at privacy.
    let privacy: u64 = out
        .split("privacy: ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no privacy count in\n{out}"));
    assert!(privacy >= 1, "{out}");
}
