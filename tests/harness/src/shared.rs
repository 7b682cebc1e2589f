//! [`TestCluster::shared`]: one stack per test binary, started on first use.
//!
//! Starting a control plane takes seconds, so the tests of a binary share one and isolate themselves
//! by namespace. `#[tokio::test]` gives every test its own runtime, so the stack is started on a
//! thread of its own with a throw-away runtime, and it keeps nothing that belongs to a runtime.
//! Statics are never dropped: an `atexit` handler kills the components and deletes the directory when
//! the test binary exits normally; `PR_SET_PDEATHSIG` covers every other way of dying.

use std::sync::OnceLock;

use anyhow::anyhow;

use crate::TestCluster;

/// The shared cluster, or why it failed to start (kept so that every test reports it, not only the
/// first, without retrying a start that takes long to fail).
static SHARED: OnceLock<Result<TestCluster, String>> = OnceLock::new();

impl TestCluster {
    /// The cluster shared by all tests of this test binary, started on first use (blocking the
    /// calling thread meanwhile); panics, in every test that asks, if it could not start. Usable from
    /// any number of `#[tokio::test]` functions, each with its own runtime.
    pub fn shared() -> &'static TestCluster {
        let cell = SHARED.get_or_init(|| {
            let started = std::thread::Builder::new()
                .name("testcluster-start".into())
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    runtime.block_on(TestCluster::start())
                })
                .map_err(anyhow::Error::from)
                .and_then(|thread| {
                    thread
                        .join()
                        .unwrap_or_else(|_| Err(anyhow!("starting the cluster panicked")))
                });
            match started {
                Ok(cluster) => {
                    // SAFETY: registers a plain `extern "C" fn` that only touches statics.
                    unsafe { libc::atexit(stop_shared_cluster) };
                    Ok(cluster)
                }
                Err(e) => Err(format!("{e:#}")),
            }
        });
        match cell {
            Ok(cluster) => cluster,
            Err(e) => panic!("the shared test cluster failed to start: {e}"),
        }
    }
}

extern "C" fn stop_shared_cluster() {
    if let Some(Ok(cluster)) = SHARED.get() {
        cluster.kill_at_exit();
    }
}
