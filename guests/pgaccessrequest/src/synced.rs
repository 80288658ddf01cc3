//! RoleBindingSynced: the request's RoleBindings held to its phase, each one it must not keep deleted by UID with its cause (an Event each), and the passes asked for at `spec.expiresAt` and at the end of an orphan's grace.

use reconciler_guest_sdk::verdict::{RECONCILING, condition, holds, unknown};
use reconciler_guest_sdk::{
    Change, Condition, ConditionStatus, EventType, KindEvent, Timestamp, withdraw,
};
use serde_json::{Value, json};

use crate::binding::Binding;
use crate::decision::{Phase, Standing, Why, expiry_text};
use crate::registry::{
    ACCESS_DENIED, ACCESS_EXPIRED, ACCESS_GRANTED, ACCESS_REVOKED, AWAITING_DECISION, KIND,
    REQUEST_LABEL, ROLE_BINDING_DELETED, ROLE_BINDING_DRIFTED, ROLE_BINDING_MISSING,
    ROLE_BINDING_ORPHANED, ROLE_BINDING_SYNCED, SELF_APPROVAL_REFUSED, role_binding_kind,
};
use crate::spec::AccessSpec;
use crate::time::{plus, reached, rfc3339, seconds_until};

/// What the pass knows of the request's RoleBindings.
pub struct Bindings {
    /// The RoleBindings the request controls (`facts.children`).
    pub owned: Vec<Binding>,
    /// RoleBindings carrying the request's label that another object
    /// controls, or none: named, never touched.
    pub foreign: Vec<String>,
}

/// The pass's inputs besides the RoleBindings.
pub struct Request<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub spec: &'a AccessSpec,
    pub standing: &'a Standing,
    /// `status.phase` and the RoleBindingSynced condition as written.
    pub previous_phase: Option<&'a str>,
    pub previous: Option<Condition>,
    /// Whether `spec.clusterRole` exists (None: it could not be read).
    pub cluster_role_exists: Option<bool>,
    pub grace_seconds: u32,
    pub now: &'a Timestamp,
}

/// What RoleBindingSynced decided.
pub struct Synced {
    pub condition: Condition,
    /// Each RoleBinding taken away: a withdrawal (contract 0.5.0), made
    /// whatever holds the host's other changes, with its
    /// RoleBindingDeleted Event, raised by the host once it is deleted.
    pub withdrawals: Vec<Change>,
    pub events: Vec<KindEvent>,
    pub requeue_after: Option<u32>,
    /// `.status` fields: `phase`, `roleBindings`, and on a pass that
    /// deletes, `deletedRoleBindings`.
    pub fields: Vec<(&'static str, Value)>,
}

/// Why a RoleBinding is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Expired,
    Revoked,
    SelfApproval,
    Drifted,
    Orphaned,
}

impl Cause {
    /// The reason recorded in `status.deletedRoleBindings`.
    fn reason(self) -> &'static str {
        match self {
            Cause::Expired => ACCESS_EXPIRED,
            Cause::Revoked => ACCESS_REVOKED,
            Cause::SelfApproval => SELF_APPROVAL_REFUSED,
            Cause::Drifted => ROLE_BINDING_DRIFTED,
            Cause::Orphaned => ROLE_BINDING_ORPHANED,
        }
    }
}

/// The RoleBindingSynced verdict of one pass.
pub fn evaluate(request: &Request, bindings: &Bindings) -> Synced {
    let mut s = Synced {
        condition: holds(ROLE_BINDING_SYNCED, AWAITING_DECISION, ""),
        withdrawals: Vec::new(),
        events: Vec::new(),
        requeue_after: None,
        fields: vec![("phase", json!(request.standing.phase.as_str()))],
    };
    let mut deleted: Vec<Value> = Vec::new();
    // The RoleBindings the pass withdrew that the host has not deleted:
    // nothing says they are gone while they are there.
    let mut still_there: Vec<String> = Vec::new();
    let mut delete = |s: &mut Synced, b: &Binding, cause: Cause, why: String| {
        still_there.extend(b.still_there());
        s.withdrawals.push(withdraw(
            role_binding_kind(),
            b.name.clone(),
            b.uid.clone(),
            Some(KindEvent {
                type_: EventType::Normal,
                reason: ROLE_BINDING_DELETED.to_owned(),
                message: format!(
                    "deleted RoleBinding {} (uid {}), which bound {}: {why}",
                    b.name, b.uid, b.binds
                ),
            }),
        ));
        deleted.push(json!({"name": b.name, "uid": b.uid, "cause": cause.reason()}));
    };
    let spec = request.spec;
    let expiry = expiry_text(spec);
    // The terminal phase the request is in, whose Event the pass raises
    // when it enters it.
    let mut entering = None;
    let (reason, status, message) = match (&request.standing.phase, &request.standing.why) {
        (Phase::Pending, why) => {
            let mut in_flight = Vec::new();
            let mut orphaned = Vec::new();
            for b in &bindings.owned {
                let grace_end = b.created.as_ref().map(|c| plus(c, request.grace_seconds));
                match grace_end {
                    Some(end) if !reached(request.now, &end) => {
                        s.requeue_after =
                            earliest(s.requeue_after, seconds_until(request.now, &end));
                        in_flight.push(format!(
                            "RoleBinding {} (created {}) is an approval in flight, kept until {} for the approval to be recorded",
                            b.name,
                            b.created.as_ref().map(rfc3339).unwrap_or_default(),
                            rfc3339(&end)
                        ));
                    }
                    _ => {
                        let created = b.created.as_ref().map_or_else(
                            || "at an unknown time".to_owned(),
                            |c| format!("at {}", rfc3339(c)),
                        );
                        let why = format!(
                            "it was created {created} and no approval was recorded within the {} s grace of an approval in flight",
                            request.grace_seconds
                        );
                        orphaned.push(format!("RoleBinding {}: {why}", b.name));
                        delete(&mut s, b, Cause::Orphaned, why);
                    }
                }
            }
            let undecided_note = match why {
                Why::Undecided(Some(note)) => format!("; {note}"),
                _ => String::new(),
            };
            if !in_flight.is_empty() {
                let mut parts = in_flight;
                parts.extend(orphaned.iter().map(|o| format!("deleted {o}")));
                (
                    RECONCILING,
                    ConditionStatus::Unknown,
                    format!(
                        "Pending, but the request has a RoleBinding: {}{undecided_note}",
                        parts.join("; ")
                    ),
                )
            } else if !orphaned.is_empty() {
                (
                    ROLE_BINDING_ORPHANED,
                    ConditionStatus::True,
                    format!(
                        "Pending: nothing is bound; deleted {}{undecided_note}",
                        orphaned.join("; deleted ")
                    ),
                )
            } else if let Some(kept) = sticky(request, ROLE_BINDING_ORPHANED) {
                (kept.reason, kept.status, kept.message)
            } else {
                (
                    AWAITING_DECISION,
                    ConditionStatus::True,
                    format!(
                        "Pending: nothing is bound; an approver's decision on {} for {} in {} is awaited until {expiry}{}{undecided_note}",
                        binding_of(spec),
                        spec.subject.describe(),
                        request.namespace,
                        cluster_role_note(request)
                    ),
                )
            }
        }
        (Phase::Approved, Why::Approved(by)) => {
            let mut drifted = Vec::new();
            let mut exact = Vec::new();
            for b in &bindings.owned {
                if b.exact {
                    exact.push(b.name.clone());
                } else {
                    let why = format!(
                        "the request asks for {} and a RoleBinding of the request binds exactly that or nothing (fail closed)",
                        expected(spec)
                    );
                    drifted.push(format!(
                        "RoleBinding {} bound {} instead of {}",
                        b.name,
                        b.binds,
                        expected(spec)
                    ));
                    delete(&mut s, b, Cause::Drifted, why);
                }
            }
            if !drifted.is_empty() {
                (
                    ROLE_BINDING_DRIFTED,
                    ConditionStatus::False,
                    format!(
                        "{}: deleted (fail closed); it is not recreated",
                        drifted.join("; ")
                    ),
                )
            } else if !exact.is_empty() {
                s.fields.push(("roleBindings", json!(exact)));
                (
                    ACCESS_GRANTED,
                    ConditionStatus::True,
                    format!(
                        "Approved by {}: RoleBinding {} binds {} until {expiry}{}",
                        by.name(),
                        exact.join(", "),
                        expected(spec),
                        cluster_role_note(request)
                    ),
                )
            } else if let Some(kept) = sticky(request, ROLE_BINDING_DRIFTED) {
                (kept.reason, kept.status, kept.message)
            } else {
                (
                    ROLE_BINDING_MISSING,
                    ConditionStatus::False,
                    format!(
                        "Approved by {}, but the request has no RoleBinding binding {}: the operator never recreates one; revoke and request again",
                        by.name(),
                        expected(spec)
                    ),
                )
            }
        }
        (phase, why) => {
            let (reason, message, cause) = terminal(request, *phase, why, &expiry);
            let cause_text = deletion_cause(why, &expiry);
            for b in &bindings.owned {
                delete(&mut s, b, cause, cause_text.clone());
            }
            entering = Some(why);
            (reason, ConditionStatus::True, message)
        }
    };
    if !request.standing.phase.is_terminal()
        && let Some(at) = &spec.expires_at
    {
        s.requeue_after = earliest(s.requeue_after, seconds_until(request.now, at));
    }
    let (status, reason, message) = if still_there.is_empty() {
        (status, reason, message)
    } else {
        (
            ConditionStatus::Unknown,
            RECONCILING,
            format!(
                "{reason} once the request's RoleBindings are deleted: {}",
                still_there.join("; ")
            ),
        )
    };
    if let Some(why) = entering {
        entered(request, why, &message, &mut s.events);
    }
    let foreign = foreign_note(request, bindings);
    s.condition = condition(
        ROLE_BINDING_SYNCED,
        status,
        reason,
        format!("{message}{foreign}"),
    );
    if !s.fields.iter().any(|(k, _)| *k == "roleBindings") {
        s.fields.push(("roleBindings", Value::Null));
    }
    if !deleted.is_empty() {
        s.fields
            .push(("deletedRoleBindings", Value::Array(deleted)));
    }
    s
}

/// The terminal phases: their reason, their message (the same on the pass
/// that deletes and after it, so a pass that sees a deleted RoleBinding
/// once more writes nothing and reports nothing twice) and the cause of
/// deleting what is left.
fn terminal(
    request: &Request,
    phase: Phase,
    why: &Why,
    expiry: &str,
) -> (&'static str, String, Cause) {
    let what = format!(
        "{} for {}",
        binding_of(request.spec),
        request.spec.subject.describe()
    );
    match (phase, why) {
        (_, Why::Denied(by)) => (
            ACCESS_DENIED,
            format!("Denied by {}: nothing is bound ({what})", by.name()),
            Cause::Orphaned,
        ),
        (_, Why::Revoked(by)) => (
            ACCESS_REVOKED,
            format!("Revoked by {}: nothing is bound ({what})", by.name()),
            Cause::Revoked,
        ),
        (_, Why::SelfApproved(by)) => (
            SELF_APPROVAL_REFUSED,
            format!(
                "the approval was recorded by {}, the request's own subject ({}): the operator revoked it, nothing is bound; an approval needs another approver (four eyes)",
                by.name(),
                request.spec.subject.describe()
            ),
            Cause::SelfApproval,
        ),
        (_, Why::Expired { at_creation: true }) => (
            ACCESS_EXPIRED,
            format!(
                "Expired on arrival: spec.expiresAt {expiry} was not after the request's creation, so nothing can be granted; nothing is bound ({what}){}",
                request
                    .spec
                    .problems
                    .iter()
                    .map(|p| format!("; {p}"))
                    .collect::<String>()
            ),
            Cause::Expired,
        ),
        _ => (
            ACCESS_EXPIRED,
            format!("Expired at {expiry}: nothing is bound ({what})"),
            Cause::Expired,
        ),
    }
}

/// Why the RoleBindings of a terminal request are deleted, for the Event.
fn deletion_cause(why: &Why, expiry: &str) -> String {
    match why {
        Why::Denied(by) => format!(
            "the request was denied by {}, so no approval can be recorded (an orphan)",
            by.name()
        ),
        Why::Revoked(by) => format!("the access was revoked by {}", by.name()),
        Why::SelfApproved(by) => format!(
            "the approval was recorded by {}, the request's own subject (four eyes)",
            by.name()
        ),
        _ => format!("the access expired at {expiry}"),
    }
}

/// The Events of entering a terminal phase: AccessExpired (Normal) and
/// SelfApprovalRefused (Warning), once each, when the status did not say
/// so already.
fn entered(request: &Request, why: &Why, message: &str, events: &mut Vec<KindEvent>) {
    match why {
        Why::Expired { .. } if request.previous_phase != Some(Phase::Expired.as_str()) => {
            events.push(KindEvent {
                type_: EventType::Normal,
                reason: ACCESS_EXPIRED.to_owned(),
                message: message.to_owned(),
            });
        }
        Why::SelfApproved(_)
            if request
                .previous
                .as_ref()
                .is_none_or(|c| c.reason != SELF_APPROVAL_REFUSED) =>
        {
            events.push(KindEvent {
                type_: EventType::Warning,
                reason: SELF_APPROVAL_REFUSED.to_owned(),
                message: message.to_owned(),
            });
        }
        _ => {}
    }
}

/// The condition as written, when it says `reason`: the cause of a
/// deletion stays the reason until something else holds (a deleted
/// RoleBinding is not missing, it was drifted or orphaned).
fn sticky(request: &Request, reason: &'static str) -> Option<Sticky> {
    let previous = request.previous.as_ref()?;
    (previous.reason == reason).then(|| Sticky {
        reason,
        status: previous.status,
        message: strip_foreign(&previous.message).to_owned(),
    })
}

struct Sticky {
    reason: &'static str,
    status: ConditionStatus,
    message: String,
}

/// `ClusterRole pg-reader in team-a`.
fn binding_of(spec: &AccessSpec) -> String {
    format!("ClusterRole {}", spec.cluster_role)
}

/// `User dave to ClusterRole pg-reader`.
fn expected(spec: &AccessSpec) -> String {
    format!(
        "{} to ClusterRole {}",
        spec.subject.describe(),
        spec.cluster_role
    )
}

/// What the approver should know of the ClusterRole.
fn cluster_role_note(request: &Request) -> String {
    let role = &request.spec.cluster_role;
    match request.cluster_role_exists {
        Some(false) => format!(
            "; ClusterRole {role} (spec.clusterRole) does not exist: binding it grants nothing until it does"
        ),
        None => format!("; ClusterRole {role} (spec.clusterRole) could not be read"),
        Some(true) => String::new(),
    }
}

/// Where the note on foreign RoleBindings starts in a message.
const FOREIGN_NOTE: &str = "; left alone, not the request's: ";

/// The RoleBindings that carry the request's label but are not its own.
fn foreign_note(request: &Request, bindings: &Bindings) -> String {
    if bindings.foreign.is_empty() {
        return String::new();
    }
    format!(
        "{FOREIGN_NOTE}{} (labelled {REQUEST_LABEL}={}, but not controlled by this {KIND}: the operator never deletes what the request does not own)",
        bindings.foreign.join(", "),
        request.name
    )
}

fn strip_foreign(message: &str) -> &str {
    message
        .find(FOREIGN_NOTE)
        .map_or(message, |at| &message[..at])
}

fn earliest(current: Option<u32>, seconds: u32) -> Option<u32> {
    Some(current.map_or(seconds, |c| c.min(seconds)))
}

/// RoleBindingSynced when the request's RoleBindings could not be read:
/// Unknown, tried again; nothing is deleted on a guess.
pub fn unread(message: String) -> Condition {
    unknown(ROLE_BINDING_SYNCED, RECONCILING, message)
}
