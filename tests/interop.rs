//! The Java client as the interop oracle. One list of writes covers every kind of cell this
//! client supports: several families, empty and binary qualifiers, values from 0 bytes to 5 MiB,
//! explicit and server timestamps, several versions, deletes of each kind (one version of a
//! column, a column's versions, a family, a family version, a row; one delete of several
//! targets, a family's after its columns), increments and appends,
//! check-and-mutate, row keys with 0x00 and 0xFF, single calls, batches and a buffered mutator,
//! in a non-default namespace, on tables pre-split into six regions spread over three servers.
//!
//! The Java client (hbase-shaded-client, through our own program `tests/java/interop/Interop.java`)
//! replays the writes on one table, we replay them on another; then both clients run the same
//! gets and scans (versions, ranges, both directions, time ranges, column selections, page
//! sizes, every filter; batches, partial results and their combination, raw scans that show
//! every kind of delete marker, read types, TIMELINE consistency, uncached blocks) on both
//! tables and write canonical dumps (every result's row, marked ` more` when it is a piece of a
//! row, as Java's `Result.mayHaveMoreCellsInRow()` says; every cell's family, qualifier,
//! timestamp, type and value, in the order received). The test asserts:
//! - on the table Java wrote, our dump equals Java's, byte for byte (we read what Java reads);
//! - on the table we wrote, Java's dump equals ours (Java reads what we read);
//! - Java's dumps of the two tables are equal, up to the server-assigned timestamps (we wrote
//!   what Java wrote), and so are the outcomes of the increments, appends and checks.
//!
//! Our dumps are read through `Table::get_raw` and `Table::scan_raw` (the cells left in the
//! block they came in), and every get and scan also runs through `get` and `scan`, whose rows
//! must be the same.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use hbase_client::admin::ProcedureState;
use hbase_client::{
    Action, Append, CellRef, CellType, CheckAndMutate, Client, ColumnFamily, Comparator, CompareOp,
    Consistency, Delete, Filter, Get, Increment, Mutation, MutatorConfig, Put, RawRow, ReadType,
    Scan, Table, TableDescriptor, TableName,
};
use md5::{Digest, Md5};

// ---------------------------------------------------------------------------------------------
// Bytes and values as spec tokens

/// `x` + lower-case hex: the spec's and the dumps' form of bytes.
use hbase_it::spec_bytes as x;

fn ts_token(ts: Option<u64>) -> String {
    ts.map_or("-".to_string(), |t| t.to_string())
}

/// A value: literal bytes, or a generated one (`fill:<len>:<seed>`, made the same way in
/// Interop.java) so that megabyte values need not be spelled out in the spec.
#[derive(Clone)]
enum Val {
    Lit(Bytes),
    Fill(usize, u64),
}

impl Val {
    fn bytes(&self) -> Bytes {
        match self {
            Val::Lit(b) => b.clone(),
            Val::Fill(len, seed) => (0..*len as u64)
                .map(|i| ((seed * 7 + i * 31 + i / 1024) & 0xff) as u8)
                .collect::<Vec<u8>>()
                .into(),
        }
    }

    fn token(&self) -> String {
        match self {
            Val::Lit(b) => x(b),
            Val::Fill(len, seed) => format!("fill:{len}:{seed}"),
        }
    }
}

fn lit(v: impl AsRef<[u8]>) -> Val {
    Val::Lit(Bytes::copy_from_slice(v.as_ref()))
}

/// The dumps' form of a value: its bytes up to 48 bytes, else its length and MD5.
fn repr(v: &[u8]) -> String {
    if v.len() <= 48 {
        return x(v);
    }
    let digest = Md5::digest(v);
    format!("len={},md5={}", v.len(), &x(&digest)[1..])
}

fn b(v: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(v.as_ref())
}

// ---------------------------------------------------------------------------------------------
// Writes

#[derive(Clone)]
enum Check {
    Absent,
    Matches(CompareOp, Bytes),
}

/// One write of the spec (see Interop.java for the line format).
#[derive(Clone)]
enum Op {
    Put {
        row: Bytes,
        ts: Option<u64>,
        cells: Vec<(Bytes, Bytes, Option<u64>, Val)>,
    },
    DeleteRow(Bytes, Option<u64>),
    DeleteFamily(Bytes, Bytes, Option<u64>),
    DeleteFamilyVersion(Bytes, Bytes, u64),
    DeleteColumns(Bytes, Bytes, Bytes, Option<u64>),
    DeleteColumn(Bytes, Bytes, Bytes, Option<u64>),
    /// One delete (its row and timestamp) of several targets, added in order.
    DeleteMany(Bytes, Option<u64>, Vec<Target>),
    Increment(Bytes, Bytes, Bytes, i64),
    Append(Bytes, Bytes, Bytes, Val),
    CheckPut {
        row: Bytes,
        check: (Bytes, Bytes, Check),
        put: (Bytes, Bytes, Val),
    },
    CheckDelete {
        row: Bytes,
        check: (Bytes, Bytes, Check),
        delete: (Bytes, Bytes),
    },
    Batch(Vec<Op>),
    Mutator(Vec<Op>),
}

/// A target of a `DeleteMany`: Java's `addFamily`, `addFamilyVersion`, `addColumns`,
/// `addColumn`.
#[derive(Clone)]
enum Target {
    Family(Bytes),
    FamilyVersion(Bytes, u64),
    Columns(Bytes, Bytes),
    Column(Bytes, Bytes, Option<u64>),
}

fn op_name(op: CompareOp) -> &'static str {
    match op {
        CompareOp::Less => "LESS",
        CompareOp::LessOrEqual => "LESS_OR_EQUAL",
        CompareOp::Equal => "EQUAL",
        CompareOp::NotEqual => "NOT_EQUAL",
        CompareOp::GreaterOrEqual => "GREATER_OR_EQUAL",
        CompareOp::Greater => "GREATER",
    }
}

fn check_token(c: &Check) -> String {
    match c {
        Check::Absent => "absent".into(),
        Check::Matches(op, v) => format!("{}:{}", op_name(*op), x(v)),
    }
}

impl Op {
    fn spec_lines(&self) -> Vec<String> {
        let line = match self {
            Op::Put { row, ts, cells } => {
                let mut s = format!("put {} {}", x(row), ts_token(*ts));
                for (f, q, ts, v) in cells {
                    s.push_str(&format!(
                        " {} {} {} {}",
                        x(f),
                        x(q),
                        ts_token(*ts),
                        v.token()
                    ));
                }
                s
            }
            Op::DeleteRow(r, ts) => format!("delete {} {}", x(r), ts_token(*ts)),
            Op::DeleteFamily(r, f, ts) => {
                format!("delete-family {} {} {}", x(r), x(f), ts_token(*ts))
            }
            Op::DeleteFamilyVersion(r, f, ts) => {
                format!("delete-family-version {} {} {ts}", x(r), x(f))
            }
            Op::DeleteColumns(r, f, q, ts) => {
                format!(
                    "delete-columns {} {} {} {}",
                    x(r),
                    x(f),
                    x(q),
                    ts_token(*ts)
                )
            }
            Op::DeleteColumn(r, f, q, ts) => {
                format!("delete-column {} {} {} {}", x(r), x(f), x(q), ts_token(*ts))
            }
            Op::DeleteMany(r, ts, targets) => {
                let mut s = format!("delete-many {} {}", x(r), ts_token(*ts));
                for t in targets {
                    s += &match t {
                        Target::Family(f) => format!(" family {}", x(f)),
                        Target::FamilyVersion(f, ts) => format!(" family-version {} {ts}", x(f)),
                        Target::Columns(f, q) => format!(" columns {} {}", x(f), x(q)),
                        Target::Column(f, q, ts) => {
                            format!(" column {} {} {}", x(f), x(q), ts_token(*ts))
                        }
                    };
                }
                s
            }
            Op::Increment(r, f, q, n) => format!("increment {} {} {} {n}", x(r), x(f), x(q)),
            Op::Append(r, f, q, v) => {
                format!("append {} {} {} {}", x(r), x(f), x(q), v.token())
            }
            Op::CheckPut { row, check, put } => format!(
                "check-put {} {} {} {} {} {} {}",
                x(row),
                x(&check.0),
                x(&check.1),
                check_token(&check.2),
                x(&put.0),
                x(&put.1),
                put.2.token()
            ),
            Op::CheckDelete { row, check, delete } => format!(
                "check-delete {} {} {} {} {} {}",
                x(row),
                x(&check.0),
                x(&check.1),
                check_token(&check.2),
                x(&delete.0),
                x(&delete.1)
            ),
            Op::Batch(ops) | Op::Mutator(ops) => {
                let kind = if matches!(self, Op::Batch(_)) {
                    "batch"
                } else {
                    "mutator"
                };
                let mut lines = vec![format!("{kind}-begin")];
                lines.extend(ops.iter().flat_map(Op::spec_lines));
                lines.push(format!("{kind}-end"));
                return lines;
            }
        };
        vec![line]
    }

    /// A put or delete as a mutation (what batches and the mutator carry).
    fn mutation(&self) -> Mutation {
        let with_ts = |d: Delete, ts: &Option<u64>| match ts {
            Some(t) => d.timestamp(*t),
            None => d,
        };
        match self {
            Op::Put { row, ts, cells } => {
                let mut p = Put::new(row.clone());
                if let Some(t) = ts {
                    p = p.timestamp(*t);
                }
                for (f, q, ts, v) in cells {
                    p = match ts {
                        Some(t) => p.add_at(f.clone(), q.clone(), *t, v.bytes()),
                        None => p.add(f.clone(), q.clone(), v.bytes()),
                    };
                }
                p.into()
            }
            Op::DeleteRow(r, ts) => with_ts(Delete::new(r.clone()), ts).into(),
            Op::DeleteFamily(r, f, ts) => {
                with_ts(Delete::new(r.clone()), ts).family(f.clone()).into()
            }
            Op::DeleteFamilyVersion(r, f, ts) => {
                Delete::new(r.clone()).family_version(f.clone(), *ts).into()
            }
            Op::DeleteColumns(r, f, q, ts) => with_ts(Delete::new(r.clone()), ts)
                .column(f.clone(), q.clone())
                .into(),
            Op::DeleteColumn(r, f, q, ts) => Delete::new(r.clone())
                .column_version(f.clone(), q.clone(), *ts)
                .into(),
            Op::DeleteMany(r, ts, targets) => targets
                .iter()
                .fold(with_ts(Delete::new(r.clone()), ts), |d, t| match t {
                    Target::Family(f) => d.family(f.clone()),
                    Target::FamilyVersion(f, ts) => d.family_version(f.clone(), *ts),
                    Target::Columns(f, q) => d.column(f.clone(), q.clone()),
                    Target::Column(f, q, ts) => d.column_version(f.clone(), q.clone(), *ts),
                })
                .into(),
            _ => panic!("not a put or delete"),
        }
    }

    /// Applies the write through our client; outcomes go to `log` as Interop.java logs them.
    async fn apply(&self, client: &Client, table: &Table, log: &mut Vec<String>) {
        let line = || self.spec_lines().remove(0);
        let check_and = |row: &Bytes, check: &(Bytes, Bytes, Check)| {
            let cm = CheckAndMutate::new(row.clone(), check.0.clone(), check.1.clone());
            match &check.2 {
                Check::Absent => cm.if_absent(),
                Check::Matches(op, v) => cm.if_matches(*op, v.clone()),
            }
        };
        match self {
            Op::Increment(r, f, q, n) => {
                let row = table
                    .increment(Increment::new(r.clone()).add(f.clone(), q.clone(), *n))
                    .await
                    .unwrap();
                log.push(format!("{} = {}", line(), repr(row.value(f, q).unwrap())));
            }
            Op::Append(r, f, q, v) => {
                let row = table
                    .append(Append::new(r.clone()).add(f.clone(), q.clone(), v.bytes()))
                    .await
                    .unwrap();
                log.push(format!("{} = {}", line(), repr(row.value(f, q).unwrap())));
            }
            Op::CheckPut { row, check, put } => {
                let cm = check_and(row, check).then_put(Put::new(row.clone()).add(
                    put.0.clone(),
                    put.1.clone(),
                    put.2.bytes(),
                ));
                let applied = table.check_and_mutate(cm).await.unwrap();
                log.push(format!("{} = {applied}", line()));
            }
            Op::CheckDelete { row, check, delete } => {
                let cm = check_and(row, check).then_delete(
                    Delete::new(row.clone()).column(delete.0.clone(), delete.1.clone()),
                );
                let applied = table.check_and_mutate(cm).await.unwrap();
                log.push(format!("{} = {applied}", line()));
            }
            Op::Batch(ops) => {
                let actions: Vec<Action> = ops.iter().map(|o| o.mutation().into()).collect();
                for (i, r) in table.batch(&actions).await.into_iter().enumerate() {
                    r.unwrap_or_else(|e| panic!("batch action {i}: {e}"));
                }
            }
            Op::Mutator(ops) => {
                let m = client
                    .buffered_mutator(&table.name().to_string(), MutatorConfig::default())
                    .unwrap();
                for o in ops {
                    m.mutate(o.mutation()).await.unwrap();
                }
                m.close()
                    .await
                    .expect("every buffered mutation acknowledged");
            }
            single => match single.mutation() {
                Mutation::Put(p) => table.put(p).await.unwrap(),
                Mutation::Delete(d) => table.delete(d).await.unwrap(),
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reads

#[derive(Clone)]
enum Opt {
    Start(Bytes),
    Stop(Bytes),
    StopInclusive,
    Reversed,
    Versions(u32),
    Family(Bytes),
    Column(Bytes, Bytes),
    Limit(u64),
    Caching(u32),
    MaxSize(u64),
    TimeRange(u64, u64),
    Where(Filter),
    /// Scans only: at most N cells per result (Java's `setBatch`).
    Batch(u32),
    /// Scans only: rows in the pieces the server sends (`setAllowPartialResults`).
    AllowPartial,
    /// Scans only: delete markers and deleted cells too (`setRaw`).
    Raw,
    /// Scans only: `setReadType` (stream or pread).
    Read(ReadType),
    /// Scans only: `setConsistency(TIMELINE)`.
    Timeline,
    /// Scans only: `setCacheBlocks(false)`.
    NoCacheBlocks,
    /// Scans only: `setScanMetricsEnabled(true)`.
    Metrics,
}

/// A get (of `row`) or a scan, with its options.
struct Query {
    get: Option<Bytes>,
    opts: Vec<Opt>,
}

fn comparator_expr(c: &Comparator) -> String {
    match c {
        Comparator::Binary(v) => format!("binary:{}", x(v)),
        Comparator::BinaryPrefix(v) => format!("binaryprefix:{}", x(v)),
        Comparator::Substring(s) => format!("substring:{}", x(s.as_bytes())),
        Comparator::Regex(s) => format!("regex:{}", x(s.as_bytes())),
    }
}

/// The spec's form of a filter (Interop.java parses it into the Java client's filter).
fn filter_expr(f: &Filter) -> String {
    let bound = |b: &Option<Bytes>| b.as_ref().map_or("-".to_string(), |v| x(v));
    let list = |fs: &[Filter]| fs.iter().map(filter_expr).collect::<Vec<_>>().join(";");
    match f {
        Filter::Prefix(p) => format!("prefix({})", x(p)),
        Filter::Page(n) => format!("page({n})"),
        Filter::KeyOnly(len) => format!("keyonly({len})"),
        Filter::FirstKeyOnly => "firstkeyonly()".into(),
        Filter::ColumnPrefix(p) => format!("colprefix({})", x(p)),
        Filter::ColumnRange {
            min,
            min_inclusive,
            max,
            max_inclusive,
        } => format!(
            "colrange({},{min_inclusive},{},{max_inclusive})",
            bound(min),
            bound(max)
        ),
        Filter::SingleColumnValue {
            family,
            qualifier,
            op,
            comparator,
            filter_if_missing,
            latest_version_only,
        } => format!(
            "scv({},{},{},{},{filter_if_missing},{latest_version_only})",
            x(family),
            x(qualifier),
            op_name(*op),
            comparator_expr(comparator)
        ),
        Filter::Row(op, c) => format!("row({},{})", op_name(*op), comparator_expr(c)),
        Filter::Qualifier(op, c) => format!("qualifier({},{})", op_name(*op), comparator_expr(c)),
        Filter::Value(op, c) => format!("value({},{})", op_name(*op), comparator_expr(c)),
        Filter::All(fs) => format!("all({})", list(fs)),
        Filter::Any(fs) => format!("any({})", list(fs)),
    }
}

impl Query {
    fn spec_line(&self) -> String {
        let mut s = match &self.get {
            Some(row) => format!("get {}", x(row)),
            None => "scan".to_string(),
        };
        for o in &self.opts {
            s.push(' ');
            s.push_str(&match o {
                Opt::Start(r) => format!("start={}", x(r)),
                Opt::Stop(r) => format!("stop={}", x(r)),
                Opt::StopInclusive => "stopinclusive".into(),
                Opt::Reversed => "reversed".into(),
                Opt::Versions(n) => format!("versions={n}"),
                Opt::Family(f) => format!("family={}", x(f)),
                Opt::Column(f, q) => format!("column={}:{}", x(f), x(q)),
                Opt::Limit(n) => format!("limit={n}"),
                Opt::Caching(n) => format!("caching={n}"),
                Opt::MaxSize(n) => format!("maxsize={n}"),
                Opt::TimeRange(a, b) => format!("timerange={a}:{b}"),
                Opt::Where(f) => format!("filter={}", filter_expr(f)),
                Opt::Batch(n) => format!("batch={n}"),
                Opt::AllowPartial => "allowpartial".into(),
                Opt::Raw => "raw".into(),
                Opt::Read(t) => match t {
                    ReadType::Stream => "readtype=stream".into(),
                    ReadType::Pread => "readtype=pread".into(),
                    _ => "readtype=default".into(),
                },
                Opt::Timeline => "timeline".into(),
                Opt::NoCacheBlocks => "nocacheblocks".into(),
                Opt::Metrics => "metrics".into(),
            });
        }
        s
    }

    /// The get of `row` with this query's options.
    fn to_get(&self, row: &Bytes) -> Get {
        let mut g = Get::new(row.clone());
        for o in &self.opts {
            g = match o {
                Opt::Versions(n) => g.max_versions(*n),
                Opt::Family(f) => g.family(f.clone()),
                Opt::Column(f, q) => g.column(f.clone(), q.clone()),
                Opt::TimeRange(a, b) => g.time_range(*a, *b),
                Opt::Where(f) => g.filter(f.clone()),
                Opt::Timeline => g.consistency(Consistency::Timeline),
                _ => panic!("not a get option: {}", self.spec_line()),
            };
        }
        g
    }

    /// The scan with this query's options.
    fn to_scan(&self) -> Scan {
        let mut s = Scan::new();
        for o in &self.opts {
            s = match o {
                Opt::Start(r) => s.start_row(r.clone()),
                Opt::Stop(r) => s.stop_row(r.clone()),
                Opt::StopInclusive => s.include_stop_row(true),
                Opt::Reversed => s.reversed(true),
                Opt::Versions(n) => s.max_versions(*n),
                Opt::Family(f) => s.family(f.clone()),
                Opt::Column(f, q) => s.column(f.clone(), q.clone()),
                Opt::Limit(n) => s.limit(*n),
                Opt::Caching(n) => s.caching(*n),
                Opt::MaxSize(n) => s.max_result_size(*n),
                Opt::TimeRange(a, b) => s.time_range(*a, *b),
                Opt::Where(f) => s.filter(f.clone()),
                Opt::Batch(n) => s.batch(*n),
                Opt::AllowPartial => s.allow_partial_results(true),
                Opt::Raw => s.raw(true),
                Opt::Read(t) => s.read_type(*t),
                Opt::Timeline => s.consistency(Consistency::Timeline),
                Opt::NoCacheBlocks => s.cache_blocks(false),
                Opt::Metrics => s.scan_metrics(true),
            };
        }
        s
    }

    /// Runs the query through our client; the dump lines, as Interop.java writes them.
    async fn dump(&self, table: &Table, out: &mut Vec<String>) {
        out.push(format!("# {}", self.spec_line()));
        let rows: Vec<RawRow> = match &self.get {
            Some(row) => {
                let g = self.to_get(row);
                // The raw row's cells are what is dumped (and so compared with the Java
                // client's); the row `get` decodes must hold the same cells.
                let raw = table.get_raw(g.clone()).await.unwrap();
                let row = table.get(g).await.unwrap();
                assert_eq!(
                    raw.as_ref().map(RawRow::to_row_result),
                    row,
                    "get_raw and get disagree: {}",
                    self.spec_line()
                );
                match raw {
                    Some(r) => {
                        out.push(format!("row {}", x(r.row())));
                        for c in r.cells() {
                            out.push(cell_line(c));
                        }
                        return;
                    }
                    None => {
                        out.push("none".into());
                        return;
                    }
                }
            }
            None => {
                let s = self.to_scan();
                // As for a get: the raw rows' cells are dumped, and `scan` must return the
                // same rows.
                let raw = table.scan_raw(s.clone()).collect_all().await.unwrap();
                let rows = table.scan(s).collect_all().await.unwrap();
                assert_eq!(
                    raw.iter().map(RawRow::to_row_result).collect::<Vec<_>>(),
                    rows,
                    "scan_raw and scan disagree: {}",
                    self.spec_line()
                );
                raw
            }
        };
        for r in rows {
            // A piece of a row (batch, allowpartial) is marked as Interop.java marks a Result
            // whose mayHaveMoreCellsInRow() is true.
            let more = if r.may_have_more_cells() { " more" } else { "" };
            out.push(format!("row {}{more}", x(r.row())));
            for c in r.cells() {
                out.push(cell_line(c));
            }
        }
    }
}

/// A cell's dump line, as Interop.java writes it.
fn cell_line(c: CellRef<'_>) -> String {
    format!(
        " cell {} {} {} {} {}",
        x(c.family()),
        x(c.qualifier()),
        c.timestamp(),
        type_name(c.cell_type()),
        repr(c.value())
    )
}

/// The Java client's name of a cell type (`Cell.Type`).
fn type_name(t: CellType) -> String {
    match t {
        CellType::Put => "Put".into(),
        CellType::Delete => "Delete".into(),
        CellType::DeleteFamilyVersion => "DeleteFamilyVersion".into(),
        CellType::DeleteColumn => "DeleteColumn".into(),
        CellType::DeleteFamily => "DeleteFamily".into(),
        CellType::Other(code) => format!("Other({code})"),
    }
}

// ---------------------------------------------------------------------------------------------
// The data set and the queries

const F1: &[u8] = b"f1"; // 5 versions
const F2: &[u8] = b"f2"; // 1 version
const C: &[u8] = b"c"; // counters and appends

/// A cell of a put: family, qualifier, timestamp (none: the put's), value.
type CellSpec<'a> = (&'a [u8], &'a [u8], Option<u64>, Val);

fn put(row: impl AsRef<[u8]>, ts: Option<u64>, cells: &[CellSpec]) -> Op {
    Op::Put {
        row: b(row),
        ts,
        cells: cells
            .iter()
            .map(|(f, q, ts, v)| (b(f), b(q), *ts, v.clone()))
            .collect(),
    }
}

/// Region boundaries: six regions, binary keys on both sides of each.
fn split_keys() -> Vec<Bytes> {
    [&[0x00u8, 0x80][..], b"a\x00", b"n", &[0xfe], &[0xff, 0x80]]
        .iter()
        .map(b)
        .collect()
}

/// Row keys with 0x00 and 0xFF, in every region.
fn binary_rows() -> Vec<Bytes> {
    [
        &[0x00u8][..],
        &[0x00, 0x00],
        &[0x00, 0xff, 0x00],
        b"a",
        b"a\x00b",
        b"m-binary\xff\x00",
        &[0xfe, 0xff],
        &[0xff],
        &[0xff, 0xff, 0xff],
    ]
    .iter()
    .map(b)
    .collect()
}

/// A row key of the batch: `batch-NN` and a 0xFF byte.
fn batch_row(i: u64) -> Vec<u8> {
    let mut row = format!("batch-{i:02}").into_bytes();
    row.push(0xff);
    row
}

fn writes() -> Vec<Op> {
    let mut ops = Vec::new();
    // Binary rows and qualifiers, empty qualifier and value, server and explicit timestamps.
    for (i, row) in binary_rows().iter().enumerate() {
        let i = i as u64;
        ops.push(put(
            row,
            None,
            &[
                (F1, b"", Some(100 + i), lit(b"")),
                (F1, &[0x00, 0xff], Some(100 + i), lit(format!("v{i}"))),
                (F1, &[0xff], Some(200 + i), Val::Fill(100, i)),
                (F2, b"q", None, lit(format!("server-time-{i}"))),
            ],
        ));
    }
    // The put's own timestamp, and a cell that overrides it.
    ops.push(put(
        "row-put-ts",
        Some(500),
        &[(F1, b"q", None, lit("v")), (F2, b"q", Some(600), lit("w"))],
    ));
    // Seven versions in a 5-version family, two in a 1-version family.
    for ts in (100..=700).step_by(100) {
        ops.push(put(
            "row-versions",
            None,
            &[
                (F1, b"v", Some(ts), lit(format!("v{ts}"))),
                (F2, b"v", Some(ts), lit(format!("w{ts}"))),
            ],
        ));
    }
    ops.push(put(
        "row-versions",
        None,
        &[
            (F1, b"w", Some(300), lit("w300")),
            (F1, b"w", Some(500), lit("w500")),
        ],
    ));
    // Values from 0 bytes to 5 MiB.
    ops.push(put(
        "row-big",
        Some(1000),
        &[
            (F1, b"0", None, lit(b"")),
            (F1, b"1", None, lit(b"!")),
            (F1, b"100", None, Val::Fill(100, 1)),
            (F1, b"64k", None, Val::Fill(65_536, 2)),
            (F2, b"1m", None, Val::Fill(1 << 20, 3)),
            (F1, b"5m", None, Val::Fill(5 << 20, 4)),
        ],
    ));
    // Every delete kind, single calls.
    let del = b("row-del");
    let mut cells = Vec::new();
    for q in [&b"a"[..], b"b", b"c", b"d"] {
        for ts in [100, 200, 300] {
            cells.push((F1, q, Some(ts), lit(format!("{}{ts}", q[0] as char))));
        }
    }
    for q in [&b"a"[..], b"b"] {
        for ts in [100, 200] {
            cells.push((F2, q, Some(ts), lit(format!("f2{}{ts}", q[0] as char))));
        }
    }
    ops.push(put(&del, None, &cells));
    ops.push(Op::DeleteColumn(del.clone(), b(F1), b("a"), Some(200)));
    ops.push(Op::DeleteColumn(del.clone(), b(F1), b("b"), None));
    ops.push(Op::DeleteColumns(del.clone(), b(F1), b("c"), Some(200)));
    ops.push(Op::DeleteFamilyVersion(del.clone(), b(F1), 300));
    ops.push(Op::DeleteFamily(del.clone(), b(F2), Some(100)));
    ops.push(put(&del, None, &[(F2, b"c", Some(50), lit("old"))]));
    ops.push(Op::DeleteColumns(del.clone(), b(F1), b("d"), None));
    // One delete of columns, then of their whole family: Java's addFamily drops the family's
    // earlier targets, so the versions at 300 (newer than the family marker's 200) stay; the
    // other family's targets stay. A single call goes as a protobuf, which the server turns
    // into a Java Delete with addFamily (so dropping those targets there too); batches and
    // buffered mutators send cell blocks, whose markers the server applies as they come.
    ops.extend(delete_many_case("row-del-many"));
    // Wide rows, for batches and pieces of rows: more cells than a batch, in three families,
    // several versions, a row of exactly two batches of 3; and deletes of each kind in them,
    // for raw scans.
    let wide = |i: u8| b(format!("wide-{i}"));
    let mut cells = Vec::new();
    let quals: Vec<Vec<u8>> = (0..12).map(|i| format!("q{i:02}").into_bytes()).collect();
    for (i, q) in quals.iter().enumerate() {
        cells.push((F1, &q[..], Some(200), Val::Fill(40 + i * 30, i as u64)));
        if i < 4 {
            cells.push((F1, &q[..], Some(100), lit(format!("old{i}"))));
        }
    }
    for (q, ts) in [(&b"a"[..], 100), (b"b", 100), (b"c", 200)] {
        cells.push((F2, q, Some(ts), lit(format!("f2{}", q[0] as char))));
    }
    cells.push((C, b"x", Some(100), lit("cx")));
    cells.push((C, b"y", Some(100), lit("cy")));
    ops.push(put(wide(1), None, &cells));
    ops.push(Op::DeleteColumn(wide(1), b(F1), b("q01"), Some(200)));
    ops.push(Op::DeleteColumn(wide(1), b(F1), b("q03"), None));
    ops.push(Op::DeleteColumns(wide(1), b(F1), b("q02"), None));
    ops.push(Op::DeleteFamilyVersion(wide(1), b(F2), 100));
    ops.push(Op::DeleteFamily(wide(1), b(C), Some(100)));
    let six: Vec<CellSpec> = quals[..6]
        .iter()
        .map(|q| (F1, &q[..], Some(300), lit(q)))
        .collect();
    ops.push(put(wide(2), None, &six));
    let mut seven: Vec<CellSpec> = quals[..7]
        .iter()
        .map(|q| (F1, &q[..], Some(300), Val::Fill(1000, 7)))
        .collect();
    seven.push((F2, b"z", Some(300), lit("z")));
    ops.push(put(wide(3), None, &seven));
    // Whole rows: up to a timestamp, and at the server's time (an older put stays hidden).
    ops.push(put(
        "row-gone-ts",
        None,
        &[
            (F1, b"q", Some(100), lit("100")),
            (F1, b"q", Some(300), lit("300")),
            (F2, b"q", Some(150), lit("150")),
        ],
    ));
    ops.push(Op::DeleteRow(b("row-gone-ts"), Some(200)));
    ops.push(put(
        "row-gone",
        None,
        &[(F1, b"q", Some(100), lit("x")), (F2, b"q", None, lit("y"))],
    ));
    ops.push(Op::DeleteRow(b("row-gone"), None));
    ops.push(put(
        "row-gone",
        None,
        &[(F1, b"q", Some(50), lit("hidden"))],
    ));
    ops.push(Op::DeleteFamily(b("row-big"), b(F2), Some(999)));
    // Counters (8-byte big-endian) and appends.
    for (q, n) in [
        (&b"n"[..], 5i64),
        (b"n", -2),
        (b"m", 1_000_000_000_000),
        (&[0x00], -1),
        (b"n", 40),
    ] {
        ops.push(Op::Increment(b("row-counter"), b(C), b(q), n));
    }
    for v in [lit("ab"), lit(""), lit("cd"), Val::Fill(70, 9)] {
        ops.push(Op::Append(b("row-counter"), b(C), b("s"), v));
    }
    // Check-and-mutate (HBase's operand order: the given value OP the current one).
    let cas = b("row-cas");
    let state = |c: Check| (b(F2), b("state"), c);
    ops.push(Op::CheckPut {
        row: cas.clone(),
        check: state(Check::Absent),
        put: (b(F2), b("state"), lit("draft")),
    });
    ops.push(Op::CheckPut {
        row: cas.clone(),
        check: state(Check::Absent),
        put: (b(F2), b("state"), lit("again")),
    });
    ops.push(Op::CheckPut {
        row: cas.clone(),
        check: state(Check::Matches(CompareOp::Equal, b("draft"))),
        put: (b(F2), b("state"), lit("published")),
    });
    ops.push(Op::CheckPut {
        row: cas.clone(),
        check: state(Check::Matches(CompareOp::Equal, b("draft"))),
        put: (b(F2), b("state"), lit("lost")),
    });
    ops.push(Op::CheckPut {
        row: cas.clone(),
        check: state(Check::Matches(CompareOp::Less, b("a"))),
        put: (b(F1), b("other"), lit("less")),
    });
    ops.push(Op::CheckPut {
        row: cas.clone(),
        check: state(Check::Matches(CompareOp::Greater, b("a"))),
        put: (b(F1), b("other2"), lit("greater")),
    });
    ops.push(Op::CheckDelete {
        row: cas.clone(),
        check: state(Check::Matches(CompareOp::NotEqual, b("published"))),
        delete: (b(F1), b("other")),
    });
    ops.push(Op::CheckDelete {
        row: cas.clone(),
        check: (
            b(F1),
            b("other2"),
            Check::Matches(CompareOp::Equal, b("greater")),
        ),
        delete: (b(F1), b("other2")),
    });
    // A batch (cell blocks on our side): puts of new rows, deletes of every kind on older ones.
    let mut batch = Vec::new();
    for i in 0..12u64 {
        batch.push(put(
            batch_row(i),
            Some(10 + i),
            &[
                (F1, b"b", None, lit(format!("b{i}"))),
                (F2, &[i as u8], Some(20 + i), Val::Fill(i as usize * 100, i)),
            ],
        ));
    }
    batch.push(Op::DeleteColumn(
        b("row-versions"),
        b(F1),
        b("v"),
        Some(500),
    ));
    batch.push(Op::DeleteColumns(
        b("row-versions"),
        b(F1),
        b("w"),
        Some(400),
    ));
    batch.push(Op::DeleteFamilyVersion(b([0x00, 0x00]), b(F1), 101));
    batch.push(Op::DeleteFamily(b([0xff]), b(F2), None));
    batch.push(Op::DeleteRow(b([0xfe, 0xff]), Some(150)));
    batch.push(Op::DeleteColumn(b("a"), b(F1), b([0x00, 0xff]), None));
    ops.push(Op::Batch(batch));
    ops.push(Op::Batch(delete_many_case("batch-del-many")));
    // The buffered mutator: the same mix again, on other rows.
    let mut buffered = Vec::new();
    for i in 0..20u64 {
        buffered.push(put(
            format!("mutator-{i:02}"),
            None,
            &[
                (F1, b"m", Some(1 + i), lit(format!("m{i}"))),
                (F2, b"n", Some(7), lit("")),
            ],
        ));
    }
    buffered.push(Op::DeleteColumns(b(batch_row(3)), b(F1), b("b"), None));
    buffered.push(Op::DeleteFamilyVersion(b("row-versions"), b(F1), 700));
    buffered.push(Op::DeleteRow(b("a\x00b"), None));
    buffered.push(Op::DeleteFamily(b([0xff, 0xff, 0xff]), b(F1), Some(205)));
    ops.push(Op::Mutator(buffered));
    ops.push(Op::Mutator(delete_many_case("mutator-del-many")));
    ops
}

/// A row's put and one delete of it: targets of two families, among them a column's newer
/// version and a family version, then the whole of one family (see where `writes` uses it).
fn delete_many_case(row: &str) -> Vec<Op> {
    let mut cells = Vec::new();
    for q in [&b"a"[..], b"b"] {
        for ts in [100, 200, 300] {
            cells.push((F1, q, Some(ts), lit(format!("{}{ts}", q[0] as char))));
        }
    }
    cells.push((F2, b"a", Some(100), lit("f2a")));
    cells.push((F2, b"b", Some(100), lit("f2b")));
    let delete = Op::DeleteMany(
        b(row),
        Some(200),
        vec![
            Target::Column(b(F1), b("a"), Some(300)),
            Target::Columns(b(F2), b("a")),
            Target::FamilyVersion(b(F1), 300),
            Target::Columns(b(F1), b("b")),
            Target::Family(b(F1)),
            Target::Column(b(F2), b("b"), Some(100)),
        ],
    );
    vec![put(row, None, &cells), delete]
}

fn scan(opts: Vec<Opt>) -> Query {
    Query { get: None, opts }
}

fn get(row: impl AsRef<[u8]>, opts: Vec<Opt>) -> Query {
    Query {
        get: Some(b(row)),
        opts,
    }
}

fn queries() -> Vec<Query> {
    use Opt::*;
    let bin = |v: &[u8]| Comparator::Binary(b(v));
    let mut q = vec![
        scan(vec![Versions(10)]),
        scan(vec![]),
        scan(vec![Reversed, Versions(10)]),
        scan(vec![Start(b([0x00, 0xff])), Stop(b([0xfe]))]),
        scan(vec![
            Reversed,
            Start(b([0xfe, 0xff])),
            Stop(b([0x00, 0x00])),
        ]),
        scan(vec![Stop(b([0xff])), StopInclusive, Versions(3)]),
        scan(vec![Family(b(F2)), Versions(10)]),
        scan(vec![
            Column(b(F1), b("v")),
            Column(b(F1), b([0xff])),
            Versions(10),
        ]),
        scan(vec![TimeRange(150, 450), Versions(10)]),
        scan(vec![Limit(4)]),
        scan(vec![Reversed, Limit(3), Versions(2)]),
        scan(vec![Caching(1), MaxSize(1), Versions(10)]),
        scan(vec![Caching(3), MaxSize(100_000)]),
        scan(vec![Where(Filter::Prefix(b("row-")))]),
        scan(vec![Where(Filter::ColumnPrefix(b("v"))), Versions(10)]),
        scan(vec![
            Where(Filter::ColumnRange {
                min: Some(b("a")),
                min_inclusive: true,
                max: Some(b("c")),
                max_inclusive: false,
            }),
            Versions(10),
        ]),
        scan(vec![Where(Filter::ColumnRange {
            min: None,
            min_inclusive: false,
            max: Some(b("1m")),
            max_inclusive: true,
        })]),
        scan(vec![Where(Filter::Row(
            CompareOp::GreaterOrEqual,
            bin(b"m"),
        ))]),
        scan(vec![
            Where(Filter::Qualifier(CompareOp::Equal, bin(b""))),
            Versions(10),
        ]),
        scan(vec![Where(Filter::Value(
            CompareOp::Equal,
            Comparator::Substring("SERVER".into()),
        ))]),
        scan(vec![
            Where(Filter::Value(
                CompareOp::NotEqual,
                Comparator::BinaryPrefix(b("v")),
            )),
            Family(b(F1)),
        ]),
        scan(vec![
            Where(Filter::Value(
                CompareOp::Equal,
                Comparator::Regex("^[vw][0-9]+00$".into()),
            )),
            Versions(10),
        ]),
        scan(vec![Where(Filter::SingleColumnValue {
            family: b(F2),
            qualifier: b("state"),
            op: CompareOp::Equal,
            comparator: bin(b"published"),
            filter_if_missing: true,
            latest_version_only: true,
        })]),
        scan(vec![
            Where(Filter::SingleColumnValue {
                family: b(F1),
                qualifier: b("v"),
                op: CompareOp::Less,
                comparator: bin(b"v400"),
                filter_if_missing: false,
                latest_version_only: false,
            }),
            Versions(10),
        ]),
        scan(vec![Where(Filter::KeyOnly(true))]),
        scan(vec![Where(Filter::KeyOnly(false)), Versions(2)]),
        scan(vec![Where(Filter::FirstKeyOnly)]),
        scan(vec![Where(Filter::Page(2))]),
        scan(vec![
            Where(Filter::All(vec![
                Filter::Prefix(b("row-")),
                Filter::Value(CompareOp::Greater, bin(b"v2")),
            ])),
            Versions(10),
        ]),
        scan(vec![Where(Filter::Any(vec![
            Filter::Row(CompareOp::Equal, bin(&[0x00])),
            Filter::Row(CompareOp::Equal, bin(&[0xff])),
            Filter::Qualifier(CompareOp::Equal, bin(b"5m")),
        ]))]),
        // Batches, pieces of rows, raw scans, and the options that change no result.
        scan(vec![Batch(3), Versions(10)]),
        scan(vec![Batch(3)]),
        scan(vec![Batch(3), Reversed, Versions(2)]),
        scan(vec![Batch(3), Limit(3), Start(b("wide-"))]),
        scan(vec![Batch(5), Caching(1), MaxSize(1), Versions(10)]),
        scan(vec![
            Batch(4),
            Family(b(F1)),
            Where(Filter::ColumnPrefix(b("q0"))),
        ]),
        scan(vec![
            Batch(2),
            Column(b(F1), b("q00")),
            Column(b(F2), b("c")),
            Versions(10),
        ]),
        scan(vec![AllowPartial, MaxSize(1), Caching(2), Versions(10)]),
        scan(vec![AllowPartial, MaxSize(1), Limit(3), Start(b("wide-"))]),
        scan(vec![AllowPartial, MaxSize(100_000)]),
        scan(vec![AllowPartial, MaxSize(300), Reversed]),
        scan(vec![AllowPartial, Batch(4), MaxSize(300), Versions(10)]),
        scan(vec![AllowPartial, Batch(4)]),
        scan(vec![Raw]),
        scan(vec![Raw, Versions(10)]),
        scan(vec![
            Raw,
            Versions(10),
            Reversed,
            Start(b("wide-9")),
            Stop(b("row-")),
        ]),
        scan(vec![
            Raw,
            Versions(10),
            Batch(3),
            Start(b("row-del")),
            Stop(b("wide-9")),
        ]),
        scan(vec![Raw, Versions(10), TimeRange(100, 201), Family(b(F1))]),
        scan(vec![
            Raw,
            Versions(2),
            Where(Filter::Qualifier(CompareOp::Equal, bin(b"q02"))),
        ]),
        scan(vec![Read(ReadType::Stream), Versions(10)]),
        scan(vec![Read(ReadType::Pread), Caching(2)]),
        scan(vec![Timeline, Start(b("row-")), Stop(b("wide-9"))]),
        scan(vec![NoCacheBlocks, Versions(3)]),
        get(b"row-versions", vec![Timeline, Versions(10)]),
        get(b"row-missing", vec![]),
        get(b"row-big", vec![Column(b(F1), b("5m"))]),
        get(
            b"row-versions",
            vec![Column(b(F1), b("v")), Versions(3), TimeRange(200, 600)],
        ),
        get(
            b"row-versions",
            vec![
                Versions(10),
                Where(Filter::Value(CompareOp::Greater, bin(b"v300"))),
            ],
        ),
        get(b"row-del", vec![Family(b(F1)), Versions(10)]),
        get(b"row-cas", vec![Where(Filter::KeyOnly(false))]),
        get(b"row-gone", vec![Versions(10)]),
    ];
    for row in binary_rows().into_iter().chain(
        [
            "row-put-ts",
            "row-versions",
            "row-big",
            "row-del",
            "row-gone-ts",
            "row-counter",
            "row-cas",
        ]
        .map(b),
    ) {
        q.push(get(row, vec![Versions(10)]));
    }
    q
}

// ---------------------------------------------------------------------------------------------
// The comparison

/// The dump with server-assigned timestamps (anything after 2001) replaced by `T`: what two
/// tables written at different times have in common.
fn masked(dump: &[String]) -> Vec<String> {
    dump.iter()
        .map(|l| {
            let mut parts: Vec<&str> = l.split(' ').collect();
            if l.starts_with(" cell ") {
                if let Ok(ts) = parts[4].parse::<u64>() {
                    if ts >= 1_000_000_000_000 {
                        parts[4] = "T";
                    }
                }
            }
            parts.join(" ")
        })
        .collect()
}

/// Asserts `ours == theirs` line by line, showing the first difference with its query.
fn assert_same(what: &str, ours: &[String], theirs: &[String]) {
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        if a != b {
            let query = ours[..=i]
                .iter()
                .rev()
                .find(|l| l.starts_with("# "))
                .cloned()
                .unwrap_or_default();
            panic!("{what}: first difference at line {}\n  query: {query}\n  ours:   {a}\n  theirs: {b}", i + 1);
        }
    }
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{what}: {} lines against {}",
        ours.len(),
        theirs.len()
    );
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .map(String::from)
        .collect()
}

async fn create(client: &Client, name: &TableName) {
    let desc = TableDescriptor::new(name.clone())
        .family(ColumnFamily::new(F1).max_versions(5))
        .family(ColumnFamily::new(F2))
        .family(ColumnFamily::new(C));
    client
        .admin()
        .create_table(&desc, &split_keys())
        .await
        .unwrap();
}

/// Moves the table's regions round-robin over the live servers; returns how many hold some.
async fn spread(client: &Client, name: &TableName) -> usize {
    let admin = client.admin();
    let servers = admin.region_servers().await.unwrap();
    for (i, r) in admin.list_regions(name).await.unwrap().iter().enumerate() {
        let dest = &servers[i % servers.len()];
        if r.server.as_ref() != Some(dest) {
            admin.move_region(&r.region, Some(dest)).await.unwrap();
        }
    }
    let hosts: std::collections::HashSet<_> = admin
        .list_regions(name)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|r| r.server)
        .collect();
    hosts.len()
}

/// The directory of a scenario's files (specs, dumps), made if missing.
fn files_dir(name: &str) -> PathBuf {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "target", "interop", name]
        .iter()
        .collect();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A new table of one row (`r`, `cf:q` = `v`): its name, its name's qualifier, and a
/// directory for the scenario's files named after it.
async fn one_row_table(client: &Client, prefix: &str) -> (TableName, String, PathBuf) {
    let name = hbase_it::unique_table(prefix);
    hbase_it::create_table(client, &name, &[]).await;
    client
        .table(&name.to_string())
        .unwrap()
        .put(Put::new("r").add("cf", "q", "v"))
        .await
        .unwrap();
    let base = String::from_utf8_lossy(name.qualifier()).into_owned();
    let dir = files_dir(&base);
    (name, base, dir)
}

/// A snapshot goes the master's way Java's client sends it: the Java client
/// (`Admin.snapshot`) and ours each snapshot one table, and each adds a snapshot procedure that
/// succeeded, or neither adds any (a master before 2.6, which has none, or a Java client that
/// sends no nonce).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_takes_the_masters_path_javas_takes() {
    tokio::time::timeout(Duration::from_secs(300), async {
        let client = hbase_it::client().await;
        let admin = client.admin().with_timeout(Duration::from_secs(120));
        let (name, base, dir) = one_row_table(&client, "interop_snap").await;
        let (java_snap, rust_snap) = (format!("{base}_java"), format!("{base}_rust"));
        let spec_path = dir.join("snapshot-spec.txt");
        std::fs::write(&spec_path, format!("table {name}\nsnapshot {java_snap}\n")).unwrap();

        let before = hbase_it::snapshot_procedures(&admin).await;
        tokio::task::spawn_blocking(move || hbase_it::run_java_interop(&spec_path))
            .await
            .unwrap();
        let after_java = hbase_it::snapshot_procedures(&admin).await;
        admin.snapshot(&rust_snap, &name).await.unwrap();
        let after_rust = hbase_it::snapshot_procedures(&admin).await;
        let states = |added: Vec<hbase_client::admin::ProcedureInfo>| {
            added.into_iter().map(|p| p.state).collect::<Vec<_>>()
        };
        let by_java = states(hbase_it::procedures_added(&before, after_java.clone()));
        let by_rust = states(hbase_it::procedures_added(&after_java, after_rust));
        assert_eq!(
            by_java.contains(&ProcedureState::Success),
            by_rust.contains(&ProcedureState::Success),
            "snapshot procedures added by Java's snapshot {by_java:?}, by ours {by_rust:?}"
        );
        let listed: Vec<String> = admin
            .list_snapshots()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        for snap in [&java_snap, &rust_snap] {
            assert!(listed.contains(snap), "{snap} not in {listed:?}");
            admin.delete_snapshot(snap).await.unwrap();
        }
        hbase_it::drop_table(&client, &name).await;
        eprintln!(
            "interop: a snapshot adds a succeeded SnapshotProcedure: Java {}, ours {}",
            by_java.contains(&ProcedureState::Success),
            by_rust.contains(&ProcedureState::Success)
        );
    })
    .await
    .expect("the snapshot scenario did not finish within 300 s");
}

/// The fields of a protobuf `Scan` (`Get`) that the query options above set, as
/// `field=value` (bytes in the spec form), in message order.
fn option_fields(msg: &[u8], get: bool) -> Vec<String> {
    // Scan: column, attribute (raw), filter, time range, versions, cache blocks, batch,
    // reversed, consistency, partial results, read type. Get: column, attribute, filter, time
    // range, versions, cache blocks, consistency. Rows, caching and result size are left out:
    // both clients set them per request (the region's start, the configuration's defaults).
    let wanted: &[u32] = if get {
        &[2, 3, 4, 5, 6, 7, 12]
    } else {
        &[1, 2, 5, 6, 7, 8, 9, 15, 16, 18, 23]
    };
    hbase_it::proxy::proto_fields(msg)
        .expect("a protobuf message")
        .into_iter()
        .filter(|(f, _)| wanted.contains(f))
        .map(|(f, v)| match v {
            hbase_it::proxy::Field::Varint(n) => format!("{f}={n}"),
            hbase_it::proxy::Field::Bytes(b) => format!("{f}={}", x(b)),
            hbase_it::proxy::Field::Fixed => format!("{f}=fixed"),
        })
        .collect()
}

/// Java's option fields as we write the same options. The differences, deliberate, are fields
/// at their proto default, which a server reads as if absent (it checks `has…()` and keeps
/// its own default, the same value): Java always writes a Scan's time range (all time when
/// none is set: field 6 = from 0 to i64::MAX) and versions (7, 1 when not set), which we leave
/// out at their defaults; we always write a Scan's `reversed` (15) and
/// `allow_partial_results` (18), false included, which Java leaves out unless true. A Get:
/// Java always writes its time range (5), versions (6) and cache blocks (7, true), which we
/// leave out at their defaults.
fn as_we_write(mut fields: Vec<String>, get: bool) -> Vec<String> {
    let all_time = x(b"\x08\x00\x10\xff\xff\xff\xff\xff\xff\xff\xff\x7f");
    if get {
        fields.retain(|f| *f != format!("5={all_time}") && f != "6=1" && f != "7=1");
        return fields;
    }
    fields.retain(|f| *f != format!("6={all_time}") && f != "7=1");
    for explicit in ["15=0", "18=0"] {
        let n = explicit.split('=').next().unwrap();
        if !fields.iter().any(|f| f.split('=').next() == Some(n)) {
            fields.push(explicit.to_string());
        }
    }
    // Both write fields in field-number order.
    fields.sort_by_key(|f| f.split('=').next().unwrap().parse::<u32>().unwrap());
    fields
}

/// The message in field 2 of a GetRequest or a ScanRequest (the Get, or an opening Scan).
fn request_message(param: &[u8]) -> Option<Vec<u8>> {
    hbase_it::proxy::proto_fields(param)?
        .into_iter()
        .find_map(|(f, v)| match (f, v) {
            (2, hbase_it::proxy::Field::Bytes(m)) => Some(m.to_vec()),
            _ => None,
        })
}

fn wire_queries() -> Vec<Query> {
    use Opt::*;
    vec![
        scan(vec![]),
        scan(vec![Timeline]),
        scan(vec![Read(ReadType::Stream)]),
        scan(vec![Read(ReadType::Pread)]),
        scan(vec![Raw]),
        scan(vec![Raw, Versions(3)]),
        scan(vec![Batch(3)]),
        scan(vec![AllowPartial]),
        scan(vec![Batch(3), AllowPartial]),
        scan(vec![NoCacheBlocks]),
        scan(vec![Metrics]),
        scan(vec![Raw, Metrics]),
        scan(vec![
            Reversed,
            Versions(2),
            TimeRange(1, 1000),
            Column(b("cf"), b("q")),
            Where(Filter::KeyOnly(true)),
        ]),
        scan(vec![
            Raw,
            Versions(4),
            Batch(2),
            AllowPartial,
            Read(ReadType::Pread),
            Timeline,
            NoCacheBlocks,
        ]),
        get(b"r", vec![]),
        get(b"r", vec![Timeline]),
        get(
            b"r",
            vec![
                Versions(3),
                TimeRange(1, 1000),
                Family(b("cf")),
                Where(Filter::KeyOnly(false)),
                Timeline,
            ],
        ),
    ]
}

/// The scan and get options go on the wire as the Java client writes them: each query's `Scan`
/// (`Get`) message, recorded by a proxy in front of the region servers, against the one the
/// Java client's `ProtobufUtil.toScan` (`toGet`) makes of the same options (tests/scan_options.rs
/// checks some of these fields by number; this runs Java).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_and_get_options_go_on_the_wire_as_javas() {
    tokio::time::timeout(Duration::from_secs(300), async {
        let client = hbase_it::client().await;
        let (name, _, dir) = one_row_table(&client, "interop_wire").await;
        let queries = wire_queries();
        let mut spec = vec![
            format!("table {name}"),
            format!("dump {}", dir.join("java-protos.txt").display()),
        ];
        for q in &queries {
            let line = q.spec_line();
            let (kind, rest) = line.split_once(' ').unwrap_or((&line, ""));
            spec.push(format!("{kind}-proto {rest}").trim_end().to_string());
        }
        spec.push("end".into());
        let spec_path = dir.join("wire-spec.txt");
        std::fs::write(&spec_path, spec.join("\n") + "\n").unwrap();
        tokio::task::spawn_blocking(move || hbase_it::run_java_interop(&spec_path))
            .await
            .unwrap();
        let java: Vec<String> = read_lines(&dir.join("java-protos.txt"))
            .into_iter()
            .filter_map(|l| l.strip_prefix("proto ").map(String::from))
            .collect();
        assert_eq!(java.len(), queries.len(), "one message per query from Java");

        let proxy = hbase_it::proxy::FaultProxy::new();
        let proxied = hbase_it::proxied_client(&proxy, |b| b).await;
        let table = proxied.table(&name.to_string()).unwrap();
        // Warm the location cache, so the recorded calls are the table's.
        assert!(table.get(Get::new("r")).await.unwrap().is_some());
        for (q, java_hex) in queries.iter().zip(&java) {
            let method = if q.get.is_some() { "Get" } else { "Scan" };
            proxy.each(|c| c.record(move |r| r.method == method));
            match &q.get {
                Some(row) => {
                    table.get(q.to_get(row)).await.unwrap();
                }
                None => {
                    table.scan(q.to_scan()).collect_all().await.unwrap();
                }
            }
            let ours = proxy
                .controls()
                .iter()
                .flat_map(|c| c.recorded())
                .find_map(|r| request_message(&r.param))
                .unwrap_or_else(|| panic!("no {method} request recorded: {}", q.spec_line()));
            let java_msg: Vec<u8> = (0..java_hex.len() / 2)
                .map(|i| u8::from_str_radix(&java_hex[1 + 2 * i..3 + 2 * i], 16).unwrap())
                .collect();
            let java_fields = option_fields(&java_msg, q.get.is_some());
            assert_eq!(
                option_fields(&ours, q.get.is_some()),
                as_we_write(java_fields.clone(), q.get.is_some()),
                "{}: our message's fields (left) against Java's {java_fields:?} as we write \
                 them (right)",
                q.spec_line()
            );
        }
        hbase_it::drop_table(&client, &name).await;
        eprintln!(
            "interop: {} queries' Scan and Get messages have Java's option fields",
            queries.len()
        );
    })
    .await
    .expect("the wire scenario did not finish within 300 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_and_rust_read_and_write_the_same_cells() {
    tokio::time::timeout(Duration::from_secs(420), interop())
        .await
        .expect("the interop scenario did not finish within 420 s");
}

async fn interop() {
    let client = hbase_it::client().await;
    let admin = client.admin().with_timeout(Duration::from_secs(120));
    let balancer = hbase_it::balancer_off(&admin).await;
    let ns = hbase_it::unique_name("interop");
    admin.create_namespace(&ns).await.unwrap();
    let java_table = TableName::parse(&format!("{ns}:java")).unwrap();
    let rust_table = TableName::parse(&format!("{ns}:rust")).unwrap();
    for name in [&java_table, &rust_table] {
        create(&client, name).await;
        assert_eq!(admin.list_regions(name).await.unwrap().len(), 6);
        let hosts = spread(&client, name).await;
        assert!(hosts >= 3, "{name}: regions on {hosts} servers, not 3");
    }

    let dir = files_dir(&ns);
    let file = |n: &str| dir.join(n);

    // We write our table.
    let ops = writes();
    let rust_side = client.table(&rust_table.to_string()).unwrap();
    let mut rust_log = Vec::new();
    for op in &ops {
        op.apply(&client, &rust_side, &mut rust_log).await;
    }

    // Java writes its table, then reads both.
    let queries = queries();
    let mut spec = vec![
        format!("# written by tests/interop.rs for namespace {ns}"),
        format!("table {java_table}"),
        format!("log {}", file("java-log.txt").display()),
    ];
    spec.extend(ops.iter().flat_map(Op::spec_lines));
    for (name, out) in [
        (&java_table, "java-reads-java.txt"),
        (&rust_table, "java-reads-rust.txt"),
    ] {
        spec.push(format!("table {name}"));
        spec.push(format!("dump {}", file(out).display()));
        spec.extend(queries.iter().map(Query::spec_line));
        spec.push("end".into());
    }
    std::fs::write(file("spec.txt"), spec.join("\n") + "\n").unwrap();
    let spec_path = file("spec.txt");
    tokio::task::spawn_blocking(move || hbase_it::run_java_interop(&spec_path))
        .await
        .unwrap();

    // We read both.
    let java_side = client.table(&java_table.to_string()).unwrap();
    let (mut ours_on_java, mut ours_on_rust) = (Vec::new(), Vec::new());
    for q in &queries {
        q.dump(&java_side, &mut ours_on_java).await;
        q.dump(&rust_side, &mut ours_on_rust).await;
    }
    std::fs::write(file("rust-reads-java.txt"), ours_on_java.join("\n") + "\n").unwrap();
    std::fs::write(file("rust-reads-rust.txt"), ours_on_rust.join("\n") + "\n").unwrap();
    let java_on_java = read_lines(&file("java-reads-java.txt"));
    let java_on_rust = read_lines(&file("java-reads-rust.txt"));
    let java_log = read_lines(&file("java-log.txt"));

    let cells = |d: &[String]| d.iter().filter(|l| l.starts_with(" cell ")).count();
    eprintln!(
        "interop: {} queries; cells compared: {} on the table Java wrote, {} on the table we wrote; {} write outcomes (files in {})",
        queries.len(),
        cells(&java_on_java),
        cells(&java_on_rust),
        java_log.len(),
        dir.display()
    );
    // The data set really has what it claims: big values, binary keys, several versions.
    let all = java_on_java.join("\n") + "\n";
    for needle in [
        format!("len={},md5=", 5 << 20),
        format!("len={},md5=", 1 << 20),
        "\nrow x00\n".to_string(),
        "\nrow xffffff\n".to_string(),
        "\n cell x6631 x 100 Put x\n".to_string(),
    ] {
        assert!(all.contains(&needle), "{needle:?} is not in Java's dump");
    }
    // Delete markers only in raw scans, and each kind of marker in those.
    let (mut raw, mut cooked) = (String::new(), String::new());
    let mut in_raw = false;
    for l in &java_on_java {
        if let Some(q) = l.strip_prefix("# ") {
            in_raw = q.split(' ').any(|t| t == "raw");
        }
        let to = if in_raw { &mut raw } else { &mut cooked };
        to.push_str(l);
        to.push('\n');
    }
    assert!(
        !cooked.contains(" Delete"),
        "a read returned a delete marker"
    );
    for kind in [
        "Delete",
        "DeleteColumn",
        "DeleteFamily",
        "DeleteFamilyVersion",
    ] {
        assert!(
            raw.contains(&format!(" {kind} ")),
            "no {kind} marker in a raw scan"
        );
    }
    // Rows in pieces: batches and allowpartial cut rows, and the pieces are marked.
    assert!(all.contains(" more\n"), "no scan returned a piece of a row");
    assert!(
        cells(&java_on_java) > 300,
        "only {} cells",
        cells(&java_on_java)
    );

    assert_same(
        "our reads of the table Java wrote",
        &ours_on_java,
        &java_on_java,
    );
    assert_same(
        "Java's reads of the table we wrote",
        &java_on_rust,
        &ours_on_rust,
    );
    assert_same(
        "the table we wrote against the table Java wrote (both read by Java, server timestamps masked)",
        &masked(&java_on_rust),
        &masked(&java_on_java),
    );
    assert_same(
        "write outcomes (increments, appends, checks)",
        &rust_log,
        &java_log,
    );

    for name in [&java_table, &rust_table] {
        hbase_it::drop_table(&client, name).await;
    }
    admin.delete_namespace(&ns).await.unwrap();
    balancer.release().await;
}
