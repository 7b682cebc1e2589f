//! What the host tells operators: logs (`logging`), Prometheus metrics (`metrics`), and the health,
//! readiness and metrics endpoints (`server`).

mod logging;
mod metrics;
mod server;

pub use logging::init_logging;
pub use metrics::Metrics;
pub use server::{Health, serve};
