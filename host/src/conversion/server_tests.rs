use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::*;
use crate::conversion::reload::{CertSource, follow};
use crate::conversion::tls::{Bundle, VALIDITY, certificates, provider};

/// A webhook on a free loopback port whose converter sets `spec.converted`; its address and CA.
fn start() -> (SocketAddr, String) {
    let bundle = Bundle::generate(&["localhost".into(), "127.0.0.1".into()], VALIDITY).unwrap();
    let converter: Converter = Arc::new(|object: &Value, to: &str| {
        let mut object = object.clone();
        object["apiVersion"] = json!(to);
        object["spec"]["converted"] = json!(true);
        Ok(object)
    });
    let addr = serve(
        "127.0.0.1:0".parse().unwrap(),
        RustlsConfig::from_config(Arc::new(bundle.server_config().unwrap())),
        converter,
        Arc::new(|_| {}),
    )
    .unwrap();
    (addr, bundle.ca_pem)
}

/// `method path` with `body` over TLS, trusting only `ca_pem`, for `name`; status and body.
fn request(
    addr: SocketAddr,
    ca_pem: &str,
    name: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, String) {
    let mut roots = RootCertStore::empty();
    for ca in certificates("ca", ca_pem).unwrap() {
        roots.add(ca).unwrap();
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connection = ClientConnection::new(
        Arc::new(config),
        ServerName::try_from(name.to_string()).unwrap(),
    )
    .unwrap();
    let mut tls = StreamOwned::new(connection, TcpStream::connect(addr).unwrap());
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {name}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if let Err(e) = tls.write_all(head.as_bytes()) {
        return (0, e.to_string());
    }
    // A server refusing a large body may close before reading it all.
    let _ = tls.write_all(body);
    let mut out = Vec::new();
    let _ = tls.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).into_owned();
    let status = out
        .split(' ')
        .nth(1)
        .unwrap_or_default()
        .parse()
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

fn review_body() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "uid-1",
            "desiredAPIVersion": "example.com/v2",
            "objects": [{
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "a", "namespace": "ns"}, "spec": {},
            }],
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn a_review_is_answered_over_tls_for_each_name_of_the_certificate() {
    let (addr, ca) = start();
    for name in ["localhost", "127.0.0.1"] {
        let ca = ca.clone();
        let (status, body) =
            blocking(move || request(addr, &ca, name, "POST", "/convert", &review_body())).await;
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["response"]["uid"], "uid-1");
        assert_eq!(answer["response"]["result"]["status"], "Success");
        let object = &answer["response"]["convertedObjects"][0];
        assert_eq!(object["apiVersion"], "example.com/v2");
        assert_eq!(object["spec"]["converted"], true);
    }
}

#[tokio::test]
async fn other_requests_are_refused() {
    let (addr, ca) = start();
    let cases: [(&str, &str, Vec<u8>, u16); 4] = [
        ("GET", "/convert", vec![], 405),
        ("POST", "/other", review_body(), 404),
        ("POST", "/convert", b"{\"kind\": 1}".to_vec(), 400),
        ("POST", "/convert", vec![b' '; MAX_BODY_BYTES + 1], 413),
    ];
    for (method, path, body, expected) in cases {
        let ca = ca.clone();
        let (status, text) =
            blocking(move || request(addr, &ca, "localhost", method, path, &body)).await;
        assert_eq!(status, expected, "{method} {path}: {text}");
    }
}

#[tokio::test]
async fn a_client_trusting_another_ca_is_refused_the_handshake() {
    let (addr, _) = start();
    let other = Bundle::generate(&["localhost".into()], VALIDITY)
        .unwrap()
        .ca_pem;
    let (status, _) = blocking(move || {
        request(
            addr,
            &other,
            "localhost",
            "POST",
            "/convert",
            &review_body(),
        )
    })
    .await;
    assert_eq!(status, 0);
}

#[tokio::test]
async fn a_renewed_certificate_in_the_directory_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let write = |bundle: &Bundle| {
        std::fs::write(dir.path().join("tls.crt"), &bundle.cert_pem).unwrap();
        std::fs::write(dir.path().join("tls.key"), &bundle.key_pem).unwrap();
        std::fs::write(dir.path().join("ca.crt"), &bundle.ca_pem).unwrap();
    };
    let names = ["localhost".to_string()];
    let old = Bundle::generate(&names, VALIDITY).unwrap();
    write(&old);
    let source = CertSource::Dir(dir.path().to_path_buf());
    let loaded = source.load().await.unwrap();
    let tls = RustlsConfig::from_config(Arc::new(loaded.server_config().unwrap()));
    let converter: Converter = Arc::new(|object: &Value, _: &str| Ok(object.clone()));
    let addr = serve(
        "127.0.0.1:0".parse().unwrap(),
        tls.clone(),
        converter,
        Arc::new(|_| {}),
    )
    .unwrap();
    let (ca, mut ca_changes) = watch::channel(loaded.ca_pem.clone());
    let period = std::time::Duration::from_millis(20);
    tokio::spawn(follow(source, loaded, tls, ca, period));

    let new = Bundle::generate(&names, VALIDITY).unwrap();
    write(&new);
    tokio::time::timeout(std::time::Duration::from_secs(10), ca_changes.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*ca_changes.borrow(), new.ca_pem);
    let (status, _) = blocking(move || {
        request(
            addr,
            &new.ca_pem,
            "localhost",
            "POST",
            "/convert",
            &review_body(),
        )
    })
    .await;
    assert_eq!(status, 200);
    let (status, _) = blocking(move || {
        request(
            addr,
            &old.ca_pem,
            "localhost",
            "POST",
            "/convert",
            &review_body(),
        )
    })
    .await;
    assert_eq!(status, 0, "the old certificate is no longer served");
}
