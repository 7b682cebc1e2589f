//! Proves that no control-plane process outlives its harness: the `testcluster` binary stops
//! everything on ctrl-c, and when it is killed outright (no destructor, no exit handler runs) its
//! components die with it through `PR_SET_PDEATHSIG`.
//!
//! Its own test binary, so that it does not compete with the shared stack for the two cores.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A `testcluster` process and the pids of its components, read from its stdout.
struct Running {
    child: Child,
    components: Vec<(String, u32)>,
    kubeconfig: String,
}

fn start_testcluster_bin() -> Result<Running> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_testcluster"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut kubeconfig = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(path.to_owned());
        }
        if let Some(pids) = line.strip_prefix("# pids ") {
            let components = pids
                .split_whitespace()
                .map(|pair| {
                    let (name, pid) = pair.split_once('=').context("bad pid pair")?;
                    Ok((name.to_owned(), pid.parse()?))
                })
                .collect::<Result<Vec<_>>>()?;
            let kubeconfig = kubeconfig.context("no KUBECONFIG line before the pids")?;
            return Ok(Running {
                child,
                components,
                kubeconfig,
            });
        }
    }
    let status = child.wait()?;
    bail!("testcluster exited ({status}) before printing its pids")
}

/// Running and not a zombie (a killed orphan may wait for a reaper that never comes here).
fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // Format: pid (comm) state ...; comm may contain spaces, so split after the last ')'.
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().chars().next()),
            Some(Some('Z' | 'X'))
        ),
        Err(_) => false,
    }
}

fn assert_all_gone_within(components: &[(String, u32)], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let alive: Vec<_> = components
            .iter()
            .filter(|(_, pid)| is_running(*pid))
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "still running: {alive:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill(2) on our own child, which has not been reaped yet.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

#[test]
fn no_component_outlives_the_testcluster_binary() {
    // Clean stop: ctrl-c.
    let mut running = start_testcluster_bin().unwrap();
    let names: Vec<&str> = running.components.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok"
        ]
    );
    for (name, pid) in &running.components {
        assert!(is_running(*pid), "{name} ({pid}) is not running");
    }
    // The printed kubeconfig works.
    let kubectl = testcluster::binaries::bin_dir().unwrap().join("kubectl");
    let nodes = Command::new(&kubectl)
        .args([
            "--kubeconfig",
            &running.kubeconfig,
            "get",
            "nodes",
            "-o",
            "name",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&nodes.stdout).trim(),
        "node/kwok-node-0"
    );

    signal(&running.child, libc::SIGINT);
    let status = running.child.wait().unwrap();
    assert!(status.success(), "testcluster exited with {status}");
    assert_all_gone_within(&running.components, Duration::from_secs(1));
    let dir = std::path::Path::new(&running.kubeconfig).parent().unwrap();
    assert!(!dir.exists(), "{} was left behind", dir.display());

    // Crash: SIGKILL runs no destructor; the kernel kills the components.
    let mut running = start_testcluster_bin().unwrap();
    signal(&running.child, libc::SIGKILL);
    running.child.wait().unwrap();
    assert_all_gone_within(&running.components, Duration::from_secs(5));
}
