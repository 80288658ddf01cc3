//! The gauges sampled every second rather than written by every pass: queue depths, cache sizes, the dependency
//! index, how long work has waited, the plans awaiting a decision, and the oldest parent not passed since its
//! spec changed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::facts::Selector;
use crate::facts::memo::MemoKey;
use crate::operator::kinds::Registry;
use crate::operator::replica::liveness::Liveness;
use crate::operator::replica::metrics::Metrics;
use crate::plan::record::{self, Phase, Plan};

/// Keeps `reconciler_queue_depth`, `reconciler_cached_objects` and `reconciler_cached_bytes`,
/// `reconciler_dependency_entries`,
/// `reconciler_stuck_seconds` (and the liveness's waiting work), `reconciler_plans_pending` and
/// `reconciler_plan_oldest_pending_seconds`, `reconciler_parent_unpassed_seconds` current, every second, from what
/// the host holds: no request.
pub(super) async fn every_second(registry: Arc<Registry>, liveness: Arc<Liveness>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut waiting = Waiting::default();
    loop {
        tick.tick().await;
        let metrics = registry.metrics();
        let mut pending = 0;
        for (id, kind) in registry.kinds() {
            let depth = registry.scheduler().queue(id).pending();
            pending += depth;
            metrics
                .queue_depth
                .get_or_create(&Metrics::kind(&kind.resource.kind))
                .set(gauge(depth));
        }
        liveness.set_pending(pending);
        metrics
            .stuck_seconds
            .set(gauge(liveness.stuck_for().as_secs()));
        for (kind, size, bytes) in registry.source().cache_sizes() {
            let kind = Metrics::kind(&kind.kind);
            metrics.cached_objects.get_or_create(&kind).set(gauge(size));
            metrics.cached_bytes.get_or_create(&kind).set(gauge(bytes));
        }
        metrics
            .dependency_entries
            .set(gauge(registry.scheduler().dependency_entries()));
        plans(&registry, jiff::Timestamp::now());
        waiting.sample(&registry, Instant::now());
    }
}

/// The cached parents whose spec changed since their last pass: by uid,
/// the generation waiting and since when this replica saw it waiting.
#[derive(Default)]
struct Waiting(HashMap<String, (i64, Instant)>);

impl Waiting {
    /// Per kind, the age at `now` of the oldest parent waiting for a pass of its generation (its Ready condition
    /// observed an older one, or there is none yet); every served kind has its series (0 where none waits).
    fn sample(&mut self, registry: &Registry, now: Instant) {
        let mut still = Waiting::default();
        for (_, kind) in registry.kinds() {
            // Read from each version's memo: a parent is parsed once per
            // version, not once a second, and never all at once.
            let parents: Vec<Arc<Generations>> = kind
                .cache
                .list_cached("", &Selector::default())
                .iter()
                .map(|p| {
                    p.memo()
                        .get_or_insert(MemoKey::Generations, || Generations::of(&p.value()))
                })
                .collect();
            let oldest = still.oldest(&self.0, parents.iter().map(|p| &**p), now);
            registry
                .metrics()
                .parent_unpassed_seconds
                .get_or_create(&Metrics::kind(&kind.resource.kind))
                .set(gauge(oldest.as_secs()));
        }
        *self = still;
    }

    /// Of `parents`, the age at `now` of the oldest waiting (0: none), each waiting since it was first seen
    /// waiting at its generation (in `before`, the last sample); each kept.
    fn oldest<'p>(
        &mut self,
        before: &HashMap<String, (i64, Instant)>,
        parents: impl Iterator<Item = &'p Generations>,
        now: Instant,
    ) -> Duration {
        let mut oldest = Duration::ZERO;
        for parent in parents {
            let (Some(uid), Some(generation)) = (&parent.uid, parent.generation) else {
                continue;
            };
            if parent.observed.is_some_and(|o| o >= generation) {
                continue;
            }
            let since = match before.get(&**uid) {
                Some((g, since)) if *g == generation => *since,
                _ => now,
            };
            oldest = oldest.max(now.duration_since(since));
            self.0.insert(uid.to_string(), (generation, since));
        }
        oldest
    }
}

/// What the sampler reads of one version of a parent: its uid, its
/// generation and the generation its Ready condition observed.
struct Generations {
    uid: Option<Box<str>>,
    generation: Option<i64>,
    observed: Option<i64>,
}

impl Generations {
    fn of(parent: &Value) -> Generations {
        let md = &parent["metadata"];
        let observed = parent["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .and_then(|ready| ready["observedGeneration"].as_i64());
        Generations {
            uid: md["uid"].as_str().map(Into::into),
            generation: md["generation"].as_i64(),
            observed,
        }
    }
}

/// The plans awaiting a decision in the cache (none where plans are not served), counted per parent kind, with
/// the age of the oldest at `now`; every served kind has both series (0 where none waits).
fn plans(registry: &Registry, now: jiff::Timestamp) {
    let mut waiting: BTreeMap<String, (i64, i64)> = registry
        .kinds()
        .into_iter()
        .map(|(_, kind)| (kind.resource.kind.clone(), (0, 0)))
        .collect();
    if let Some(cache) = registry.source().cache(&record::kind_ref()) {
        for cached in cache.list_cached("", &Selector::default()) {
            // As the parents above: parsed once per version.
            let awaiting = cached.memo().get_or_insert(MemoKey::AwaitingDecision, || {
                AwaitingDecision::of(&cached.value())
            });
            let Some(AwaitingDecision { kind, created }) = &*awaiting else {
                continue;
            };
            let age = created
                .map(|at| (now - at).get_seconds().max(0))
                .unwrap_or(0);
            let entry = waiting.entry(kind.to_string()).or_default();
            entry.0 += 1;
            entry.1 = entry.1.max(age);
        }
    }
    let metrics = registry.metrics();
    for (kind, (count, oldest)) in waiting {
        let label = Metrics::kind(&kind);
        metrics.plans_pending.get_or_create(&label).set(count);
        metrics
            .plan_oldest_pending_seconds
            .get_or_create(&label)
            .set(oldest);
    }
}

/// A plan awaiting a decision, as the sampler reads it: its parent's kind
/// and when it was made.
struct AwaitingDecision {
    kind: Box<str>,
    created: Option<jiff::Timestamp>,
}

impl AwaitingDecision {
    /// `None` for an object that is not a plan, or a plan decided, past
    /// Pending or a withdrawal record.
    fn of(object: &Value) -> Option<AwaitingDecision> {
        let plan = Plan::of(object)?;
        if plan.phase != Phase::Pending || plan.withdrawal || plan.decision.is_some() {
            return None;
        }
        Some(AwaitingDecision {
            kind: object["spec"]["parent"]["kind"]
                .as_str()
                .unwrap_or_default()
                .into(),
            created: plan.created.parse().ok(),
        })
    }
}

fn gauge(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parent(uid: &str, generation: i64, observed: Option<i64>) -> Generations {
        let conditions: Vec<Value> = observed
            .map(|o| json!({"type": "Ready", "status": "True", "observedGeneration": o}))
            .into_iter()
            .collect();
        Generations::of(&json!({"metadata": {"uid": uid, "generation": generation},
               "status": {"conditions": conditions}}))
    }

    #[test]
    fn a_parent_waits_from_the_sample_that_first_saw_its_generation_unpassed() {
        let t0 = Instant::now();
        let later = |s: u64| t0 + Duration::from_secs(s);
        let mut first = Waiting::default();
        let passed = parent("a", 2, Some(2));
        let changed = parent("b", 3, Some(2));
        let new = parent("c", 1, None);
        assert_eq!(
            first.oldest(&HashMap::new(), [&passed, &changed, &new].into_iter(), t0),
            Duration::ZERO
        );
        let mut second = Waiting::default();
        assert_eq!(
            second.oldest(&first.0, [&passed, &changed, &new].into_iter(), later(300)),
            Duration::from_secs(300)
        );
        // b passed; c's spec changed again: it waits from now.
        let mut third = Waiting::default();
        let b_passed = parent("b", 3, Some(3));
        let c_changed = parent("c", 2, None);
        assert_eq!(
            third.oldest(&second.0, [&b_passed, &c_changed].into_iter(), later(310)),
            Duration::ZERO
        );
        assert_eq!(third.0.len(), 1);
    }
}
