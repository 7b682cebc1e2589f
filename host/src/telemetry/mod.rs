//! What the host tells operators: logs (`logging`), Prometheus metrics (`families`, recorded through
//! `metrics`), Kubernetes Events (`events`), and the health, readiness and metrics endpoints (`server`).

mod events;
mod families;
mod logging;
mod metrics;
mod server;

pub use events::Recorder;
pub use logging::{LogFormat, init_logging};
pub use metrics::Metrics;
pub use server::{Health, serve};
