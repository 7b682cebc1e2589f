use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::*;
use crate::conversion::reload::{CertSource, Serving, follow};
use crate::conversion::routes::{RouteError, RouteGuard, Routes};
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
    let handler = Handler::new(converter, Arc::new(|_: &Outcome| {}), "example.com", 8);
    (serve_with(&bundle, handler), bundle.ca_pem)
}

/// `handler` on a free loopback port, under `bundle`'s certificate.
fn serve_with(bundle: &Bundle, handler: Handler) -> SocketAddr {
    serve(
        "127.0.0.1:0".parse().unwrap(),
        RustlsConfig::from_config(Arc::new(bundle.server_config().unwrap())),
        handler,
    )
    .unwrap()
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
    let (status, _, body) = exchange(addr, ca_pem, name, method, path, body);
    (status, body)
}

/// As `request`, with the response's head too.
fn exchange(
    addr: SocketAddr,
    ca_pem: &str,
    name: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, String, String) {
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
        return (0, String::new(), e.to_string());
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
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or_default();
    (status, head.to_string(), body.to_string())
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
    let handler = Handler::new(converter, Arc::new(|_: &Outcome| {}), "example.com", 8);
    let addr = serve("127.0.0.1:0".parse().unwrap(), tls.clone(), handler).unwrap();
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

/// A review beyond the slots waits, then is answered 429 with Retry-After (which the API server's
/// client retries), not run; the slot taken is given back once its review is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_beyond_the_slots_is_answered_busy_with_retry_after() {
    use std::sync::Mutex;
    use std::sync::mpsc;

    let bundle = Bundle::generate(&["localhost".into()], VALIDITY).unwrap();
    let (entered, entering) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let (entered, released) = (Mutex::new(entered), Mutex::new(released));
    // The first review holds the only slot until released; none after it blocks.
    let converter: Converter = Arc::new(move |object: &Value, to: &str| {
        if object["metadata"]["name"] == "a" {
            entered.lock().unwrap().send(()).unwrap();
            released.lock().unwrap().recv().unwrap();
        }
        let mut object = object.clone();
        object["apiVersion"] = json!(to);
        Ok(object)
    });
    let results = Arc::new(Mutex::new(Vec::new()));
    let seen = results.clone();
    let observer: Observer = Arc::new(move |outcome: &Outcome| {
        let message = outcome.message.map(str::to_string);
        seen.lock().unwrap().push((outcome.result, message));
    });
    let mut handler = Handler::new(converter, observer, "example.com", 1);
    // How long the second waits changes nothing here: the first holds the slot until released.
    handler.wait = std::time::Duration::from_millis(100);
    let addr = serve_with(&bundle, handler);
    let ca = bundle.ca_pem.clone();
    let first = tokio::task::spawn_blocking(move || {
        request(addr, &ca, "localhost", "POST", "/convert", &review_body())
    });
    tokio::task::spawn_blocking(move || entering.recv().unwrap())
        .await
        .unwrap();

    let other = serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "uid-2", "desiredAPIVersion": "example.com/v2", "objects": [{
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "b", "namespace": "ns"}, "spec": {},
        }]},
    }))
    .unwrap();
    let ca = bundle.ca_pem.clone();
    let busy_body = other.clone();
    let (status, head, body) =
        blocking(move || exchange(addr, &ca, "localhost", "POST", "/convert", &busy_body)).await;
    assert_eq!(status, 429, "{head}\n{body}");
    assert!(head.to_lowercase().contains("retry-after: 1"), "{head}");
    let busy: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(busy["kind"], "Status");
    assert_eq!(busy["reason"], "TooManyRequests");
    assert_eq!(busy["code"], 429);
    assert_eq!(
        busy["message"],
        "the conversion webhook is busy: all 1 conversion slots stayed in use for 100 ms; retry"
    );

    release.send(()).unwrap();
    let (status, body) = first.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let ca = bundle.ca_pem.clone();
    let (status, body) =
        blocking(move || request(addr, &ca, "localhost", "POST", "/convert", &other)).await;
    assert_eq!(status, 200, "the slot is free again: {body}");
    let results: Vec<&str> = results.lock().unwrap().iter().map(|(r, _)| *r).collect();
    assert_eq!(results, ["ConversionBusy", "success", "success"]);
}

#[tokio::test]
async fn a_failed_review_is_observed_with_its_reason_and_message() {
    let bundle = Bundle::generate(&["localhost".into()], VALIDITY).unwrap();
    let relabel: Converter = Arc::new(|object: &Value, to: &str| {
        let mut object = object.clone();
        object["apiVersion"] = json!(to);
        object["metadata"]["labels"] = json!({"team": "other"});
        Ok(object)
    });
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let observer: Observer = Arc::new(move |outcome: &Outcome| {
        let message = outcome.message.map(str::to_string);
        record.lock().unwrap().push((outcome.result, message));
    });
    let addr = serve_with(&bundle, Handler::new(relabel, observer, "example.com", 8));
    let ca = bundle.ca_pem.clone();
    let (status, body) =
        blocking(move || request(addr, &ca, "localhost", "POST", "/convert", &review_body())).await;
    assert_eq!(
        status, 200,
        "a refused review is still a ConversionReview: {body}"
    );
    let expected = "converting Widget ns/a to example.com/v2: the converter changed \
                    metadata.labels[\"team\"] from nothing to \"other\"";
    let answer: Value = serde_json::from_str(&body).unwrap();
    let message = answer["response"]["result"]["message"].as_str().unwrap();
    assert!(message.starts_with(expected), "{message}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "ConversionMetadataChanged");
    assert_eq!(seen[0].1.as_deref(), Some(message));
}

/// A route of `routes` for `name`, converting for CRDs of `group`, under a certificate of its own.
fn route(routes: &Arc<Routes>, route: &str, name: &str, group: &str) -> (RouteGuard, String) {
    let bundle = Bundle::generate(&[name.to_string()], VALIDITY).unwrap();
    let converter: Converter = Arc::new(|object: &Value, to: &str| {
        let mut object = object.clone();
        object["apiVersion"] = json!(to);
        Ok(object)
    });
    let handler = Handler::new(converter, Arc::new(|_: &Outcome| {}), group, 2);
    let guard = routes.add(route, vec![name.into()], handler).unwrap();
    guard.serving().serve(&bundle).unwrap();
    (guard, bundle.ca_pem)
}

#[tokio::test]
async fn each_route_is_served_under_its_own_certificate_chosen_by_name() {
    let routes = Arc::new(Routes::default());
    let addr =
        crate::conversion::routes::serve("127.0.0.1:0".parse().unwrap(), routes.clone()).unwrap();
    let (a, a_ca) = route(&routes, "a", "a.example", "example.com");
    let (_b, b_ca) = route(&routes, "b", "b.example", "b.example.org");
    let post = move |ca: &str, name: &'static str, path: &'static str| {
        let ca = ca.to_string();
        blocking(move || request(addr, &ca, name, "POST", path, &review_body()))
    };

    let (status, body) = post(&a_ca, "a.example", "/convert/a").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"status\":\"Success\""), "{body}");
    // b's name gets b's certificate, which a's CA does not vouch for.
    let (status, error) = post(&a_ca, "b.example", "/convert/a").await;
    assert_eq!(status, 0, "a handshake under another route's name: {error}");
    // Through b's name to b's path, a review of another group than b's CRD is refused.
    let (status, body) = post(&b_ca, "b.example", "/convert/b").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(review::FOREIGN_GROUP), "{body}");
    // A name no route serves gets no certificate at all.
    let (status, _) = post(&a_ca, "c.example", "/convert/a").await;
    assert_eq!(status, 0);

    // One name, one route.
    let taken = Handler::new(
        Arc::new(|o: &Value, _: &str| Ok(o.clone())),
        Arc::new(|_: &Outcome| {}),
        "x",
        1,
    );
    let error = routes
        .add("c", vec!["A.example".into()], taken)
        .err()
        .unwrap();
    assert_eq!(
        error,
        RouteError::NameTaken {
            name: "A.example".into(),
            owner: "a".into()
        }
    );
    // A route dropped is gone, certificate and path.
    drop(a);
    let (status, _) = post(&a_ca, "a.example", "/convert/a").await;
    assert_eq!(status, 0);
}
