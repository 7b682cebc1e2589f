//! `make cluster`: runs the test control plane in the foreground for poking at it by hand (kubectl,
//! running the host against it) until ctrl-c or SIGTERM, then stops every component cleanly.
//!
//! Stdout is meant for people and for scripts alike: the first line is `export KUBECONFIG=<path>`,
//! the others start with `#` (the API server's URL, the directory with the logs, and last the
//! components' pids), so the output can be sourced as shell.

use std::io::Write;

use anyhow::{Context, Result};
use testcluster::{TestCluster, binaries};
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut hangup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;

    // A signal during start-up stops the start (dropping the half-started cluster), as later on.
    let cluster = tokio::select! {
        cluster = TestCluster::start() => cluster?,
        _ = interrupt.recv() => return Ok(()),
        _ = terminate.recv() => return Ok(()),
        _ = hangup.recv() => return Ok(()),
    };
    let pids: Vec<String> = cluster
        .pids()
        .iter()
        .map(|(name, pid)| format!("{name}={pid}"))
        .collect();
    // One write, pids last: a reader may stop reading (and close the pipe) once it has the pids.
    let banner = format!(
        "export KUBECONFIG={}\n# server {}\n# kubectl {}\n# logs in {}\n# started in {:.1} s\n\
         # running; ctrl-c stops it\n# pids {}\n",
        cluster.kubeconfig_path().display(),
        cluster.server(),
        binaries::bin_dir()?.join("kubectl").display(),
        cluster.dir().display(),
        cluster.startup_duration().as_secs_f64(),
        pids.join(" "),
    );
    // A closed stdout must not take the cluster down: the components still need a clean stop.
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout
        .write_all(banner.as_bytes())
        .and_then(|()| stdout.flush())
    {
        eprintln!("testcluster: could not write to stdout: {error}");
    }
    drop(stdout);

    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
        _ = hangup.recv() => {}
    }
    let memory = cluster.memory();
    let total =
        |f: fn(&testcluster::ComponentMemory) -> u64| memory.iter().map(f).sum::<u64>() / 1024;
    let each: Vec<String> = memory
        .iter()
        .map(|m| format!("{}={}/{}", m.name, m.rss_kib / 1024, m.peak_rss_kib / 1024))
        .collect();
    eprintln!(
        "testcluster: resident memory now/peak: {} MiB / {} MiB ({} MiB)",
        total(|m| m.rss_kib),
        total(|m| m.peak_rss_kib),
        each.join(" ")
    );
    eprintln!("testcluster: stopping");
    drop(cluster);
    eprintln!("testcluster: stopped");
    Ok(())
}
