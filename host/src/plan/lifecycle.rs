//! A plan's lifecycle in one pass, decided without I/O (seed 003): from
//! the parent's plans, whether changes are pending and their digest, and
//! the gates, what the pass does with its plan. The planner carries the
//! course out against the API server (`operator/write/plans/`); what the
//! parent's status says of it is [`plan_facts`].

use std::time::Duration;

use reconciler_conventions::engine::PlanFacts;

use crate::facts::Hold;
use crate::plan::artifact::Counts;
use crate::plan::digest::{Digest, Mode, Target};
use crate::plan::gates::{Approval, Gates};
use crate::plan::record::{Decision, Divergence, Phase, Plan};

/// What a pass knows of its parent's plans.
pub struct Situation<'a> {
    /// The parent's plans, oldest first.
    pub plans: &'a [Plan],
    /// Whether changes are pending (made or planned by this pass).
    pub pending: bool,
    /// The pending changes' digest, in the gates' mode, for `target`.
    pub digest: &'a Digest,
    pub target: &'a Target,
    pub gates: Gates,
    pub now: jiff::Timestamp,
    /// How long a rejection holds the same changes.
    pub replan_after: Duration,
    /// When this host first saw `plan` Rejected (now, if it never did):
    /// asked only of a rejection with no decision time it can read.
    pub first_seen: &'a (dyn Fn(&Plan) -> jiff::Timestamp + Sync),
}

/// What the pass does with its parent's plan.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Course {
    /// Being deleted while Applying (a finalizer holds it): its execution
    /// stopped and said so; nothing more until it is gone.
    Wait,
    /// Applying, and nothing is left to change: it was made before the
    /// host stopped, and is finished so.
    FinishEmpty(Plan),
    /// Applying, and what is left is what was approved: resumed, once its
    /// artifact is found intact (else superseded, ArtifactChanged, and the
    /// pass goes on as with no plan).
    Resume(Plan),
    /// The plan describes the pending changes: its decision moves it.
    Decided(Plan, Decided),
    /// No plan describes the pending changes; the one that did not, if
    /// any, is voided first.
    Fresh {
        void: Option<(Plan, Void)>,
        then: Fresh,
    },
}

/// How a plan that no longer describes the pending changes is voided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Void {
    /// Superseded, naming why.
    Supersede(Divergence),
    /// Failed: its execution did not finish and what is left is not what
    /// was approved.
    Fail,
}

/// What a plan's decision (or its absence) does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decided {
    /// Mode observe: a decision is recorded and ignored (ApprovalIgnored).
    Ignored { message: String },
    /// Denied: Rejected, the same changes planned again after a while.
    Denied { message: String },
    /// Approved by a reviewer (or by the host, `automatic`): executed once
    /// its artifact is found intact (else superseded, ArtifactChanged).
    Approved { by: String, automatic: bool },
    /// Approval auto: approved by the host and executed.
    AutoApprove,
    /// Awaiting a decision: revalidated.
    Undecided,
}

/// What a pass with no current plan does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fresh {
    /// Nothing to change: the changes are made (a certificate's renewal
    /// is learnt; no request is sent).
    NothingPending,
    /// A rejection of these very changes holds them until it ends.
    HeldByRejection {
        message: String,
        requeue_after: Duration,
    },
    /// A plan is created for them (then approved by the host and executed
    /// under direct gates, else left for review).
    Create,
}

/// The message of an execution that did not finish and cannot resume.
pub(crate) const UNFINISHED: &str = "the execution did not finish (the host stopped, or a change failed) and \
     what is left is not what was approved: a new plan holds it";

/// The reason of the host's own approval (approval auto).
pub(crate) const AUTO_APPROVED: &str = "AutoApproved";

/// The older open plans to supersede (Replaced) first, and the course of
/// the current one. A record of withdrawals is never the current plan: one
/// a stopped host left Applying is the withdrawals' to end.
pub(crate) fn course(s: &Situation<'_>) -> (Vec<Plan>, Course) {
    let mut open: Vec<Plan> = s
        .plans
        .iter()
        .filter(|p| !p.phase.is_terminal() && !p.withdrawal)
        .cloned()
        .collect();
    let Some(plan) = open.pop() else {
        return (open, voided(s, None));
    };
    let divergence = if s.pending {
        plan.divergence(s.digest, s.gates.mode, s.target)
    } else {
        Some(Divergence::EffectsGone)
    };
    let course = match (plan.phase, divergence) {
        // Applying is the host's to write, and only on a decision: a plan
        // that reads it without one is not executed.
        (Phase::Applying, _) if !plan.executable() => {
            voided(s, Some((plan, Void::Supersede(Divergence::Tampered))))
        }
        (Phase::Applying, _) if plan.deleting => Course::Wait,
        (Phase::Applying, Some(Divergence::EffectsGone)) => Course::FinishEmpty(plan),
        (Phase::Applying, None) => Course::Resume(plan),
        (Phase::Applying, Some(_)) => voided(s, Some((plan, Void::Fail))),
        (_, Some(divergence)) => voided(s, Some((plan, Void::Supersede(divergence)))),
        (_, None) => {
            let decided = decided(s, &plan);
            Course::Decided(plan, decided)
        }
    };
    (open, course)
}

fn decided(s: &Situation<'_>, plan: &Plan) -> Decided {
    match (&plan.decision, s.gates.mode) {
        (Some(decision), Mode::Observe) => {
            let (verb, by) = match decision {
                Decision::Approved { by } => ("approved", by),
                Decision::Denied { by } => ("denied", by),
            };
            Decided::Ignored {
                message: format!(
                    "ReconcilePlan {} was {verb} by {by}, but it was made in mode observe: nothing is executed",
                    plan.name
                ),
            }
        }
        (Some(Decision::Denied { by }), Mode::Apply) => Decided::Denied {
            message: format!(
                "ReconcilePlan {} was denied by {by}; the same changes are planned again after {}s",
                plan.name,
                s.replan_after.as_secs()
            ),
        },
        (Some(Decision::Approved { by }), Mode::Apply) => Decided::Approved {
            by: by.clone(),
            automatic: plan
                .conditions
                .iter()
                .any(|c| c["type"] == "Approved" && c["reason"] == AUTO_APPROVED),
        },
        (None, Mode::Apply) if s.gates.approval == Approval::Auto => Decided::AutoApprove,
        (None, _) => Decided::Undecided,
    }
}

fn voided(s: &Situation<'_>, void: Option<(Plan, Void)>) -> Course {
    Course::Fresh {
        void,
        then: fresh(s),
    }
}

/// What a pass with no current plan (or whose plan was voided) does.
pub fn fresh(s: &Situation<'_>) -> Fresh {
    if !s.pending {
        Fresh::NothingPending
    } else if let Some((message, requeue_after)) = held_by_rejection(s) {
        Fresh::HeldByRejection {
            message,
            requeue_after,
        }
    } else {
        Fresh::Create
    }
}

/// A rejection of these very changes holds their replacement for
/// `replan_after` (no reject-recreate loop): what the status says, and
/// when a pass makes them. The hold counts from the decision's time; a
/// plan that reads Rejected with none the host can read (a `manage`
/// holder wrote the phase without a decision, or a time that does not
/// parse) holds from when this host first saw it so, a time no writer of
/// the plan sets: without one, such a write would have the same changes
/// planned again at once, `--replan-after` skipped.
fn held_by_rejection(s: &Situation<'_>) -> Option<(String, Duration)> {
    let digest = s.digest.to_string();
    let rejected = s
        .plans
        .iter()
        .rev()
        .find(|p| p.phase == Phase::Rejected && p.digest == digest)?;
    let decided: Option<jiff::Timestamp> =
        rejected.decided_at.as_deref().and_then(|t| t.parse().ok());
    let at = decided.unwrap_or_else(|| (s.first_seen)(rejected));
    let ends = at
        .checked_add(jiff::SignedDuration::try_from(s.replan_after).ok()?)
        .ok()?;
    let left = s.now.duration_until(ends);
    if left.is_negative() || left.is_zero() {
        return None;
    }
    let how = if decided.is_some() {
        "was denied"
    } else {
        "reads Rejected with no decision time"
    };
    let message = format!(
        "ReconcilePlan {} holding these changes {how}; they are planned again at {}",
        rejected.name,
        reconciler_conventions::status::rfc3339_seconds(ends)
    );
    Some((
        message,
        Duration::try_from(left).unwrap_or_default() + Duration::from_secs(1),
    ))
}

/// What holds a pass's changes, from what its status says of the plan:
/// `None` when they were `made` or none is pending; else mode observe, a
/// plan awaiting a decision, or a denial.
pub fn hold(facts: Option<&PlanFacts>, made: bool) -> Option<Hold> {
    let facts = facts?;
    if made || facts.pending.is_none() {
        return None;
    }
    Some(if facts.observe {
        Hold::Observe
    } else if facts.plan.is_some() {
        Hold::AwaitingApproval
    } else {
        Hold::Denied
    })
}

/// What the parent's status says of its plan under `gates`: `None` where
/// changes are made directly. `plan`: the current plan, holding changes
/// of `counts`; `held`: changes pending with no current plan.
pub(crate) fn plan_facts(
    gates: Gates,
    plan: Option<&str>,
    counts: Counts,
    held: Option<String>,
) -> Option<PlanFacts> {
    if gates.is_direct() {
        return None;
    }
    let observe = gates.mode == Mode::Observe;
    let mut facts = PlanFacts {
        observe,
        ..PlanFacts::default()
    };
    if let Some(plan) = plan {
        facts.plan = Some(plan.to_owned());
        facts.summary = Some(counts.to_json());
        facts.pending = Some(format!(
            "{} planned in ReconcilePlan {plan}{}",
            counts.summary(),
            if observe { "" } else { ", awaiting approval" }
        ));
    } else if let Some(held) = held {
        facts.pending = Some(held);
    }
    Some(facts)
}

#[cfg(test)]
mod tests {

    use super::*;

    fn target() -> Target {
        Target {
            cluster: "cluster-uid".into(),
            parent: "parent-uid".into(),
        }
    }

    fn digest() -> Digest {
        Digest {
            tag: "v1",
            hex: "ab12".into(),
        }
    }

    fn gates(mode: Mode, approval: Approval) -> Gates {
        Gates { mode, approval }
    }

    fn plan(name: &str, phase: Phase, decision: Option<Decision>, mode: Mode) -> Plan {
        let created = "2026-12-03T10:00:00Z".to_owned();
        Plan {
            phase,
            decided_at: decision.as_ref().map(|_| created.clone()),
            decision,
            ..Plan::describing(name, created, mode, &digest(), &target())
        }
    }

    fn course_of(plans: &[Plan], pending: bool, gates: Gates, now: &str) -> (Vec<Plan>, Course) {
        let (digest, target) = (digest(), target());
        course(&Situation {
            plans,
            pending,
            digest: &digest,
            target: &target,
            gates,
            now: now.parse().unwrap(),
            replan_after: Duration::from_secs(600),
            first_seen: &|_| FIRST_SEEN.parse().unwrap(),
        })
    }

    /// When the host first saw a rejection with no decision time.
    const FIRST_SEEN: &str = "2026-12-03T10:04:00Z";

    const NOW: &str = "2026-12-03T10:05:00Z";

    #[test]
    fn changes_with_no_plan_are_planned_and_nothing_pending_is_made() {
        let manual = gates(Mode::Apply, Approval::Manual);
        let (_, c) = course_of(&[], true, manual, NOW);
        assert_eq!(
            c,
            Course::Fresh {
                void: None,
                then: Fresh::Create
            }
        );
        let (_, c) = course_of(&[], false, manual, NOW);
        assert_eq!(
            c,
            Course::Fresh {
                void: None,
                then: Fresh::NothingPending
            }
        );
    }

    #[test]
    fn an_undecided_plan_awaits_and_approval_auto_approves_it() {
        let open = plan("p", Phase::Pending, None, Mode::Apply);
        let (_, c) = course_of(
            std::slice::from_ref(&open),
            true,
            gates(Mode::Apply, Approval::Manual),
            NOW,
        );
        assert_eq!(c, Course::Decided(open.clone(), Decided::Undecided));
        let (_, c) = course_of(
            std::slice::from_ref(&open),
            true,
            gates(Mode::Apply, Approval::Auto),
            NOW,
        );
        assert_eq!(c, Course::Decided(open, Decided::AutoApprove));
    }

    #[test]
    fn a_reviewers_approval_executes_and_a_denial_rejects() {
        let approved = plan(
            "p",
            Phase::Pending,
            Some(Decision::Approved { by: "alice".into() }),
            Mode::Apply,
        );
        let manual = gates(Mode::Apply, Approval::Manual);
        let (_, c) = course_of(std::slice::from_ref(&approved), true, manual, NOW);
        assert_eq!(
            c,
            Course::Decided(
                approved,
                Decided::Approved {
                    by: "alice".into(),
                    automatic: false
                }
            )
        );
        let denied = plan(
            "p",
            Phase::Pending,
            Some(Decision::Denied { by: "bob".into() }),
            Mode::Apply,
        );
        let (_, c) = course_of(std::slice::from_ref(&denied), true, manual, NOW);
        let Course::Decided(_, Decided::Denied { message }) = c else {
            panic!("expected a denial, got {c:?}");
        };
        assert!(
            message.contains("denied by bob") && message.contains("600s"),
            "{message}"
        );
    }

    #[test]
    fn in_mode_observe_a_decision_is_ignored() {
        let approved = plan(
            "p",
            Phase::Pending,
            Some(Decision::Approved { by: "alice".into() }),
            Mode::Observe,
        );
        let (_, c) = course_of(
            &[approved],
            true,
            gates(Mode::Observe, Approval::Manual),
            NOW,
        );
        let Course::Decided(_, Decided::Ignored { message }) = c else {
            panic!("expected the decision ignored, got {c:?}");
        };
        assert!(
            message.contains("mode observe: nothing is executed"),
            "{message}"
        );
    }

    #[test]
    fn a_plan_for_other_changes_or_another_mode_is_superseded_and_older_ones_replaced() {
        let older = plan("old", Phase::Pending, None, Mode::Apply);
        let mut other = plan("p", Phase::Pending, None, Mode::Apply);
        other.digest = "v1:ffff".into();
        let (older_ones, c) = course_of(
            &[older.clone(), other.clone()],
            true,
            gates(Mode::Apply, Approval::Manual),
            NOW,
        );
        assert_eq!(older_ones, [older]);
        assert_eq!(
            c,
            Course::Fresh {
                void: Some((other, Void::Supersede(Divergence::EffectsChanged))),
                then: Fresh::Create
            }
        );
        let observe_plan = plan("p", Phase::Pending, None, Mode::Observe);
        let (_, c) = course_of(
            std::slice::from_ref(&observe_plan),
            true,
            gates(Mode::Apply, Approval::Manual),
            NOW,
        );
        assert_eq!(
            c,
            Course::Fresh {
                void: Some((observe_plan, Void::Supersede(Divergence::ModeChanged))),
                then: Fresh::Create
            }
        );
    }

    #[test]
    fn applying_without_a_decision_is_tampering_and_is_never_executed() {
        let forged = plan("p", Phase::Applying, None, Mode::Apply);
        let (_, c) = course_of(
            std::slice::from_ref(&forged),
            true,
            gates(Mode::Apply, Approval::Manual),
            NOW,
        );
        assert_eq!(
            c,
            Course::Fresh {
                void: Some((forged, Void::Supersede(Divergence::Tampered))),
                then: Fresh::Create
            }
        );
    }

    #[test]
    fn an_interrupted_execution_resumes_finishes_or_fails_as_what_is_left_says() {
        let applying = plan(
            "p",
            Phase::Applying,
            Some(Decision::Approved { by: "alice".into() }),
            Mode::Apply,
        );
        let manual = gates(Mode::Apply, Approval::Manual);
        let (_, c) = course_of(std::slice::from_ref(&applying), true, manual, NOW);
        assert_eq!(c, Course::Resume(applying.clone()));
        let (_, c) = course_of(std::slice::from_ref(&applying), false, manual, NOW);
        assert_eq!(c, Course::FinishEmpty(applying.clone()));
        let mut changed = applying.clone();
        changed.digest = "v1:ffff".into();
        let (_, c) = course_of(&[changed.clone()], true, manual, NOW);
        assert_eq!(
            c,
            Course::Fresh {
                void: Some((changed, Void::Fail)),
                then: Fresh::Create
            }
        );
        let mut deleting = applying;
        deleting.deleting = true;
        assert_eq!(course_of(&[deleting], true, manual, NOW).1, Course::Wait);
    }

    #[test]
    fn a_denial_holds_the_same_changes_until_it_ends() {
        let mut rejected = plan(
            "p",
            Phase::Rejected,
            Some(Decision::Denied { by: "bob".into() }),
            Mode::Apply,
        );
        rejected.decided_at = Some("2026-12-03T10:00:00Z".into());
        let manual = gates(Mode::Apply, Approval::Manual);
        let (_, c) = course_of(&[rejected.clone()], true, manual, NOW);
        let Course::Fresh {
            then:
                Fresh::HeldByRejection {
                    message,
                    requeue_after,
                },
            ..
        } = c
        else {
            panic!("expected the changes held, got {c:?}");
        };
        assert!(
            message.contains("planned again at 2026-12-03T10:10:00Z"),
            "{message}"
        );
        assert_eq!(requeue_after, Duration::from_secs(301));
        let (_, c) = course_of(&[rejected], true, manual, "2026-12-03T10:11:00Z");
        assert_eq!(
            c,
            Course::Fresh {
                void: None,
                then: Fresh::Create
            }
        );
    }

    #[test]
    fn a_rejection_with_no_decision_time_holds_from_when_the_host_first_saw_it() {
        let manual = gates(Mode::Apply, Approval::Manual);
        // A `manage` holder wrote phase Rejected: no decision at all.
        let no_decision = plan("p", Phase::Rejected, None, Mode::Apply);
        let mut unparsable = plan(
            "p",
            Phase::Rejected,
            Some(Decision::Denied { by: "bob".into() }),
            Mode::Apply,
        );
        unparsable.decided_at = Some("yesterday".into());
        for rejected in [no_decision, unparsable] {
            let (_, c) = course_of(std::slice::from_ref(&rejected), true, manual, NOW);
            let Course::Fresh {
                then:
                    Fresh::HeldByRejection {
                        message,
                        requeue_after,
                    },
                ..
            } = c
            else {
                panic!("expected the changes held, got {c:?}");
            };
            assert!(
                message.contains("reads Rejected with no decision time")
                    && message.contains("planned again at 2026-12-03T10:14:00Z"),
                "{message}"
            );
            assert_eq!(requeue_after, Duration::from_secs(541));
            let (_, c) = course_of(&[rejected], true, manual, "2026-12-03T10:14:00Z");
            assert_eq!(
                c,
                Course::Fresh {
                    void: None,
                    then: Fresh::Create
                }
            );
        }
    }

    #[test]
    fn the_status_says_nothing_of_plans_under_direct_gates() {
        let counts = Counts {
            applies: 1,
            ..Counts::default()
        };
        assert_eq!(
            plan_facts(gates(Mode::Apply, Approval::Auto), Some("p"), counts, None),
            None
        );
        let facts = plan_facts(
            gates(Mode::Apply, Approval::Manual),
            Some("p"),
            counts,
            None,
        )
        .expect("facts under review");
        assert_eq!(facts.plan.as_deref(), Some("p"));
        assert!(facts.pending.unwrap().ends_with("awaiting approval"));
        let observe = plan_facts(
            gates(Mode::Observe, Approval::Manual),
            Some("p"),
            counts,
            None,
        )
        .expect("facts in observe mode");
        assert!(observe.observe && !observe.pending.unwrap().contains("awaiting"));
    }
}
