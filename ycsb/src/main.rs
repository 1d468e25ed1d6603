//! `ycsb`: a YCSB-compatible benchmark driver for HBase. The logic is in the library.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ycsb::main_with_args(args));
}
