//! The operator's flags for registries: credentials, transport, and how often a tag is polled.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::credentials::Credentials;

/// The operator's registry credentials (`run` and `push`; not `serve`, where each reconciler names its
/// own pull Secret and the host lends its credentials to no team).
#[derive(Clone, Debug, Default, Args)]
pub struct CredentialsArgs {
    /// Registry credentials: a dockerconfigjson file (`.dockerconfigjson` of a mounted Secret of type
    /// kubernetes.io/dockerconfigjson, or a `~/.docker/config.json`); read again before each pull, so a
    /// rotated Secret is picked up.
    #[arg(long, env = "RECONCILE_HOST_OCI_CREDENTIALS")]
    pub oci_credentials: Option<PathBuf>,
}

impl CredentialsArgs {
    pub fn credentials(&self) -> Credentials {
        Credentials::file(self.oci_credentials.as_deref())
    }
}

/// How the host reaches registries (transport): the operator's decisions, shared by every `oci://`
/// source, `push`, and every reconciler of `serve` (a team cannot turn on plain HTTP).
#[derive(Clone, Debug, Default, Args)]
pub struct RegistryArgs {
    /// A registry (HOST[:PORT]) reached over plain HTTP instead of HTTPS (repeatable; env:
    /// comma-separated). Only for registries on a trusted network: nothing then protects the module
    /// on the way but its digest.
    #[arg(long, env = "RECONCILE_HOST_OCI_PLAIN_HTTP", value_delimiter = ',')]
    pub oci_plain_http: Vec<String>,
    /// CA certificates (PEM) trusted for registries besides the system's, e.g. a private registry's.
    #[arg(long, env = "RECONCILE_HOST_OCI_CA_FILE")]
    pub oci_ca_file: Option<PathBuf>,
}

/// Settings of an `oci://` module source.
#[derive(Clone, Debug, Args)]
pub struct OciArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// How often a tag is checked for a new digest (e.g. `1m`, `30s`); a digest reference is never
    /// polled.
    #[arg(long, env = "RECONCILE_HOST_OCI_POLL_INTERVAL", default_value = "1m", value_parser = crate::text::parse_period)]
    pub oci_poll_interval: Duration,
}
