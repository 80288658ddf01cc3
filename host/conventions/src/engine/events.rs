//! Which changes of a pass are worth an Event, their type by polarity, and
//! one Event per reason within a pass.

use crate::kind::{KindSpec, READY, STALLED};
use crate::message::bound;
use crate::status::{Condition, Status};
use crate::verdict::{ConditionStatus, EventType, KindEvent};

use super::Event;
use super::rollup::convergence_type;

/// A transition is a change of status or reason; a message change alone is
/// silent. A condition that did not exist before transitions.
fn is_transition(before: Option<&Condition>, after: &Condition) -> bool {
    before.is_none_or(|b| b.status != after.status || b.reason != after.reason)
}

/// The Event a transition is worth, if any. Event type follows polarity: a
/// condition arriving at its bad state (True on a negative-polarity type,
/// False on a positive one) is a Warning, at its good state a Normal. Of
/// those, the ones worth attention (seed 000):
/// - Ready turning True: Normal, AsExpected. Ready arriving elsewhere is
///   silent: the aspect or the error it copies is reported on its own.
/// - Stalled turning True: Warning with the stall's reason.
/// - An aspect or advisory condition arriving at its bad state: Warning
///   with its reason, unless the reason is quiet (a child on its way).
///   Arriving at the good state is silent: Ready turning True says it once
///   for all aspects.
/// - Progressing / Reconciling: silent, it moves on every rollout.
fn transition_event(
    spec: &KindSpec,
    before: Option<&Condition>,
    after: &Condition,
) -> Option<Event> {
    if !is_transition(before, after) {
        return None;
    }
    let type_ = after.type_.as_str();
    let event_type = if type_ == READY {
        (after.status == ConditionStatus::True).then_some(EventType::Normal)
    } else if type_ == STALLED {
        (after.status == ConditionStatus::True).then_some(EventType::Warning)
    } else if type_ == convergence_type(spec) {
        None
    } else {
        let bad = if spec.is_negative_polarity(type_) {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        (after.status == bad && !spec.is_quiet(&after.reason)).then_some(EventType::Warning)
    }?;
    Some(Event {
        type_: event_type,
        reason: after.reason.clone(),
        note: bound(&after.message),
    })
}

/// The Events of one pass, in order: the error class (if newly reported),
/// the condition transitions in condition order, then the kind's own
/// Events when the pass changed the status.
///
/// Deduplication within a pass: condition transitions give one Event per
/// (type, reason), the first condition's message as note (so
/// ConfigurationValid=False, ExposureReady=False and Stalled=True, all
/// HostnameNotAllowed, give one Warning). A kind Event is dropped when the
/// same Event (type, reason and note) is already in the pass, or when a
/// condition transition already reported its (type, reason).
pub(super) fn collect(
    spec: &KindSpec,
    previous: &Status,
    next: &Status,
    error: Option<Event>,
    kind_events: &[KindEvent],
    changed: bool,
) -> Vec<Event> {
    let mut events: Vec<Event> = error.into_iter().collect();
    let mut reported: Vec<(EventType, String)> = Vec::new();
    for after in &next.conditions {
        let before = previous.condition(&after.type_);
        if let Some(event) = transition_event(spec, before, after) {
            let key = (event.type_, event.reason.clone());
            if !reported.contains(&key) {
                reported.push(key);
                events.push(event);
            }
        }
    }
    if changed {
        for k in kind_events {
            let event = Event {
                type_: k.type_,
                reason: k.reason.clone(),
                note: bound(&k.message),
            };
            let key = (event.type_, event.reason.clone());
            if !reported.contains(&key) && !events.contains(&event) {
                events.push(event);
            }
        }
    }
    events
}
