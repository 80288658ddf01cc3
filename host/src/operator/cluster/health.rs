//! Watch health: for every watch, whether it is connected, when it last
//! heard from the API server and how often it restarted (as metrics), and
//! whether the host is ready: every required watch has listed its kind
//! once, and none has been down for longer than a bound.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reconciler_conventions::kind::KindRef;

use crate::operator::replica::metrics::{Metrics, WatchLabels};

/// What is known of one watch.
struct State {
    /// A parent kind or a read no guest has optional.
    required: bool,
    /// Listed its kind at least once.
    synced: bool,
    /// Since when it has been failing, if it is.
    down_since: Option<Instant>,
}

/// Every watch's health.
pub struct WatchHealth {
    watches: Mutex<BTreeMap<WatchLabels, State>>,
    metrics: Arc<Metrics>,
}

impl WatchHealth {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        WatchHealth {
            watches: Mutex::new(BTreeMap::new()),
            metrics,
        }
    }

    /// A new watch of `kind` in `namespace` ("" for all), reporting here.
    pub fn register(
        self: &Arc<Self>,
        kind: &KindRef,
        namespace: &str,
        required: bool,
    ) -> WatchProbe {
        let labels = WatchLabels {
            kind: kind.to_string(),
            namespace: namespace.to_owned(),
        };
        self.watches.lock().expect("health lock").insert(
            labels.clone(),
            State {
                required,
                synced: false,
                down_since: None,
            },
        );
        self.metrics.watch_connected.get_or_create(&labels).set(0);
        WatchProbe {
            health: self.clone(),
            labels,
        }
    }

    /// Ready, or why not: the required watches that have not listed their
    /// kind yet, or have been down for longer than `bound`.
    pub fn readiness(&self, bound: Duration) -> Result<(), Vec<String>> {
        let watches = self.watches.lock().expect("health lock");
        let not_ready: Vec<String> = watches
            .iter()
            .filter(|(_, s)| s.required)
            .filter_map(|(w, s)| {
                let place = if w.namespace.is_empty() {
                    String::new()
                } else {
                    format!(" in {}", w.namespace)
                };
                if !s.synced {
                    Some(format!(
                        "the watch of {}{place} has not listed it yet",
                        w.kind
                    ))
                } else {
                    s.down_since.filter(|t| t.elapsed() > bound).map(|t| {
                        format!(
                            "the watch of {}{place} has been down for {}s",
                            w.kind,
                            t.elapsed().as_secs()
                        )
                    })
                }
            })
            .collect();
        if not_ready.is_empty() {
            Ok(())
        } else {
            Err(not_ready)
        }
    }
}

/// One watch's reports.
pub struct WatchProbe {
    health: Arc<WatchHealth>,
    labels: WatchLabels,
}

impl WatchProbe {
    fn update(&self, f: impl FnOnce(&mut State)) {
        if let Some(state) = self
            .health
            .watches
            .lock()
            .expect("health lock")
            .get_mut(&self.labels)
        {
            f(state);
        }
    }

    /// An event arrived: the watch is connected.
    pub(crate) fn heard(&self) {
        self.update(|s| s.down_since = None);
        let metrics = &self.health.metrics;
        metrics.watch_connected.get_or_create(&self.labels).set(1);
        let now = jiff::Timestamp::now().as_second();
        metrics
            .watch_last_event
            .get_or_create(&self.labels)
            .set(now);
    }

    /// It listed its kind (again).
    pub fn synced(&self) {
        self.update(|s| s.synced = true);
        self.heard();
    }

    /// It failed and restarts (after a backoff).
    pub fn failed(&self) {
        self.update(|s| {
            s.down_since.get_or_insert_with(Instant::now);
        });
        let metrics = &self.health.metrics;
        metrics.watch_connected.get_or_create(&self.labels).set(0);
        metrics.watch_restarts.get_or_create(&self.labels).inc();
    }
}
