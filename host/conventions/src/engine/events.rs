//! Which changes of a pass are worth an Event, per profile, their type by
//! polarity, and one Event per reason within a pass.

use crate::kind::{KindSpec, Profile, READY, STALLED};
use crate::message::bound;
use crate::status::{Condition, Status};
use crate::verdict::{ConditionStatus, EventType, KindEvent};

use super::plans::{AWAITING_APPROVAL, CHANGES_DENIED, PLANNED};
use super::rollup::convergence_type;
use super::{Event, Reported};

/// The host's reasons an aspect gives a child whose change a gate holds
/// (`facts.change-state`): the plan's Events report it.
const HELD: [&str; 3] = [AWAITING_APPROVAL, CHANGES_DENIED, PLANNED];

/// A transition is a change of status or reason; a message change alone is
/// silent. A condition that did not exist before transitions.
fn is_transition(before: Option<&Condition>, after: &Condition) -> bool {
    before.is_none_or(|b| b.status != after.status || b.reason != after.reason)
}

/// The Event a transition is worth, if any. Event type follows polarity: a
/// condition arriving at its bad state (True on a negative-polarity type,
/// False on a positive one) is a Warning, at its good state a Normal. Of
/// those, the ones worth attention:
/// - Ready turning True: Normal, AsExpected. Ready arriving elsewhere is
///   silent: the aspect or the error it copies is reported on its own.
/// - Stalled turning True: Warning with the stall's reason.
/// - Progressing / Reconciling: silent, it moves on every rollout.
/// - An aspect arriving at its bad state: Warning with its reason, unless
///   the reason is quiet (a child on its way) or says a gate holds its
///   child (AwaitingApproval, ChangesDenied, Planned: the plan's own
///   Events say it, PlanCreated and PlanRejected).
/// - The rest by profile. Seed 000 (Progressing) lists nothing else: an
///   aspect arriving at its good state is silent (Ready turning True says
///   it once for all aspects), and an advisory condition is silent
///   whatever its state (a refused hostname gives "one Warning for both
///   conditions", not a third for the exposure policy it keeps). Seed 004
///   (kstatus) records every transition of a condition with its event
///   type by polarity: an advisory condition arriving at its bad state is
///   a Warning (unless quiet), and an aspect or advisory condition
///   arriving at its good state is a Normal with its reason.
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
        let (good, bad) = if spec.is_negative_polarity(type_) {
            (ConditionStatus::False, ConditionStatus::True)
        } else {
            (ConditionStatus::True, ConditionStatus::False)
        };
        let advisory = spec.advisory.iter().any(|a| a == type_);
        match spec.profile {
            Profile::Progressing if advisory => None,
            Profile::Progressing | Profile::Kstatus
                if after.status == bad
                    && !spec.is_quiet(&after.reason)
                    && !HELD.contains(&after.reason.as_str()) =>
            {
                Some(EventType::Warning)
            }
            Profile::Kstatus if after.status == good => Some(EventType::Normal),
            Profile::Progressing | Profile::Kstatus => None,
        }
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
/// Stalled turning True with the reason of the stall reported `earlier` is
/// silent: an error pass between two passes of one stall wrote Stalled
/// False, and the stall never changed (a brief error during a stall does
/// not repeat the stall's Warning).
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
    earlier: &Reported,
    error: Option<Event>,
    kind_events: &[KindEvent],
    changed: bool,
) -> Vec<Event> {
    let mut events: Vec<Event> = error.into_iter().collect();
    let mut reported: Vec<(EventType, String)> = Vec::new();
    for after in &next.conditions {
        let before = previous.condition(&after.type_);
        let same_stall = after.type_ == STALLED
            && after.status == ConditionStatus::True
            && earlier.stall() == Some(after.reason.as_str());
        if same_stall {
            continue;
        }
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
