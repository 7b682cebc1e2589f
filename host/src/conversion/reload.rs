//! The certificate while the host runs: cert-manager renews a mounted Secret (by default at two thirds
//! of a 90-day life), and a self-made certificate is remade 30 days before it expires, by whichever
//! replica sees it first. Every replica reloads its source each `REFRESH`; when the bundle changed, it
//! serves the new certificate from the next handshake on and sends the new CA to `ca_bundle::keep`.
//! Where the certificate is served is a `Serving`: `run`'s one TLS configuration, or one route of
//! `serve`'s shared port (`routes`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;
use tokio::sync::watch;

use super::secret::{SecretRef, from_secret};
use super::tls::{Bundle, TlsError};

/// How often the certificate's source is read again.
pub const REFRESH: Duration = Duration::from_secs(60);

/// Where the serving certificate comes from.
#[derive(Clone)]
pub enum CertSource {
    /// A mounted `kubernetes.io/tls` Secret (`--webhook-cert-dir`).
    Dir(PathBuf),
    /// Self-made and kept in a Secret (`--webhook-cert-secret`), covering `names`.
    Secret {
        client: kube::Client,
        secret: SecretRef,
        names: Vec<String>,
    },
}

impl std::fmt::Display for CertSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CertSource::Dir(dir) => write!(f, "directory {}", dir.display()),
            CertSource::Secret { secret, .. } => write!(f, "Secret {secret}"),
        }
    }
}

impl CertSource {
    /// The current bundle; for a Secret, made or remade first if it must be.
    pub async fn load(&self) -> Result<Bundle, TlsError> {
        match self {
            CertSource::Dir(dir) => Bundle::from_dir(dir),
            CertSource::Secret {
                client,
                secret,
                names,
            } => from_secret(client.clone(), secret, names).await,
        }
    }
}

/// Where a certificate is served from: each new bundle is handed to it.
pub trait Serving: Send + Sync + 'static {
    /// Serves `bundle` from the next handshake on; fails (and the old one stays) if it cannot be.
    fn serve(&self, bundle: &Bundle) -> Result<(), TlsError>;
}

/// `run`'s webhook: one certificate for the whole port.
impl Serving for RustlsConfig {
    fn serve(&self, bundle: &Bundle) -> Result<(), TlsError> {
        self.reload_from_config(Arc::new(bundle.server_config()?));
        Ok(())
    }
}

/// Reloads `source` every `period` until the process ends; a changed bundle goes to `serving` and its
/// CA into `ca`. A bundle that fails to load or to be served is logged and skipped: the webhook keeps
/// serving the last good one.
pub async fn follow(
    source: CertSource,
    mut current: Bundle,
    serving: impl Serving,
    ca: watch::Sender<String>,
    period: Duration,
) {
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let bundle = match source.load().await {
            Ok(bundle) if bundle == current => continue,
            Ok(bundle) => bundle,
            Err(e) => {
                tracing::warn!(%source, error = %e, "reloading the webhook certificate");
                continue;
            }
        };
        if let Err(e) = serving.serve(&bundle) {
            tracing::warn!(%source, error = %e, "the new webhook certificate cannot be served");
            continue;
        }
        tracing::info!(%source, "serving a new webhook certificate");
        if bundle.ca_pem != current.ca_pem {
            ca.send_replace(bundle.ca_pem.clone());
        }
        current = bundle;
    }
}
