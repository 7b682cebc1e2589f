//! The operator's registry flags: credentials, transport, and how often a tag is polled, turned into
//! `source::oci`'s settings.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::source::oci::{Credentials, OciSettings, Transport};

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

/// How the host reaches registries (transport), for every `oci://` source, `push`, and every
/// reconciler of `serve`.
#[derive(Clone, Debug, Default, Args)]
pub struct TransportArgs {
    /// A registry (HOST[:PORT]) reached over plain HTTP instead of HTTPS (repeatable; env:
    /// comma-separated). Only for registries on a trusted network: nothing then protects the module
    /// on the way but its digest.
    #[arg(long, env = "RECONCILE_HOST_OCI_PLAIN_HTTP", value_delimiter = ',')]
    pub oci_plain_http: Vec<String>,
    /// CA certificates (PEM) trusted for registries besides the system's, e.g. a private registry's.
    #[arg(long, env = "RECONCILE_HOST_OCI_CA_FILE")]
    pub oci_ca_file: Option<PathBuf>,
}

impl TransportArgs {
    pub fn transport(&self) -> Transport {
        Transport {
            plain_http: self.oci_plain_http.clone(),
            ca_file: self.oci_ca_file.clone(),
        }
    }
}

/// Settings of every `oci://` module source.
#[derive(Clone, Debug, Args)]
pub struct OciArgs {
    #[command(flatten)]
    pub transport: TransportArgs,
    /// How often a tag is checked for a new digest (e.g. `1m`, `30s`); a digest reference is never
    /// polled.
    #[arg(long, env = "RECONCILE_HOST_OCI_POLL_INTERVAL", default_value = "1m", value_parser = crate::text::parse_period)]
    pub oci_poll_interval: Duration,
}

impl OciArgs {
    pub fn settings(&self) -> OciSettings {
        OciSettings {
            transport: self.transport.transport(),
            poll_interval: self.oci_poll_interval,
        }
    }
}
