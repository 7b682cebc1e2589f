//! Starting the contenders' processes against one control plane: reconcile-host (with its metrics on a
//! known port, for its reconcile count), the native controller and the seed's Python controller.

use std::path::{Path, PathBuf};

use anyhow::Result;
use testcluster::TestCluster;
use testcluster::process::Component;

use crate::{guests, ports};

pub struct Spawner {
    kubeconfig: PathBuf,
    logs: PathBuf,
}

/// A reconcile-host process and the address of its /metrics.
pub struct Host {
    pub process: Component,
    pub metrics_addr: String,
}

impl Spawner {
    pub fn new(cluster: &TestCluster, logs: &Path) -> Spawner {
        Spawner {
            kubeconfig: cluster.kubeconfig_path().to_path_buf(),
            logs: logs.to_path_buf(),
        }
    }

    /// reconcile-host for the MyApps of `namespace`, its module from `module` (flags), plus `extra`.
    pub fn host(
        &self,
        name: &'static str,
        namespace: &str,
        module: &[&str],
        extra: &[&str],
    ) -> Result<Host> {
        self.host_with_env(name, namespace, module, extra, &[])
    }

    /// `host`, with `env` besides: each replica of a ring is told its own name (`POD_NAME`), as the
    /// downward API tells a Pod.
    pub fn host_with_env(
        &self,
        name: &'static str,
        namespace: &str,
        module: &[&str],
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Host> {
        let metrics_addr = format!("127.0.0.1:{}", ports::free_port());
        let mut args = vec![
            "run",
            "--metrics-addr",
            &metrics_addr,
            "--parent",
            "example.com/v1alpha1/MyApp",
            "--child",
            "apps/v1/Deployment",
            "--namespace",
            namespace,
        ];
        args.extend_from_slice(module);
        args.extend_from_slice(extra);
        let bin = Path::new(env!("CARGO_BIN_EXE_reconcile-host"));
        let mut vars = vec![("RUST_LOG", "warn")];
        vars.extend_from_slice(env);
        let process = self.spawn(name, bin, &args, &vars)?;
        Ok(Host {
            process,
            metrics_addr,
        })
    }

    /// The native kube-rs controller (this benchmark's binary, `--native-controller`).
    pub fn native(&self, namespace: &str) -> Result<Component> {
        let me = std::env::current_exe()?;
        self.spawn("native", &me, &["--native-controller", namespace], &[])
    }

    /// The seed's Python controller (it watches every namespace).
    pub fn python(&self) -> Result<Component> {
        let run = guests::repo_root().join("bench/seed-python/run.sh");
        self.spawn("seed-python", &run, &[], &[])
    }

    fn spawn(
        &self,
        name: &'static str,
        bin: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Component> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let mut vars: Vec<(&str, &Path)> = vec![("KUBECONFIG", self.kubeconfig.as_path())];
        vars.extend(env.iter().map(|(k, v)| (*k, Path::new(*v))));
        Component::spawn(name, bin, &args, &vars, &self.logs)
    }
}
