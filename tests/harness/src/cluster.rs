//! [`TestCluster`]: starting the stack in order, waiting until it works, reporting on it, stopping it.
//!
//! The cluster holds no tokio object (clients are built per call, see `access.rs`), so one cluster
//! serves tests that each run their own runtime (see [`TestCluster::shared`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::api::{Api, PostParams};
use serde_json::Value;

use crate::binaries;
use crate::certs::{self, Pki};
use crate::components::{self, Layout};
use crate::kubeconfig::{self, Credential};
use crate::ports::free_port;
use crate::process::{self, Component};

/// How long start-up may take before giving up (a cold API server on 2 busy cores needs ~20 s).
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
/// faking one node. Dropping it stops every component and deletes its directory.
pub struct TestCluster {
    /// Components in start order; stopped in reverse.
    components: Mutex<Vec<Component>>,
    pub(crate) bin_dir: PathBuf,
    pub(crate) server: String,
    pub(crate) pki: Pki,
    pub(crate) admin_kubeconfig: PathBuf,
    pub(crate) admin_config: Value,
    /// The API server's flags, to start it again the same way (`restart_apiserver`).
    pub(crate) apiserver_args: Vec<String>,
    pub(crate) etcd_args: Vec<String>,
    /// etcd's client address (`127.0.0.1:<port>`), for `compact_etcd`.
    pub(crate) etcd_client: String,
    started_in: Duration,
    /// Last so that it is deleted after the components are stopped (fields drop in order).
    dir: tempfile::TempDir,
}

/// Resident memory of one component, from `/proc/<pid>/status`.
#[derive(Clone, Debug)]
pub struct ComponentMemory {
    pub name: &'static str,
    /// Resident now (`VmRSS`), KiB.
    pub rss_kib: u64,
    /// Highest resident so far (`VmHWM`), KiB.
    pub peak_rss_kib: u64,
}

/// What a test may change in how the cluster is started; the default is what every shared cluster
/// runs.
#[derive(Clone, Debug, Default)]
pub struct ClusterOptions {
    apiserver_args: Vec<String>,
}

impl ClusterOptions {
    /// Adds a kube-apiserver flag, after the harness's own (so that it wins over one of them).
    pub fn apiserver_arg(mut self, arg: impl Into<String>) -> Self {
        self.apiserver_args.push(arg.into());
        self
    }
}

/// Prefix of cluster directories in the temp dir, followed by the pid owning them.
const DIR_PREFIX: &str = "testcluster-";

impl TestCluster {
    /// Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (one fake node)
    /// on free loopback ports in a fresh temp dir; returns once `/readyz` answers, the kwok node is
    /// Ready and the `default` namespace has its ServiceAccount (so the controllers are running).
    /// Retries twice when a port picked as free was taken before the component bound it.
    pub async fn start() -> Result<TestCluster> {
        Self::start_with(ClusterOptions::default()).await
    }

    /// Like [`TestCluster::start`], with `options`: for a test that needs a control plane configured
    /// unlike the shared ones (it then owns the cluster, stopped when dropped).
    pub async fn start_with(options: ClusterOptions) -> Result<TestCluster> {
        let mut attempt = 1;
        loop {
            match Self::start_once(&options).await {
                Ok(cluster) => return Ok(cluster),
                Err(e) if attempt < 3 && format!("{e:#}").contains("address already in use") => {
                    tracing::warn!("test cluster start hit a port race, retrying: {e:#}");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn start_once(options: &ClusterOptions) -> Result<TestCluster> {
        let started = Instant::now();
        let bin_dir = tokio::task::spawn_blocking(binaries::bin_dir).await??;
        sweep_stale_dirs();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
            .tempdir()
            .context("creating the cluster directory")?;
        let pki = certs::generate(dir.path())?;
        let apiserver_port = free_port()?;
        let server = format!("https://127.0.0.1:{apiserver_port}");
        let layout = Layout {
            dir: dir.path(),
            pki: &pki,
            etcd_client_port: free_port()?,
            etcd_peer_port: free_port()?,
            apiserver_port,
        };

        let kubeconfig_for = |name: &str, user: &str, cert| -> Result<(PathBuf, Value)> {
            let config =
                kubeconfig::build(&server, &pki.ca_cert, user, Credential::ClientCert(cert));
            let path = dir.path().join(format!("{name}.kubeconfig"));
            Ok((kubeconfig::write(&path, &config)?, config))
        };
        let (admin_kubeconfig, admin_config) = kubeconfig_for("admin", "admin", &pki.admin)?;
        let (kcm_kubeconfig, _) = kubeconfig_for(
            "controller-manager",
            "system:kube-controller-manager",
            &pki.controller_manager,
        )?;
        let (scheduler_kubeconfig, _) =
            kubeconfig_for("scheduler", "system:kube-scheduler", &pki.scheduler)?;
        let kwok_config = layout.kwok_config_path();
        std::fs::write(&kwok_config, components::KWOK_STAGES)?;
        std::fs::write(layout.audit_policy_path(), components::AUDIT_POLICY)?;

        let etcd_args = layout.etcd();
        let mut apiserver_args = layout.apiserver();
        apiserver_args.extend(options.apiserver_args.iter().cloned());
        let kcm_args = layout.controller_manager(&kcm_kubeconfig);
        let scheduler_args = layout.scheduler(&scheduler_kubeconfig);
        // kwok acts for the nodes, deleting pods and writing their status: it gets the admin identity.
        let kwok_args = layout.kwok(&admin_kubeconfig, &kwok_config);
        let etcd_client_port = layout.etcd_client_port;

        let mut cluster = TestCluster {
            components: Mutex::new(Vec::new()),
            bin_dir,
            server,
            pki,
            admin_kubeconfig,
            admin_config,
            apiserver_args: apiserver_args.clone(),
            etcd_args: etcd_args.clone(),
            etcd_client: format!("127.0.0.1:{etcd_client_port}"),
            started_in: Duration::ZERO,
            dir,
        };
        let deadline = started + START_TIMEOUT;

        cluster.spawn("etcd", &etcd_args)?;
        cluster
            .wait_until("etcd to accept connections", deadline, async || {
                tokio::net::TcpStream::connect(("127.0.0.1", etcd_client_port))
                    .await
                    .is_ok()
            })
            .await?;

        cluster.spawn("kube-apiserver", &apiserver_args)?;
        let client = cluster.client().await?;
        cluster
            .wait_until("kube-apiserver /readyz", deadline, async || {
                apiserver_ready(&client).await
            })
            .await?;

        cluster.spawn("kube-controller-manager", &kcm_args)?;
        cluster.spawn("kube-scheduler", &scheduler_args)?;
        cluster.spawn_with_env("kwok", &kwok_args, &[("HOME", cluster.dir())])?;

        let nodes: Api<Node> = Api::all(client.clone());
        let node: Node = serde_json::from_value(components::node())?;
        nodes
            .create(&PostParams::default(), &node)
            .await
            .context("creating the kwok node")?;
        cluster
            .wait_until("the kwok node to be Ready", deadline, async || {
                nodes
                    .get(components::NODE_NAME)
                    .await
                    .is_ok_and(|n| node_ready(&n))
            })
            .await?;

        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
        cluster
            .wait_until(
                "the default ServiceAccount (kube-controller-manager)",
                deadline,
                async || accounts.get_opt("default").await.is_ok_and(|a| a.is_some()),
            )
            .await?;

        let started_in = started.elapsed();
        tracing::info!(
            "test cluster up in {:.1} s at {} (dir {})",
            started_in.as_secs_f64(),
            cluster.server,
            cluster.dir().display()
        );
        cluster.started_in = started_in;
        Ok(cluster)
    }

    fn spawn(&self, name: &'static str, args: &[String]) -> Result<()> {
        self.spawn_with_env(name, args, &[])
    }

    fn spawn_with_env(
        &self,
        name: &'static str,
        args: &[String],
        env: &[(&str, &Path)],
    ) -> Result<()> {
        let component = Component::spawn(name, &self.bin_dir.join(name), args, env, self.dir())?;
        self.lock().push(component);
        Ok(())
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Component>> {
        self.components.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fails with the component's log when one has exited (they all run until stopped).
    fn check_alive(&self) -> Result<()> {
        let mut components = self.lock();
        for component in components.iter_mut() {
            if let Some(status) = component.exited() {
                bail!(
                    "{} exited during start-up with {status}; last lines of {}:\n{}",
                    component.name,
                    component.log.display(),
                    component.log_tail(40)
                );
            }
        }
        Ok(())
    }

    /// Polls `ready` until it holds, a component dies, or the deadline passes.
    pub(crate) async fn wait_until(
        &self,
        what: &str,
        deadline: Instant,
        mut ready: impl AsyncFnMut() -> bool,
    ) -> Result<()> {
        loop {
            self.check_alive()?;
            if ready().await {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "timed out waiting for {what}; component logs:\n{}",
                    self.log_tails(20)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The cluster directory: PKI, kubeconfigs, etcd data and one log file per component.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// How long [`TestCluster::start`] took, for reports and benchmarks.
    pub fn startup_duration(&self) -> Duration {
        self.started_in
    }

    /// The last `lines` lines of each component's log, headed by its name and path: what to look at
    /// when a test against the cluster fails.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for component in self.lock().iter() {
            out.push_str(&format!(
                "==> {} ({}) <==\n{}\n",
                component.name,
                component.log.display(),
                component.log_tail(lines)
            ));
        }
        out
    }

    /// Process ids of the components, by name: to check that none outlives the cluster.
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        self.lock().iter().map(|c| (c.name, c.pid())).collect()
    }

    /// Memory of each component, to keep the stack's cost visible in reports and benchmarks.
    pub fn memory(&self) -> Vec<ComponentMemory> {
        self.lock()
            .iter()
            .map(|c| {
                let (rss_kib, peak_rss_kib) = c.memory_kib();
                ComponentMemory {
                    name: c.name,
                    rss_kib,
                    peak_rss_kib,
                }
            })
            .collect()
    }

    /// CPU time each of the control plane's processes (etcd, the API server, the controllers, kwok)
    /// has used so far, in seconds.
    pub fn cpu_seconds(&self) -> Vec<(&'static str, f64)> {
        self.lock()
            .iter()
            .map(|c| (c.name, c.cpu_seconds()))
            .collect()
    }

    /// Stops the components in reverse start order: SIGTERM, then SIGKILL after a grace period.
    /// etcd goes last so that the API server can shut down cleanly.
    fn stop(&self) {
        let mut components = self.lock();
        let first_after_etcd = 1.min(components.len());
        let (etcd, rest) = components.split_at_mut(first_after_etcd);
        for component in rest.iter_mut().rev() {
            component.terminate();
        }
        for component in rest.iter_mut().rev() {
            component.wait_or_kill(Duration::from_secs(10));
        }
        for component in etcd {
            component.terminate();
            component.wait_or_kill(Duration::from_secs(5));
        }
    }

    /// Kills everything at once and deletes the directory: for process exit, where the shared
    /// cluster is never dropped and nothing may block.
    pub(crate) fn kill_at_exit(&self) {
        if let Ok(mut components) = self.components.try_lock() {
            for component in components.iter_mut() {
                component.kill();
            }
            let _ = std::fs::remove_dir_all(self.dir());
        }
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether the API server's `/readyz` answers `ok`.
pub(crate) async fn apiserver_ready(client: &kube::Client) -> bool {
    match http::Request::get("/readyz").body(Vec::new()) {
        Ok(request) => client.request_text(request).await.is_ok_and(|t| t == "ok"),
        Err(_) => false,
    }
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Deletes cluster dirs left by harness processes that died without cleaning up (SIGKILL, ctrl-c):
/// their components died with them, but etcd's data would pile up in the temp dir.
fn sweep_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(Ok(pid)) = rest.split('-').next().map(str::parse::<u32>) else {
            continue;
        };
        if pid != std::process::id() && !process::pid_alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
