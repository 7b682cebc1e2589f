//! A module file, typically a mounted ConfigMap. The kubelet updates such a volume by swapping a
//! `..data` symlink, so a reader never sees half a file; a plain `cp` can be caught mid-write, so events
//! are debounced and a file is only yielded when its bytes differ from the last version yielded.
//! inotify (through `notify`) gives instant updates; a slow poll covers filesystems without it.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use futures::stream::BoxStream;
use notify::{RecursiveMode, Watcher};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::Update;

const DEBOUNCE: Duration = Duration::from_millis(200);
const POLL: Duration = Duration::from_secs(2);

pub fn updates(path: PathBuf) -> BoxStream<'static, Update> {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(watch(path, tx));
    super::update::stream_of(rx)
}

async fn watch(path: PathBuf, tx: mpsc::Sender<Update>) {
    let (event_tx, mut events) = mpsc::channel::<()>(16);
    // Watch the directory, not the file: the kubelet replaces the file's symlink target.
    let dir = path
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let watcher = notify::recommended_watcher(move |_event: notify::Result<notify::Event>| {
        let _ = event_tx.try_send(());
    })
    .and_then(|mut w| w.watch(&dir, RecursiveMode::NonRecursive).map(|()| w));
    let _watcher = match watcher {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the module directory; polling only");
            None
        }
    };

    let mut last_digest: Option<Vec<u8>> = None;
    let mut last_stamp: Option<(SystemTime, u64)> = None;
    let mut poll = tokio::time::interval(POLL);
    loop {
        let notified = tokio::select! {
            Some(()) = events.recv() => true,
            _ = poll.tick() => false,
        };
        if notified {
            // Let a burst of events (a write in several chunks, a symlink swap) settle.
            tokio::time::sleep(DEBOUNCE).await;
            while events.try_recv().is_ok() {}
        }
        let stamp = std::fs::metadata(&path)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        if !notified && stamp.is_some() && stamp == last_stamp {
            continue;
        }
        last_stamp = stamp;
        let update = match std::fs::read(&path) {
            Ok(bytes) => {
                let digest = Sha256::digest(&bytes).to_vec();
                if last_digest.as_ref() == Some(&digest) {
                    continue;
                }
                last_digest = Some(digest);
                Ok(bytes)
            }
            Err(e) => Err(format!("cannot read module file {}: {e}", path.display())),
        };
        if tx.send(update).await.is_err() {
            return;
        }
    }
}
