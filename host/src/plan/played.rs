//! A plan's course played (seed 003): the one interpreter of the course
//! [`crate::plan::lifecycle::course`] decides, over the moves a pass makes
//! of it ([`PlanMoves`]): written to the API server by the operator's
//! planner, taken as accepted by a dry run ([`crate::plan::accepted`]).
//! The plan's Events, what the status says of it and when to pass again
//! are decided here only.

use std::time::Duration;

use reconciler_conventions::engine::{Event, PlanFacts};

use crate::contract::model::Change;
use crate::facts::Hold;
use crate::plan::artifact::Counts;
use crate::plan::digest::{Digest, Mode, Target};
use crate::plan::events;
use crate::plan::gates::Gates;
use crate::plan::lifecycle::{self, Course, Decided, Fresh, Situation, UNFINISHED, Void};
use crate::plan::record::{Decision, Divergence, Plan};

/// What a pass's plan came to, played.
#[derive(Debug, Default)]
pub struct Played {
    /// What holds the pass's changes; `None`: they are made.
    pub hold: Option<Hold>,
    pub facts: Option<PlanFacts>,
    /// The plan's Events, in order.
    pub events: Vec<Event>,
    pub requeue_after: Option<Duration>,
    /// The changes were executed in this pass (made, or failed making).
    pub made: bool,
}

/// How many changes an execution made before it ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub applied: usize,
    pub deleted: usize,
}

/// How the execution of a pass's changes ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Execution {
    /// Every change made (or found made).
    Made(Count),
    /// The plan was deleted while Applying: none made after.
    Stopped(Count),
    /// A write conflicted: the plan stays Applying, resumed by the next
    /// pass if what is left is what was approved.
    Conflict,
    /// A change failed, as the pass reports it.
    Failed(String),
}

/// What a plan's course does to the plan and the parent's children. Each
/// move only writes (or takes the write as accepted): the Events and what
/// the status says are the interpreter's ([`play`]).
pub(crate) trait PlanMoves {
    type Error;
    /// Voids `plan`: phase Superseded, naming `why`.
    async fn supersede(&mut self, plan: &Plan, why: Divergence) -> Result<(), Self::Error>;
    /// Phase Failed, with `why`.
    async fn fail(&mut self, plan: &Plan, why: &str) -> Result<(), Self::Error>;
    /// Whether the plan's effects are still the ones it recorded.
    async fn artifact_intact(&mut self, plan: &Plan) -> Result<bool, Self::Error>;
    /// The plan still describes the pending changes: revalidated.
    async fn revalidate(&mut self, plan: &Plan) -> Result<(), Self::Error>;
    /// A reviewer's denial carried out: phase Rejected.
    async fn reject(&mut self, plan: &Plan) -> Result<(), Self::Error>;
    /// A reviewer's approval carried out: phase Applying.
    async fn applying(&mut self, plan: &Plan) -> Result<Plan, Self::Error>;
    /// Approved by the host (approval auto), phase Applying.
    async fn auto_approve(&mut self, plan: &Plan) -> Result<Plan, Self::Error>;
    /// A plan of the `pending` changes, created (its effects recorded).
    async fn create(
        &mut self,
        pending: &[Change],
        digest: &Digest,
        target: &Target,
    ) -> Result<Plan, Self::Error>;
    /// A created plan left for review: phase Pending (mode apply) or
    /// ObserveMode (mode observe).
    async fn await_decision(&mut self, plan: &Plan) -> Result<Plan, Self::Error>;
    /// The pass's changes made: directly (`plan` `None`), or as `plan`
    /// executes them (none after it is gone).
    async fn execute(&mut self, plan: Option<&Plan>) -> Execution;
    /// Phase Applied; `Ok(false)`: the plan is gone (deleted meanwhile).
    async fn applied(&mut self, plan: &Plan) -> Result<bool, Self::Error>;
    /// `plan` was deleted while Applying after `made` (something) was
    /// made: a plan in phase Applied records it, saying `message`.
    async fn deleted(
        &mut self,
        plan: &Plan,
        made: Count,
        message: &str,
        pending: &[Change],
    ) -> Result<(), Self::Error>;
}

/// The pass needs ReconcilePlans (review asked for, changes pending) and
/// the cluster serves none.
#[derive(Debug)]
pub struct Unavailable(pub Gates);

/// Where the cluster serves no ReconcilePlan, what a pass under `gates`
/// does with its changes (`pending`: some would change something): made
/// directly (`Ok(None)`), nothing to make and the status says the gates
/// (`Ok(Some(facts))`), or refused.
pub fn unserved(gates: Gates, pending: bool) -> Result<Option<PlanFacts>, Unavailable> {
    match (gates.is_direct(), pending) {
        (true, _) => Ok(None),
        (false, false) => Ok(Some(PlanFacts {
            observe: gates.mode == Mode::Observe,
            ..PlanFacts::default()
        })),
        (false, true) => Err(Unavailable(gates)),
    }
}

/// Plays the course of the plan of a pass in `situation`, whose `pending`
/// changes would change something, through `moves`.
pub(crate) async fn play<M: PlanMoves>(
    moves: &mut M,
    situation: &Situation<'_>,
    pending: &[Change],
) -> Result<Played, M::Error> {
    let mut run = Interpreter {
        moves,
        gates: situation.gates,
        replan_after: situation.replan_after,
        pending,
        played: Played::default(),
    };
    let (older, course) = lifecycle::course(situation);
    for plan in &older {
        run.supersede(plan, Divergence::Replaced).await?;
    }
    match course {
        Course::Wait => {}
        // Made before the host stopped: done.
        Course::FinishEmpty(plan) => run.finish(&plan, Execution::Made(Count::default())).await?,
        Course::Resume(plan) if !run.moves.artifact_intact(&plan).await? => {
            run.supersede(&plan, Divergence::ArtifactChanged).await?;
            run.fresh(lifecycle::fresh(situation), situation).await?;
        }
        Course::Resume(plan) => run.execute(&plan).await?,
        Course::Decided(plan, decided) => run.decided(plan, decided).await?,
        Course::Fresh { void, then } => {
            match void {
                Some((plan, Void::Supersede(why))) => run.supersede(&plan, why).await?,
                Some((plan, Void::Fail)) => run.fail(&plan, UNFINISHED).await?,
                None => {}
            }
            run.fresh(then, situation).await?;
        }
    }
    run.played.hold = lifecycle::hold(run.played.facts.as_ref(), run.played.made);
    Ok(run.played)
}

/// A plan being played.
struct Interpreter<'m, 'p, M> {
    moves: &'m mut M,
    gates: Gates,
    replan_after: Duration,
    pending: &'p [Change],
    played: Played,
}

impl<M: PlanMoves> Interpreter<'_, '_, M> {
    /// What the parent's status says: `None` where changes are made
    /// directly. `plan`: the current plan, holding the pending changes;
    /// `held`: changes pending with no current plan.
    fn facts(&self, plan: Option<&str>, held: Option<String>) -> Option<PlanFacts> {
        lifecycle::plan_facts(self.gates, plan, Counts::of(self.pending), held)
    }

    async fn supersede(&mut self, plan: &Plan, why: Divergence) -> Result<(), M::Error> {
        self.moves.supersede(plan, why).await?;
        self.played.events.push(events::superseded(&plan.name, why));
        Ok(())
    }

    async fn fail(&mut self, plan: &Plan, why: &str) -> Result<(), M::Error> {
        self.moves.fail(plan, why).await?;
        self.played.events.push(events::failed(&plan.name, why));
        Ok(())
    }

    /// No current plan: the changes made when none is pending, held by a
    /// rejection of the same changes, or planned.
    async fn fresh(&mut self, then: Fresh, situation: &Situation<'_>) -> Result<(), M::Error> {
        match then {
            Fresh::NothingPending => {
                // The pass still learns when its certificates are due (no
                // request is sent).
                self.moves.execute(None).await;
                self.played.made = true;
                self.played.facts = self.facts(None, None);
            }
            Fresh::HeldByRejection {
                message,
                requeue_after,
            } => {
                self.played.facts = self.facts(None, Some(message));
                self.played.requeue_after = Some(requeue_after);
            }
            Fresh::Create => {
                let plan = self
                    .moves
                    .create(self.pending, situation.digest, situation.target)
                    .await?;
                if self.gates.is_direct() {
                    let plan = self.moves.auto_approve(&plan).await?;
                    return self.execute(&plan).await;
                }
                let plan = self.moves.await_decision(&plan).await?;
                let counts = Counts::of(self.pending);
                self.played
                    .events
                    .push(events::created(&plan.name, counts, self.gates));
                self.played.facts = self.facts(Some(&plan.name), None);
            }
        }
        Ok(())
    }

    /// The plan describes the pending changes: its decision, if any,
    /// moves it.
    async fn decided(&mut self, plan: Plan, decided: Decided) -> Result<(), M::Error> {
        match decided {
            // Mode observe: any decision is accepted and does nothing.
            Decided::Ignored { message } => {
                self.moves.revalidate(&plan).await?;
                self.played.facts = self.facts(Some(&plan.name), None);
                if let Some(facts) = &mut self.played.facts {
                    facts.ignored = Some(message);
                }
            }
            Decided::Denied { message } => {
                self.moves.reject(&plan).await?;
                self.played.events.push(events::rejected(&message));
                self.played.facts = self.facts(None, Some(message));
                self.played.requeue_after = Some(self.replan_after);
            }
            // The next pass (this write passes the parent) plans anew.
            Decided::Approved { .. } if !self.moves.artifact_intact(&plan).await? => {
                self.supersede(&plan, Divergence::ArtifactChanged).await?;
            }
            Decided::Approved { by, automatic } => {
                let plan = self.moves.applying(&plan).await?;
                if !automatic {
                    self.played.events.push(events::approved(&plan.name, &by));
                }
                self.execute(&plan).await?;
            }
            Decided::AutoApprove => {
                let plan = self.moves.auto_approve(&plan).await?;
                self.execute(&plan).await?;
            }
            Decided::Undecided => {
                self.moves.revalidate(&plan).await?;
                self.played.facts = self.facts(Some(&plan.name), None);
            }
        }
        Ok(())
    }

    /// `plan` executed, and its end recorded.
    async fn execute(&mut self, plan: &Plan) -> Result<(), M::Error> {
        let execution = self.moves.execute(Some(plan)).await;
        self.finish(plan, execution).await
    }

    /// The execution's end: Applied, or Failed with the error (which the
    /// pass then reports as its own); when the plan was deleted while
    /// Applying, what was made is recorded.
    async fn finish(&mut self, plan: &Plan, execution: Execution) -> Result<(), M::Error> {
        self.played.made = true;
        match execution {
            Execution::Made(made) => {
                if !self.moves.applied(plan).await? {
                    return self.deleted(plan, made).await;
                }
                self.played
                    .events
                    .push(events::applied(&plan.name, plan.counts));
                self.played.facts = self.facts(None, None);
            }
            Execution::Stopped(made) => return self.deleted(plan, made).await,
            Execution::Conflict => {}
            Execution::Failed(why) => {
                self.fail(plan, &why).await?;
                self.played.facts = self.facts(None, None);
            }
        }
        Ok(())
    }

    /// `plan` was deleted while Applying, `made` made before the host
    /// stopped: a Warning says so and, when anything was made, a plan in
    /// phase Applied records it (the changes still pending are planned
    /// anew by the next pass).
    async fn deleted(&mut self, plan: &Plan, made: Count) -> Result<(), M::Error> {
        let by = match &plan.decision {
            Some(Decision::Approved { by }) => Some(by.as_str()),
            _ => None,
        };
        let event = events::deleted(&plan.name, by, made.applied, made.deleted);
        if made != Count::default() {
            self.moves
                .deleted(plan, made, &event.note, self.pending)
                .await?;
        }
        self.played.events.push(event);
        Ok(())
    }
}
