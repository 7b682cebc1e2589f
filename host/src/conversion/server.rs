//! The HTTPS endpoint the API server calls: `POST /convert` with a ConversionReview, answered by
//! `review::answer` on a blocking thread (the converter runs wasm synchronously). axum's Router over
//! rustls through axum-server, which does the TLS accept loop (handshakes off the accept path, with a
//! timeout) and HTTP/2 or HTTP/1.1 by ALPN.
//!
//! Each review takes one guest instance, and the host reserves a few for the webhook: a review
//! beyond them waits up to `BUSY_WAIT` for a slot, then is answered HTTP 429 with `Retry-After`. Not a
//! failed ConversionReview: the API server hands that to its client as a 500 error, which nobody
//! retries. The API server's own REST client (client-go's `checkWait`: a 429 or 5xx with
//! `Retry-After`) waits and sends the review again, up to 10 times within the client's request, so a
//! burst is absorbed without the client seeing an error.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use kube::core::Status;
use kube::core::conversion::{ConversionResponse, ConversionReview};
use tokio::sync::Semaphore;

use super::review;
use super::{Converter, Observer, Outcome};

/// Largest ConversionReview accepted: a list of many large objects converted at once.
pub const MAX_BODY_BYTES: usize = 32 << 20;

/// How long a review waits for a free slot before it is answered busy: long enough for a burst of
/// short conversions to pass, short against the API server's 30 s webhook timeout.
pub const BUSY_WAIT: Duration = Duration::from_millis(1500);

/// What the API server is told to wait before sending a busy review again (whole seconds).
const RETRY_AFTER_SECONDS: u64 = 1;

/// The result of a review answered busy.
pub const BUSY: &str = "ConversionBusy";

/// The result of a review whose converter panicked.
pub const FAILED: &str = "ConversionFailed";

/// What answers a review: the converter, whom to tell how it ended, the CRD's group, and the slots.
#[derive(Clone)]
pub struct Handler {
    converter: Converter,
    observer: Observer,
    group: Arc<str>,
    slots: Arc<Semaphore>,
    capacity: usize,
    /// How long a review waits for a slot (`BUSY_WAIT`).
    pub wait: Duration,
}

impl Handler {
    /// Converts with `converter` for a CRD of `group`, at most `slots` reviews at once.
    pub fn new(converter: Converter, observer: Observer, group: &str, slots: usize) -> Handler {
        Handler {
            converter,
            observer,
            group: group.into(),
            slots: Arc::new(Semaphore::new(slots)),
            capacity: slots,
            wait: BUSY_WAIT,
        }
    }
}

/// Binds `addr` (port 0 picks a free one) and serves `POST /convert` over TLS with `tls` (reloadable)
/// until the process ends; returns the bound address.
pub fn serve(addr: SocketAddr, tls: RustlsConfig, handler: Handler) -> anyhow::Result<SocketAddr> {
    let app = Router::new()
        .route("/convert", post(convert))
        .with_state(handler);
    serve_app(addr, tls, app)
}

/// Serves `app` over TLS on `addr` until the process ends; returns the bound address.
pub(super) fn serve_app(
    addr: SocketAddr,
    tls: RustlsConfig,
    app: Router,
) -> anyhow::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    let app = app.layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    let server = axum_server::tls_rustls::from_tcp_rustls(listener, tls)?;
    tokio::spawn(async move {
        if let Err(e) = server.serve(app.into_make_service()).await {
            tracing::error!(error = %e, "the conversion webhook stopped");
        }
    });
    Ok(bound)
}

async fn convert(State(handler): State<Handler>, body: Bytes) -> Response {
    review(&handler, body).await
}

/// Answers one ConversionReview with `handler`.
pub(super) async fn review(handler: &Handler, body: Bytes) -> Response {
    let observer = &handler.observer;
    let review: ConversionReview = match serde_json::from_slice(&body) {
        Ok(review) => review,
        Err(e) => {
            tracing::warn!(error = %e, "a request to /convert that is not a ConversionReview");
            observer(&Outcome {
                result: review::BAD_REQUEST,
                message: None,
            });
            return (
                StatusCode::BAD_REQUEST,
                format!("not a ConversionReview: {e}"),
            )
                .into_response();
        }
    };
    let (uid, to, count) = match &review.request {
        Some(request) => (
            request.uid.clone(),
            request.desired_api_version.clone(),
            request.objects.len(),
        ),
        None => Default::default(),
    };
    let started = Instant::now();
    let slot = tokio::time::timeout(handler.wait, handler.slots.clone().acquire_owned()).await;
    let Ok(Ok(slot)) = slot else {
        return busy(handler, &uid, &to, count);
    };
    let (converter, group) = (handler.converter.clone(), handler.group.clone());
    let answer = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        review::answer(review, &group, &*converter)
    })
    .await;
    let (answer, outcome) = answer.unwrap_or_else(|e| {
        // A panicking converter: still an answer the API server can show.
        let status = Status::failure(&format!("the converter failed: {e}"), FAILED);
        let mut response = ConversionResponse::invalid(status);
        response.uid = uid.clone();
        (response.into_review(), FAILED)
    });
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let failure = answer
        .response
        .as_ref()
        .map(|r| &r.result)
        .filter(|result| result.is_failure());
    match failure {
        Some(result) => {
            tracing::warn!(%uid, %to, count, elapsed_ms, reason = outcome, message = %result.message, "conversion failed");
        }
        None => tracing::debug!(%uid, %to, count, elapsed_ms, "converted"),
    }
    observer(&Outcome {
        result: outcome,
        message: failure.map(|result| result.message.as_str()),
    });
    match serde_json::to_vec(&answer) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Every slot stayed taken for `handler.wait`: HTTP 429 with `Retry-After` and a Status saying so.
fn busy(handler: &Handler, uid: &str, to: &str, count: usize) -> Response {
    let message = format!(
        "the conversion webhook is busy: all {} conversion slots stayed in use for {} ms; retry",
        handler.capacity,
        handler.wait.as_millis()
    );
    tracing::warn!(%uid, %to, count, reason = BUSY, "conversion answered busy");
    (handler.observer)(&Outcome {
        result: BUSY,
        message: Some(&message),
    });
    let status = serde_json::json!({
        "apiVersion": "v1", "kind": "Status", "status": "Failure",
        "message": message, "reason": "TooManyRequests", "code": 429,
        "details": {"retryAfterSeconds": RETRY_AFTER_SECONDS},
    });
    let headers = [
        (header::CONTENT_TYPE, "application/json".to_string()),
        (header::RETRY_AFTER, RETRY_AFTER_SECONDS.to_string()),
    ];
    let body = status.to_string();
    (StatusCode::TOO_MANY_REQUESTS, headers, body).into_response()
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
