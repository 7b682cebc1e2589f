//! Kubeconfig files for the components, kubectl, the tests and the host under test.
//!
//! They are written as JSON (a subset of YAML, read by client-go and kube-rs alike) and refer to the
//! certificate files by absolute path, so they stay valid exactly as long as the cluster directory.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

use crate::certs::CertFiles;

/// How a kubeconfig's user authenticates.
pub enum Credential<'a> {
    /// x509 client certificate (admin and the control-plane components).
    ClientCert(&'a CertFiles),
    /// Bearer token (service accounts, from a TokenRequest).
    Token(&'a str),
}

/// Builds a single-context kubeconfig for `user` against `server`, trusting `ca`.
pub fn build(server: &str, ca: &Path, user: &str, credential: Credential<'_>) -> Value {
    let user_entry = match credential {
        Credential::ClientCert(files) => json!({
            "client-certificate": files.cert,
            "client-key": files.key,
        }),
        Credential::Token(token) => json!({ "token": token }),
    };
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "testcluster",
            "cluster": { "server": server, "certificate-authority": ca },
        }],
        "users": [{ "name": user, "user": user_entry }],
        "contexts": [{
            "name": user,
            "context": { "cluster": "testcluster", "user": user },
        }],
        "current-context": user,
    })
}

/// Writes a kubeconfig to `path` (mode 0600: it may hold a token).
pub fn write(path: &Path, config: &Value) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(serde_json::to_string_pretty(config)?.as_bytes())?;
    Ok(path.to_path_buf())
}

/// A kube client for the current tokio runtime (clients hold runtime-bound tasks, so none is shared).
pub async fn client(config: &Value) -> Result<kube::Client> {
    install_crypto_provider();
    let kubeconfig = Kubeconfig::from_yaml(&config.to_string()).context("parsing kubeconfig")?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("loading kubeconfig")?;
    kube::Client::try_from(config).context("building kube client")
}

/// kube's `rustls-tls` feature leaves the crypto provider to the application: use ring's.
fn install_crypto_provider() {
    // Fails only when a provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
