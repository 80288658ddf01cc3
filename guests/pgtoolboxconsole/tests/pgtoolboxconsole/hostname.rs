//! HostnameNotAllowed: checked first, paused or not; the exposure withdrawn and status.url cleared; both refusals named; the Unknown step once the hostname is allowed again.

use pgtoolboxconsole_guest::registry::*;
use reconciler_guest_sdk::ConditionStatus;
use serde_json::{Value, json};

use crate::common::*;
use crate::reasons::{aspect, assert_condition};

fn refused_host_parent() -> Value {
    parent_with(json!({"exposure": {"type": "route", "hostname": "orders.evil.io"}}))
}

fn refused_status() -> Value {
    json!({"conditions": [
        condition("Ready", "False", "HostnameNotAllowed"),
        condition("Stalled", "True", "HostnameNotAllowed"),
        condition("ConfigurationValid", "False", "HostnameNotAllowed"),
        condition("WorkloadReady", "True", "AsExpected"),
        condition("ExposureReady", "False", "HostnameNotAllowed"),
    ]})
}

#[test]
fn a_refused_hostname_stalls_withdraws_the_exposure_and_clears_the_url() {
    let v = run(refused_host_parent(), SETTINGS, &World::healthy());
    assert_condition(
        aspect(&v, CONFIGURATION_VALID),
        ConditionStatus::False,
        HOSTNAME_NOT_ALLOWED,
        "spec.exposure.hostname \"orders.evil.io\" is outside the operator's allowedHostSuffixes (.apps.example.com)",
    );
    assert_condition(
        aspect(&v, EXPOSURE_READY),
        ConditionStatus::False,
        HOSTNAME_NOT_ALLOWED,
        "Route orders-console is withdrawn and status.url cleared",
    );
    assert_eq!(v.stall.as_ref().unwrap().reason, HOSTNAME_NOT_ALLOWED);
    assert!(
        v.aspect(WORKLOAD_READY).is_none(),
        "not evaluated: the host keeps what it said, the workload stays as it was"
    );
    assert_eq!(v.fields()["url"], Value::Null);
}

#[test]
fn the_hostname_is_checked_before_everything_else() {
    let world = World::healthy().without_role("pgtoolbox-console");
    let mut p = refused_host_parent();
    p["spec"]["podLogs"] = json!("not a bool");
    let v = run(p, SETTINGS, &world);
    assert_eq!(v.stall.unwrap().reason, HOSTNAME_NOT_ALLOWED);
}

#[test]
fn the_message_names_both_refusals_when_the_image_is_refused_too() {
    let mut p = refused_host_parent();
    p["spec"]["image"] = json!("docker.io/someone/console:latest");
    let v = run(p, SETTINGS, &World::healthy());
    let m = &aspect(&v, CONFIGURATION_VALID).message;
    assert!(
        m.contains("orders.evil.io")
            && m.contains("ImageNotAllowed")
            && m.contains("docker.io/someone/console"),
        "{m}"
    );
    assert_eq!(&v.stall.as_ref().unwrap().message, m);
    let v = run(refused_host_parent(), &SETTINGS[1..], &World::healthy());
    let m = &aspect(&v, CONFIGURATION_VALID).message;
    assert!(m.contains("ConsoleImageRequired"), "{m}");
}

#[test]
fn no_host_suffix_configured_allows_no_hostname() {
    let v = run(parent(), &SETTINGS[..2], &World::healthy());
    assert_condition(
        aspect(&v, CONFIGURATION_VALID),
        ConditionStatus::False,
        HOSTNAME_NOT_ALLOWED,
        "no host suffix is configured, so the operator allows no hostname; set the operator's PgToolBoxConsole setting allowedHostSuffixes",
    );
}

#[test]
fn a_paused_console_with_a_refused_hostname_still_stalls() {
    let v = run_paused(refused_host_parent(), SETTINGS, &World::healthy());
    let types: Vec<&str> = v.aspects.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        types,
        [CONFIGURATION_VALID, EXPOSURE_READY],
        "WorkloadReady kept as it was"
    );
    assert_eq!(v.stall.as_ref().unwrap().reason, HOSTNAME_NOT_ALLOWED);
    assert_eq!(v.fields()["url"], Value::Null);
}

#[test]
fn once_allowed_the_conditions_that_said_it_are_unknown_for_one_pass() {
    let v = run(
        with_status(parent(), refused_status()),
        SETTINGS,
        &World::healthy(),
    );
    for type_ in [CONFIGURATION_VALID, EXPOSURE_READY] {
        assert_condition(
            aspect(&v, type_),
            ConditionStatus::Unknown,
            "Reconciling",
            "no longer refused",
        );
    }
    assert_eq!(aspect(&v, WORKLOAD_READY).status, ConditionStatus::True);
    assert!(v.stall.is_none());
    assert_eq!(v.requeue_after_seconds, Some(1));
    assert!(
        v.fields().get("url").is_none(),
        "not set before ExposureReady says it is admitted"
    );

    // The next pass says what holds now.
    let mut reconciling = refused_status();
    for c in reconciling["conditions"].as_array_mut().unwrap() {
        if c["reason"] == "HostnameNotAllowed" {
            c["status"] = json!("Unknown");
            c["reason"] = json!("Reconciling");
        }
    }
    let v = run(
        with_status(parent(), reconciling),
        SETTINGS,
        &World::healthy(),
    );
    assert_eq!(
        aspect(&v, CONFIGURATION_VALID).status,
        ConditionStatus::True
    );
    assert_eq!(v.fields()["url"], json!("https://orders.apps.example.com"));
}

#[test]
fn another_stall_never_leaves_the_old_refusal_on_show() {
    let mut p = with_status(parent(), refused_status());
    p["spec"]["image"] = json!("docker.io/someone/console:latest");
    let v = run(p.clone(), SETTINGS, &World::healthy());
    assert_condition(
        aspect(&v, CONFIGURATION_VALID),
        ConditionStatus::Unknown,
        "Reconciling",
        "no longer refused",
    );
    assert!(
        v.aspect(WORKLOAD_READY).is_none(),
        "not evaluated while ConfigurationValid is not known"
    );
    assert!(v.stall.is_none());
    p["status"] = json!({});
    assert_eq!(
        run(p, SETTINGS, &World::healthy()).stall.unwrap().reason,
        IMAGE_NOT_ALLOWED
    );
}

#[test]
fn a_paused_recovery_is_unknown_until_unpaused() {
    let v = run_paused(
        with_status(parent(), refused_status()),
        SETTINGS,
        &World::healthy(),
    );
    let types: Vec<&str> = v.aspects.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, [CONFIGURATION_VALID, EXPOSURE_READY]);
    for c in &v.aspects {
        assert_eq!(
            (c.status, c.reason.as_str()),
            (ConditionStatus::Unknown, "Reconciling")
        );
    }
    assert!(v.stall.is_none());
    assert_eq!(v.requeue_after_seconds, None);
}
