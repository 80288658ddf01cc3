//! The gauges sampled every second rather than written by every pass: queue depths, cache sizes, the dependency
//! index, how long work has waited, and the plans awaiting a decision.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::facts::Selector;
use crate::operator::kinds::Registry;
use crate::operator::replica::liveness::Liveness;
use crate::operator::replica::metrics::Metrics;
use crate::plan::record::{self, Phase, Plan};

/// Keeps `reconciler_queue_depth`, `reconciler_cached_objects`, `reconciler_dependency_entries`,
/// `reconciler_stuck_seconds` (and the liveness's waiting work), `reconciler_plans_pending` and
/// `reconciler_plan_oldest_pending_seconds` current, every second, from what the host holds: no request.
pub async fn every_second(registry: Arc<Registry>, liveness: Arc<Liveness>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
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
        for (kind, size) in registry.source().cache_sizes() {
            metrics
                .cached_objects
                .get_or_create(&Metrics::kind(&kind.kind))
                .set(gauge(size));
        }
        metrics
            .dependency_entries
            .set(gauge(registry.scheduler().dependency_entries()));
        plans(&registry, jiff::Timestamp::now());
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
        for object in cache.list("", &Selector::default()) {
            let Some(plan) = Plan::of(&object) else {
                continue;
            };
            if plan.phase != Phase::Pending || plan.withdrawal || plan.decision.is_some() {
                continue;
            }
            let kind = object["spec"]["parent"]["kind"]
                .as_str()
                .unwrap_or_default();
            let age = plan
                .created
                .parse::<jiff::Timestamp>()
                .map(|at| (now - at).get_seconds().max(0))
                .unwrap_or(0);
            let entry = waiting.entry(kind.to_owned()).or_default();
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

fn gauge(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
