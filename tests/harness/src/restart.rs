//! Restarting the API server on the same etcd: what a control-plane upgrade or crash looks like to a
//! controller. Its requests fail, its watches break and, once the server is back, it must list again.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::TestCluster;
use crate::cluster::{START_TIMEOUT, apiserver_ready};
use crate::process::Component;

const NAME: &str = "kube-apiserver";

impl TestCluster {
    /// Stops kube-apiserver (SIGTERM, then SIGKILL after 20 s), keeps it down for `down`, starts it
    /// again with the same flags, port and etcd, and returns once `/readyz` answers. The other
    /// components reconnect by themselves.
    pub async fn restart_apiserver(&self, down: Duration) -> Result<()> {
        self.with_apiserver(Component::terminate)?;
        let stop_deadline = Instant::now() + Duration::from_secs(20);
        while self.with_apiserver(|c| c.exited().is_none())? && Instant::now() < stop_deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.with_apiserver(Component::kill)?;
        tokio::time::sleep(down).await;

        let program = self.bin_dir.join(NAME);
        let started = Component::spawn(NAME, &program, &self.apiserver_args, &[], self.dir())?;
        self.with_apiserver(|c| *c = started)?;
        let client = self.client().await?;
        self.wait_until(
            "kube-apiserver /readyz after its restart",
            Instant::now() + START_TIMEOUT,
            async || apiserver_ready(&client).await,
        )
        .await
    }

    /// Runs `f` on the kube-apiserver component, under the components lock (never held across an
    /// await).
    fn with_apiserver<T>(&self, f: impl FnOnce(&mut Component) -> T) -> Result<T> {
        let mut components = self.lock();
        let apiserver = components
            .iter_mut()
            .find(|c| c.name == NAME)
            .context("the cluster has no kube-apiserver")?;
        Ok(f(apiserver))
    }
}
