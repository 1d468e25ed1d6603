//! The conformance suite: the real Java YCSB (`site.ycsb:core:0.17.0` from Maven Central,
//! driven by our harness in `tests/java/ycsb`) beside our `ycsb`, compared exactly: keys (FNV
//! hashing, ordering, zero padding), dataintegrity values, the zeta constants and the
//! generators' outputs for the same random sequence, the operation stream of every core
//! workload (each written value's length too, under every field length distribution), report text for the same measurements (text, JSON and JSON-array exporters, every
//! measurement type), status lines, `BasicDB`'s output, the interactive shell, how a `-P`
//! file, a command line and a field-length histogram file are read and the iteration orders
//! of Java's hash containers.
//!
//! Random sequences: the harness seeds its thread's `ThreadLocalRandom` and prints the thread
//! id; our `JavaRandom` with the same seed and id draws the same numbers (the first test proves
//! it), so every generator can be compared draw for draw.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hbase_it::ycsb_java::{oracle, repo, run_with_stdin, ycsb_oracle};
use ycsb::db::{Db, FieldValue, Record, Status, Values};
use ycsb::generator::{
    zeta_static, AcknowledgedCounter, Discrete, Exponential, HistogramGen, Hotspot,
    ScrambledZipfian, SkewedLatest, UniformLong, Zipfian, SCRAMBLED_ITEM_COUNT, SCRAMBLED_ZETAN,
    ZIPFIAN_CONSTANT,
};
use ycsb::java::JavaRandom;
use ycsb::measurements::{report_lines, Exporter, MeasurementConfig, Measurements};
use ycsb::props::Properties;
use ycsb::util::fnvhash64;
use ycsb::workload::{build_key_name, deterministic_value, CoreWorkload};

/// The `tid N` line the harness prints before drawing.
fn thread_id(out: &str) -> (u64, Vec<&str>) {
    let mut lines = out.lines();
    let tid = lines
        .next()
        .and_then(|l| l.strip_prefix("tid "))
        .unwrap_or_else(|| panic!("no thread id in {out:?}"))
        .parse()
        .unwrap();
    (tid, lines.collect())
}

/// Line-by-line comparison that points at the first difference.
fn assert_same(what: &str, java: &str, ours: &str) {
    if java == ours {
        return;
    }
    let (j, o): (Vec<&str>, Vec<&str>) = (java.lines().collect(), ours.lines().collect());
    for i in 0..j.len().max(o.len()) {
        let (a, b) = (j.get(i), o.get(i));
        if a != b {
            panic!(
                "{what}: first difference at line {}:\n java: {a:?}\n ours: {b:?}\n--- java ---\n{java}\n--- ours ---\n{ours}",
                i + 1
            );
        }
    }
    panic!("{what}: the texts differ in line endings:\n{java:?}\n{ours:?}");
}

#[test]
fn java_random_draws_what_thread_local_random_draws() {
    for seed in [0u64, 42, 0x9E37_79B9_7F4A_7C15, u64::MAX] {
        let out = oracle(&["tlr", &(seed as i64).to_string(), "200"], None);
        let (tid, lines) = thread_id(&out);
        let mut r = JavaRandom::new(seed, tid);
        let mut ours = String::new();
        for _ in 0..200 {
            ours.push_str(&format!("L {}\n", r.next_long()));
            ours.push_str(&format!("I {}\n", r.next_int()));
            ours.push_str(&format!("D {}\n", r.next_double().to_bits() as i64));
        }
        assert_same("ThreadLocalRandom", &(lines.join("\n") + "\n"), &ours);
    }
}

#[test]
fn fnv_hashes_and_keys() {
    let nums: Vec<i64> = [
        0,
        1,
        2,
        5,
        42,
        999,
        1 << 31,
        i32::MAX as i64,
        -1,
        -7,
        i64::MIN,
        i64::MAX,
    ]
    .into_iter()
    .chain((0..200).map(|i| i * 7919))
    .collect();
    let args: Vec<String> = nums.iter().map(|n| n.to_string()).collect();
    let mut a = vec!["fnv"];
    a.extend(args.iter().map(String::as_str));
    let java = oracle(&a, None);
    let ours: String = nums
        .iter()
        .map(|&n| format!("{}\n", fnvhash64(n)))
        .collect();
    assert_same("fnvhash64", &java, &ours);

    let mut script = String::new();
    let mut ours = String::new();
    // Negative key numbers too (Long.toString's sign counts in the padding), and both ends of
    // the long range, with hashed keys (fnvhash64's Math.abs leaves i64::MIN negative) and
    // ordered ones.
    let mut keynums = vec![0i64, 1, 7, 42, 12345, 1_000_000, i32::MAX as i64];
    for edge in [-42i64, -1, i64::MIN, i64::MAX, i32::MIN as i64] {
        keynums.extend((-2..=2).map(|d| edge.saturating_add(d)));
    }
    keynums.sort();
    keynums.dedup();
    for pad in [0usize, 1, 2, 3, 5, 19, 20, 21, 25] {
        for order in ["hashed", "ordered"] {
            for &k in &keynums {
                script.push_str(&format!("{pad} {order} {k}\n"));
                ours.push_str(&build_key_name(k, pad, order == "ordered"));
                ours.push('\n');
            }
        }
    }
    let java = oracle(&["keys"], Some(&script));
    assert_same("CoreWorkload.buildKeyName", &java, &ours);
}

/// Doubles print as Java's `Double.toString` prints them (the report's numbers): 60,000
/// drawn four ways (any bits; report-like values; values at a tie between two shortest digit
/// strings, which Java breaks to the even digit; large whole numbers with short binary
/// fractions). A JDK before 19 sometimes prints a 17th digit the shortest form does not need;
/// that one difference is allowed on such a JDK, and only when Java's text is the longer and
/// reads back as the same double.
#[test]
fn doubles_print_as_javas_double_tostring() {
    let mut next = hbase_it::xorshift(0x0dd_ba11_5eed_u64);
    let mut doubles = Vec::new();
    while doubles.len() < 60_000 {
        let d = match doubles.len() % 4 {
            0 => f64::from_bits(next()),
            1 => (next() % 1_000_000_000_000) as f64 / (1 + next() % 100_000) as f64,
            2 => {
                ((1u64 << 39) + next() % (1u64 << 39)) as f64
                    + (2 * (next() % 16) + 1) as f64 / 32.0
            }
            _ => (next() % (1u64 << (30 + next() % 24))) as f64 + (next() % 1024) as f64 / 1024.0,
        };
        if d.is_finite() {
            doubles.push(d);
        }
    }
    let input: String = doubles
        .iter()
        .map(|d| format!("{}\n", d.to_bits() as i64))
        .collect();
    let out = oracle(&["doubles"], Some(&input));
    let mut lines = out.lines();
    let feature: u32 = lines
        .next()
        .and_then(|l| l.strip_prefix("feature "))
        .and_then(|v| v.parse().ok())
        .expect("the JDK's feature version");
    let java: Vec<&str> = lines.collect();
    assert_eq!(java.len(), doubles.len());
    let (mut longer_in_java, mut differences) = (0, Vec::new());
    for (d, j) in doubles.iter().zip(&java) {
        let ours = ycsb::util::java_double(*d);
        if ours == *j {
            continue;
        }
        let reads_back = j.parse::<f64>().ok() == Some(*d);
        if feature < 19 && j.len() > ours.len() && reads_back {
            longer_in_java += 1;
        } else {
            differences.push(format!("{:#x}: Java {j}, ours {ours}", d.to_bits()));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} doubles print differently from Java {feature}'s Double.toString:\n{}",
        differences.len(),
        doubles.len(),
        differences[..differences.len().min(20)].join("\n")
    );
    eprintln!(
        "Java {feature}: {longer_in_java} of {} with a digit more in Java",
        doubles.len()
    );
}

#[test]
fn dataintegrity_values() {
    let mut cells = 0;
    for (n, props) in [
        (300, vec!["-p", "fieldcount=10", "-p", "fieldlength=100"]),
        (50, vec!["-p", "fieldcount=3", "-p", "fieldlength=1"]),
        // Field names beyond ASCII: Java counts a value's length in UTF-16 units and sends
        // each unit's low byte; the lengths cut inside the name's characters.
        (
            30,
            vec![
                "-p",
                "fieldcount=3",
                "-p",
                "fieldlength=27",
                "-p",
                "fieldnameprefix=поле",
            ],
        ),
        (
            30,
            vec![
                "-p",
                "fieldcount=2",
                "-p",
                "fieldlength=60",
                "-p",
                "fieldnameprefix=字段😀",
            ],
        ),
        (50, vec!["-p", "fieldcount=4", "-p", "fieldlength=1000"]),
        (
            50,
            vec![
                "-p",
                "fieldlength=37",
                "-p",
                "insertorder=ordered",
                "-p",
                "zeropadding=12",
                "-p",
                "insertstart=77",
                "-p",
                "fieldnameprefix=f_",
            ],
        ),
    ] {
        let n_s = n.to_string();
        let mut args = vec!["valueshex", n_s.as_str(), "-p", "dataintegrity=true"];
        args.extend(props.iter());
        let java = oracle(&args, None);
        let mut p = Properties::new();
        for pair in props.chunks(2) {
            let (k, v) = pair[1].split_once('=').unwrap();
            p.set(k, v);
        }
        let get = |k: &str, d: &str| p.get(k).unwrap_or(d).to_string();
        let fields: usize = get("fieldcount", "10").parse().unwrap();
        let len: usize = get("fieldlength", "100").parse().unwrap();
        let start: i64 = get("insertstart", "0").parse().unwrap();
        let pad: usize = get("zeropadding", "1").parse().unwrap();
        let ordered = get("insertorder", "hashed") != "hashed";
        let prefix = get("fieldnameprefix", "field");
        let mut ours = String::new();
        for k in 0..n as i64 {
            let key = build_key_name(start + k, pad, ordered);
            let mut names: Vec<String> = (0..fields).map(|i| format!("{prefix}{i}")).collect();
            names.sort();
            ours.push_str(&format!("INSERT {key}"));
            for f in names {
                let hex: String = deterministic_value(&key, &f, len)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                ours.push_str(&format!(" {f}={hex}"));
                cells += 1;
            }
            ours.push('\n');
        }
        assert_same(&format!("dataintegrity values {props:?}"), &java, &ours);
    }
    eprintln!("dataintegrity: {cells} cells compared with YCSB's");
}

#[test]
fn zeta_constants() {
    let constants = oracle(&["constants"], None);
    assert_eq!(
        constants,
        format!(
            "ZETAN {}\nITEM_COUNT {}\nZIPFIAN_CONSTANT {}\n",
            SCRAMBLED_ZETAN.to_bits() as i64,
            SCRAMBLED_ITEM_COUNT,
            ZIPFIAN_CONSTANT.to_bits() as i64
        )
    );
    for (st, n, theta, init) in [
        (0i64, 2i64, 0.99, 0.0),
        (0, 1000, 0.99, 0.0),
        (0, 1_000_000, 0.99, 0.0),
        (0, 5_000_000, 0.99, 0.0),
        (0, 1000, 0.5, 0.0),
        (0, 1000, 1.5, 0.0),
        (1000, 2000, 0.99, 7.728953217284729),
    ] {
        let java = oracle(
            &[
                "zeta",
                &st.to_string(),
                &n.to_string(),
                &theta.to_string(),
                &init.to_string(),
            ],
            None,
        );
        let bits: i64 = java.split_whitespace().next().unwrap().parse().unwrap();
        let ours = zeta_static(st, n, theta, init);
        assert_eq!(
            ours.to_bits() as i64,
            bits,
            "zeta({st}, {n}, {theta}, {init}): java {java}, ours {ours}"
        );
    }
}

/// Draws `n` values from the Java generator `kind args` and from `ours` with the same seed.
fn compare_generator(
    kind: &str,
    args: &[&str],
    n: usize,
    ours: impl Fn(&mut JavaRandom) -> String,
) {
    let seed = 20_191_008i64;
    let n_s = n.to_string();
    let seed_s = seed.to_string();
    let mut a = vec!["gen", seed_s.as_str(), n_s.as_str(), kind];
    a.extend(args);
    let out = oracle(&a, None);
    let (tid, lines) = thread_id(&out);
    let mut r = JavaRandom::new(seed as u64, tid);
    let ours = ours(&mut r);
    assert_same(
        &format!("generator {kind} {args:?}"),
        &(lines.join("\n") + "\n"),
        &ours,
    );
}

fn draws(n: usize, mut f: impl FnMut() -> String) -> String {
    (0..n).map(|_| f() + "\n").collect()
}

#[test]
fn generators_draw_for_draw() {
    let n = 5000;
    for (min, max, theta) in [
        (0i64, 999i64, 0.99),
        (0, 99_999, 0.99),
        (10, 20, 0.5),
        (0, 499, 1.2),
    ] {
        let (a, b, t) = (min.to_string(), max.to_string(), theta.to_string());
        compare_generator("zipfian", &[&a, &b, &t], n, |r| {
            let mut g = Zipfian::new(min, max, theta);
            draws(n, || g.next(r).to_string())
        });
    }
    compare_generator("zipfian-grow", &["1000", "13"], 2000, |r| {
        let mut g = Zipfian::with_items(1000);
        let mut k = 0;
        draws(2000, || {
            let v = g.next_long(1000 + k * 13, r);
            k += 1;
            v.to_string()
        })
    });
    for (min, max) in [(0i64, 999i64), (0, 9_999_999), (100, 150)] {
        let (a, b) = (min.to_string(), max.to_string());
        compare_generator("scrambled", &[&a, &b], n, |r| {
            let mut g = ScrambledZipfian::new(min, max, ZIPFIAN_CONSTANT);
            draws(n, || g.next(r).to_string())
        });
    }
    compare_generator("latest", &["1000"], n, |r| {
        let basis = Arc::new(AcknowledgedCounter::new(1000));
        let mut g = SkewedLatest::new(basis.clone(), ZIPFIAN_CONSTANT);
        let mut k = 0;
        draws(n, || {
            let v = g.next(r);
            if k % 2 == 1 {
                basis.acknowledge(basis.next_value()).unwrap();
            }
            k += 1;
            v.to_string()
        })
    });
    compare_generator("hotspot", &["0", "9999", "0.2", "0.8"], n, |r| {
        let g = Hotspot::new(0, 9999, 0.2, 0.8);
        draws(n, || g.next(r).to_string())
    });
    // Java's Math.log (a HotSpot intrinsic) and Rust's ln may differ in the last bit, so the
    // exponential draws are compared as CoreWorkload uses them: Double.intValue().
    compare_generator("exponential", &["95", "857.1428571"], n, |r| {
        let g = Exponential::new(95.0, 857.1428571);
        draws(n, || format!("{}", g.next(r) as i32))
    });
    compare_generator("uniform", &["7", "1000006"], n, |r| {
        let g = UniformLong::new(7, 1_000_006);
        draws(n, || g.next(r).to_string())
    });
    compare_generator(
        "discrete",
        &[
            "READ", "0.5", "UPDATE", "0.3", "INSERT", "0.15", "SCAN", "0.05",
        ],
        n,
        |r| {
            let mut g = Discrete::default();
            for (w, v) in [
                (0.5, "READ"),
                (0.3, "UPDATE"),
                (0.15, "INSERT"),
                (0.05, "SCAN"),
            ] {
                g.add(w, v);
            }
            draws(n, || g.next(r).to_string())
        },
    );
}

/// A random name set of the kind YCSB keeps in a hash container: field names (`prefix` + i),
/// measurement names (operations, `-FAILED` and per-status names, `CLEANUP`, …), property
/// names, or random text (ASCII, Latin-1, Cyrillic, CJK, emoji as surrogate pairs); each name
/// once, in a random order.
fn random_names(next: &mut impl FnMut() -> u64) -> Vec<String> {
    const OPS: [&str; 8] = [
        "READ",
        "UPDATE",
        "INSERT",
        "SCAN",
        "DELETE",
        "READ-MODIFY-WRITE",
        "VERIFY",
        "CLEANUP",
    ];
    const PROPS: [&str; 12] = [
        "workload",
        "recordcount",
        "operationcount",
        "fieldcount",
        "fieldlength",
        "readproportion",
        "updateproportion",
        "requestdistribution",
        "threadcount",
        "table",
        "hbase.zookeeper.quorum",
        "columnfamily",
    ];
    const ALPHABETS: [&[char]; 5] = [
        &['a', 'Z', '0', '9', '-', '_', '.', '=', '\\', ':', '#', '!'],
        &['é', 'ß', 'ü', 'ñ', 'ø', '¿'],
        &['п', 'о', 'л', 'е', 'Ж'],
        &['字', '段', '读', '写'],
        &['😀', '🚀', '𝄞'],
    ];
    let mut names: Vec<String> = match next() % 4 {
        0 => {
            let prefix = ["field", "f_", "col", "поле", "字段", "🚀", "x"][(next() % 7) as usize];
            (0..1 + next() % 300)
                .map(|i| format!("{prefix}{i}"))
                .collect()
        }
        1 => {
            let mut v: Vec<String> = Vec::new();
            for op in OPS {
                if next().is_multiple_of(2) {
                    v.push(op.to_string());
                }
                for s in Status::ALL {
                    if next().is_multiple_of(4) {
                        v.push(format!("{op}-{}", s.name()));
                    }
                }
                if next().is_multiple_of(2) {
                    v.push(format!("{op}-FAILED"));
                }
                if next().is_multiple_of(4) {
                    v.push(format!("Intended-{op}"));
                }
            }
            v
        }
        2 => {
            let mut v: Vec<String> = PROPS
                .iter()
                .filter(|_| next().is_multiple_of(2))
                .map(|p| p.to_string())
                .collect();
            v.extend((0..next() % 40).map(|i| format!("p{}.{i}", next() % 1000)));
            v
        }
        _ => (0..1 + next() % 200)
            .map(|_| {
                let len = 1 + next() % 12;
                (0..len)
                    .map(|_| {
                        let a = ALPHABETS[(next() % 5) as usize];
                        a[(next() % a.len() as u64) as usize]
                    })
                    .collect()
            })
            .collect(),
    };
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    shuffle(&mut names, next);
    names
}

/// A random order (Fisher–Yates).
fn shuffle<T>(items: &mut [T], next: &mut impl FnMut() -> u64) {
    for i in (1..items.len()).rev() {
        items.swap(i, (next() % (i as u64 + 1)) as usize);
    }
}

/// Our iteration order of the container `kind` (as the harness's `order` names it) filled
/// with `names` in this order.
fn our_order(kind: &str, names: &[String]) -> Vec<String> {
    use ycsb::java::{
        concurrent_hash_map_order, hash_map_order, hash_set_capacity, properties_order,
    };
    let hashes: Vec<i32> = if kind == "status" {
        names
            .iter()
            .map(|n| Status::from_name(n).unwrap().java_hash())
            .collect()
    } else {
        names
            .iter()
            .map(|n| ycsb::java::java_string_hash(n))
            .collect()
    };
    let order = match kind {
        "chm" | "status" => concurrent_hash_map_order(&hashes),
        "hashmap" => hash_map_order(&hashes, 16),
        "hashset" => hash_map_order(&hashes, hash_set_capacity(names.len())),
        "properties" => properties_order(&hashes),
        _ => unreachable!("{kind}"),
    };
    order.into_iter().map(|i| names[i].clone()).collect()
}

/// True when, in our model of the container `kind` (its table growing with its size only),
/// some bin ever holds 9 or more names: where Java treeifies the bin or, below 64 bins, grows
/// the table early, which `ycsb::java` does not reproduce.
fn a_bin_reaches_nine(kind: &str, hashes: &[i32]) -> bool {
    let spread = |h: i32| ((h as u32) ^ ((h as u32) >> 16)) as usize;
    let mut cap = match kind {
        "hashset" => ycsb::java::hash_set_capacity(hashes.len()),
        _ => 16,
    };
    for size in 1..=hashes.len() {
        // ConcurrentHashMap grows when its size reaches ¾ of the table; HashMap beyond it.
        let grows = match kind {
            "hashmap" | "hashset" => size > cap * 3 / 4,
            _ => size >= cap * 3 / 4,
        };
        let mut bins = vec![0usize; cap];
        for &h in &hashes[..size] {
            bins[spread(h) & (cap - 1)] += 1;
        }
        if bins.iter().any(|&n| n >= 9) {
            return true;
        }
        if grows {
            cap *= 2;
        }
    }
    false
}

/// Names whose hashes share their low six bits (after `spread`), `n` of them, then `m` others:
/// a bin of 9 or more where Java treeifies it or grows the table early.
fn colliding_names(n: usize, m: usize) -> Vec<String> {
    let low = |s: &str| {
        let h = ycsb::java::java_string_hash(s) as u32;
        (h ^ (h >> 16)) & 63
    };
    let names = (0..).map(|i| format!("n{i}"));
    let same = names.clone().filter(|s| low(s) == 5).take(n);
    let other = names.filter(|s| low(s) != 5).take(m);
    same.chain(other).collect()
}

/// The iteration orders of Java's hash containers that `ycsb::java` reproduces (YCSB's
/// measurements and status codes in a `ConcurrentHashMap`, `BasicDB`'s fields in a `HashMap`
/// and a `HashSet` built from a list, a `-P` file's `Properties`), compared with the JVM's on
/// 2,000 random name sets of each kind and 500 random subset orders of YCSB's status codes:
/// all exactly. Crafted sets that put 9 or more names in one bin (a treeified bin, or a table
/// grown early) are the known limit of our model: they are allowed to differ, and only they.
#[test]
fn hash_container_orders_as_the_jvm_iterates_them() {
    let mut next = hbase_it::xorshift(0x0bde_4ed0_5e75_u64);
    let mut cases: Vec<(&str, Vec<String>)> = Vec::new();
    for kind in ["chm", "hashmap", "hashset", "properties"] {
        for _ in 0..2000 {
            let names = random_names(&mut next);
            if !names.is_empty() {
                cases.push((kind, names));
            }
        }
        for (n, m) in [
            (8, 3),
            (9, 3),
            (12, 0),
            (8, 30),
            (9, 30),
            (20, 30),
            (40, 100),
        ] {
            let mut names = colliding_names(n, m);
            shuffle(&mut names, &mut next);
            cases.push((kind, names));
        }
    }
    for _ in 0..500 {
        let mut statuses: Vec<String> = Status::ALL
            .iter()
            .filter(|_| !next().is_multiple_of(3))
            .map(|s| s.name().to_string())
            .collect();
        shuffle(&mut statuses, &mut next);
        if !statuses.is_empty() {
            cases.push(("status", statuses));
        }
    }
    // A JVM for each 1,000 cases: the harness runs without a garbage collector.
    let mut java = String::new();
    for chunk in cases.chunks(1000) {
        let input: String = chunk
            .iter()
            .map(|(kind, names)| {
                let keys: Vec<String> = names.iter().map(|n| escape_units(n)).collect();
                format!("{kind} {}\n", keys.join(" "))
            })
            .collect();
        java.push_str(&oracle(&["orders"], Some(&input)));
    }
    let java: Vec<&str> = java.lines().collect();
    assert_eq!(java.len(), cases.len());
    let mut differences = Vec::new();
    let (mut names_compared, mut beyond, mut beyond_differ) = (0, 0, 0);
    for ((kind, names), j) in cases.iter().zip(&java) {
        let ours: Vec<String> = our_order(kind, names)
            .iter()
            .map(|n| escape_units(n))
            .collect();
        names_compared += names.len();
        let hashes: Vec<i32> = names
            .iter()
            .map(
                |n| match Status::from_name(n).filter(|_| *kind == "status") {
                    Some(s) => s.java_hash(),
                    None => ycsb::java::java_string_hash(n),
                },
            )
            .collect();
        if a_bin_reaches_nine(kind, &hashes) {
            beyond += 1;
            beyond_differ += usize::from(ours.join(" ") != *j);
            continue;
        }
        if ours.join(" ") != *j {
            differences.push(format!(
                "{kind} of {} names:\n java: {j}\n ours: {}",
                names.len(),
                ours.join(" ")
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} orders differ from the JVM's:\n{}",
        differences.len(),
        cases.len(),
        differences[..differences.len().min(5)].join("\n")
    );
    eprintln!(
        "hash container orders: {} cases, {names_compared} names compared with the JVM's; {beyond} with a bin of 9 or more names, {beyond_differ} of those in another order",
        cases.len()
    );
    // The known limit, exactly: only crafted sets reach a bin of 9 (no random one does), and
    // 13 of those 20 come out in another order. A model of treeified bins and early growth
    // would make it (20, 0); ycsb/src/java.rs documents the limit.
    assert_eq!((beyond, beyond_differ), (20, 13));
}

/// Records every call as the harness's capturing DB prints it.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

fn field_list(fields: Option<&[String]>) -> String {
    match fields {
        None => "*".into(),
        Some(f) => {
            let mut f = f.to_vec();
            f.sort();
            f.join(",")
        }
    }
}

/// An insert's or update's values as the harness prints them: `field:length`, by field.
fn value_lengths(v: &Values) -> String {
    let mut names: Vec<(&str, usize)> = v.iter().map(|(f, v)| (f.as_str(), v.len())).collect();
    names.sort();
    let names: Vec<String> = names.iter().map(|(f, n)| format!("{f}:{n}")).collect();
    names.join(",")
}

impl Db for Capture {
    async fn read(&self, _: &str, key: &str, f: Option<&[String]>, _: &mut Record) -> Status {
        let line = format!("READ {key} {}\n", field_list(f));
        self.0.lock().unwrap().push_str(&line);
        Status::Ok
    }
    async fn scan(
        &self,
        _: &str,
        key: &str,
        n: usize,
        f: Option<&[String]>,
        _: &mut Vec<Record>,
    ) -> Status {
        let line = format!("SCAN {key} {n} {}\n", field_list(f));
        self.0.lock().unwrap().push_str(&line);
        Status::Ok
    }
    async fn update(&self, _: &str, key: &str, v: Values) -> Status {
        let line = format!("UPDATE {key} {}\n", value_lengths(&v));
        self.0.lock().unwrap().push_str(&line);
        Status::Ok
    }
    async fn insert(&self, _: &str, key: &str, v: Values) -> Status {
        let line = format!("INSERT {key} {}\n", value_lengths(&v));
        self.0.lock().unwrap().push_str(&line);
        Status::Ok
    }
    async fn delete(&self, _: &str, key: &str) -> Status {
        self.0.lock().unwrap().push_str(&format!("DELETE {key}\n"));
        Status::Ok
    }
}

/// The operation stream (operation, key, fields, scan length) of `n` transactions of the
/// same seeded thread, Java's and ours.
fn compare_operations(n: usize, args: &[&str]) -> usize {
    let seed = 1_234_567i64;
    let (seed_s, n_s) = (seed.to_string(), n.to_string());
    let mut a = vec!["ops", seed_s.as_str(), n_s.as_str()];
    a.extend(args);
    let out = oracle(&a, None);
    let (tid, lines) = thread_id(&out);
    let java = lines.join("\n") + "\n";

    let mut files = Vec::new();
    let mut cli = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it.next().unwrap();
        match *flag {
            "-P" => files.push(repo().join(v).display().to_string()),
            _ => {
                let (k, val) = v.split_once('=').unwrap();
                cli.push((k.to_string(), val.to_string()));
            }
        }
    }
    let p = ycsb::cli::build_properties(&files, &cli).unwrap();
    let m = Arc::new(Measurements::with_config(
        MeasurementConfig::from_properties(&p).unwrap(),
    ));
    let w = CoreWorkload::new(&p, m).unwrap();
    let db = Capture::default();
    let mut st = w.init_task_with(JavaRandom::new(seed as u64, tid));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for _ in 0..n {
            assert!(w.do_transaction(&db, &mut st).await);
        }
    });
    let ours = db.0.lock().unwrap().clone();
    assert_same(&format!("operations of {args:?}"), &java, &ours);
    java.lines().count()
}

/// [`compare_operations`] of `n` transactions of `workloads/workload<w>` over 5000 records,
/// with these `-p` properties.
fn compare_variant(n: usize, w: &str, props: &[&str]) -> usize {
    let file = format!("workloads/workload{w}");
    let count = format!("operationcount={n}");
    let mut args = vec!["-P", &file, "-p", "recordcount=5000", "-p", &count];
    for p in props {
        args.push("-p");
        args.push(p);
    }
    compare_operations(n, &args)
}

#[test]
fn operation_streams_of_the_core_workloads() {
    let mut calls = 0;
    for w in ["a", "b", "c", "d", "e", "f"] {
        let file = format!("workloads/workload{w}");
        calls += compare_operations(3000, &["-P", &file, "-p", "operationcount=3000"]);
    }
    for extra in [
        vec!["readallfields=false", "writeallfields=true"],
        vec!["dataintegrity=true"],
        vec!["requestdistribution=uniform", "insertproportion=0.1"],
        vec!["requestdistribution=hotspot", "scanproportion=0.3"],
        vec!["requestdistribution=exponential", "insertproportion=0.2"],
        vec![
            "requestdistribution=sequential",
            "readmodifywriteproportion=0.4",
        ],
        vec![
            "scanlengthdistribution=zipfian",
            "scanproportion=0.5",
            "maxscanlength=50",
        ],
        vec![
            "fieldlengthdistribution=uniform",
            "fieldcount=3",
            "readallfields=false",
        ],
        vec!["insertorder=ordered", "zeropadding=10", "insertstart=500"],
    ] {
        calls += compare_variant(2000, "a", &extra);
    }
    // Read-modify-write under dataintegrity: a read reads the field list, but YCSB's
    // read-modify-write reads all fields (no list) unless readallfields=false.
    for extra in [
        vec!["dataintegrity=true"],
        vec!["dataintegrity=true", "readallfields=false"],
        vec!["dataintegrity=true", "writeallfields=true"],
        vec![
            "dataintegrity=true",
            "readallfields=false",
            "writeallfields=true",
        ],
    ] {
        calls += compare_variant(2000, "f", &extra);
    }
    eprintln!("operation streams: {calls} database calls compared with YCSB's");
}

/// Every value an insert or update writes has the length YCSB's would have (the operation
/// streams print each value as `field:length`, Java's taken from the `ByteIterator`'s
/// `bytesLeft()`): each `fieldlengthdistribution` (constant, uniform, zipfian, histogram, with
/// and without `minfieldlength`) and dataintegrity's deterministic values, over updates of one
/// field, of all fields, inserts and read-modify-writes.
#[test]
fn value_lengths_of_every_field_length_distribution() {
    let dir = repo().join("target/ycsb-java");
    std::fs::create_dir_all(&dir).unwrap();
    let mut histograms = Vec::new();
    for (name, text) in [
        // An area of 23 (not a power of two), an empty bucket, a last bucket drawn as i·size.
        ("uneven", "BlockSize\t10\n0\t5\n1\t3\n2\t0\n3\t7\n4\t8\n"),
        // An area of 64 (a power of two).
        ("even", "BlockSize\t3\n0\t16\n1\t16\n2\t16\n3\t16\n"),
        // One bucket; block size 1000.
        ("single", "BlockSize\t1000\n0\t9\n"),
        // Many buckets, large counts.
        (
            "wide",
            &(0..200)
                .map(|i| format!("{i}\t{}\n", (i * 7919) % 1013))
                .fold("BlockSize\t4\n".to_string(), |a, l| a + &l),
        ),
    ] {
        let path = dir.join(format!("fieldlength-{name}.hist"));
        std::fs::write(&path, text).unwrap();
        histograms.push(format!("fieldlengthhistogram={}", path.display()));
    }
    let mut variants: Vec<Vec<String>> = [
        vec!["fieldlengthdistribution=zipfian"],
        vec![
            "fieldlengthdistribution=zipfian",
            "fieldlength=1000",
            "minfieldlength=10",
        ],
        vec![
            "fieldlengthdistribution=zipfian",
            "fieldlength=5",
            "minfieldlength=0",
        ],
        vec![
            "fieldlengthdistribution=uniform",
            "fieldlength=200",
            "minfieldlength=50",
        ],
        vec![
            "fieldlengthdistribution=uniform",
            "fieldlength=0",
            "minfieldlength=0",
        ],
        vec!["fieldlengthdistribution=uniform", "fieldlength=1"],
        vec!["fieldlengthdistribution=constant", "fieldlength=0"],
        vec![
            "fieldlengthdistribution=constant",
            "fieldlength=7",
            "minfieldlength=500",
        ],
        vec!["dataintegrity=true", "fieldlength=37"],
        vec!["dataintegrity=true", "fieldlength=1", "fieldcount=3"],
        vec![
            "dataintegrity=true",
            "fieldlength=300",
            "insertorder=ordered",
            "zeropadding=12",
        ],
    ]
    .iter()
    .map(|v| v.iter().map(|s| s.to_string()).collect())
    .collect();
    for h in &histograms {
        variants.push(vec!["fieldlengthdistribution=histogram".into(), h.clone()]);
    }
    let mut calls = 0;
    for extra in &variants {
        for (workload, mix) in [
            ("a", "writeallfields=false"),
            ("a", "writeallfields=true"),
            ("d", "insertproportion=0.3"),
            ("f", "readallfields=false"),
        ] {
            let mut props = vec![mix];
            props.extend(extra.iter().map(String::as_str));
            calls += compare_variant(1500, workload, &props);
        }
    }
    eprintln!(
        "value lengths: {calls} database calls of {} variants compared with YCSB's",
        variants.len() * 4
    );
}

/// Runs a report script through our measurements, printing what the harness prints.
fn our_report(script: &str) -> String {
    let mut out = String::new();
    let mut p = Properties::new();
    let mut m = Measurements::with_config(MeasurementConfig::from_properties(&p).unwrap());
    let base = Instant::now();
    for line in script.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let t: Vec<&str> = line.split(' ').collect();
        match t[0] {
            "begin" => {
                p = Properties::new();
                for kv in &t[1..] {
                    let (k, v) = kv.split_once('=').unwrap();
                    p.set(k, v);
                }
                m = Measurements::with_config(MeasurementConfig::from_properties(&p).unwrap());
            }
            "m" => m.measure(t[1], t[2].parse().unwrap()),
            "i" => m.measure_intended(t[1], t[2].parse().unwrap()),
            "s" => m.report_status(t[1], Status::from_name(t[2]).unwrap()),
            "summary" => out.push_str(&format!("=== summary\n{}\n=== end\n", m.summary())),
            "status" => {
                let ms = |s: &str| base + Duration::from_millis(s.parse().unwrap());
                let (mut total, mut todo) = (0u64, 0u64);
                for c in t[6].split(',') {
                    let (d, n) = c.split_once('/').unwrap();
                    let (d, n): (u64, u64) = (d.parse().unwrap(), n.parse().unwrap());
                    total += d;
                    todo += n.saturating_sub(d);
                }
                let label = if t[1] == "-" { "" } else { t[1] };
                let line = ycsb::runner::status_line(
                    label,
                    ms(t[2]),
                    ms(t[3]),
                    ms(t[4]),
                    total,
                    t[5].parse().unwrap(),
                    todo,
                    &m.summary(),
                );
                out.push_str(&format!("=== status\n{line}\n=== end\n"));
            }
            "export" => {
                let lines = report_lines(t[2].parse().unwrap(), t[1].parse().unwrap(), &m).unwrap();
                let exporter = Exporter::parse(p.get_or(
                    "exporter",
                    "site.ycsb.measurements.exporter.TextMeasurementsExporter",
                ))
                .unwrap();
                let text = exporter.render(&lines) + "<EOF>\n";
                out.push_str(&format!(
                    "=== stdout\n{}=== end\n=== export\n{text}=== end\n",
                    m.take_stdout()
                ));
            }
            other => panic!("unknown script command {other}"),
        }
    }
    out
}

/// The report as Java prints it, less the per-collector GC lines (our driver has no garbage
/// collector and prints only the totals), with raw data points' timestamps masked.
fn normalise(text: &str) -> String {
    let is_collector = |s: &str| s.contains("TOTAL_GCS_") || s.contains("_Epsilon_Heap");
    // JSON objects of a collector, with the separator after them.
    let mut t = text.to_string();
    let mut from = 0;
    while let Some(i) = t[from..].find('{').map(|i| i + from) {
        let j = i + t[i..].find('}').expect("a closed object");
        if is_collector(&t[i..=j]) {
            let mut end = j + 1;
            if t[end..].starts_with(", ") {
                end += 2;
            } else if t[end..].starts_with(' ') {
                end += 1;
            }
            t.replace_range(i..end, "");
            from = i;
        } else {
            from = j + 1;
        }
    }
    t.lines()
        .filter(|l| !(l.starts_with('[') && is_collector(l)))
        .map(|l| mask_raw_timestamp(l) + "\n")
        .collect()
}

fn mask_raw_timestamp(line: &str) -> String {
    // "READ,1796161434317,5" -> "READ,<ts>,5"
    let parts: Vec<&str> = line.split(',').collect();
    if parts.len() == 3 && parts[1].len() >= 12 && parts[1].bytes().all(|b| b.is_ascii_digit()) {
        return format!("{},<ts>,{}", parts[0], parts[2]);
    }
    line.to_string()
}

fn compare_report(what: &str, script: &str) {
    let java = oracle(&["report"], Some(script));
    let ours = our_report(script);
    eprintln!(
        "{what}: {} lines of YCSB's output compared",
        java.lines().count()
    );
    assert_same(
        what,
        &normalise_status(&normalise(&java)),
        &normalise_status(&normalise(&ours)),
    );
}

/// Status lines carry the wall-clock time (23 characters after the label).
fn normalise_status(text: &str) -> String {
    let mut out = String::new();
    let mut in_status = false;
    for line in text.lines() {
        if line == "=== status" {
            in_status = true;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if in_status {
            in_status = false;
            if let Some(i) = line.find(" sec: ") {
                // label, timestamp, " <secs>"
                let head = &line[..i];
                let secs_at = head.rfind(' ').unwrap();
                let stamp_end = secs_at;
                let stamp_start = stamp_end.saturating_sub(23);
                out.push_str(&format!(
                    "{}<time>{}\n",
                    &line[..stamp_start],
                    &line[stamp_end..]
                ));
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A deterministic spread of latencies (µs) with a tail.
fn latencies(n: usize, seed: u64) -> Vec<u32> {
    let mut r = JavaRandom::new(seed, 1);
    (0..n)
        .map(|_| {
            let u = r.next_double();
            (50.0 + 2000.0 * u * u * u * u) as u32 + if u > 0.995 { 150_000 } else { 0 }
        })
        .collect()
}

fn measure_lines(op: &str, kind: &str, values: &[u32]) -> String {
    values
        .iter()
        .map(|v| format!("{kind} {op} {v}\n"))
        .collect()
}

#[test]
fn report_text_for_the_same_measurements() {
    let mut script = String::new();
    // The defaults: hdrhistogram, 95,99; blocks in the order of YCSB's map (READ, CLEANUP,
    // UPDATE for workload A), return codes in the order of its map of statuses, an empty block.
    script.push_str("begin\n");
    script.push_str(&measure_lines("READ", "m", &latencies(5000, 1)));
    script.push_str(&measure_lines("UPDATE", "m", &latencies(4000, 2)));
    script.push_str(&measure_lines("CLEANUP", "m", &[3, 1, 4, 1, 5, 9, 2, 6]));
    script.push_str(&measure_lines("READ-FAILED", "m", &[700, 800]));
    for s in [
        "OK",
        "OK",
        "NOT_FOUND",
        "ERROR",
        "UNEXPECTED_STATE",
        "OK",
        "BATCHED_OK",
    ] {
        script.push_str(&format!("s READ {s}\ns UPDATE {s}\n"));
    }
    script.push_str("s VERIFY OK\nsummary\nsummary\nexport 9000 3079\n");
    // Many names: the map resizes (16 → 32 bins) and reorders.
    script.push_str("begin hdrhistogram.percentiles=50,90,99.9,99.99,0,100\n");
    for op in [
        "READ",
        "UPDATE",
        "INSERT",
        "SCAN",
        "READ-MODIFY-WRITE",
        "DELETE",
        "CLEANUP",
        "VERIFY",
        "READ-FAILED",
        "UPDATE-FAILED",
        "INSERT-FAILED",
        "SCAN-FAILED",
        "READ-NOT_FOUND",
        "UPDATE-ERROR",
        "FLUSH",
    ] {
        script.push_str(&measure_lines(op, "m", &latencies(97, op.len() as u64)));
        script.push_str(&format!("s {op} OK\n"));
    }
    script.push_str("export 15 1\n");
    // measurement.interval: intended (the plain names), both (Intended-<OP>).
    for mode in ["intended", "both"] {
        script.push_str(&format!("begin measurement.interval={mode}\n"));
        script.push_str(&measure_lines("READ", "m", &latencies(300, 3)));
        script.push_str(&measure_lines("READ", "i", &latencies(300, 4)));
        script.push_str(&measure_lines("UPDATE", "m", &[1, 2, 3]));
        script.push_str("s READ OK\ns UPDATE OK\nsummary\nexport 300 1000\n");
    }
    // Zero and tie values (means that round half-even in the status line), zero runtime.
    script.push_str("begin\n");
    script.push_str(&measure_lines("READ", "m", &[0, 0, 0, 0, 0, 0, 0, 1]));
    script.push_str(&measure_lines("SCAN", "m", &[0, 0, 0, 0, 0, 0, 0, 3]));
    script.push_str("summary\nexport 8 0\n");
    // The other measurement types.
    for (kind, extra) in [
        ("histogram", ""),
        (
            "histogram",
            " histogram.buckets=20 measurement.histogram.verbose=true",
        ),
        ("hdrhistogram", " measurement.histogram.verbose=true"),
        ("timeseries", " timeseries.granularity=100000000"),
        ("raw", ""),
        ("hdrhistogram+histogram", ""),
        ("hdrhistogram+raw", " measurement.raw.no_summary=true"),
    ] {
        script.push_str(&format!("begin measurementtype={kind}{extra}\n"));
        script.push_str(&measure_lines("READ", "m", &latencies(1000, 5)));
        script.push_str(&measure_lines("UPDATE", "m", &latencies(10, 6)));
        script.push_str(
            "s READ OK\ns READ NOT_FOUND\ns INSERT OK\nsummary\nsummary\nexport 1010 2000\n",
        );
    }
    compare_report("text reports", &script);
}

#[test]
fn json_exporters_and_status_lines() {
    let mut script = String::new();
    for exporter in ["JSONMeasurementsExporter", "JSONArrayMeasurementsExporter"] {
        script.push_str(&format!(
            "begin exporter=site.ycsb.measurements.exporter.{exporter}\n"
        ));
        script.push_str(&measure_lines("READ", "m", &latencies(200, 7)));
        script.push_str("s READ OK\ns UPDATE OK\nexport 200 1234\n");
        script.push_str(&format!(
            "begin exporter=site.ycsb.measurements.exporter.{exporter}\nexport 0 0\n"
        ));
    }
    // Status lines: with and without a label, ops done and to do, the rate of the interval.
    script.push_str("begin\n");
    script.push_str(&measure_lines("READ", "m", &latencies(500, 8)));
    script.push_str(&measure_lines("UPDATE", "m", &latencies(50, 9)));
    script.push_str("status - 0 0 0 0 0/1000,0/1000\n");
    script.push_str("status run1: 0 0 10000 0 5000/10000\n");
    script.push_str(&measure_lines("READ", "m", &latencies(30, 10)));
    script.push_str("status - 0 10000 20000 5000 9000/10000,4000/4000\n");
    script.push_str("status - 0 0 3723001 0 123/99999999\n");
    script.push_str("status - 0 0 999 0 100/100\n");
    compare_report("JSON exporters and status lines", &script);
}

/// Our binary, as the other tests run it.
fn ycsb_bin() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ycsb-it"));
    c.current_dir(repo());
    c
}

/// The report lines' (metric, measurement) pairs, with counts kept and latencies masked.
fn report_shape(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with('[') && l.matches(", ").count() >= 2)
        .filter(|l| !l.starts_with("[TOTAL_GCS_") && !l.contains("_Epsilon_Heap]"))
        .map(|l| {
            let mut parts = l.splitn(3, ", ");
            let (metric, measurement, value) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let keep = measurement == "Operations"
                || measurement.starts_with("Return=")
                || metric.starts_with("[TOTAL_GC");
            // A run of 0 ms (a few BasicDB operations on a fast machine) prints 0 ms of GC
            // over 0 ms as NaN, as Java would for the same RunTime; Java's never lasts 0 ms.
            let value = match (metric, value) {
                ("[TOTAL_GC_TIME_%]", "NaN") => "0.0",
                _ => value,
            };
            if keep {
                format!("{metric}, {measurement}, {value}")
            } else {
                format!("{metric}, {measurement}")
            }
        })
        .collect()
}

#[test]
fn basic_binding_prints_what_basicdb_prints() {
    let tool = ycsb_oracle();
    // Load with dataintegrity: every key and value is deterministic, so the whole output up to
    // the report is the same text, and so are the report's lines and counts.
    let java = run_with_stdin(
        tool.command(&[], "site.ycsb.Client").args([
            "-load",
            "-db",
            "site.ycsb.BasicDB",
            "-P",
            "workloads/workloada",
            "-p",
            "recordcount=40",
            "-p",
            "dataintegrity=true",
            "-p",
            "fieldlength=20",
            "-threads",
            "1",
        ]),
        None,
    );
    let ours = run_with_stdin(
        ycsb_bin().args([
            "load",
            "basic",
            "-P",
            "workloads/workloada",
            "-p",
            "recordcount=40",
            "-p",
            "dataintegrity=true",
            "-p",
            "fieldlength=20",
            "-threads",
            "1",
        ]),
        None,
    );
    let (java, ours) = (
        String::from_utf8(java.stdout).unwrap(),
        String::from_utf8(ours.stdout).unwrap(),
    );
    let split = |t: &str| {
        let i = t.find("[OVERALL]").expect("a report");
        (t[..i].to_string(), t[i..].to_string())
    };
    let ((jhead, jreport), (ohead, oreport)) = (split(&java), split(&ours));
    assert_same("BasicDB load output", &jhead, &ohead);
    assert_eq!(jhead.matches("INSERT usertable ").count(), 40);
    assert_eq!(
        report_shape(&jreport),
        report_shape(&oreport),
        "{jreport}\n{oreport}"
    );

    // A run of workload A (random keys): the report's blocks, in YCSB's order, with the same
    // operation counts; one line per operation.
    let args = [
        "-P",
        "workloads/workloada",
        "-p",
        "recordcount=1000",
        "-p",
        "operationcount=2000",
        "-p",
        "basicdb.verbose=false",
        "-threads",
        "4",
    ];
    let java = run_with_stdin(
        tool.command(&[], "site.ycsb.Client")
            .args(["-t", "-db", "site.ycsb.BasicDB"])
            .args(args),
        None,
    );
    let ours = run_with_stdin(ycsb_bin().args(["run", "basic"]).args(args), None);
    let blocks = |t: &[u8]| -> Vec<String> {
        report_shape(&String::from_utf8_lossy(t))
            .into_iter()
            .filter(|l| !l.contains("Operations, ") && !l.contains("Return="))
            .collect()
    };
    assert_eq!(blocks(&java.stdout), blocks(&ours.stdout));
    let ops = |t: &[u8]| -> u64 {
        report_shape(&String::from_utf8_lossy(t))
            .iter()
            .filter(|l| {
                l.starts_with("[READ], Operations, ") || l.starts_with("[UPDATE], Return=OK, ")
            })
            .map(|l| l.rsplit(", ").next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(ops(&java.stdout), 2000);
    assert_eq!(ops(&ours.stdout), 2000);
}

#[test]
fn shell_answers_as_the_command_line_does() {
    let script = "help\nread user1\nread user1 field0 field1 field9\nscan user1 10\nscan user1 5 field3\ninsert user2 field0=a field1=b field2=c\nupdate user2 field1=x\ndelete user2\ntable\nbogus command\n\nquit\n";
    let tool = ycsb_oracle();
    let java = run_with_stdin(
        tool.command(&[], "site.ycsb.CommandLine")
            .args(["-db", "site.ycsb.BasicDB"]),
        Some(script),
    );
    let ours = run_with_stdin(ycsb_bin().args(["shell", "basic"]), Some(script));
    let mask = |t: &[u8]| -> String {
        String::from_utf8_lossy(t)
            .lines()
            .map(|l| {
                let trimmed = l.trim_start_matches("> ");
                if trimmed.ends_with(" ms") && trimmed[..trimmed.len() - 3].parse::<u64>().is_ok() {
                    format!("{}<n> ms\n", &l[..l.len() - trimmed.len()])
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    };
    assert_same("shell", &mask(&java.stdout), &mask(&ours.stdout));
}

#[test]
fn random_values_are_drawn_as_ycsb_draws_them() {
    // One 32-bit draw per random field when the value is built (the rest inside the binding's
    // call): the operation stream after inserts and updates stays in step with Java's.
    let v = FieldValue::random(12, 0x1234_5678, 1);
    assert_eq!(v.to_bytes().len(), 12);
    compare_operations(
        500,
        &[
            "-P",
            "workloads/workloada",
            "-p",
            "writeallfields=true",
            "-p",
            "insertproportion=0.3",
        ],
    );
}

/// A properties file written readably: `<LF>`, `<CR>`, `<TAB>`, `<FF>` and `<xHH>` (any byte);
/// every other character (backslashes included) stands for itself and must be ASCII.
fn file_bytes(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '<' {
            if let Some(end) = rest.find('>') {
                let byte = match &rest[1..end] {
                    "LF" => Some(b'\n'),
                    "CR" => Some(b'\r'),
                    "TAB" => Some(b'\t'),
                    "FF" => Some(0x0c),
                    t if t.len() == 3 && t.starts_with('x') => u8::from_str_radix(&t[1..], 16).ok(),
                    _ => None,
                };
                if let Some(b) = byte {
                    out.push(b);
                    rest = &rest[end + 1..];
                    continue;
                }
            }
        }
        assert!(c.is_ascii(), "write {c:?} as <xHH> bytes in {text:?}");
        out.push(c as u8);
        rest = &rest[1..];
    }
    out
}

/// The harness's escaping (`YcsbOracle.escape`): every UTF-16 unit kept, as printable ASCII.
fn escape_units(s: &str) -> String {
    let mut out = String::new();
    for u in s.encode_utf16() {
        match u {
            0x5c => out.push_str("\\\\"),
            0x21..=0x7e if u != u16::from(b'=') => out.push(u as u8 as char),
            _ => out.push_str(&format!("\\u{u:04X}")),
        }
    }
    out
}

/// The UTF-16 units of a line escaped by `escape_units` (or the harness).
fn unescape_units(line: &str) -> Vec<u16> {
    let b = line.as_bytes();
    let mut units = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'\\') {
            units.push(0x5c);
            i += 2;
        } else if b[i] == b'\\' && b.get(i + 1) == Some(&b'u') {
            units.push(u16::from_str_radix(&line[i + 2..i + 6], 16).unwrap());
            i += 6;
        } else {
            units.push(u16::from(b[i]));
            i += 1;
        }
    }
    units
}

/// The torture set of `-P` files: hand-written cases for each rule of `Properties.load`, then
/// files around its 8,192-byte read buffer.
fn torture_files() -> Vec<(String, Vec<u8>)> {
    let named: &[(&str, &str)] = &[
        // Escapes.
        (
            "escapes",
            r"t=a\tb<LF>n=a\nb<LF>r=a\rb<LF>f=a\fb<LF>bs=a\\b<LF>",
        ),
        (
            "unicode",
            r"u=\u0041\u00e9\u00E9\u20ac\uFFFF\u0000\u007F<LF>",
        ),
        ("unicode_pair", r"emoji=\uD83D\uDE00<LF>\uD83D\uDE00=k<LF>"),
        (
            "unicode_key",
            r"\u006B\u0065y=v<LF>k\u003Dx=y<LF>k\u0020y=z<LF>",
        ),
        ("unknown_escapes", r#"q=\q\a\b\v\0\ \=\:\#\!\"\'\U0041<LF>"#),
        ("escaped_backslash_u", r"k=\\u0041<LF>k2=\\\u0041<LF>"),
        ("malformed_u_short", r"k=\u12<LF>"),
        ("malformed_u_at_eol", r"k=\u<LF>"),
        ("malformed_u_nonhex", r"k=\u12G4<LF>"),
        ("malformed_u_plus", r"k=\u+041<LF>"),
        ("malformed_u_minus", r"k=\u-041<LF>"),
        ("malformed_u_space", r"k=\u 041<LF>"),
        ("malformed_u_key", r"\u00zz=v<LF>"),
        ("malformed_u_at_eof", r"k=\u004"),
        ("malformed_u_in_comment", r"# \u12<LF>k=v<LF>"),
        ("lone_high_surrogate", r"k=\uD800<LF>"),
        ("lone_low_surrogate", r"k=\uDC00x<LF>"),
        ("reversed_pair", r"k=\uDE00\uD83D<LF>"),
        ("surrogate_in_key", r"\uD800=v<LF>"),
        ("surrogate_overwritten", r"k=\uD800<LF>k=v<LF>"),
        // Continuations.
        (
            "continuation",
            r"list = a,\<LF>      b,\<LF><TAB><FF> c<LF>",
        ),
        ("two_backslashes", r"x=1\\<LF>y=2<LF>"),
        ("three_backslashes", r"x=1\\\<LF>  2<LF>"),
        ("four_backslashes", r"x=\\\\<LF>y=<LF>"),
        ("backslash_line_then_blank", r"\<LF><LF>k=v<LF>"),
        ("backslash_line_then_spaces", r"\<LF>   <LF>k=v<LF>"),
        ("backslash_line_then_comment", r"\<LF>#c=1<LF>k=v<LF>"),
        ("backslash_line_then_bang", r"  \<LF>  !c=1<LF>"),
        ("backslash_line_then_line", r"\<LF>  k=v<LF>"),
        ("backslash_line_at_eof", r"\"),
        ("backslash_line_lf_at_eof", r"\<LF>"),
        ("backslash_line_spaces_at_eof", r"\<LF>   "),
        ("backslash_lines", r"\<LF>\<LF><LF>k=v<LF>"),
        ("backslash_lines_at_eof", r"\<LF>\"),
        ("backslash_line_crlf_blank", r"\<CR><LF><CR><LF>k=v<CR><LF>"),
        ("backslash_line_cr_comment", r"\<CR>#c<CR>k=v<CR>"),
        ("continuation_then_blank", r"k=a\<LF><LF>b=1<LF>"),
        ("continuation_then_spaces", r"k=a\<LF>   <LF>b=1<LF>"),
        ("continuation_at_eof", r"k=v\"),
        ("continuation_lf_at_eof", r"k=v\<LF>"),
        ("continuation_spaces_at_eof", r"k=v\<LF>  "),
        ("continuation_into_hash", r"k=a\<LF>#b<LF>"),
        ("continuation_into_bang", r"k=a\<LF>   !b<LF>"),
        ("continuation_crlf", r"k=a\<CR><LF>  b<CR><LF>"),
        ("continuation_cr", r"k=a\<CR>  b<CR>c=1<CR>"),
        ("continuation_cr_cr", r"k=a\<CR><CR> b=2<CR>"),
        ("continuation_lf_cr", r"k=a\<LF><CR>b=1"),
        ("continuation_in_key", r"ke\<LF>  y=v<LF>"),
        ("continuation_before_separator", r"k\<LF>  =v<LF>"),
        ("continuation_splits_escape", r"k=\u00\<LF>  41<LF>"),
        ("continuation_then_backslash", r"k=\<LF>\<LF>\<LF>v<LF>"),
        ("continuation_then_escaped_space", r"k=a\<LF>\ b<LF>"),
        ("escaped_space_at_eol", r"k=a\ <LF>b=1<LF>"),
        // Comments.
        (
            "comments",
            r"# c<LF>! c<LF>   # indented<LF><TAB>! tab<LF><FF>#ff<LF>k=v # not a comment<LF>",
        ),
        (
            "comment_ending_in_backslash",
            r"# c \<LF>k=v<LF>! d\<LF>j=w<LF>",
        ),
        ("comment_at_eof", r"k=v<LF># last"),
        ("comment_cr", r"#c<CR>k=v<CR>!d<CR><LF>j=w"),
        ("hash_in_key", r"a#b=c<LF>\#k=v<LF>\!j=w<LF>"),
        ("comment_only", r"#only"),
        ("empty_file", r""),
        ("blank_lines_only", r"<LF><LF>   <CR><LF><TAB><CR>"),
        // Separators, empty keys and values, duplicates.
        (
            "separators",
            r"a=1<LF>b:2<LF>c 3<LF>d<TAB>4<LF>e<FF>5<LF>f = 6<LF>g : 7<LF>h:=8<LF>i=:9<LF>j==10<LF>k = = 11<LF>l  :  12  <LF>m  13<LF>n :<LF>",
        ),
        (
            "escaped_separators",
            r"a\=b=c<LF>a\ b c<LF>a\:b:c<LF>x\\=y<LF>\ lead=1<LF>t\<TAB>ab=2<LF>",
        ),
        (
            "empty_keys_and_values",
            r"=v<LF>:w<LF>k=<LF>lonely<LF>  spaced   <LF>",
        ),
        ("empty_key_alone", r"=<LF>"),
        ("duplicates", r"k=1<LF>k=2<LF>k 3<LF>j=1<LF>j=<LF>"),
        (
            "value_whitespace",
            r"k=  v  <LF>j=\ \ v<LF><TAB>i<TAB>=<TAB>w<TAB><LF>",
        ),
        ("workload_key", r"workload=mine<LF>"),
        // Line endings.
        ("crlf", r"a=1<CR><LF>b=2<CR><LF>"),
        ("lone_cr", r"a=1<CR>b=2<CR>"),
        ("mixed_endings", r"a=1<LF><CR>b=2<CR><LF><LF>c=3"),
        ("no_final_newline", r"a=1"),
        ("cr_cr_lf", r"a=1<CR><CR><LF>b=2"),
        // Whitespace: space, tab and form feed only.
        ("form_feed", r"<FF>k<FF>=<FF>v<FF><LF>"),
        ("not_whitespace", r"<x0B>k=v<LF>a<xA0>b=c<LF>d<x85>e=f<LF>"),
        // Bytes: ISO-8859-1, whatever the file is.
        ("latin1", r"k=caf<xE9><LF>n<xE4>me=x<LF>"),
        ("utf8", r"k=caf<xC3><xA9><LF>"),
        ("utf8_bom", r"<xEF><xBB><xBF>k=v<LF>"),
        ("nul", r"k=a<x00>b<LF><x00>=z<LF>"),
        (
            "high_byte_in_comment",
            r"#<xFF><x0D>k=v<LF>#<x8D><x8A>j=w<LF>",
        ),
        ("controls", r"k=<x7F><x01><x1A><LF>"),
    ];
    let mut files: Vec<(String, Vec<u8>)> = named
        .iter()
        .map(|(name, text)| (name.to_string(), file_bytes(text)))
        .collect();
    // Around Java's 8,192-byte read buffer: a continuation, a CRLF, an escape and a comment
    // split across it.
    for (name, at, tail) in [
        ("buffer_continuation_lf", 8191, &b"\\\n  y\n"[..]),
        ("buffer_continuation_crlf", 8190, &b"\\\r\n  y\r\n"[..]),
        ("buffer_crlf", 8191, &b"\r\nz=1\n"[..]),
        ("buffer_escape", 8190, &b"\\u0041\n"[..]),
        ("buffer_backslash_eof", 8191, &b"\\"[..]),
        ("buffer_lf_then_backslash_line", 8191, &b"\n\\\n\n"[..]),
    ] {
        let mut b = b"k=".to_vec();
        b.resize(at, b'x');
        b.extend_from_slice(tail);
        files.push((name.to_string(), b));
    }
    let mut comment = b"#".to_vec();
    comment.resize(8191, b'c');
    comment.extend_from_slice(b"\\\nk=v\n");
    files.push(("buffer_comment".to_string(), comment));
    files
}

/// Random files over the characters `Properties.load` treats specially (deterministic).
fn random_property_files(n: usize) -> Vec<(String, Vec<u8>)> {
    const TOKENS: &[&[u8]] = &[
        b"\\",
        b"\\",
        b"\\",
        b"\n",
        b"\n",
        b"\r",
        b"\r\n",
        b" ",
        b"\t",
        b"\x0c",
        b"#",
        b"!",
        b"=",
        b":",
        b"k",
        b"v",
        b"\\u",
        b"0041",
        b"00",
        b"u",
        b"t",
        b"\xe9",
        b"\\ ",
        b"\\\\",
        b"\xa0",
        b"\x0b",
        b"\\uD83D\\uDE00",
    ];
    let mut state = 0x005e_ed0f_7e57_u64;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|i| {
            let len = 1 + next() % 30;
            let mut b = Vec::new();
            for _ in 0..len {
                b.extend_from_slice(TOKENS[(next() % TOKENS.len() as u64) as usize]);
            }
            (format!("random_{i}"), b)
        })
        .collect()
}

/// Text with every run of more than 8 equal characters shortened.
fn shorten_runs(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let run = chars[i..].iter().take_while(|&&c| c == chars[i]).count();
        if run > 8 {
            out.push_str(&format!("{}{{{run} times}}", chars[i]));
        } else {
            out.extend(&chars[i..i + run]);
        }
        i += run;
    }
    out
}

/// True when an escaped line holds half a surrogate pair.
fn has_lone_surrogate(line: &str) -> bool {
    char::decode_utf16(unescape_units(line)).any(|r| r.is_err())
}

#[test]
fn property_files_read_as_ycsb_reads_them() {
    // YCSB 0.17.0's Client reads each -P file with Properties.load(new FileInputStream(file))
    // (ISO-8859-1); the harness calls that very code (Client.parseArguments) on each file.
    const WORKLOAD: &str = "site.ycsb.workloads.CoreWorkload";
    let mut files = torture_files();
    let named = files.len();
    files.extend(random_property_files(3000));
    let dir = std::env::temp_dir().join(format!("ycsb-props-torture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for (i, (_, bytes)) in files.iter().enumerate() {
        let p = dir.join(format!("{i}.properties"));
        std::fs::write(&p, bytes).unwrap();
        paths.push(p.to_str().unwrap().to_string());
    }
    // YCSB's Client never closes a -P file's stream, and the harness's JVM collects no garbage
    // (Epsilon), so each JVM reads at most 500 files (well under a 1,024 open-file limit).
    let java: String = paths
        .chunks(500)
        .map(|batch| oracle(&["pfiles"], Some(&(batch.join("\n") + "\n"))))
        .collect();

    let mut blocks: Vec<Vec<String>> = Vec::new();
    for line in java.lines() {
        if line.starts_with("== ") {
            blocks.push(Vec::new());
        } else if line.starts_with("ERROR") {
            blocks.last_mut().unwrap().push("ERROR".into());
        } else {
            blocks.last_mut().unwrap().push(line.to_string());
        }
    }
    assert_eq!(blocks.len(), files.len(), "one answer per file");

    let mut differences = Vec::new();
    let mut refused_surrogates = Vec::new();
    for (i, ((name, bytes), mut java)) in files.iter().zip(blocks).enumerate() {
        java.sort();
        // Deliberate: Java keeps half a surrogate pair in a String; ours cannot hold one, so
        // `ycsb` refuses the file (naming the escape) rather than change the value.
        let expected = if java.iter().any(|l| has_lone_surrogate(l)) {
            refused_surrogates.push(name.clone());
            vec!["ERROR".to_string()]
        } else {
            java.clone()
        };
        let cli = [("workload".to_string(), WORKLOAD.to_string())];
        let ours = match ycsb::cli::build_properties(&[paths[i].clone()], &cli) {
            Ok(p) => {
                let mut v: Vec<String> = p
                    .sorted()
                    .iter()
                    .map(|(k, v)| format!("{}={}", escape_units(k), escape_units(v)))
                    .collect();
                v.sort();
                v
            }
            Err(_) => vec!["ERROR".to_string()],
        };
        if ours != expected {
            differences.push(shorten_runs(&format!(
                "{name}: file b\"{}\"\n    java: {java:?}\n    ours: {ours:?}",
                bytes.escape_ascii()
            )));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    for name in [
        "lone_high_surrogate",
        "lone_low_surrogate",
        "reversed_pair",
        "surrogate_in_key",
    ] {
        assert!(
            refused_surrogates.iter().any(|n| n == name),
            "{name}: Java was expected to keep a lone surrogate ({refused_surrogates:?})"
        );
    }
    assert!(
        differences.is_empty(),
        "{} of {} property files read differently from YCSB's Client ({named} written by hand):\n{}",
        differences.len(),
        files.len(),
        differences.join("\n")
    );
    eprintln!(
        "property files: {} compared with YCSB's Client ({named} by hand), {} refused for a lone surrogate",
        files.len(),
        refused_surrogates.len()
    );
}

/// What YCSB's `Client.parseArguments` made of one command line: its properties as escaped
/// `key=value` lines (sorted), or `ERROR <reason>` (it printed the usage text and called
/// `System.exit`, or threw).
type CliAnswer = Result<Vec<String>, String>;

/// Each command line (its arguments, as `Client` gets them) through YCSB's own
/// `Client.parseArguments` (the harness's `clis`). A line that makes `Client` call
/// `System.exit` ends that JVM; the lines after it go to a new one.
fn java_command_lines(lines: &[Vec<String>]) -> Vec<CliAnswer> {
    let mut answers: Vec<CliAnswer> = Vec::new();
    while answers.len() < lines.len() {
        let stdin: String = lines[answers.len()..]
            .iter()
            .map(|args| {
                args.iter()
                    .map(|a| escape_units(a))
                    .collect::<Vec<_>>()
                    .join(" ")
                    + "\n"
            })
            .collect();
        let out = oracle(&["clis"], Some(&stdin));
        let before = answers.len();
        let mut block: Option<Vec<String>> = None;
        let finish = |block: Option<Vec<String>>, answers: &mut Vec<CliAnswer>| {
            if let Some(mut b) = block {
                answers.push(
                    match b
                        .iter()
                        .find(|l| l.starts_with("EXIT ") || l.starts_with("THROW "))
                    {
                        Some(e) => Err(e.clone()),
                        None => {
                            b.sort();
                            Ok(b)
                        }
                    },
                );
            }
        };
        for line in out.lines() {
            if line.starts_with("== ") {
                finish(block.take(), &mut answers);
                block = Some(Vec::new());
            } else {
                block
                    .as_mut()
                    .unwrap_or_else(|| panic!("harness output before a block: {out}"))
                    .push(line.to_string());
            }
        }
        finish(block.take(), &mut answers);
        assert!(
            answers.len() > before,
            "the harness answered nothing:\n{out}"
        );
    }
    answers
}

/// What `ycsb SUB ARGS` runs on: the properties of its files and command line, with
/// `dotransactions` from the subcommand (as the driver sets it, and as bin/ycsb's trailing
/// `-t` / `-load` sets it in Java).
fn our_command_line(sub: &str, args: &[String]) -> CliAnswer {
    let mut argv = vec![sub.to_string()];
    argv.extend(args.iter().cloned());
    let inv = ycsb::cli::parse(&argv).map_err(|e| format!("ERROR {e}"))?;
    let (ycsb::cli::Command::Run(c) | ycsb::cli::Command::Load(c)) = &inv.command else {
        panic!("{argv:?} parsed as {:?}", inv.command)
    };
    let mut p =
        ycsb::cli::build_properties(&c.files, &inv.cli_props).map_err(|e| format!("ERROR {e}"))?;
    p.set("dotransactions", (sub == "run").to_string());
    let mut v: Vec<String> = p
        .sorted()
        .iter()
        .map(|(k, v)| format!("{}={}", escape_units(k), escape_units(v)))
        .collect();
    v.sort();
    Ok(v)
}

/// The `-P` files of the command-line comparison: keys shared with each other and with the
/// `-p` names drawn.
fn command_line_files(dir: &std::path::Path) -> Vec<String> {
    [
        "recordcount=1\nthreadcount=9\nlabel=file\nk=file0\n",
        "recordcount=2\nfieldcount=3\nstatus=false\ndotransactions=false\n",
        "target=100\ndb=fromfile\n=empty\nx\\ y=spaced\n",
        "workload=fromfile\nk=file3\n",
    ]
    .iter()
    .enumerate()
    .map(|(i, text)| {
        let p = dir.join(format!("cli{i}.properties"));
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    })
    .collect()
}

/// A random YCSB command line (deterministic): `-p` pairs with `=` in names and values, empty
/// names and values, unicode, backslashes, spaces, hyphens and line ends; `-P` files (now and
/// then a missing one), `-s`, `-t`, `-load`, `-threads`, `-target`, `-l`, `-db`, rarely a pair
/// without `=`, a bad number or an option with no value at the end.
fn random_command_line(next: &mut impl FnMut() -> u64, files: &[String]) -> Vec<String> {
    const NAMES: &[&str] = &[
        "recordcount",
        "threadcount",
        "target",
        "status",
        "label",
        "db",
        "dotransactions",
        "workload",
        "fieldcount",
        "k",
        "",
        "x y",
        "a\\b",
        "ключ",
        "é",
        "😀",
        "k=",
        "-threads",
        "-s",
    ];
    const VALUES: &[&str] = &[
        "",
        "1",
        "2",
        "v=w",
        "=",
        " spaced value ",
        "a\\b\\",
        "\\u0041",
        "é€😀",
        "7\n8",
        "tab\there",
        "-x",
        "-threads",
        "true",
        "0",
    ];
    const GOOD_INTS: &[&str] = &[
        "4",
        "1",
        "007",
        "+3",
        "-2",
        "-0",
        "2147483647",
        "-2147483648",
    ];
    const BAD_INTS: &[&str] = &["x", "", "1.5", " 5", "2147483648", "0x10", "5 "];
    const LABELS: &[&str] = &["lbl", "", "with space", "-x", "-threads", "-s", "é"];
    const DBS: &[&str] = &["site.ycsb.BasicDB", "basic", "-s", "-threads"];
    fn pick(pool: &[&str], next: &mut impl FnMut() -> u64) -> String {
        pool[(next() % pool.len() as u64) as usize].to_string()
    }
    let mut args = Vec::new();
    for _ in 0..next() % 8 {
        let r = next() % 100;
        match r {
            0..=39 => {
                args.push("-p".into());
                if next().is_multiple_of(50) {
                    args.push(pick(VALUES, next).replace('=', ""));
                } else {
                    let (n, v) = (pick(NAMES, next), pick(VALUES, next));
                    args.push(format!("{n}={v}"));
                }
            }
            40..=54 => {
                args.push("-P".into());
                if next().is_multiple_of(50) {
                    args.push("/no/such/ycsb/file".into());
                } else {
                    args.push(files[(next() % files.len() as u64) as usize].clone());
                }
            }
            55..=62 => args.push("-s".into()),
            63..=67 => args.push("-t".into()),
            68..=72 => args.push("-load".into()),
            73..=90 => {
                args.push(if r < 83 { "-threads" } else { "-target" }.into());
                args.push(if next().is_multiple_of(12) {
                    pick(BAD_INTS, next)
                } else {
                    pick(GOOD_INTS, next)
                });
            }
            91..=95 => {
                args.push("-l".into());
                args.push(pick(LABELS, next));
            }
            _ => {
                args.push("-db".into());
                args.push(pick(DBS, next));
            }
        }
    }
    if next().is_multiple_of(50) {
        args.push(pick(
            &["-p", "-P", "-threads", "-target", "-l", "-db"],
            next,
        ));
    }
    args
}

/// Why a command line's answer differs from YCSB's on purpose, or `None`.
/// - `-l` or `-db` last: bin/ycsb appends `-t` (or `-load`) after the user's arguments, so
///   YCSB takes that flag as the label (or binding) and, for `ycsb load`, runs the transaction
///   phase; ours refuses the missing value.
/// - `-target` with a fractional rate (`1.5`): YCSB throws a NumberFormatException; ours
///   throttles to it (`ycsb sweep` passes its rates to each point so).
fn kept_command_line_difference(args: &[String]) -> Option<&'static str> {
    let fractional_target = args.windows(2).any(|w| {
        w[0] == "-target"
            && w[1].matches('.').count() == 1
            && w[1].chars().any(|c| c.is_ascii_digit())
            && w[1].chars().all(|c| c.is_ascii_digit() || c == '.')
    });
    match args.last().map(String::as_str) {
        Some("-l") | Some("-db") => {
            Some("an option with no value: YCSB takes bin/ycsb's trailing -t/-load as it")
        }
        _ if fractional_target => Some("a fractional -target: YCSB throws, ours throttles to it"),
        _ => None,
    }
}

/// `-p NAME=VALUE` and its interplay with `-P` files, `-s`, `-threads`, `-target`, `-l`,
/// `-db`, `-load` and `-t`, compared with YCSB 0.17.0's own `Client.parseArguments`: the
/// properties a command line gives (or that it is refused). Each line goes to Java as bin/ycsb
/// passes it (`Client -p workload=... ARGS -t`, or `-load` for `ycsb load`) and to ours as
/// `ycsb run|load -p workload=... ARGS`.
#[test]
fn command_lines_read_as_ycsb_reads_them() {
    const WORKLOAD: &str = "workload=site.ycsb.workloads.CoreWorkload";
    let dir = std::env::temp_dir().join(format!("ycsb-cli-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = command_line_files(&dir);
    let (f0, f1) = (files[0].as_str(), files[1].as_str());
    // Hand-written cases: (subcommand, arguments, the reason a difference is kept).
    let spelled_differently = Some("a spelling YCSB's Client refuses and ours accepts");
    let hand: Vec<(&str, Vec<&str>, Option<&str>)> = vec![
        ("run", vec![], None),
        ("load", vec![], None),
        ("run", vec!["-p", "a=b=c"], None),
        ("run", vec!["-p", "=v"], None),
        ("run", vec!["-p", "k="], None),
        ("run", vec!["-p", "="], None),
        ("run", vec!["-p", "=="], None),
        ("run", vec!["-p", "novalue"], None),
        ("run", vec!["-p", ""], None),
        ("run", vec!["-p"], None),
        ("load", vec!["-p"], None),
        ("run", vec!["-p", "k=1", "-p", "k=2"], None),
        ("run", vec!["-p", "recordcount=5", "-P", f0], None),
        ("run", vec!["-P", f0, "-p", "recordcount=5"], None),
        ("run", vec!["-P", f0, "-P", f1], None),
        ("run", vec!["-P", f1, "-P", f0], None),
        ("run", vec!["-P", f0, "-P", f0], None),
        ("run", vec!["-p", "threadcount=3", "-threads", "4"], None),
        ("run", vec!["-threads", "4", "-p", "threadcount=3"], None),
        ("run", vec!["-threads", "4", "-P", f0], None),
        ("run", vec!["-threads", "1", "-threads", "2"], None),
        ("run", vec!["-target", "1", "-target", "2"], None),
        ("run", vec!["-threads", "007"], None),
        ("run", vec!["-threads", "+3"], None),
        ("run", vec!["-threads", "-0"], None),
        ("run", vec!["-threads", "-5"], None),
        ("run", vec!["-target", "0010"], None),
        ("run", vec!["-target", "2147483647"], None),
        ("run", vec!["-target", "2147483648"], None),
        ("run", vec!["-threads", "x"], None),
        ("run", vec!["-threads", ""], None),
        ("run", vec!["-threads", " 4"], None),
        ("run", vec!["-threads", "4.0"], None),
        (
            "run",
            vec!["-target", "0.5"],
            kept_command_line_difference(&["-target".into(), "0.5".into()]),
        ),
        ("run", vec!["-threads"], None),
        ("run", vec!["-target"], None),
        ("run", vec!["-s", "-s"], None),
        ("run", vec!["-t", "-t"], None),
        ("run", vec!["-load"], None),
        ("load", vec!["-t"], None),
        ("run", vec!["-load", "-t", "-load"], None),
        ("run", vec!["-p", "dotransactions=false"], None),
        ("load", vec!["-p", "dotransactions=true"], None),
        ("run", vec!["-p", "status=maybe", "-s"], None),
        ("run", vec!["-s", "-p", "status=maybe"], None),
        ("run", vec!["-l", "a", "-l", "b"], None),
        ("run", vec!["-l", "a", "-p", "label=b"], None),
        ("run", vec!["-db", "x", "-db", "y"], None),
        ("run", vec!["-p", "-x=1"], None),
        ("run", vec!["-p", "-threads=5"], None),
        ("run", vec!["-p", "-s"], None),
        ("run", vec!["-l", "-threads"], None),
        ("run", vec!["-l", "-s"], None),
        ("run", vec!["-l", "-target", "-s"], None),
        ("run", vec!["-db", "-p"], None),
        ("run", vec!["-db", "-threads", "-threads", "3"], None),
        ("run", vec!["-P", "-s"], None),
        ("run", vec!["-P", "/no/such/ycsb/file"], None),
        ("run", vec!["-P"], None),
        ("run", vec!["-p", "ключ=значение😀"], None),
        ("run", vec!["-p", "é=\u{20ac}"], None),
        ("run", vec!["-p", "a\\b=c\\\\"], None),
        ("run", vec!["-p", "\\u0041=\\t"], None),
        ("run", vec!["-p", "x y= v w "], None),
        ("run", vec!["-p", "k=a\nb"], None),
        ("run", vec!["-p", "k=a\r\nb\t"], None),
        ("run", vec!["-p", " =  "], None),
        ("run", vec!["-l", ""], None),
        ("run", vec!["-l", "with space"], None),
        ("run", vec!["-p", "workload="], None),
        (
            "run",
            vec!["-l"],
            kept_command_line_difference(&["-l".into()]),
        ),
        (
            "load",
            vec!["-l"],
            kept_command_line_difference(&["-l".into()]),
        ),
        (
            "run",
            vec!["-db"],
            kept_command_line_difference(&["-db".into()]),
        ),
        // Java's Integer.parseInt reads any Unicode decimal digit (here ARABIC-INDIC THREE).
        (
            "run",
            vec!["-threads", "\u{663}"],
            Some("a non-ASCII digit: YCSB reads it as a number, ours refuses"),
        ),
        ("run", vec!["-threads=5"], spelled_differently),
        ("run", vec!["--threads", "5"], spelled_differently),
        ("run", vec!["-pk=v"], spelled_differently),
        ("run", vec!["-s", "hbase20"], spelled_differently),
        (
            "run",
            vec!["-P", "workloada"],
            Some("a built-in workload by bare name: YCSB looks for a file"),
        ),
    ];
    let mut cases: Vec<(String, Vec<String>, Option<&str>)> = hand
        .iter()
        .map(|(sub, args, kept)| {
            (
                sub.to_string(),
                args.iter().map(|a| a.to_string()).collect(),
                *kept,
            )
        })
        .collect();
    let named = cases.len();
    let mut next = hbase_it::xorshift(0x0c11_a96e_5eed);
    for _ in 0..600 {
        let sub = if next() % 10 < 7 { "run" } else { "load" };
        let args = random_command_line(&mut next, &files);
        let kept = kept_command_line_difference(&args);
        cases.push((sub.to_string(), args, kept));
    }

    let java_lines: Vec<Vec<String>> = cases
        .iter()
        .map(|(sub, args, _)| {
            let mut line = vec!["-p".to_string(), WORKLOAD.to_string()];
            line.extend(args.iter().cloned());
            line.push(if sub == "run" { "-t" } else { "-load" }.to_string());
            line
        })
        .collect();
    let java = java_command_lines(&java_lines);
    assert_eq!(java.len(), cases.len(), "one answer per command line");

    let mut differences = Vec::new();
    let mut kept = 0;
    let mut refused_by_java = 0;
    for (i, ((sub, args, reason), java)) in cases.iter().zip(&java).enumerate() {
        let mut ours_args = vec!["-p".to_string(), WORKLOAD.to_string()];
        ours_args.extend(args.iter().cloned());
        let ours = our_command_line(sub, &ours_args);
        refused_by_java += usize::from(java.is_err());
        let same = match (java, &ours) {
            (Ok(j), Ok(o)) => j == o,
            (Err(_), Err(_)) => true,
            _ => false,
        };
        match (same, reason) {
            (true, None) => {}
            (false, Some(_)) => kept += 1,
            // A random line may fail for another reason too, on both sides.
            (true, Some(_)) if i >= named => {}
            (true, Some(r)) => differences.push(format!(
                "ycsb {sub} {args:?}: expected to differ ({r}) but answers as YCSB does: {java:?}"
            )),
            (false, None) => differences.push(format!(
                "ycsb {sub} {args:?}\n    java: {java:?}\n    ours: {ours:?}"
            )),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        differences.is_empty(),
        "{} of {} command lines read differently from YCSB's Client ({named} written by hand):\n{}",
        differences.len(),
        cases.len(),
        differences.join("\n")
    );
    eprintln!(
        "command lines: {} compared with YCSB's Client ({named} by hand, {refused_by_java} refused by it), {kept} kept differences",
        cases.len()
    );
}

/// The histogram files of the comparison: hand-written edge cases (named), as bytes.
fn histogram_edge_files() -> Vec<(&'static str, String)> {
    [
        ("plain", "BlockSize\t10\n0\t5\n1\t3\n"),
        ("no_final_newline", "BlockSize\t10\n0\t5\n1\t3"),
        ("crlf", "BlockSize\t10\r\n0\t5\r\n1\t3\r\n"),
        ("lone_cr", "BlockSize\t10\r0\t5\r1\t3\r"),
        ("cr_cr_lf", "BlockSize\t10\r\r\n0\t5\n"),
        ("blank_line_inside", "BlockSize\t10\n0\t5\n\n1\t3\n"),
        ("blank_line_at_end", "BlockSize\t10\n0\t5\n1\t3\n\n"),
        ("spaces_line", "BlockSize\t10\n0\t5\n   \n"),
        ("trailing_space_count", "BlockSize\t10\n0\t5 \n"),
        ("trailing_space_bucket", "BlockSize\t10\n0 \t5\n"),
        ("leading_space", "BlockSize\t10\n 0\t5\n"),
        ("trailing_space_block", "BlockSize\t10 \n0\t5\n"),
        ("trailing_tab", "BlockSize\t10\t\n0\t5\t\n"),
        ("extra_column", "BlockSize\t10\t20\n0\t5\t9\n1\t2\tx\n"),
        ("empty_column", "BlockSize\t10\n0\t\t5\n"),
        ("leading_tab", "BlockSize\t10\n\t0\t5\n"),
        ("tab_only", "BlockSize\t10\n\t\n"),
        ("space_separated", "BlockSize\t10\n0 5\n"),
        ("bucket_only", "BlockSize\t10\n0\n"),
        ("out_of_order", "BlockSize\t10\n1\t3\n0\t5\n"),
        ("repeated", "BlockSize\t10\n0\t5\n0\t7\n"),
        ("insert_inside", "BlockSize\t10\n0\t1\n1\t2\n1\t3\n2\t4\n"),
        ("insert_front", "BlockSize\t10\n0\t1\n1\t2\n0\t3\n"),
        ("gap", "BlockSize\t10\n0\t1\n2\t3\n"),
        ("negative_bucket", "BlockSize\t10\n-1\t3\n"),
        ("negative_count", "BlockSize\t10\n0\t5\n1\t-2\n2\t4\n"),
        ("negative_area", "BlockSize\t10\n0\t-5\n"),
        ("zero_area", "BlockSize\t10\n0\t0\n1\t0\n"),
        ("only_block_size", "BlockSize\t10\n"),
        ("missing_block_size", "0\t5\n1\t3\n"),
        ("lowercase_block_size", "blocksize\t10\n0\t5\n"),
        ("block_size_space", "BlockSize 10\n0\t5\n"),
        ("block_size_alone", "BlockSize\n0\t5\n"),
        ("block_size_tab_alone", "BlockSize\t\n0\t5\n"),
        ("block_size_negative", "BlockSize\t-10\n0\t5\n1\t3\n"),
        ("block_size_zero", "BlockSize\t0\n0\t5\n1\t3\n"),
        ("block_size_not_a_number", "BlockSize\tten\n0\t5\n"),
        ("block_size_decimal", "BlockSize\t1.5\n0\t5\n"),
        ("plus_signs", "BlockSize\t+10\n+0\t+5\n1\t3\n"),
        ("leading_zeros", "BlockSize\t010\n00\t05\n01\t3\n"),
        ("block_size_too_big", "BlockSize\t2147483648\n0\t5\n"),
        ("block_size_int_max", "BlockSize\t2147483647\n0\t5\n1\t3\n"),
        ("count_too_big", "BlockSize\t10\n0\t2147483648\n"),
        ("count_not_a_number", "BlockSize\t10\n0\tfive\n"),
        ("bucket_not_a_number", "BlockSize\t10\nzero\t5\n"),
        ("area_int_max", "BlockSize\t10\n0\t2147483646\n1\t1\n"),
        (
            "area_beyond_int",
            "BlockSize\t10\n0\t2147483647\n1\t2147483647\n2\t3\n",
        ),
        (
            "area_wraps_negative",
            "BlockSize\t10\n0\t2147483647\n1\t1\n",
        ),
        ("empty_file", ""),
        ("first_line_empty", "\nBlockSize\t10\n0\t5\n"),
        ("byte_order_mark", "\u{feff}BlockSize\t10\n0\t5\n"),
        ("comment_line", "BlockSize\t10\n# c\n0\t5\n"),
        ("one_bucket", "BlockSize\t1000\n0\t9\n"),
        ("empty_first_bucket", "BlockSize\t3\n0\t0\n1\t4\n"),
        ("form_feed", "BlockSize\t10\n0\t5\x0c\n"),
    ]
    .iter()
    .map(|(n, t)| (*n, t.to_string()))
    .collect()
}

/// A random histogram file (deterministic): repeated and out-of-order buckets, zero and
/// negative counts, LF, CR LF and CR line ends; in two files of five also buckets beyond the
/// next free one, blank lines, trailing spaces and tabs and extra columns now and then.
fn random_histogram_file(next: &mut impl FnMut() -> u64) -> String {
    let noisy = next() % 5 < 2;
    let end = |next: &mut dyn FnMut() -> u64| match next() % 20 {
        0 => "\r\n",
        1 => "\r",
        _ => "\n",
    };
    let mut text = String::new();
    if !next().is_multiple_of(25) {
        let block = match next() % 10 {
            0 => "0".to_string(),
            1 => "-3".to_string(),
            _ => (1 + next() % 2000).to_string(),
        };
        text.push_str(&format!("BlockSize\t{block}"));
        text.push_str(end(next));
    }
    let lines = next() % 40;
    let mut size = 0u64;
    for _ in 0..lines {
        let bucket = match next() % 30 {
            0 if size > 0 => next() % size,
            1 if noisy => size + 1 + next() % 3,
            _ => size,
        };
        let count: i64 = match next() % 40 {
            0 => -((next() % 5) as i64),
            1..=4 => 0,
            5 => (next() % 2_000_000_000) as i64,
            _ => (next() % 1000) as i64,
        };
        let mut line = format!("{bucket}\t{count}");
        match if noisy { next() % 60 } else { 60 } {
            0 => line.push(' '),
            1 => line.push_str("\t7"),
            2 => line = String::new(),
            3 => line.push('\t'),
            _ => {}
        }
        if !line.is_empty() && bucket <= size {
            size += 1;
        }
        text.push_str(&line);
        text.push_str(end(next));
    }
    text
}

/// YCSB's answer for one histogram file: `Ok((block size, area, buckets, draws))` or the
/// constructor's exception (a draw's exception ends the draws, as `DRAWTHROW ...`).
type HistogramAnswer = Result<(i64, i64, Vec<i64>, Vec<String>), String>;

/// The field-length histogram file (`fieldlengthdistribution=histogram`): what YCSB 0.17.0's
/// `HistogramGenerator(String file)` reads from each file (block size, buckets, area, or its
/// exception) and its first draws from the same seed, beside ours, over hand-written edge cases
/// and random files. Kept on purpose: a histogram whose counts add up to 0 or less (YCSB builds
/// it and its first draw throws) or to more than 2^31 - 1 (YCSB's `(int) area` wraps and it
/// draws from the wrong range) is refused by ours when read.
#[test]
fn histogram_files_read_as_ycsb_reads_them() {
    const DRAWS: usize = 200;
    const SEED: i64 = 1_234_567;
    let mut files: Vec<(String, String)> = histogram_edge_files()
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .collect();
    let named = files.len();
    let mut next = hbase_it::xorshift(0x41_570f_11e5);
    for i in 0..500 {
        files.push((format!("random_{i}"), random_histogram_file(&mut next)));
    }
    let dir = std::env::temp_dir().join(format!("ycsb-histograms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, (_, text))| {
            let p = dir.join(format!("{i}.hist"));
            std::fs::write(&p, text).unwrap();
            p.to_str().unwrap().to_string()
        })
        .collect();
    let out = oracle(
        &["histograms", &SEED.to_string(), &DRAWS.to_string()],
        Some(&(paths.join("\n") + "\n")),
    );
    let mut java: Vec<HistogramAnswer> = Vec::new();
    let mut tid = None;
    for line in out.lines() {
        if line.starts_with("== ") {
            continue;
        }
        if let Some(e) = line.strip_prefix("THROW ") {
            java.push(Err(e.to_string()));
        } else if let Some(state) = line.strip_prefix("OK ") {
            let mut t = state.splitn(3, ' ');
            let block = t.next().unwrap().parse().unwrap();
            let area = t.next().unwrap().parse().unwrap();
            let buckets = t
                .next()
                .unwrap()
                .split(',')
                .filter(|c| !c.is_empty())
                .map(|c| c.parse().unwrap())
                .collect();
            java.push(Ok((block, area, buckets, Vec::new())));
        } else if let Some(t) = line.strip_prefix("tid ") {
            tid = Some(t.parse::<u64>().unwrap());
        } else {
            let Some(Ok((_, _, _, draws))) = java.last_mut() else {
                panic!("a draw without a generator: {line:?}");
            };
            draws.push(line.to_string());
        }
    }
    assert_eq!(java.len(), files.len(), "one answer per file");
    let tid = tid.expect("the harness drew from at least one file");

    let mut differences = Vec::new();
    let (mut built, mut kept) = (0, 0);
    let mut kept_by_hand = Vec::new();
    for (i, (((name, text), path), java)) in files.iter().zip(&paths).zip(&java).enumerate() {
        let ours = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| HistogramGen::parse(&t));
        let difference = match (java, &ours) {
            (Err(_), Err(_)) => None,
            (Ok((_, area, _, draws)), Err(_)) if *area <= 0 || *area > i64::from(i32::MAX) => {
                // Kept: Java builds it, then throws at the first draw or draws from the wrong
                // range; ours refuses the file.
                assert!(
                    *area > 0 || draws.first().is_some_and(|d| d.starts_with("DRAWTHROW")),
                    "{name}: {draws:?}"
                );
                kept += 1;
                if i < named {
                    kept_by_hand.push(name.as_str());
                }
                None
            }
            (Ok((block, area, buckets, draws)), Ok(g)) => {
                built += 1;
                let mut r = JavaRandom::new(SEED as u64, tid);
                let ours_draws: Vec<String> =
                    (0..DRAWS).map(|_| g.next(&mut r).to_string()).collect();
                let state = (g.block_size(), g.area(), g.buckets().to_vec());
                if state != (*block, *area, buckets.clone()) {
                    Some(format!(
                        "java (block, area, buckets) {:?}, ours {state:?}",
                        (block, area, buckets)
                    ))
                } else if &ours_draws != draws {
                    Some(format!(
                        "draws differ: java {draws:?}\n    ours {ours_draws:?}"
                    ))
                } else {
                    None
                }
            }
            _ => Some(format!(
                "java {java:?}\n    ours {:?}",
                ours.as_ref()
                    .map(|g| (g.block_size(), g.area(), g.buckets()))
            )),
        };
        if let Some(d) = difference {
            differences.push(format!("{name}: file {text:?}\n    {d}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        kept_by_hand,
        [
            "negative_area",
            "zero_area",
            "only_block_size",
            "area_beyond_int",
            "area_wraps_negative"
        ],
        "the hand-written files built by YCSB and refused by ours"
    );
    assert!(
        differences.is_empty(),
        "{} of {} histogram files read differently from YCSB's HistogramGenerator ({named} written by hand):\n{}",
        differences.len(),
        files.len(),
        differences.join("\n")
    );
    eprintln!(
        "histogram files: {} compared with YCSB's HistogramGenerator ({named} by hand), {built} built by both and drawn {DRAWS} times, {} refused by both, {kept} kept differences",
        files.len(),
        files.len() - built - kept
    );
}
