//! What a parent's status says of its plan (seed 003): Drifted while
//! changes are pending, Ready True with reason Planned in observe mode,
//! Ready False while mode apply holds the changes (AwaitingApproval until a
//! reviewer decides, ChangesDenied once one denied them: `kubectl wait
//! --for=condition=Ready` waits for the approved change to be made),
//! ApprovalIgnored when a decision lands on an observe-mode plan, and the
//! fields `currentPlanRef` and `changeSummary`. Laid over the engine's
//! decision for a parent whose changes go through plans (mode observe, or
//! approval manual); a parent whose changes are made directly carries none
//! of it, so switching back removes it.

use serde_json::{Value, json};

use crate::kind::READY;
use crate::status::Status;
use crate::verdict::{ConditionStatus, EventType};

use super::condition::{ConditionWriter, Fact};
use super::{Output, RECONCILE_ERROR};

/// True while changes are planned and not made.
pub const DRIFTED: &str = "Drifted";
/// True while a decision was recorded on an observe-mode plan.
pub const APPROVAL_IGNORED: &str = "ApprovalIgnored";
/// Ready=True in observe mode: the changes are planned, never made.
pub const PLANNED: &str = "Planned";
/// Ready=False in mode apply: the changes await a reviewer's decision.
pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
/// Ready=False in mode apply: a reviewer denied the changes.
pub const CHANGES_DENIED: &str = "ChangesDenied";
/// Drifted=True: changes are planned and not made.
pub const CHANGES_PENDING: &str = "ChangesPending";
/// Drifted=False: nothing to change.
pub const IN_SYNC: &str = "InSync";
/// ApprovalIgnored=True: the plan was made in mode observe.
pub const OBSERVE_MODE: &str = "ObserveMode";
/// `.status.currentPlanRef`: `{name}` of the plan awaiting a decision or
/// being executed.
pub const CURRENT_PLAN_REF: &str = "currentPlanRef";
/// `.status.changeSummary`: the counts of the pending changes.
pub const CHANGE_SUMMARY: &str = "changeSummary";

/// Where a parent's changes stand, as its pass found them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanFacts {
    /// The parent is in mode observe.
    pub observe: bool,
    /// Changes are pending: Drifted's message. `None`: nothing to change.
    pub pending: Option<String>,
    /// The current plan's name.
    pub plan: Option<String>,
    /// The pending changes' counts (`{applies, deletions, generated}`).
    pub summary: Option<Value>,
    /// A decision on an observe-mode plan: ApprovalIgnored's message.
    pub ignored: Option<String>,
}

/// `output` with what `facts` say of the plan laid over it.
pub fn with_plan(
    previous: &Status,
    generation: i64,
    now: jiff::Timestamp,
    mut output: Output,
    facts: &PlanFacts,
) -> Output {
    let writer = ConditionWriter::new(previous, generation, now);
    let status = &mut output.status;
    status.fields.remove(CURRENT_PLAN_REF);
    status.fields.remove(CHANGE_SUMMARY);
    if let Some(name) = &facts.plan {
        status
            .fields
            .insert(CURRENT_PLAN_REF.to_owned(), json!({ "name": name }));
    }
    if let Some(summary) = &facts.summary {
        status
            .fields
            .insert(CHANGE_SUMMARY.to_owned(), summary.clone());
    }
    status
        .conditions
        .retain(|c| c.type_ != DRIFTED && c.type_ != APPROVAL_IGNORED);
    let drifted = match &facts.pending {
        Some(message) => Fact::new(ConditionStatus::True, CHANGES_PENDING, message.clone()),
        None => Fact::new(ConditionStatus::False, IN_SYNC, "No change is pending"),
    };
    status.conditions.push(writer.write(DRIFTED, drifted));
    if let Some(message) = &facts.ignored {
        status.conditions.push(writer.write(
            APPROVAL_IGNORED,
            Fact::new(ConditionStatus::True, OBSERVE_MODE, message.clone()),
        ));
    }
    if let Some(message) = &facts.pending
        && !output.stalled
        && let Some(ready) = status.conditions.iter_mut().find(|c| c.type_ == READY)
        && ready.reason != RECONCILE_ERROR
    {
        if facts.observe {
            *ready = writer.write(
                READY,
                Fact::new(
                    ConditionStatus::True,
                    PLANNED,
                    format!("Mode observe: {message}"),
                ),
            );
        } else if ready.status == ConditionStatus::True
            || [AWAITING_APPROVAL, CHANGES_DENIED].contains(&ready.reason.as_str())
        {
            // Mode apply: what the aspects say is true of the cluster as it
            // is, not of what the parent asks for, which the host holds. An
            // aspect that says its child is held so (`facts.change-state`)
            // is said by Ready as the plan says it (naming the plan).
            let reason = if facts.plan.is_some() {
                AWAITING_APPROVAL
            } else {
                CHANGES_DENIED
            };
            // Ready does not turn True: not its Event either (Ready
            // arriving at False is silent; PlanCreated says why).
            let turned_true = (
                EventType::Normal,
                ready.reason.clone(),
                crate::message::bound(&ready.message),
            );
            output
                .events
                .retain(|e| (e.type_, e.reason.clone(), e.note.clone()) != turned_true);
            *ready = writer.write(
                READY,
                Fact::new(ConditionStatus::False, reason, message.clone()),
            );
        }
    }
    output.changed = output.status != *previous;
    output
}

/// `output` with nothing of a plan: a parent whose changes are made
/// directly (the status fields the engine carried over go).
pub fn without_plan(previous: &Status, mut output: Output) -> Output {
    output.status.fields.remove(CURRENT_PLAN_REF);
    output.status.fields.remove(CHANGE_SUMMARY);
    output
        .status
        .conditions
        .retain(|c| c.type_ != DRIFTED && c.type_ != APPROVAL_IGNORED);
    output.changed = output.status != *previous;
    output
}

/// `output` keeping the plan conditions `previous` had: a pass that ended
/// before its plan was looked at says nothing new of it.
pub fn keeping_plan(previous: &Status, mut output: Output) -> Output {
    for type_ in [DRIFTED, APPROVAL_IGNORED] {
        if output.status.condition(type_).is_none()
            && let Some(before) = previous.condition(type_)
        {
            output.status.conditions.push(before.clone());
        }
    }
    output.changed = output.status != *previous;
    output
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{self, Input, Outcome, Reported};
    use crate::kind::KindSpec;
    use crate::verdict::{Decision, Verdict};

    fn spec() -> KindSpec {
        KindSpec {
            group: "example.dev".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            aspects: vec!["WorkloadReady".into()],
            reasons: vec![crate::kind::ReasonEntry {
                name: "DeploymentNotFound".into(),
                owner: "WorkloadReady".into(),
                meaning: "m".into(),
            }],
            ..KindSpec::default()
        }
    }

    fn decided(previous: &Status, workload: ConditionStatus) -> Output {
        engine::decide(Input {
            spec: &spec(),
            generation: 2,
            paused: false,
            previous,
            now: jiff::Timestamp::from_second(1_800_000_000).unwrap(),
            outcome: Outcome::Verdict(Verdict {
                aspects: vec![Decision {
                    type_: "WorkloadReady".into(),
                    status: workload,
                    reason: if workload == ConditionStatus::True {
                        "AsExpected".into()
                    } else {
                        "DeploymentNotFound".into()
                    },
                    message: "m".into(),
                }],
                ..Verdict::default()
            }),
            reported: &Reported::default(),
        })
    }

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000).unwrap()
    }

    #[test]
    fn observe_mode_with_changes_pending_is_ready_planned_and_drifted() {
        let previous = Status::default();
        let facts = PlanFacts {
            observe: true,
            pending: Some("2 applies planned in ReconcilePlan w-1".into()),
            plan: Some("w-1".into()),
            summary: Some(json!({"applies": 2, "deletions": 0, "generated": 0})),
            ignored: None,
        };
        let out = with_plan(
            &previous,
            2,
            now(),
            decided(&previous, ConditionStatus::False),
            &facts,
        );
        let ready = out.status.condition(READY).unwrap();
        assert_eq!(
            (ready.status, ready.reason.as_str()),
            (ConditionStatus::True, PLANNED)
        );
        assert_eq!(
            ready.message,
            "Mode observe: 2 applies planned in ReconcilePlan w-1"
        );
        let drifted = out.status.condition(DRIFTED).unwrap();
        assert_eq!(
            (drifted.status, drifted.reason.as_str()),
            (ConditionStatus::True, CHANGES_PENDING)
        );
        assert_eq!(out.status.fields[CURRENT_PLAN_REF], json!({"name": "w-1"}));
        assert!(out.changed);
    }

    #[test]
    fn mode_apply_holding_changes_is_not_ready_until_they_are_made() {
        let previous = Status::default();
        let awaiting = PlanFacts {
            observe: false,
            pending: Some("1 apply planned in ReconcilePlan w-1, awaiting approval".into()),
            plan: Some("w-1".into()),
            summary: Some(json!({"applies": 1, "deletions": 0, "generated": 0})),
            ignored: None,
        };
        // Every aspect True of the cluster as it is: Ready is not True while
        // the change the parent asks for is held.
        let out = with_plan(
            &previous,
            2,
            now(),
            decided(&previous, ConditionStatus::True),
            &awaiting,
        );
        let ready = out.status.condition(READY).unwrap();
        assert_eq!(
            (ready.status, ready.reason.as_str(), ready.message.as_str()),
            (
                ConditionStatus::False,
                AWAITING_APPROVAL,
                "1 apply planned in ReconcilePlan w-1, awaiting approval"
            )
        );
        assert!(
            out.events.is_empty(),
            "Ready arriving at False is silent: {:?}",
            out.events
        );
        // Denied: no current plan, the changes held until planned again.
        let denied = PlanFacts {
            pending: Some("ReconcilePlan w-1 was denied by alice".into()),
            plan: None,
            ..awaiting.clone()
        };
        let out = with_plan(
            &previous,
            2,
            now(),
            decided(&previous, ConditionStatus::True),
            &denied,
        );
        let ready = out.status.condition(READY).unwrap();
        assert_eq!(
            (ready.status, ready.reason.as_str()),
            (ConditionStatus::False, CHANGES_DENIED)
        );
        // An aspect that is not True keeps deciding Ready.
        let out = with_plan(
            &previous,
            2,
            now(),
            decided(&previous, ConditionStatus::False),
            &awaiting,
        );
        assert_eq!(
            out.status.condition(READY).unwrap().reason,
            "DeploymentNotFound"
        );
        // An aspect that says its child awaits approval (as the guest
        // learns it from `facts.change-state`): Ready says it naming the
        // plan, and neither raises a Warning (PlanCreated says it).
        let held = engine::decide(Input {
            spec: &spec(),
            generation: 2,
            paused: false,
            previous: &previous,
            now: now(),
            outcome: Outcome::Verdict(Verdict {
                aspects: vec![Decision {
                    type_: "WorkloadReady".into(),
                    status: ConditionStatus::False,
                    reason: AWAITING_APPROVAL.into(),
                    message: "Deployment w is not made: its change awaits a reviewer's approval"
                        .into(),
                }],
                ..Verdict::default()
            }),
            reported: &Reported::default(),
        });
        let out = with_plan(&previous, 2, now(), held, &awaiting);
        let ready = out.status.condition(READY).unwrap();
        assert_eq!(
            (ready.reason.as_str(), ready.message.as_str()),
            (
                AWAITING_APPROVAL,
                "1 apply planned in ReconcilePlan w-1, awaiting approval"
            )
        );
        assert_eq!(
            out.status.condition("WorkloadReady").unwrap().reason,
            AWAITING_APPROVAL
        );
        assert!(
            out.events.iter().all(|e| e.type_ != EventType::Warning),
            "{:?}",
            out.events
        );
        // Nothing held: Ready as the aspects say.
        let out = with_plan(
            &previous,
            2,
            now(),
            decided(&previous, ConditionStatus::True),
            &PlanFacts::default(),
        );
        assert_eq!(
            out.status.condition(READY).unwrap().status,
            ConditionStatus::True
        );
    }

    #[test]
    fn nothing_pending_is_drifted_false_and_clears_the_plan_fields() {
        let mut previous = Status::default();
        previous
            .fields
            .insert(CURRENT_PLAN_REF.into(), json!({"name": "w-1"}));
        let out = with_plan(
            &previous,
            2,
            now(),
            decided(&previous, ConditionStatus::True),
            &PlanFacts::default(),
        );
        assert!(!out.status.fields.contains_key(CURRENT_PLAN_REF));
        let drifted = out.status.condition(DRIFTED).unwrap();
        assert_eq!(
            (drifted.status, drifted.reason.as_str()),
            (ConditionStatus::False, IN_SYNC)
        );
        let again = with_plan(
            &out.status,
            2,
            now(),
            decided(&out.status, ConditionStatus::True),
            &PlanFacts::default(),
        );
        assert!(!again.changed, "the same facts again: nothing to write");
    }

    #[test]
    fn a_decision_on_an_observe_plan_is_approval_ignored() {
        let previous = Status::default();
        let facts = PlanFacts {
            observe: true,
            pending: Some("p".into()),
            plan: Some("w-1".into()),
            summary: None,
            ignored: Some("ReconcilePlan w-1 was approved by alice".into()),
        };
        let out = with_plan(
            &previous,
            2,
            now(),
            decided(&previous, ConditionStatus::False),
            &facts,
        );
        let ignored = out.status.condition(APPROVAL_IGNORED).unwrap();
        assert_eq!(ignored.reason, OBSERVE_MODE);
        assert_eq!(ignored.status, ConditionStatus::True);
    }

    #[test]
    fn manual_approval_pending_keeps_ready_as_the_guest_derives_it() {
        let previous = Status::default();
        let facts = PlanFacts {
            observe: false,
            pending: Some("awaiting approval".into()),
            ..PlanFacts::default()
        };
        let out = with_plan(
            &previous,
            2,
            now(),
            decided(&previous, ConditionStatus::False),
            &facts,
        );
        assert_eq!(
            out.status.condition(READY).unwrap().status,
            ConditionStatus::False
        );
        assert_eq!(
            out.status.condition(DRIFTED).unwrap().status,
            ConditionStatus::True
        );
    }
}
