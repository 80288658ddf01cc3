//! What a pass reports of its parent, the one place its Events are
//! published: the status written (preconditioned on the version the pass
//! read) and put in the cache, the Events due published and counted, and
//! an error the pass could not write reported all the same.

use std::sync::Arc;
use std::time::Duration;

use reconciler_conventions::engine::{ErrorClass, Event, Output, Reported};
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::Value;

use super::effects::Effects;
use crate::operator::kinds::{Kind, Registry};
use crate::operator::replica::metrics::{ErrorLabels, Metrics};
use crate::operator::schedule::ParentKey;
use crate::operator::schedule::queue::WorkQueue;
use crate::operator::write::api_error::{self, ApiErrorClass};
use crate::pass::{self, Done, Parent};
use crate::runtime::GuestErrorClass;

/// The parent a pass reports on: its kind, its queue entry that
/// remembers what its passes reported, and the effects that write its
/// status and publish its Events.
pub(crate) struct Reporter<'a, E> {
    pub registry: &'a Registry,
    pub kind: &'a Kind,
    pub queue: &'a WorkQueue<ParentKey>,
    pub key: &'a ParentKey,
    pub effects: &'a E,
}

impl<E: Effects> Reporter<'_, E> {
    /// What the parent's passes reported before.
    pub(super) fn reported(&self) -> Reported {
        self.queue.reported(self.key)
    }

    /// What the parent's passes reported, once this one's Events are out.
    pub(crate) fn remember(&self, reported: Reported) {
        self.queue.remember(self.key, reported);
    }

    /// Reports a settled pass: the plan's Events, then the status once
    /// written (preconditioned on the version the pass read: a change
    /// since is a conflict, and the pass runs again on it), then the
    /// status's own Events, never for a transition that was not written;
    /// what they reported is remembered. A failed write ends the pass as
    /// [`Reporter::write`] says.
    pub(super) async fn report(
        &self,
        spec: &KindSpec,
        parent: &Value,
        previous: &Status,
        output: Output,
        plan_events: &[Event],
    ) -> Result<(), Done> {
        self.publish(parent, plan_events).await;
        if output.changed {
            self.write(spec, parent, previous, &output.status).await?;
            self.publish(parent, &output.events).await;
        }
        self.remember(output.reported);
        Ok(())
    }

    /// Records how long the pass's guest and host took.
    pub(super) fn time(&self, guest: Duration, host: Duration) {
        let label = Metrics::kind(&self.kind.resource.kind);
        let metrics = self.registry.metrics();
        metrics
            .guest_seconds
            .get_or_create(&label)
            .observe(guest.as_secs_f64());
        metrics
            .pass_seconds
            .get_or_create(&label)
            .observe(host.as_secs_f64());
    }

    /// Counts a status written.
    fn count_status_write(&self) {
        self.registry
            .metrics()
            .status_writes
            .get_or_create(&Metrics::kind(&self.kind.resource.kind))
            .inc();
    }

    /// Counts a guest's failure of class `class`.
    pub(crate) fn count_guest_error(&self, class: GuestErrorClass) {
        self.registry
            .metrics()
            .guest_errors
            .get_or_create(&ErrorLabels {
                kind: self.kind.resource.kind.clone(),
                class: class.as_str().to_owned(),
            })
            .inc();
    }

    /// Publishes `events` about `parent`.
    pub(super) async fn publish(&self, parent: &Value, events: &[Event]) {
        if !events.is_empty() {
            self.effects.publish(parent, events).await;
        }
    }

    /// Writes a status and puts the stored object in the cache, so the
    /// next pass starts from what was written even before the watch
    /// delivers it. A failed write ends the pass: a conflict is retried
    /// quietly; another class is written as Ready=False (ReconcileError)
    /// over the `stored` status when possible, and reported once.
    pub(super) async fn write(
        &self,
        spec: &KindSpec,
        parent: &Value,
        stored: &Status,
        status: &Status,
    ) -> Result<Arc<Value>, Done> {
        let kind = self.kind;
        match self.effects.write_status(parent, status).await {
            Ok(written) => {
                self.count_status_write();
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
                    Err(self
                        .error(spec, parent, stored, class, &api_error::text(&e))
                        .await)
                }
            },
        }
    }

    /// Best effort: the error written and reported; how the pass ends.
    /// When that write is refused too (an admission webhook on `/status`
    /// that refuses every status), the class is reported by its Event all
    /// the same, once: the status cannot say it, the memory of the
    /// parent's queue entry does. A write that conflicts (the parent
    /// changed since the pass read it: a ring member's label, another
    /// writer) reports nothing and the pass is retried: the next one
    /// writes the error and its Event together, so a member that takes the
    /// parent over meanwhile reads the status that says it and does not
    /// say it again.
    pub(super) async fn error(
        &self,
        spec: &KindSpec,
        parent: &Value,
        previous: &Status,
        class: ErrorClass,
        text: &str,
    ) -> Done {
        let failed = Done::Failed { retry_before: None };
        let reported = self.reported();
        let output = pass::failed(
            &Parent {
                spec,
                generation: parent["metadata"]["generation"].as_i64().unwrap_or(0),
                paused: spec.is_paused(parent),
                previous,
                now: jiff::Timestamp::now(),
                reported: &reported,
            },
            class,
            text,
        );
        if !output.changed {
            return failed;
        }
        match self.effects.write_status(parent, &output.status).await {
            Ok(_) => {
                self.count_status_write();
                self.publish(parent, &output.events).await
            }
            Err(e) if api_error::classify(&e) == ApiErrorClass::Conflict => {
                tracing::debug!(error = %e, class = class.as_str(), "the error's status write conflicted; retrying");
                return Done::Retry;
            }
            Err(e) => {
                tracing::warn!(error = %e, class = class.as_str(), "the error's status write failed too");
                let class_event: Vec<_> = output
                    .events
                    .into_iter()
                    .filter(|event| event.reason == class.as_str())
                    .collect();
                self.publish(parent, &class_event).await;
            }
        }
        self.remember(output.reported);
        failed
    }
}
