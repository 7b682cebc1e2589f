//! Ports for servers the tests start and must name in advance (a webhook URL on a CRD).

/// A loopback port free right now: bound, then released for the server to take.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
