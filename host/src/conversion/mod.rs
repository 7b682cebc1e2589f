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
use clap::Args;
use tokio::sync::watch;

pub use converter::{Converter, Observer, Outcome};
pub use events::CrdEvents;
pub use reload::CertSource;
pub use review::{ConvertFn, ObjectError, answer, crd_group};
pub use secret::SecretRef;
pub use server::Handler;
pub use tls::{Bundle, TlsError};

/// The conversion webhook's flags; without `--conversion-webhook-addr` there is no webhook.
#[derive(Clone, Debug, Args)]
#[command(group(
    clap::ArgGroup::new("webhook-cert")
        .args(["webhook_cert_dir", "webhook_cert_secret"])
        .multiple(false)
))]
pub struct ConversionArgs {
    /// Serve the parent CRD's conversion webhook (`POST /convert`, HTTPS) on this address
    /// (port 0: any free port, logged).
    #[arg(
        long,
        env = "RECONCILE_HOST_CONVERSION_WEBHOOK_ADDR",
        requires_all = ["conversion_crd", "webhook-cert"]
    )]
    pub conversion_webhook_addr: Option<SocketAddr>,
    /// The CustomResourceDefinition whose caBundle the host sets, e.g. myapps.example.com. Its
    /// manifest declares `conversion: {strategy: Webhook, webhook: ...}` (service or url).
    #[arg(long, env = "RECONCILE_HOST_CONVERSION_CRD")]
    pub conversion_crd: Option<String>,
    /// The serving certificate from a directory with `tls.crt`, `tls.key` and optional `ca.crt` (a
    /// mounted `kubernetes.io/tls` Secret, e.g. cert-manager's); the CA bundle is `ca.crt`, else
    /// `tls.crt`.
    #[arg(long, env = "RECONCILE_HOST_WEBHOOK_CERT_DIR")]
    pub webhook_cert_dir: Option<PathBuf>,
    /// Make a CA and serving certificate and keep them in this Secret, NAMESPACE/NAME, shared by every
    /// replica and restart; remade when expiring within 30 days or not covering the names.
    #[arg(long, env = "RECONCILE_HOST_WEBHOOK_CERT_SECRET")]
    pub webhook_cert_secret: Option<SecretRef>,
    /// A DNS name or IP address of the self-made certificate, e.g. the Service's
    /// `NAME.NAMESPACE.svc` (repeatable; env: comma-separated).
    #[arg(
        long = "webhook-dns-name",
        env = "RECONCILE_HOST_WEBHOOK_DNS_NAMES",
        value_delimiter = ',',
        default_values = ["localhost", "127.0.0.1"]
    )]
    pub webhook_dns_names: Vec<String>,
}

/// Starts the conversion webhook if `args` ask for one: loads or makes the certificate, applies the
/// caBundle to the CRD (and keeps it there), and serves at most `slots` reviews at once, reloading
/// the certificate when it changes. Returns the bound address, or `None` when no webhook was asked for.
pub async fn start(
    args: &ConversionArgs,
    client: kube::Client,
    converter: Converter,
    observer: Observer,
    slots: usize,
) -> anyhow::Result<Option<SocketAddr>> {
    let Some(addr) = args.conversion_webhook_addr else {
        return Ok(None);
    };
    let crd = args
        .conversion_crd
        .clone()
        .ok_or_else(|| anyhow::anyhow!("--conversion-webhook-addr needs --conversion-crd"))?;
    let source = match (&args.webhook_cert_dir, &args.webhook_cert_secret) {
        (Some(dir), _) => CertSource::Dir(dir.clone()),
        (None, Some(secret)) => CertSource::Secret {
            client: client.clone(),
            secret: secret.clone(),
            names: args.webhook_dns_names.clone(),
        },
        (None, None) => anyhow::bail!(
            "--conversion-webhook-addr needs --webhook-cert-dir or --webhook-cert-secret"
        ),
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
    let bound = server::serve(addr, tls.clone(), handler)?;
    tokio::spawn(reload::follow(source, bundle, tls, ca, reload::REFRESH));
    tracing::info!(%bound, %crd, "serving the conversion webhook");
    Ok(Some(bound))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        conversion: ConversionArgs,
    }

    fn parse(args: &[&str]) -> Result<ConversionArgs, clap::Error> {
        let argv = std::iter::once("reconcile-host").chain(args.iter().copied());
        Cli::try_parse_from(argv).map(|cli| cli.conversion)
    }

    #[test]
    fn no_address_no_webhook_and_nothing_else_required() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.conversion_webhook_addr, None);
        assert_eq!(args.webhook_dns_names, ["localhost", "127.0.0.1"]);
    }

    #[test]
    fn an_address_needs_a_crd_and_exactly_one_certificate_source() {
        let addr = ["--conversion-webhook-addr", "0.0.0.0:9443"];
        let crd = ["--conversion-crd", "myapps.example.com"];
        let secret = ["--webhook-cert-secret", "ns/webhook-cert"];
        let dir = ["--webhook-cert-dir", "/certs"];
        assert!(parse(&[addr.as_slice(), &secret].concat()).is_err());
        assert!(parse(&[addr.as_slice(), &crd].concat()).is_err());
        assert!(parse(&[addr.as_slice(), &crd, &secret, &dir].concat()).is_err());
        let args = parse(&[addr.as_slice(), &crd, &dir].concat()).unwrap();
        assert_eq!(args.webhook_cert_dir, Some(PathBuf::from("/certs")));
        let args = parse(
            &[
                addr.as_slice(),
                &crd,
                &secret,
                &[
                    "--webhook-dns-name",
                    "webhook.ns.svc",
                    "--webhook-dns-name",
                    "10.0.0.9",
                ],
            ]
            .concat(),
        )
        .unwrap();
        assert_eq!(
            args.webhook_cert_secret,
            Some("ns/webhook-cert".parse().unwrap())
        );
        assert_eq!(args.webhook_dns_names, ["webhook.ns.svc", "10.0.0.9"]);
    }
}
