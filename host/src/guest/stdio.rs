//! Guest stdout and stderr, captured per call.
//!
//! wasmtime-wasi's `MemoryOutputPipe` cannot be emptied and fails every write past its capacity, which
//! a guest's `println!` turns into a trap: a chatty guest would crash, and a reused instance would
//! run out of room after a few calls. This sink keeps up to its cap per call, drops (and counts) the
//! rest without failing the guest, and is drained after every call.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// One output stream of a guest: a bounded buffer shared by the WASI context and the host.
#[derive(Clone)]
pub(crate) struct CapturedOutput {
    inner: Arc<Mutex<Captured>>,
    cap: usize,
}

#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: usize,
}

/// What a guest wrote to one stream since the last drain.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Drained {
    pub kept: Vec<u8>,
    /// Bytes past the cap, not kept.
    pub dropped: usize,
}

impl CapturedOutput {
    pub fn new(cap: usize) -> Self {
        CapturedOutput {
            inner: Arc::default(),
            cap,
        }
    }

    /// Takes what was written and gives the next call the whole cap again.
    pub fn drain(&self) -> Drained {
        let mut captured = self.inner.lock().expect("guest output lock poisoned");
        Drained {
            kept: std::mem::take(&mut captured.kept),
            dropped: std::mem::take(&mut captured.dropped),
        }
    }

    fn keep(&self, bytes: &[u8]) {
        let mut captured = self.inner.lock().expect("guest output lock poisoned");
        let room = self.cap.saturating_sub(captured.kept.len());
        let kept = bytes.len().min(room);
        captured.kept.extend_from_slice(&bytes[..kept]);
        captured.dropped += bytes.len() - kept;
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.keep(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
    fn check_write(&mut self) -> Result<usize, StreamError> {
        // Always room: what does not fit is dropped, never refused.
        Ok(64 << 10)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturedOutput {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CapturedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.keep(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_the_cap_drops_the_rest_and_refills_on_drain() {
        let output = CapturedOutput::new(8);
        let mut stream = output.p2_stream();
        stream.write(Bytes::from_static(b"hello ")).unwrap();
        stream.write(Bytes::from_static(b"world")).unwrap();
        assert_eq!(
            output.drain(),
            Drained {
                kept: b"hello wo".to_vec(),
                dropped: 3
            }
        );
        stream.write(Bytes::from_static(b"again")).unwrap();
        assert_eq!(output.drain().kept, b"again");
        assert_eq!(output.drain(), Drained::default());
    }
}
