//! The conversion webhook's flags, turned into `conversion`'s [`WebhookSettings`].

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::conversion::{Certificate, SecretRef, WebhookSettings};

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

impl ConversionArgs {
    /// The webhook the flags ask for, if any (clap has checked that an address comes with a CRD and
    /// one certificate source).
    pub fn webhook(&self) -> Option<WebhookSettings> {
        let addr = self.conversion_webhook_addr?;
        let crd = (self.conversion_crd.clone()).expect("clap requires --conversion-crd");
        let certificate = match (&self.webhook_cert_dir, &self.webhook_cert_secret) {
            (Some(dir), _) => Certificate::Dir(dir.clone()),
            (None, Some(secret)) => Certificate::Secret {
                secret: secret.clone(),
                names: self.webhook_dns_names.clone(),
            },
            (None, None) => unreachable!("clap requires a certificate source"),
        };
        Some(WebhookSettings {
            addr,
            crd,
            certificate,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

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
        assert!(args.webhook().is_none());
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
        let webhook = args.webhook().unwrap();
        assert_eq!(webhook.addr, "0.0.0.0:9443".parse().unwrap());
        assert_eq!(webhook.crd, "myapps.example.com");
        assert!(matches!(webhook.certificate, Certificate::Dir(dir) if dir == Path::new("/certs")));
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
        let Certificate::Secret { secret, names } = args.webhook().unwrap().certificate else {
            panic!("not made and kept in a Secret");
        };
        assert_eq!(secret, "ns/webhook-cert".parse().unwrap());
        assert_eq!(names, ["webhook.ns.svc", "10.0.0.9"]);
    }
}
