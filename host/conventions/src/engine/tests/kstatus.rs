//! Seed 004's rules of the kstatus profile, one test per sentence: when
//! Reconciling is True, what a paused object says it observed, and the
//! negative-polarity registry.

use super::*;

/// A settled failure: SourceValid True, ToolsDiscovered False with a
/// reason that is not quiet.
fn settled_failure() -> Verdict {
    verdict(vec![
        ok("SourceValid"),
        bad("ToolsDiscovered", "DiscoveryFailed", "the index is empty"),
    ])
}

/// Seed 004: "Reconciling is True while the controller is still working
/// toward the observed generation. It differs from Ready=False, which
/// means settled and broken."
#[test]
fn kstatus_reconciling_is_false_for_a_settled_failure_that_ready_reports() {
    let spec = registry_kind();
    let d = Pass::new(&spec).verdict(&Status::default(), settled_failure());
    assert_eq!(sr(&d.status, READY), (False, "DiscoveryFailed"));
    assert_eq!(sr(&d.status, RECONCILING), (False, "DiscoveryFailed"));
    assert_eq!(sr(&d.status, STALLED), (False, AS_EXPECTED));
    assert!(
        get(&d.status, RECONCILING)
            .message
            .contains("ToolsDiscovered is False (DiscoveryFailed)")
    );
    assert_eq!(d.status.observed_generation, Some(1));
    assert_eq!(warnings(&d), ["DiscoveryFailed"], "one Warning, not two");
}

/// Seed 004: "Reconciling is True while the controller is still working
/// toward the observed generation": an aspect not determined yet, or on
/// its way (a quiet reason), is work in progress.
#[test]
fn kstatus_reconciling_is_true_while_work_toward_the_generation_goes_on() {
    let spec = registry_kind();
    for v in [
        verdict(vec![
            ok("SourceValid"),
            bad("ToolsDiscovered", "DiscoveryRunning", "2 of 5 tools listed"),
        ]),
        verdict(vec![
            ok("SourceValid"),
            unknown("ToolsDiscovered", "DiscoveryRunning"),
        ]),
    ] {
        let d = Pass::new(&spec).verdict(&Status::default(), v);
        assert_eq!(sr(&d.status, RECONCILING), (True, RECONCILING_REASON));
        assert_eq!(sr(&d.status, STALLED), (False, AS_EXPECTED));
        assert_ne!(sr(&d.status, READY).0, True);
        assert!(warnings(&d).is_empty(), "a quiet reason does not warn");
    }
}

/// From work in progress to a settled failure and back to converged: only
/// the settled failure is Reconciling False with a reason other than
/// AsExpected, and Reconciling itself never raises an Event.
#[test]
fn kstatus_reconciling_follows_the_work_not_the_failure() {
    let spec = registry_kind();
    let working = Pass::new(&spec).verdict(
        &Status::default(),
        verdict(vec![
            ok("SourceValid"),
            unknown("ToolsDiscovered", "DiscoveryRunning"),
        ]),
    );
    let failed = Pass::new(&spec)
        .at(10)
        .verdict(&working.status, settled_failure());
    assert_eq!(sr(&failed.status, RECONCILING), (False, "DiscoveryFailed"));
    assert_eq!(
        event_reasons(&failed),
        [(EventType::Warning, "DiscoveryFailed")]
    );
    let done = Pass::new(&spec)
        .at(20)
        .verdict(&failed.status, all_ok(&spec));
    assert_eq!(sr(&done.status, RECONCILING), (False, AS_EXPECTED));
    assert_eq!(sr(&done.status, READY), (True, AS_EXPECTED));
    assert!(
        done.events.iter().all(|e| e.reason != RECONCILING_REASON),
        "{:?}",
        done.events
    );
}

/// An error is retried with backoff: the controller still works toward the
/// generation, so Reconciling stays True even after a settled failure.
#[test]
fn kstatus_reconciling_is_true_while_an_error_is_retried() {
    let spec = registry_kind();
    let failed = Pass::new(&spec).verdict(&Status::default(), settled_failure());
    let d = Pass::new(&spec).at(10).error(
        &failed.status,
        ErrorClass::ReconciliationFailed,
        "the API server is unavailable",
    );
    assert_eq!(sr(&d.status, READY), (False, RECONCILE_ERROR));
    assert_eq!(sr(&d.status, RECONCILING), (True, RECONCILING_REASON));
}

/// Seed 004: observedGeneration is "the metadata.generation it was
/// computed against". A paused kstatus object does not advance
/// `status.observedGeneration`: a spec changed while paused reads as not
/// observed (kstatus: InProgress) until the pause is lifted.
#[test]
fn kstatus_paused_does_not_advance_observed_generation() {
    let spec = registry_kind();
    let converged = converged(&spec);
    assert_eq!(converged.observed_generation, Some(1));
    let paused = Pass::new(&spec)
        .generation(2)
        .paused()
        .verdict(&converged, Verdict::default());
    assert_eq!(paused.status.observed_generation, Some(1));
    assert_eq!(sr(&paused.status, READY), (Unknown, RECONCILIATION_PAUSED));
    assert_eq!(
        sr(&paused.status, RECONCILING),
        (False, RECONCILIATION_PAUSED)
    );
    let error = Pass::new(&spec).generation(2).paused().error(
        &paused.status,
        ErrorClass::ReconciliationFailed,
        "the API server is unavailable",
    );
    assert_eq!(error.status.observed_generation, Some(1));
    let first_touch = Pass::new(&spec)
        .paused()
        .verdict(&Status::default(), Verdict::default());
    assert_eq!(first_touch.status.observed_generation, None);
    let resumed = Pass::new(&spec)
        .generation(2)
        .at(30)
        .verdict(&paused.status, all_ok(&spec));
    assert_eq!(resumed.status.observed_generation, Some(2));
}

/// The seed-000 profile is not seed 004's: its paused object still says
/// it observed the current generation.
#[test]
fn progressing_paused_still_advances_observed_generation() {
    let spec = console();
    let d = Pass::new(&spec)
        .generation(2)
        .paused()
        .verdict(&converged(&spec), Verdict::default());
    assert_eq!(d.status.observed_generation, Some(2));
}

/// Seed 004: "Superseded, a newer version has been published on the
/// channel" is one of the six types that "mean trouble when True"; "a
/// condition arriving at its bad state is a Warning and at its good state
/// a Normal", without the kind declaring its polarity.
#[test]
fn kstatus_a_registered_negative_type_warns_on_true_without_a_declaration() {
    let mut spec = registry_kind();
    spec.advisory.push("Superseded".to_owned());
    spec.negative_polarity.clear();
    let mut v = all_ok(&spec);
    v.advisory = vec![cond("Superseded", True, "ToolsMissing", "v2 is out")];
    let superseded = Pass::new(&spec).verdict(&converged(&spec), v);
    assert_eq!(warnings(&superseded), ["ToolsMissing"]);
    assert_eq!(sr(&superseded.status, READY), (True, AS_EXPECTED));
    let mut v = all_ok(&spec);
    v.advisory = vec![cond("Superseded", False, AS_EXPECTED, "")];
    let current = Pass::new(&spec).at(10).verdict(&superseded.status, v);
    assert_eq!(event_reasons(&current), [(EventType::Normal, AS_EXPECTED)]);
}
