//! A real Kubernetes control plane for integration tests: etcd, kube-apiserver (RBAC enforced),
//! kube-controller-manager, kube-scheduler and kwok faking one node, on free loopback ports in a
//! temporary directory.
//!
//! Tests never talk to a mock: [`TestCluster::shared`] starts one stack per test binary on first use,
//! and each test isolates itself in its own namespace ([`TestCluster::namespace`]). The binaries come
//! from `tests/controlplane/build.sh` (or `RECONCILE_HOST_CONTROLPLANE_BIN`), see [`binaries`].
//!
//! Every component runs as a child process that dies with the test process: on drop of the
//! [`TestCluster`], at normal exit of the process (for the shared stack, which is never dropped), and
//! through `PR_SET_PDEATHSIG` when the process is killed or interrupted.

mod access;
mod audit;
pub mod binaries;
mod certs;
mod cluster;
mod compaction;
mod components;
mod kubeconfig;
mod link;
mod ports;
pub mod process;
mod restart;
mod shared;

pub use audit::AuditedWrite;
pub use cluster::{ClusterOptions, ComponentMemory, TestCluster};
pub use link::Link;

/// Guard returned by [`failure_guard`]: prints the tail of every component's log when the test that
/// holds it fails, because a failing assertion alone rarely says why the control plane misbehaved.
#[must_use = "the guard only reports when it is dropped at the end of the test"]
pub struct FailureGuard<'a> {
    cluster: &'a TestCluster,
}

impl Drop for FailureGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "---- test cluster logs (dir {}) ----\n{}",
                self.cluster.dir().display(),
                self.cluster.log_tails(40)
            );
        }
    }
}

/// Guard for a test: when dropped while the test panics, prints `cluster.log_tails(40)` to stderr,
/// so that a failure in CI comes with what etcd, the API server, the controllers and kwok said.
pub fn failure_guard(cluster: &TestCluster) -> FailureGuard<'_> {
    FailureGuard { cluster }
}
