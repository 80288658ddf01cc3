//! A plan's lifecycle in one pass, carried out (seed 003): the course
//! [`crate::plan::lifecycle::course`] decides (the parent's open plan
//! revalidated, superseded when it no longer describes the pending
//! changes, rejected, or executed on its decision; a plan created for
//! changes that have none; a rejection holding the same changes a while),
//! made against the API server, with its Events.

use reconciler_conventions::engine::{Event, PlanFacts};
use reconciler_conventions::verdict::EventType;
use serde_json::json;

use crate::contract::model::Change;
use crate::operator::write::children::{Checked, ChildrenError, Made};
use crate::plan::artifact::{self, Artifact, Counts};
use crate::plan::digest::{self, Digest, Mode, Target};
use crate::plan::events;
use crate::plan::gates::Gates;
use crate::plan::lifecycle::{self, Course, Decided, Fresh, Situation, Void};
use crate::plan::record::{self, Decision, Divergence, Phase, Plan};

use super::{Identity, PlanError, PlanPass, Planned, Planner, parent_plans, plan_name};

/// One pass's plan, as it goes.
pub(super) struct Run<'p, 'a> {
    pub(super) planner: &'p Planner,
    pub(super) at: &'p PlanPass<'a>,
    pub(super) gates: Gates,
    pub(super) identity: Identity,
    pub(super) namespace: &'a str,
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

    pub(super) fn event(&mut self, type_: EventType, reason: &str, note: String) {
        self.out.events.push(Event {
            type_,
            reason: reason.to_owned(),
            note: reconciler_conventions::message::bound(&note),
        });
    }

    pub(super) async fn go(
        &mut self,
        checked: Checked<'_>,
        pending: &[Change],
    ) -> Result<(), PlanError> {
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
        let (older, course) = lifecycle::course(&situation);
        for older in older {
            self.supersede(&older, Divergence::Replaced).await?;
        }
        match course {
            Course::Wait => Ok(()),
            // Made before the host stopped: done.
            Course::FinishEmpty(plan) => self.finish(&plan, Ok(Made::default()), pending).await,
            Course::Resume(plan) if !self.artifact_intact(&plan).await? => {
                self.supersede(&plan, Divergence::ArtifactChanged).await?;
                let then = lifecycle::fresh(&situation);
                self.fresh(then, checked, pending, &digest, &target).await
            }
            Course::Resume(plan) => {
                let made = self.planner.execute_plan(self.at, checked, &plan).await;
                self.finish(&plan, made, pending).await
            }
            Course::Decided(plan, decided) => self.decided(plan, decided, checked, pending).await,
            Course::Fresh { void, then } => {
                match void {
                    Some((plan, Void::Supersede(why))) => self.supersede(&plan, why).await?,
                    Some((plan, Void::Fail)) => self.fail(&plan, lifecycle::UNFINISHED).await?,
                    None => {}
                }
                self.fresh(then, checked, pending, &digest, &target).await
            }
        }
    }

    /// No current plan: the changes made when none is pending, held by a
    /// rejection of the same changes, or planned.
    async fn fresh(
        &mut self,
        then: Fresh,
        checked: Checked<'_>,
        pending: &[Change],
        digest: &Digest,
        target: &Target,
    ) -> Result<(), PlanError> {
        match then {
            Fresh::NothingPending => {
                // The pass still learns when its certificates are due (no
                // request is sent).
                self.out.made = Some(self.planner.execute(self.at, checked).await);
                self.out.facts = self.facts(None, pending, None);
                Ok(())
            }
            Fresh::HeldByRejection {
                message,
                requeue_after,
            } => {
                self.out.facts = self.facts(None, &[], Some(message));
                self.out.requeue_after = Some(requeue_after);
                Ok(())
            }
            Fresh::Create => self.create(checked, pending, digest, target).await,
        }
    }

    /// The plan describes the pending changes: its decision, if any,
    /// moves it.
    async fn decided(
        &mut self,
        plan: Plan,
        decided: Decided,
        checked: Checked<'_>,
        pending: &[Change],
    ) -> Result<(), PlanError> {
        match decided {
            // Mode observe: any decision is accepted and does nothing.
            Decided::Ignored { message } => {
                self.revalidate(&plan).await?;
                self.out.facts = self.facts(Some(&plan), pending, None);
                if let Some(facts) = &mut self.out.facts {
                    facts.ignored = Some(message);
                }
                Ok(())
            }
            Decided::Denied { message } => {
                self.write_status(
                    &plan,
                    json!({"phase": Phase::Rejected.as_str()}),
                    plan.conditions.clone(),
                )
                .await?;
                self.out.events.push(events::rejected(&message));
                self.out.facts = self.facts(None, pending, Some(message));
                self.out.requeue_after = Some(self.planner.config.replan_after);
                Ok(())
            }
            // The next pass (this write passes the parent) plans anew.
            Decided::Approved { .. } if !self.artifact_intact(&plan).await? => {
                self.supersede(&plan, Divergence::ArtifactChanged).await
            }
            Decided::Approved { by, automatic } => {
                let plan = self
                    .write_status(
                        &plan,
                        json!({"phase": Phase::Applying.as_str()}),
                        plan.conditions.clone(),
                    )
                    .await?;
                if !automatic {
                    self.out.events.push(events::approved(&plan.name, &by));
                }
                let made = self.planner.execute_plan(self.at, checked, &plan).await;
                self.finish(&plan, made, pending).await
            }
            Decided::AutoApprove => {
                let plan = self.auto_approve(&plan).await?;
                let made = self.planner.execute_plan(self.at, checked, &plan).await;
                self.finish(&plan, made, pending).await
            }
            Decided::Undecided => {
                self.revalidate(&plan).await?;
                self.out.facts = self.facts(Some(&plan), pending, None);
                Ok(())
            }
        }
    }

    /// A plan for the pending changes: created, then approved by the host
    /// and executed under approval auto, else left for review.
    pub(super) async fn create(
        &mut self,
        checked: Checked<'_>,
        pending: &[Change],
        digest: &Digest,
        target: &Target,
    ) -> Result<(), PlanError> {
        let name = plan_name(self.parent_name());
        let artifact = artifact::artifact(pending);
        let counts = Counts::of(pending);
        let created = self
            .create_plan(&name, self.gates.mode, digest, target, &artifact, counts)
            .await?;
        if let Artifact::ConfigMap { gz, .. } = &artifact {
            self.effects_config_map(&created, gz).await?;
        }
        let created = created.into_value();
        let plan = self.cached(created).expect("a created plan reads back");
        if self.gates.is_direct() {
            let plan = self.auto_approve(&plan).await?;
            let made = self.planner.execute_plan(self.at, checked, &plan).await;
            return self.finish(&plan, made, pending).await;
        }
        let (reason, message) = match self.gates.mode {
            Mode::Observe => (
                "ObserveMode",
                "made in mode observe: never executed; a decision is recorded and ignored",
            ),
            Mode::Apply => ("Pending", "awaiting a decision"),
        };
        let now = self.stamp();
        let plan = self
            .write_status(
                &plan,
                json!({
                    "phase": Phase::Pending.as_str(),
                    "revalidatedGeneration": self.generation(),
                    "revalidatedAt": now,
                }),
                vec![record::condition(
                    "Approved", "False", reason, message, &now,
                )],
            )
            .await?;
        self.out
            .events
            .push(events::created(&plan.name, counts, self.gates));
        self.out.facts = self.facts(Some(&plan), pending, None);
        Ok(())
    }

    /// The execution's end: Applied, or Failed with the error (which the
    /// pass then reports as its own); when the plan was deleted while
    /// Applying, what was made is recorded ([`Run::deleted_while_applying`]).
    pub(super) async fn finish(
        &mut self,
        plan: &Plan,
        made: Result<Made, ChildrenError>,
        pending: &[Change],
    ) -> Result<(), PlanError> {
        match &made {
            Ok(done) => {
                let written = self
                    .write_status(
                        plan,
                        json!({"phase": Phase::Applied.as_str()}),
                        plan.conditions.clone(),
                    )
                    .await;
                match written {
                    Err(PlanError::Api { .. }) if self.plan_gone(plan).await => {
                        return self.deleted_while_applying(plan, *done, pending).await;
                    }
                    written => written?,
                };
                self.out
                    .events
                    .push(events::applied(&plan.name, plan.counts));
                self.out.facts = self.facts(None, &[], None);
            }
            Err(ChildrenError::Stopped { made, .. }) => {
                return self.deleted_while_applying(plan, *made, pending).await;
            }
            Err(e) if e.class().is_none() => {
                // A conflict: the plan stays Applying; the next pass
                // resumes it if what is left is what was approved.
            }
            Err(e) => {
                self.fail(plan, &e.to_string()).await?;
                self.out.facts = self.facts(None, &[], None);
            }
        }
        self.out.made = Some(made);
        Ok(())
    }

    /// `plan` was deleted while Applying, `made` made before the host
    /// stopped: a Warning says so and, when anything was made, a new plan
    /// in phase Applied records it (the changes still pending are planned
    /// anew by the next pass).
    pub(super) async fn deleted_while_applying(
        &mut self,
        plan: &Plan,
        made: Made,
        pending: &[Change],
    ) -> Result<(), PlanError> {
        let count = made.applied + made.deleted;
        let decided = match &plan.decision {
            Some(Decision::Approved { by }) => format!(" (approved by {by})"),
            _ => String::new(),
        };
        self.out.made = Some(Ok(made));
        if count == 0 {
            self.event(
                EventType::Warning,
                "PlanDeleted",
                format!(
                    "ReconcilePlan {}{decided} was deleted while Applying: the host stopped \
                     before its first change, nothing was made",
                    plan.name
                ),
            );
            return Ok(());
        }
        let name = plan_name(self.parent_name());
        let message = format!(
            "ReconcilePlan {}{decided} was deleted while Applying: {count} of its changes \
             ({} applied, {} deleted) were made before the host stopped; this plan records \
             them, and what is left is planned anew",
            plan.name, made.applied, made.deleted
        );
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
        let created = created.into_value();
        let record = self.cached(created).expect("a created plan reads back");
        let now = self.stamp();
        self.write_status(
            &record,
            json!({"phase": Phase::Applied.as_str()}),
            vec![record::condition(
                "Interrupted",
                "True",
                "PlanDeleted",
                &message,
                &now,
            )],
        )
        .await?;
        self.event(EventType::Warning, "PlanDeleted", message);
        Ok(())
    }

    /// What the parent's status says: `None` where changes are made
    /// directly. `held`: changes pending with no current plan.
    pub(super) fn facts(
        &self,
        plan: Option<&Plan>,
        pending: &[Change],
        held: Option<String>,
    ) -> Option<PlanFacts> {
        lifecycle::plan_facts(
            self.gates,
            plan.map(|p| p.name.as_str()),
            Counts::of(pending),
            held,
        )
    }
}
