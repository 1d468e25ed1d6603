//! Bad input to the client API, against a real HBase: oversized row keys and values, empty
//! puts, unknown column families and disabled tables. Each gives a typed error (before
//! anything is sent where the client can tell), never a hang or a panic. And bad input to
//! `ycsb`: every numeric property swept (negative, zero, huge, non-numeric, and a
//! property-based sweep) is refused before the run with a message naming the property and
//! its accepted range; bad command lines exit non-zero with no report.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hbase_client::{
    Action, Append, CheckAndMutate, Client, Comparator, CompareOp, Delete, Error, ErrorKind,
    Filter, Get, Increment, MutatorConfig, Put, Scan,
};
use proptest::strategy::Strategy;

/// Bounds one call: an error is fine, a hang is not.
async fn bounded<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"))
}

fn calls(client: &Client) -> u64 {
    client.stats().total(|s| s.calls)
}

fn assert_invalid<T: std::fmt::Debug>(what: &str, r: hbase_client::Result<T>, says: &str) {
    match r {
        Err(Error::InvalidInput(m)) => assert!(m.contains(says), "{what}: {m}"),
        other => panic!("{what}: expected InvalidInput ({says}), got {other:?}"),
    }
}

async fn client() -> Client {
    let config = hbase_it::config_builder()
        .operation_timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    Client::connect(config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_keys_values_and_empty_puts_fail_before_sending() {
    let client = client().await;
    let name = hbase_it::unique_table("bad_input");
    hbase_it::create_table(&client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    // Warm the region cache so that nothing below needs a meta lookup either.
    t.put(Put::new("warm").add("cf", "q", "v")).await.unwrap();
    let long = Bytes::from(vec![b'k'; 32768]);
    let max = Bytes::from(vec![b'm'; 32767]);
    let big = Bytes::from(vec![7u8; 10 * 1024 * 1024]);

    let sent = calls(&client);
    assert_invalid(
        "put, long row",
        bounded("put", t.put(Put::new(long.clone()).add("cf", "q", "v"))).await,
        "32767",
    );
    assert_invalid(
        "get, long row",
        bounded("get", t.get(Get::new(long.clone()))).await,
        "32767",
    );
    assert_invalid(
        "exists, long row",
        bounded("exists", t.exists(Get::new(long.clone()))).await,
        "32767",
    );
    assert_invalid(
        "delete row, long row",
        bounded("delete", t.delete(Delete::new(long.clone()))).await,
        "32767",
    );
    assert_invalid(
        "delete column, long row",
        bounded(
            "delete",
            t.delete(Delete::new(long.clone()).column("cf", "q")),
        )
        .await,
        "32767",
    );
    assert_invalid(
        "increment, long row",
        bounded(
            "incr",
            t.increment(Increment::new(long.clone()).add("cf", "c", 1)),
        )
        .await,
        "32767",
    );
    assert_invalid(
        "append, long row",
        bounded(
            "append",
            t.append(Append::new(long.clone()).add("cf", "a", "x")),
        )
        .await,
        "32767",
    );
    assert_invalid(
        "check-and-put, long row",
        bounded(
            "cam",
            t.check_and_mutate(
                CheckAndMutate::new(long.clone(), "cf", "q")
                    .if_absent()
                    .then_put(Put::new(long.clone()).add("cf", "q", "v")),
            ),
        )
        .await,
        "32767",
    );
    assert_invalid(
        "empty put",
        bounded("put", t.put(Put::new("r"))).await,
        "at least one cell",
    );
    assert_invalid(
        "empty row",
        bounded("get", t.get(Get::new(""))).await,
        "empty",
    );
    assert_invalid(
        "value of 10 MiB (KeyValue over 10,485,760 bytes)",
        bounded("put", t.put(Put::new("big").add("cf", "q", big.clone()))).await,
        "KeyValue size too large",
    );
    assert_invalid(
        "append of 10 MiB",
        bounded(
            "append",
            t.append(Append::new("big").add("cf", "q", big.clone())),
        )
        .await,
        "KeyValue size too large",
    );
    assert_invalid(
        "family of 128 bytes",
        bounded("put", t.put(Put::new("r").add(vec![b'f'; 128], "q", "v"))).await,
        "1..=127",
    );
    // Batches: the bad actions fail alone, before sending; the good one goes through.
    let actions = vec![
        Action::Put(Put::new(long.clone()).add("cf", "q", "v")),
        Action::Put(Put::new("empty")),
        Action::Get(Get::new(long.clone())),
        Action::Put(Put::new("big").add("cf", "q", big.clone())),
        Action::Delete(Delete::new(long.clone())),
    ];
    for (i, r) in bounded("batch", t.batch(&actions))
        .await
        .into_iter()
        .enumerate()
    {
        assert!(
            matches!(r, Err(Error::InvalidInput(_))),
            "batch action {i}: {r:?}"
        );
    }
    // The buffered mutator refuses them in mutate().
    let m = client
        .buffered_mutator(&name.to_string(), MutatorConfig::default())
        .unwrap();
    assert_invalid(
        "mutator, long row",
        m.mutate(Put::new(long.clone()).add("cf", "q", "v")).await,
        "32767",
    );
    assert_invalid(
        "mutator, empty put",
        m.mutate(Put::new("e")).await,
        "at least one cell",
    );
    assert_invalid(
        "mutator, big value",
        m.mutate(Put::new("big").add("cf", "q", big.clone())).await,
        "KeyValue size too large",
    );
    m.close().await.unwrap();
    assert_eq!(calls(&client), sent, "invalid input reached the network");

    // The limits themselves are accepted: a 32767-byte row, a value just under 10 MiB.
    let near = Bytes::from(vec![9u8; 10 * 1024 * 1024 - 1024]);
    t.put(Put::new(max.clone()).add("cf", "q", "v"))
        .await
        .unwrap();
    t.put(Put::new("near").add("cf", "q", near.clone()))
        .await
        .unwrap();
    let row = t.get(Get::new(max.clone())).await.unwrap().unwrap();
    assert_eq!(row.row, max);
    let row = t.get(Get::new("near")).await.unwrap().unwrap();
    assert_eq!(row.value(b"cf", b"q"), Some(&near[..]));
    hbase_it::drop_table(&client, &name).await;
}

/// A filter whose regular expression Java cannot compile: the region server refuses the call
/// at once, and the error's root cause is the deepest `Caused by:` of the server's trace (here
/// already part of the first line, so the message does not say it twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_filter_gives_the_servers_root_cause() {
    let client = client().await;
    let name = hbase_it::unique_table("bad_regex");
    hbase_it::create_table(&client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    let get = Get::new("r").filter(Filter::Row(CompareOp::Equal, Comparator::Regex("(".into())));
    let err = bounded("get", t.get(get)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{err}");
    let remote = err.remote().expect("the server's exception");
    let cause = "java.util.regex.PatternSyntaxException: Unclosed group near index 1";
    assert_eq!(remote.root_cause(), Some(cause), "{remote:?}");
    assert!(remote.first_line().contains(cause), "{remote:?}");
    assert!(!err.to_string().contains("(caused by"), "{err}");
    assert_eq!(err.to_string().matches(cause).count(), 1, "{err}");
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_family_fails_at_once_with_its_row() {
    let client = client().await;
    let name = hbase_it::unique_table("bad_family");
    hbase_it::create_table(&client, &name, &[]).await;
    let t = client.table(&name.to_string()).unwrap();
    t.put(Put::new("ok").add("cf", "q", "v")).await.unwrap();

    let started = Instant::now();
    let err = bounded("put", t.put(Put::new("r").add("nope", "q", "v")))
        .await
        .unwrap_err();
    eprintln!("put to unknown family: {err}");
    assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{err}");
    assert_eq!(
        err.remote().unwrap().short_class_name(),
        "NoSuchColumnFamilyException"
    );
    let err = bounded("get", t.get(Get::new("ok").family("nope")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{err}");
    let scan = bounded("scan", t.scan(Scan::new().family("nope")).collect_all()).await;
    assert!(scan.is_err(), "{scan:?}");

    // In a batch only that action fails; the good one is applied.
    let actions = vec![
        Action::Put(Put::new("b1").add("nope", "q", "v")),
        Action::Put(Put::new("b2").add("cf", "q", "v")),
    ];
    let out = bounded("batch", t.batch(&actions)).await;
    let e = out[0].as_ref().unwrap_err();
    assert_eq!(
        e.remote().unwrap().short_class_name(),
        "NoSuchColumnFamilyException"
    );
    assert!(out[1].is_ok());

    // The buffered mutator reports the row, through the listener and close().
    let reported = Arc::new(Mutex::new(Vec::new()));
    let r2 = reported.clone();
    let m = client
        .buffered_mutator(
            &name.to_string(),
            MutatorConfig::default().on_failure(move |f| r2.lock().unwrap().push(f.row().clone())),
        )
        .unwrap();
    m.mutate(Put::new("m1").add("nope", "q", "v"))
        .await
        .unwrap();
    m.mutate(Put::new("m2").add("cf", "q", "v")).await.unwrap();
    match bounded("close", m.close()).await {
        Err(Error::MutationsFailed { failures, .. }) => {
            assert_eq!(failures.len(), 1);
            assert_eq!(&failures[0].row()[..], b"m1");
            assert_eq!(failures[0].error().kind(), ErrorKind::DoNotRetry);
        }
        other => panic!("expected MutationsFailed, got {other:?}"),
    }
    assert_eq!(*reported.lock().unwrap(), vec![Bytes::from("m1")]);
    assert!(t.get(Get::new("m2")).await.unwrap().is_some());
    assert!(t.get(Get::new("m1")).await.unwrap().is_none());
    // No retries were spent on any of it (counted, not timed: the machine is shared).
    eprintln!("unknown family, all paths: {:?}", started.elapsed());
    assert_eq!(client.stats().total(|s| s.retries), 0);
    assert_eq!(client.stats().total(|s| s.relocations), 0);
    hbase_it::drop_table(&client, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_table_gives_a_typed_error_not_a_hang() {
    let client = client().await;
    let name = hbase_it::unique_table("bad_disabled");
    hbase_it::create_table(&client, &name, &["m"]).await;
    let t = client.table(&name.to_string()).unwrap();
    t.put(Put::new("a").add("cf", "q", "v")).await.unwrap();
    client.admin().disable_table(&name).await.unwrap();

    let started = Instant::now();
    let put = bounded("put", t.put(Put::new("a").add("cf", "q", "w"))).await;
    let get = bounded("get", t.get(Get::new("z"))).await;
    let batch = bounded("batch", t.batch(&[Action::Get(Get::new("a"))])).await;
    let took = started.elapsed();
    eprintln!("disabled table after {took:?}: put {put:?}\nget {get:?}\nbatch {batch:?}");
    for (what, err) in [
        ("put", put.map(|_| ()).unwrap_err()),
        ("get", get.map(|_| ()).unwrap_err()),
        (
            "batch",
            batch.into_iter().next().unwrap().map(|_| ()).unwrap_err(),
        ),
    ] {
        assert!(
            matches!(err, Error::TableDisabled(_)),
            "{what}: expected TableDisabled, got {err}"
        );
        assert_eq!(err.kind(), ErrorKind::DoNotRetry, "{what}");
    }
    // `bounded` (30 s, above the 20 s operation timeout) would catch a hang; the errors are
    // TableDisabled, not timeouts, so no operation waited out its deadline.

    client.admin().enable_table(&name).await.unwrap();
    let row = t.get(Get::new("a")).await.unwrap().unwrap();
    assert_eq!(row.value(b"cf", b"q").unwrap(), b"v");
    hbase_it::drop_table(&client, &name).await;
}

// ---------------------------------------------------------------------------------------------
// ycsb: every property is checked before a run starts (nothing connects, nothing is written)

/// A numeric property of ycsb, the properties that make it used, and what it accepts.
struct Numeric {
    name: &'static str,
    context: &'static [&'static str],
    min: f64,
    max: f64,
    integer: bool,
    /// Values inside the range that are still refused (e.g. zipfian.constant=1).
    refused: &'static [f64],
}

const INT_MAX: f64 = 2_147_483_647.0;

const fn int(name: &'static str, min: f64, max: f64) -> Numeric {
    Numeric {
        name,
        context: &[],
        min,
        max,
        integer: true,
        refused: &[],
    }
}

const fn float(name: &'static str, min: f64, max: f64) -> Numeric {
    Numeric {
        name,
        context: &[],
        min,
        max,
        integer: false,
        refused: &[],
    }
}

/// Under the base command line: `run`, the HBase binding, workload A with uniform requests,
/// recordcount=100, operationcount=100.
const NUMERIC: &[Numeric] = &[
    int("threadcount", 1.0, 1_000_000.0),
    float("target", 0.0, 1e9),
    int("operationcount", 0.0, INT_MAX),
    int("recordcount", 0.0, INT_MAX),
    int("insertstart", 0.0, 99.0),
    int("insertcount", 1.0, 100.0),
    int("fieldcount", 1.0, 1_000_000.0),
    int("fieldlength", 0.0, 10_485_760.0),
    int("minfieldlength", 0.0, 10_485_760.0),
    int("zeropadding", 0.0, 32_000.0),
    int("minscanlength", 1.0, 1000.0),
    int("maxscanlength", 1.0, INT_MAX),
    int("maxexecutiontime", 0.0, INT_MAX),
    int("status.interval", 1.0, 31_536_000.0),
    int("warmuptime", 0.0, INT_MAX),
    int("wakeupcoalescing.us", 0.0, 100_000.0),
    int("core_workload_insertion_retry_limit", 0.0, INT_MAX),
    int("core_workload_insertion_retry_interval", 0.0, 86_400.0),
    int("histogram.buckets", 1.0, 100_000_000.0),
    int("timeseries.granularity", 1.0, INT_MAX),
    int("writebuffersize", 1.0, 17_179_869_184.0),
    int("writebufferlimit", 1.0, 9.223_372_036_854_776e18),
    int("presplit", 1.0, 10_000.0),
    int("seed", 0.0, 9.223_372_036_854_776e18),
    int("hbase.client.connect.timeout.seconds", 1.0, 3600.0),
    float("readproportion", 0.0, 1e6),
    float("updateproportion", 0.0, 1e6),
    float("insertproportion", 0.0, 1e6),
    float("scanproportion", 0.0, 1e6),
    float("readmodifywriteproportion", 0.0, 1e6),
    Numeric {
        refused: &[0.0, 1.0],
        ..float("zipfian.constant", 0.0, 100.0)
    },
    Numeric {
        context: &["requestdistribution=hotspot"],
        ..float("hotspotdatafraction", 0.0, 1.0)
    },
    Numeric {
        context: &["requestdistribution=hotspot"],
        ..float("hotspotopnfraction", 0.0, 1.0)
    },
    Numeric {
        context: &["requestdistribution=exponential"],
        refused: &[0.0, 100.0],
        ..float("exponential.percentile", 0.0, 100.0)
    },
    Numeric {
        context: &["requestdistribution=exponential"],
        refused: &[0.0],
        ..float("exponential.frac", 0.0, 1e6)
    },
];

fn ycsb_check(n: &Numeric, value: &str) -> Result<(), ycsb::Error> {
    let mut args: Vec<String> = [
        "run",
        "--zk",
        "127.0.0.1:1",
        "-P",
        "workloada",
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=100",
        "-p",
        "requestdistribution=uniform",
    ]
    .map(String::from)
    .to_vec();
    for c in n.context {
        args.push("-p".into());
        args.push(c.to_string());
    }
    args.push("-p".into());
    args.push(format!("{}={value}", n.name));
    ycsb::check_command_line(&args)
}

/// Whether `value` is one `n` accepts.
fn accepted(n: &Numeric, value: &str) -> bool {
    let v = value.trim();
    let x = if n.integer {
        match v.parse::<i64>() {
            Ok(i) => i as f64,
            Err(_) => return false,
        }
    } else {
        match v.parse::<f64>() {
            Ok(f) if f.is_finite() => f,
            _ => return false,
        }
    };
    x >= n.min && x <= n.max && !n.refused.contains(&x)
}

fn assert_checked(n: &Numeric, value: &str) {
    let result = std::panic::catch_unwind(|| ycsb_check(n, value))
        .unwrap_or_else(|_| panic!("{}={value:?}: the check panicked", n.name));
    match (accepted(n, value), result) {
        (true, Ok(())) => {}
        (true, Err(e)) => panic!("{}={value:?} is in range but refused: {e}", n.name),
        (false, Ok(())) => panic!("{}={value:?} is out of range but accepted", n.name),
        (false, Err(ycsb::Error::Config(m))) => {
            assert!(
                m.contains(n.name),
                "{}={value:?}: the message does not name it: {m}",
                n.name
            );
            assert!(
                m.contains("accepted"),
                "{}={value:?}: no accepted range in: {m}",
                n.name
            );
            assert!(!m.contains('\n'), "{m}");
        }
        (false, Err(e)) => panic!("{}={value:?}: not a configuration error: {e:?}", n.name),
    }
}

/// A boolean property is `true` or `false` (any case); anything else is refused, naming it.
/// Java's `Boolean.parseBoolean` reads anything else as false, so `dataintegrity=1` turned
/// verification off without a word.
#[test]
fn ycsb_boolean_properties_are_true_or_false() {
    for name in [
        "dataintegrity",
        "readallfields",
        "writeallfields",
        "clientbuffering",
        "sharedwritebuffer",
        "createtable",
        "measurement.raw.no_summary",
    ] {
        let n = int(name, 0.0, 0.0);
        for ok in ["true", "false", "TRUE", "False", " true "] {
            ycsb_check(&n, ok).unwrap_or_else(|e| panic!("{name}={ok:?} refused: {e}"));
        }
        for bad in ["1", "yes", "", "on", "t"] {
            match ycsb_check(&n, bad) {
                Err(ycsb::Error::Config(m)) => {
                    assert!(m.contains(name) && m.contains("true or false"), "{m}")
                }
                other => panic!("{name}={bad:?}: {other:?}"),
            }
        }
    }
}

/// Where the report and the measurements go is checked before the run: an export file, a raw
/// measurement file or an HDR log path that cannot be written is refused, naming its property
/// (before, the whole run went by, then it failed and its report was lost).
#[test]
fn ycsb_output_files_are_checked_before_the_run() {
    for (name, extra) in [
        ("exportfile", None),
        ("measurement.raw.output_file", Some("measurementtype=raw")),
        (
            "hdrhistogram.output.path",
            Some("hdrhistogram.fileoutput=true"),
        ),
    ] {
        let n = Numeric {
            context: match extra {
                Some("measurementtype=raw") => &["measurementtype=raw"],
                Some(_) => &["hdrhistogram.fileoutput=true"],
                None => &[],
            },
            ..int(name, 0.0, 0.0)
        };
        match ycsb_check(&n, "/nonexistent-dir-of-the-test/x") {
            Err(ycsb::Error::Config(m)) => {
                assert!(m.contains(name) && m.contains("cannot be written"), "{m}")
            }
            other => panic!("{name}: {other:?}"),
        }
        let dir = std::env::temp_dir().join(format!("ycsb-out-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = format!("{}/", dir.display());
        let path = if name == "hdrhistogram.output.path" {
            ok.clone()
        } else {
            format!("{ok}out.txt")
        };
        ycsb_check(&n, &path).unwrap_or_else(|e| panic!("{name}={path}: {e}"));
        // The check leaves nothing behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{name}");
        std::fs::remove_dir(&dir).unwrap();
    }
}

/// `ycsb sweep` with a measurement type that keeps no HdrHistogram is refused before the
/// load and the points (its summaries read the points' interval logs: it ran every point, then
/// failed with "no <OP>.hdr interval logs").
#[tokio::test]
async fn ycsb_sweep_without_hdr_logs_is_refused_before_any_point() {
    let out = std::env::temp_dir().join(format!("ycsb-sweep-nohdr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let line = format!(
        "sweep memory -P workloadc -threads 1,2 -p recordcount=100 -p operationcount=100 -p measurementtype=timeseries -p sweep.exe={} --out {}",
        env!("CARGO_BIN_EXE_ycsb-it"),
        out.display()
    );
    let args: Vec<String> = line.split_whitespace().map(String::from).collect();
    match ycsb::execute(&args).await {
        Err(ycsb::Error::Config(m)) => {
            assert!(m.contains("measurementtype=timeseries"), "{m}")
        }
        Err(e) => panic!("not a configuration error: {e:?}"),
        Ok(_) => panic!("the sweep ran"),
    }
    let points = out.join("points");
    let ran = std::fs::read_dir(&points).map_or(0, |d| d.count());
    assert_eq!(ran, 0, "points ran: {}", points.display());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn ycsb_numeric_properties_are_range_checked_before_the_run() {
    let values = [
        "-1",
        "-5",
        "0",
        "1",
        "2",
        "100",
        "2147483647",
        "2147483648",
        "9223372036854775807",
        "99999999999999999999",
        "1e400",
        "-1e400",
        "abc",
        "1.5",
        "0.5",
        "NaN",
        "inf",
        "",
        "0x10",
        "12abc",
    ];
    let mut checked = 0;
    for n in NUMERIC {
        for v in values {
            assert_checked(n, v);
            checked += 1;
        }
    }
    eprintln!("{checked} property values checked");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    #[test]
    fn ycsb_property_sweep(
        which in 0..NUMERIC.len(),
        value in proptest::prop_oneof![
            proptest::num::i64::ANY.prop_map(|i| i.to_string()),
            (-1000i64..=3_000_000_000).prop_map(|i| i.to_string()),
            proptest::num::f64::ANY.prop_map(|f| f.to_string()),
            (-2.0f64..200.0).prop_map(|f| f.to_string()),
            "[-+0-9a-z.e ]{0,12}",
        ],
    ) {
        assert_checked(&NUMERIC[which], &value);
    }
}

#[test]
fn ycsb_bad_command_lines_fail_with_the_property_named() {
    for (line, says) in [
        ("run memory -P workloada -threads -5", "threadcount=-5 is out of range"),
        ("run memory -P workloada -target -1", "target=-1 is out of range"),
        ("run memory -P workloada -p recordcount=-1", "recordcount=-1 is out of range"),
        ("run memory -P workloada -p operationcount=ten", "operationcount=\"ten\""),
        ("run memory -P workloada -p hdrhistogram.percentiles=50,101", "hdrhistogram.percentiles"),
        ("run memory -P workloada -p measurementtype=bins", "measurementtype"),
        ("run memory -P workloads/nonexistent", "does not exist"),
        ("load --zk 127.0.0.1:1 -P workloada -p hbase.client.retries.number=2147483648", "hbase.client.retries.number=\"2147483648\" is not a number"),
        ("load --zk 127.0.0.1:1 -P workloada -p hbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry", "needs hbase.client.bootstrap.servers"),
        ("load -P workloada -p hbase.client.registry.impl=com.example.Registry", "hbase.client.registry.impl=com.example.Registry"),
        ("load -P workloada -p hbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry -p hbase.client.bootstrap.servers=m1", "hbase.client.bootstrap.servers"),
    ] {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ycsb-it"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{line}: {stderr}");
        assert!(stderr.contains(says), "{line}: {stderr}");
        assert!(out.stdout.is_empty(), "{line}: a report on stdout");
    }
}

/// The client-side KeyValue size limit is the Java client's: each case is a put (row, family
/// and qualifier sizes, one value size per cell) and a value of `hbase.client.keyvalue.maxsize`
/// (unset, 100, 0, -1). `tests/java/interop/Defaults.java` checks it with the Java client's own
/// `ConnectionUtils.validatePut`, against the limit the Java client reads from that
/// configuration; ours with the check every write path makes before sending
/// (`hbase_client::client_oracle::validate_mutation`), against the limit `HbaseSite` reads.
/// No HBase needed. The size is each cell's own KeyValue (row, family, qualifier, value, and
/// 20 bytes of lengths, timestamp and type), never the put's sum, and a cell of exactly the
/// limit passes.
#[test]
fn keyvalue_size_limit_is_the_java_clients() {
    use hbase_client::{client_oracle, HbaseSite, Mutation};
    const L: usize = 10 * 1024 * 1024;
    // (hbase.client.keyvalue.maxsize, row, family, qualifier, values)
    let mut cases: Vec<(&str, usize, usize, usize, Vec<usize>)> = Vec::new();
    // One cell at the default limit - 1, the limit and the limit + 1 (a 3-byte row, 2-byte
    // family, 1-byte qualifier: 26 bytes besides the value).
    for v in [L - 27, L - 26, L - 25] {
        cases.push(("default", 3, 2, 1, vec![v]));
    }
    // Several cells: each at most the limit passes, though together they are twice it; one
    // over fails the put, wherever it is.
    cases.push(("default", 3, 2, 1, vec![L - 26, L - 26]));
    cases.push(("default", 3, 2, 1, vec![10, L - 25]));
    cases.push(("default", 3, 2, 1, vec![L - 25, 10, 20]));
    // What counts: a byte more of row, family, qualifier or value crosses a limit of 100.
    for (row, family, qualifier, value) in [
        (50, 10, 20, 0),
        (51, 10, 20, 0),
        (50, 11, 20, 0),
        (50, 10, 21, 0),
        (50, 10, 20, 1),
        (3, 2, 0, 75),
        (3, 2, 0, 76),
        (3, 2, 1, 73),
        (3, 2, 1, 74),
        (3, 2, 1, 75),
    ] {
        cases.push(("100", row, family, qualifier, vec![value]));
    }
    cases.push(("100", 3, 2, 1, vec![74, 74, 74]));
    cases.push(("100", 3, 2, 1, vec![74, 75]));
    // No limit at all when it is 0 or less.
    for max in ["0", "-1"] {
        cases.push((max, 3, 2, 1, vec![L + 1]));
        cases.push((max, 3, 2, 1, vec![10, 2 * L]));
    }
    let specs: Vec<String> = cases
        .iter()
        .map(|(max, r, f, q, values)| {
            let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            format!("{max}:{r}:{f}:{q}:{}", values.join(","))
        })
        .collect();
    let mut args = vec!["keyvalue".to_string()];
    args.extend(specs.iter().cloned());
    let java = hbase_it::run_java_program("Defaults.java", &args);
    assert_eq!(java.lines().count(), cases.len(), "Java's output:\n{java}");
    let mut differences = Vec::new();
    for ((spec, (max, row, family, qualifier, values)), j) in
        specs.iter().zip(&cases).zip(java.lines())
    {
        let mut site = HbaseSite::default();
        if *max != "default" {
            site.set("hbase.client.keyvalue.maxsize", *max);
        }
        let limit = site
            .to_builder()
            .unwrap()
            .build()
            .unwrap()
            .keyvalue_max_size();
        let mut put = Put::new(vec![b'r'; *row]);
        for (i, v) in values.iter().enumerate() {
            let mut q = vec![b'q'; *qualifier];
            if let Some(last) = q.last_mut() {
                *last = b'a' + i as u8;
            }
            put = put.add(vec![b'f'; *family], q, vec![b'v'; *v]);
        }
        let ours = match client_oracle::validate_mutation(&Mutation::Put(put), limit) {
            Ok(()) => "ok".to_string(),
            Err(e) => {
                assert!(
                    e.to_string().contains("KeyValue size too large"),
                    "{spec}: {e}"
                );
                "refused".to_string()
            }
        };
        let java_verdict = j.split('\t').next().unwrap();
        if java_verdict != ours {
            differences.push(format!("{spec}: Java {j}; ours {ours} (limit {limit})"));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} puts checked differently from the Java client:\n{}",
        differences.len(),
        cases.len(),
        differences.join("\n")
    );
}
