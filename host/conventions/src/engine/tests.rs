//! One named test per convention the engine enforces, as a user of the
//! written status and Events relies on it.

use serde_json::json;

use crate::fixtures::*;
use crate::kind::{KindSpec, PROGRESSING, READY, RECONCILING, STALLED};
use crate::message::{MAX_MESSAGE_BYTES, bound};
use crate::status::{Condition, Status, rfc3339_seconds};
use crate::verdict::{ConditionStatus, EventType, Verdict};

use super::*;

use ConditionStatus::{False, True, Unknown};

/// (status, reason) of a condition; panics with the status when absent.
fn sr<'s>(status: &'s Status, type_: &str) -> (ConditionStatus, &'s str) {
    let c = get(status, type_);
    (c.status, c.reason.as_str())
}

fn get<'s>(status: &'s Status, type_: &str) -> &'s Condition {
    status
        .condition(type_)
        .unwrap_or_else(|| panic!("{type_} missing from {status:#?}"))
}

fn types(status: &Status) -> Vec<&str> {
    status.conditions.iter().map(|c| c.type_.as_str()).collect()
}

fn warnings(d: &Output) -> Vec<&str> {
    d.events
        .iter()
        .filter(|e| e.type_ == EventType::Warning)
        .map(|e| e.reason.as_str())
        .collect()
}

fn event_reasons(d: &Output) -> Vec<(EventType, &str)> {
    d.events
        .iter()
        .map(|e| (e.type_, e.reason.as_str()))
        .collect()
}

/// The console converged at generation 1.
fn converged(spec: &KindSpec) -> Status {
    Pass::new(spec)
        .verdict(&Status::default(), all_ok(spec))
        .status
}

fn console_verdict(cv: Fact, wr: Fact, er: Fact) -> Verdict {
    verdict(vec![cv, wr, er])
}

type Fact = crate::verdict::Decision;

mod kstatus;

// Rule 1: first touch.

#[test]
fn a_first_pass_is_one_write_of_every_always_carried_condition() {
    for spec in [console(), registry_kind()] {
        let d = Pass::new(&spec)
            .generation(3)
            .verdict(&Status::default(), all_ok(&spec));
        assert!(d.changed, "a first pass writes");
        let expected: Vec<&str> = spec
            .host_conditions()
            .iter()
            .copied()
            .chain(spec.aspects.iter().map(String::as_str))
            .collect();
        assert_eq!(
            types(&d.status),
            expected,
            "no advisory condition unless set"
        );
        for c in &d.status.conditions {
            assert_eq!(c.observed_generation, 3);
            assert_eq!(c.last_transition_time, rfc3339_seconds(t(0)));
        }
        assert_eq!(d.status.observed_generation, Some(3));
    }
}

#[test]
fn first_touch_error_initializes_aspects_instead_of_guessing() {
    let spec = console();
    let d = Pass::new(&spec).error(&Status::default(), ErrorClass::QuotaExceeded, "quota");
    for a in &spec.aspects {
        assert_eq!(sr(&d.status, a), (Unknown, INITIALIZING), "{a}");
    }
    assert!(d.status.condition("ExposureConfined").is_none());
}

#[test]
fn first_touch_paused_partial_verdict_initializes_the_aspects_it_leaves_out() {
    let spec = console();
    let v = verdict(vec![bad(
        "ConfigurationValid",
        "HostnameNotAllowed",
        "refused",
    )]);
    let d = Pass::new(&spec).paused().verdict(&Status::default(), v);
    assert_eq!(
        sr(&d.status, "ConfigurationValid"),
        (False, "HostnameNotAllowed")
    );
    assert_eq!(sr(&d.status, "WorkloadReady"), (Unknown, INITIALIZING));
    assert_eq!(sr(&d.status, "ExposureReady"), (Unknown, INITIALIZING));
}

#[test]
fn a_first_verdict_is_a_transition_of_every_aspect() {
    let spec = console();
    let d = Pass::new(&spec)
        .at(5)
        .verdict(&Status::default(), all_ok(&spec));
    assert_eq!(sr(&d.status, READY), (True, AS_EXPECTED));
    assert_eq!(
        get(&d.status, READY).last_transition_time,
        rfc3339_seconds(t(5))
    );
    assert_eq!(event_reasons(&d), vec![(EventType::Normal, AS_EXPECTED)]);
}

// Rule 2: Ready from the aspects.

#[test]
fn ready_true_as_expected_when_every_aspect_is_true() {
    for spec in [console(), registry_kind()] {
        let d = Pass::new(&spec).verdict(&Status::default(), all_ok(&spec));
        assert_eq!(sr(&d.status, READY), (True, AS_EXPECTED), "{}", spec.kind);
    }
}

#[test]
fn ready_copies_first_non_true_aspect() {
    let spec = console();
    // Given out of declared order: declared order decides, not the verdict's.
    let v = verdict(vec![
        bad("ExposureReady", "NotAdmitted", "the router refused it"),
        bad("WorkloadReady", "CrashLoopBackOff", "console restarts"),
        ok("ConfigurationValid"),
    ]);
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    let ready = get(&d.status, READY);
    assert_eq!(
        (ready.status, ready.reason.as_str(), ready.message.as_str()),
        (False, "CrashLoopBackOff", "console restarts")
    );
}

#[test]
fn ready_copies_an_unknown_aspect() {
    let spec = console();
    let v = console_verdict(
        ok("ConfigurationValid"),
        ok("WorkloadReady"),
        unknown("ExposureReady", RECONCILING_REASON),
    );
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(sr(&d.status, READY), (Unknown, RECONCILING_REASON));
}

fn aspect_at(type_: &str, status: ConditionStatus, reason: &str, generation: i64) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status,
        reason: reason.to_owned(),
        message: String::new(),
        last_transition_time: rfc3339_seconds(t(0)),
        observed_generation: generation,
    }
}

#[test]
fn ready_unknown_reconciling_when_an_aspect_is_not_evaluated_at_this_generation() {
    let aspects = [
        aspect_at("ConfigurationValid", True, AS_EXPECTED, 2),
        aspect_at("WorkloadReady", True, AS_EXPECTED, 1),
    ];
    let ready = rollup::ready(&aspects, 2);
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (Unknown, RECONCILING_REASON)
    );
    assert!(ready.message.contains("WorkloadReady"), "{}", ready.message);
}

#[test]
fn ready_copies_a_current_false_aspect_before_a_later_stale_one() {
    let aspects = [
        aspect_at("ConfigurationValid", False, "ClusterNotFound", 2),
        aspect_at("WorkloadReady", True, AS_EXPECTED, 1),
    ];
    let ready = rollup::ready(&aspects, 2);
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (False, "ClusterNotFound")
    );
}

// Rule 3: advisory conditions.

#[test]
fn advisory_condition_never_enters_ready() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.advisory = vec![bad(
        "ExposureConfined",
        "ExposureOpen",
        "any Pod reaches the port",
    )];
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(sr(&d.status, READY), (True, AS_EXPECTED));
    assert_eq!(sr(&d.status, PROGRESSING), (False, AS_EXPECTED));
}

#[test]
fn advisory_in_verdict_is_written_and_left_out_is_removed() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.advisory = vec![bad("ExposureConfined", "ExposureOpen", "open")];
    let first = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(
        sr(&first.status, "ExposureConfined"),
        (False, "ExposureOpen")
    );
    let second = Pass::new(&spec)
        .at(10)
        .verdict(&first.status, all_ok(&spec));
    assert!(second.status.condition("ExposureConfined").is_none());
    assert!(second.changed);
}

#[test]
fn advisory_left_out_while_paused_is_removed_too() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.advisory = vec![ok("InstanceCABundleComplete")];
    let first = Pass::new(&spec).verdict(&Status::default(), v);
    let paused = Pass::new(&spec)
        .paused()
        .verdict(&first.status, Verdict::default());
    assert!(
        paused
            .status
            .condition("InstanceCABundleComplete")
            .is_none()
    );
}

// Rule 4: an error outcome.

#[test]
fn error_writes_ready_false_reconcile_error_with_the_class_prefix() {
    let spec = console();
    let d = Pass::new(&spec).at(10).error(
        &converged(&spec),
        ErrorClass::AdmissionDenied,
        "admission webhook denied the Deployment",
    );
    let ready = get(&d.status, READY);
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        (False, RECONCILE_ERROR)
    );
    assert_eq!(
        ready.message,
        "AdmissionDenied: admission webhook denied the Deployment"
    );
    assert_eq!(ready.last_transition_time, rfc3339_seconds(t(10)));
}

#[test]
fn error_keeps_aspects_and_advisory_as_previously_written() {
    let spec = console();
    let mut v = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "CrashLoopBackOff", "restarts"),
        ok("ExposureReady"),
    );
    v.advisory = vec![bad("ExposureConfined", "ExposureOpen", "open")];
    let before = Pass::new(&spec).verdict(&Status::default(), v).status;
    let d = Pass::new(&spec).generation(2).at(60).error(
        &before,
        ErrorClass::ReconciliationFailed,
        "conflict",
    );
    for type_ in [
        "ConfigurationValid",
        "WorkloadReady",
        "ExposureReady",
        "ExposureConfined",
    ] {
        assert_eq!(
            get(&d.status, type_),
            get(&before, type_),
            "{type_} kept as written"
        );
    }
    assert_eq!(get(&d.status, "WorkloadReady").observed_generation, 1);
    assert_eq!(get(&d.status, READY).observed_generation, 2);
}

#[test]
fn an_error_after_withdrawals_writes_the_verdict_that_says_what_was_taken_away() {
    let spec = console();
    let mut before = converged(&spec);
    before
        .fields
        .insert("url".to_owned(), json!("https://a.example.com"));
    let mut v = console_verdict(
        ok("ConfigurationValid"),
        ok("WorkloadReady"),
        bad(
            "ExposureReady",
            "HostnameNotAllowed",
            "Route a is withdrawn",
        ),
    );
    v.events = vec![crate::verdict::KindEvent {
        type_: EventType::Normal,
        reason: "HostnameNotAllowed".into(),
        message: "withdrawn".into(),
    }];
    v.status_fields = serde_json::Map::from_iter([("url".to_owned(), serde_json::Value::Null)]);
    v.stall = Some(crate::verdict::Stall {
        reason: "HostnameNotAllowed".into(),
        message: "refused".into(),
    });
    let d = Pass::new(&spec).at(10).outcome(
        &before,
        Outcome::Withdrew {
            class: ErrorClass::ReconciliationFailed,
            text: "Cluster is no longer served".into(),
            verdict: v,
        },
    );
    // Ready says the error, not the aspect; the aspect says the withdrawal.
    assert_eq!(sr(&d.status, READY), (False, RECONCILE_ERROR));
    assert_eq!(
        get(&d.status, "ExposureReady").message,
        "Route a is withdrawn"
    );
    assert!(
        !d.status.fields.contains_key("url"),
        "{:?}",
        d.status.fields
    );
    // The error is retried, not a stall: no Stalled, no requeue.
    assert_eq!(sr(&d.status, STALLED), (False, AS_EXPECTED));
    assert!(!d.stalled);
    assert_eq!(d.requeue_after_seconds, None);
    assert_eq!(
        event_reasons(&d),
        [
            (EventType::Warning, "ReconciliationFailed"),
            (EventType::Warning, "HostnameNotAllowed"),
            (EventType::Normal, "HostnameNotAllowed"),
        ]
    );
    assert!(d.reported.has_class(ErrorClass::ReconciliationFailed));
}

#[test]
fn error_says_the_operator_retries_and_is_not_stalled() {
    for spec in [console(), registry_kind()] {
        let d = Pass::new(&spec).error(&converged(&spec), ErrorClass::QuotaExceeded, "quota");
        assert_eq!(
            sr(&d.status, convergence_type(&spec)),
            (True, RECONCILING_REASON)
        );
        assert_eq!(sr(&d.status, STALLED), (False, AS_EXPECTED));
    }
}

#[test]
fn error_during_a_stall_clears_stalled() {
    let spec = console();
    let mut v = console_verdict(
        bad("ConfigurationValid", "ImageNotAllowed", "refused"),
        ok("WorkloadReady"),
        ok("ExposureReady"),
    );
    v.stall = stall("ImageNotAllowed", "refused");
    let stalled = Pass::new(&spec).verdict(&Status::default(), v).status;
    let d = Pass::new(&spec).error(&stalled, ErrorClass::ReconciliationFailed, "etcd timeout");
    assert_eq!(sr(&d.status, STALLED), (False, AS_EXPECTED));
    assert_eq!(sr(&d.status, READY), (False, RECONCILE_ERROR));
    assert!(!d.stalled);
}

#[test]
fn a_brief_error_during_a_stall_does_not_repeat_the_stalls_warning() {
    let spec = console();
    let stalled_on = |reason: &str| {
        let mut v = console_verdict(
            bad("ConfigurationValid", reason, "refused"),
            ok("WorkloadReady"),
            ok("ExposureReady"),
        );
        v.stall = stall(reason, "refused");
        v
    };
    let p = Pass::new(&spec);
    let stalled = p.verdict(&Status::default(), stalled_on("ImageNotAllowed"));
    assert_eq!(warnings(&stalled), vec!["ImageNotAllowed"]);
    let error = p.at(10).after(&stalled.reported).error(
        &stalled.status,
        ErrorClass::ReconciliationFailed,
        "etcd timeout",
    );
    assert_eq!(warnings(&error), vec!["ReconciliationFailed"]);
    let again = p
        .at(20)
        .after(&error.reported)
        .verdict(&error.status, stalled_on("ImageNotAllowed"));
    assert_eq!(sr(&again.status, STALLED), (True, "ImageNotAllowed"));
    assert!(
        again.events.is_empty(),
        "the stall never changed: {:?}",
        again.events
    );
    // Another stall after the error is a change, reported.
    let other = p
        .at(20)
        .after(&error.reported)
        .verdict(&error.status, stalled_on("HostnameNotAllowed"));
    assert_eq!(warnings(&other), vec!["HostnameNotAllowed"]);
    // Once a pass ends without the stall, its return is reported again.
    let fixed = p
        .at(30)
        .after(&error.reported)
        .verdict(&error.status, all_ok(&spec));
    let back = p
        .at(40)
        .after(&fixed.reported)
        .verdict(&fixed.status, stalled_on("ImageNotAllowed"));
    assert_eq!(warnings(&back), vec!["ImageNotAllowed"]);
}

#[test]
fn error_while_paused_keeps_progressing_paused_and_ready_false() {
    let spec = console();
    let d = Pass::new(&spec)
        .paused()
        .error(&converged(&spec), ErrorClass::GuestFailed, "trap");
    assert_eq!(sr(&d.status, READY), (False, RECONCILE_ERROR));
    assert_eq!(sr(&d.status, PROGRESSING), (False, RECONCILIATION_PAUSED));
}

#[test]
fn error_message_is_bounded_and_keeps_its_class_prefix() {
    let spec = console();
    let d = Pass::new(&spec).error(
        &Status::default(),
        ErrorClass::QuotaExceeded,
        &"q".repeat(5000),
    );
    let ready = get(&d.status, READY);
    assert!(ready.message.len() <= MAX_MESSAGE_BYTES);
    assert!(ready.message.starts_with("QuotaExceeded: "));
    assert!(d.events.iter().all(|e| e.note.len() <= MAX_MESSAGE_BYTES));
}

// Rule 5: Progressing / Reconciling and Stalled.

#[test]
fn progressing_true_reconciling_while_children_converge() {
    let spec = console();
    let v = console_verdict(
        ok("ConfigurationValid"),
        bad(
            "WorkloadReady",
            "RolloutInProgress",
            "1 of 2 replicas updated",
        ),
        unknown("ExposureReady", RECONCILING_REASON),
    );
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(sr(&d.status, PROGRESSING), (True, RECONCILING_REASON));
    assert!(
        get(&d.status, PROGRESSING)
            .message
            .contains("WorkloadReady")
    );
    assert_eq!(sr(&d.status, STALLED), (False, AS_EXPECTED));
    assert!(!d.stalled);
}

#[test]
fn progressing_false_as_expected_once_converged() {
    let spec = console();
    let d = Pass::new(&spec).verdict(&Status::default(), all_ok(&spec));
    assert_eq!(sr(&d.status, PROGRESSING), (False, AS_EXPECTED));
    assert_eq!(sr(&d.status, STALLED), (False, AS_EXPECTED));
}

#[test]
fn stall_sets_stalled_true_and_progressing_false_with_its_reason() {
    let spec = console();
    let mut v = console_verdict(
        bad(
            "ConfigurationValid",
            "ConsoleRoleMissing",
            "pgtoolbox-console is missing",
        ),
        ok("WorkloadReady"),
        ok("ExposureReady"),
    );
    v.stall = stall("ConsoleRoleMissing", "pgtoolbox-console is missing");
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(sr(&d.status, STALLED), (True, "ConsoleRoleMissing"));
    assert_eq!(sr(&d.status, PROGRESSING), (False, "ConsoleRoleMissing"));
    assert_eq!(
        get(&d.status, STALLED).message,
        "pgtoolbox-console is missing"
    );
    assert_eq!(sr(&d.status, READY), (False, "ConsoleRoleMissing"));
    assert!(d.stalled);
}

#[test]
fn kstatus_reconciling_true_while_converging_and_false_when_converged() {
    let spec = registry_kind();
    let v = verdict(vec![
        ok("SourceValid"),
        unknown("ToolsDiscovered", "DiscoveryRunning"),
    ]);
    let converging = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(
        sr(&converging.status, RECONCILING),
        (True, RECONCILING_REASON)
    );
    assert!(converging.status.condition(PROGRESSING).is_none());
    let done = Pass::new(&spec)
        .at(30)
        .verdict(&converging.status, all_ok(&spec));
    assert_eq!(sr(&done.status, RECONCILING), (False, AS_EXPECTED));
    assert_eq!(sr(&done.status, STALLED), (False, AS_EXPECTED));
}

#[test]
fn kstatus_stall_sets_reconciling_false_with_the_stall_reason() {
    let spec = registry_kind();
    let mut v = verdict(vec![
        bad("SourceValid", "SourceInvalid", "bad URL"),
        ok("ToolsDiscovered"),
    ]);
    v.stall = stall("SourceInvalid", "bad URL");
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(sr(&d.status, STALLED), (True, "SourceInvalid"));
    assert_eq!(sr(&d.status, RECONCILING), (False, "SourceInvalid"));
}

#[test]
fn kstatus_degraded_is_an_advisory_that_leaves_ready_true() {
    let spec = registry_kind();
    let mut v = all_ok(&spec);
    v.advisory = vec![cond("Degraded", True, "ToolsMissing", "3 of 5 tools serve")];
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(sr(&d.status, READY), (True, AS_EXPECTED));
    assert_eq!(sr(&d.status, "Degraded"), (True, "ToolsMissing"));
}

// Rule 6: paused.

#[test]
fn paused_sets_progressing_false_and_ready_unknown_reconciliation_paused() {
    let spec = console();
    let d = Pass::new(&spec)
        .paused()
        .verdict(&converged(&spec), Verdict::default());
    assert_eq!(sr(&d.status, READY), (Unknown, RECONCILIATION_PAUSED));
    assert_eq!(sr(&d.status, PROGRESSING), (False, RECONCILIATION_PAUSED));
    assert_eq!(sr(&d.status, STALLED), (False, AS_EXPECTED));
    assert!(
        get(&d.status, READY)
            .message
            .contains("pgtoolbox.fyannk.dev/reconcile=skip")
    );
}

#[test]
fn paused_kstatus_sets_reconciling_false_reconciliation_paused() {
    let spec = registry_kind();
    let d = Pass::new(&spec)
        .paused()
        .verdict(&converged(&spec), Verdict::default());
    assert_eq!(sr(&d.status, READY), (Unknown, RECONCILIATION_PAUSED));
    assert_eq!(sr(&d.status, RECONCILING), (False, RECONCILIATION_PAUSED));
}

#[test]
fn paused_verdict_gives_only_what_it_still_checks_and_the_rest_keeps_its_value() {
    let spec = console();
    let before = converged(&spec);
    let v = verdict(vec![bad("ExposureReady", "NotAdmitted", "router refused")]);
    let d = Pass::new(&spec).generation(2).paused().verdict(&before, v);
    assert_eq!(sr(&d.status, "ExposureReady"), (False, "NotAdmitted"));
    assert_eq!(get(&d.status, "ExposureReady").observed_generation, 2);
    assert_eq!(
        get(&d.status, "WorkloadReady"),
        get(&before, "WorkloadReady")
    );
    assert_eq!(
        get(&d.status, "ConfigurationValid"),
        get(&before, "ConfigurationValid")
    );
}

#[test]
fn paused_with_refused_hostname_says_stalled_true_and_progressing_carries_the_reason() {
    let spec = console();
    let message = "hostname db.evil.example is outside the allowed suffixes .apps.example";
    let mut v = verdict(vec![
        bad("ConfigurationValid", "HostnameNotAllowed", message),
        bad("ExposureReady", "HostnameNotAllowed", message),
    ]);
    v.stall = stall("HostnameNotAllowed", message);
    let d = Pass::new(&spec).paused().verdict(&converged(&spec), v);
    assert_eq!(sr(&d.status, STALLED), (True, "HostnameNotAllowed"));
    assert_eq!(sr(&d.status, PROGRESSING), (False, "HostnameNotAllowed"));
    assert_eq!(sr(&d.status, READY), (Unknown, RECONCILIATION_PAUSED));
    assert_eq!(sr(&d.status, "WorkloadReady"), (True, AS_EXPECTED));
    assert!(d.stalled);
    assert_eq!(
        warnings(&d),
        vec!["HostnameNotAllowed"],
        "one Warning for both conditions"
    );
}

// Rule 7: generation, transition time, bounds, order.

#[test]
fn every_rewritten_condition_carries_the_current_generation() {
    let spec = console();
    let d = Pass::new(&spec)
        .generation(7)
        .verdict(&converged(&spec), all_ok(&spec));
    assert!(
        d.status
            .conditions
            .iter()
            .all(|c| c.observed_generation == 7)
    );
    assert_eq!(d.status.observed_generation, Some(7));
    assert!(d.changed, "a new generation is written");
    assert!(d.events.is_empty(), "but nothing transitioned");
}

#[test]
fn last_transition_time_moves_only_when_the_status_moves() {
    let spec = console();
    let v1 = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "RolloutInProgress", "1 of 2"),
        ok("ExposureReady"),
    );
    let first = Pass::new(&spec).verdict(&Status::default(), v1);
    let v2 = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "CrashLoopBackOff", "restarts"),
        ok("ExposureReady"),
    );
    let second = Pass::new(&spec).at(60).verdict(&first.status, v2);
    let wr = get(&second.status, "WorkloadReady");
    assert_eq!(wr.reason, "CrashLoopBackOff");
    assert_eq!(
        wr.last_transition_time,
        rfc3339_seconds(t(0)),
        "still False: time kept"
    );
    let third = Pass::new(&spec)
        .at(120)
        .verdict(&second.status, all_ok(&spec));
    let wr = get(&third.status, "WorkloadReady");
    assert_eq!(wr.last_transition_time, rfc3339_seconds(t(120)));
    assert_eq!(
        get(&third.status, "ConfigurationValid").last_transition_time,
        rfc3339_seconds(t(0))
    );
}

#[test]
fn every_message_is_bounded() {
    let spec = console();
    let long = "é".repeat(3000);
    let mut v = console_verdict(
        bad("ConfigurationValid", "HostnameNotAllowed", &long),
        ok("WorkloadReady"),
        ok("ExposureReady"),
    );
    v.stall = stall("HostnameNotAllowed", &long);
    v.advisory = vec![bad("ExposureConfined", "ExposurePolicyKept", &long)];
    v.events = vec![kind_event(EventType::Normal, "RolloutStarted", &long)];
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert!(
        d.status
            .conditions
            .iter()
            .all(|c| c.message.len() <= MAX_MESSAGE_BYTES)
    );
    assert!(d.events.iter().all(|e| e.note.len() <= MAX_MESSAGE_BYTES));
    assert_eq!(get(&d.status, READY).message, bound(&long));
}

#[test]
fn conditions_follow_the_spec_order_whatever_the_verdict_order() {
    for spec in [console(), registry_kind()] {
        let mut v = all_ok(&spec);
        v.aspects.reverse();
        v.advisory = spec.advisory.iter().rev().map(|a| ok(a)).collect();
        let d = Pass::new(&spec).verdict(&Status::default(), v);
        assert_eq!(types(&d.status), spec.condition_types().collect::<Vec<_>>());
    }
}

#[test]
fn conditions_of_types_the_kind_does_not_declare_are_not_carried_over() {
    let spec = console();
    let mut before = converged(&spec);
    before
        .conditions
        .push(aspect_at("ServersSynced", True, AS_EXPECTED, 1));
    let d = Pass::new(&spec).verdict(&before, all_ok(&spec));
    assert!(d.status.condition("ServersSynced").is_none());
    assert!(d.changed);
}

// Rule 8: the verdict's contract.

#[test]
fn contract_unregistered_reason_is_a_guest_failed_error_naming_it() {
    let spec = console();
    let v = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "Foo", ""),
        ok("ExposureReady"),
    );
    assert_eq!(
        check_verdict(&spec, &v, false),
        Err(ContractError::UnregisteredReason {
            kind: "PgToolBoxConsole".to_owned(),
            condition: "WorkloadReady".to_owned(),
            reason: "Foo".to_owned(),
        })
    );
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert_eq!(sr(&d.status, READY), (False, RECONCILE_ERROR));
    assert_eq!(
        get(&d.status, READY).message,
        "GuestFailed: verdict uses reason \"Foo\" on WorkloadReady, which is not in the PgToolBoxConsole registry"
    );
    assert_eq!(warnings(&d), vec!["GuestFailed"]);
}

#[test]
fn contract_refuses_a_condition_type_the_kind_did_not_declare() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.aspects.push(ok("ServersSynced"));
    assert!(
        matches!(check_verdict(&spec, &v, false), Err(ContractError::NotAnAspect { condition, .. }) if condition == "ServersSynced")
    );
    let mut v = all_ok(&spec);
    v.aspects.push(ok("ExposureConfined"));
    assert!(matches!(
        check_verdict(&spec, &v, false),
        Err(ContractError::NotAnAspect { .. })
    ));
    let mut v = all_ok(&spec);
    v.advisory.push(ok("WorkloadReady"));
    assert!(
        matches!(check_verdict(&spec, &v, false), Err(ContractError::NotAdvisory { condition, .. }) if condition == "WorkloadReady")
    );
}

#[test]
fn contract_refuses_an_advisory_condition_with_an_unregistered_reason() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.advisory.push(bad("ExposureConfined", "WideOpen", ""));
    assert!(matches!(
        check_verdict(&spec, &v, false),
        Err(ContractError::UnregisteredReason { condition, .. }) if condition == "ExposureConfined"
    ));
}

#[test]
fn contract_requires_every_aspect_up_to_the_first_not_true_unless_paused() {
    let spec = console();
    let v = verdict(vec![ok("ConfigurationValid"), ok("ExposureReady")]);
    let err = check_verdict(&spec, &v, false);
    assert!(
        matches!(&err, Err(ContractError::MissingAspect { aspect, .. }) if aspect == "WorkloadReady")
    );
    assert_eq!(check_verdict(&spec, &v, true), Ok(()));
    let before_false = verdict(vec![bad("WorkloadReady", "PodNotReady", "")]);
    assert!(
        matches!(&check_verdict(&spec, &before_false, false), Err(ContractError::MissingAspect { aspect, .. }) if aspect == "ConfigurationValid"),
        "an aspect before the False one would decide Ready"
    );
}

#[test]
fn contract_lets_a_verdict_leave_out_the_aspects_after_its_first_not_true() {
    let spec = console();
    let mut stalled = verdict(vec![bad(
        "ConfigurationValid",
        "ConsoleImageRequired",
        "no image",
    )]);
    stalled.stall = stall("ConsoleImageRequired", "no image");
    assert_eq!(check_verdict(&spec, &stalled, false), Ok(()));
    let unknown_first = verdict(vec![unknown("ConfigurationValid", RECONCILING_REASON)]);
    assert_eq!(check_verdict(&spec, &unknown_first, false), Ok(()));
    let workload_false = verdict(vec![
        ok("ConfigurationValid"),
        bad("WorkloadReady", "PodNotReady", ""),
    ]);
    assert_eq!(check_verdict(&spec, &workload_false, false), Ok(()));
}

/// Seed 000: "An aspect not yet evaluated at the current generation makes
/// Ready Unknown (Reconciling)"; seed 004: every condition carries the
/// generation it was computed against.
#[test]
fn an_aspect_left_out_after_a_stall_keeps_its_verdict_and_older_generation() {
    let spec = console();
    let before = converged(&spec);
    let mut v = verdict(vec![bad(
        "ConfigurationValid",
        "ConsoleImageRequired",
        "no image",
    )]);
    v.stall = stall("ConsoleImageRequired", "no image");
    let d = Pass::new(&spec).generation(2).at(10).verdict(&before, v);
    assert_eq!(
        get(&d.status, "WorkloadReady"),
        get(&before, "WorkloadReady")
    );
    assert_eq!(get(&d.status, "ExposureReady").observed_generation, 1);
    assert_eq!(get(&d.status, "ConfigurationValid").observed_generation, 2);
    assert_eq!(sr(&d.status, READY), (False, "ConsoleImageRequired"));
    assert_eq!(sr(&d.status, STALLED), (True, "ConsoleImageRequired"));
}

/// Seed 000: "A condition not yet evaluated is Unknown with reason
/// Initializing, never a guessed state."
#[test]
fn an_aspect_never_evaluated_and_left_out_is_initializing() {
    let spec = console();
    let mut v = verdict(vec![bad(
        "ConfigurationValid",
        "ConsoleImageRequired",
        "no image",
    )]);
    v.stall = stall("ConsoleImageRequired", "no image");
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(sr(&d.status, "WorkloadReady"), (Unknown, INITIALIZING));
    assert_eq!(sr(&d.status, "ExposureReady"), (Unknown, INITIALIZING));
    assert_eq!(
        warnings(&d),
        vec!["ConsoleImageRequired"],
        "no Warning for Initializing"
    );
}

#[test]
fn an_advisory_given_unchanged_by_a_stalled_or_paused_verdict_keeps_its_generation() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.advisory = vec![bad("InstanceCABundleComplete", "InstanceCAMissing", "db-1")];
    let first = Pass::new(&spec).verdict(&Status::default(), v);
    let mut stalled = verdict(vec![bad(
        "ConfigurationValid",
        "ConsoleImageRequired",
        "no image",
    )]);
    stalled.stall = stall("ConsoleImageRequired", "no image");
    stalled.advisory = vec![bad("InstanceCABundleComplete", "InstanceCAMissing", "db-1")];
    let d = Pass::new(&spec)
        .generation(2)
        .at(10)
        .verdict(&first.status, stalled.clone());
    assert_eq!(
        get(&d.status, "InstanceCABundleComplete"),
        get(&first.status, "InstanceCABundleComplete")
    );
    let paused = Pass::new(&spec).generation(2).at(10).paused().verdict(
        &first.status,
        Verdict {
            advisory: stalled.advisory.clone(),
            ..Verdict::default()
        },
    );
    assert_eq!(
        get(&paused.status, "InstanceCABundleComplete").observed_generation,
        1
    );
    let mut evaluated = all_ok(&spec);
    evaluated.advisory = stalled.advisory;
    let fresh = Pass::new(&spec)
        .generation(2)
        .verdict(&first.status, evaluated);
    assert_eq!(
        get(&fresh.status, "InstanceCABundleComplete").observed_generation,
        2,
        "a pass that evaluates it stamps the current generation"
    );
}

#[test]
fn contract_refuses_an_aspect_given_twice_even_paused() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.aspects.push(bad("WorkloadReady", "PodNotReady", ""));
    for paused in [false, true] {
        assert!(matches!(
            check_verdict(&spec, &v, paused),
            Err(ContractError::DuplicateAspect { .. })
        ));
    }
    let mut v = all_ok(&spec);
    v.advisory = vec![ok("ExposureConfined"), ok("ExposureConfined")];
    assert!(matches!(
        check_verdict(&spec, &v, false),
        Err(ContractError::DuplicateAdvisory { .. })
    ));
}

#[test]
fn contract_refuses_a_stall_unregistered_or_not_declared() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.stall = stall("Meltdown", "");
    assert!(matches!(
        check_verdict(&spec, &v, false),
        Err(ContractError::UnregisteredStallReason { .. })
    ));
    v.stall = stall("CrashLoopBackOff", "");
    let err = check_verdict(&spec, &v, false);
    assert!(
        matches!(&err, Err(ContractError::UndeclaredStall { reason, .. }) if reason == "CrashLoopBackOff")
    );
    assert_eq!(
        err.map_err(|e| e.to_string()),
        Err("verdict stalls with reason \"CrashLoopBackOff\", which PgToolBoxConsole does not declare as a stall".to_owned())
    );
}

#[test]
fn contract_refuses_a_kind_event_with_an_unregistered_reason() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.events = vec![kind_event(EventType::Normal, "Deployed", "")];
    assert!(
        matches!(check_verdict(&spec, &v, false), Err(ContractError::UnregisteredEventReason { reason, .. }) if reason == "Deployed")
    );
}

#[test]
fn contract_refuses_status_fields_the_host_owns() {
    let spec = console();
    for field in ["conditions", "observedGeneration"] {
        let mut v = all_ok(&spec);
        v.status_fields.insert(field.to_owned(), json!([]));
        assert_eq!(
            check_verdict(&spec, &v, false),
            Err(ContractError::ReservedStatusField {
                field: field.to_owned()
            })
        );
    }
}

#[test]
fn contract_violation_is_decided_exactly_as_a_guest_failed_error() {
    let spec = console();
    let mut before = converged(&spec);
    before
        .fields
        .insert("url".to_owned(), json!("https://console.apps.example"));
    let mut v = verdict(vec![bad("WorkloadReady", "PodNotReady", "")]);
    v.status_fields
        .insert("url".to_owned(), serde_json::Value::Null);
    v.events = vec![kind_event(EventType::Normal, "RolloutStarted", "")];
    let broken = Pass::new(&spec).at(10).verdict(&before, v);
    let violation = check_verdict(
        &spec,
        &verdict(vec![bad("WorkloadReady", "PodNotReady", "")]),
        false,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    let as_error = Pass::new(&spec)
        .at(10)
        .error(&before, ErrorClass::GuestFailed, &violation);
    assert_eq!(broken, as_error);
    assert_eq!(broken.status.fields, before.fields, "fields kept");
    assert_eq!(
        event_reasons(&broken),
        vec![(EventType::Warning, "GuestFailed")],
        "no kind event"
    );
}

// Rule 9: status fields.

#[test]
fn status_fields_merge_shallowly_and_null_deletes_a_key() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.status_fields
        .insert("url".to_owned(), json!("https://c.apps.example"));
    v.status_fields.insert(
        "instanceCABundle".to_owned(),
        json!({"missing": ["a"], "count": 1}),
    );
    let first = Pass::new(&spec).verdict(&Status::default(), v);
    let mut v = all_ok(&spec);
    v.status_fields
        .insert("url".to_owned(), serde_json::Value::Null);
    v.status_fields
        .insert("instanceCABundle".to_owned(), json!({"missing": []}));
    let second = Pass::new(&spec).verdict(&first.status, v);
    assert!(!second.status.fields.contains_key("url"));
    assert_eq!(
        second.status.fields["instanceCABundle"],
        json!({"missing": []}),
        "replaced whole"
    );
    let third = Pass::new(&spec).verdict(&second.status, all_ok(&spec));
    assert_eq!(
        third.status.fields, second.status.fields,
        "keys not named are kept"
    );
}

#[test]
fn error_keeps_the_previous_status_fields() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.status_fields
        .insert("url".to_owned(), json!("https://c.apps.example"));
    let before = Pass::new(&spec).verdict(&Status::default(), v).status;
    let d = Pass::new(&spec).error(&before, ErrorClass::ReconciliationFailed, "conflict");
    assert_eq!(d.status.fields, before.fields);
}

// Rule 10: Events.

#[test]
fn ready_turning_true_emits_one_normal_as_expected() {
    let spec = console();
    let v = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "RolloutInProgress", ""),
        ok("ExposureReady"),
    );
    let before = Pass::new(&spec).verdict(&Status::default(), v).status;
    let d = Pass::new(&spec).at(30).verdict(&before, all_ok(&spec));
    assert_eq!(event_reasons(&d), vec![(EventType::Normal, AS_EXPECTED)]);
}

#[test]
fn stalled_turning_true_emits_a_warning_with_the_stall_reason() {
    let spec = console();
    let mut v = console_verdict(
        bad("ConfigurationValid", "ConsoleRoleMissing", "missing"),
        ok("WorkloadReady"),
        ok("ExposureReady"),
    );
    v.stall = stall("ConsoleRoleMissing", "missing");
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert_eq!(
        event_reasons(&d),
        vec![(EventType::Warning, "ConsoleRoleMissing")]
    );
}

#[test]
fn aspect_turning_false_emits_a_warning_with_its_reason() {
    let spec = console();
    let v = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "ImagePullFailed", "no such tag"),
        ok("ExposureReady"),
    );
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert_eq!(
        event_reasons(&d),
        vec![(EventType::Warning, "ImagePullFailed")]
    );
    assert_eq!(d.events[0].note, "no such tag");
}

#[test]
fn quiet_reason_emits_no_warning() {
    let spec = console();
    let v = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "RolloutInProgress", "1 of 2"),
        ok("ExposureReady"),
    );
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert!(d.events.is_empty());
    let kspec = registry_kind();
    let v = verdict(vec![
        ok("SourceValid"),
        bad("ToolsDiscovered", "DiscoveryRunning", ""),
    ]);
    let d = Pass::new(&kspec).verdict(&converged(&kspec), v);
    assert!(d.events.is_empty(), "the kind's own quiet reason");
}

#[test]
fn new_reason_while_false_is_a_transition_and_warns() {
    let spec = console();
    let quiet = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "RolloutInProgress", ""),
        ok("ExposureReady"),
    );
    let before = Pass::new(&spec).verdict(&converged(&spec), quiet).status;
    let v = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "CrashLoopBackOff", ""),
        ok("ExposureReady"),
    );
    let d = Pass::new(&spec).verdict(&before, v);
    assert_eq!(warnings(&d), vec!["CrashLoopBackOff"]);
}

#[test]
fn message_change_alone_is_silent() {
    let spec = console();
    let v = |m: &str| {
        console_verdict(
            ok("ConfigurationValid"),
            bad("WorkloadReady", "CrashLoopBackOff", m),
            ok("ExposureReady"),
        )
    };
    let before = Pass::new(&spec)
        .verdict(&Status::default(), v("3 restarts"))
        .status;
    let d = Pass::new(&spec).at(60).verdict(&before, v("4 restarts"));
    assert!(d.changed);
    assert!(d.events.is_empty());
}

#[test]
fn error_class_is_reported_once_until_a_pass_succeeds() {
    let spec = console();
    let p = Pass::new(&spec);
    let first = p.error(
        &converged(&spec),
        ErrorClass::QuotaExceeded,
        "quota: pods=10",
    );
    assert_eq!(
        event_reasons(&first),
        vec![(EventType::Warning, "QuotaExceeded")]
    );
    let retry = p
        .at(10)
        .error(&first.status, ErrorClass::QuotaExceeded, "quota: pods=11");
    assert!(retry.changed, "the message moved");
    assert!(retry.events.is_empty(), "not per retry");
    let other = p
        .at(20)
        .error(&retry.status, ErrorClass::AdmissionDenied, "denied");
    assert_eq!(warnings(&other), vec!["AdmissionDenied"]);
    let success = p.at(30).verdict(&other.status, all_ok(&spec));
    let again = p
        .at(40)
        .error(&success.status, ErrorClass::AdmissionDenied, "denied");
    assert_eq!(
        warnings(&again),
        vec!["AdmissionDenied"],
        "reported again after a success"
    );
}

#[test]
fn once_per_class_means_a_b_a_reports_a_once() {
    let spec = console();
    let p = Pass::new(&spec);
    let a = p.error(&converged(&spec), ErrorClass::QuotaExceeded, "quota");
    let b = p
        .at(10)
        .after(&a.reported)
        .error(&a.status, ErrorClass::AdmissionDenied, "denied");
    assert_eq!(warnings(&b), vec!["AdmissionDenied"]);
    let a_again = p
        .at(20)
        .after(&b.reported)
        .error(&b.status, ErrorClass::QuotaExceeded, "quota");
    assert!(a_again.changed, "Ready says the class again");
    assert!(a_again.events.is_empty(), "{:?}", a_again.events);
    let success = p
        .at(30)
        .after(&a_again.reported)
        .verdict(&a_again.status, all_ok(&spec));
    assert_eq!(success.reported, Reported::default());
    let after = p.at(40).after(&success.reported).error(
        &success.status,
        ErrorClass::QuotaExceeded,
        "quota",
    );
    assert_eq!(warnings(&after), vec!["QuotaExceeded"]);
}

#[test]
fn a_class_reported_without_a_status_write_is_remembered() {
    // The error's status write was refused: the status still says what it
    // said before, and the Event was published all the same.
    let spec = console();
    let p = Pass::new(&spec);
    let before = converged(&spec);
    let refused = p.error(&before, ErrorClass::AdmissionDenied, "denied");
    assert_eq!(warnings(&refused), vec!["AdmissionDenied"]);
    let retry =
        p.at(10)
            .after(&refused.reported)
            .error(&before, ErrorClass::AdmissionDenied, "denied");
    assert!(retry.events.is_empty(), "{:?}", retry.events);
}

#[test]
fn reported_class_is_recognised_by_its_prefix_only() {
    let ready = |message: &str| Condition {
        type_: READY.to_owned(),
        status: False,
        reason: RECONCILE_ERROR.to_owned(),
        message: message.to_owned(),
        last_transition_time: rfc3339_seconds(t(0)),
        observed_generation: 1,
    };
    assert!(
        ErrorClass::GuestFailed.is_reported_by(&ready(&ErrorClass::GuestFailed.ready_message("x")))
    );
    assert!(!ErrorClass::GuestFailed.is_reported_by(&ready("GuestFailedX: x")));
    assert!(!ErrorClass::QuotaExceeded.is_reported_by(&ready("GuestFailed: QuotaExceeded: x")));
}

#[test]
fn one_warning_for_one_reason_on_several_conditions() {
    let spec = console();
    let m = "hostname outside .apps.example";
    let mut v = console_verdict(
        bad("ConfigurationValid", "HostnameNotAllowed", m),
        ok("WorkloadReady"),
        bad("ExposureReady", "HostnameNotAllowed", m),
    );
    v.stall = stall("HostnameNotAllowed", m);
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert_eq!(
        event_reasons(&d),
        vec![(EventType::Warning, "HostnameNotAllowed")]
    );
}

#[test]
fn negative_polarity_advisory_turning_true_is_a_warning() {
    let spec = registry_kind();
    let mut v = all_ok(&spec);
    v.advisory = vec![
        cond("Degraded", True, "ToolsMissing", "3 of 5"),
        cond("ContentDrift", True, "DigestMismatch", "edited"),
    ];
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert_eq!(warnings(&d), vec!["ToolsMissing", "DigestMismatch"]);
}

#[test]
fn kstatus_advisory_at_its_good_state_is_a_normal_with_its_reason() {
    // Seed 004: "Event type follows polarity. A condition arriving at its
    // bad state is a Warning and at its good state a Normal".
    let spec = registry_kind();
    let mut v = all_ok(&spec);
    v.advisory = vec![cond("Degraded", True, "ToolsMissing", "3 of 5")];
    let degraded = Pass::new(&spec).verdict(&converged(&spec), v);
    let mut v = all_ok(&spec);
    v.advisory = vec![cond("Degraded", False, "ToolsDiscoveredEvent", "5 of 5")];
    let d = Pass::new(&spec).at(10).verdict(&degraded.status, v);
    assert_eq!(
        event_reasons(&d),
        vec![(EventType::Normal, "ToolsDiscoveredEvent")]
    );
}

#[test]
fn kstatus_aspect_reaching_its_good_state_is_a_normal() {
    let spec = registry_kind();
    let failing = verdict(vec![
        ok("SourceValid"),
        bad("ToolsDiscovered", "DiscoveryFailed", "timeout"),
    ]);
    let failed = Pass::new(&spec).verdict(&converged(&spec), failing);
    assert_eq!(warnings(&failed), vec!["DiscoveryFailed"]);
    let d = Pass::new(&spec)
        .at(10)
        .verdict(&failed.status, all_ok(&spec));
    assert_eq!(event_reasons(&d), vec![(EventType::Normal, AS_EXPECTED)]);
}

#[test]
fn seed_000_advisory_conditions_raise_no_event() {
    // Seed 000's Events worth attention name Ready turning True, Stalled
    // turning True, an aspect turning False and error classes: nothing for
    // advisory conditions.
    let spec = console();
    let mut v = all_ok(&spec);
    v.advisory = vec![
        bad("InstanceCABundleComplete", "InstanceCAMissing", "db1"),
        bad("ExposureConfined", "ExposureOpen", "open"),
    ];
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert!(d.events.is_empty(), "{:?}", d.events);
}

#[test]
fn refused_hostname_with_the_policy_kept_is_one_warning() {
    // Seed 000, HostnameNotAllowed: "ExposureReady turns False with this
    // reason and status.url is cleared (one Warning for both conditions)".
    let spec = console();
    let m = "hostname outside .apps.example.com";
    let mut v = console_verdict(
        bad("ConfigurationValid", "HostnameNotAllowed", m),
        ok("WorkloadReady"),
        bad("ExposureReady", "HostnameNotAllowed", m),
    );
    v.stall = stall("HostnameNotAllowed", m);
    v.advisory = vec![cond(
        "ExposureConfined",
        Unknown,
        "ExposurePolicyKept",
        "kept",
    )];
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(
        event_reasons(&d),
        vec![(EventType::Warning, "HostnameNotAllowed")]
    );
}

#[test]
fn aspect_turning_true_or_unknown_is_silent() {
    let spec = console();
    let v = console_verdict(
        ok("ConfigurationValid"),
        unknown("WorkloadReady", RECONCILING_REASON),
        ok("ExposureReady"),
    );
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert!(d.events.is_empty(), "{:?}", d.events);
}

// Rule 11: the kind's own Events.

#[test]
fn kind_events_are_emitted_only_when_the_pass_changed_the_status() {
    let spec = console();
    let mut v = console_verdict(
        ok("ConfigurationValid"),
        bad("WorkloadReady", "RolloutInProgress", ""),
        ok("ExposureReady"),
    );
    v.events = vec![kind_event(EventType::Normal, "RolloutStarted", "hash 1a2b")];
    let first = Pass::new(&spec).verdict(&converged(&spec), v.clone());
    assert_eq!(
        event_reasons(&first),
        vec![(EventType::Normal, "RolloutStarted")]
    );
    let repeated = Pass::new(&spec).at(5).verdict(&first.status, v);
    assert!(!repeated.changed);
    assert!(repeated.events.is_empty());
}

#[test]
fn kind_events_are_deduplicated_within_a_pass() {
    let spec = console();
    let mut v = console_verdict(
        bad("ConfigurationValid", "ImageNotAllowed", "refused"),
        ok("WorkloadReady"),
        ok("ExposureReady"),
    );
    v.events = vec![
        kind_event(EventType::Normal, "RolloutStarted", "hash 1"),
        kind_event(EventType::Normal, "RolloutStarted", "hash 1"),
        kind_event(EventType::Normal, "RolloutStarted", "hash 2"),
        kind_event(
            EventType::Warning,
            "ImageNotAllowed",
            "same reason as the condition",
        ),
    ];
    let d = Pass::new(&spec).verdict(&converged(&spec), v);
    assert_eq!(
        d.events
            .iter()
            .map(|e| (e.reason.as_str(), e.note.as_str()))
            .collect::<Vec<_>>(),
        vec![
            ("ImageNotAllowed", "refused"),
            ("RolloutStarted", "hash 1"),
            ("RolloutStarted", "hash 2")
        ]
    );
}

// Rule 12: nothing changed, nothing said.

#[test]
fn repeated_outcome_changes_nothing_and_emits_nothing() {
    let spec = console();
    let mut v = console_verdict(
        bad("ConfigurationValid", "HostnameNotAllowed", "refused"),
        ok("WorkloadReady"),
        bad("ExposureReady", "HostnameNotAllowed", "refused"),
    );
    v.stall = stall("HostnameNotAllowed", "refused");
    let first = Pass::new(&spec).verdict(&Status::default(), v.clone());
    assert!(first.changed && !first.events.is_empty());
    let second = Pass::new(&spec).at(3600).verdict(&first.status, v);
    assert!(!second.changed);
    assert!(second.events.is_empty());
    assert_eq!(second.status, first.status);

    let e1 = Pass::new(&spec).error(&first.status, ErrorClass::GuestFailed, "trap");
    let e2 = Pass::new(&spec)
        .at(10)
        .error(&e1.status, ErrorClass::GuestFailed, "trap");
    assert!(!e2.changed && e2.events.is_empty());
}

#[test]
fn identical_input_gives_identical_output() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.advisory = vec![bad("ExposureConfined", "ExposureOpen", "open")];
    v.status_fields.insert("url".to_owned(), json!("https://c"));
    let before = Pass::new(&spec)
        .paused()
        .verdict(&Status::default(), verdict(vec![]))
        .status;
    let a = Pass::new(&spec).at(9).verdict(&before, v.clone());
    let b = Pass::new(&spec).at(9).verdict(&before, v);
    assert_eq!(a, b);
}

// Rule 13: requeue and stall.

#[test]
fn requeue_is_the_verdicts_outside_a_stall() {
    let spec = console();
    let mut v = all_ok(&spec);
    v.requeue_after_seconds = Some(600);
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(d.requeue_after_seconds, Some(600));
    assert!(!d.stalled);
}

#[test]
fn stall_requeues_at_its_recheck_and_says_stalled() {
    let spec = console();
    let mut v = console_verdict(
        bad("ConfigurationValid", "ConfigMapNotFound", "settings"),
        ok("WorkloadReady"),
        ok("ExposureReady"),
    );
    v.stall = stall("ConfigMapNotFound", "settings");
    let d = Pass::new(&spec).verdict(&Status::default(), v.clone());
    assert_eq!(d.requeue_after_seconds, Some(120));
    assert!(d.stalled);
    v.stall = stall("HostnameNotAllowed", "no recheck");
    let d = Pass::new(&spec).verdict(&Status::default(), v);
    assert_eq!(
        d.requeue_after_seconds, None,
        "a watched change resolves it"
    );
}

#[test]
fn stall_requeue_is_the_smaller_of_the_verdicts_and_the_recheck() {
    let spec = console();
    let mut v = console_verdict(
        bad("ConfigurationValid", "ExposurePolicyInvalid", "refused"),
        ok("WorkloadReady"),
        ok("ExposureReady"),
    );
    v.stall = stall("ExposurePolicyInvalid", "refused");
    v.requeue_after_seconds = Some(900);
    assert_eq!(
        Pass::new(&spec)
            .verdict(&Status::default(), v.clone())
            .requeue_after_seconds,
        Some(300)
    );
    v.requeue_after_seconds = Some(30);
    assert_eq!(
        Pass::new(&spec)
            .verdict(&Status::default(), v)
            .requeue_after_seconds,
        Some(30)
    );
}

#[test]
fn error_has_no_requeue_of_its_own_and_is_not_stalled() {
    let spec = console();
    let d = Pass::new(&spec).error(&Status::default(), ErrorClass::ReconciliationFailed, "x");
    assert_eq!((d.requeue_after_seconds, d.stalled), (None, false));
}

// NamespaceNotWatched: written once at start on an object of a namespace
// the host left out of its watch.

const LEFT_OUT: &str = "the operator left namespace team-b out of its watch: it may not list pods, secrets there; this status is no longer updated";

#[test]
fn not_watched_sets_ready_unknown_and_keeps_every_other_condition() {
    let spec = console();
    let before = converged(&spec);
    let d = not_watched(&spec, 2, &before, t(60), LEFT_OUT);
    assert!(d.changed);
    let ready = get(&d.status, READY);
    assert_eq!(
        (ready.status, ready.reason.as_str(), ready.message.as_str()),
        (Unknown, NAMESPACE_NOT_WATCHED, LEFT_OUT)
    );
    assert_eq!(ready.observed_generation, 2);
    assert_eq!(ready.last_transition_time, rfc3339_seconds(t(60)));
    assert_eq!(d.status.observed_generation, Some(2));
    for c in &before.conditions {
        if c.type_ != READY {
            assert_eq!(get(&d.status, &c.type_), c, "{} is kept as it was", c.type_);
        }
    }
    assert_eq!(types(&d.status), types(&before));
    assert_eq!(d.status.fields, before.fields);
    assert_eq!(
        event_reasons(&d),
        vec![(EventType::Warning, NAMESPACE_NOT_WATCHED)]
    );
    assert_eq!(d.events[0].note, LEFT_OUT);
    assert_eq!((d.requeue_after_seconds, d.stalled), (None, false));
}

#[test]
fn not_watched_again_writes_nothing_and_reports_nothing() {
    let spec = console();
    let first = not_watched(&spec, 1, &converged(&spec), t(60), LEFT_OUT);
    let again = not_watched(&spec, 1, &first.status, t(120), LEFT_OUT);
    assert!(!again.changed);
    assert!(again.events.is_empty());
    assert_eq!(again.status, first.status);
}

#[test]
fn not_watched_moves_ready_transition_time_only_when_its_status_moves() {
    let spec = console();
    // Ready already Unknown (paused): a new reason and message, the same
    // status: the time stays; the reason changed: one Warning.
    let initial = Pass::new(&spec)
        .paused()
        .verdict(&Status::default(), verdict(vec![]))
        .status;
    let d = not_watched(&spec, 1, &initial, t(60), LEFT_OUT);
    assert_eq!(
        get(&d.status, READY).last_transition_time,
        rfc3339_seconds(t(0))
    );
    assert_eq!(warnings(&d), vec![NAMESPACE_NOT_WATCHED]);
    // Other permissions missing on the next start: the message changes,
    // written, but the (status, reason) was reported already.
    let other = "the operator left namespace team-b out of its watch: it may not list pods there; this status is no longer updated";
    let d2 = not_watched(&spec, 1, &d.status, t(120), other);
    assert!(d2.changed);
    assert!(d2.events.is_empty());
    assert_eq!(get(&d2.status, READY).message, other);
}

#[test]
fn not_watched_on_a_new_object_initializes_the_conditions_it_always_carries() {
    let spec = console();
    let d = not_watched(&spec, 1, &Status::default(), t(0), LEFT_OUT);
    assert_eq!(sr(&d.status, READY), (Unknown, NAMESPACE_NOT_WATCHED));
    for a in &spec.aspects {
        assert_eq!(sr(&d.status, a), (Unknown, INITIALIZING));
    }
    assert_eq!(sr(&d.status, PROGRESSING), (Unknown, INITIALIZING));
    assert!(
        d.status.condition("ExposureConfined").is_none(),
        "advisory: only while a fact holds"
    );
    assert_eq!(warnings(&d), vec![NAMESPACE_NOT_WATCHED]);
}

#[test]
fn not_watched_message_is_bounded() {
    let spec = console();
    let long = "x".repeat(5000);
    let d = not_watched(&spec, 1, &Status::default(), t(0), &long);
    assert_eq!(get(&d.status, READY).message, bound(&long));
    assert!(d.events[0].note.len() <= MAX_MESSAGE_BYTES);
}
