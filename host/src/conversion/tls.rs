//! The webhook's serving certificate and the CA the API server trusts it by. Two sources: a directory
//! holding a mounted `kubernetes.io/tls` Secret (cert-manager's, or one the operator made), or a CA and
//! certificate the host makes itself with rcgen and keeps in a Secret, so that every replica and every
//! restart serves under the same CA (the one in the CRD's caBundle).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ResolvesServerCert;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{RootCertStore, ServerConfig};

/// How long a self-made serving certificate (and its CA) is valid.
pub const VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// A self-made certificate that expires sooner than this is replaced at start.
pub const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{what}: {message}")]
    Pem { what: String, message: String },
    #[error("generating the webhook certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("the webhook certificate: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("Secret {secret}: {source}")]
    Api { secret: String, source: kube::Error },
    #[error("Secret {secret}: {message}")]
    Unusable { secret: String, message: String },
}

/// A serving certificate chain, its key, and the CA bundle clients verify it with; all PEM.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    /// The serving certificate, then any intermediates (`tls.crt`).
    pub cert_pem: String,
    /// Its private key (`tls.key`).
    pub key_pem: String,
    /// What the API server trusts (`ca.crt`; the CRD's caBundle).
    pub ca_pem: String,
}

impl Bundle {
    /// A new CA and a serving certificate signed by it for `names` (DNS names or IP addresses), both
    /// valid from now for `validity`.
    pub fn generate(names: &[String], validity: Duration) -> Result<Bundle, TlsError> {
        let now = time::OffsetDateTime::now_utc();
        // A minute of slack for clocks a little behind ours.
        let not_before = now - time::Duration::minutes(1);
        let not_after = now + validity;

        let ca_key = KeyPair::generate()?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.distinguished_name
            .push(DnType::CommonName, "reconcile-host conversion webhook CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        (ca.not_before, ca.not_after) = (not_before, not_after);
        let ca_cert = ca.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca, ca_key);

        let key = KeyPair::generate()?;
        let mut serving = CertificateParams::new(names.to_vec())?;
        let common_name = names.first().map_or("reconcile-host", String::as_str);
        serving
            .distinguished_name
            .push(DnType::CommonName, common_name);
        serving.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        (serving.not_before, serving.not_after) = (not_before, not_after);
        let cert = serving.signed_by(&key, &issuer)?;
        Ok(Bundle {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            ca_pem: ca_cert.pem(),
        })
    }

    /// `tls.crt`, `tls.key` and, if present, `ca.crt` from `dir` (a mounted Secret); without `ca.crt`
    /// the certificate is its own CA bundle (self-signed, or a chain ending in its root).
    pub fn from_dir(dir: &Path) -> Result<Bundle, TlsError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| TlsError::Read {
                path: path.display().to_string(),
                source,
            })
        };
        let cert_pem = read("tls.crt")?;
        let ca_pem = match read("ca.crt") {
            Ok(ca) if !ca.trim().is_empty() => ca,
            Ok(_) => cert_pem.clone(),
            Err(TlsError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                cert_pem.clone()
            }
            Err(e) => return Err(e),
        };
        Ok(Bundle {
            key_pem: read("tls.key")?,
            cert_pem,
            ca_pem,
        })
    }

    /// The rustls configuration that serves this certificate (ring, HTTP/2 and HTTP/1.1 by ALPN);
    /// fails if the key does not match the certificate.
    pub fn server_config(&self) -> Result<ServerConfig, TlsError> {
        let key = Arc::new(self.certified_key()?);
        server_config(Arc::new(SingleCertAndKey::from(key)))
    }

    /// The certificate chain and its signing key, as a resolver hands them to a handshake; fails if
    /// the key does not match the certificate.
    pub fn certified_key(&self) -> Result<CertifiedKey, TlsError> {
        let key =
            PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).map_err(|e| TlsError::Pem {
                what: "tls.key".into(),
                message: e.to_string(),
            })?;
        let chain = certificates("tls.crt", &self.cert_pem)?;
        Ok(CertifiedKey::from_der(chain, key, &provider())?)
    }

    /// Whether a client trusting `ca_pem` accepts the certificate for every one of `names` at time
    /// `at`; the reason if not (a name not covered, expired or not yet valid, a foreign CA).
    pub fn verify(&self, names: &[String], at: SystemTime) -> Result<(), String> {
        let mut roots = RootCertStore::empty();
        for ca in certificates("ca.crt", &self.ca_pem).map_err(|e| e.to_string())? {
            roots.add(ca).map_err(|e| format!("ca.crt: {e}"))?;
        }
        let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| format!("ca.crt: {e}"))?;
        let chain = certificates("tls.crt", &self.cert_pem).map_err(|e| e.to_string())?;
        let (leaf, intermediates) = chain.split_first().expect("certificates() is never empty");
        let since_epoch = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        for name in names {
            let server_name = ServerName::try_from(name.as_str())
                .map_err(|e| format!("`{name}` is not a DNS name or IP address: {e}"))?;
            verifier
                .verify_server_cert(
                    leaf,
                    intermediates,
                    &server_name,
                    &[],
                    UnixTime::since_unix_epoch(since_epoch),
                )
                .map_err(|e| format!("for {name}: {e}"))?;
        }
        Ok(())
    }

    /// Whether a self-made bundle can still be served: it covers `names` now and `RENEW_BEFORE` from
    /// now, and its key matches.
    pub fn still_good(&self, names: &[String], now: SystemTime) -> Result<(), String> {
        self.verify(names, now)?;
        self.verify(names, now + RENEW_BEFORE).map_err(|e| {
            format!(
                "expires within {} days ({e})",
                RENEW_BEFORE.as_secs() / 86_400
            )
        })?;
        self.server_config().map(drop).map_err(|e| e.to_string())
    }
}

/// Every certificate in `pem`; at least one.
pub(crate) fn certificates(
    what: &str,
    pem: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let error = |message: String| TlsError::Pem {
        what: what.to_string(),
        message,
    };
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(e.to_string()))?;
    if certs.is_empty() {
        return Err(error("no PEM certificate".into()));
    }
    Ok(certs)
}

/// A TLS server configuration (ring, HTTP/2 and HTTP/1.1 by ALPN) whose certificate `resolver` picks
/// for each handshake.
pub fn server_config(resolver: Arc<dyn ResolvesServerCert>) -> Result<ServerConfig, TlsError> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// ring, as kube uses: the process pulls in no other provider.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
