//! `ycsb shell`: YCSB's interactive `CommandLine`. Commands are read from stdin, one per line:
//! `read key [field…]`, `scan key count [field…]`, `insert key name=value…`,
//! `update key name=value…`, `delete key`, `table [name]`, `help`, `quit`. Each answer is
//! followed by the time it took, as YCSB prints it.
//!
//! Unlike YCSB's, `table NAME` switches the table for the next commands (YCSB forgets it), a
//! malformed `name=value` is an error message instead of a crash, and end of input quits.

use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::db::{Db, Field, FieldValue, Record, Status, Values};
use crate::java::{hash_map_order, in_java_order};
use crate::util::java_string_hash;
use crate::{Error, Outcome};

const HELP: &str = "Commands:
  read key [field1 field2 ...] - Read a record
  scan key recordcount [field1 field2 ...] - Scan starting at key
  insert key name1=value1 [name2=value2 ...] - Insert a new record
  update key name1=value1 [name2=value2 ...] - Update a record
  delete key - Delete a record
  table [tablename] - Get or [set] the name of the table
  quit - Quit
";

/// The header YCSB's CommandLine prints before connecting.
pub const BANNER: &str = "YCSB Command Line client
Type \"help\" for command line help
Start with \"-help\" for usage info
";

/// Prints [`BANNER`].
pub fn print_banner() {
    out(BANNER);
}

fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// A record's fields as a Java `HashMap` filled in this order iterates them.
fn in_map_order(record: Record) -> Vec<(Field, bytes::Bytes)> {
    in_java_order(
        record.into_pairs(),
        |(f, _)| java_string_hash(f),
        |h| hash_map_order(h, 16),
    )
}

fn print_record(record: Record) -> String {
    let mut s = String::new();
    for (f, v) in in_map_order(record) {
        s.push_str(&format!("{f}={}\n", String::from_utf8_lossy(&v)));
    }
    s
}

fn parse_values(tokens: &[&str]) -> Option<Values> {
    // A map: a field given twice keeps its last value, at its first place.
    let mut values: Values = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for t in tokens {
        let (name, value) = t.split_once('=')?;
        let v = FieldValue::Fixed(bytes::Bytes::copy_from_slice(value.as_bytes()));
        match seen.get(name) {
            Some(&i) => values[i].1 = v,
            None => {
                seen.insert(name.to_string(), values.len());
                values.push((Field::from(name), v));
            }
        }
    }
    Some(values)
}

/// One command; returns false on `quit`.
async fn command<D: Db>(db: &D, table: &mut String, line: &str) -> bool {
    // Java's split(" "): empty tokens between spaces stay, trailing ones go.
    let mut tokens: Vec<&str> = line.split(' ').collect();
    while tokens.len() > 1 && tokens.last() == Some(&"") {
        tokens.pop();
    }
    let started = Instant::now();
    let mut s = String::new();
    match tokens[0] {
        "table" => match tokens.len() {
            1 => s.push_str(&format!("Using table \"{table}\"\n")),
            2 => {
                *table = tokens[1].to_string();
                s.push_str(&format!("Using table \"{table}\"\n"));
            }
            _ => s.push_str("Error: syntax is \"table tablename\"\n"),
        },
        "read" => {
            if tokens.len() == 1 {
                s.push_str("Error: syntax is \"read keyname [field1 field2 ...]\"\n");
            } else {
                let fields: Option<Vec<String>> =
                    (tokens.len() > 2).then(|| tokens[2..].iter().map(|f| f.to_string()).collect());
                let mut result = Record::new();
                let st = db
                    .read(table, tokens[1], fields.as_deref(), &mut result)
                    .await;
                s.push_str(&format!(
                    "Return code: {}\n{}",
                    st.name(),
                    print_record(result)
                ));
            }
        }
        "scan" => {
            if tokens.len() < 3 {
                s.push_str("Error: syntax is \"scan keyname scanlength [field1 field2 ...]\"\n");
            } else {
                match tokens[2].parse::<usize>() {
                    Err(_) => s.push_str(&format!(
                        "Error: the scan length {:?} is not a number\n",
                        tokens[2]
                    )),
                    Ok(n) => {
                        let fields: Option<Vec<String>> = (tokens.len() > 3)
                            .then(|| tokens[3..].iter().map(|f| f.to_string()).collect());
                        let mut rows = Vec::new();
                        let st = db
                            .scan(table, tokens[1], n, fields.as_deref(), &mut rows)
                            .await;
                        s.push_str(&format!("Result: {}\n", st.name()));
                        if rows.is_empty() {
                            s.push_str("0 records\n");
                        } else {
                            s.push_str("--------------------------------\n");
                        }
                        for (i, row) in rows.into_iter().enumerate() {
                            s.push_str(&format!("Record {i}\n{}", print_record(row)));
                            s.push_str("--------------------------------\n");
                        }
                    }
                }
            }
        }
        op @ ("insert" | "update") => {
            match (tokens.len() >= 3)
                .then(|| parse_values(&tokens[2..]))
                .flatten()
            {
                None => s.push_str(&format!(
                    "Error: syntax is \"{op} keyname name1=value1 [name2=value2 ...]\"\n"
                )),
                Some(values) => {
                    let st: Status = if op == "insert" {
                        db.insert(table, tokens[1], values).await
                    } else {
                        db.update(table, tokens[1], values).await
                    };
                    s.push_str(&format!("Result: {}\n", st.name()));
                }
            }
        }
        "delete" => {
            if tokens.len() != 2 {
                s.push_str("Error: syntax is \"delete keyname\"\n");
            } else {
                let st = db.delete(table, tokens[1]).await;
                s.push_str(&format!("Return result: {}\n", st.name()));
            }
        }
        other => s.push_str(&format!("Error: unknown command \"{other}\"\n")),
    }
    s.push_str(&format!("{} ms\n", started.elapsed().as_millis()));
    out(&s);
    true
}

/// Runs the command loop on stdin with `db` (already connected) and `table`.
pub async fn run<D: Db>(db: D, table: String) -> Result<Outcome, Error> {
    let db = db.for_thread();
    out("Connected.\n");
    let mut table = table;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        out("> ");
        let line = match lines.next_line().await {
            Ok(Some(l)) => l,
            Ok(None) => {
                out("\n");
                break;
            }
            Err(e) => return Err(Error::Io(format!("reading stdin: {e}"))),
        };
        let line = line.trim_end_matches('\r');
        match line {
            "" => continue,
            "help" => out(HELP),
            "quit" => break,
            _ => {
                command(&db, &mut table, line).await;
            }
        }
    }
    let outcome = db.cleanup().await;
    let failed = outcome.failed_inserts + outcome.failed_updates + outcome.failed_deletes;
    if failed > 0 || outcome.error.is_some() {
        return Err(Error::Hbase(format!(
            "{failed} buffered writes failed at exit ({} inserts, {} updates, {} deletes)",
            outcome.failed_inserts, outcome.failed_updates, outcome.failed_deletes
        )));
    }
    Ok(Outcome::default())
}
