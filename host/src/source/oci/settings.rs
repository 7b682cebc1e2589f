//! The operator's settings for registries: how they are reached, and how often a tag is polled.

use std::path::PathBuf;
use std::time::Duration;

/// How the host reaches registries (transport): the operator's decisions, shared by every `oci://`
/// source, `push`, and every reconciler of `serve` (a team cannot turn on plain HTTP).
#[derive(Clone, Debug, Default)]
pub struct Transport {
    /// Registries (HOST[:PORT]) reached over plain HTTP instead of HTTPS: only on a trusted network,
    /// where nothing protects the module on the way but its digest.
    pub plain_http: Vec<String>,
    /// CA certificates (PEM) trusted for registries besides the system's.
    pub ca_file: Option<PathBuf>,
}

/// What every `oci://` module source of one host shares.
#[derive(Clone, Debug)]
pub struct OciSettings {
    pub transport: Transport,
    /// How often a tag is checked for a new digest; a digest reference is never polled.
    pub poll_interval: Duration,
}
