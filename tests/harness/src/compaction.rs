//! Compacting etcd on demand. The API server compacts every five minutes (at least one, by its
//! flag); a test compacts when it wants a watch resumed from an older resourceVersion to find that
//! history gone, so that the API server answers 410 Gone and the client must list again. With the
//! API server's watch cache on, resumed watches are served from the cache's own window instead: such
//! a test starts its cluster with `--watch-cache=false` (see [`crate::ClusterOptions`]).
//!
//! etcd's JSON gateway (on its client port, plain HTTP here) takes the two calls, so no etcd client
//! is needed: a range read for the current revision, then a compaction up to it.

use std::io::{Read, Write};
use std::net::TcpStream;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::TestCluster;

impl TestCluster {
    /// Compacts etcd's history up to its current revision and returns that revision: a watch
    /// resumed from any older resourceVersion is answered 410 Gone (unless a watch cache serves it).
    pub fn compact_etcd(&self) -> Result<u64> {
        // A range read of the empty key costs nothing and answers with the current revision.
        let read = post(&self.etcd_client, "/v3/kv/range", &json!({ "key": "AA==" }))?;
        let revision: u64 = read["header"]["revision"]
            .as_str()
            .context("etcd's answer has no revision")?
            .parse()?;
        post(
            &self.etcd_client,
            "/v3/kv/compaction",
            &json!({ "revision": revision.to_string() }),
        )?;
        Ok(revision)
    }
}

/// POSTs `body` to etcd's gateway; HTTP/1.0, so that the answer comes whole, not chunked.
fn post(addr: &str, path: &str, body: &Value) -> Result<Value> {
    let body = body.to_string();
    let mut stream =
        TcpStream::connect(addr).with_context(|| format!("connecting to etcd {addr}"))?;
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, payload) = response
        .split_once("\r\n\r\n")
        .with_context(|| format!("etcd's answer to {path} has no body: {response}"))?;
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        bail!("etcd answered {path} with {head}: {payload}");
    }
    serde_json::from_str(payload).with_context(|| format!("etcd's answer to {path}: {payload}"))
}
