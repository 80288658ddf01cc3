//! A plan's Events about its parent, in one wording for the operator's
//! planner and the fixture runner that plays it.

use reconciler_conventions::engine::Event;
use reconciler_conventions::verdict::EventType;

use crate::plan::artifact::Counts;
use crate::plan::gates::Gates;
use crate::plan::record::Divergence;

fn event(type_: EventType, reason: &str, note: &str) -> Event {
    Event {
        type_,
        reason: reason.to_owned(),
        note: reconciler_conventions::message::bound(note),
    }
}

/// A plan created for review: what it holds, under which gates.
pub fn created(plan: &str, counts: Counts, gates: Gates) -> Event {
    let note = format!(
        "ReconcilePlan {plan} holds {} (mode {}, approval {})",
        counts.summary(),
        gates.mode.as_str(),
        gates.approval.as_str()
    );
    event(EventType::Normal, "PlanCreated", &note)
}

/// A reviewer's approval, about to be executed.
pub fn approved(plan: &str, by: &str) -> Event {
    let note = format!("ReconcilePlan {plan} was approved by {by}: executing it");
    event(EventType::Normal, "PlanApproved", &note)
}

/// A plan executed.
pub fn applied(plan: &str, counts: Counts) -> Event {
    let note = format!("ReconcilePlan {plan} applied: {}", counts.summary());
    event(EventType::Normal, "PlanApplied", &note)
}

/// A reviewer's denial (`message` names the plan, who denied it, and when
/// the same changes are planned again).
pub fn rejected(message: &str) -> Event {
    event(EventType::Normal, "PlanRejected", message)
}

/// A plan's execution failed, or cannot resume.
pub fn failed(plan: &str, why: &str) -> Event {
    let note = format!("ReconcilePlan {plan} failed: {why}");
    event(EventType::Warning, "PlanFailed", &note)
}

/// A plan voided: a Warning when someone or something changed what it
/// was bound to (the target, its phase, its artifact).
pub fn superseded(plan: &str, why: Divergence) -> Event {
    let type_ = if matches!(
        why,
        Divergence::TargetChanged | Divergence::Tampered | Divergence::ArtifactChanged
    ) {
        EventType::Warning
    } else {
        EventType::Normal
    };
    let note = format!(
        "ReconcilePlan {plan} superseded ({}): {}",
        why.reason(),
        why.message()
    );
    event(type_, "PlanSuperseded", &note)
}

/// A plan deleted while Applying (`by`: who approved it), after `applied`
/// applies and `deleted` deletions were made.
pub fn deleted(plan: &str, by: Option<&str>, applied: usize, deleted: usize) -> Event {
    let decided = by
        .map(|by| format!(" (approved by {by})"))
        .unwrap_or_default();
    let count = applied + deleted;
    let note = if count == 0 {
        format!(
            "ReconcilePlan {plan}{decided} was deleted while Applying: the host stopped \
             before its first change, nothing was made"
        )
    } else {
        format!(
            "ReconcilePlan {plan}{decided} was deleted while Applying: {count} of its changes \
             ({applied} applied, {deleted} deleted) were made before the host stopped; this plan \
             records them, and what is left is planned anew"
        )
    };
    event(EventType::Warning, "PlanDeleted", &note)
}
