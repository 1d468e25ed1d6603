//! A server that accepts and never says a word, for the unit tests of connect attempts that
//! must still be under way when their runtime goes (`pool.rs`, `zk.rs`).

/// Listens on a loopback port, accepts every connection and keeps it open without writing;
/// returns the port. The listener lives as long as the test process.
pub(crate) fn silent_listener() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    port
}
