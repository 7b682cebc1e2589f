//! What a module source yields: the module's bytes, or why it has none, as a stream.

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::mpsc;

/// The bytes of a module version, or why the source could not produce one.
pub type Update = Result<Vec<u8>, String>;

/// The updates a background task sends, as a stream.
pub(super) fn stream_of(rx: mpsc::Receiver<Update>) -> BoxStream<'static, Update> {
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .boxed()
}
