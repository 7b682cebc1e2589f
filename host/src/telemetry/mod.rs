//! What the host tells operators: logs (`logging`), Prometheus metrics (`families`, recorded through
//! `metrics`), and the health, readiness and metrics endpoints (`server`).

mod families;
mod logging;
mod metrics;
mod server;

pub use logging::init_logging;
pub use metrics::Metrics;
pub use server::{Health, serve};
