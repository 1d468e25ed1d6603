//! Our side of the exception-table oracle (`exception_table_agrees_with_the_java_client` in
//! tests/retries.rs): the exception table's verdict on each server exception given, in the
//! form `tests/java/interop/ExceptionFacts.java` prints the Java client's.
//!
//! `exception-facts SPEC...`: SPEC is `call:NAME[+dnr][+overloaded]` (an exception answering
//! a whole call, with the ExceptionResponse's flags) or `action:NAME` (an action's exception
//! in a Multi answer: a class name and a message, no flags). One line each:
//! SPEC <tab> retry=… <tab> cache=… <tab> pause=… <tab> master=… (see
//! `hbase_client::exception_oracle`); `master=-` for an action (a master call is never a
//! Multi).
//!
//! `exception-facts known`: the short class names the table knows, one a line.

use hbase_client::{exception_oracle, RemoteException};

/// The message ExceptionFacts.java gives every exception.
const MESSAGE: &str =
    "Region moved to: hostname=h1.example port=16020 startCode=1. As of locationSeqNum=5.";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("known") {
        for name in exception_oracle::known_classes() {
            println!("{name}");
        }
        return;
    }
    for spec in &args {
        let Some((path, rest)) = spec.split_once(':') else {
            eprintln!("exception-facts: {spec}: expected call:NAME or action:NAME");
            std::process::exit(2);
        };
        let mut parts = rest.split('+');
        let name = parts.next().unwrap_or_default();
        let (mut do_not_retry, mut server_overloaded) = (false, false);
        for flag in parts {
            match flag {
                "dnr" => do_not_retry = true,
                "overloaded" => server_overloaded = true,
                _ => {
                    eprintln!("exception-facts: {spec}: unknown flag {flag}");
                    std::process::exit(2);
                }
            }
        }
        if path != "call" && (path != "action" || do_not_retry || server_overloaded) {
            eprintln!("exception-facts: {spec}: call:NAME[+flags] or action:NAME");
            std::process::exit(2);
        }
        // A Multi's exception is read with the same fields unset
        // (RemoteException::from_name_and_message), so both paths meet the same table.
        let e = RemoteException {
            class_name: name.to_string(),
            message: MESSAGE.to_string(),
            moved_to: None,
            do_not_retry,
            server_overloaded,
        };
        let [retry, cache, pause, master] = exception_oracle::verdict_words(&e);
        let master = if path == "call" { master } else { "-" };
        println!("{spec}\tretry={retry}\tcache={cache}\tpause={pause}\tmaster={master}");
    }
}
