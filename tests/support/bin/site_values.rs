//! Our side of the hbase-site.xml oracle (tests/hbase_site.rs): `HbaseSite` reads a
//! configuration file and prints, for each property name given, its raw value and its
//! expanded value, in the form `tests/java/interop/SiteValues.java` prints Hadoop's. A process
//! of its own so that both sides see the same environment (`${env.NAME}`), which the test sets
//! for each of them.
//!
//! Output, one line per name: NAME <tab> RAW <tab> EXPANDED, where a value is "unset", or "="
//! and the value with `\` as `\\`, newline as `\n`, tab as `\t`, carriage return as `\r`; an
//! expansion refused is "error". When the file cannot be read at all (a bad include, a loop), one
//! line instead: FAILED <tab> the error (and the exit status is still 0: the line is the answer).

use hbase_client::HbaseSite;

fn escape(v: Option<&str>) -> String {
    let Some(v) = v else {
        return "unset".into();
    };
    let mut out = String::from("=");
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((file, names)) = args.split_first() else {
        eprintln!("usage: site-values FILE NAME...");
        std::process::exit(2);
    };
    let site = match HbaseSite::load(file) {
        Ok(site) => site,
        Err(e) => {
            println!("FAILED\t{}", e.to_string().replace('\n', " "));
            return;
        }
    };
    for name in names {
        let expanded = match site.get(name) {
            Ok(value) => escape(value.as_deref()),
            Err(_) => "error".into(),
        };
        println!("{name}\t{}\t{expanded}", escape(site.raw(name)));
    }
}
