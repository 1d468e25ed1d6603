//! `ClientConfig::from_hbase_site` against the `hbase-site.xml` that `scripts/hbase-local`
//! writes for its cluster: the client connects with nothing else, the znode parent is the
//! one ZooKeeper is read under, and a `host:port/chroot` quorum reaches the same znodes.

use std::time::Duration;

use hbase_client::{Client, ClientConfig, Error, Get, HbaseSite, Put};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_with_the_local_clusters_hbase_site() {
    // scripts/hbase-local's own file (or, against an external cluster, one naming it).
    let conf = hbase_it::hbase_site_dir();
    let config = ClientConfig::from_hbase_site(&conf).unwrap();
    assert_eq!(config.zk_quorum(), hbase_it::zk());
    let client = Client::connect(with_map(config)).await.unwrap();
    let name = hbase_it::unique_table("site_conf");
    hbase_it::create_table(&client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    t.put(Put::new("r").add("cf", "q", "v")).await.unwrap();
    let row = t.get(Get::new("r")).await.unwrap().unwrap();
    assert_eq!(row.value(b"cf", b"q").unwrap(), b"v");

    // The file itself works too, and the properties of -p style overrides apply on top.
    let mut site = HbaseSite::load(conf.join("hbase-site.xml")).unwrap();
    site.set("hbase.client.retries.number", "3");
    site.set("hbase.client.write.buffer", "65536");
    let config = site.to_builder().unwrap().build().unwrap();
    assert_eq!(config.retries(), 3);
    assert_eq!(config.write_buffer_size(), 65536);
    hbase_it::drop_table(&client, &name).await;
}

/// The config with `HBASE_ADDRESS_MAP`'s mapper, when one is set (an external cluster).
fn with_map(config: ClientConfig) -> ClientConfig {
    let map = hbase_it::address_map();
    if map.is_empty() {
        return config;
    }
    let mut site = HbaseSite::default();
    site.set("hbase.zookeeper.quorum", config.zk_quorum());
    site.set("zookeeper.znode.parent", config.znode_parent());
    site.to_builder()
        .unwrap()
        .address_mapper(map.clone().into_mapper())
        .build()
        .unwrap()
}

fn host_port() -> (String, String) {
    let zk = hbase_it::zk();
    let first = zk.split(',').next().unwrap().to_string();
    let (h, p) = first.rsplit_once(':').unwrap();
    (h.to_string(), p.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_znode_parent_is_where_zookeeper_is_read() {
    let (host, port) = host_port();
    // A distribution's parent (/hbase-unsecure) that this cluster does not use: the error
    // names the znode it looked for.
    let mut site = HbaseSite::default();
    site.set("hbase.zookeeper.quorum", host.clone());
    site.set("hbase.zookeeper.property.clientPort", port.clone());
    site.set("zookeeper.znode.parent", "/hbase-unsecure");
    let config = site
        .to_builder()
        .unwrap()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    assert_eq!(config.znode_parent(), "/hbase-unsecure");
    match Client::connect(config).await {
        Err(e @ Error::ZooKeeper { .. }) => {
            assert!(
                e.to_string().contains("/hbase-unsecure/meta-region-server"),
                "{e}"
            )
        }
        Err(e) => panic!("expected a ZooKeeper error naming the znode, got {e}"),
        Ok(_) => panic!("connected under /hbase-unsecure"),
    }
    // The same cluster through a chroot: `host:port/hbase` with the parent `/`.
    let mut site = HbaseSite::default();
    site.set("hbase.zookeeper.quorum", format!("{host}:{port}/hbase"));
    site.set("zookeeper.znode.parent", "/");
    let config = site.to_builder().unwrap().build().unwrap();
    assert_eq!(config.zk_quorum(), format!("{host}:{port}/hbase"));
    let client = Client::connect(with_map(config)).await.unwrap();
    // The master and meta locations were read under the chroot.
    client.admin().list_tables(None, None).await.unwrap();
}

/// Hadoop's own `Configuration` (from hbase-shaded-client, through
/// `tests/java/interop/SiteValues.java`) and ours (`site-values`, the same output) read each
/// file of `tests/hbase_site/` with the same environment: every property's raw and expanded
/// value must be the same, down to whitespace, and a value whose expansion Hadoop refuses
/// must be refused here too.
#[test]
fn reads_hbase_site_files_as_hadoops_configuration_does() {
    let repo = env!("CARGO_MANIFEST_DIR");
    let mut differences = Vec::new();
    for case in ["expansion.xml", "structure.xml"] {
        let file = format!("{repo}/tests/hbase_site/{case}");
        let text = std::fs::read_to_string(&file).unwrap();
        let mut names = property_names(&text);
        // Lookups of names never defined, with spaces around, and empty.
        names.extend(["missing", " plain ", "", " attr.spaced "].map(String::from));
        let run = |program: &str, args: &[&str]| {
            let mut cmd = std::process::Command::new(program);
            cmd.args(args)
                .arg(&file)
                .args(&names)
                .env("HBASE_SITE_ORACLE_SET", "val")
                .env("HBASE_SITE_ORACLE_EMPTY", "")
                .env("HBASE_SITE_ORACLE_REF", "${plain}")
                .env("HBASE_SITE_ORACLE_SELF", "${env.HBASE_SITE_ORACLE_SELF}")
                .env_remove("HBASE_SITE_ORACLE_UNSET");
            let out = cmd
                .output()
                .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
            assert!(
                out.status.success(),
                "{program} {case}: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let java = run(
            &format!("{repo}/tests/java/interop/run"),
            &["--program", "SiteValues.java"],
        );
        let ours = run(env!("CARGO_BIN_EXE_site-values"), &[]);
        assert_eq!(
            java.lines().count(),
            names.len(),
            "Hadoop's output:\n{java}"
        );
        for (j, o) in java.lines().zip(ours.lines()) {
            if j != o {
                differences.push(format!("{case}:\n  Hadoop: {j}\n  ours:   {o}"));
            }
        }
        assert_eq!(ours.lines().count(), names.len(), "our output:\n{ours}");
    }
    assert!(
        differences.is_empty(),
        "{} properties read differently from Hadoop (NAME, raw value, expanded value):\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// The property names a configuration file defines: `<name>` elements (trimmed, as Hadoop
/// trims them) and `name="…"` attributes, each once, in order.
fn property_names(xml: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |n: &str| {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    };
    for piece in xml.split("<name>").skip(1) {
        if let Some((n, _)) = piece.split_once("</name>") {
            add(n.trim());
        }
    }
    for piece in xml.split("name=\"").skip(1) {
        if let Some((n, _)) = piece.split_once('"') {
            add(n);
        }
    }
    names
}
