//! The CRD conversion webhook for the parent kind, backed by the guest's `convert` export.
//!
//! The data flow: at start, `tls` loads the serving certificate from a mounted Secret, or makes a CA
//! and certificate and keeps them in a Secret (`secret`) shared by every replica; `ca_bundle` puts that
//! CA into the CRD's `spec.conversion.webhook.clientConfig.caBundle` and keeps it there; `server`
//! serves `POST /convert` over TLS; `reload` reads the certificate again every minute and serves a
//! renewed one (its CA going to `ca_bundle`). For each ConversionReview the API server sends, `review` calls the
//! converter once per object and checks each answer (an object, in the desired apiVersion, with the
//! same kind, name, namespace, uid, labels, ownerReferences, finalizers and annotations but the CRD
//! group's): one failure fails the whole review with a message naming the object and the field, which
//! the API server passes on to the client that read the object. `server` runs at most as many reviews
//! at once as it has guest instances for, and answers a retryable "busy" beyond them; `events` tells a
//! failed review on the CRD.
//!
//! The converter is a plain function so that this module knows nothing of wasm: the host wraps the
//! guest's `convert(object, to-api-version) -> result<string, string>` in it.

pub mod ca_bundle;
pub mod converter;
pub mod events;
pub mod reload;
pub mod review;
pub mod secret;
pub mod server;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum_server::tls_rustls::RustlsConfig;
use tokio::sync::watch;

pub use converter::{Converter, Observer, Outcome};
pub use events::CrdEvents;
pub use reload::CertSource;
pub use review::{ConvertFn, ObjectError, answer, crd_group};
pub use secret::SecretRef;
pub use server::Handler;
pub use tls::{Bundle, TlsError};

/// The conversion webhook, as the operator configures it (`run`'s `--conversion-webhook-addr` and
/// the flags beside it).
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    /// Where to serve `POST /convert` over HTTPS (port 0: any free port, logged).
    pub addr: SocketAddr,
    /// The CustomResourceDefinition whose caBundle the host sets, `<plural>.<group>`.
    pub crd: String,
    pub certificate: Certificate,
}

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
pub enum Certificate {
    /// A directory with `tls.crt`, `tls.key` and optional `ca.crt` (a mounted `kubernetes.io/tls`
    /// Secret); the CA bundle is `ca.crt`, else `tls.crt`.
    Dir(PathBuf),
    /// A CA and serving certificate the host makes for `names` (DNS names or IP addresses) and keeps
    /// in `secret`, shared by every replica and restart.
    Secret {
        secret: SecretRef,
        names: Vec<String>,
    },
}

/// Starts the conversion webhook: loads or makes the certificate, applies the caBundle to the CRD
/// (and keeps it there), and serves at most `slots` reviews at once, reloading the certificate when it
/// changes. Returns the bound address.
pub async fn start(
    settings: &WebhookSettings,
    client: kube::Client,
    converter: Converter,
    observer: Observer,
    slots: usize,
) -> anyhow::Result<SocketAddr> {
    let crd = settings.crd.clone();
    let source = match &settings.certificate {
        Certificate::Dir(dir) => CertSource::Dir(dir.clone()),
        Certificate::Secret { secret, names } => CertSource::Secret {
            client: client.clone(),
            secret: secret.clone(),
            names: names.clone(),
        },
    };
    let bundle = source.load().await?;
    let tls = RustlsConfig::from_config(Arc::new(bundle.server_config()?));
    ca_bundle::ensure(client.clone(), &crd, &bundle.ca_pem).await?;
    let (ca, ca_changes) = watch::channel(bundle.ca_pem.clone());
    tokio::spawn(ca_bundle::keep(client, crd.clone(), ca_changes));
    // The group whose annotations the converter may change: from the CRD's name, which the API server
    // makes `<plural>.<group>`, not from the objects of a review, which anyone reaching the port sends.
    let group = crd_group(&crd)
        .ok_or_else(|| anyhow::anyhow!("--conversion-crd {crd} is not <plural>.<group>"))?;
    let handler = Handler::new(converter, observer, group, slots);
    let bound = server::serve(settings.addr, tls.clone(), handler)?;
    tokio::spawn(reload::follow(source, bundle, tls, ca, reload::REFRESH));
    tracing::info!(%bound, %crd, "serving the conversion webhook");
    Ok(bound)
}
