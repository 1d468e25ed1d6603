//! The floor for a pipelined reader's CPU per read: what the cheapest possible client pays to
//! keep the same number of gets in flight against the same HBase as `ycsb run` workload C.
//!
//! `benches/floor/run` runs it beside `ycsb` through `benches/pair/run`, which is why it takes
//! the part of `ycsb run`'s command line that pair/run gives it (`--zk`, `-p table=…`,
//! `-p columnfamily=…`, `-p maxexecutiontime=…`, `-threads N`; other options are ignored) and
//! prints the two lines of a YCSB report pair/run reads (`[OVERALL], Throughput(ops/sec)` and
//! `[READ], Operations`).
//!
//! What it does, and what it leaves out on purpose:
//! - Start-up (not the floor, but counted in the process's CPU as `ycsb`'s is; it prints its
//!   own CPU on stderr): `FLOOR_KEYS` (default 100,000) row keys drawn with `ycsb`'s own
//!   workload C key chooser (scrambled zipfian over `[0, recordcount]`, a draw past the last
//!   record drawn again, hashed key names), so that the server reads what it reads for `ycsb`;
//!   the client library lists the table's regions to place each key. Every get is then encoded
//!   once, whole, by our client's own request encoder (the header with `ycsb`'s 60 s timeout,
//!   the GetRequest for the row and the family, as `ycsb`'s reads send), with its own call id.
//!   The loop sends them in the order
//!   drawn and starts over at the end (a 20 s run at 30,000 reads a second goes round about 6
//!   times: fewer distinct rows than `ycsb` reads, with the same popularity).
//! - The measured loop: one thread, one non-blocking connection per region server (the
//!   connection's hello is our client's own, so answers carry KeyValue cell blocks as they do
//!   for `ycsb`), `epoll` through `mio`. It keeps `-threads` gets outstanding: each answer
//!   draws the next get, and all the gets a wakeup makes leave in one write per connection. At
//!   most `FLOOR_MAX_IN_FLIGHT_PER_SERVER` (default 64, our client's default cap) are on one
//!   server's wire; the rest wait in order for a place, as in our client. Per answer it does
//!   the least a correct client must: find the frame's end and read its response header (the
//!   call id, whether it is an exception, and the cell block's length; an exception or a get
//!   without cells stops the run with an error). It never decodes a cell, takes no clock per
//!   call, keeps no timer, spawns no task, and allocates nothing once its buffers have grown
//!   to the load.
//! - `FLOOR_SLEEP_US=N` sleeps N µs before every wait, the floor of `ycsb`'s
//!   `-p wakeupcoalescing.us=N`.
//! - With more outstanding gets than `FLOOR_KEYS`, one encoded get (one call id) can be in
//!   flight twice; answers are counted, not matched to calls, so that is harmless.
//!
//! Anything a real client adds on top of this (request encoding, timeouts, region lookup,
//! tasks and wakers, cell decoding, and `ycsb`'s own keys, measurements and values) is what a
//! comparison with it shows as the client's own cost; the kernel's work for the sends, the
//! receives and the wakeups the server's answers cause is in both.

use std::collections::{HashMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use hbase_client::rpc::frame::{
    connection_preamble, encode_request, RequestMeta, Service, MAX_FRAME_LEN,
};
use hbase_client::{ClientConfig, TableName};
use hbase_proto::pb;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use prost::Message;
use rand::SeedableRng;
use ycsb::generator::{ScrambledZipfian, ZIPFIAN_CONSTANT};
use ycsb::workload::build_key_name;

/// What the command line says.
struct Options {
    zk: String,
    table: String,
    family: String,
    seconds: u64,
    in_flight: usize,
    records: i64,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        zk: "127.0.0.1:2181".into(),
        table: "usertable".into(),
        family: "family".into(),
        seconds: 20,
        in_flight: 32,
        records: 1000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "run" => {}
            "--zk" => o.zk = args.next().ok_or("--zk needs a value")?,
            "-threads" | "--threads" => {
                let v = args.next().ok_or("-threads needs a value")?;
                o.in_flight = v.parse().map_err(|_| format!("-threads {v:?}"))?;
            }
            // A workload file: ignored, the floor is always workload C's read.
            "-P" => {
                args.next();
            }
            // YCSB's status flag (no value).
            "-s" => {}
            "-p" => {
                let kv = args.next().ok_or("-p needs NAME=VALUE")?;
                let (k, v) = kv.split_once('=').ok_or(format!("-p {kv:?}"))?;
                match k {
                    "table" => o.table = v.into(),
                    "columnfamily" => o.family = v.into(),
                    "maxexecutiontime" => {
                        o.seconds = v.parse().map_err(|_| format!("-p {kv:?}"))?
                    }
                    "recordcount" => o.records = v.parse().map_err(|_| format!("-p {kv:?}"))?,
                    _ => {}
                }
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.in_flight == 0 || o.seconds == 0 || o.records < 1 {
        return Err("-threads, maxexecutiontime and recordcount must be at least 1".into());
    }
    Ok(o)
}

/// One get, encoded whole, and the connection it goes to.
struct Request {
    conn: usize,
    frame: Vec<u8>,
}

/// A connection to one region server and its buffers.
struct Conn {
    stream: TcpStream,
    input: Vec<u8>,
    /// Bytes of `input` filled.
    filled: usize,
    output: Vec<u8>,
    /// Gets sent and not answered.
    in_flight: usize,
    /// Gets waiting for a place under the server's cap, in the order drawn.
    waiting: VecDeque<usize>,
}

/// Start-up: `draws` row keys drawn as `ycsb`'s workload C draws them, each with its region's
/// name and server, from the table's regions as `hbase:meta` lists them.
async fn draw_rows(o: &Options, draws: usize) -> Result<Vec<(String, Bytes, Vec<u8>)>, String> {
    let regions = async {
        let config = ClientConfig::builder(o.zk.clone()).build()?;
        let client = hbase_client::Client::connect(config).await?;
        client
            .admin()
            .list_regions(&TableName::parse(&o.table)?)
            .await
    }
    .await
    .map_err(|e| format!("listing the regions of {}: {e}", o.table))?;
    // As ycsb's CoreWorkload for workload C: the chooser spans [0, recordcount] (insert
    // start, insert count, no expected inserts), and a draw past the last record loaded
    // (recordcount - 1) is drawn again.
    let mut chooser = ScrambledZipfian::new(0, o.records, ZIPFIAN_CONSTANT);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut rows = Vec::with_capacity(draws);
    for _ in 0..draws {
        let keynum = loop {
            let k = chooser.next(&mut rng);
            if k < o.records {
                break k;
            }
        };
        let key = build_key_name(keynum, 1, false).into_bytes();
        // The last region whose start key is at most the key (regions are in key order, the
        // first starting at the empty key).
        let at = regions.partition_point(|r| r.region.start_key.as_ref() <= key.as_slice());
        let region = at.checked_sub(1).map(|i| &regions[i]).ok_or_else(|| {
            format!(
                "no region of {} holds {:?}",
                o.table,
                String::from_utf8_lossy(&key)
            )
        })?;
        let server = region.server.as_ref().ok_or_else(|| {
            format!(
                "region {} is not assigned to a server",
                region.region.encoded_name
            )
        })?;
        rows.push((server.address(), region.region.name.clone(), key));
    }
    Ok(rows)
}

/// The get request for `row` in `region`, as one frame, encoded by our client's own request
/// encoder, with the header `ycsb`'s reads carry: method `Get`, the client's 60 s RPC timeout
/// (never cut by the operation's deadline in a steady run), normal priority.
fn encode_get(call_id: u32, region: &[u8], row: &[u8], family: &[u8]) -> Result<Vec<u8>, String> {
    let get = pb::GetRequest {
        region: pb::RegionSpecifier {
            r#type: pb::region_specifier::RegionSpecifierType::RegionName as i32,
            value: region.to_vec().into(),
        },
        get: pb::Get {
            row: row.to_vec().into(),
            column: vec![pb::Column {
                family: family.to_vec().into(),
                qualifier: vec![],
            }],
            ..Default::default()
        },
    };
    let meta = RequestMeta {
        method: "Get",
        timeout_ms: 60_000,
        priority: 0,
    };
    let mut frame = BytesMut::new();
    encode_request(&mut frame, call_id, meta, &get, None).map_err(|e| e.to_string())?;
    Ok(frame.to_vec())
}

/// Opens a connection with the hello our client sends (preamble, then the connection header
/// naming KeyValue cell blocks and a client version: without the version, HBase 2.6.4 answered
/// these gets with the cells inside the protobuf message, not in a cell block).
fn open(addr: &str) -> std::io::Result<TcpStream> {
    // Bounded, as every connect of our client: a server that does not answer fails the run.
    let sock = std::net::ToSocketAddrs::to_socket_addrs(addr)?
        .next()
        .ok_or_else(|| std::io::Error::new(ErrorKind::NotFound, "no address"))?;
    let mut s = std::net::TcpStream::connect_timeout(&sock, Duration::from_secs(10))?;
    s.set_nodelay(true)?;
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    s.write_all(&connection_preamble(&user, Service::Client))?;
    s.set_nonblocking(true)?;
    Ok(TcpStream::from_std(s))
}

/// Reads one answer's response header at the start of `frame` (after its length). Fails on an
/// exception, and on an answer without cells: every get names a row that exists, so a get
/// that read nothing would make the floor cheaper than a read.
fn check_answer(frame: &[u8]) -> Result<(), String> {
    let header = pb::ResponseHeader::decode_length_delimited(frame)
        .map_err(|e| format!("malformed response header: {e}"))?;
    let call = header.call_id.unwrap_or(0);
    if let Some(ex) = header.exception {
        return Err(format!(
            "call {call} failed: {}",
            ex.exception_class_name.unwrap_or_default()
        ));
    }
    match header.cell_block_meta.and_then(|m| m.length) {
        Some(n) if n > 0 => Ok(()),
        _ => Err(format!(
            "call {call}: the row was read without a cell block"
        )),
    }
}

/// Writes as much of `conn.output` as the socket takes now.
fn flush(conn: &mut Conn, sends: &mut u64) -> std::io::Result<()> {
    let mut written = 0;
    while written < conn.output.len() {
        *sends += 1;
        match conn.stream.write(&conn.output[written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    conn.output.drain(..written);
    Ok(())
}

/// The whole number in the environment variable `name`, if it is set.
fn env_number<T: std::str::FromStr>(name: &str) -> Result<Option<T>, String> {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.trim()
                .parse()
                .map_err(|_| format!("{name}={v:?} is not a whole number"))
        })
        .transpose()
}

fn run(o: &Options) -> Result<(), String> {
    // The environment's settings, all checked before anything connects.
    let draws = env_number("FLOOR_KEYS")?.unwrap_or(100_000usize);
    // `FLOOR_SLEEP_US`: a sleep before every wait, as `ycsb -p wakeupcoalescing.us` does.
    let sleep = env_number("FLOOR_SLEEP_US")?.map(Duration::from_micros);
    // At most `cap` gets in flight per server, as our client's `max_in_flight_per_server`
    // (default 64): beyond what its call queue takes, a region server answers
    // CallQueueTooBigException.
    let cap = env_number("FLOOR_MAX_IN_FLIGHT_PER_SERVER")?
        .unwrap_or(64usize)
        .max(1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let rows = rt
        .block_on(draw_rows(o, draws))
        .map_err(|e| format!("start-up: {e}"))?;
    drop(rt);
    if rows.is_empty() {
        return Err("FLOOR_KEYS must be at least 1".into());
    }

    // One connection per server; the gets in the order drawn.
    let mut addrs: HashMap<String, usize> = HashMap::new();
    let mut conns: Vec<Conn> = Vec::new();
    let mut poll = Poll::new().map_err(|e| e.to_string())?;
    let mut requests = Vec::with_capacity(rows.len());
    for (i, (addr, region, row)) in rows.iter().enumerate() {
        let conn = match addrs.get(addr) {
            Some(&c) => c,
            None => {
                let mut stream = open(addr).map_err(|e| format!("connect {addr}: {e}"))?;
                poll.registry()
                    .register(
                        &mut stream,
                        Token(conns.len()),
                        Interest::READABLE | Interest::WRITABLE,
                    )
                    .map_err(|e| e.to_string())?;
                conns.push(Conn {
                    stream,
                    input: vec![0; 1 << 18],
                    filled: 0,
                    output: Vec::with_capacity(1 << 16),
                    in_flight: 0,
                    waiting: Default::default(),
                });
                addrs.insert(addr.clone(), conns.len() - 1);
                conns.len() - 1
            }
        };
        requests.push(Request {
            conn,
            frame: encode_get(i as u32 + 1, region, row, o.family.as_bytes())?,
        });
    }
    let mut next = 0usize;
    let send = |conns: &mut Vec<Conn>, i: usize| {
        let c = &mut conns[requests[i].conn];
        c.output.extend_from_slice(&requests[i].frame);
        c.in_flight += 1;
    };
    // Draws the next get: sent now, or queued behind its server's cap.
    let mut send_next = |conns: &mut Vec<Conn>| {
        let i = next;
        next = (next + 1) % requests.len();
        let c = &mut conns[requests[i].conn];
        if c.in_flight < cap && c.waiting.is_empty() {
            send(conns, i);
        } else {
            c.waiting.push_back(i);
        }
    };

    let (mut sends, mut receives, mut polls, mut answers) = (0u64, 0u64, 0u64, 0u64);
    for _ in 0..o.in_flight {
        send_next(&mut conns);
    }
    for c in conns.iter_mut() {
        flush(c, &mut sends).map_err(|e| e.to_string())?;
    }
    let startup_cpu = process_cpu_secs();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(o.seconds);
    let mut events = Events::with_capacity(64);
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        if let Some(d) = sleep {
            std::thread::sleep(d);
        }
        polls += 1;
        match poll.poll(&mut events, Some(deadline - now)) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("poll: {e}")),
        }
        for ev in events.iter() {
            let ci = ev.token().0;
            // A writable-only event needs nothing here: it woke the poll, and the flush
            // below writes whatever output an earlier short write left.
            if !ev.is_readable() {
                continue;
            }
            loop {
                let c = &mut conns[ci];
                if c.filled == c.input.len() {
                    let len = c.input.len();
                    c.input.resize(len * 2, 0);
                }
                receives += 1;
                let space = c.input.len() - c.filled;
                let n = match c.stream.read(&mut c.input[c.filled..]) {
                    Ok(0) => return Err(format!("connection {ci} closed by the server")),
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("read: {e}")),
                };
                c.filled += n;
                // Whole frames: count, check, and send the next get for each.
                let mut at = 0;
                let mut done = 0usize;
                while c.filled - at >= 4 {
                    let len = u32::from_be_bytes(c.input[at..at + 4].try_into().unwrap()) as usize;
                    if len > MAX_FRAME_LEN {
                        return Err(format!("answer frame of {len} bytes is too large"));
                    }
                    if c.filled - at - 4 < len {
                        break;
                    }
                    check_answer(&c.input[at + 4..at + 4 + len])?;
                    at += 4 + len;
                    done += 1;
                }
                c.input.copy_within(at..c.filled, 0);
                c.filled -= at;
                c.in_flight = c
                    .in_flight
                    .checked_sub(done)
                    .ok_or_else(|| format!("connection {ci}: more answers than gets sent"))?;
                answers += done as u64;
                // The places freed go to this server's waiting gets first, then each answer's
                // caller draws its next get.
                while conns[ci].in_flight < cap {
                    match conns[ci].waiting.pop_front() {
                        Some(i) => send(&mut conns, i),
                        None => break,
                    }
                }
                for _ in 0..done {
                    send_next(&mut conns);
                }
                // Less than the space offered: the socket is drained (as tokio assumes too).
                if n < space {
                    break;
                }
            }
        }
        for c in conns.iter_mut() {
            if !c.output.is_empty() {
                flush(c, &mut sends).map_err(|e| e.to_string())?;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let per = |n: u64| n as f64 / answers.max(1) as f64;
    eprintln!(
        "read-floor: start-up {:.0} ms of CPU; {answers} reads in {secs:.1} s, {} connections, \
         {} keys, {} in flight; per read: {:.3} sends, {:.3} receives, {:.3} polls",
        startup_cpu * 1000.0,
        conns.len(),
        requests.len(),
        o.in_flight,
        per(sends),
        per(receives),
        per(polls)
    );
    println!("[OVERALL], RunTime(ms), {}", (secs * 1000.0) as u64);
    println!("[OVERALL], Throughput(ops/sec), {}", answers as f64 / secs);
    println!("[READ], Operations, {answers}");
    Ok(())
}

/// User and system CPU of this process so far, in seconds.
fn process_cpu_secs() -> f64 {
    // SAFETY: `usage` is a plain struct on the stack that getrusage fills.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn main() {
    let code = match parse_args().and_then(|o| run(&o)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("read-floor: error: {e}");
            1
        }
    };
    std::process::exit(code);
}
