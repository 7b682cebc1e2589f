//! The host's API clients: each names this replica in its User-Agent (the API server's audit log then
//! tells replicas apart), and a fenced one refuses writes while this replica may not write and counts
//! the API server's throttling (429) answers, each retried attempt too.

use http::header::USER_AGENT;
use http::{HeaderValue, Response, StatusCode};
use kube::client::ClientBuilder;
use kube::client::retry::RetryPolicy;
use kube::{Client, Config};
use tower::buffer::BufferLayer;
use tower::retry::RetryLayer;
use tower::util::MapResponseLayer;

use super::Fence;
use super::fence::FenceLayer;
use super::identity;
use crate::telemetry::Metrics;

/// Requests a fenced client queues before its retries (a watch holds no slot once it is answered).
const QUEUE: usize = 1024;

/// A client on `config`, named for this replica; with a fence, its writes pass only while the fence
/// admits them.
pub fn connect(mut config: Config, fence: Option<&Fence>) -> kube::Result<Client> {
    let agent = format!(
        "reconcile-host/{} ({})",
        env!("CARGO_PKG_VERSION"),
        identity()
    );
    if let Ok(agent) = HeaderValue::from_str(&agent) {
        config.headers.push((USER_AGENT, agent));
    }
    let Some(fence) = fence else {
        return Client::try_from(config);
    };
    // kube retries throttled and unavailable answers (429, 503, 504) inside its stack, for up to many
    // minutes: the fence must sit inside the retries, or a write admitted once could go out long after
    // the fence closed. So its retries are rebuilt outside the fence (a buffer makes the stack Clone,
    // which retrying needs).
    config.default_retry = false;
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&BufferLayer::new(QUEUE))
        .with_layer(&MapResponseLayer::new(count_throttled(fence.metrics())))
        .with_layer(&FenceLayer(fence.clone()))
        .with_layer(&RetryLayer::new(RetryPolicy::server_retry()))
        .build())
}

/// Counts each 429 answer in `metrics`: the API server's Priority and Fairness turning requests away
/// (kube's retries then back off, honouring its Retry-After).
fn count_throttled<B>(metrics: Option<Metrics>) -> impl Fn(Response<B>) -> Response<B> + Clone {
    move |response| {
        if response.status() == StatusCode::TOO_MANY_REQUESTS
            && let Some(metrics) = &metrics
        {
            metrics.api_throttled();
        }
        response
    }
}
