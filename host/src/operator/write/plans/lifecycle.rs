//! A plan's lifecycle in one pass, carried out against the API server
//! (seed 003): the moves ([`PlanMoves`]) of the course the interpreter
//! plays ([`crate::plan::played`]): the parent's open plan revalidated,
//! superseded, rejected, or executed on its decision; a plan created for
//! changes that have none; what a plan deleted while Applying made,
//! recorded.

use serde_json::json;

use crate::contract::model::Change;
use crate::operator::write::children::{Checked, ChildrenError, Made};
use crate::plan::artifact::{self, Artifact, Counts};
use crate::plan::digest::{self, Digest, Mode, Target};
use crate::plan::gates::Gates;
use crate::plan::lifecycle::Situation;
use crate::plan::played::{self, Count, Execution, PlanMoves};
use crate::plan::record::{self, Divergence, Phase, Plan};

use super::{Identity, PlanError, PlanPass, Planned, Planner, parent_plans, plan_name};

/// One pass's plan, as it goes.
pub(super) struct Run<'p, 'a> {
    pub(super) planner: &'p Planner,
    pub(super) at: &'p PlanPass<'a>,
    pub(super) gates: Gates,
    pub(super) identity: Identity,
    pub(super) namespace: &'a str,
    /// The pass's changes, until they are executed.
    pub(super) checked: Option<Checked<'p>>,
    pub(super) out: Planned,
    pub(super) now: jiff::Timestamp,
}

impl Run<'_, '_> {
    pub(super) fn parent_uid(&self) -> &str {
        self.at.parent["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
    }

    pub(super) fn parent_name(&self) -> &str {
        self.at.parent["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
    }

    pub(super) fn generation(&self) -> i64 {
        self.at.parent["metadata"]["generation"]
            .as_i64()
            .unwrap_or(0)
    }

    pub(super) fn stamp(&self) -> String {
        reconciler_conventions::status::rfc3339_seconds(self.now)
    }

    /// The parent's plans in the cache, oldest first.
    pub(super) fn plans(&self) -> Vec<Plan> {
        parent_plans(self.at.source, self.namespace, self.parent_uid())
    }

    /// Plays the plan of the pass, whose `pending` changes would change
    /// something.
    pub(super) async fn go(&mut self, pending: &[Change]) -> Result<(), PlanError> {
        let target = Target {
            cluster: self.identity.cluster.clone(),
            parent: self.parent_uid().to_owned(),
        };
        let digest = digest::digest(pending, self.gates.mode, &target);
        let plans = self.plans();
        let (first_seen, source) = (&self.planner.first_seen, self.at.source);
        let (namespace, now) = (self.namespace, self.now);
        let situation = Situation {
            plans: &plans,
            pending: !pending.is_empty(),
            digest: &digest,
            target: &target,
            gates: self.gates,
            now: self.now,
            replan_after: self.planner.config.replan_after,
            first_seen: &|plan| first_seen.of(source, namespace, plan, now),
        };
        let played = played::play(self, &situation, pending).await?;
        if played.made && self.out.made.is_none() {
            // Finished as made before the host stopped.
            self.out.made = Some(Ok(Made::default()));
        }
        self.out.facts = played.facts;
        self.out.events = played.events;
        self.out.requeue_after = played.requeue_after;
        Ok(())
    }
}

impl PlanMoves for Run<'_, '_> {
    type Error = PlanError;

    /// Void: Superseded=True naming the cause (on an undecided plan, its
    /// Approved=False too); a decision stays as it was recorded.
    async fn supersede(&mut self, plan: &Plan, why: Divergence) -> Result<(), PlanError> {
        let now = self.stamp();
        let mut conditions = record::with_condition(
            &plan.conditions,
            record::condition("Superseded", "True", why.reason(), why.message(), &now),
        );
        if plan.decision.is_none() {
            conditions = record::with_condition(
                &conditions,
                record::condition("Approved", "False", why.reason(), why.message(), &now),
            );
        }
        self.write_status(
            plan,
            json!({"phase": Phase::Superseded.as_str()}),
            conditions,
        )
        .await
        .map(|_| ())
    }

    async fn fail(&mut self, plan: &Plan, why: &str) -> Result<(), PlanError> {
        let now = self.stamp();
        let conditions = record::with_condition(
            &plan.conditions,
            record::condition("Failed", "True", "ExecutionFailed", why, &now),
        );
        self.write_status(plan, json!({"phase": Phase::Failed.as_str()}), conditions)
            .await
            .map(|_| ())
    }

    async fn artifact_intact(&mut self, plan: &Plan) -> Result<bool, PlanError> {
        self.effects_intact(plan).await
    }

    /// The revalidated fields advance when the parent's generation moved
    /// and the plan still describes its changes.
    async fn revalidate(&mut self, plan: &Plan) -> Result<(), PlanError> {
        if plan.revalidated_generation == Some(self.generation()) {
            return Ok(());
        }
        self.write_status(
            plan,
            json!({"revalidatedGeneration": self.generation(), "revalidatedAt": self.stamp()}),
            plan.conditions.clone(),
        )
        .await
        .map(|_| ())
    }

    async fn reject(&mut self, plan: &Plan) -> Result<(), PlanError> {
        self.write_status(
            plan,
            json!({"phase": Phase::Rejected.as_str()}),
            plan.conditions.clone(),
        )
        .await
        .map(|_| ())
    }

    async fn applying(&mut self, plan: &Plan) -> Result<Plan, PlanError> {
        self.write_status(
            plan,
            json!({"phase": Phase::Applying.as_str()}),
            plan.conditions.clone(),
        )
        .await
    }

    async fn auto_approve(&mut self, plan: &Plan) -> Result<Plan, PlanError> {
        self.approve_as_host(plan).await
    }

    /// Created with its effects (a large plan's in a ConfigMap it owns),
    /// read back into the cache.
    async fn create(
        &mut self,
        pending: &[Change],
        digest: &Digest,
        target: &Target,
    ) -> Result<Plan, PlanError> {
        let name = plan_name(self.parent_name());
        let artifact = artifact::artifact(pending);
        let created = self
            .create_plan(
                &name,
                self.gates.mode,
                digest,
                target,
                &artifact,
                Counts::of(pending),
            )
            .await?;
        if let Artifact::ConfigMap { gz, .. } = &artifact {
            self.effects_config_map(&created, gz).await?;
        }
        Ok(self
            .cached(created.into_value())
            .expect("a created plan reads back"))
    }

    async fn await_decision(&mut self, plan: &Plan) -> Result<Plan, PlanError> {
        let (reason, message) = match self.gates.mode {
            Mode::Observe => (
                "ObserveMode",
                "made in mode observe: never executed; a decision is recorded and ignored",
            ),
            Mode::Apply => ("Pending", "awaiting a decision"),
        };
        let now = self.stamp();
        self.write_status(
            plan,
            json!({
                "phase": Phase::Pending.as_str(),
                "revalidatedGeneration": self.generation(),
                "revalidatedAt": now,
            }),
            vec![record::condition(
                "Approved", "False", reason, message, &now,
            )],
        )
        .await
    }

    async fn execute(&mut self, plan: Option<&Plan>) -> Execution {
        let checked = self
            .checked
            .take()
            .expect("a pass's changes are executed once");
        let made = match plan {
            Some(plan) => self.planner.execute_plan(self.at, checked, plan).await,
            None => self.planner.execute(self.at, checked).await,
        };
        let execution = match &made {
            Ok(made) => Execution::Made(count(made)),
            Err(ChildrenError::Stopped { made, .. }) => {
                let stopped = Execution::Stopped(count(made));
                self.out.made = Some(Ok(made.clone()));
                return stopped;
            }
            Err(e) if e.class().is_none() => Execution::Conflict,
            Err(e) => Execution::Failed(e.to_string()),
        };
        self.out.made = Some(made);
        execution
    }

    async fn applied(&mut self, plan: &Plan) -> Result<bool, PlanError> {
        let written = self
            .write_status(
                plan,
                json!({"phase": Phase::Applied.as_str()}),
                plan.conditions.clone(),
            )
            .await;
        match written {
            Err(PlanError::Api { .. }) if self.plan_gone(plan).await => Ok(false),
            written => written.map(|_| true),
        }
    }

    /// A new plan in phase Applied records what was made, Interrupted
    /// (PlanDeleted); what is left is planned anew by the next pass.
    async fn deleted(
        &mut self,
        _: &Plan,
        _: Count,
        message: &str,
        pending: &[Change],
    ) -> Result<(), PlanError> {
        let name = plan_name(self.parent_name());
        let target = Target {
            cluster: self.identity.cluster.clone(),
            parent: self.parent_uid().to_owned(),
        };
        let digest = digest::digest(pending, Mode::Apply, &target);
        let created = self
            .create_plan(
                &name,
                Mode::Apply,
                &digest,
                &target,
                &artifact::recorded(pending),
                Counts::of(pending),
            )
            .await?;
        let record = self
            .cached(created.into_value())
            .expect("a created plan reads back");
        let now = self.stamp();
        self.write_status(
            &record,
            json!({"phase": Phase::Applied.as_str()}),
            vec![record::condition(
                "Interrupted",
                "True",
                "PlanDeleted",
                message,
                &now,
            )],
        )
        .await
        .map(|_| ())
    }
}

/// What an execution made, as a plan counts it.
fn count(made: &Made) -> Count {
    Count {
        applied: made.applied,
        deleted: made.deleted,
    }
}
