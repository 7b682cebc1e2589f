//! reconcile-host as a separate process, the way it runs in a cluster; killed on drop, its log printed
//! when the test fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct HostProcess {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl HostProcess {
    /// Starts `reconcile-host run` with `args` against the cluster of `kubeconfig`.
    pub fn start(kubeconfig: &Path, args: &[&str]) -> HostProcess {
        HostProcess::start_with_env(kubeconfig, args, &[])
    }

    /// Like `start`, with extra environment (the downward API's POD_NAME and POD_NAMESPACE).
    pub fn start_with_env(kubeconfig: &Path, args: &[&str], env: &[(&str, &str)]) -> HostProcess {
        HostProcess::spawn("run", kubeconfig, args, env)
    }

    /// Starts `reconcile-host serve` (platform mode) with `args`.
    pub fn serve(kubeconfig: &Path, args: &[&str], env: &[(&str, &str)]) -> HostProcess {
        HostProcess::spawn("serve", kubeconfig, args, env)
    }

    fn spawn(
        subcommand: &str,
        kubeconfig: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> HostProcess {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("host.log");
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_reconcile-host"))
            .arg(subcommand)
            // Many hosts run at once in the tests: each on a free port.
            .args(["--metrics-addr", "127.0.0.1:0"])
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info,reconcile_host=debug,kube=warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("starting reconcile-host");
        HostProcess {
            child,
            log,
            _dir: dir,
        }
    }

    /// Starts the host for MyApp parents and Deployment children in one namespace.
    pub fn myapp(kubeconfig: &Path, namespace: &str, module: &Path, extra: &[&str]) -> HostProcess {
        HostProcess::myapp_with_env(kubeconfig, namespace, module, extra, &[])
    }

    /// Like `myapp`, with extra environment (e.g. a test-only hook).
    pub fn myapp_with_env(
        kubeconfig: &Path,
        namespace: &str,
        module: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> HostProcess {
        let source = ["--module", module.to_str().unwrap()];
        let child = "apps/v1/Deployment";
        HostProcess::for_myapps(child, kubeconfig, namespace, &source, extra, env)
    }

    /// Like `myapp`, with the module from the ConfigMap `source` (`namespace/name/key`).
    pub fn myapp_from_configmap(
        kubeconfig: &Path,
        namespace: &str,
        source: &str,
        extra: &[&str],
    ) -> HostProcess {
        let source = ["--module-configmap", source];
        HostProcess::for_myapps(
            "apps/v1/Deployment",
            kubeconfig,
            namespace,
            &source,
            extra,
            &[],
        )
    }

    /// Starts the host with the faults guest for MyApp parents (`spec.fault`) and ConfigMap children
    /// in one namespace.
    pub fn faults(kubeconfig: &Path, namespace: &str, extra: &[&str]) -> HostProcess {
        let module = super::guests::component("guest_faults");
        HostProcess::faults_from(kubeconfig, namespace, &module, extra)
    }

    /// Like `faults`, with the faults guest from `module` (a copy a test may overwrite).
    pub fn faults_from(
        kubeconfig: &Path,
        namespace: &str,
        module: &Path,
        extra: &[&str],
    ) -> HostProcess {
        let source = ["--module", module.to_str().unwrap()];
        HostProcess::for_myapps("v1/ConfigMap", kubeconfig, namespace, &source, extra, &[])
    }

    fn for_myapps(
        child: &str,
        kubeconfig: &Path,
        namespace: &str,
        source: &[&str; 2],
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> HostProcess {
        let mut args = vec![
            "--parent",
            "example.com/v1alpha1/MyApp",
            "--child",
            child,
            "--namespace",
            namespace,
        ];
        args.extend_from_slice(source);
        args.extend_from_slice(extra);
        HostProcess::start_with_env(kubeconfig, &args, env)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the process outright (SIGKILL: no clean shutdown, no lease release).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Asks the process to shut down (SIGTERM, as the kubelet does) and waits until it has.
    pub fn terminate(&mut self) {
        self.shut_down();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and returns at once: several replicas shutting down together, as in a scale
    /// down, while the test goes on (`terminate` then waits for the exit).
    pub fn shut_down(&self) {
        self.signal(libc::SIGTERM);
    }

    /// Stops the process where it is (SIGSTOP: a long GC pause, a VM stall), until `resume`.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Lets a paused process go on (SIGCONT).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on our own child's pid; it has not been waited for, so the pid is its own.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signal {signal}");
    }

    /// The address of /healthz, /readyz and /metrics, from the host's start-up log line.
    pub fn metrics_addr(&self) -> Option<String> {
        let log = self.log();
        let line = log.lines().find(|l| l.contains("serving /healthz"))?;
        let start = line.find("127.0.0.1:")?;
        let addr: String = line[start..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
            .collect();
        Some(addr)
    }

    /// A field of the process's /proc status in bytes (`VmRSS`: resident now, `VmHWM`: the peak).
    pub fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with(&format!("{field}:")))
            .unwrap_or_else(|| panic!("no {field} in {status}"));
        let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib << 10
    }

    /// Starts measuring the peak resident memory (`VmHWM`) from now.
    pub fn reset_peak_memory(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5").unwrap();
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            eprintln!("---- reconcile-host log (last lines) ----");
            for line in tail.into_iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}
