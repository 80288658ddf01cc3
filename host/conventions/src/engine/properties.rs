//! Property tests of the engine over random histories of passes: Ready's
//! roll-up, no Event without a transition, stable transition times,
//! idempotence, determinism and bounded messages.

use proptest::prelude::*;
use serde_json::json;

use crate::fixtures::{console, registry_kind, t};
use crate::kind::{KindSpec, READY};
use crate::message::MAX_MESSAGE_BYTES;
use crate::status::Status;
use crate::verdict::{self, ConditionStatus, EventType, KindEvent, Stall, Verdict};

use super::*;

/// One condition as drawn: mapped onto the kind's vocabulary by index.
#[derive(Clone, Debug)]
struct RawCondition {
    present: bool,
    status: u8,
    reason: u8,
    message: u8,
}

/// One pass as drawn.
#[derive(Clone, Debug)]
struct RawPass {
    error: Option<u8>,
    paused: bool,
    bump_generation: bool,
    advance_seconds: u8,
    aspects: Vec<RawCondition>,
    advisory: Vec<RawCondition>,
    stall: Option<(u8, u8)>,
    fields: Vec<(u8, Option<u8>)>,
    events: Vec<(bool, u8, u8)>,
    requeue: Option<u16>,
    unregistered: u8,
}

fn raw_condition() -> impl Strategy<Value = RawCondition> {
    (
        prop::bool::weighted(0.85),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|(present, status, reason, message)| RawCondition {
            present,
            status,
            reason,
            message,
        })
}

fn raw_pass() -> impl Strategy<Value = RawPass> {
    (
        prop::option::weighted(0.2, any::<u8>()),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
        any::<u8>(),
        prop::collection::vec(raw_condition(), 4),
        prop::collection::vec(raw_condition(), 3),
        prop::option::weighted(0.2, (any::<u8>(), any::<u8>())),
        prop::collection::vec((0u8..4, prop::option::of(0u8..3)), 0..3),
        prop::collection::vec((any::<bool>(), any::<u8>(), any::<u8>()), 0..3),
        prop::option::of(1u16..900),
        0u8..20,
    )
        .prop_map(
            |(
                error,
                paused,
                bump_generation,
                advance_seconds,
                aspects,
                advisory,
                stall,
                fields,
                events,
                requeue,
                unregistered,
            )| RawPass {
                error,
                paused,
                bump_generation,
                advance_seconds,
                aspects,
                advisory,
                stall,
                fields,
                events,
                requeue,
                unregistered,
            },
        )
}

fn message(i: u8) -> String {
    match i % 5 {
        0 => String::new(),
        1 => "replica 1 of 2".to_owned(),
        2 => "the router refused it".to_owned(),
        3 => "é".repeat(700),
        _ => "x".repeat(1500),
    }
}

fn status_of(i: u8) -> ConditionStatus {
    match i % 4 {
        0 | 1 => ConditionStatus::True,
        2 => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    }
}

fn pick<T: Clone>(items: &[T], i: u8) -> T {
    items[usize::from(i) % items.len()].clone()
}

const CLASSES: [ErrorClass; 5] = [
    ErrorClass::ReconciliationFailed,
    ErrorClass::QuotaExceeded,
    ErrorClass::AdmissionDenied,
    ErrorClass::GuestFailed,
    ErrorClass::ObjectUndecodable,
];

/// The outcome a drawn pass stands for, on `spec`. Mostly within the
/// contract; sometimes not (an unregistered reason, an aspect left out).
fn outcome(spec: &KindSpec, raw: &RawPass) -> Outcome {
    let verdict = verdict_of(spec, raw);
    match raw.error {
        // Every other error is one after withdrawals were made.
        Some(class) if class % 2 == 1 => Outcome::Withdrew {
            class: pick(&CLASSES, class / 2),
            text: message(class),
            verdict,
        },
        Some(class) => Outcome::Error {
            class: pick(&CLASSES, class / 2),
            text: message(class),
        },
        None => Outcome::Verdict(verdict),
    }
}

/// The verdict a drawn pass stands for, on `spec`.
fn verdict_of(spec: &KindSpec, raw: &RawPass) -> Verdict {
    let reasons: Vec<String> = spec.registry().into_iter().map(|r| r.name).collect();
    let decide = |type_: &str, c: &RawCondition| verdict::Decision {
        type_: type_.to_owned(),
        status: status_of(c.status),
        reason: pick(&reasons, c.reason),
        message: message(c.message),
    };
    let mut aspects: Vec<verdict::Decision> = spec
        .aspects
        .iter()
        .zip(&raw.aspects)
        .filter(|(_, c)| c.present || !raw.paused && raw.unregistered != 1)
        .map(|(a, c)| decide(a, c))
        .collect();
    if raw.unregistered == 0
        && let Some(first) = aspects.first_mut()
    {
        first.reason = "NotInTheRegistry".to_owned();
    }
    let advisory = spec
        .advisory
        .iter()
        .zip(&raw.advisory)
        .filter(|(_, c)| c.present)
        .map(|(a, c)| decide(a, c))
        .collect();
    let stall = raw.stall.map(|(r, m)| Stall {
        reason: pick(&spec.stalls, r).reason,
        message: message(m),
    });
    let status_fields = raw
        .fields
        .iter()
        .map(|(k, v)| {
            let value = v.map_or(serde_json::Value::Null, |v| json!({ "n": v }));
            (format!("field{k}"), value)
        })
        .collect();
    let events = raw
        .events
        .iter()
        .map(|(warning, r, m)| KindEvent {
            type_: if *warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: pick(&reasons, *r),
            message: message(*m),
        })
        .collect();
    Verdict {
        aspects,
        advisory,
        stall,
        status_fields,
        events,
        requeue_after_seconds: raw.requeue.map(u32::from),
    }
}

/// The error class a step reports, if it ended in error: its own, or
/// GuestFailed for a verdict that breaks the contract.
fn error_class(spec: &KindSpec, step: &Step) -> Option<ErrorClass> {
    let broken = |v: &Verdict| {
        check_verdict(spec, v, step.paused)
            .err()
            .map(|_| ErrorClass::GuestFailed)
    };
    match &step.outcome {
        Outcome::Error { class, .. } => Some(*class),
        Outcome::Withdrew { class, verdict, .. } => broken(verdict).or(Some(*class)),
        Outcome::Verdict(v) => broken(v),
    }
}

fn spec_of(kstatus: bool) -> KindSpec {
    if kstatus { registry_kind() } else { console() }
}

/// One step of a history: the input and the decision taken on it.
struct Step {
    generation: i64,
    paused: bool,
    now: jiff::Timestamp,
    outcome: Outcome,
    previous: Status,
    reported: Reported,
    decision: Output,
}

fn run(spec: &KindSpec, passes: &[RawPass]) -> Vec<Step> {
    let mut previous = Status::default();
    let mut reported = Reported::default();
    let mut generation = 1;
    let mut seconds = 0;
    let mut steps = Vec::new();
    for raw in passes {
        if raw.bump_generation {
            generation += 1;
        }
        seconds += i64::from(raw.advance_seconds);
        let outcome = outcome(spec, raw);
        let decision = decide(Input {
            spec,
            generation,
            paused: raw.paused,
            previous: &previous,
            now: t(seconds),
            outcome: outcome.clone(),
            reported: &reported,
        });
        let next = decision.status.clone();
        let next_reported = decision.reported.clone();
        steps.push(Step {
            generation,
            paused: raw.paused,
            now: t(seconds),
            outcome,
            previous,
            reported,
            decision,
        });
        previous = next;
        reported = next_reported;
    }
    steps
}

fn again(spec: &KindSpec, step: &Step, previous: &Status, now: jiff::Timestamp) -> Output {
    decide(Input {
        spec,
        generation: step.generation,
        paused: step.paused,
        previous,
        now,
        outcome: step.outcome.clone(),
        reported: &step.reported,
    })
}

fn history() -> impl Strategy<Value = (bool, Vec<RawPass>)> {
    (any::<bool>(), prop::collection::vec(raw_pass(), 1..6))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn ready_true_iff_every_aspect_true_at_the_current_generation_and_no_stall((kstatus, passes) in history()) {
        let spec = spec_of(kstatus);
        for step in run(&spec, &passes) {
            let status = &step.decision.status;
            let all_true = spec.aspects.iter().all(|a| status.condition(a).is_some_and(|c| {
                c.status == ConditionStatus::True && c.observed_generation == step.generation
            }));
            let ready_true = status.condition(READY).map(|c| c.status) == Some(ConditionStatus::True);
            if let Outcome::Verdict(v) = &step.outcome
                && !step.paused
                && check_verdict(&spec, v, false).is_ok()
            {
                // A stall is not Ready, every aspect True or not (a
                // change that does not settle: the host's own stall).
                let stalled = v.stall.is_some();
                prop_assert_eq!(ready_true, all_true && !stalled);
                prop_assert_eq!(
                    ready_true,
                    v.aspects.iter().all(|d| d.status == ConditionStatus::True) && !stalled
                );
                continue;
            }
            prop_assert!(!ready_true, "Ready True on an error or a paused pass");
        }
    }

    #[test]
    fn no_event_without_a_transition((kstatus, passes) in history()) {
        let spec = spec_of(kstatus);
        for step in run(&spec, &passes) {
            let d = &step.decision;
            if !d.changed {
                prop_assert!(d.events.is_empty(), "{:?}", d.events);
            }
            let error_class = error_class(&spec, &step);
            for event in &d.events {
                let transition = d.status.conditions.iter().any(|c| {
                    c.reason == event.reason
                        && step.previous.condition(&c.type_).is_none_or(|p| (p.status, &p.reason) != (c.status, &c.reason))
                });
                let class = error_class.is_some_and(|class| {
                    event.reason == class.as_str()
                        && !step.reported.has_class(class)
                        && !step.previous.condition(READY).is_some_and(|r| class.is_reported_by(r))
                });
                let kind = match &step.outcome {
                    Outcome::Verdict(v) => error_class.is_none() && d.changed
                        && v.events.iter().any(|k| k.reason == event.reason && k.type_ == event.type_),
                    // The verdict of a pass that withdrew says what it took away.
                    Outcome::Withdrew { verdict: v, .. } => check_verdict(&spec, v, step.paused).is_ok() && d.changed
                        && v.events.iter().any(|k| k.reason == event.reason && k.type_ == event.type_),
                    Outcome::Error { .. } => false,
                };
                prop_assert!(transition || class || kind, "unexplained {:?}", event);
            }
        }
    }

    #[test]
    fn each_error_class_is_reported_once_until_a_verdict((kstatus, passes) in history()) {
        let spec = spec_of(kstatus);
        let mut since_verdict: Vec<String> = Vec::new();
        for step in run(&spec, &passes) {
            let Some(class) = error_class(&spec, &step) else {
                since_verdict.clear();
                continue;
            };
            // The error's own Warning carries Ready's message (an aspect of
            // a withdrawing pass's verdict may turn to a reason of that name).
            let ready = step.decision.status.condition(READY).map(|c| c.message.clone());
            for event in step
                .decision
                .events
                .iter()
                .filter(|e| e.reason == class.as_str() && Some(&e.note) == ready.as_ref())
            {
                prop_assert!(!since_verdict.contains(&event.reason), "{} again", event.reason);
                since_verdict.push(event.reason.clone());
            }
        }
    }

    #[test]
    fn last_transition_time_unchanged_when_status_unchanged((kstatus, passes) in history()) {
        let spec = spec_of(kstatus);
        for step in run(&spec, &passes) {
            for c in &step.decision.status.conditions {
                if let Some(p) = step.previous.condition(&c.type_)
                    && p.status == c.status
                {
                    prop_assert_eq!(&p.last_transition_time, &c.last_transition_time);
                }
            }
        }
    }

    #[test]
    fn the_same_outcome_twice_changes_nothing((kstatus, passes) in history(), later in 0i64..100_000) {
        let spec = spec_of(kstatus);
        for step in run(&spec, &passes) {
            let now = jiff::Timestamp::from_second(step.now.as_second() + later).unwrap_or(step.now);
            let second = again(&spec, &step, &step.decision.status, now);
            prop_assert!(!second.changed);
            prop_assert!(second.events.is_empty(), "{:?}", second.events);
            prop_assert_eq!(&second.status, &step.decision.status);
        }
    }

    #[test]
    fn identical_input_gives_identical_output((kstatus, passes) in history()) {
        let spec = spec_of(kstatus);
        for step in run(&spec, &passes) {
            prop_assert_eq!(again(&spec, &step, &step.previous, step.now), step.decision);
        }
    }

    #[test]
    fn messages_never_exceed_the_bound((kstatus, passes) in history()) {
        let spec = spec_of(kstatus);
        for step in run(&spec, &passes) {
            for c in &step.decision.status.conditions {
                prop_assert!(c.message.len() <= MAX_MESSAGE_BYTES);
            }
            for e in &step.decision.events {
                prop_assert!(e.note.len() <= MAX_MESSAGE_BYTES);
            }
        }
    }

    #[test]
    fn conditions_are_the_kinds_in_order_with_generations((kstatus, passes) in history()) {
        let spec = spec_of(kstatus);
        for step in run(&spec, &passes) {
            let status = &step.decision.status;
            let order: Vec<&str> = spec.condition_types().collect();
            let written: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
            let expected: Vec<&str> = order.iter().copied().filter(|t| written.contains(t)).collect();
            prop_assert_eq!(&written, &expected);
            for always in spec.host_conditions().iter().copied().chain(spec.aspects.iter().map(String::as_str)) {
                prop_assert!(written.contains(&always), "{} missing", always);
            }
            // Seed 004: a paused kstatus object does not advance it.
            let observed = if kstatus && step.paused {
                step.previous.observed_generation
            } else {
                Some(step.generation)
            };
            prop_assert_eq!(status.observed_generation, observed);
            for host in spec.host_conditions() {
                prop_assert_eq!(status.condition(host).map(|c| c.observed_generation), Some(step.generation));
            }
            prop_assert!(status.conditions.iter().all(|c| c.observed_generation <= step.generation));
        }
    }
}
