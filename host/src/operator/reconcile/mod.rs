//! The operator's pass over one parent: the parent from the cache and its
//! owned status, the pass driven ([`driver`]: the guest's evaluations with
//! reads past the cache, its changes carried out ([`changes`]), the pass
//! settled by [`crate::pass::settle`]), and reported ([`report`]): the
//! status written once if it changed, then its Events.
//! Every change to the cluster goes through one small interface
//! ([`effects::Effects`]: make the changes, write the plan, write the
//! status, publish Events), which the unit tests ([`tests`]) record. A
//! pass knows nothing of hot swap: it says which module evaluated and
//! whether the guest was to blame, and its caller ([`workers`]) counts that
//! against the module's probation.

mod changes;
pub(crate) mod driver;
pub mod dry_run;
pub(crate) mod effects;
pub(crate) mod evaluation;
pub(crate) mod handover;
mod report;
#[cfg(test)]
mod tests;
pub mod workers;

use std::collections::BTreeSet;
use std::sync::Arc;

use reconciler_conventions::engine::ErrorClass;
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::Value;
use tracing::Instrument;

use crate::facts::Dependency;
use crate::operator::cluster::decode;
use crate::operator::cluster::past_cache_reads::PastReads;
use crate::operator::kinds::{Kind, Registry};
use crate::operator::replica::metrics::Metrics;
use crate::operator::ring::partition::Claim;
use crate::operator::schedule::ParentKey;
use crate::operator::schedule::queue::WorkQueue;
use crate::operator::write::owned::owned_part;
use crate::pass::{Done, Settled};
use crate::plan::record;
use crate::runtime::Module;
use driver::Pass;
use effects::Effects;
use evaluation::{Evaluation, World};
use report::Reporter;

/// How a pass ended, for the queue and for the module's probation.
pub struct Ended {
    pub done: Done,
    /// The module that evaluated the parent, and whether the guest was to
    /// blame for a failure; `None` when no guest ran.
    pub evaluated: Option<(Module, bool)>,
}

impl Ended {
    fn without_guest(done: Done) -> Self {
        Ended {
            done,
            evaluated: None,
        }
    }
}

/// One pass of `key`.
pub async fn run(registry: &Registry, key: &ParentKey) -> Ended {
    let kind = registry.kind(key.kind);
    let queue = registry.scheduler().queue(key.kind);
    let kind = &*kind;
    // The parent's identity on every line of its pass, text and JSON alike
    // (`parent.name`, not `name`: a JSON span object has its own `name`).
    let span = tracing::info_span!(
        "reconcile",
        parent.kind = %kind.resource.kind,
        parent.namespace = %key.namespace,
        parent.name = %key.name
    );
    // Another replica's parent (it writes it), or, in the ring, one this
    // member is asked to hand over.
    let cached = kind.cache.get(&key.namespace, &key.name);
    let _in_flight = match registry.partition().claim(key, cached.as_deref()) {
        Claim::Mine(in_flight) => in_flight,
        Claim::Other => return forgotten(&queue, key),
        Claim::HandOver(asked) => {
            return handover::hand_over(registry, kind, &queue, key, asked).await;
        }
    };
    // The module is taken once: a swap during the pass leaves it on this one.
    let Some(module) = kind.module() else {
        // The kind's module was removed: nothing runs, nothing is written.
        return forgotten(&queue, key);
    };
    let effects = effects::Cluster::of(registry, kind);
    reconcile(registry, &effects, kind, &queue, &module, key)
        .instrument(span)
        .await
}

/// A pass of `key`: what it gathered, settled, its effects carried out
/// through `effects`.
async fn reconcile(
    registry: &Registry,
    effects: &impl Effects,
    kind: &Kind,
    queue: &WorkQueue<ParentKey>,
    module: &Module,
    key: &ParentKey,
) -> Ended {
    registry
        .metrics()
        .passes
        .get_or_create(&Metrics::kind(&kind.resource.kind))
        .inc();
    let Some(parent) = kind.cache.get(&key.namespace, &key.name) else {
        forget(registry, queue, key);
        return Ended::without_guest(Done::Converged {
            requeue_after: None,
        });
    };
    let reporter = Reporter {
        registry,
        kind,
        queue,
        key,
        effects,
    };
    let spec = module.spec().clone();
    let previous = owned_status(&spec, &parent);
    // A parent nested deeper than the host reads is not evaluated on a
    // part of it: Ready says where, one Warning says it once.
    if let Some(why) = decode::undecodable(&parent) {
        let text = format!("the object cannot be read: {why}");
        let done = reporter
            .error(
                &spec,
                &parent,
                &previous,
                ErrorClass::ObjectUndecodable,
                &text,
            )
            .await;
        return Ended::without_guest(done);
    }

    let pass = Pass::of(registry, kind, module, &parent, jiff::Timestamp::now());
    let reported = reporter.reported();
    let read = |reads: &mut BTreeSet<Dependency>| {
        record_reads(registry, key, &parent, std::mem::take(reads));
    };
    let driven = driver::drive(&pass, effects, &previous, &reported, read).await;
    let again = match driven.again {
        Some((reads, again)) => {
            registry.scheduler().add_reads(key, reads);
            again
        }
        None => false,
    };
    let Settled::Decided {
        output,
        done,
        blamed,
        guest_error,
    } = driven.settled
    else {
        return Ended {
            done: Done::Retry,
            evaluated: Some((module.clone(), false)),
        };
    };
    if let Some(class) = guest_error {
        reporter.count_guest_error(class);
    }
    let ended = |done| Ended {
        done,
        evaluated: Some((module.clone(), blamed)),
    };
    reporter.time(driven.guest_time, driven.host_time);
    let plan_events = &driven.carried.planned.events;
    bound_writes(registry, kind, queue, key, &driven.carried, &output);
    let report = reporter.report(&spec, &parent, &previous, output, plan_events);
    if let Err(done) = report.await {
        return ended(done);
    }
    if again {
        registry.scheduler().add(key.clone());
    }
    ended(done)
}

impl<'a> Pass<'a> {
    /// The operator's pass of `parent` of `kind` by `module`, at `now`: on
    /// the live caches, under the host's gates, in its ring's slot.
    pub(crate) fn of(
        registry: &'a Registry,
        kind: &'a Kind,
        module: &'a Module,
        parent: &'a Arc<Value>,
        now: jiff::Timestamp,
    ) -> Self {
        let spec = module.spec();
        Pass {
            evaluation: Evaluation {
                world: World {
                    source: registry.source(),
                    past: PastReads::Server(kind.writer.client()),
                },
                evaluator: registry.evaluator(),
                module,
                settings: &kind.settings,
                parent,
                paused: spec.is_paused(parent),
                now,
            },
            spec,
            resource: &kind.resource,
            kind_gates: registry.planner().kind_gates(spec),
            slot: registry.ring().and_then(|m| m.slot_of(parent)),
        }
    }
}

/// Counts the writes of the pass of `key` against the per-parent bound
/// ([`crate::operator::schedule::write_bound`]): the children it made or
/// deleted (withdrawals too), its status, its Events (a plan's moves each
/// publish one). A parent at the bound passes again only once its oldest
/// write of the last minute leaves the window; the metric counts it.
fn bound_writes(
    registry: &Registry,
    kind: &Kind,
    queue: &WorkQueue<ParentKey>,
    key: &ParentKey,
    carried: &changes::Carried,
    output: &reconciler_conventions::engine::Output,
) {
    let made = carried.made.as_ref().and_then(|m| m.as_ref().ok());
    let children = made.map_or(0, |m| m.applied + m.deleted)
        + carried.withdrawn.made.applied
        + carried.withdrawn.made.deleted;
    let events =
        output.events.len() + carried.planned.events.len() + carried.withdrawn.events.len();
    let writes = children + usize::from(output.changed) + events;
    if queue.wrote(key, writes) {
        tracing::warn!(
            bound = crate::operator::schedule::write_bound::WRITES_PER_MINUTE,
            "the parent made as many writes in the last minute as the bound allows: its next pass waits"
        );
        registry
            .metrics()
            .passes_delayed
            .get_or_create(&Metrics::kind(&kind.resource.kind))
            .inc();
    }
}

/// Only what the host owns of `parent`'s status: other writers' fields and
/// conditions are neither rewritten nor a reason to write.
pub(crate) fn owned_status(spec: &KindSpec, parent: &Value) -> Status {
    match Status::from_json(&parent["status"]) {
        Ok(s) => owned_part(&s, spec, parent),
        Err(e) => {
            tracing::warn!(error = %e, "the object's status is not a status; starting afresh");
            Status::default()
        }
    }
}

/// Records what the pass of `key` read, for the scheduler to pass it again
/// when any of it changes; a decision on one of its plans passes it too.
fn record_reads(
    registry: &Registry,
    key: &ParentKey,
    parent: &Value,
    mut reads: BTreeSet<Dependency>,
) {
    if registry.source().resource(&record::kind_ref()).is_some()
        && let Some(uid) = parent["metadata"]["uid"].as_str()
    {
        reads.insert(Dependency::Children {
            kind: record::kind_ref(),
            controller: uid.to_owned(),
        });
    }
    registry.scheduler().record_reads(key, reads);
}

/// The pass of `key` ends with nothing to do: its queue forgets it.
fn forgotten(queue: &WorkQueue<ParentKey>, key: &ParentKey) -> Ended {
    queue.forget(key);
    Ended::without_guest(Done::Converged {
        requeue_after: None,
    })
}

/// The parent of `key` is gone: what its passes read and reported is
/// forgotten.
fn forget(registry: &Registry, queue: &WorkQueue<ParentKey>, key: &ParentKey) {
    registry.scheduler().forget_reads(key);
    queue.forget(key);
}
