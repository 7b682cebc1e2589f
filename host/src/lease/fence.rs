//! The fence: whether this replica may write now. A leader's right to write ends a renew deadline after
//! the start of its last successful renewal, measured on the monotonic clock, whatever the process was
//! doing meanwhile: a leader paused (SIGSTOP, a long GC, a partition) wakes up with a closed fence and
//! its writes are refused in the client, before they reach the API server. The deadline is shorter
//! than the Lease, so the fence closes before any standby may take the Lease over.
//!
//! The check sits in the client's tower stack, inside its retries: every attempt of a write is checked,
//! a retried one too. Reads and watches pass: a standby keeps its caches warm.
//!
//! A fence also tells its tenures apart (one per opening after it admitted nothing): work begun in one
//! tenure (`Fence::within_tenure`, around each reconcile) writes nothing in a later one. Without it a
//! reconcile stalled across a lapse (a partition: the Lease lapses, the ring's leader moves the parent
//! away, the Lease is won back) would write for a parent that is another replica's by then. The tenure
//! is a task-local, so the check runs in the future the fence returns, which kube's client polls in
//! the caller's task (its `Buffer` worker only makes the call).

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

/// Until when writes are admitted, and in which tenure: one lock, so that a write never sees a new
/// deadline with an old tenure.
#[derive(Clone, Copy, Debug)]
struct Gate {
    admit: Admit,
    /// How many times the fence opened after admitting nothing.
    tenure: u64,
}

tokio::task_local! {
    /// The tenure a task's work began in (`Fence::within_tenure`), and the fence it is of.
    static TENURE: (FenceId, u64);
}

/// Which fence a tenure is of: a process has several (the leader Lease's, the shard Lease's).
type FenceId = usize;

/// Whether this replica may write: shared by the elector, which opens and closes it, and every client
/// and reconciler that writes. Cheap to clone.
#[derive(Clone)]
pub struct Fence {
    gate: Arc<Mutex<Gate>>,
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
            gate: Arc::new(Mutex::new(Gate { admit, tenure: 0 })),
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

    /// Whether a write may go out now: the fence admits, and the task runs in no earlier tenure.
    pub fn admits_writes(&self) -> bool {
        self.admits_at(Instant::now())
    }

    fn admits_at(&self, now: Instant) -> bool {
        let gate = *self.gate.lock().expect("fence lock poisoned");
        let admits = match gate.admit {
            Admit::Always => true,
            Admit::Until(deadline) => now < deadline,
            Admit::Never => false,
        };
        let begun_in = TENURE
            .try_with(|&(fence, tenure)| (fence == self.id()).then_some(tenure))
            .ok()
            .flatten();
        admits && begun_in.is_none_or(|tenure| tenure == gate.tenure)
    }

    /// The current tenure: how many times the fence opened after admitting nothing.
    pub fn tenure(&self) -> u64 {
        self.gate.lock().expect("fence lock poisoned").tenure
    }

    /// Runs `work` in the current tenure: its writes through this fence (and `admits_writes` within
    /// it) are admitted only until the fence next closes, even should it open again meanwhile.
    pub async fn within_tenure<F: Future>(&self, work: F) -> F::Output {
        TENURE.scope((self.id(), self.tenure()), work).await
    }

    fn id(&self) -> FenceId {
        Arc::as_ptr(&self.gate) as FenceId
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
            let mut gate = self.gate.lock().expect("fence lock poisoned");
            let was_open = match gate.admit {
                Admit::Always => true,
                Admit::Until(old) => Instant::now() < old,
                Admit::Never => false,
            };
            gate.admit = Admit::Until(deadline);
            if !was_open {
                gate.tenure += 1;
            }
            !was_open
        };
        self.leading
            .send_if_modified(|leading| !std::mem::replace(leading, true));
        if reopened {
            self.openings.send_replace(self.tenure());
        }
    }

    /// Steps down: nothing is admitted until the next successful renewal.
    pub(super) fn close(&self) {
        self.gate.lock().expect("fence lock poisoned").admit = Admit::Never;
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
    S: Service<Request<B>> + Clone + Send + 'static,
    S::Response: Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    /// Checks in the future, not here: kube's client makes this call in its buffer's worker task,
    /// where the caller's tenure is not seen, and polls the future in the caller's.
    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The readied service goes with the request; a clone stays for the next `poll_ready`.
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        let fence = self.fence.clone();
        Box::pin(async move {
            if writes(request.method()) && !fence.admits_writes() {
                if let Some(metrics) = &fence.metrics {
                    metrics.write_fenced();
                }
                tracing::debug!(method = %request.method(), uri = %request.uri(), "write refused: the fence is closed");
                return Err(FencedWrite.into());
            }
            let mut ready = ready;
            ready.call(request).await.map_err(Into::into)
        })
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
    async fn work_begun_in_a_tenure_writes_nothing_after_a_lapse_even_once_the_fence_reopened() {
        let fence = Fence::closed();
        let other = Fence::closed();
        let later = || Instant::now() + Duration::from_secs(60);
        fence.renewed_until(later());
        other.renewed_until(later());
        // Through kube's client: its buffer makes the fence's call in a worker task of its own.
        let sent = Arc::new(Mutex::new(0));
        let counted = sent.clone();
        let service = tower::service_fn(move |_: Request<kube::client::Body>| {
            *counted.lock().unwrap() += 1;
            async { Ok::<_, BoxError>(http::Response::new(String::from("{}"))) }
        });
        let client = kube::Client::new(FenceLayer(fence.clone()).layer(service), "default");
        let write = || {
            let request = Request::post("/apis/example.com/v1/things").body(Vec::new());
            client.request_text(request.unwrap())
        };

        fence
            .within_tenure(async {
                write().await.expect("a write in its own tenure goes out");
                // The Lease lapses, and is won back: a new tenure.
                fence.close();
                fence.renewed_until(later());
                let error = write().await.expect_err("a write of the old tenure");
                assert!(is_fenced(&error), "{error}");
                assert!(!fence.admits_writes());
                assert!(other.admits_writes(), "another fence's tenures are its own");
            })
            .await;
        write().await.expect("work begun in the new tenure writes");
        assert!(fence.admits_writes());
        assert_eq!(*sent.lock().unwrap(), 2);
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
