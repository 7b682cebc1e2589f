//! A bare HTTP/1.0 GET for the host's endpoints: no client library needed for three plain-text URLs.

use std::io::{Read, Write};
use std::net::TcpStream;

/// Status code and body of `GET http://<addr><path>`.
pub fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// The value of the first sample of `metric` whose line contains `labels`, or 0.
pub fn sample(metrics: &str, metric: &str, labels: &str) -> f64 {
    metrics
        .lines()
        .find(|l| l.starts_with(metric) && l.contains(labels))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}
