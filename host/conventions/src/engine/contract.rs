//! The contract a verdict keeps with its kind's spec: registered reasons,
//! declared condition types, every deciding aspect given once, declared
//! stalls.

use std::collections::BTreeSet;

use crate::kind::{HOST_STALLS, KindSpec};
use crate::verdict::{ConditionStatus, Verdict};

use super::fields::RESERVED_STATUS_FIELDS;

/// How a verdict broke the contract of its kind. The engine treats a
/// broken verdict as an error of class `GuestFailed` whose text is this
/// error's display; the runtime may report it too (a log line, a metric).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    #[error("verdict uses reason {reason:?} on {condition}, which is not in the {kind} registry")]
    UnregisteredReason {
        kind: String,
        condition: String,
        reason: String,
    },
    #[error("verdict gives {condition} as an aspect, which is not an aspect of {kind}")]
    NotAnAspect { kind: String, condition: String },
    #[error(
        "verdict gives {condition} as an advisory condition, which is not an advisory condition of {kind}"
    )]
    NotAdvisory { kind: String, condition: String },
    #[error(
        "verdict leaves out aspect {aspect} of {kind}: an unpaused pass decides every aspect up to the first that is not True"
    )]
    MissingAspect { kind: String, aspect: String },
    #[error("verdict gives aspect {aspect} of {kind} twice")]
    DuplicateAspect { kind: String, aspect: String },
    #[error("verdict gives advisory condition {condition} of {kind} twice")]
    DuplicateAdvisory { kind: String, condition: String },
    #[error("verdict stalls with reason {reason:?}, which is not in the {kind} registry")]
    UnregisteredStallReason { kind: String, reason: String },
    #[error("verdict stalls with reason {reason:?}, which {kind} does not declare as a stall")]
    UndeclaredStall { kind: String, reason: String },
    #[error("verdict emits an Event with reason {reason:?}, which is not in the {kind} registry")]
    UnregisteredEventReason { kind: String, reason: String },
    #[error("verdict sets status field {field:?}, which the host owns")]
    ReservedStatusField { field: String },
}

/// Checks a verdict against its kind's spec. Outside a pause every aspect
/// up to the first that is not True must be given, and the aspects after
/// that one may be left out: not evaluated (after a stall, or while an
/// earlier aspect is False or Unknown), they cannot decide Ready, and each
/// keeps its previous condition, older observedGeneration included, or is
/// Unknown (Initializing) when it has none. While paused the verdict gives
/// only the aspects the kind still checks. None is given twice. Returns the first violation, in the order: aspects,
/// advisory conditions, stall, Events, status fields.
pub fn check_verdict(
    spec: &KindSpec,
    verdict: &Verdict,
    paused: bool,
) -> Result<(), ContractError> {
    let kind = || spec.kind.clone();
    let registered = |condition: &str, reason: &str| {
        if spec.is_registered(reason) {
            Ok(())
        } else {
            Err(ContractError::UnregisteredReason {
                kind: kind(),
                condition: condition.to_owned(),
                reason: reason.to_owned(),
            })
        }
    };

    let mut aspects = BTreeSet::new();
    for d in &verdict.aspects {
        if !spec.aspects.contains(&d.type_) {
            return Err(ContractError::NotAnAspect {
                kind: kind(),
                condition: d.type_.clone(),
            });
        }
        if !aspects.insert(d.type_.as_str()) {
            return Err(ContractError::DuplicateAspect {
                kind: kind(),
                aspect: d.type_.clone(),
            });
        }
        registered(&d.type_, &d.reason)?;
    }
    if !paused && let Some(missing) = first_missing_decisive(spec, verdict) {
        return Err(ContractError::MissingAspect {
            kind: kind(),
            aspect: missing.to_owned(),
        });
    }

    let mut advisory = BTreeSet::new();
    for d in &verdict.advisory {
        if !spec.advisory.contains(&d.type_) {
            return Err(ContractError::NotAdvisory {
                kind: kind(),
                condition: d.type_.clone(),
            });
        }
        if !advisory.insert(d.type_.as_str()) {
            return Err(ContractError::DuplicateAdvisory {
                kind: kind(),
                condition: d.type_.clone(),
            });
        }
        registered(&d.type_, &d.reason)?;
    }

    if let Some(stall) = &verdict.stall {
        if !spec.is_registered(&stall.reason) {
            return Err(ContractError::UnregisteredStallReason {
                kind: kind(),
                reason: stall.reason.clone(),
            });
        }
        if spec.stall_rule(&stall.reason).is_none() && !HOST_STALLS.contains(&stall.reason.as_str())
        {
            return Err(ContractError::UndeclaredStall {
                kind: kind(),
                reason: stall.reason.clone(),
            });
        }
    }

    if let Some(event) = verdict
        .events
        .iter()
        .find(|e| !spec.is_registered(&e.reason))
    {
        return Err(ContractError::UnregisteredEventReason {
            kind: kind(),
            reason: event.reason.clone(),
        });
    }

    if let Some(field) = RESERVED_STATUS_FIELDS
        .iter()
        .find(|f| verdict.status_fields.contains_key(**f))
    {
        return Err(ContractError::ReservedStatusField {
            field: (*field).to_owned(),
        });
    }
    Ok(())
}

/// The first aspect, in declared order, the verdict leaves out although no
/// earlier aspect it gives is short of True: one that would decide Ready.
fn first_missing_decisive<'s>(spec: &'s KindSpec, verdict: &Verdict) -> Option<&'s str> {
    for aspect in &spec.aspects {
        match verdict.aspects.iter().find(|d| &d.type_ == aspect) {
            None => return Some(aspect),
            Some(d) if d.status != ConditionStatus::True => return None,
            Some(_) => {}
        }
    }
    None
}
