//! What became of a change the guest asked for (`facts.change-state`), as
//! the aspect about that child says it: made, or what holds it, refused
//! it or took it away, so that no condition claims a change before the
//! host made it.

use crate::verdict::{RECONCILING, condition, fails, unknown};
use crate::{ChangeOutcome, Condition, ConditionStatus, Hold};

/// Ready's reason (the host's) in mode observe; an aspect's for a child
/// whose change is planned, never made.
pub const PLANNED: &str = "Planned";
/// The host's reason for changes awaiting a reviewer's decision.
pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
/// The host's reason for changes a reviewer denied.
pub const CHANGES_DENIED: &str = "ChangesDenied";
/// The host's reason for a pass that ended in error.
pub const RECONCILE_ERROR: &str = "ReconcileError";

/// The aspect `type_` about `what` (such as `ConfigMap w-config`), a child
/// whose change is in `state`: `made()` once the host made it (or took it
/// away, for a withdrawal); otherwise not True, saying what holds it with
/// the host's reason for it, or that the API server refused it (with
/// `refused_reason`, the kind's own).
///
/// ```
/// use reconciler_guest_sdk::change::aspect;
/// use reconciler_guest_sdk::verdict::ok;
/// use reconciler_guest_sdk::{ChangeOutcome, ConditionStatus, Hold};
/// let made = || ok("ChildReady", "ConfigMap w-config holds the data");
/// let held = Some(ChangeOutcome::Held(Hold::AwaitingApproval));
/// let c = aspect("ChildReady", "ConfigMap w-config", held.as_ref(), "ChildRefused", made);
/// assert_eq!((c.status, c.reason.as_str()), (ConditionStatus::False, "AwaitingApproval"));
/// assert_eq!(c.message, "ConfigMap w-config is not made: its change awaits a reviewer's approval");
/// let c = aspect("ChildReady", "ConfigMap w-config", Some(&ChangeOutcome::Made), "ChildRefused", made);
/// assert_eq!(c.status, ConditionStatus::True);
/// ```
pub fn aspect(
    type_: &str,
    what: &str,
    state: Option<&ChangeOutcome>,
    refused_reason: &str,
    made: impl FnOnce() -> Condition,
) -> Condition {
    match state {
        Some(ChangeOutcome::Made | ChangeOutcome::Withdrawn) => made(),
        None => unknown(
            type_,
            RECONCILING,
            format!("{what} is asked for; the host has not acted on it yet"),
        ),
        Some(ChangeOutcome::Held(hold)) => held(type_, what, *hold),
        Some(ChangeOutcome::Refused(r)) => fails(
            type_,
            refused_reason,
            format!(
                "{what} was refused by the API server ({} {}): {}",
                r.code, r.reason, r.message
            ),
        ),
    }
}

/// The aspect `type_` about `what`, whose change `hold` holds.
///
/// ```
/// use reconciler_guest_sdk::{ConditionStatus, Hold, change::held};
/// let c = held("ChildReady", "ConfigMap w-config", Hold::Denied);
/// assert_eq!((c.status, c.reason.as_str()), (ConditionStatus::False, "ChangesDenied"));
/// ```
pub fn held(type_: &str, what: &str, hold: Hold) -> Condition {
    let (reason, why) = match hold {
        Hold::Observe => (PLANNED, "its change is planned, never made (mode observe)"),
        Hold::AwaitingApproval => (AWAITING_APPROVAL, "its change awaits a reviewer's approval"),
        Hold::Denied => (CHANGES_DENIED, "a reviewer denied its change"),
        Hold::PassFailed => (
            RECONCILE_ERROR,
            "the pass failed before it (Ready says why)",
        ),
    };
    condition(
        type_,
        ConditionStatus::False,
        reason,
        format!("{what} is not made: {why}"),
    )
}

/// Whether the change is made (or the withdrawal taken away): what a
/// guest checks before it says something happened.
///
/// ```
/// use reconciler_guest_sdk::{ChangeOutcome, Hold, change::is_made};
/// assert!(is_made(Some(&ChangeOutcome::Withdrawn)));
/// assert!(!is_made(Some(&ChangeOutcome::Held(Hold::Observe))));
/// assert!(!is_made(None));
/// ```
pub fn is_made(state: Option<&ChangeOutcome>) -> bool {
    matches!(state, Some(ChangeOutcome::Made | ChangeOutcome::Withdrawn))
}

/// What a withdrawal of `what` (such as `Route orders-console`) still
/// waits for: `None` once the host took it away.
///
/// ```
/// use reconciler_guest_sdk::{ApplyRefusal, ChangeOutcome, change::not_withdrawn};
/// assert_eq!(not_withdrawn("Route a", Some(&ChangeOutcome::Withdrawn)), None);
/// let refused = ChangeOutcome::Refused(ApplyRefusal { code: 403, reason: "Forbidden".into(), message: "no".into() });
/// assert_eq!(
///     not_withdrawn("Route a", Some(&refused)).unwrap(),
///     "Route a is still there: the API server refused its deletion (403 Forbidden: no)"
/// );
/// ```
pub fn not_withdrawn(what: &str, state: Option<&ChangeOutcome>) -> Option<String> {
    let why = match state {
        state if is_made(state) => return None,
        Some(ChangeOutcome::Refused(r)) => format!(
            "the API server refused its deletion ({} {}: {})",
            r.code, r.reason, r.message
        ),
        _ => "its deletion is not made yet".to_owned(),
    };
    Some(format!("{what} is still there: {why}"))
}
