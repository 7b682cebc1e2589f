//! Restarting a control-plane component in place: what a control-plane upgrade or crash looks like to
//! a controller. The API server restarted: its requests fail, its watches break and, once the server
//! is back, it must list again. etcd restarted: the API server answers errors (and its watches may
//! end) until etcd is back.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::TestCluster;
use crate::cluster::{START_TIMEOUT, apiserver_ready};
use crate::process::Component;

const APISERVER: &str = "kube-apiserver";
const ETCD: &str = "etcd";

impl TestCluster {
    /// Stops kube-apiserver (SIGTERM, then SIGKILL after 20 s), keeps it down for `down`, starts it
    /// again with the same flags, port and etcd, and returns once `/readyz` answers. The other
    /// components reconnect by themselves.
    pub async fn restart_apiserver(&self, down: Duration) -> Result<()> {
        self.restart(APISERVER, &self.apiserver_args, down).await
    }

    /// Stops etcd the same way, keeps it down for `down`, starts it again on the same data, and
    /// returns once the API server's `/readyz` (which checks etcd) answers.
    pub async fn restart_etcd(&self, down: Duration) -> Result<()> {
        self.restart(ETCD, &self.etcd_args, down).await
    }

    async fn restart(&self, name: &'static str, args: &[String], down: Duration) -> Result<()> {
        self.with_component(name, Component::terminate)?;
        let stop_deadline = Instant::now() + Duration::from_secs(20);
        while self.with_component(name, |c| c.exited().is_none())? && Instant::now() < stop_deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.with_component(name, Component::kill)?;
        tokio::time::sleep(down).await;

        let program = self.bin_dir.join(name);
        let started = Component::spawn(name, &program, args, &[], self.dir())?;
        self.with_component(name, |c| *c = started)?;
        let client = self.client().await?;
        self.wait_until(
            &format!("kube-apiserver /readyz after {name}'s restart"),
            Instant::now() + START_TIMEOUT,
            async || apiserver_ready(&client).await,
        )
        .await
    }

    /// Runs `f` on the component `name`, under the components lock (never held across an await).
    fn with_component<T>(&self, name: &str, f: impl FnOnce(&mut Component) -> T) -> Result<T> {
        let mut components = self.lock();
        let component = components
            .iter_mut()
            .find(|c| c.name == name)
            .with_context(|| format!("the cluster has no {name}"))?;
        Ok(f(component))
    }
}
