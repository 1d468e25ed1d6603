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
    // With them, the two files of configured/ with a `<!DOCTYPE>` that both read (the others
    // declare entities or name a DTD, which ours refuses: KEPT_REFUSED below).
    for case in [
        "expansion.xml",
        "structure.xml",
        "configured/doctype.xml",
        "configured/doctype_subset.xml",
    ] {
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
            hbase_it::stdout_of(&format!("{program} {case}"), &mut cmd)
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

/// XInclude as Hadoop's `Configuration` reads it, on the cases of `tests/hbase_site/xinclude/`
/// (each `*.xml` there is a top-level file; see the comment in each) and one written here, whose
/// hrefs are absolute (a path and a `file:` URL, so they depend on where the repository is).
/// Hadoop reads each case twice: as a file resource (`addResource(new Path(file))`) and as
/// HBase finds `hbase-site.xml` (the file's directory on the class path, the file added by
/// name); the two must agree, and ours (`HbaseSite::load`, through `site-values`) with them:
/// every property defined anywhere under the directory has the same raw and expanded value,
/// or both sides fail to read the file. The differences we keep are asserted exactly (`KEPT`).
#[test]
fn reads_xincludes_as_hadoops_configuration_does() {
    let repo = env!("CARGO_MANIFEST_DIR");
    let dir = std::path::PathBuf::from(format!("{repo}/tests/hbase_site/xinclude"));
    let tmp = std::env::temp_dir().join(format!("hbase-site-xinclude-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let absolute = tmp.join("absolute.xml");
    let d = dir.display();
    std::fs::write(
        &absolute,
        format!(
            "<configuration xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n\
             <xi:include href=\"{d}/inc-plain.xml\"/>\n\
             <xi:include href=\"file://{d}/inc-other-root.xml\"/>\n\
             <xi:include href=\"{d}/no-such-file.xml\"><xi:fallback>\
             <property><name>fb.only</name><value>fallback of an absolute path</value></property>\
             </xi:fallback></xi:include>\n\
             <xi:include href=\"file://{d}/no-such-file.xml\"><xi:fallback>\
             <property><name>fb.value</name><value>fallback of a file: URL</value></property>\
             </xi:fallback></xi:include>\n\
             </configuration>\n"
        ),
    )
    .unwrap();
    let mut cases: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".xml") && !name.starts_with("inc-")
        })
        .collect();
    cases.sort();
    cases.push(absolute.clone());
    // Every name defined under the directory, in every case (and one never defined).
    let mut names: Vec<String> = Vec::new();
    for file in [dir.clone(), dir.join("parts")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
    {
        for n in property_names(&std::fs::read_to_string(&file).unwrap()) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names.push("missing".into());

    // The differences we keep, each expected exactly: (case, Hadoop's output holds, our
    // failure says). Before XInclude was read here, all 13 cases differed. An include loop:
    // Hadoop recurses until its stack overflows (a StackOverflowError out of the first read of
    // the Configuration); ours refuses the file, naming the loop. An http URL: Hadoop fetches
    // it (here nothing listens, so it reads the fallback); ours reads no URL but file: ones
    // and refuses the file, naming the href.
    const KEPT: [(&str, &str, &str); 2] = [
        (
            "loop.xml",
            "FAILED\tjava.lang.StackOverflowError",
            "an include loop (",
        ),
        (
            "url.xml",
            "fb.only\t=the fallback of a URL\t",
            "cannot include \"http://127.0.0.1:1/hbase-site.xml\": only files are included",
        ),
    ];
    let java = format!("{repo}/tests/java/interop/run");
    let mut differences = Vec::new();
    let mut differing_cases = 0;
    for case in &cases {
        let label = case.file_name().unwrap().to_string_lossy().to_string();
        let run = |program: &str, args: &[&str]| {
            let mut cmd = std::process::Command::new(program);
            cmd.args(args).arg(case).args(&names);
            hbase_it::stdout_of(&format!("{program} {label}"), &mut cmd)
        };
        let hadoop = run(&java, &["--program", "SiteValues.java"]);
        let hadoop_cp = run(&java, &["--program", "SiteValues.java", "--classpath"]);
        let ours = run(env!("CARGO_BIN_EXE_site-values"), &[]);
        if outcome(&hadoop) != outcome(&hadoop_cp) {
            differences.push(format!(
                "{label}: Hadoop's two ways differ:\n  file:       {hadoop}\n  class path: {hadoop_cp}"
            ));
        }
        let before = differences.len();
        if let Some((_, h, o)) = KEPT.iter().find(|(c, _, _)| *c == label) {
            if !hadoop.contains(h) || !ours.starts_with("FAILED\t") || !ours.contains(o) {
                differences.push(format!(
                    "{label}: the kept difference changed (expected Hadoop's output to hold {h:?} and ours to fail with {o:?}):\n  Hadoop: {hadoop}\n  ours:   {ours}"
                ));
            }
        } else if outcome(&hadoop) != outcome(&ours) {
            for (j, o) in outcome(&hadoop).iter().zip(outcome(&ours).iter()) {
                if j != o {
                    differences.push(format!("{label}:\n  Hadoop: {j}\n  ours:   {o}"));
                }
            }
            if outcome(&hadoop).len() != outcome(&ours).len() {
                differences.push(format!("{label}:\n  Hadoop: {hadoop}\n  ours:   {ours}"));
            }
        }
        if differences.len() > before {
            differing_cases += 1;
        }
        // A failed include names its href and the file that includes it, as Hadoop's does.
        if label == "missing.xml" {
            assert!(
                hadoop.contains("'parts/no-such-file.xml'"),
                "Hadoop: {hadoop}"
            );
            if outcome(&ours) == ["FAILED"] {
                assert!(
                    ours.contains("parts/no-such-file.xml") && ours.contains("missing.xml"),
                    "ours: {ours}"
                );
            }
        }
    }
    std::fs::remove_dir_all(&tmp).unwrap();
    eprintln!(
        "{} cases ({} names each), {differing_cases} read differently from Hadoop",
        cases.len(),
        names.len()
    );
    assert!(
        differences.is_empty(),
        "{differing_cases} of {} cases read differently from Hadoop (NAME, raw value, expanded value; or FAILED):\n{}",
        cases.len(),
        differences.join("\n")
    );
}

/// What a side made of a file: its lines, or only `FAILED` when it could not read the file
/// (the reasons are each side's own words).
fn outcome(output: &str) -> Vec<&str> {
    if output.starts_with("FAILED\t") {
        return vec!["FAILED"];
    }
    output.lines().collect()
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

/// Our defaults are the Java client's: `tests/java/interop/Defaults.java` prints what
/// hbase-shaded-client resolves from a default `HBaseConfiguration.create()` (building the
/// classes that read each setting, or making their constructors' lookups), and the same names
/// are printed here from `ClientConfig::builder(..).build()` (its accessors; the values it has
/// none for through `hbase_client::client_oracle`): every line must agree, but for the
/// differences we keep, each expected here exactly and documented on its setting.
#[test]
fn client_defaults_are_the_java_clients() {
    let java = hbase_it::run_java_program("Defaults.java", &["defaults"]);
    let c = ClientConfig::builder("zk1:2181").build().unwrap();
    let ours = printed(&c);
    let kept = DEFAULTS_KEPT;
    let java: Vec<(&str, &str)> = java
        .lines()
        .map(|l| l.split_once('\t').expect("NAME <tab> VALUE"))
        .collect();
    assert_eq!(
        java.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ours.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "the same settings, in the same order"
    );
    let mut differences = Vec::new();
    for ((name, j), (_, o)) in java.iter().zip(&ours) {
        let expected = kept.iter().find(|(n, _, _)| n == name);
        let fine = match expected {
            Some((_, kj, ko)) => j == kj && o == ko,
            None => j == o,
        };
        if !fine {
            differences.push(format!("{name}: Java {j}, ours {o}"));
        }
    }
    assert!(
        differences.is_empty(),
        "{} defaults differ from the Java client's:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// The defaults we keep different from the Java client's, documented on each setting
/// (`ClientConfigBuilder`): (NAME, Java's, ours). A 2-minute operation timeout (Java's 20
/// minutes outlasts its own retries), 1,000 rows per scan RPC (Java leaves the cut to the
/// 2 MiB result size), and a 30 s ZooKeeper session (ours only reads two znodes).
const DEFAULTS_KEPT: [(&str, &str, &str); 3] = [
    ("hbase.client.operation.timeout", "1200000", "120000"),
    ("hbase.client.scanner.caching", "2147483647", "1000"),
    ("zookeeper.session.timeout", "90000", "30000"),
];

/// A user's `hbase-site.xml` is read as the Java client reads it: for each case file of
/// `tests/hbase_site/configured/` (see the comment in each), `Defaults.java site FILE` prints
/// what hbase-shaded-client resolves from `HBaseConfiguration.create()` with the file added,
/// and the same names are printed here from `ClientConfig::from_hbase_site(FILE)`. Every line
/// must agree, but for the differences we keep, each expected exactly (`KEPT`). A case Java
/// cannot resolve (a value that is no number of the type Java reads it as) must fail here with
/// `Error::InvalidInput` naming the property (`REFUSED`).
#[test]
fn configured_values_are_read_as_the_java_client_reads_them() {
    let dir = std::path::PathBuf::from(format!(
        "{}/tests/hbase_site/configured",
        env!("CARGO_MANIFEST_DIR")
    ));
    let mut cases: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    cases.sort();
    // The cases Java fails to resolve: (case, the property). Java's line for the property says
    // `ERROR java.lang.NumberFormatException` (and so does every other line its reader
    // resolves); ours refuses the file, naming the property.
    const REFUSED: [(&str, &str); 5] = [
        ("invalid.xml", "hbase.rpc.timeout"),
        ("invalid_unicode_digit.xml", "hbase.rpc.timeout"),
        ("invalid_blank.xml", "hbase.client.write.buffer"),
        ("invalid_plus_hex.xml", "hbase.client.pause"),
        ("invalid_range.xml", "hbase.client.retries.number"),
    ];
    // The differences we keep, each expected exactly: (case, NAME, Java's value, ours). Before
    // site.rs read numbers and document types as Java does, 113 of the 229 lines of the first
    // 13 cases differed (a file ours refused counting all its lines). A negative retry count:
    // Java keeps it and makes max(1, retries + 1) attempts, ours keeps 0 (the attempts line
    // agrees: 1). The periodic flush: Java's async client keeps the milliseconds as
    // nanoseconds (AsyncConnectionConfiguration of 2.6.4 copies getWriteBufferPeriodicFlushTimeoutMs
    // into writeBufferPeriodicFlushTimeoutNs), so 250 flushes after 250 ns; ours flushes after
    // 250 ms, as hbase-default.xml documents the setting and Java's blocking BufferedMutatorImpl
    // reads it. The same periodic flush at 0x80000000 ms (2147483648;
    // the case proves the Java types: Java reads the setting as a long, or this line would be
    // an ERROR): Java's 2147483648 ns are 2147 ms. No meta prefetch: Java keeps 0, ours reads
    // it as 1 (the region asked for). A negative failed-server expiry: Java keeps -1 (its
    // entries expire at once), ours is 0 (off).
    const KEPT: [(&str, &str, &str, &str); 5] = [
        ("negative.xml", "hbase.client.retries.number", "-1", "0"),
        (
            "plain.xml",
            "hbase.client.write.buffer.periodicflush.timeout.ms",
            "0",
            "250",
        ),
        (
            "long_range.xml",
            "hbase.client.write.buffer.periodicflush.timeout.ms",
            "2147",
            "2147483648",
        ),
        (
            "clamped.xml",
            "hbase.client.locate.prefetch.limit",
            "0",
            "1",
        ),
        (
            "clamped.xml",
            "hbase.ipc.client.failed.servers.expiry",
            "-1",
            "0",
        ),
    ];
    // The files we keep refusing where Java reads them: (case, lines Java prints, what our error
    // says). Each sets hbase.client.retries.number to 7 and hbase.rpc.timeout to 30000, the
    // first three through an entity, which Java expands. An entity declared in the internal subset, and an external
    // one (Hadoop reads the file it names, external-timeout.txt): ours reads no entity
    // declarations. An external DTD (Hadoop reads configuration.dtd, which declares the
    // entity): ours reads no file an XML declaration names. An attribute list whose default
    // makes every property final (Hadoop applies it, so the file's later values of both are
    // ignored): ours applies no attribute defaults.
    type Lines = [(&'static str, &'static str); 2];
    const JAVA_READS: Lines = [
        ("hbase.client.retries.number", "7"),
        ("hbase.rpc.timeout", "30000"),
    ];
    const KEPT_REFUSED: [(&str, Lines, &str); 4] = [
        (
            "doctype_attlist.xml",
            JAVA_READS,
            "declares attribute lists",
        ),
        (
            "doctype_entity.xml",
            JAVA_READS,
            "entity declarations are not read by this client",
        ),
        (
            "doctype_external.xml",
            JAVA_READS,
            "entity declarations are not read by this client",
        ),
        ("doctype_system.xml", JAVA_READS, "names an external DTD"),
    ];
    let mut differences = Vec::new();
    let (mut lines, mut differing) = (0, 0);
    for case in &cases {
        let label = case.file_name().unwrap().to_string_lossy().to_string();
        let java = hbase_it::run_java_program(
            "Defaults.java",
            &[std::ffi::OsStr::new("site"), case.as_os_str()],
        );
        let java: Vec<(&str, &str)> = java
            .lines()
            .map(|l| l.split_once('\t').expect("NAME <tab> VALUE"))
            .collect();
        let ours = ClientConfig::from_hbase_site(case);
        let before = differences.len();
        if let Some((_, name)) = REFUSED.iter().find(|(c, _)| *c == label) {
            lines += 1;
            let line = java.iter().find(|(n, _)| n == name);
            if line.map(|(_, v)| *v) != Some("ERROR java.lang.NumberFormatException") {
                differences.push(format!("{label}: Java resolved {name}: {line:?}"));
            }
            match ours {
                Err(e @ Error::InvalidInput(_)) if e.to_string().contains(name) => {
                    assert_eq!(e.kind(), hbase_client::ErrorKind::DoNotRetry, "{e}")
                }
                other => differences.push(format!(
                    "{label}: expected an InvalidInput naming {name}, got {other:?}"
                )),
            }
            differing += usize::from(differences.len() > before);
            continue;
        }
        if let Some((_, reads, says)) = KEPT_REFUSED.iter().find(|(c, _, _)| *c == label) {
            lines += 1;
            let resolved = java.iter().all(|(_, v)| !v.starts_with("ERROR"));
            let read = reads.iter().all(|line| java.contains(line));
            let file = case.display().to_string();
            match ours {
                Err(e @ Error::InvalidInput(_))
                    if resolved
                        && read
                        && e.to_string().contains(says)
                        && e.to_string().contains(&file) => {}
                other => {
                    differing += 1;
                    differences.push(format!(
                        "{label}: the kept difference changed (Java resolves every value: \
                         {resolved}; Java's lines {reads:?}: {read}; ours should fail naming \
                         the file with {says:?}): {other:?}"
                    ));
                }
            }
            continue;
        }
        let c = match ours {
            Ok(c) => c,
            Err(e) => {
                // Every line Java resolved is one we did not.
                lines += java.len();
                differing += java.len();
                differences.push(format!("{label}: ours refused the file: {e}"));
                continue;
            }
        };
        let ours = printed(&c);
        assert_eq!(
            java.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            ours.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            "{label}: the same settings, in the same order"
        );
        for ((name, j), (_, o)) in java.iter().zip(&ours) {
            lines += 1;
            let kept = KEPT.iter().find(|(c, n, _, _)| *c == label && n == name);
            let fine = match kept {
                Some((_, _, kj, ko)) => j == kj && o == ko,
                // A default the case leaves alone, kept as client_defaults_are_the_java_clients
                // keeps it.
                None => j == o || DEFAULTS_KEPT.contains(&(*name, *j, o.as_str())),
            };
            if !fine {
                differing += 1;
                differences.push(format!("{label}: {name}: Java {j}, ours {o}"));
            }
        }
    }
    eprintln!(
        "{} cases, {lines} lines, {differing} read differently from the Java client",
        cases.len()
    );
    assert!(
        differences.is_empty(),
        "{differing} of {lines} lines read differently from the Java client (a file ours \
         refused counts all its lines):\n{}",
        differences.join("\n")
    );
}

/// Every character Java's `Configuration.getInt` reads as a number alone is read here with its
/// value, and no other: `Defaults.java digits` runs Java's `Long.parseLong` (the parser of
/// `getLong`; `getInt`'s reads the same digits) on every code point alone, in decimal and in
/// hexadecimal, and lists those it parses. Each is read here as a setting, alone and after
/// `0x`. Every other numeric character (Unicode's categories N*, as Rust's `char::is_numeric`
/// knows them: superscripts, fractions, Roman numerals, digits outside the Basic Multilingual
/// Plane, which Java's parser sees as two surrogates) and every other letter of the ASCII
/// and fullwidth alphabets must be refused.
#[test]
fn digits_are_javas() {
    let java = hbase_it::run_java_program("Defaults.java", &["digits"]);
    let number = |v: &str| (v != "-").then(|| v.parse::<u32>().expect("a value or -"));
    let digits: std::collections::BTreeMap<char, (Option<u32>, Option<u32>)> = java
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let [cp, decimal, hex] = f[..] else {
                panic!("CODE POINT <tab> DECIMAL <tab> HEX: {l:?}")
            };
            let cp = u32::from_str_radix(cp, 16).expect("hexadecimal code point");
            let c = char::from_u32(cp).expect("a char");
            (c, (number(decimal), number(hex)))
        })
        .collect();
    let retries = |value: String| {
        let mut site = HbaseSite::default();
        site.set("hbase.client.retries.number", value);
        site.to_builder()
            .and_then(|b| b.build())
            .map(|c| c.retries())
            .ok()
    };
    let ours = |c: char| (retries(c.to_string()), retries(format!("0x{c}")));
    let mut differences = Vec::new();
    for (&c, &java) in &digits {
        if ours(c) != java {
            differences.push(format!(
                "U+{:04X}: Java {java:?}, ours {:?}",
                u32::from(c),
                ours(c)
            ));
        }
    }
    let others: Vec<char> = (0..=0x10FFFFu32)
        .filter_map(char::from_u32)
        .filter(|c| !digits.contains_key(c))
        .filter(|c| {
            c.is_numeric() || c.is_ascii_alphabetic() || ('\u{FF21}'..='\u{FF5A}').contains(c)
        })
        .collect();
    for &c in &others {
        if ours(c) != (None, None) {
            differences.push(format!(
                "U+{:04X}: Java refuses it, ours reads {:?}",
                u32::from(c),
                ours(c)
            ));
        }
    }
    eprintln!(
        "{} characters Java reads as a number alone, {} others refused by Java; {} read differently",
        digits.len(),
        others.len(),
        differences.len()
    );
    assert!(digits.len() > 300, "Java read {} characters", digits.len());
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// What `Defaults.java` prints for the Java client, printed from `c`: its accessors, and the
/// values it has none for through `hbase_client::client_oracle` (NAME, VALUE; durations in ms,
/// sizes in bytes).
fn printed(c: &ClientConfig) -> Vec<(&'static str, String)> {
    use hbase_client::client_oracle;
    let ms = |d: Duration| d.as_millis().to_string();
    let join = |v: Vec<String>| v.join(",");
    // The pause before each retry, as a multiple of the pause (the smallest of 1,000 draws, as
    // Defaults.java takes Java's), and the jitter's range, in 0.1% of the pause.
    let pause = |attempt: u32| client_oracle::backoff_pause(c, attempt, false);
    let mut attempts = 1;
    let mut schedule = Vec::new();
    let (mut lowest, mut highest) = (f64::MAX, 0f64);
    while pause(attempts).is_some() {
        let least = (0..1000).map(|_| pause(attempts).unwrap()).min().unwrap();
        let multiple = least.as_nanos() / c.pause().as_nanos();
        schedule.push(multiple.to_string());
        let normal = c.pause().as_nanos() as f64 * multiple as f64;
        for _ in 0..100_000 / c.retries() {
            let jitter = (pause(attempts).unwrap().as_nanos() as f64 - normal) / normal;
            lowest = lowest.min(jitter);
            highest = highest.max(jitter);
        }
        attempts += 1;
    }
    vec![
        ("hbase.client.retries.number", c.retries().to_string()),
        ("attempts", attempts.to_string()),
        ("hbase.client.pause", ms(c.pause())),
        (
            "hbase.client.pause.server.overloaded",
            ms(c.pause_server_overloaded()),
        ),
        ("hbase.rpc.timeout", ms(c.rpc_timeout())),
        ("hbase.client.operation.timeout", ms(c.operation_timeout())),
        (
            "hbase.client.write.buffer",
            c.write_buffer_size().to_string(),
        ),
        (
            "hbase.client.write.buffer.periodicflush.timeout.ms",
            c.write_buffer_periodic_flush().map_or("0".into(), ms),
        ),
        (
            "hbase.client.write.buffer.maxmutations",
            c.write_buffer_max_mutations()
                .map_or("-1".into(), |n| n.to_string()),
        ),
        // No check at all: Java's -1 (any value of 0 or less), our usize::MAX.
        (
            "hbase.client.keyvalue.maxsize",
            match c.keyvalue_max_size() {
                usize::MAX => "-1".into(),
                n => n.to_string(),
            },
        ),
        (
            "hbase.client.scanner.caching",
            c.scanner_caching().to_string(),
        ),
        (
            "hbase.client.scanner.max.result.size",
            c.scanner_max_result_size().to_string(),
        ),
        (
            "hbase.client.max.perrequest.heapsize",
            c.max_request_size().to_string(),
        ),
        (
            "hbase.client.max.perrequest.rows",
            c.max_request_rows().to_string(),
        ),
        (
            "hbase.client.max.perserver.tasks",
            c.max_tasks_per_server().to_string(),
        ),
        (
            "hbase.client.max.perregion.tasks",
            c.max_tasks_per_region().to_string(),
        ),
        (
            "hbase.client.meta.max.concurrent.locate.per.table",
            c.meta_lookups_per_table().to_string(),
        ),
        (
            "hbase.client.locate.prefetch.limit",
            c.meta_prefetch().to_string(),
        ),
        (
            "hbase.ipc.client.failed.servers.expiry",
            ms(c.failed_server_expiry()),
        ),
        (
            "hbase.ipc.client.socket.timeout.connect",
            ms(c.connect_timeout()),
        ),
        ("zookeeper.session.timeout", ms(c.zk_session_timeout())),
        (
            "hbase.client.bootstrap.refresh_interval_secs",
            c.bootstrap_refresh_interval().as_secs().to_string(),
        ),
        (
            "RETRY_BACKOFF",
            join(
                hbase_client::RETRY_BACKOFF
                    .iter()
                    .map(|n| n.to_string())
                    .collect(),
            ),
        ),
        ("backoff.schedule", join(schedule)),
        (
            "backoff.jitter",
            format!("{}%..{}%", java_percent(lowest), java_percent(highest)),
        ),
    ]
}

/// `x` (a fraction) in percent with one decimal, as Java's `%.1f` shows it (`Infinity` where
/// Rust says `inf`: the jitter's lowest of no draws at all, with no retries).
fn java_percent(x: f64) -> String {
    let percent = x * 100.0;
    if percent.is_infinite() {
        return if percent > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .into();
    }
    format!("{percent:.1}")
}
