//! The host's API clients: each names this replica in its User-Agent (the API server's audit log then
//! tells replicas apart), and a fenced one refuses writes while this replica may not write.

use http::HeaderValue;
use http::header::USER_AGENT;
use kube::client::ClientBuilder;
use kube::client::retry::RetryPolicy;
use kube::{Client, Config};
use tower::buffer::BufferLayer;
use tower::retry::RetryLayer;

use super::Fence;
use super::fence::FenceLayer;
use super::identity;

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
        .with_layer(&FenceLayer(fence.clone()))
        .with_layer(&RetryLayer::new(RetryPolicy::server_retry()))
        .build())
}
