//! How tests reach the cluster: admin and ServiceAccount clients and kubeconfigs, kubectl, and a
//! fresh namespace per test.
//!
//! Clients are built per call, for the caller's tokio runtime; ServiceAccount identities come from
//! the TokenRequest API, exactly as a workload in the cluster would get them, so RBAC applies.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::TestCluster;
use crate::kubeconfig::{self, Credential};

/// Service-account tokens live as long as any test run.
const TOKEN_SECONDS: i64 = 24 * 3600;

impl TestCluster {
    /// An admin client (group `system:masters`) built for the current tokio runtime: kube clients
    /// hold tasks of the runtime they were made on, and every `#[tokio::test]` has its own.
    pub async fn client(&self) -> Result<kube::Client> {
        kubeconfig::client(&self.admin_config).await
    }

    /// The admin kubeconfig file, for kubectl and for processes under test that run as admin.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.admin_kubeconfig
    }

    /// The API server's URL (`https://127.0.0.1:<port>`).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// A client authenticated as ServiceAccount `namespace/name` with a token from the TokenRequest
    /// API, so that tests see exactly what RBAC grants that account. Creates the ServiceAccount if it
    /// does not exist yet.
    pub async fn service_account_client(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<kube::Client> {
        let config = self.service_account_config(namespace, name).await?;
        kubeconfig::client(&config).await
    }

    /// Writes a kubeconfig for ServiceAccount `namespace/name` (token via TokenRequest, valid 24 h)
    /// into the cluster dir and returns its path: the host under test runs as a separate process
    /// with the identity its manifests give it. Creates the ServiceAccount if it does not exist yet.
    pub async fn service_account_kubeconfig(&self, namespace: &str, name: &str) -> Result<PathBuf> {
        let config = self.service_account_config(namespace, name).await?;
        let path = self.dir().join(format!("sa-{namespace}-{name}.kubeconfig"));
        kubeconfig::write(&path, &config)
    }

    async fn service_account_config(&self, namespace: &str, name: &str) -> Result<Value> {
        let client = self.client().await?;
        let accounts: Api<ServiceAccount> = Api::namespaced(client, namespace);
        let account: ServiceAccount = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": { "name": name, "namespace": namespace },
        }))?;
        match accounts.create(&PostParams::default(), &account).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(e) => {
                return Err(e).context(format!("creating ServiceAccount {namespace}/{name}"));
            }
        }
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(TOKEN_SECONDS),
                ..Default::default()
            }),
            ..Default::default()
        };
        let response = accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .with_context(|| format!("TokenRequest for ServiceAccount {namespace}/{name}"))?;
        let token = response
            .status
            .and_then(|s| s.token)
            .ok_or_else(|| anyhow!("TokenRequest for {namespace}/{name} returned no token"))?;
        let user = format!("system:serviceaccount:{namespace}:{name}");
        Ok(kubeconfig::build(
            &self.server,
            &self.pki.ca_cert,
            &user,
            Credential::Token(&token),
        ))
    }

    /// kubectl with `--kubeconfig` set to the admin kubeconfig (and its discovery cache in the
    /// cluster dir, not in `~/.kube`), for tests that apply manifests the way users do.
    pub fn kubectl(&self) -> std::process::Command {
        let mut command = std::process::Command::new(self.bin_dir.join("kubectl"));
        command
            .env("KUBECACHEDIR", self.dir().join("kubectl-cache"))
            .arg("--kubeconfig")
            .arg(&self.admin_kubeconfig);
        command
    }

    /// Creates a namespace named `<prefix>-<unique suffix>` and waits for its `default`
    /// ServiceAccount, without which the API server refuses Pods there. Tests sharing a cluster
    /// isolate themselves this way.
    pub async fn namespace(&self, prefix: &str) -> Result<String> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!("{}-{n}-{:04x}", dns_label_prefix(prefix), nanos & 0xffff);

        let client = self.client().await?;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let namespace: Namespace = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": { "name": name },
        }))?;
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        let accounts: Api<ServiceAccount> = Api::namespaced(client, &name);
        let deadline = Instant::now() + Duration::from_secs(60);
        while accounts.get_opt("default").await?.is_none() {
            if Instant::now() > deadline {
                bail!("namespace {name} got no default ServiceAccount within 60 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(name)
    }
}

/// Lower-case alphanumerics and dashes, at most 40 characters, so that the namespace is a DNS label.
fn dns_label_prefix(prefix: &str) -> String {
    let cleaned: String = prefix
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    let trimmed = cleaned.trim_matches('-');
    if trimmed.is_empty() {
        "test".to_owned()
    } else {
        trimmed.to_owned()
    }
}
