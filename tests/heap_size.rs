//! A mutation's heap size is the Java client's, exactly: `Put::heap_size`,
//! `Delete::heap_size`, `Increment::heap_size` and `Append::heap_size` against hbase-client
//! 2.x's `heapSize()` of the same mutation, built the same way (the Java side:
//! `tests/java/interop/HeapSizes.java`, run by `tests/java/interop/run`). A BufferedMutator
//! adds these up against its write buffer's size as Java's does, so both flush after as many
//! mutations. No cluster needed.
//!
//! The cases are generated from a fixed seed: rows, families, qualifiers and values of many
//! lengths (0, 1, a few hundred bytes, 64 KiB and 1 MiB values), with and without timestamps
//! (the mutation's and the cell's), one to five families in any order and puts and deletes of
//! 9 to 12 (past the 8 counted without allocating), every kind of delete
//! marker (a whole family's delete after and before others of its family), and increments
//! and appends of several columns.

use hbase_client::{Append, Delete, Increment, Put};
use hbase_it::spec_bytes;

/// xorshift64*: the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A length: mostly short, sometimes empty, sometimes long.
    fn len(&mut self, short: u64, long: &[usize]) -> usize {
        match self.below(10) {
            0 => 0,
            1 => long[self.below(long.len() as u64) as usize],
            _ => 1 + self.below(short) as usize,
        }
    }

    /// `len` bytes, each of them any byte.
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// A row key (never empty: HBase refuses an empty row): mostly short, sometimes one of
    /// `long`'s lengths.
    fn row(&mut self, long: &[usize]) -> Vec<u8> {
        let len = self.len(40, long).max(1);
        self.bytes(len)
    }

    /// Up to `most` families of up to `longest` bytes each, to pick the cells' from.
    fn families(&mut self, most: u64, longest: u64) -> Vec<Vec<u8>> {
        (0..1 + self.below(most))
            .map(|_| {
                let len = 1 + self.below(longest) as usize;
                self.bytes(len)
            })
            .collect()
    }

    fn timestamp(&mut self) -> Option<u64> {
        (self.below(3) == 0).then(|| self.below(1 << 41))
    }
}

/// A value in the spec: short ones as bytes, long ones as `n:LEN` (that many `v`s).
fn value_token(v: &[u8]) -> String {
    if v.len() > 256 && v.iter().all(|&b| b == b'v') {
        format!("n:{}", v.len())
    } else {
        spec_bytes(v)
    }
}

fn ts_token(ts: Option<u64>) -> String {
    ts.map_or_else(|| "-".to_string(), |t| t.to_string())
}

/// A value of `len` bytes: random when short, `v`s when long (so the spec stays small).
fn value(rng: &mut Rng, len: usize) -> Vec<u8> {
    if len > 256 {
        vec![b'v'; len]
    } else {
        rng.bytes(len)
    }
}

/// One case: its spec line and our heap size of the same mutation.
type Case = (String, usize);

fn put_case(rng: &mut Rng) -> Case {
    let row = rng.row(&[300, 4096, 32767]);
    let most = if rng.below(2) == 0 { 1 } else { 5 };
    let families = rng.families(most, 12);
    put_of(rng, row, families)
}

/// A put of cells in 9 to 12 families, so that their count passes the 8 `Put::heap_size`
/// keeps without allocating.
fn many_families_put_case(rng: &mut Rng) -> Case {
    let row = rng.row(&[300]);
    let n = 9 + rng.below(4) as usize;
    let families = distinct_families(rng, n);
    put_of(rng, row, families)
}

/// `n` distinct families of 1 to 8 bytes.
fn distinct_families(rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
    let mut families: Vec<Vec<u8>> = Vec::new();
    while families.len() < n {
        let len = 1 + rng.below(8) as usize;
        let f = rng.bytes(len);
        if !families.contains(&f) {
            families.push(f);
        }
    }
    families
}

fn put_of(rng: &mut Rng, row: Vec<u8>, families: Vec<Vec<u8>>) -> Case {
    let put_ts = rng.timestamp();
    let mut put = Put::new(row.clone());
    if let Some(ts) = put_ts {
        put = put.timestamp(ts);
    }
    let mut line = format!("put {} {}", spec_bytes(&row), ts_token(put_ts));
    let most = if rng.below(4) == 0 || families.len() > 8 {
        60
    } else {
        12
    };
    let cells = 1 + rng.below(most);
    for _ in 0..cells {
        let family = &families[rng.below(families.len() as u64) as usize];
        let qualifier = {
            let len = rng.len(20, &[200, 1000]);
            rng.bytes(len)
        };
        let len = rng.len(300, &[1000, 65536, 1 << 20]);
        let v = value(rng, len);
        let ts = rng.timestamp();
        put = match ts {
            Some(ts) => put.add_at(family, &qualifier, ts, &v),
            None => put.add(family, &qualifier, &v),
        };
        line += &format!(
            " {} {} {} {}",
            spec_bytes(family),
            spec_bytes(&qualifier),
            ts_token(ts),
            value_token(&v)
        );
    }
    (line, put.heap_size())
}

fn delete_case(rng: &mut Rng) -> Case {
    let row = rng.row(&[300, 32767]);
    let families = rng.families(3, 10);
    delete_of(rng, row, families, 9)
}

/// A delete of targets in 9 to 12 families (past the 8 kept without allocating).
fn many_families_delete_case(rng: &mut Rng) -> Case {
    let row = rng.row(&[300]);
    let n = 9 + rng.below(4) as usize;
    let families = distinct_families(rng, n);
    delete_of(rng, row, families, 40)
}

/// A delete of `row` with up to `most - 1` targets in `families`.
fn delete_of(rng: &mut Rng, row: Vec<u8>, families: Vec<Vec<u8>>, most: u64) -> Case {
    let delete_ts = rng.timestamp();
    let mut delete = Delete::new(row.clone());
    if let Some(ts) = delete_ts {
        delete = delete.timestamp(ts);
    }
    let mut line = format!("delete {} {}", spec_bytes(&row), ts_token(delete_ts));
    for _ in 0..rng.below(most) {
        let f = families[rng.below(families.len() as u64) as usize].clone();
        let q = {
            let len = rng.len(20, &[500]);
            rng.bytes(len)
        };
        match rng.below(5) {
            0 => {
                delete = delete.family(f.clone());
                line += &format!(" family {} -", spec_bytes(&f));
            }
            1 => {
                let ts = rng.below(1 << 41);
                delete = delete.family_version(f.clone(), ts);
                line += &format!(" family-version {} {ts}", spec_bytes(&f));
            }
            2 => {
                delete = delete.column(f.clone(), q.clone());
                line += &format!(" columns {} {} -", spec_bytes(&f), spec_bytes(&q));
            }
            _ => {
                let ts = rng.timestamp();
                delete = delete.column_version(f.clone(), q.clone(), ts);
                line += &format!(
                    " column {} {} {}",
                    spec_bytes(&f),
                    spec_bytes(&q),
                    ts_token(ts)
                );
            }
        }
    }
    (line, delete.heap_size())
}

fn increment_or_append_case(rng: &mut Rng, append: bool) -> Case {
    let row = rng.row(&[300]);
    let families = rng.families(3, 10);
    let mut increment = Increment::new(row.clone());
    let mut appended = Append::new(row.clone());
    let mut line = format!(
        "{} {}",
        if append { "append" } else { "increment" },
        spec_bytes(&row)
    );
    for _ in 0..1 + rng.below(6) {
        let f = families[rng.below(families.len() as u64) as usize].clone();
        let q = {
            let len = rng.len(20, &[300]);
            rng.bytes(len)
        };
        if append {
            let len = rng.len(100, &[5000]);
            let v = value(rng, len);
            line += &format!(" {} {} {}", spec_bytes(&f), spec_bytes(&q), value_token(&v));
            appended = appended.add(f, q, v);
        } else {
            let amount = rng.next() as i64 >> rng.below(64);
            line += &format!(" {} {} {amount}", spec_bytes(&f), spec_bytes(&q));
            increment = increment.add(f, q, amount);
        }
    }
    let ours = if append {
        appended.heap_size()
    } else {
        increment.heap_size()
    };
    (line, ours)
}

/// The YCSB put the README quotes (row `user` + 19 digits, ten fields of 100 bytes): 2,384
/// bytes by Java's count.
fn ycsb_put_case() -> Case {
    let row = b"user6284781860667377211".to_vec();
    let mut put = Put::with_capacity(row.clone(), 10);
    let mut line = format!("put {} -", spec_bytes(&row));
    for i in 0..10 {
        let q = format!("field{i}");
        put = put.add("family", &q, [b'v'; 100]);
        line += &format!(
            " {} {} - {}",
            spec_bytes(b"family"),
            spec_bytes(q.as_bytes()),
            spec_bytes(&[b'v'; 100])
        );
    }
    (line, put.heap_size())
}

/// A delete of 200 columns of a family (and a version of one of them, newer than the delete),
/// then of the whole family, then of one more column of it: Java's `addFamily` keeps only
/// the family's marker and what follows it (and so does `Delete::family`, which sends no more).
fn family_after_its_columns_case() -> Case {
    let row = b"row".to_vec();
    let mut delete = Delete::new(row.clone()).timestamp(200);
    let mut line = format!("delete {} 200", spec_bytes(&row));
    for i in 0..200 {
        let q = format!("q{i:03}");
        delete = delete.column("f", q.clone());
        line += &format!(
            " columns {} {} -",
            spec_bytes(b"f"),
            spec_bytes(q.as_bytes())
        );
    }
    delete = delete
        .column_version("f", "q000", Some(300))
        .column("g", "x")
        .family("f")
        .column("f", "late");
    line += &format!(
        " column {f} {} 300 columns {} {} - family {f} - columns {f} {} -",
        spec_bytes(b"q000"),
        spec_bytes(b"g"),
        spec_bytes(b"x"),
        spec_bytes(b"late"),
        f = spec_bytes(b"f")
    );
    (line, delete.heap_size())
}

#[test]
fn heap_sizes_are_the_java_clients() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut cases = vec![ycsb_put_case(), family_after_its_columns_case()];
    for i in 0..600 {
        cases.push(match i % 6 {
            0..=2 => put_case(&mut rng),
            3 | 4 => delete_case(&mut rng),
            _ => {
                let append = rng.below(2) == 0;
                increment_or_append_case(&mut rng, append)
            }
        });
    }
    for _ in 0..40 {
        cases.push(many_families_put_case(&mut rng));
        cases.push(many_families_delete_case(&mut rng));
    }
    let java = {
        let dir = TempDir(std::env::temp_dir().join(format!("heap-sizes-{}", std::process::id())));
        std::fs::create_dir_all(&dir.0).unwrap();
        let spec = dir.0.join("spec");
        let lines: Vec<&str> = cases.iter().map(|(l, _)| l.as_str()).collect();
        std::fs::write(&spec, lines.join("\n") + "\n").unwrap();
        hbase_it::run_java_program("HeapSizes.java", &[&spec])
    };
    let java: Vec<usize> = java
        .lines()
        .map(|l| l.parse().unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    assert_eq!(java.len(), cases.len(), "one answer per case");
    assert_eq!(java[0], 2384, "the YCSB put");
    let differing: Vec<String> = cases
        .iter()
        .zip(&java)
        .filter(|((_, ours), java)| ours != *java)
        .map(|((line, ours), java)| {
            let shown: String = line.chars().take(200).collect();
            format!("ours {ours}, Java {java}: {shown}")
        })
        .collect();
    eprintln!("{} cases compared, {} differ", cases.len(), differing.len());
    assert!(
        differing.is_empty(),
        "{} of {} cases differ from Java's heapSize(), e.g.\n{}",
        differing.len(),
        cases.len(),
        differing[..differing.len().min(12)].join("\n")
    );
}

/// The spec's directory, removed when the Java side has answered or failed (before anything
/// is asserted, so that no run leaves its 3 MB spec behind).
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
