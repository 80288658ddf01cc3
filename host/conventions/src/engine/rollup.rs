//! How the host's own conditions are derived: Ready from the aspects,
//! Progressing (or Reconciling) and Stalled from convergence, a stall, a
//! pause or an error, and which generation the status says it observed.

use crate::kind::{KindSpec, PROGRESSING, Profile, RECONCILING};
use crate::status::Condition;
use crate::verdict::{ConditionStatus, Stall};

use super::condition::Fact;
use super::{AS_EXPECTED, RECONCILE_ERROR, RECONCILIATION_PAUSED, RECONCILING_REASON};

/// The convergence condition of the kind's profile: `Progressing`
/// (positive) or `Reconciling` (kstatus, abnormal-true). Both are True
/// while the object converges and False once it has, so the engine writes
/// the same status to either; only their polarity differs.
pub fn convergence_type(spec: &KindSpec) -> &'static str {
    match spec.profile {
        Profile::Progressing => PROGRESSING,
        Profile::Kstatus => RECONCILING,
    }
}

/// What the host writes on its own three conditions in one pass.
pub(super) struct HostFacts {
    pub ready: Fact,
    pub convergence: Fact,
    pub stalled: Fact,
}

/// The first aspect, in declared order, that is not True at `generation`.
fn first_unsettled(aspects: &[Condition], generation: i64) -> Option<&Condition> {
    aspects
        .iter()
        .find(|c| c.status != ConditionStatus::True || is_stale(c, generation))
}

/// Evaluated against an older generation than the object's current one.
fn is_stale(c: &Condition, generation: i64) -> bool {
    c.observed_generation < generation
}

/// Ready from the aspects (declared order): True (AsExpected) when every
/// aspect is True at the current generation; otherwise the first aspect
/// that is not decides. When that aspect was not evaluated at the current
/// generation (kept from an older pass), Ready is Unknown (Reconciling):
/// what it said is about a spec the user already replaced. Otherwise Ready
/// copies its status, reason and message. Declared order decides even when
/// a later aspect is stale: an earlier current False is the better answer.
pub(super) fn ready(aspects: &[Condition], generation: i64) -> Fact {
    match first_unsettled(aspects, generation) {
        None => Fact::new(ConditionStatus::True, AS_EXPECTED, "Every aspect is True"),
        Some(c) if is_stale(c, generation) => Fact::new(
            ConditionStatus::Unknown,
            RECONCILING_REASON,
            format!(
                "{} is not evaluated at generation {generation} yet",
                c.type_
            ),
        ),
        Some(c) => Fact::new(c.status, &c.reason, c.message.clone()),
    }
}

fn stalled_not() -> Fact {
    Fact::new(ConditionStatus::False, AS_EXPECTED, "")
}

fn paused_message(spec: &KindSpec) -> String {
    match &spec.pause {
        Some(p) => format!(
            "Reconciliation is paused: the annotation {}={} is set",
            p.key, p.value
        ),
        None => "Reconciliation is paused".to_owned(),
    }
}

/// A settled failure: an aspect False at the current generation whose
/// reason is not quiet (a quiet reason is a child on its way). The kstatus
/// profile does not count it as work in progress (seed 004: Reconciling
/// "differs from Ready=False, which means settled and broken").
fn is_settled_failure(spec: &KindSpec, aspect: &Condition) -> bool {
    aspect.status == ConditionStatus::False && !spec.is_quiet(&aspect.reason)
}

/// The host conditions of a pass that ended with a verdict.
///
/// - In a stall: Stalled True with the stall's reason and message, and the
///   convergence condition False with that same reason and message; Ready
///   False with them too where every aspect is True (a stall of the host's
///   own, such as a change that does not settle).
/// - Otherwise Stalled False (AsExpected), and the convergence condition
///   True (Reconciling) while some aspect is not True at the current
///   generation, False (AsExpected) once every aspect is.
/// - The kstatus profile's Reconciling is True only while the controller
///   still works toward the observed generation (seed 004: "Reconciling is
///   True while the controller is still working toward the observed
///   generation. It differs from Ready=False, which means settled and
///   broken"): an aspect not evaluated at this generation, Unknown, or
///   False with a quiet reason. A settled failure (see
///   [`is_settled_failure`]) gives Reconciling False with that aspect's
///   reason, as a stall gives it the stall's; Ready says the failure.
///   Progressing (seed 000) stays True: "True (Reconciling) while children
///   converge" is its own rule.
/// - Paused: Ready Unknown (ReconciliationPaused) and, without a stall, the
///   convergence condition False (ReconciliationPaused); a stall found
///   while paused still says Stalled True and gives the convergence
///   condition its reason (seed 000: a paused console whose hostname is
///   refused).
pub(super) fn from_verdict(
    spec: &KindSpec,
    aspects: &[Condition],
    generation: i64,
    paused: bool,
    stall: Option<&Stall>,
) -> HostFacts {
    let ready = match (paused, stall) {
        (true, _) => Fact::new(
            ConditionStatus::Unknown,
            RECONCILIATION_PAUSED,
            paused_message(spec),
        ),
        // A stall the host found with every aspect True (a change that
        // does not settle): the parent is not Ready.
        (false, Some(s)) if first_unsettled(aspects, generation).is_none() => {
            Fact::new(ConditionStatus::False, &s.reason, s.message.clone())
        }
        (false, _) => ready(aspects, generation),
    };
    let (convergence, stalled) = match stall {
        Some(s) => (
            Fact::new(ConditionStatus::False, &s.reason, s.message.clone()),
            Fact::new(ConditionStatus::True, &s.reason, s.message.clone()),
        ),
        None if paused => (
            Fact::new(
                ConditionStatus::False,
                RECONCILIATION_PAUSED,
                paused_message(spec),
            ),
            stalled_not(),
        ),
        None => {
            let convergence = match first_unsettled(aspects, generation) {
                None => Fact::new(ConditionStatus::False, AS_EXPECTED, ""),
                Some(c) if is_stale(c, generation) => Fact::new(
                    ConditionStatus::True,
                    RECONCILING_REASON,
                    format!(
                        "{} is not evaluated at generation {generation} yet",
                        c.type_
                    ),
                ),
                Some(c) if spec.profile == Profile::Kstatus && is_settled_failure(spec, c) => {
                    Fact::new(
                        ConditionStatus::False,
                        &c.reason,
                        format!(
                            "Settled at generation {generation}: {} is False ({}); Ready says why",
                            c.type_, c.reason
                        ),
                    )
                }
                Some(c) => Fact::new(
                    ConditionStatus::True,
                    RECONCILING_REASON,
                    format!("{} is {} ({})", c.type_, c.status, c.reason),
                ),
            };
            (convergence, stalled_not())
        }
    };
    HostFacts {
        ready,
        convergence,
        stalled,
    }
}

/// The host conditions of a pass that ended with an error (a broken
/// verdict included).
///
/// - Ready False (ReconcileError), `ready_message` carrying the class and
///   the bounded text, paused or not: `kubectl wait --for=condition=Ready`
///   never sees True, nor a paused Unknown that hides the failure.
/// - The convergence condition True (Reconciling): the operator retries
///   the pass with backoff, so the object is still being worked on (as
///   Flux's Reconciling=True while retrying). While paused it stays False
///   (ReconciliationPaused): the operator changes nothing.
/// - Stalled False (AsExpected): an error is retried with backoff, which a
///   stall by definition is not; and the failed pass says nothing about
///   whether a stall found before still holds, so a kept Stalled=True
///   would leave an old refusal on show after the user fixed it.
pub(super) fn from_error(spec: &KindSpec, paused: bool, ready_message: String) -> HostFacts {
    let convergence = if paused {
        Fact::new(
            ConditionStatus::False,
            RECONCILIATION_PAUSED,
            paused_message(spec),
        )
    } else {
        Fact::new(
            ConditionStatus::True,
            RECONCILING_REASON,
            "The last pass failed and is retried with backoff; Ready says why",
        )
    };
    HostFacts {
        ready: Fact::new(ConditionStatus::False, RECONCILE_ERROR, ready_message),
        convergence,
        stalled: stalled_not(),
    }
}

/// The generation `.status.observedGeneration` says the status describes:
/// `generation`, the one this pass reconciled; except for a paused object
/// of the kstatus profile, which keeps `previous`. Pausing stops work
/// toward a new generation, and kstatus reads an observedGeneration equal
/// to `metadata.generation` as "the controller has acted on this spec"
/// (seed 004: observedGeneration is "the metadata.generation it was
/// computed against"), so a spec changed while paused stays visibly not
/// observed until the pause is lifted.
pub(super) fn observed_generation(
    spec: &KindSpec,
    paused: bool,
    previous: Option<i64>,
    generation: i64,
) -> Option<i64> {
    if paused && spec.profile == Profile::Kstatus {
        previous
    } else {
        Some(generation)
    }
}
