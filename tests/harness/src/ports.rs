//! Free loopback ports, so that several stacks (test binaries, `make cluster`, CI) can run side by side.
//!
//! A port is found by binding 127.0.0.1:0 and released before the component binds it; a port handed
//! out once is never handed out again by this process, since the kernel may return it again while the
//! component that got it is still starting.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Mutex;

use anyhow::{Context, Result};

/// Returns a loopback TCP port that was free a moment ago and that this process has not handed out.
pub fn free_port() -> Result<u16> {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.insert(port) {
            return Ok(port);
        }
    }
}
