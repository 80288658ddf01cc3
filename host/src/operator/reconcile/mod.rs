//! The operator's pass over one parent: gather what the pass's core needs
//! (the parent from the cache, its owned status, the guest's evaluations
//! with reads past the cache), carry out the guest's changes
//! ([`changes`]), settle the pass ([`crate::pass::settle`]), and report it
//! ([`report`]): the status written once if it changed, then its Events.
//! Every change to the cluster goes through one small interface
//! ([`effects::Effects`]: make the changes, write the plan, write the
//! status, publish Events), which the unit tests ([`tests`]) record. A
//! pass knows nothing of hot swap: it says which module evaluated and
//! whether the guest was to blame, and its caller ([`workers`]) counts that
//! against the module's probation.

mod changes;
mod effects;
pub(crate) mod evaluation;
pub(crate) mod handover;
mod report;
#[cfg(test)]
mod tests;
pub mod workers;

use std::collections::BTreeSet;

use reconciler_conventions::engine::{ErrorClass, Reported};
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::Value;
use tracing::Instrument;

use crate::facts::Dependency;
use crate::operator::cluster::decode;
use crate::operator::kinds::{Kind, Registry};
use crate::operator::replica::metrics::Metrics;
use crate::operator::schedule::ParentKey;
use crate::operator::schedule::queue::WorkQueue;
use crate::operator::write::owned::owned_part;
use crate::pass::{self, Done, Happened, Parent, Settled};
use crate::plan::record;
use crate::runtime::GuestModule;
use changes::Carried;
use effects::Effects;
use evaluation::{Evaluation, Evaluations};
use report::Reporter;

/// How a pass ended, for the queue and for the module's probation.
pub struct Ended {
    pub done: Done,
    /// The module that evaluated the parent, and whether the guest was to
    /// blame for a failure; `None` when no guest ran.
    pub evaluated: Option<(GuestModule, bool)>,
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
    // Another shard's parent (a replica of another shard writes it).
    if !registry.shard().owns(&key.namespace, &key.name) {
        queue.forget(key);
        return Ended::without_guest(Done::Converged {
            requeue_after: None,
        });
    }
    // In the ring, a parent that is not this member's to pass.
    let _in_flight = match handover::claimed(registry, kind, &queue, key).await {
        Ok(in_flight) => in_flight,
        Err(ended) => return ended,
    };
    // The module is taken once: a swap during the pass leaves it on this one.
    let Some(module) = kind.module() else {
        // The kind's module was removed: nothing runs, nothing is written.
        queue.forget(key);
        return Ended::without_guest(Done::Converged {
            requeue_after: None,
        });
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
    module: &GuestModule,
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
        reporter
            .error(
                &spec,
                &parent,
                &previous,
                ErrorClass::ObjectUndecodable,
                &text,
            )
            .await;
        return Ended::without_guest(Done::Failed { retry_before: None });
    }

    let started = std::time::Instant::now();
    let evaluation = Evaluation {
        registry,
        kind,
        module,
        parent: &parent,
        paused: spec.is_paused(&parent),
        now: jiff::Timestamp::now(),
    };
    let mut evaluations = evaluation.with_reads().await;
    let reads = std::mem::take(&mut evaluations.evaluated.reads);
    record_reads(registry, key, &parent, reads);
    let host_time = started.elapsed();

    let carried = changes::carry_out(&evaluation, effects, &spec, &evaluations).await;
    // The withdrawals' Events, as soon as they are made.
    reporter.publish(&parent, &carried.withdrawn.events).await;
    let again = match evaluation.again_if_moved(&mut evaluations).await {
        Some((reads, again)) => {
            registry.scheduler().add_reads(key, reads);
            again
        }
        None => false,
    };
    let guest_time = evaluations.guest_time;
    let started = std::time::Instant::now();

    let reported = reporter.reported();
    let settled = settle(
        &evaluation,
        &spec,
        &previous,
        &reported,
        evaluations,
        &carried,
    );
    let Settled::Decided {
        output,
        done,
        blamed,
        guest_error,
    } = settled
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
    reporter.time(guest_time, host_time + started.elapsed());
    let report = reporter.report(&spec, &parent, &previous, output, &carried.planned.events);
    if let Err(done) = report.await {
        return ended(done);
    }
    if again {
        registry.scheduler().add(key.clone());
    }
    ended(done)
}

/// Only what the host owns of `parent`'s status: other writers' fields and
/// conditions are neither rewritten nor a reason to write.
fn owned_status(spec: &KindSpec, parent: &Value) -> Status {
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

/// The parent of `key` is gone: what its passes read and reported is
/// forgotten.
fn forget(registry: &Registry, queue: &WorkQueue<ParentKey>, key: &ParentKey) {
    registry.scheduler().forget_reads(key);
    queue.forget(key);
}

/// The pass's core, on what it gathered: the guest's last evaluation and
/// what became of its changes.
fn settle(
    evaluation: &Evaluation<'_>,
    spec: &KindSpec,
    previous: &Status,
    reported: &Reported,
    evaluations: Evaluations,
    carried: &Carried,
) -> Settled {
    let evaluated = evaluations.evaluated;
    if let Err(e) = &evaluated.outcome {
        tracing::warn!(error = %e, blame = ?e.blame(), "guest failed");
    }
    let parent = evaluation.parent;
    pass::settle(
        &Parent {
            spec,
            generation: parent["metadata"]["generation"].as_i64().unwrap_or(0),
            paused: evaluation.paused,
            previous,
            now: evaluation.now,
            reported,
        },
        Happened {
            plan: carried.plan_failure(),
            changes: carried.changes_failure(evaluation.module.name()),
            outcome: evaluated.outcome,
            failed_read: evaluated.failed_read.as_ref(),
            withdrew: carried.withdrew,
            plan_facts: carried.planned.facts.as_ref(),
            host_requeue: carried.host_requeue(),
        },
    )
}
