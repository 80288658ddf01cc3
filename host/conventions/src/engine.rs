//! The conventions engine: from how a pass ended to the status to write and
//! the Events to emit once the write succeeded.
//!
//! Pure: no I/O and no clock reads (the pass's clock is an input), and
//! deterministic: the same input always gives the same decision.

mod condition;
mod contract;
mod events;
mod fields;
pub mod plans;
mod reported;
mod rollup;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::kind::{KindSpec, READY, STALLED};
use crate::message::bound;
use crate::status::{Condition, Status};
use crate::verdict::{EventType, Verdict};

use condition::{ConditionWriter, Fact};
pub use contract::{ContractError, check_verdict};
pub use fields::RESERVED_STATUS_FIELDS;
pub use plans::{PlanFacts, with_plan};
pub use reported::Reported;
pub use rollup::convergence_type;

/// The healthy reason of every aspect and of Ready.
pub const AS_EXPECTED: &str = "AsExpected";
/// Unknown: not evaluated yet.
pub const INITIALIZING: &str = "Initializing";
/// The convergence condition True while children converge; Ready Unknown
/// for an aspect not evaluated at the current generation.
pub const RECONCILING_REASON: &str = "Reconciling";
/// Ready False: the pass ended with an error.
pub const RECONCILE_ERROR: &str = "ReconcileError";
/// Ready Unknown and the convergence condition False while paused.
pub const RECONCILIATION_PAUSED: &str = "ReconciliationPaused";
/// Ready Unknown, once at start, on an object of a namespace the host left
/// out of its watch for missing permissions.
pub const NAMESPACE_NOT_WATCHED: &str = "NamespaceNotWatched";

/// The class of an error that ended a pass. Each class is reported by one
/// Warning Event, once, until a pass succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ErrorClass {
    /// An API error of no more specific class.
    ReconciliationFailed,
    /// A ResourceQuota refused a write.
    QuotaExceeded,
    /// A webhook or admission policy denied a write.
    AdmissionDenied,
    /// The guest trapped, ran out of time or memory, or broke the contract.
    GuestFailed,
    /// The parent, or an object its guest reads, nests deeper than the
    /// host reads: it is not evaluated on a part of it.
    ObjectUndecodable,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::ReconciliationFailed => "ReconciliationFailed",
            ErrorClass::QuotaExceeded => "QuotaExceeded",
            ErrorClass::AdmissionDenied => "AdmissionDenied",
            ErrorClass::GuestFailed => "GuestFailed",
            ErrorClass::ObjectUndecodable => "ObjectUndecodable",
        }
    }

    /// Ready's message for an error of this class: `"<Class>: <text>"`,
    /// bounded. The class prefix is how the next pass recognises an error
    /// already reported (see [`ErrorClass::is_reported_by`]): keep the two
    /// in step.
    pub fn ready_message(self, text: &str) -> String {
        bound(&format!("{}: {text}", self.as_str()))
    }

    /// Whether `ready` (the previous Ready condition) already reports an
    /// error of this class: reason ReconcileError and a message starting
    /// with `"<Class>: "`. Such an error is not reported again by an Event.
    /// Ready carries one class; the others reported since a pass last
    /// succeeded are remembered by [`Reported`], which a restart loses:
    /// then Ready's class is what the status still says was reported.
    pub fn is_reported_by(self, ready: &Condition) -> bool {
        ready.type_ == READY
            && ready.reason == RECONCILE_ERROR
            && ready
                .message
                .strip_prefix(self.as_str())
                .is_some_and(|rest| rest.starts_with(": "))
    }
}

/// How a pass ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The guest returned a verdict (not yet checked against the registry).
    Verdict(Verdict),
    /// The pass failed; `text` is the error's display, bounded by the engine.
    Error { class: ErrorClass, text: String },
    /// The pass failed after the guest's verdict, whose withdrawals were
    /// made whatever failed (contract 0.5.0): the error is Ready's, and the
    /// verdict, which read what became of them, says the rest.
    Withdrew {
        class: ErrorClass,
        text: String,
        verdict: Verdict,
    },
}

/// Everything the engine decides from.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    pub spec: &'a KindSpec,
    /// The object's `metadata.generation`.
    pub generation: i64,
    pub paused: bool,
    /// The object's current `.status` (empty on first touch).
    pub previous: &'a Status,
    /// The clock of this pass.
    pub now: jiff::Timestamp,
    pub outcome: Outcome,
    /// What earlier passes of the object reported by Event.
    pub reported: &'a Reported,
}

/// An Event to emit once the status write succeeded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub type_: EventType,
    pub reason: String,
    /// Bounded to the events.k8s.io note limit.
    pub note: String,
}

/// What the engine derived for a pass: the status, whether it changed, the
/// Events, and when to look again.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// The status to write.
    pub status: Status,
    /// False when `status` equals the previous status: nothing to write.
    pub changed: bool,
    /// Emitted after the write succeeded, in this order.
    pub events: Vec<Event>,
    /// When to evaluate again at the latest, in seconds (the verdict's
    /// requeue or the stall's recheck), if at all.
    pub requeue_after_seconds: Option<u32>,
    /// A stall is not retried with backoff.
    pub stalled: bool,
    /// What has been reported once `events` are published: the next pass's
    /// [`Input::reported`].
    pub reported: Reported,
}

/// Decides the status to write and the Events to emit from how a pass
/// ended.
///
/// - A verdict is first checked against the kind's contract
///   ([`check_verdict`]); a broken one is decided exactly as an error of
///   class [`ErrorClass::GuestFailed`] whose text is the violation.
/// - A verdict's aspects and advisory conditions are written; Ready, the
///   convergence condition and Stalled are derived (see `rollup`). An
///   aspect the verdict leaves out (while paused, or after its first aspect
///   that is not True: see [`check_verdict`]) is not evaluated: it keeps
///   its previous condition, older observedGeneration included (seed 004:
///   a condition carries the generation it was computed against), or is
///   Unknown (Initializing) when it has none (seed 000: never a guessed
///   state).
/// - An advisory condition left out is removed, paused or not: it is
///   present only while the verdict says its fact holds. A verdict that
///   does not evaluate everything (paused, stalled, or leaving an aspect
///   out) carries an advisory condition forward by giving it as the status
///   has it (status, reason and message): it keeps its observedGeneration
///   (see `ConditionWriter::carry_forward`).
/// - An error keeps the aspects and advisory conditions as previously
///   written and the previous status fields, and writes Ready False
///   (ReconcileError). An error after withdrawals were made
///   ([`Outcome::Withdrew`]) writes Ready so too, and the verdict's aspects,
///   advisory conditions, fields and Events with it: what was taken away is
///   not claimed still there (no stall, no requeue: the error is retried).
/// - A condition the kind always carries that the pass neither sets nor
///   finds in the previous status is Unknown (Initializing): a first pass
///   (an empty previous status) is one write, with whatever it did not
///   evaluate Initializing, not a write of every condition Initializing
///   followed by another.
/// - Conditions are written in [`KindSpec::condition_types`] order; a
///   previous condition of a type the kind does not declare (a type a
///   replaced module dropped) is not carried over: the host owns
///   `.status.conditions`.
/// - `.status.observedGeneration` is the object's generation, except on a
///   paused object of the kstatus profile, which keeps the one it had (see
///   `rollup::observed_generation`).
pub fn decide(input: Input<'_>) -> Output {
    let Input {
        spec,
        generation,
        paused,
        previous,
        now,
        outcome,
        reported,
    } = input;
    let writer = ConditionWriter::new(previous, generation, now);
    let context = Context {
        spec,
        writer: &writer,
        previous,
        paused,
        reported,
    };
    match outcome {
        Outcome::Verdict(verdict) => match check_verdict(spec, &verdict, paused) {
            Ok(()) => context.on_verdict(&verdict, None),
            Err(violation) => context.on_error(ErrorClass::GuestFailed, &violation.to_string()),
        },
        Outcome::Error { class, text } => context.on_error(class, &text),
        Outcome::Withdrew {
            class,
            text,
            verdict,
        } => match check_verdict(spec, &verdict, paused) {
            Ok(()) => context.on_verdict(&verdict, Some((class, &text))),
            Err(violation) => context.on_error(ErrorClass::GuestFailed, &violation.to_string()),
        },
    }
}

/// The status of an object in a namespace the host left out of its watch
/// (it may not list a kind it needs there): Ready Unknown with reason
/// [`NAMESPACE_NOT_WATCHED`] and `message` (naming the namespace and the
/// missing permissions), written once at start; no pass runs on the object
/// afterwards.
///
/// - Every other condition is kept as it was (its own observedGeneration
///   still saying which generation it describes); a condition the kind
///   always carries that the object does not have yet is Unknown
///   (Initializing), as on first touch. The status fields are kept.
/// - observedGeneration is `generation`; Ready's lastTransitionTime moves
///   only when its status does.
/// - One Warning Event (NamespaceNotWatched, `message` as note) when
///   Ready's (status, reason) changes: a restart with the same permissions
///   missing writes nothing and reports nothing again.
pub fn not_watched(
    spec: &KindSpec,
    generation: i64,
    previous: &Status,
    now: jiff::Timestamp,
    message: &str,
) -> Output {
    let writer = ConditionWriter::new(previous, generation, now);
    let ready = writer.write(
        READY,
        Fact::new(
            crate::verdict::ConditionStatus::Unknown,
            NAMESPACE_NOT_WATCHED,
            message,
        ),
    );
    let always: Vec<&str> = spec
        .host_conditions()
        .iter()
        .copied()
        .chain(spec.aspects.iter().map(String::as_str))
        .collect();
    let conditions = std::iter::once(ready.clone())
        .chain(
            spec.condition_types()
                .filter(|t| *t != READY)
                .filter_map(|t| {
                    if always.contains(&t) {
                        Some(writer.keep_or_initialize(t))
                    } else {
                        writer.keep(t)
                    }
                }),
        )
        .collect();
    let status = Status {
        observed_generation: Some(generation),
        conditions,
        fields: previous.fields.clone(),
    };
    let changed = status != *previous;
    let reported = previous
        .condition(READY)
        .is_some_and(|before| before.status == ready.status && before.reason == ready.reason);
    let events = if changed && !reported {
        vec![Event {
            type_: EventType::Warning,
            reason: NAMESPACE_NOT_WATCHED.to_owned(),
            note: ready.message.clone(),
        }]
    } else {
        Vec::new()
    };
    Output {
        status,
        changed,
        events,
        requeue_after_seconds: None,
        stalled: false,
        reported: Reported::default(),
    }
}

/// One decision's inputs besides the outcome.
#[derive(Clone, Copy)]
struct Context<'a> {
    spec: &'a KindSpec,
    writer: &'a ConditionWriter<'a>,
    previous: &'a Status,
    paused: bool,
    reported: &'a Reported,
}

impl Context<'_> {
    /// `failed`: the pass failed after the verdict's withdrawals were
    /// made; its class and text are Ready's.
    fn on_verdict(&self, verdict: &Verdict, failed: Option<(ErrorClass, &str)>) -> Output {
        let Context {
            spec,
            writer,
            previous,
            paused,
            reported,
        } = *self;
        let aspects: Vec<Condition> = spec
            .aspects
            .iter()
            .map(|a| match verdict.aspects.iter().find(|d| &d.type_ == a) {
                Some(d) => writer.write(a, Fact::from(d)),
                None => writer.keep_or_initialize(a),
            })
            .collect();
        // A pass that did not evaluate everything may give an advisory
        // condition as it was.
        let carries_forward =
            paused || verdict.stall.is_some() || verdict.aspects.len() < spec.aspects.len();
        let advisory: Vec<Condition> = spec
            .advisory
            .iter()
            .filter_map(|t| {
                verdict.advisory.iter().find(|d| &d.type_ == t).map(|d| {
                    let fact = Fact::from(d);
                    if carries_forward {
                        writer.carry_forward(t, fact)
                    } else {
                        writer.write(t, fact)
                    }
                })
            })
            .collect();
        let (host, error_event) = match failed {
            Some((class, text)) => {
                let (message, event) = self.error(class, text);
                (rollup::from_error(spec, paused, message), event)
            }
            None => (
                rollup::from_verdict(
                    spec,
                    &aspects,
                    writer.generation(),
                    paused,
                    verdict.stall.as_ref(),
                ),
                None,
            ),
        };
        let status = Status {
            observed_generation: rollup::observed_generation(
                spec,
                paused,
                previous.observed_generation,
                writer.generation(),
            ),
            conditions: assemble(spec, writer, host, aspects, advisory),
            fields: fields::merge(&previous.fields, &verdict.status_fields),
        };
        let changed = status != *previous;
        let events = events::collect(
            spec,
            previous,
            &status,
            reported,
            error_event,
            &verdict.events,
            changed,
        );
        if let Some((class, _)) = failed {
            return Output {
                status,
                changed,
                events,
                requeue_after_seconds: None,
                stalled: false,
                reported: reported.with_class(class),
            };
        }
        let recheck = verdict
            .stall
            .as_ref()
            .and_then(|s| spec.stall_rule(&s.reason))
            .and_then(|rule| rule.recheck_seconds);
        let requeue_after_seconds = match (verdict.requeue_after_seconds, recheck) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Output {
            status,
            changed,
            events,
            requeue_after_seconds,
            stalled: verdict.stall.is_some(),
            reported: Reported::after_verdict(verdict.stall.as_ref().map(|s| s.reason.as_str())),
        }
    }

    /// An error of `class` is reported by a Warning unless it was already:
    /// remembered in [`Reported`], or carried by Ready (the memory lost to
    /// a restart).
    fn on_error(&self, class: ErrorClass, text: &str) -> Output {
        let Context {
            spec,
            writer,
            previous,
            paused,
            reported,
        } = *self;
        let (message, error_event) = self.error(class, text);
        let aspects = spec
            .aspects
            .iter()
            .map(|a| writer.keep_or_initialize(a))
            .collect();
        let advisory = spec
            .advisory
            .iter()
            .filter_map(|t| writer.keep(t))
            .collect();
        let host = rollup::from_error(spec, paused, message);
        let status = Status {
            observed_generation: rollup::observed_generation(
                spec,
                paused,
                previous.observed_generation,
                writer.generation(),
            ),
            conditions: assemble(spec, writer, host, aspects, advisory),
            fields: previous.fields.clone(),
        };
        let changed = status != *previous;
        let events = events::collect(spec, previous, &status, reported, error_event, &[], changed);
        Output {
            status,
            changed,
            events,
            requeue_after_seconds: None,
            stalled: false,
            reported: reported.with_class(class),
        }
    }

    /// Ready's message for an error of `class`, and its Warning unless it
    /// was reported already: remembered in [`Reported`], or carried by
    /// Ready (the memory lost to a restart).
    fn error(&self, class: ErrorClass, text: &str) -> (String, Option<Event>) {
        let message = class.ready_message(text);
        let newly_reported = !self.reported.has_class(class)
            && !self
                .previous
                .condition(READY)
                .is_some_and(|ready| class.is_reported_by(ready));
        let event = newly_reported.then(|| Event {
            type_: EventType::Warning,
            reason: class.as_str().to_owned(),
            note: message.clone(),
        });
        (message, event)
    }
}

/// All conditions of the pass, in [`KindSpec::condition_types`] order: the
/// host's (Ready, the convergence condition, Stalled, as
/// [`KindSpec::host_conditions`] lists them), the aspects, the advisory ones.
fn assemble(
    spec: &KindSpec,
    writer: &ConditionWriter<'_>,
    host: rollup::HostFacts,
    aspects: Vec<Condition>,
    advisory: Vec<Condition>,
) -> Vec<Condition> {
    let mut conditions = vec![
        writer.write(READY, host.ready),
        writer.write(convergence_type(spec), host.convergence),
        writer.write(STALLED, host.stalled),
    ];
    conditions.extend(aspects);
    conditions.extend(advisory);
    conditions
}
