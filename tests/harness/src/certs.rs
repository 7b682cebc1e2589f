//! The test cluster's PKI, made fresh for every stack: one CA, the API server's serving certificate
//! for 127.0.0.1/localhost, one client certificate per component identity, and the key that signs
//! service-account tokens.
//!
//! Client certificates carry the user in CN and groups in O, which is how kube-apiserver's x509
//! authenticator maps them: `admin` is in `system:masters`, while the controller manager and the
//! scheduler get their real identities so that RBAC's bootstrap roles apply to them as in a real
//! cluster. All keys are ECDSA P-256 in PKCS#8 PEM, which Go and rustls both read.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A certificate and its key, as files in the cluster directory.
#[derive(Clone, Debug)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Paths of everything the components read.
#[derive(Clone, Debug)]
pub struct Pki {
    /// CA certificate: trusted by every client and used by the API server to verify client certs.
    pub ca_cert: PathBuf,
    /// The API server's serving certificate (127.0.0.1, localhost and the in-cluster names).
    pub serving: CertFiles,
    /// `admin`, group `system:masters`: the tests' client, kubectl and kwok.
    pub admin: CertFiles,
    /// `system:kube-controller-manager`.
    pub controller_manager: CertFiles,
    /// `system:kube-scheduler`.
    pub scheduler: CertFiles,
    /// Private key signing service-account tokens (API server and controller manager).
    pub sa_key: PathBuf,
    /// Its public key, verifying those tokens (API server).
    pub sa_pub: PathBuf,
}

/// Generates the PKI and writes it under `dir/pki`.
pub fn generate(dir: &Path) -> Result<Pki> {
    let dir = dir.join("pki");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, contents: &str| -> Result<PathBuf> {
        let path = dir.join(name);
        fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };

    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "testcluster-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let ca_cert = write("ca.crt", &ca_cert.pem())?;

    let leaf = |name: &str, sans: Vec<String>, cn: &str, groups: &[&str], server: bool| {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(sans)?;
        params.distinguished_name.push(DnType::CommonName, cn);
        for group in groups {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *group);
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![if server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let cert = params.signed_by(&key, &issuer)?;
        anyhow::Ok(CertFiles {
            cert: write(&format!("{name}.crt"), &cert.pem())?,
            key: write(&format!("{name}.key"), &key.serialize_pem())?,
        })
    };

    let serving = leaf(
        "apiserver",
        vec![
            "127.0.0.1".into(),
            "localhost".into(),
            "kubernetes".into(),
            "kubernetes.default".into(),
            "kubernetes.default.svc".into(),
            "kubernetes.default.svc.cluster.local".into(),
            // First address of --service-cluster-ip-range: the `kubernetes` Service's ClusterIP.
            "10.0.0.1".into(),
        ],
        "kube-apiserver",
        &[],
        true,
    )?;
    let admin = leaf("admin", vec![], "admin", &["system:masters"], false)?;
    let controller_manager = leaf(
        "controller-manager",
        vec![],
        "system:kube-controller-manager",
        &[],
        false,
    )?;
    let scheduler = leaf("scheduler", vec![], "system:kube-scheduler", &[], false)?;

    let sa = KeyPair::generate()?;
    let sa_key = write("sa.key", &sa.serialize_pem())?;
    let sa_pub = write("sa.pub", &sa.public_key_pem())?;

    Ok(Pki {
        ca_cert,
        serving,
        admin,
        controller_manager,
        scheduler,
        sa_key,
        sa_pub,
    })
}
