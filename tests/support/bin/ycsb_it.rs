//! The `ycsb` command line built inside the test package, so that integration tests that run
//! several `ycsb` processes at once find it at `CARGO_BIN_EXE_ycsb-it` (Cargo builds a
//! package's own binaries before its integration tests; another package's it does not).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ycsb::main_with_args(args));
}
