//! The fence: whether this replica may write now. A leader's right to write ends a renew deadline after
//! the start of its last successful renewal, measured on the monotonic clock, whatever the process was
//! doing meanwhile: a leader paused (SIGSTOP, a long GC, a partition) wakes up with a closed fence and
//! its writes are refused in the client, before they reach the API server. The deadline is shorter
//! than the Lease, so the fence closes before any standby may take the Lease over.
//!
//! The check sits in the client's tower stack, inside its retries: every attempt of a write is checked,
//! a retried one too. Reads and watches pass: a standby keeps its caches warm.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use http::{Method, Request};
use tokio::sync::watch;
use tower::{BoxError, Layer, Service};

use crate::telemetry::Metrics;

/// Until when writes are admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admit {
    /// No election: this process is the only writer.
    Always,
    /// Leading: until the renew deadline of the last successful renewal.
    Until(Instant),
    /// A standby, or a leader that stepped down.
    Never,
}

/// Whether this replica may write: shared by the elector, which opens and closes it, and every client
/// and reconciler that writes. Cheap to clone.
#[derive(Clone)]
pub struct Fence {
    admit: Arc<Mutex<Admit>>,
    /// Whether this replica leads, as the elector last decided: turns true when it takes the Lease and
    /// false when it steps down. `admits_writes` is the authority; this is for who waits for the turn.
    leading: watch::Sender<bool>,
    /// How many times it opened after admitting nothing: at a new term, and at a renewal that came
    /// after the deadline had passed (the elector still leading, yet writes refused meanwhile).
    openings: watch::Sender<u64>,
    /// Where refused writes are counted, if anywhere.
    metrics: Option<Metrics>,
}

impl Fence {
    /// A fence that always admits: a process with no election.
    pub fn open() -> Fence {
        Fence::with(Admit::Always)
    }

    /// A fence that admits nothing until an elector opens it.
    pub fn closed() -> Fence {
        Fence::with(Admit::Never)
    }

    fn with(admit: Admit) -> Fence {
        Fence {
            admit: Arc::new(Mutex::new(admit)),
            leading: watch::Sender::new(admit == Admit::Always),
            openings: watch::Sender::new(0),
            metrics: None,
        }
    }

    /// Counts the writes it refuses in `metrics`.
    pub fn counted_in(mut self, metrics: &Metrics) -> Fence {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Where it counts, if anywhere.
    pub(super) fn metrics(&self) -> Option<Metrics> {
        self.metrics.clone()
    }

    /// Whether a write may go out now.
    pub fn admits_writes(&self) -> bool {
        self.admits_at(Instant::now())
    }

    fn admits_at(&self, now: Instant) -> bool {
        match *self.admit.lock().expect("fence lock poisoned") {
            Admit::Always => true,
            Admit::Until(deadline) => now < deadline,
            Admit::Never => false,
        }
    }

    /// Whether this replica leads, followed: for who waits to lead or reacts to a new term.
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// Changes each time the fence opens after admitting nothing: what was held or refused while it
    /// was closed (reconciles, a tenure's verifications) is to be done again. A renewal that comes
    /// late opens it without a change of `leading`.
    pub fn openings(&self) -> watch::Receiver<u64> {
        self.openings.subscribe()
    }

    /// A renewal that started at `renewed` succeeded: writes are admitted until `deadline`.
    pub(super) fn renewed_until(&self, deadline: Instant) {
        let reopened = {
            let mut admit = self.admit.lock().expect("fence lock poisoned");
            let was_open = match *admit {
                Admit::Always => true,
                Admit::Until(old) => Instant::now() < old,
                Admit::Never => false,
            };
            *admit = Admit::Until(deadline);
            !was_open
        };
        self.leading
            .send_if_modified(|leading| !std::mem::replace(leading, true));
        if reopened {
            self.openings.send_modify(|n| *n += 1);
        }
    }

    /// Steps down: nothing is admitted until the next successful renewal.
    pub(super) fn close(&self) {
        *self.admit.lock().expect("fence lock poisoned") = Admit::Never;
        self.leading
            .send_if_modified(|leading| std::mem::replace(leading, false));
    }

    /// Whether the elector believes it leads while the deadline already passed: it must step down.
    pub(super) fn lapsed(&self) -> bool {
        *self.leading.borrow() && !self.admits_writes()
    }
}

/// Why a write did not go out.
#[derive(Debug, thiserror::Error)]
#[error(
    "this replica does not hold its Lease (a standby, or a leader past its renew deadline): the write was not sent"
)]
pub struct FencedWrite;

/// Whether `error` (a kube client error) is a write the fence refused.
pub fn is_fenced(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Service(e) if e.is::<FencedWrite>())
}

/// Refuses every request but reads while the fence is closed.
#[derive(Clone)]
pub struct FenceLayer(pub Fence);

impl<S> Layer<S> for FenceLayer {
    type Service = FenceService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FenceService {
            inner,
            fence: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct FenceService<S> {
    inner: S,
    fence: Fence,
}

/// Reads change nothing: a closed fence lets them pass.
fn writes(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

impl<S, B> Service<Request<B>> for FenceService<S>
where
    S: Service<Request<B>>,
    S::Response: Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if writes(request.method()) && !self.fence.admits_writes() {
            if let Some(metrics) = &self.fence.metrics {
                metrics.write_fenced();
            }
            tracing::debug!(method = %request.method(), uri = %request.uri(), "write refused: the fence is closed");
            return Box::pin(std::future::ready(Err(FencedWrite.into())));
        }
        let response = self.inner.call(request);
        Box::pin(async move { response.await.map_err(Into::into) })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_fence_admits_until_the_deadline_of_its_last_renewal_and_never_once_closed() {
        let fence = Fence::closed();
        let now = Instant::now();
        assert!(!fence.admits_at(now));
        assert!(!*fence.leading().borrow());

        fence.renewed_until(now + Duration::from_secs(7));
        assert!(fence.admits_at(now + Duration::from_secs(6)));
        assert!(!fence.admits_at(now + Duration::from_secs(7)));
        assert!(*fence.leading().borrow());

        fence.close();
        assert!(!fence.admits_at(now));
        assert!(!*fence.leading().borrow());
        assert!(Fence::open().admits_at(now + Duration::from_secs(3600)));
    }

    #[test]
    fn a_leader_whose_deadline_passed_has_lapsed() {
        let fence = Fence::closed();
        fence.renewed_until(Instant::now() - Duration::from_millis(1));
        assert!(fence.lapsed());
        fence.close();
        assert!(!fence.lapsed());
    }

    #[test]
    fn it_opens_anew_at_a_new_term_and_at_a_renewal_after_its_deadline_passed_not_at_a_timely_one()
    {
        let fence = Fence::closed();
        let openings = fence.openings();
        let later = |ms| Instant::now() + Duration::from_millis(ms);
        fence.renewed_until(later(60_000));
        assert_eq!(*openings.borrow(), 1, "a new term");
        fence.renewed_until(later(60_000));
        assert_eq!(
            *openings.borrow(),
            1,
            "a timely renewal: writes were never refused"
        );
        // A late renewal: the deadline passed, writes were refused, the elector still leads.
        fence.renewed_until(Instant::now() - Duration::from_millis(1));
        fence.renewed_until(later(60_000));
        assert!(*fence.leading().borrow());
        assert_eq!(*openings.borrow(), 2, "reopened after a lapse");
        fence.close();
        fence.renewed_until(later(60_000));
        assert_eq!(*openings.borrow(), 3, "a term after stepping down");
    }

    #[tokio::test]
    async fn a_closed_fence_refuses_writes_and_lets_reads_pass() {
        let fence = Fence::closed();
        let service = tower::service_fn(|_: Request<()>| async { Ok::<_, BoxError>("sent") });
        let mut fenced = FenceLayer(fence.clone()).layer(service);
        let request = |method| Request::builder().method(method).body(()).unwrap();

        let read = fenced.call(request(Method::GET)).await;
        assert_eq!(read.unwrap(), "sent");
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            let write = fenced.call(request(method.clone())).await;
            let error = write.expect_err("a write must not pass a closed fence");
            assert!(error.is::<FencedWrite>(), "{method}: {error}");
        }

        fence.renewed_until(Instant::now() + Duration::from_secs(5));
        assert_eq!(fenced.call(request(Method::PATCH)).await.unwrap(), "sent");
    }
}
