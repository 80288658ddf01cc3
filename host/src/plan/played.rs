//! A plan's course played without writing (seed 003): what a pass's plan
//! would come to from the parent's plans as they are, the gates and the
//! pending changes, decided by the same lifecycle the operator's planner
//! carries out ([`crate::plan::lifecycle`]), every write taken as the API
//! server's to accept. A dry run of a pass (`capture`, `shadow`,
//! promotion) and a fixture's plans (`test`) are played here.

use std::time::Duration;

use reconciler_conventions::engine::{Event, PlanFacts};

use crate::contract::model::Change;
use crate::facts::Hold;
use crate::plan::artifact::Counts;
use crate::plan::digest::{self, Mode, Target};
use crate::plan::events;
use crate::plan::gates::Gates;
use crate::plan::lifecycle::{self, Course, Decided, Fresh, Situation, UNFINISHED, Void};
use crate::plan::record::{Divergence, Plan};

/// What a pass's plan came to, played.
#[derive(Debug, Default)]
pub struct Played {
    /// What holds the pass's changes; `None`: they are made.
    pub hold: Option<Hold>,
    pub facts: Option<PlanFacts>,
    /// The plan's Events, in order.
    pub events: Vec<Event>,
    pub requeue_after: Option<Duration>,
    /// The changes are made in this pass.
    pub made: bool,
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

/// The parent a plan is played for.
pub struct Playing<'a> {
    /// The parent's plans, oldest first; `None`: the cluster serves none.
    pub plans: Option<&'a [Plan]>,
    pub gates: Gates,
    /// The changes that would change something.
    pub pending: &'a [Change],
    pub target: &'a Target,
    /// The name a plan created now would have.
    pub plan_name: &'a str,
    pub now: jiff::Timestamp,
    pub replan_after: Duration,
    /// When `plan` Rejected was first seen (now, if never).
    pub first_seen: &'a (dyn Fn(&Plan) -> jiff::Timestamp + Sync),
}

/// Plays the course of `playing`'s plan.
pub fn play(playing: &Playing<'_>) -> Result<Played, Unavailable> {
    let gates = playing.gates;
    let Some(plans) = playing.plans else {
        // Made directly, or nothing to make: found as the guest asks.
        let facts = unserved(gates, !playing.pending.is_empty())?;
        return Ok(Played {
            made: true,
            facts,
            ..Played::default()
        });
    };
    let digest = digest::digest(playing.pending, gates.mode, playing.target);
    let situation = Situation {
        plans,
        pending: !playing.pending.is_empty(),
        digest: &digest,
        target: playing.target,
        gates,
        now: playing.now,
        replan_after: playing.replan_after,
        first_seen: playing.first_seen,
    };
    let mut out = Offline {
        gates,
        counts: Counts::of(playing.pending),
        played: Played::default(),
    };
    let (older, course) = lifecycle::course(&situation);
    // The older open plans are superseded first, as the planner does.
    for plan in &older {
        out.played
            .events
            .push(events::superseded(&plan.name, Divergence::Replaced));
    }
    match course {
        Course::Wait => {}
        Course::FinishEmpty(plan) | Course::Resume(plan) => out.applied(&plan.name),
        Course::Decided(plan, decided) => match decided {
            Decided::Ignored { message } => {
                out.played.facts = out.facts(Some(&plan.name), None);
                if let Some(facts) = &mut out.played.facts {
                    facts.ignored = Some(message);
                }
            }
            Decided::Denied { message } => {
                out.played.events.push(events::rejected(&message));
                out.played.facts = out.facts(None, Some(message));
                out.played.requeue_after = Some(situation.replan_after);
            }
            Decided::Approved { by, automatic } => {
                if !automatic {
                    out.played.events.push(events::approved(&plan.name, &by));
                }
                out.applied(&plan.name);
            }
            Decided::AutoApprove => out.applied(&plan.name),
            Decided::Undecided => out.played.facts = out.facts(Some(&plan.name), None),
        },
        Course::Fresh { void, then } => {
            match void {
                Some((plan, Void::Supersede(why))) => {
                    out.played.events.push(events::superseded(&plan.name, why));
                }
                Some((plan, Void::Fail)) => {
                    out.played
                        .events
                        .push(events::failed(&plan.name, UNFINISHED));
                }
                None => {}
            }
            match then {
                Fresh::NothingPending => {
                    out.played.made = true;
                    out.played.facts = out.facts(None, None);
                }
                Fresh::HeldByRejection {
                    message,
                    requeue_after,
                } => {
                    out.played.facts = out.facts(None, Some(message));
                    out.played.requeue_after = Some(requeue_after);
                }
                Fresh::Create if gates.is_direct() => out.applied(playing.plan_name),
                Fresh::Create => {
                    out.played
                        .events
                        .push(events::created(playing.plan_name, out.counts, gates));
                    out.played.facts = out.facts(Some(playing.plan_name), None);
                }
            }
        }
    }
    out.played.hold = lifecycle::hold(out.played.facts.as_ref(), out.played.made);
    Ok(out.played)
}

/// A plan being played.
struct Offline {
    gates: Gates,
    counts: Counts,
    played: Played,
}

impl Offline {
    fn facts(&self, plan: Option<&str>, held: Option<String>) -> Option<PlanFacts> {
        lifecycle::plan_facts(self.gates, plan, self.counts, held)
    }

    /// `plan` executed: the changes made, PlanApplied.
    fn applied(&mut self, plan: &str) {
        self.played.made = true;
        self.played.events.push(events::applied(plan, self.counts));
        self.played.facts = self.facts(None, None);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::contract::model::config_map_kind;
    use crate::plan::gates::Approval;
    use crate::plan::record::Phase;

    #[test]
    fn older_open_plans_are_superseded_first_as_the_planner_supersedes_them() {
        let target = Target {
            cluster: "cluster-uid".into(),
            parent: "parent-uid".into(),
        };
        let gates = Gates {
            mode: Mode::Apply,
            approval: Approval::Manual,
        };
        let pending = [Change::Apply {
            kind: config_map_kind(),
            name: "w-config".into(),
            body: json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "w-config"}, "data": {"a": "1"}}),
        }];
        let digest = digest::digest(&pending, gates.mode, &target);
        let open = |name: &str| Plan {
            phase: Phase::Pending,
            ..Plan::describing(
                name,
                "2026-12-03T10:00:00Z".into(),
                gates.mode,
                &digest,
                &target,
            )
        };
        let now: jiff::Timestamp = "2026-12-03T10:05:00Z".parse().unwrap();
        let plans = [open("w-older"), open("w-current")];
        let played = play(&Playing {
            plans: Some(&plans),
            gates,
            pending: &pending,
            target: &target,
            plan_name: "w-plan",
            now,
            replan_after: Duration::from_secs(60),
            first_seen: &|_| now,
        })
        .expect("plans are served");
        let reasons: Vec<&str> = played.events.iter().map(|e| e.reason.as_str()).collect();
        // The older plan is superseded (Replaced); the current one awaits
        // its decision, the changes held.
        assert_eq!(reasons, ["PlanSuperseded"], "{:?}", played.events);
        assert!(
            played.events[0].note.contains("w-older"),
            "{:?}",
            played.events
        );
        assert_eq!(played.hold, Some(Hold::AwaitingApproval));
    }
}
