//! The write fence: a replica elected by Lease sends a write (any request
//! but a read) only while its Lease is valid by its own monotonic clock,
//! less a margin, counted from when its last confirmed renewal was sent.
//! A leader frozen past its Lease (SIGSTOP, a VM paused, a long GC of the
//! node) and resumed writes nothing, even before its Lease manager notices
//! that another replica leads: its writes are refused here, before they
//! leave the process (issue 31).
//!
//! Two tower layers share one [`Fence`]: [`RenewalLayer`] on the Lease's own
//! client moves the fence forward on each write it sees confirmed;
//! [`FenceLayer`] on the client every other write goes through refuses a
//! write while the fence is shut. A replica without leader election is
//! never fenced. A ring member's fence seals for good once its Lease may
//! have lapsed in others' eyes: a renewal answered more than the Lease's
//! duration after the last confirmed one was sent (a renewal sent before a
//! pause lands after it, its renewTime in the past, once the others took
//! the member's parents over). Even its own Lease renewed again then lets
//! nothing of its out, and the member exits to rejoin as a new one.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tower::{BoxError, Layer, Service};

/// Until when this replica may write.
#[derive(Debug)]
pub struct Fence {
    /// `None`: never fenced (no leader election).
    lease: Option<LeaseTerms>,
    valid_until: Mutex<Option<Instant>>,
    /// A ring member's: when its last confirmed Lease write was sent, and
    /// whether the fence sealed.
    seals: Option<Seals>,
}

#[derive(Debug)]
struct Seals {
    last_sent: Mutex<Option<Instant>>,
    sealed: watch::Sender<bool>,
}

/// The Lease's duration and the margin kept before its end.
#[derive(Clone, Copy, Debug)]
struct LeaseTerms {
    duration: Duration,
    margin: Duration,
}

/// A write refused because the fence is shut. Retryable: the pass is
/// retried quietly, as after a conflict; a replica that lost its Lease
/// exits meanwhile.
#[derive(Debug, thiserror::Error)]
#[error(
    "write refused: this replica's Lease is not confirmed valid (its last renewal was sent more than {0:?} ago, or none yet)"
)]
pub(crate) struct Fenced(Duration);

impl Fence {
    /// A fence that never shuts: the replica writes from the start.
    pub fn open() -> Arc<Fence> {
        Arc::new(Fence {
            lease: None,
            valid_until: Mutex::new(None),
            seals: None,
        })
    }

    /// A fence shut until a renewal of a Lease of `duration` is confirmed;
    /// each confirmed renewal opens it until `duration - margin` after the
    /// renewal was sent. The holder renews `grace` before the end: the
    /// margin is half of it, the other half left for the renewal's answer.
    pub(crate) fn for_lease(duration: Duration, grace: Duration) -> Arc<Fence> {
        Arc::new(Fence {
            lease: Some(LeaseTerms {
                duration,
                margin: grace / 2,
            }),
            valid_until: Mutex::new(None),
            seals: None,
        })
    }

    /// [`Fence::for_lease`], sealed for good once the Lease lapsed (a ring
    /// member's).
    pub(crate) fn for_member_lease(duration: Duration, grace: Duration) -> Arc<Fence> {
        let mut fence = Arc::into_inner(Fence::for_lease(duration, grace)).expect("just made");
        fence.seals = Some(Seals {
            last_sent: Mutex::new(None),
            sealed: watch::Sender::new(false),
        });
        Arc::new(fence)
    }

    /// Resolves once the fence sealed (never, for another than a ring
    /// member's).
    pub async fn sealed(&self) {
        match &self.seals {
            Some(seals) => {
                let mut sealed = seals.sealed.subscribe();
                let _ = sealed.wait_for(|s| *s).await;
            }
            None => std::future::pending().await,
        }
    }

    /// Whether a write may be sent now.
    pub(crate) fn is_open(&self) -> bool {
        let Some(_) = self.lease else { return true };
        if self.seals.as_ref().is_some_and(|s| *s.sealed.borrow()) {
            return false;
        }
        self.valid_until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|until| Instant::now() < until)
    }

    /// A write to the Lease sent at `sent` was confirmed.
    fn renewed(&self, sent: Instant) {
        let Some(terms) = self.lease else { return };
        if let Some(seals) = &self.seals {
            let mut last = seals.last_sent.lock().unwrap_or_else(|e| e.into_inner());
            if *seals.sealed.borrow() {
                return;
            }
            if last.is_some_and(|l| Instant::now() > l + terms.duration) {
                seals.sealed.send_replace(true);
                return;
            }
            if last.is_none_or(|l| l < sent) {
                *last = Some(sent);
            }
        }
        let until = sent + terms.duration.saturating_sub(terms.margin);
        let mut valid = self.valid_until.lock().unwrap_or_else(|e| e.into_inner());
        if valid.is_none_or(|v| v < until) {
            *valid = Some(until);
        }
    }

    fn refusal(&self) -> Fenced {
        Fenced(
            self.lease
                .map(|t| t.duration.saturating_sub(t.margin))
                .unwrap_or_default(),
        )
    }
}

/// Whether `e` (a kube client error) is a write the fence refused.
pub(crate) fn is_fenced(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Service(inner) if inner.is::<Fenced>())
}

fn is_write(method: &http::Method) -> bool {
    !matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    )
}

type Answer<R> = Pin<Box<dyn Future<Output = Result<R, BoxError>> + Send>>;

/// Refuses writes while the fence is shut.
#[derive(Clone)]
pub(crate) struct FenceLayer(pub Arc<Fence>);

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
pub(crate) struct FenceService<S> {
    inner: S,
    fence: Arc<Fence>,
}

impl<S, B, R> Service<http::Request<B>> for FenceService<S>
where
    S: Service<http::Request<B>, Response = R>,
    R: Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = R;
    type Error = BoxError;
    type Future = Answer<R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if is_write(request.method()) && !self.fence.is_open() {
            let refused: BoxError = Box::new(self.fence.refusal());
            return Box::pin(std::future::ready(Err(refused)));
        }
        let answer = self.inner.call(request);
        Box::pin(async move { answer.await.map_err(Into::into) })
    }
}

/// Opens the fence on each confirmed write to the Lease (an acquisition
/// or a renewal), from the moment it was sent.
#[derive(Clone)]
pub(crate) struct RenewalLayer(pub Arc<Fence>);

impl<S> Layer<S> for RenewalLayer {
    type Service = RenewalService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RenewalService {
            inner,
            fence: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct RenewalService<S> {
    inner: S,
    fence: Arc<Fence>,
}

impl<S, B, RB> Service<http::Request<B>> for RenewalService<S>
where
    S: Service<http::Request<B>, Response = http::Response<RB>>,
    RB: Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = http::Response<RB>;
    type Error = BoxError;
    type Future = Answer<http::Response<RB>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let write = is_write(request.method());
        let sent = Instant::now();
        let answer = self.inner.call(request);
        let fence = self.fence.clone();
        Box::pin(async move {
            let response = answer.await.map_err(Into::into)?;
            if write && response.status().is_success() {
                fence.renewed(sent);
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_fence_never_shuts_and_a_lease_fence_opens_on_renewal() {
        assert!(Fence::open().is_open());
        let fence = Fence::for_lease(Duration::from_secs(15), Duration::from_secs(5));
        assert!(!fence.is_open(), "shut until a renewal is confirmed");
        fence.renewed(Instant::now());
        assert!(fence.is_open());
        // A renewal sent 13 s ago (15 s less the 2.5 s margin): shut.
        let fence = Fence::for_lease(Duration::from_secs(15), Duration::from_secs(5));
        fence.renewed(Instant::now() - Duration::from_secs(13));
        assert!(!fence.is_open());
        // An older confirmation answered late never moves it back.
        fence.renewed(Instant::now());
        fence.renewed(Instant::now() - Duration::from_secs(14));
        assert!(fence.is_open());
    }

    #[tokio::test]
    async fn a_ring_members_fence_seals_once_its_lease_may_have_lapsed() {
        let fence = Fence::for_member_lease(Duration::from_secs(15), Duration::from_secs(5));
        // Renewals answered (now) within the Lease of the last one sent.
        fence.renewed(Instant::now() - Duration::from_secs(10));
        fence.renewed(Instant::now() - Duration::from_secs(5));
        fence.renewed(Instant::now());
        assert!(fence.is_open());
        let sealed = {
            let fence = fence.clone();
            tokio::spawn(async move { fence.sealed().await })
        };
        // One answered (now) 16 s after the last was sent (a pause, or a
        // renewal held up past the Lease): sealed, for good.
        let late = Fence::for_member_lease(Duration::from_secs(15), Duration::from_secs(5));
        late.renewed(Instant::now() - Duration::from_secs(16));
        late.renewed(Instant::now() - Duration::from_secs(1));
        assert!(!late.is_open());
        late.renewed(Instant::now());
        assert!(!late.is_open(), "sealed for good");
        tokio::time::timeout(Duration::from_secs(1), late.sealed())
            .await
            .expect("said sealed");
        // The first fence did not seal.
        assert!(!sealed.is_finished());
        sealed.abort();
        // A leader's fence never seals.
        let leader = Fence::for_lease(Duration::from_secs(15), Duration::from_secs(5));
        leader.renewed(Instant::now() - Duration::from_secs(16));
        leader.renewed(Instant::now());
        assert!(leader.is_open());
    }

    #[tokio::test]
    async fn a_shut_fence_refuses_writes_and_lets_reads_through() {
        use tower::ServiceExt as _;
        let fence = Fence::for_lease(Duration::from_secs(15), Duration::from_secs(5));
        let echo = tower::service_fn(|_: http::Request<()>| async {
            Ok::<_, BoxError>(http::Response::new(()))
        });
        let mut fenced = FenceLayer(fence.clone()).layer(echo);
        let request = |method| http::Request::builder().method(method).body(()).unwrap();
        let refused = fenced
            .ready()
            .await
            .unwrap()
            .call(request(http::Method::PATCH))
            .await
            .expect_err("a write is refused");
        assert!(refused.is::<Fenced>(), "{refused}");
        fenced
            .ready()
            .await
            .unwrap()
            .call(request(http::Method::GET))
            .await
            .expect("a read passes");
        // A confirmed write through the Lease's client opens it.
        let mut lease = RenewalLayer(fence.clone()).layer(echo);
        lease
            .ready()
            .await
            .unwrap()
            .call(request(http::Method::PUT))
            .await
            .unwrap();
        fenced
            .ready()
            .await
            .unwrap()
            .call(request(http::Method::PATCH))
            .await
            .expect("open after a renewal");
    }
}
