//! [`Link`]: the network between a process under test and the API server, for a test to break.
//!
//! A TCP relay on a free loopback port in front of the API server (TLS passes through untouched, so
//! the process sees the real server and its certificate). [`Link::cut`] closes every connection open
//! through it, as a load balancer's restart or a NAT timeout does to a controller's watches: each is
//! resumed from its last resourceVersion. [`Link::partition`] is a network partition: open
//! connections are closed and new ones are accepted but nothing passes, so requests hang until the
//! caller's own timeouts fire (no quick "connection refused" to act on), until [`Link::heal`].
//! [`Link::down`] is a server that is not there: every connection is closed as soon as it is opened,
//! so each request fails at once. The API server itself stays up for every other client, unlike
//! `restart_apiserver`.
//!
//! The relay runs on a thread and runtime of its own, so that a test blocking its own thread (kubectl,
//! a scrape) never stalls the traffic of the process under test.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::TestCluster;
use crate::kubeconfig;

/// A breakable relay to the API server; stopped (and its connections closed) when dropped.
pub struct Link {
    state: watch::Sender<LinkState>,
    kubeconfig: PathBuf,
    relay: Option<JoinHandle<()>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LinkState {
    /// Bumped by each cut: a connection opened before the bump is closed.
    cuts: u64,
    partitioned: bool,
    /// New connections are closed at once.
    down: bool,
    stopped: bool,
}

impl TestCluster {
    /// Starts a [`Link`] to this cluster's API server and writes an admin kubeconfig that goes
    /// through it.
    pub fn link(&self) -> Result<Link> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding the link")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let upstream = self.server.trim_start_matches("https://").to_owned();
        let mut config = self.admin_config.clone();
        config["clusters"][0]["cluster"]["server"] = format!("https://127.0.0.1:{port}").into();
        let kubeconfig =
            kubeconfig::write(&self.dir().join(format!("link-{port}.kubeconfig")), &config)?;

        let (state, _) = watch::channel(LinkState {
            cuts: 0,
            partitioned: false,
            down: false,
            stopped: false,
        });
        let updates = state.subscribe();
        let relay = std::thread::Builder::new()
            .name(format!("link-{port}"))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the link");
                runtime.block_on(relay(listener, upstream, updates));
            })?;
        Ok(Link {
            state,
            kubeconfig,
            relay: Some(relay),
        })
    }
}

impl Link {
    /// An admin kubeconfig whose server is this link.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Closes every connection open through the link; new ones pass as before.
    pub fn cut(&self) {
        self.state.send_modify(|s| s.cuts += 1);
    }

    /// Closes every open connection and lets nothing through until [`Link::heal`].
    pub fn partition(&self) {
        self.state.send_modify(|s| {
            s.cuts += 1;
            s.partitioned = true;
        });
    }

    /// Closes every open connection and each new one as soon as it is opened, until [`Link::heal`].
    pub fn down(&self) {
        self.state.send_modify(|s| {
            s.cuts += 1;
            s.down = true;
        });
    }

    /// Ends a partition or a [`Link::down`]: the connections held silent are closed, new ones pass.
    pub fn heal(&self) {
        self.state.send_modify(|s| {
            s.partitioned = false;
            s.down = false;
        });
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.state.send_modify(|s| s.stopped = true);
        if let Some(relay) = self.relay.take() {
            let _ = relay.join();
        }
    }
}

async fn relay(
    listener: std::net::TcpListener,
    upstream: String,
    updates: watch::Receiver<LinkState>,
) {
    let listener = TcpListener::from_std(listener).expect("the link's listener");
    let mut stop = updates.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((inbound, _)) = accepted {
                    tokio::spawn(connection(inbound, upstream.clone(), updates.clone()));
                }
            }
            _ = stop.wait_for(|s| s.stopped) => return,
        }
    }
}

/// One client connection: relayed until the link is cut, or held silent while it is partitioned.
async fn connection(
    mut inbound: TcpStream,
    upstream: String,
    mut updates: watch::Receiver<LinkState>,
) {
    let opened = *updates.borrow_and_update();
    if opened.down {
        return;
    }
    if opened.partitioned {
        // Packets are dropped: the client waits on its own timeouts; the healed link closes it.
        let _ = updates.wait_for(|s| !s.partitioned || s.stopped).await;
        return;
    }
    let Ok(mut outbound) = TcpStream::connect(&upstream).await else {
        return;
    };
    tokio::select! {
        _ = copy_bidirectional(&mut inbound, &mut outbound) => {}
        _ = updates.wait_for(|s| s.cuts != opened.cuts || s.stopped) => {}
    }
}
