//! The control-plane components as child processes that can never outlive the test process.
//!
//! Each child is spawned with `PR_SET_PDEATHSIG=SIGKILL`. That signal fires when the *thread* that
//! forked the child exits, not the process, and tests run on short-lived threads with their own tokio
//! runtimes; so all children are forked by one spawner thread that lives until the process exits.
//! Children also get their own process group, so a ctrl-c in the terminal reaches only the harness,
//! which then stops them in order (the `testcluster` binary) or dies and takes them along (tests).
//!
//! Each child writes stdout and stderr to its own log file, read back by [`Component::log_tail`].

use std::fs::{self, File};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// One running component of the stack.
#[derive(Debug)]
pub struct Component {
    pub name: &'static str,
    pub log: PathBuf,
    child: Child,
}

/// A request to the spawner thread: the command and where to send the spawned child.
type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Channel to the spawner thread; kept in a static so the thread never sees it close.
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        thread::Builder::new()
            .name("testcluster-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("spawning the testcluster spawner thread");
        Mutex::new(tx)
    })
}

impl Component {
    /// Spawns `program args` (plus `env`) in `dir`, with its output in `dir/<name>.log`.
    pub fn spawn(
        name: &'static str,
        program: &Path,
        args: &[String],
        env: &[(&str, &Path)],
        dir: &Path,
    ) -> Result<Self> {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone()?;
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs between fork and exec and only makes async-signal-safe syscalls.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died between fork and prctl: then nobody would kill us.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                if libc::setpgid(0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let (reply_tx, reply_rx) = mpsc::channel();
        spawner()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send((command, reply_tx))
            .context("spawner thread is gone")?;
        let child = reply_rx
            .recv()
            .context("spawner thread is gone")?
            .with_context(|| format!("starting {name} ({})", program.display()))?;
        Ok(Self { name, log, child })
    }

    /// Process id, for measuring memory and checking that nothing is left behind.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` once the process has exited; a component dying during start-up fails the start.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends SIGTERM (graceful shutdown) unless the process has already exited.
    pub fn terminate(&mut self) {
        if self.exited().is_none() {
            // SAFETY: plain kill(2) on our own, not yet reaped, child.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        }
    }

    /// Waits up to `grace` for the process to exit, then kills it; always reaps it.
    pub fn wait_or_kill(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    /// SIGKILL and reap: for the exit path, where nothing is waited on gracefully.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Current and peak resident memory in KiB (`VmRSS`, `VmHWM` from `/proc/<pid>/status`; zeros
    /// once the process is gone).
    pub fn memory_kib(&self) -> (u64, u64) {
        let status = fs::read_to_string(format!("/proc/{}/status", self.child.id()));
        let status = status.unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// CPU time the process has used so far, user and system, in seconds (zero once it is gone), with
    /// that of the children it has waited for: reconcile-host compiles modules in child processes.
    pub fn cpu_seconds(&self) -> f64 {
        cpu_ticks(self.child.id(), &[11, 12, 13, 14])
    }

    /// The last `lines` lines of the component's log.
    pub fn log_tail(&self, lines: usize) -> String {
        match fs::read(&self.log) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let all: Vec<&str> = text.lines().collect();
                all[all.len().saturating_sub(lines)..].join("\n")
            }
            Err(e) => format!("(cannot read {}: {e})", self.log.display()),
        }
    }
}

/// Whether a process with this pid exists (used to sweep directories of dead harness processes).
pub fn pid_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// CPU time process `pid` has used so far, user and system, in seconds (`utime` and `stime` of
/// `/proc/<pid>/stat`; zero if it is gone).
pub fn cpu_seconds_of(pid: u32) -> f64 {
    cpu_ticks(pid, &[11, 12])
}

/// The sum of the `/proc/<pid>/stat` fields at `indices` (counted after the command name), which are
/// CPU times in clock ticks, in seconds.
fn cpu_ticks(pid: u32, indices: &[usize]) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    // utime, stime, cutime and cstime are fields 14 to 17 of the line, 12 to 15 after the name.
    let ticks: u64 = indices
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    ticks as f64 / per_second as f64
}
