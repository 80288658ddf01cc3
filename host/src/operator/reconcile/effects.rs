//! What a pass does to the cluster, behind one small interface
//! ([`Effects`]): make the guest's withdrawals, carry its other changes
//! through the parent's plan (the plan written, the changes made, planned
//! or held), write the parent's status, publish its Events, and remember
//! what became of each change for `facts.change-state`. [`Cluster`] does
//! them against the API server; a dry run
//! ([`super::dry_run::DryRun`]) makes nothing and answers as the
//! operator would find them; the pass's unit tests record them.

use std::future::Future;
use std::sync::Arc;

use kube::core::ApiResource;
use reconciler_conventions::engine::Event;
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::Value;

use crate::contract::model::Withdrawal;
use crate::facts::past_cache::PastCache;
use crate::facts::source::{ChangeStates, ChildKey};
use crate::facts::{ChangeState, ObjectSource};
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::kinds::{Kind, Registry};
use crate::operator::replica::metrics::Metrics;
use crate::operator::write::StatusWriter;
use crate::operator::write::authority::Authority;
use crate::operator::write::children::Checked;
use crate::operator::write::plans::withdrawals::{self, WithdrawalError, Withdrawn};
use crate::operator::write::plans::{PlanError, PlanPass, Planned, Planner};

/// The effects of one pass of a parent of kind `spec`. Each answers what
/// became of it, for the pass to settle on and the next pass to read.
pub(crate) trait Effects: Sync {
    /// What these effects remember of change states apart from the facts
    /// (a dry run's memory), for `facts.change-state` to answer from;
    /// `None`: the facts' own source remembers them (the host's cache).
    fn remembered(&self) -> Option<Arc<dyn ChangeStates>>;

    /// What became of the change last asked for `child`, as the pass's
    /// next evaluation reads it.
    fn change_state(&self, child: &ChildKey) -> Option<ChangeState>;

    /// Remembers what became of the change asked for `child`.
    fn record_change(&self, child: ChildKey, state: ChangeState);

    /// Ends the records of withdrawals a stopped host left Applying (best
    /// effort: a later pass ends what this one cannot).
    fn finish_interrupted(
        &self,
        spec: &KindSpec,
        parent: &Value,
    ) -> impl Future<Output = ()> + Send;

    /// Makes `withdrawals` whatever holds the other changes (`why` says
    /// what does, for their record).
    fn withdraw(
        &self,
        spec: &KindSpec,
        parent: &Value,
        past_cache: &PastCache,
        withdrawals: &[Withdrawal],
        why: &str,
    ) -> impl Future<Output = Result<Withdrawn, WithdrawalError>> + Send;

    /// Carries `checked` through the parent's plan: made, planned or held,
    /// as its gates say.
    fn through_plan(
        &self,
        spec: &KindSpec,
        parent: &Value,
        checked: Checked<'_>,
    ) -> impl Future<Output = Result<Planned, PlanError>> + Send;

    /// Writes the parent's status; returns the object as stored.
    fn write_status(
        &self,
        parent: &Value,
        status: &Status,
    ) -> impl Future<Output = Result<Value, kube::Error>> + Send;

    /// Publishes `events` about the parent (a failure is logged: the
    /// status, already written, is the record that counts).
    fn publish(&self, parent: &Value, events: &[Event]) -> impl Future<Output = ()> + Send;
}

/// The effects against the API server, of a pass of a parent of the kind
/// `resource`.
pub(crate) struct Cluster<'a> {
    source: &'a ClusterSource,
    metrics: &'a Metrics,
    authority: &'a Authority,
    planner: &'a Planner,
    resource: &'a ApiResource,
    writer: &'a StatusWriter,
}

impl<'a> Cluster<'a> {
    /// The effects of a pass of a parent of `kind`.
    pub(crate) fn of(registry: &'a Registry, kind: &'a Kind) -> Self {
        Cluster {
            source: registry.source(),
            metrics: registry.metrics(),
            authority: registry.authority(),
            planner: registry.planner(),
            resource: &kind.resource,
            writer: &kind.writer,
        }
    }

    fn at<'b>(&'b self, spec: &'b KindSpec, parent: &'b Value) -> PlanPass<'b> {
        PlanPass {
            source: self.source,
            metrics: self.metrics,
            authority: self.authority,
            spec,
            resource: self.resource,
            parent,
        }
    }
}

impl Effects for Cluster<'_> {
    /// The cache remembers what the host did, since it started.
    fn remembered(&self) -> Option<Arc<dyn ChangeStates>> {
        None
    }

    fn change_state(&self, (kind, namespace, name): &ChildKey) -> Option<ChangeState> {
        self.source.change_state(kind, namespace, name)
    }

    fn record_change(&self, (kind, namespace, name): ChildKey, state: ChangeState) {
        self.source.record_change(kind, &namespace, &name, state);
    }

    async fn finish_interrupted(&self, spec: &KindSpec, parent: &Value) {
        withdrawals::finish_interrupted(self.planner, &self.at(spec, parent)).await;
    }

    async fn withdraw(
        &self,
        spec: &KindSpec,
        parent: &Value,
        past_cache: &PastCache,
        withdrawals: &[Withdrawal],
        why: &str,
    ) -> Result<Withdrawn, WithdrawalError> {
        let made = withdrawals::make(
            self.planner,
            &self.at(spec, parent),
            past_cache,
            withdrawals,
            why,
        )
        .await;
        let refused = match &made {
            Err(WithdrawalError::Refused(_)) => true,
            Ok(w) | Err(WithdrawalError::Record(_, w)) => w.failed.is_some(),
        };
        if refused {
            self.metrics
                .withdrawals_refused
                .get_or_create(&Metrics::kind(&self.resource.kind))
                .inc();
        }
        made
    }

    async fn through_plan(
        &self,
        spec: &KindSpec,
        parent: &Value,
        checked: Checked<'_>,
    ) -> Result<Planned, PlanError> {
        self.planner.pass(&self.at(spec, parent), checked).await
    }

    async fn write_status(&self, parent: &Value, status: &Status) -> Result<Value, kube::Error> {
        self.writer.write_status(parent, status).await
    }

    /// Publishes `events` and counts them.
    async fn publish(&self, parent: &Value, events: &[Event]) {
        self.writer.publish(parent, events).await;
        self.metrics
            .events
            .get_or_create(&Metrics::kind(&self.resource.kind))
            .inc_by(events.len() as u64);
    }
}
