//! The HTTPS endpoint the API server calls: `POST /convert` with a ConversionReview, answered by
//! `review::answer` on a blocking thread (the converter runs wasm synchronously). axum's Router over
//! rustls through axum-server, which does the TLS accept loop (handshakes off the accept path, with a
//! timeout) and HTTP/2 or HTTP/1.1 by ALPN.

use std::net::SocketAddr;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;
use kube::core::Status;
use kube::core::conversion::{ConversionResponse, ConversionReview};

use super::review;
use super::{Converter, Observer};

/// Largest ConversionReview accepted: a list of many large objects converted at once.
pub const MAX_BODY_BYTES: usize = 32 << 20;

/// Binds `addr` (port 0 picks a free one) and serves `POST /convert` over TLS with `tls` (reloadable)
/// until the process ends; returns the bound address.
pub fn serve(
    addr: SocketAddr,
    tls: RustlsConfig,
    converter: Converter,
    observer: Observer,
) -> anyhow::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    let app = Router::new()
        .route("/convert", post(convert))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state((converter, observer));
    let server = axum_server::tls_rustls::from_tcp_rustls(listener, tls)?;
    tokio::spawn(async move {
        if let Err(e) = server.serve(app.into_make_service()).await {
            tracing::error!(error = %e, "the conversion webhook stopped");
        }
    });
    Ok(bound)
}

async fn convert(
    State((converter, observer)): State<(Converter, Observer)>,
    body: Bytes,
) -> Response {
    let review: ConversionReview = match serde_json::from_slice(&body) {
        Ok(review) => review,
        Err(e) => {
            tracing::warn!(error = %e, "a request to /convert that is not a ConversionReview");
            observer(review::BAD_REQUEST);
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
    let answer = tokio::task::spawn_blocking(move || review::answer(review, &*converter)).await;
    let (answer, outcome) = answer.unwrap_or_else(|e| {
        // A panicking converter: still an answer the API server can show.
        const FAILED: &str = "ConversionFailed";
        let status = Status::failure(&format!("the converter failed: {e}"), FAILED);
        let mut response = ConversionResponse::invalid(status);
        response.uid = uid.clone();
        (response.into_review(), FAILED)
    });
    let elapsed_ms = started.elapsed().as_millis() as u64;
    match answer.response.as_ref().map(|r| &r.result) {
        Some(result) if result.is_failure() => {
            tracing::warn!(%uid, %to, count, elapsed_ms, message = %result.message, "conversion failed");
        }
        _ => tracing::debug!(%uid, %to, count, elapsed_ms, "converted"),
    }
    observer(outcome);
    match serde_json::to_vec(&answer) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
