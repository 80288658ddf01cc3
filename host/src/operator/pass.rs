//! One pass over one parent: evaluate its guest on the cached facts, derive
//! the status through the conventions engine, write it once if it changed,
//! then emit the Events. A pass knows nothing of hot swap: it says which
//! module evaluated and whether the guest was to blame, and its caller
//! counts that against the module's probation.

use std::sync::Arc;
use std::time::Duration;

use reconciler_conventions::engine::{self, ErrorClass, Event, Input, Outcome};
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::Value;
use tracing::Instrument;

use crate::contract::model::Change;
use crate::facts::Dependency;
use crate::facts::snapshot::Snapshot;
use crate::facts::{ChangeState, Hold, ObjectSource, SourceError};
use crate::operator::cluster::{decode, past_cache};
use crate::operator::kinds::{Kind, Registry};
use crate::operator::metrics::{ErrorLabels, Metrics};
use crate::operator::schedule::ParentKey;
use crate::operator::schedule::queue::{Done, WorkQueue};
use crate::operator::write::api_error::{self, ApiErrorClass};
use crate::operator::write::children::{self, ChildrenError, Made};
use crate::operator::write::owned::owned_part;
use crate::operator::write::plans::{PlanPass, Planned};
use crate::operator::write::withdrawals::{self, WithdrawalError, Withdrawn};
use crate::plan::record;
use crate::runtime::{Blame, EvaluateRequest, Evaluated, GuestErrorClass, GuestModule};

/// How a pass ended, for the queue and for the module's probation.
pub struct Pass {
    pub done: Done,
    /// The module that evaluated the parent, and whether the guest was to
    /// blame for a failure; `None` when no guest ran.
    pub evaluated: Option<(GuestModule, bool)>,
}

impl Pass {
    fn without_guest(done: Done) -> Self {
        Pass {
            done,
            evaluated: None,
        }
    }
}

/// One pass of `key`.
pub async fn run(registry: &Registry, key: &ParentKey) -> Pass {
    let kind = registry.kind(key.kind);
    let queue = registry.scheduler.queue(key.kind);
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
    if !registry.shard.owns(&key.namespace, &key.name) {
        queue.forget(key);
        return Pass::without_guest(Done::Converged {
            requeue_after: None,
        });
    }
    // The module is taken once: a swap during the pass leaves it on this one.
    let Some(module) = kind.module() else {
        // The kind's module was removed: nothing runs, nothing is written.
        queue.forget(key);
        return Pass::without_guest(Done::Converged {
            requeue_after: None,
        });
    };
    reconcile(registry, kind, &queue, &module, key)
        .instrument(span)
        .await
}

/// How soon after deleting an object read past the cache its parent
/// passes again, to observe what no watch reports.
const OBSERVE_UNWATCHED_AFTER: Duration = Duration::from_secs(1);

async fn reconcile(
    registry: &Registry,
    kind: &Kind,
    queue: &WorkQueue<ParentKey>,
    module: &GuestModule,
    key: &ParentKey,
) -> Pass {
    let label = Metrics::kind(&kind.resource.kind);
    registry.metrics.passes.get_or_create(&label).inc();
    let Some(parent) = kind.cache.get(&key.namespace, &key.name) else {
        let entries = registry.scheduler.forget_reads(key);
        registry
            .metrics
            .dependency_entries
            .set(i64::try_from(entries).unwrap_or(i64::MAX));
        queue.forget(key);
        return Pass::without_guest(Done::Converged {
            requeue_after: None,
        });
    };
    let spec = module.spec().clone();
    // Only what the host owns of the status: other writers' fields and
    // conditions are neither rewritten nor a reason to write.
    let previous = match Status::from_json(&parent["status"]) {
        Ok(s) => owned_part(&s, &spec, &parent),
        Err(e) => {
            tracing::warn!(error = %e, "the object's status is not a status; starting afresh");
            Status::default()
        }
    };

    // A parent nested deeper than the host reads is not evaluated on a
    // part of it: Ready says where, one Warning says it once.
    if let Some(why) = decode::undecodable(&parent) {
        let target = Target { kind, queue, key };
        let text = format!("the object cannot be read: {why}");
        report_error(
            &target,
            &spec,
            &parent,
            &previous,
            ErrorClass::ObjectUndecodable,
            &text,
        )
        .await;
        return Pass::without_guest(Done::Failed { retry_before: None });
    }

    // One status write per pass, a first one included: what the pass does
    // not evaluate is written Unknown (Initializing) by the engine.
    let generation = parent["metadata"]["generation"].as_i64().unwrap_or(0);

    let paused = spec.is_paused(&parent);
    let now = jiff::Timestamp::now();
    let started = std::time::Instant::now();
    // Objects the cache refused are read past it after an evaluation
    // that wanted them, and the pass is evaluated again with them (at most
    // MAX_READS objects a pass, in as many rounds).
    let mut rounds = past_cache::Rounds::default();
    let mut guest_time = Duration::ZERO;
    let evaluation = Evaluation {
        registry,
        kind,
        module,
        parent: &parent,
        paused,
        now,
    };
    // The world each evaluation reads, held still for an evaluation again
    // after the pass's changes (see below).
    let mut world: Arc<dyn ObjectSource>;
    let mut evaluated = loop {
        world = Arc::new(Snapshot::new(rounds.source(&registry.source)));
        let (evaluated, time) = evaluation.run(world.clone()).await;
        guest_time += time;
        let read = rounds
            .read_wanted(kind.writer.client(), &registry.source, &evaluated)
            .instrument(tracing::info_span!("read past the cache"))
            .await;
        if !read {
            break evaluated;
        }
    };
    {
        let mut reads = std::mem::take(&mut evaluated.reads);
        // A decision on one of its plans passes the parent.
        if registry.source.resource(&record::kind_ref()).is_some()
            && let Some(uid) = parent["metadata"]["uid"].as_str()
        {
            reads.insert(Dependency::Children {
                kind: record::kind_ref(),
                controller: uid.to_owned(),
            });
        }
        let entries = registry.scheduler.record_reads(key, reads);
        registry
            .metrics
            .dependency_entries
            .set(i64::try_from(entries).unwrap_or(i64::MAX));
    }
    let host_time = started.elapsed();
    let at = PlanPass {
        source: &registry.source,
        metrics: &registry.metrics,
        authority: &registry.authority,
        spec: &spec,
        resource: &kind.resource,
        parent: &parent,
    };
    // Until the pass makes them, the guest's changes are not made
    // (`facts.change-state`): what stops the pass before them holds them.
    let child_key = |c: &Change| (c.kind(), key.namespace.clone(), c.name().to_owned());
    if evaluated.outcome.is_ok() {
        for change in &evaluated.changes {
            let (kind, namespace, name) = child_key(change);
            registry.source.record_change(
                kind,
                &namespace,
                &name,
                ChangeState::Held(Hold::PassFailed),
            );
        }
    }
    // A record of withdrawals a stopped host left Applying is ended first.
    withdrawals::finish_interrupted(&registry.planner, &at).await;
    // Withdrawals first, whatever holds the other changes: the pause, the
    // gates, a plan, a read that failed (contract 0.5.0).
    let mut withdrawn = Withdrawn::default();
    let mut plan_error = None;
    let mut refused = None;
    // Withdrawals were made (or tried): what the pass writes if it fails
    // is the verdict that read what became of them.
    let mut withdrew = false;
    if evaluated.outcome.is_ok() && !evaluated.withdrawals.is_empty() {
        let why = held_by(
            registry,
            &spec,
            &parent,
            paused,
            evaluated.failed_read.as_ref(),
        );
        match withdrawals::make(
            &registry.planner,
            &at,
            rounds.answers(),
            &evaluated.withdrawals,
            &why,
        )
        .instrument(tracing::info_span!("withdraw"))
        .await
        {
            Ok(w) => {
                withdrawn = w;
                withdrew = true;
            }
            Err(WithdrawalError::Refused(e)) => refused = Some(e),
            Err(WithdrawalError::Record(e, w)) => {
                match &w.failed {
                    None => {
                        tracing::warn!(error = %e, "the withdrawals were made, but not recorded")
                    }
                    Some(_) => tracing::warn!(
                        error = %e,
                        "the withdrawals were tried (the failure follows), and not recorded"
                    ),
                }
                withdrawn = w;
                withdrew = true;
                plan_error = Some(*e);
            }
        }
        publish(registry, kind, &parent, &withdrawn.events).await;
    }
    // The other changes the guest wants, through the parent's plan (made,
    // planned or held, as its gates say), before the status that reports
    // them is written. A paused parent's guest is told it is paused and
    // asks only for what the seed says still happens then.
    let mut planned = Planned::default();
    let made = match &evaluated.outcome {
        _ if refused.is_some() => refused.map(Err),
        Ok(_) if evaluated.failed_read.is_none() && plan_error.is_none() => {
            match children::check(
                &registry.source,
                rounds.answers(),
                &kind.resource,
                &parent,
                &evaluated.changes,
            ) {
                Err(e) => Some(Err(e)),
                Ok(checked) => {
                    match registry
                        .planner
                        .pass(&at, checked)
                        .instrument(tracing::info_span!("plan"))
                        .await
                    {
                        Ok(p) => {
                            planned = p;
                            if let Some((hold, held)) = &planned.held {
                                for change in &evaluated.changes {
                                    let child = child_key(change);
                                    let state = if held.contains(&child) {
                                        ChangeState::Held(*hold)
                                    } else {
                                        ChangeState::Made
                                    };
                                    let (kind, namespace, name) = child;
                                    registry
                                        .source
                                        .record_change(kind, &namespace, &name, state);
                                }
                            }
                            planned.made.take()
                        }
                        Err(e) => {
                            if e.class().is_some() {
                                tracing::warn!(error = %e, "the plan was not made");
                            } else {
                                tracing::debug!(error = %e, "the plan changed meanwhile; passing again");
                            }
                            plan_error = Some(e);
                            None
                        }
                    }
                }
            }
        }
        _ => None,
    };
    // A withdrawal the API server refused fails the pass as a change
    // would, once the rest is done.
    let made = match (withdrawn.failed.take(), made) {
        (Some(e), None | Some(Ok(_))) => Some(Err(e)),
        (_, made) => made,
    };
    match &made {
        Some(Ok(made)) if *made != Made::default() => tracing::debug!(?made, "children made"),
        Some(Err(e)) => tracing::warn!(error = %e, "children not made"),
        _ => {}
    }
    // The guest read what became of its changes before they were made:
    // where the pass answers otherwise, its status is that of an
    // evaluation of the same world reading what the pass did (the changes
    // of that one are the next pass's).
    let mut again = false;
    if let Some(((kind, namespace, name), read)) =
        evaluated
            .change_states
            .iter()
            .find(|((kind, namespace, name), read)| {
                registry.source.change_state(kind, namespace, name) != **read
            })
    {
        tracing::debug!(
            child = %format_args!("{} {namespace}/{name}", kind.kind),
            ?read,
            now = ?registry.source.change_state(kind, namespace, name),
            "what became of a change is not what the guest read: evaluated again"
        );
        let (second, time) = evaluation.run(world).await;
        guest_time += time;
        again = second.outcome.is_ok()
            && (second.changes != evaluated.changes || second.withdrawals != evaluated.withdrawals);
        registry.scheduler.add_reads(key, second.reads);
        evaluated.outcome = second.outcome;
    }
    registry
        .metrics
        .guest_seconds
        .get_or_create(&label)
        .observe(guest_time.as_secs_f64());
    let started = std::time::Instant::now();
    let mut blamed = evaluated
        .outcome
        .as_ref()
        .is_err_and(|e| e.blame() == Blame::Guest);
    let mut failed = evaluated.outcome.is_err() || evaluated.failed_read.is_some();
    // A serving certificate made or kept asks for a pass when it is due
    // for renewal.
    let renew_after = made
        .as_ref()
        .and_then(|m| m.as_ref().ok())
        .and_then(|m| m.renew_after);
    // An object deleted past the cache sends no watch event: a pass soon
    // after observes it gone.
    let observe_after = made
        .as_ref()
        .and_then(|m| m.as_ref().ok())
        .map_or(0, |m| m.deleted_unwatched)
        .saturating_add(withdrawn.made.deleted_unwatched)
        .gt(&0)
        .then_some(OBSERVE_UNWATCHED_AFTER);
    // When the guest's verdict asked to pass again (an expiry), a failed
    // pass is retried no later than that.
    let asked_after = evaluated
        .outcome
        .as_ref()
        .ok()
        .and_then(|v| v.requeue_after_seconds)
        .map(|s| Duration::from_secs(u64::from(s)));
    let withdrawing = withdrew
        .then(|| evaluated.outcome.as_ref().ok().cloned())
        .flatten();
    let outcome = match (evaluated.outcome, made) {
        (Err(e), _) => {
            tracing::warn!(error = %e, blame = ?e.blame(), "guest failed");
            registry
                .metrics
                .guest_errors
                .get_or_create(&ErrorLabels {
                    kind: kind.resource.kind.clone(),
                    class: e.class.as_str().to_owned(),
                })
                .inc();
            Outcome::Error {
                class: ErrorClass::GuestFailed,
                text: e.to_string(),
            }
        }
        // A read the source could not serve (a kind gone since start, a
        // required kind refused or not watched) fails the pass, retried
        // with backoff (seed 000): what the guest made of it is moot. Only
        // an optional kind not served or refused is the guest's to report.
        (Ok(_), _) if evaluated.failed_read.is_some() => Outcome::Error {
            class: match evaluated.failed_read {
                Some(SourceError::Undecodable { .. }) => ErrorClass::ObjectUndecodable,
                _ => ErrorClass::ReconciliationFailed,
            },
            text: evaluated
                .failed_read
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
        },
        (Ok(_), _) if plan_error.is_some() => {
            let e = plan_error.as_ref().expect("a plan error");
            let Some(class) = e.class() else {
                // A decision landed meanwhile: nothing was executed; the
                // pass runs again from it.
                return Pass {
                    done: Done::Retry,
                    evaluated: Some((module.clone(), false)),
                };
            };
            failed = true;
            Outcome::Error {
                class,
                text: e.to_string(),
            }
        }
        (Ok(_), Some(Err(e))) => {
            let Some(class) = e.class() else {
                // A conflict: retried soon, nothing reported.
                return Pass {
                    done: Done::Retry,
                    evaluated: Some((module.clone(), false)),
                };
            };
            failed = true;
            if matches!(e, ChildrenError::Refused { .. }) {
                blamed = true;
                registry
                    .metrics
                    .guest_errors
                    .get_or_create(&ErrorLabels {
                        kind: kind.resource.kind.clone(),
                        class: GuestErrorClass::Contract.as_str().to_owned(),
                    })
                    .inc();
            }
            Outcome::Error {
                class,
                text: match &e {
                    ChildrenError::Refused { .. } => format!("guest {}: {e}", module.name()),
                    _ => e.to_string(),
                },
            }
        }
        (Ok(verdict), _) => Outcome::Verdict(verdict),
    };
    let outcome = match (outcome, withdrawing) {
        (Outcome::Error { class, text }, Some(verdict)) => Outcome::Withdrew {
            class,
            text,
            verdict,
        },
        (outcome, _) => outcome,
    };
    let ended = |done| Pass {
        done,
        evaluated: Some((module.clone(), blamed)),
    };
    let output = engine::decide(Input {
        spec: &spec,
        generation,
        paused,
        previous: &previous,
        now,
        outcome,
        reported: &queue.reported(key),
    });
    let output = match &planned.facts {
        Some(facts) => engine::with_plan(&previous, generation, now, output, facts),
        // A pass that failed before its plan keeps what the status said of it.
        None if failed => engine::plans::keeping_plan(&previous, output),
        None => engine::plans::without_plan(&previous, output),
    };
    publish(registry, kind, &parent, &planned.events).await;
    registry
        .metrics
        .pass_seconds
        .get_or_create(&label)
        .observe((host_time + started.elapsed()).as_secs_f64());
    if output.changed {
        let target = Target { kind, queue, key };
        // The write is preconditioned on the version the pass read: a
        // change since (a spec, another writer's status) is a conflict,
        // and the pass runs again on it. The Events go out once the status
        // that makes them due is written, never for a transition that was
        // not.
        if let Err(done) = write(registry, &target, &spec, &parent, &previous, &output.status).await
        {
            return ended(done);
        }
        publish(registry, kind, &parent, &output.events).await;
    }
    queue.remember(key, output.reported);
    if again {
        registry.scheduler.add(key.clone());
    }
    let after = output
        .requeue_after_seconds
        .map(|s| Duration::from_secs(u64::from(s)))
        .into_iter()
        .chain(renew_after)
        .chain(observe_after)
        .chain(planned.requeue_after)
        .min();
    ended(if failed {
        Done::Failed {
            retry_before: asked_after,
        }
    } else if output.stalled {
        Done::Stalled {
            recheck_after: after,
        }
    } else {
        Done::Converged {
            requeue_after: after,
        }
    })
}

/// One evaluation of a pass's parent by its guest, on a thread of its own.
struct Evaluation<'a> {
    registry: &'a Registry,
    kind: &'a Kind,
    module: &'a GuestModule,
    parent: &'a Arc<Value>,
    paused: bool,
    now: jiff::Timestamp,
}

impl Evaluation<'_> {
    /// Evaluates the parent on `source`; how long the guest took.
    async fn run(&self, source: Arc<dyn ObjectSource>) -> (Evaluated, Duration) {
        let module = self.module.clone();
        let settings = self.kind.settings.clone();
        let parent = self.parent.clone();
        let evaluator = self.registry.evaluator.clone();
        let (paused, now) = (self.paused, self.now);
        let pass_span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let _evaluating =
                tracing::info_span!(parent: &pass_span, "evaluate", guest = %module.name())
                    .entered();
            let started = std::time::Instant::now();
            let evaluated = evaluator.evaluate(
                &module,
                EvaluateRequest {
                    parent: &parent,
                    paused,
                    settings: &settings,
                    source,
                    now,
                },
            );
            (evaluated, started.elapsed())
        })
        .await
        .expect("an evaluation never panics")
    }
}

/// Publishes `events` about `parent` and counts them.
async fn publish(registry: &Registry, kind: &Kind, parent: &Value, events: &[Event]) {
    if events.is_empty() {
        return;
    }
    kind.writer.publish(parent, events).await;
    registry
        .metrics
        .events
        .get_or_create(&Metrics::kind(&kind.resource.kind))
        .inc_by(events.len() as u64);
}

/// What holds a parent's changes other than its withdrawals, as a plan of
/// withdrawals records it.
fn held_by(
    registry: &Registry,
    spec: &KindSpec,
    parent: &Value,
    paused: bool,
    failed_read: Option<&crate::facts::SourceError>,
) -> String {
    let mut held = Vec::new();
    if paused {
        held.push("the parent is paused".to_owned());
    }
    match registry.planner.gates(spec, parent) {
        Ok(gates) if gates.is_direct() => {}
        Ok(gates) => held.push(format!(
            "mode {}, approval {}",
            gates.mode.as_str(),
            gates.approval.as_str()
        )),
        Err(e) => held.push(e.to_string()),
    }
    if let Some(read) = failed_read {
        held.push(format!("a read failed: {read}"));
    }
    if held.is_empty() {
        "nothing held them".to_owned()
    } else {
        held.join("; ")
    }
}

/// The parent a status is written to: its kind, and its queue entry that
/// remembers what its passes reported.
#[derive(Clone, Copy)]
struct Target<'a> {
    kind: &'a Kind,
    queue: &'a WorkQueue<ParentKey>,
    key: &'a ParentKey,
}

/// Writes a status and puts the stored object in the cache, so the next
/// pass starts from what was written even before the watch delivers it.
/// A failed write ends the pass: a conflict is retried quietly; another
/// class is written as Ready=False (ReconcileError) over the `stored`
/// status when possible, and reported once.
async fn write(
    registry: &Registry,
    target: &Target<'_>,
    spec: &KindSpec,
    parent: &Value,
    stored: &Status,
    status: &Status,
) -> Result<Arc<Value>, Done> {
    let kind = target.kind;
    match kind.writer.write_status(parent, status).await {
        Ok(written) => {
            registry
                .metrics
                .status_writes
                .get_or_create(&Metrics::kind(&kind.resource.kind))
                .inc();
            Ok(kind.cache.apply_if_newer(written))
        }
        // Deleted since the pass read it (its watch event not in yet):
        // there is no status to write, nor a failure to report.
        Err(kube::Error::Api(s)) if s.code == 404 => {
            tracing::debug!("the parent is gone; its status is not written");
            Err(Done::Converged {
                requeue_after: None,
            })
        }
        Err(e) => match api_error::classify(&e) {
            ApiErrorClass::Conflict => {
                tracing::debug!(error = %e, "status write conflicted; retrying");
                Err(Done::Retry)
            }
            ApiErrorClass::Reported(class) => {
                tracing::warn!(error = %e, class = class.as_str(), "status write failed");
                report_error(target, spec, parent, stored, class, &api_error::text(&e)).await;
                Err(Done::Failed { retry_before: None })
            }
        },
    }
}

/// Best effort: the error outcome through the engine, written and reported.
/// When that write is refused too (an admission webhook on `/status` that
/// refuses every status), the class is reported by its Event all the same,
/// once: the status cannot say it, the memory of the parent's queue entry
/// does.
async fn report_error(
    target: &Target<'_>,
    spec: &KindSpec,
    parent: &Value,
    previous: &Status,
    class: ErrorClass,
    text: &str,
) {
    let Target { kind, queue, key } = *target;
    let generation = parent["metadata"]["generation"].as_i64().unwrap_or(0);
    let output = engine::decide(Input {
        spec,
        generation,
        paused: spec.is_paused(parent),
        previous,
        now: jiff::Timestamp::now(),
        outcome: Outcome::Error {
            class,
            text: text.to_owned(),
        },
        reported: &queue.reported(key),
    });
    if !output.changed {
        return;
    }
    match kind.writer.write_status(parent, &output.status).await {
        Ok(_) => kind.writer.publish(parent, &output.events).await,
        Err(e) => {
            tracing::warn!(error = %e, class = class.as_str(), "the error's status write failed too");
            let class_event: Vec<_> = output
                .events
                .into_iter()
                .filter(|event| event.reason == class.as_str())
                .collect();
            kind.writer.publish(parent, &class_event).await;
        }
    }
    queue.remember(key, output.reported);
}
