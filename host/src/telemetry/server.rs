//! The HTTP endpoints for the kubelet and Prometheus: `/healthz` (the process serves), `/readyz` (caches
//! synced and a module loaded) and `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use super::Metrics;

/// Readiness, flipped by the controller once its caches have synced with a module loaded.
#[derive(Default)]
pub struct Health {
    ready: AtomicBool,
}

impl Health {
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }
}

/// Binds `addr` (port 0 picks a free one) and serves until the process ends; returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    health: Arc<Health>,
    metrics: Metrics,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(health): State<Arc<Health>>| async move {
                if health.ready.load(Ordering::Relaxed) {
                    (StatusCode::OK, "ready")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "caches not synced yet")
                }
            }),
        )
        .with_state(health)
        .route(
            "/metrics",
            get(|State(metrics): State<Metrics>| async move {
                (
                    [(
                        "content-type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    metrics.encode(),
                )
            }),
        )
        .with_state(metrics);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the metrics server stopped");
        }
    });
    Ok(bound)
}
