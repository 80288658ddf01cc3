//! Liveness: whether the process is wedged, for `/healthz`. The workers
//! mark each pass they end; work waiting with no pass ended for longer
//! than the bound is a wedged process, which the kubelet restarts.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// When the last pass ended, and how much work is waiting.
#[derive(Debug)]
pub struct Liveness {
    started: Instant,
    /// Milliseconds since `started` when a pass last ended (or work last
    /// arrived in an empty queue).
    progressed_ms: AtomicU64,
    pending: AtomicUsize,
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            started: Instant::now(),
            progressed_ms: AtomicU64::new(0),
            pending: AtomicUsize::new(0),
        }
    }
}

impl Liveness {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A pass ended.
    pub(crate) fn progressed(&self) {
        self.progressed_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// How many parents wait for a pass now. Work arriving in empty queues
    /// starts the clock afresh: an idle host is not a wedged one.
    pub(crate) fn set_pending(&self, pending: usize) {
        if self.pending.swap(pending, Ordering::Relaxed) == 0 && pending > 0 {
            self.progressed();
        }
    }

    /// How long work has waited with no pass ending (zero while nothing
    /// waits): `reconciler_stuck_seconds`, and what `/healthz` bounds.
    pub fn stuck_for(&self) -> Duration {
        if self.pending.load(Ordering::Relaxed) == 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(
            self.now_ms()
                .saturating_sub(self.progressed_ms.load(Ordering::Relaxed)),
        )
    }

    /// `Err` naming how long work has waited with no pass ending, when
    /// longer than `bound`.
    pub fn check(&self, bound: Duration) -> Result<(), String> {
        let pending = self.pending.load(Ordering::Relaxed);
        let since = self.stuck_for();
        if pending > 0 && since > bound {
            Err(format!(
                "wedged: {pending} parents wait and no pass has ended for {}s (bound {}s)",
                since.as_secs(),
                bound.as_secs()
            ))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_is_alive_and_waiting_work_without_progress_is_wedged() {
        let l = Liveness::default();
        assert!(l.check(Duration::ZERO).is_ok(), "nothing waits");
        l.set_pending(3);
        std::thread::sleep(Duration::from_millis(20));
        let e = l.check(Duration::from_millis(5)).unwrap_err();
        assert!(e.starts_with("wedged: 3 parents wait"), "{e}");
        assert!(l.stuck_for() >= Duration::from_millis(20));
        l.progressed();
        assert!(
            l.check(Duration::from_millis(5)).is_ok(),
            "a pass just ended"
        );
        assert!(l.check(Duration::from_secs(60)).is_ok());
    }
}
