//! The work queue of one kind: which keys are due for a pass and when, with
//! de-duplication, one pass per key at a time, per-key failure backoff,
//! the per-key write bound, and memory of what its passes reported.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::hash::{BuildHasher, DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use reconciler_conventions::engine::Reported;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::operator::schedule::write_bound::Writes;
use crate::pass::Done;

/// How a queue backs off.
#[derive(Clone, Debug)]
pub struct QueueConfig {
    /// The delay after a first failure; doubled per consecutive failure.
    /// A [`Done::Retry`] waits a tenth of it.
    pub backoff_base: Duration,
    /// The longest failure backoff, jitter included.
    pub backoff_max: Duration,
    /// The fraction by which a backoff is spread either way (0.1 = ±10%),
    /// clamped to `0..=1`.
    pub jitter: f64,
    /// Seeds the jitter, which is a hash of the seed, the key and its
    /// failure count: a fixed seed gives reproducible schedules.
    pub jitter_seed: u64,
}

impl Default for QueueConfig {
    /// 1 s doubling to 5 min, ±10%, seeded afresh per process.
    fn default() -> Self {
        QueueConfig {
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(300),
            jitter: 0.1,
            jitter_seed: RandomState::new().hash_one("jitter"),
        }
    }
}

/// A cheap clonable handle on one kind's queue.
///
/// A key is handed out by [`next`](Self::next) once it is due and no pass
/// of it is in flight, and is in flight until [`done`](Self::done). Each key
/// has at most one pending time, the earliest asked for. A key asked for
/// during its pass is handed out again after `done`, at the earlier of that
/// time and the one its outcome asks for.
pub struct WorkQueue<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        WorkQueue {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<K> {
    config: QueueConfig,
    state: Mutex<State<K>>,
    /// Woken on every change: a new or earlier key, a pass ending, shutdown.
    changed: Notify,
}

struct State<K> {
    /// Keys not in flight, by pending time.
    due: BTreeSet<(Instant, K)>,
    /// Each key of `due` with its time.
    pending: HashMap<K, Instant>,
    in_flight: HashMap<K, InFlight>,
    /// Consecutive failures per key.
    failures: HashMap<K, u32>,
    /// What each key's passes reported by Event that its status may no
    /// longer say; in memory only (see docs/design.md).
    reported: HashMap<K, Reported>,
    /// The writes each key's passes made in the last minute: the bound
    /// delays its next pass.
    writes: HashMap<K, Writes>,
    shut_down: bool,
}

/// A pass in flight.
#[derive(Default)]
struct InFlight {
    /// The earliest time the key was asked for during the pass.
    again_at: Option<Instant>,
    /// The key was forgotten during the pass: its outcome schedules nothing.
    forgotten: bool,
}

impl<K: Clone + Eq + Hash + Ord> State<K> {
    /// Asks for a pass of `key` at `at`; the earliest time asked for wins.
    fn schedule(&mut self, key: K, at: Instant) {
        let at = self.writes.get(&key).map_or(at, |w| w.not_before(at));
        if let Some(pass) = self.in_flight.get_mut(&key) {
            pass.again_at = Some(pass.again_at.map_or(at, |t| t.min(at)));
            return;
        }
        if let Some(&t) = self.pending.get(&key) {
            if t <= at {
                return;
            }
            self.due.remove(&(t, key.clone()));
        }
        self.due.insert((at, key.clone()));
        self.pending.insert(key, at);
    }

    /// The first due key, now in flight; else when the next one is due.
    fn take_due(&mut self, now: Instant) -> Result<K, Option<Instant>> {
        match self.due.first() {
            Some(&(at, _)) if at <= now => {
                let (_, key) = self.due.pop_first().expect("a first entry");
                self.pending.remove(&key);
                self.in_flight.insert(key.clone(), InFlight::default());
                Ok(key)
            }
            first => Err(first.map(|&(at, _)| at)),
        }
    }
}

impl<K: Clone + Eq + Hash + Ord + Send + Sync + Debug + 'static> WorkQueue<K> {
    pub fn new(config: QueueConfig) -> Self {
        WorkQueue {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State {
                    due: BTreeSet::new(),
                    pending: HashMap::new(),
                    in_flight: HashMap::new(),
                    failures: HashMap::new(),
                    reported: HashMap::new(),
                    writes: HashMap::new(),
                    shut_down: false,
                }),
                changed: Notify::new(),
            }),
        }
    }

    /// Asks for a pass of `key` now.
    pub fn add(&self, key: K) {
        self.add_at(key, Instant::now());
    }

    /// Asks for a pass of `key` after `delay`, unless one is due sooner.
    #[cfg(test)]
    pub(crate) fn add_after(&self, key: K, delay: Duration) {
        self.add_at(key, after(Instant::now(), delay));
    }

    fn add_at(&self, key: K, at: Instant) {
        let mut state = self.lock();
        if state.shut_down {
            return;
        }
        state.schedule(key, at);
        drop(state);
        self.inner.changed.notify_waiters();
    }

    /// The next due key no pass of which is in flight, waiting for one; it
    /// is in flight until [`done`](Self::done). `None` once shut down, even
    /// if keys are pending.
    pub async fn next(&self) -> Option<K> {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let next_due = {
                let mut state = self.lock();
                if state.shut_down {
                    return None;
                }
                match state.take_due(Instant::now()) {
                    Ok(key) => return Some(key),
                    Err(next_due) => next_due,
                }
            };
            match next_due {
                Some(at) => {
                    tokio::select! {
                        () = &mut changed => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Ends the key's pass and schedules the next one as the outcome asks,
    /// or sooner if the key was asked for during the pass. A key not in
    /// flight is ignored.
    pub fn done(&self, key: &K, outcome: Done) {
        let mut state = self.lock();
        let Some(pass) = state.in_flight.remove(key) else {
            return;
        };
        if !state.shut_down {
            let now = Instant::now();
            let delay = if pass.forgotten {
                None
            } else {
                self.outcome_delay(&mut state, key, outcome)
            };
            let at = match (pass.again_at, delay.map(|d| after(now, d))) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(at) = at {
                state.schedule(key.clone(), at);
            }
        }
        drop(state);
        self.inner.changed.notify_waiters();
    }

    /// Records the outcome in the key's backoff; the delay it asks for.
    fn outcome_delay(&self, state: &mut State<K>, key: &K, outcome: Done) -> Option<Duration> {
        let config = &self.inner.config;
        match outcome {
            Done::Converged {
                requeue_after: delay,
            }
            | Done::Stalled {
                recheck_after: delay,
            } => {
                state.failures.remove(key);
                delay
            }
            Done::Retry => Some(config.backoff_base / 10),
            Done::Failed { retry_before } => {
                let failures = state.failures.entry(key.clone()).or_default();
                *failures = failures.saturating_add(1);
                let backoff = backoff(config, key, *failures);
                Some(retry_before.map_or(backoff, |before| backoff.min(before)))
            }
        }
    }

    /// What the key's earlier passes reported (nothing for a key not seen
    /// since the start).
    pub fn reported(&self, key: &K) -> Reported {
        self.lock().reported.get(key).cloned().unwrap_or_default()
    }

    /// What the key's passes have reported once a pass's Events are
    /// published.
    pub(crate) fn remember(&self, key: &K, reported: Reported) {
        let mut state = self.lock();
        if reported == Reported::default() {
            state.reported.remove(key);
        } else {
            state.reported.insert(key.clone(), reported);
        }
    }

    /// Records `count` writes the key's pass in flight made (children
    /// made or deleted, its status, its Events): a key at
    /// [`super::write_bound::WRITES_PER_MINUTE`] in the last minute passes again only once its
    /// oldest write leaves the window. Whether it is at the bound.
    pub(crate) fn wrote(&self, key: &K, count: usize) -> bool {
        let now = Instant::now();
        let mut state = self.lock();
        let writes = state.writes.entry(key.clone()).or_default();
        let at_bound = writes.made(count, now);
        if writes.is_empty(now) {
            state.writes.remove(key);
        }
        at_bound
    }

    /// The object is gone: drops the key's pending time, backoff and what
    /// it reported. A pass
    /// in flight ends as usual, but its outcome schedules nothing.
    pub(crate) fn forget(&self, key: &K) {
        let mut state = self.lock();
        if let Some(at) = state.pending.remove(key) {
            state.due.remove(&(at, key.clone()));
        }
        state.failures.remove(key);
        state.reported.remove(key);
        state.writes.remove(key);
        if let Some(pass) = state.in_flight.get_mut(key) {
            *pass = InFlight {
                again_at: None,
                forgotten: true,
            };
        }
    }

    /// Stops handing out keys: [`next`](Self::next) returns `None` and
    /// adds are ignored. Passes in flight may still end with `done`.
    pub fn shutdown(&self) {
        self.lock().shut_down = true;
        self.inner.changed.notify_waiters();
    }

    /// Keys in a pass.
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight.len()
    }

    /// Keys waiting for a pass, due or not, besides those in flight.
    pub fn pending(&self) -> usize {
        self.lock().pending.len()
    }

    /// Resolves once no pass is in flight.
    pub async fn idle(&self) {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.lock().in_flight.is_empty() {
                return;
            }
            changed.await;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// `now + delay`, a delay being at most a century.
fn after(now: Instant, delay: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    now + delay.min(CENTURY)
}

/// The backoff after the key's `failures`-th consecutive failure:
/// base·2^(failures-1), spread by the jitter, capped at the maximum, in
/// whole milliseconds (the timer's resolution).
fn backoff<K: Hash>(config: &QueueConfig, key: &K, failures: u32) -> Duration {
    let doubling = 2u32.saturating_pow(failures.saturating_sub(1));
    let delay = config
        .backoff_base
        .saturating_mul(doubling)
        .min(config.backoff_max);
    let mut hasher = DefaultHasher::new();
    (config.jitter_seed, key, failures).hash(&mut hasher);
    // The top 53 bits as a float in [0, 1), then in [-1, 1).
    let unit = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
    // Out of 0..=1 (NaN included) is clamped.
    let jitter = if config.jitter > 0.0 {
        config.jitter.min(1.0)
    } else {
        0.0
    };
    let millis = delay.as_millis() as f64 * (1.0 + jitter * (2.0 * unit - 1.0));
    Duration::from_millis(millis.round() as u64).min(config.backoff_max)
}

#[cfg(test)]
mod tests {
    use tokio::time::{advance, timeout};

    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// 1 s doubling to 60 s, no jitter.
    fn config() -> QueueConfig {
        QueueConfig {
            backoff_base: secs(1),
            backoff_max: secs(60),
            jitter: 0.0,
            jitter_seed: 7,
        }
    }

    fn queue() -> WorkQueue<&'static str> {
        WorkQueue::new(config())
    }

    /// The next key and how long it took to come (time is paused, so the
    /// wait is exactly until its pending time).
    async fn next_with_wait(q: &WorkQueue<&'static str>) -> (&'static str, Duration) {
        let start = Instant::now();
        let key = q.next().await.expect("a key");
        (key, start.elapsed())
    }

    /// Nothing is handed out within an hour.
    async fn assert_nothing_due(q: &WorkQueue<&'static str>) {
        let got = timeout(HOUR, q.next()).await;
        assert!(got.is_err(), "expected nothing due, got {got:?}");
    }

    /// Runs one pass of `key` ending with `outcome`.
    async fn pass(q: &WorkQueue<&'static str>, key: &'static str, outcome: Done) {
        assert_eq!(q.next().await, Some(key));
        q.done(&key, outcome);
    }

    const CONVERGED: Done = Done::Converged {
        requeue_after: None,
    };

    #[tokio::test(start_paused = true)]
    async fn a_key_added_many_times_while_pending_is_handed_out_once() {
        let q = queue();
        for _ in 0..3 {
            q.add("a");
        }
        q.add_after("a", secs(5));
        assert_eq!(q.pending(), 1);

        assert_eq!(q.next().await, Some("a"));
        q.done(&"a", CONVERGED);

        assert_nothing_due(&q).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_at_the_write_bound_waits_for_its_oldest_write_to_leave_the_window() {
        use crate::operator::schedule::write_bound::{WINDOW, WRITES_PER_MINUTE};
        let q = queue();
        q.add("a");
        assert_eq!(q.next().await, Some("a"));
        assert!(!q.wrote(&"a", WRITES_PER_MINUTE - 1), "under the bound");
        q.done(&"a", CONVERGED);
        q.add("a");
        assert_eq!(next_with_wait(&q).await, ("a", Duration::ZERO));
        assert!(q.wrote(&"a", 1), "at the bound");
        // Asked for during the pass and again after it: not before the
        // window frees, whatever asks.
        q.add("a");
        q.done(&"a", CONVERGED);
        q.add("a");
        assert_eq!(next_with_wait(&q).await, ("a", WINDOW));
        assert!(!q.wrote(&"a", 0), "the window moved on");
        q.done(&"a", CONVERGED);
        q.add("a");
        assert_eq!(next_with_wait(&q).await, ("a", Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_added_during_its_pass_is_handed_out_again_after_done() {
        let q = queue();
        q.add("a");
        assert_eq!(q.next().await, Some("a"));

        q.add("a");
        let second = timeout(HOUR, q.next()).await;
        assert!(second.is_err(), "never two passes of one key at once");
        q.done(&"a", CONVERGED);

        assert_eq!(next_with_wait(&q).await, ("a", Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn a_dirty_key_is_handed_out_immediately_whatever_done_said() {
        let outcomes = [
            CONVERGED,
            Done::Converged {
                requeue_after: Some(HOUR),
            },
            Done::Stalled {
                recheck_after: None,
            },
            Done::Failed { retry_before: None },
            Done::Retry,
        ];
        for outcome in outcomes {
            let q = queue();
            q.add("a");
            assert_eq!(q.next().await, Some("a"));
            q.add("a");
            q.done(&"a", outcome);

            assert_eq!(
                next_with_wait(&q).await,
                ("a", Duration::ZERO),
                "{outcome:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_time_asked_during_a_pass_yields_to_an_earlier_outcome() {
        let q = queue();
        q.add("a");
        assert_eq!(q.next().await, Some("a"));
        q.add_after("a", secs(30));
        q.done(
            &"a",
            Done::Converged {
                requeue_after: Some(secs(10)),
            },
        );

        assert_eq!(next_with_wait(&q).await, ("a", secs(10)));
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_schedules_the_key() {
        let q = queue();
        q.add_after("a", secs(5));

        assert_eq!(q.pending(), 1);
        assert_eq!(next_with_wait(&q).await, ("a", secs(5)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_earliest_pending_time_wins() {
        let q = queue();
        q.add_after("a", secs(5));
        q.add_after("a", secs(10));
        q.add_after("b", secs(10));
        q.add_after("b", secs(5));

        assert_eq!(next_with_wait(&q).await, ("a", secs(5)));
        assert_eq!(next_with_wait(&q).await, ("b", Duration::ZERO));
        q.done(&"a", CONVERGED);
        q.done(&"b", CONVERGED);
        assert_nothing_due(&q).await;
    }

    #[tokio::test(start_paused = true)]
    async fn add_overrides_a_pending_delay() {
        let q = queue();
        q.add_after("a", secs(60));
        advance(secs(1)).await;
        q.add("a");

        assert_eq!(next_with_wait(&q).await, ("a", Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_add_wakes_a_waiting_next() {
        let q = queue();
        q.add_after("a", secs(60));
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { next_with_wait(&q).await }
        });
        tokio::task::yield_now().await;
        advance(secs(1)).await;
        q.add("b");

        assert_eq!(waiter.await.unwrap(), ("b", secs(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn keys_are_handed_out_in_time_order() {
        let q = queue();
        q.add_after("c", secs(3));
        q.add_after("a", secs(1));
        q.add_after("b", secs(2));

        for key in ["a", "b", "c"] {
            assert_eq!(next_with_wait(&q).await, (key, secs(1)));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn converged_requeues_after_its_delay_and_resets_the_backoff() {
        let q = queue();
        q.add("a");
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        assert_eq!(next_with_wait(&q).await, ("a", secs(2)));
        q.done(
            &"a",
            Done::Converged {
                requeue_after: Some(secs(30)),
            },
        );

        assert_eq!(next_with_wait(&q).await, ("a", secs(30)));
        q.done(&"a", Done::Failed { retry_before: None });
        assert_eq!(next_with_wait(&q).await, ("a", secs(1)), "backoff reset");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_is_retried_no_later_than_the_time_its_pass_asked_for() {
        let q = queue();
        q.add("a");
        for _ in 0..5 {
            pass(&q, "a", Done::Failed { retry_before: None }).await;
        }
        assert_eq!(next_with_wait(&q).await, ("a", secs(16)));
        q.done(
            &"a",
            Done::Failed {
                retry_before: Some(secs(3)),
            },
        );
        assert_eq!(
            next_with_wait(&q).await,
            ("a", secs(3)),
            "the expiry the verdict asked for, not the 32 s backoff"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn converged_without_requeue_schedules_nothing() {
        let q = queue();
        q.add("a");
        pass(&q, "a", CONVERGED).await;

        assert_eq!((q.pending(), q.in_flight()), (0, 0));
        assert_nothing_due(&q).await;
    }

    #[tokio::test(start_paused = true)]
    async fn failed_backs_off_exponentially_up_to_the_cap() {
        let q = queue();
        q.add("a");
        let mut waits = Vec::new();
        for _ in 0..9 {
            let (_, wait) = next_with_wait(&q).await;
            waits.push(wait.as_secs());
            q.done(&"a", Done::Failed { retry_before: None });
        }

        assert_eq!(waits, [0, 1, 2, 4, 8, 16, 32, 60, 60]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_backoff_is_per_key() {
        let q = queue();
        q.add("a");
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        assert_eq!(next_with_wait(&q).await, ("a", secs(1)));
        q.done(&"a", Done::Failed { retry_before: None });
        q.add("b");
        pass(&q, "b", Done::Failed { retry_before: None }).await;

        assert_eq!(next_with_wait(&q).await, ("b", secs(1)));
        assert_eq!(next_with_wait(&q).await, ("a", secs(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn failure_jitter_is_bounded_and_deterministic() {
        let jittered = QueueConfig {
            jitter: 0.1,
            ..config()
        };
        let mut delays = BTreeSet::new();
        for failures in 1..=10 {
            let d = backoff(&jittered, &"a", failures);
            let plain = backoff(&config(), &"a", failures).as_secs_f64();
            let ratio = d.as_secs_f64() / plain;
            assert!((0.9..=1.1).contains(&ratio), "{failures}: {d:?}");
            assert!(d <= jittered.backoff_max);
            assert_eq!(d, backoff(&jittered, &"a", failures), "same seed");
            delays.insert(d);
        }
        assert!(delays.len() > 5, "the jitter spreads: {delays:?}");
        let spread: BTreeSet<Duration> = ["a", "b", "c", "d"]
            .iter()
            .map(|k| backoff(&jittered, k, 1))
            .collect();
        assert_eq!(spread.len(), 4, "keys failing together spread out");

        let q = WorkQueue::new(jittered.clone());
        q.add("a");
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        assert_eq!(next_with_wait(&q).await, ("a", backoff(&jittered, &"a", 1)));
    }

    #[tokio::test(start_paused = true)]
    async fn stalled_does_not_back_off_and_resets_failures() {
        let q = queue();
        q.add("a");
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        assert_eq!(next_with_wait(&q).await, ("a", secs(2)));
        q.done(
            &"a",
            Done::Stalled {
                recheck_after: Some(secs(120)),
            },
        );

        assert_eq!(next_with_wait(&q).await, ("a", secs(120)));
        q.done(&"a", Done::Failed { retry_before: None });
        assert_eq!(next_with_wait(&q).await, ("a", secs(1)), "failures reset");
        q.done(
            &"a",
            Done::Stalled {
                recheck_after: None,
            },
        );
        assert_nothing_due(&q).await;
    }

    #[tokio::test(start_paused = true)]
    async fn retry_is_soon_and_does_not_grow_the_backoff() {
        let q = queue();
        q.add("a");
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        assert_eq!(next_with_wait(&q).await, ("a", secs(2)));
        q.done(&"a", Done::Retry);

        assert_eq!(next_with_wait(&q).await, ("a", Duration::from_millis(100)));
        q.done(&"a", Done::Failed { retry_before: None });
        assert_eq!(next_with_wait(&q).await, ("a", secs(4)), "third failure");
    }

    #[tokio::test(start_paused = true)]
    async fn forget_drops_the_pending_time_and_the_backoff() {
        let q = queue();
        q.add("a");
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        assert_eq!(q.pending(), 1);

        q.forget(&"a");
        assert_eq!(q.pending(), 0);
        assert_nothing_due(&q).await;

        q.add("a");
        pass(&q, "a", Done::Failed { retry_before: None }).await;
        assert_eq!(next_with_wait(&q).await, ("a", secs(1)), "backoff dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn forget_during_a_pass_drops_its_outcome() {
        let q = queue();
        q.add("a");
        assert_eq!(q.next().await, Some("a"));
        q.add("a");
        q.forget(&"a");
        q.done(&"a", Done::Failed { retry_before: None });

        assert_eq!((q.pending(), q.in_flight()), (0, 0));
        assert_nothing_due(&q).await;

        q.add("b");
        assert_eq!(q.next().await, Some("b"));
        q.forget(&"b");
        q.add("b");
        q.done(&"b", CONVERGED);
        assert_eq!(
            next_with_wait(&q).await,
            ("b", Duration::ZERO),
            "added after forget"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_wakes_waiters_and_ignores_adds() {
        let q = queue();
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.next().await }
        });
        tokio::task::yield_now().await;

        q.shutdown();

        assert_eq!(waiter.await.unwrap(), None);
        q.add("a");
        assert_eq!(q.pending(), 0);
        assert_eq!(q.next().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn next_returns_none_after_shutdown_though_keys_are_pending() {
        let q = queue();
        q.add("a");
        q.shutdown();

        assert_eq!(q.next().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_resolves_when_no_pass_is_in_flight() {
        let q = queue();
        q.idle().await;
        q.add("a");
        q.add("b");
        assert_eq!(q.next().await, Some("a"));
        assert_eq!(q.next().await, Some("b"));
        q.shutdown();
        let idle = tokio::spawn({
            let q = q.clone();
            async move { q.idle().await }
        });

        q.done(&"a", CONVERGED);
        tokio::task::yield_now().await;
        assert!(!idle.is_finished(), "b is still in flight");
        q.done(&"b", Done::Failed { retry_before: None });

        timeout(HOUR, idle).await.unwrap().unwrap();
        assert_eq!((q.pending(), q.in_flight()), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn counts_keys_pending_and_in_flight() {
        let q = queue();
        q.add("a");
        q.add("b");
        q.add_after("c", secs(5));
        assert_eq!((q.pending(), q.in_flight()), (3, 0));

        assert_eq!(q.next().await, Some("a"));
        assert_eq!((q.pending(), q.in_flight()), (2, 1));

        q.done(&"a", CONVERGED);
        assert_eq!((q.pending(), q.in_flight()), (2, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn workers_share_keys_each_handed_out_once() {
        let q = WorkQueue::<u32>::new(config());
        for key in 0..50 {
            q.add(key);
            q.add(key % 10);
        }
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    while let Some(key) = q.next().await {
                        seen.push(key);
                        tokio::task::yield_now().await;
                        q.done(&key, CONVERGED);
                    }
                    seen
                })
            })
            .collect();
        while q.pending() + q.in_flight() > 0 {
            tokio::task::yield_now().await;
        }
        q.shutdown();

        let mut seen = Vec::new();
        for worker in workers {
            seen.extend(worker.await.unwrap());
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
    }
}
