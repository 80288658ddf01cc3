//! One pass over one parent: evaluate its guest on the cached facts, derive
//! the status through the conventions engine, write it once if it changed,
//! then emit the Events.

use std::sync::Arc;
use std::time::Duration;

use reconciler_conventions::engine::{self, ErrorClass, Input, Outcome};
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::Value;
use tracing::Instrument;

use super::api_error::{self, ApiErrorClass};
use super::metrics::{ErrorLabels, Metrics};
use super::queue::Done;
use super::{Kind, ParentKey, Shared};
use crate::facts::ObjectSource;
use crate::runtime::{Blame, EvaluateRequest, GuestModule};

pub async fn run(shared: &Shared, key: &ParentKey) -> Done {
    let kind = shared.kind(key.kind);
    let kind = &*kind;
    let span = tracing::info_span!(
        "reconcile",
        kind = %kind.resource.kind,
        namespace = %key.namespace,
        name = %key.name
    );
    // The module is taken once: a swap during the pass leaves it on this one.
    let Some(module) = kind.module() else {
        // The kind's module was removed: nothing runs, nothing is written.
        kind.queue.forget(key);
        return Done::Converged {
            requeue_after: None,
        };
    };
    reconcile(shared, kind, &module, key).instrument(span).await
}

async fn reconcile(shared: &Shared, kind: &Kind, module: &GuestModule, key: &ParentKey) -> Done {
    let label = Metrics::kind(&kind.resource.kind);
    shared.metrics.passes.get_or_create(&label).inc();
    let Some(parent) = kind.cache.get(&key.namespace, &key.name) else {
        shared.deps.lock().expect("deps lock").remove(key);
        kind.queue.forget(key);
        return Done::Converged {
            requeue_after: None,
        };
    };
    let spec = module.spec().clone();
    let generation = parent["metadata"]["generation"].as_i64().unwrap_or(0);
    let previous = match Status::from_json(&parent["status"]) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "the object's status is not a status; starting afresh");
            Status::default()
        }
    };

    let mut parent = parent;
    let mut previous = previous;
    if previous.conditions.is_empty() {
        let initial = engine::first_touch(&spec, generation, jiff::Timestamp::now());
        match write(shared, kind, &spec, &parent, &previous, &initial).await {
            Ok(stored) => {
                previous = initial;
                parent = stored;
            }
            Err(done) => return done,
        }
    }

    let paused = spec.is_paused(&parent);
    let now = jiff::Timestamp::now();
    let started = std::time::Instant::now();
    let evaluated = {
        let module = module.clone();
        let source: Arc<dyn ObjectSource> = shared.source.clone();
        let settings = kind.settings.clone();
        let parent = parent.clone();
        tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let evaluated = module.evaluate(EvaluateRequest {
                parent: &parent,
                paused,
                settings: &settings,
                source,
                now,
            });
            (evaluated, started.elapsed())
        })
        .await
        .expect("an evaluation never panics")
    };
    let (evaluated, guest_time) = evaluated;
    shared
        .metrics
        .guest_seconds
        .get_or_create(&label)
        .observe(guest_time.as_secs_f64());
    super::swap::record(
        shared,
        key.kind,
        module,
        evaluated
            .outcome
            .as_ref()
            .is_err_and(|e| e.blame() == Blame::Guest),
    );
    {
        let mut deps = shared.deps.lock().expect("deps lock");
        deps.replace(key, evaluated.reads);
        shared
            .metrics
            .dependency_entries
            .set(i64::try_from(deps.entries()).unwrap_or(i64::MAX));
    }
    let guest_failed = evaluated.outcome.is_err();
    let outcome = match evaluated.outcome {
        Ok(verdict) => Outcome::Verdict(verdict),
        Err(e) => {
            tracing::warn!(error = %e, blame = ?e.blame(), "guest failed");
            shared
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
    };
    let decision = engine::decide(Input {
        spec: &spec,
        generation,
        paused,
        previous: &previous,
        now,
        outcome,
    });
    shared
        .metrics
        .pass_seconds
        .get_or_create(&label)
        .observe(started.elapsed().as_secs_f64());
    if decision.changed {
        if let Err(done) = write(shared, kind, &spec, &parent, &previous, &decision.status).await {
            return done;
        }
        kind.writer.publish(&parent, &decision.events).await;
        shared
            .metrics
            .events
            .get_or_create(&label)
            .inc_by(decision.events.len() as u64);
    }
    let after = decision
        .requeue_after_seconds
        .map(|s| Duration::from_secs(u64::from(s)));
    if guest_failed {
        Done::Failed
    } else if decision.stalled {
        Done::Stalled {
            recheck_after: after,
        }
    } else {
        Done::Converged {
            requeue_after: after,
        }
    }
}

/// Writes a status and puts the stored object in the cache, so the next
/// pass starts from what was written even before the watch delivers it.
/// A failed write ends the pass: a conflict is retried quietly; another
/// class is written as Ready=False (ReconcileError) over the `stored`
/// status when possible, and reported once.
async fn write(
    shared: &Shared,
    kind: &Kind,
    spec: &KindSpec,
    parent: &Value,
    stored: &Status,
    status: &Status,
) -> Result<Arc<Value>, Done> {
    match kind.writer.write_status(parent, status).await {
        Ok(written) => {
            shared
                .metrics
                .status_writes
                .get_or_create(&Metrics::kind(&kind.resource.kind))
                .inc();
            Ok(kind.cache.apply_if_newer(written))
        }
        Err(e) => match api_error::classify(&e) {
            ApiErrorClass::Conflict => {
                tracing::debug!(error = %e, "status write conflicted; retrying");
                Err(Done::Retry)
            }
            ApiErrorClass::Reported(class) => {
                tracing::warn!(error = %e, class = class.as_str(), "status write failed");
                report_error(kind, spec, parent, stored, class, &api_error::text(&e)).await;
                Err(Done::Failed)
            }
        },
    }
}

/// Best effort: the error outcome through the engine, written and reported.
async fn report_error(
    kind: &Kind,
    spec: &KindSpec,
    parent: &Value,
    previous: &Status,
    class: ErrorClass,
    text: &str,
) {
    let generation = parent["metadata"]["generation"].as_i64().unwrap_or(0);
    let decision = engine::decide(Input {
        spec,
        generation,
        paused: spec.is_paused(parent),
        previous,
        now: jiff::Timestamp::now(),
        outcome: Outcome::Error {
            class,
            text: text.to_owned(),
        },
    });
    if decision.changed
        && kind
            .writer
            .write_status(parent, &decision.status)
            .await
            .is_ok()
    {
        kind.writer.publish(parent, &decision.events).await;
    }
}
