//! ExposureReady: admission, the optional APIs, the fixed sentence for what may remain published, and status.publishedExposureKinds.

use pgtoolboxconsole_guest::registry::*;
use reconciler_guest_sdk::{Admission, Availability, ConditionStatus, ExposureKind};
use serde_json::{Value, json};

use crate::common::*;
use crate::reasons::{aspect, assert_condition};

const SENTENCE: &str = "the operator may not read Routes in team-b: a Route orders-console published before may remain; delete it by hand";

#[test]
fn not_admitted_and_not_accepted_copy_the_controllers_answer() {
    let mut world = World::healthy();
    world.exposures = vec![exposure_fact(
        ExposureKind::Route,
        HOST,
        Admission::Refused("HostAlreadyClaimed: route team-x/other claims it".into()),
    )];
    let v = pass(&world);
    assert_condition(
        aspect(&v, EXPOSURE_READY),
        ConditionStatus::False,
        NOT_ADMITTED,
        "HostAlreadyClaimed",
    );
    assert_eq!(v.fields()["url"], Value::Null);
    assert_eq!(v.fields()["publishedExposureKinds"], json!(["Route"]));

    world.exposures = vec![exposure_fact(
        ExposureKind::HttpRoute,
        HOST,
        Admission::Refused("NotAllowedByListeners".into()),
    )];
    let spec = json!({"exposure": {"type": "gateway", "hostname": HOST, "gateway": {"parentRef": {"name": "public", "namespace": "gateways"}}}});
    let v = run(parent_with(spec), SETTINGS, &world);
    assert_condition(
        aspect(&v, EXPOSURE_READY),
        ConditionStatus::False,
        NOT_ACCEPTED,
        "NotAllowedByListeners",
    );
}

#[test]
fn an_ingress_without_an_address_is_reconciling() {
    let mut world = World::healthy();
    world.exposures = vec![exposure_fact(
        ExposureKind::Ingress,
        HOST,
        Admission::Pending,
    )];
    let v = run(
        parent_with(json!({"exposure": {"type": "ingress", "hostname": HOST}})),
        SETTINGS,
        &world,
    );
    assert_condition(
        aspect(&v, EXPOSURE_READY),
        ConditionStatus::Unknown,
        "Reconciling",
        "no address in status.loadBalancer",
    );
    world.exposures.clear();
    let v = run(
        parent_with(json!({"exposure": {"type": "ingress", "hostname": HOST}})),
        SETTINGS,
        &world,
    );
    assert_condition(
        aspect(&v, EXPOSURE_READY),
        ConditionStatus::Unknown,
        "Reconciling",
        "Ingress orders-console is not observed yet",
    );
}

#[test]
fn route_api_unavailable_when_not_served_or_forbidden() {
    let v = pass(&World::healthy().kind(ExposureKind::Route, Availability::NotServed));
    assert_condition(
        aspect(&v, EXPOSURE_READY),
        ConditionStatus::False,
        ROUTE_API_UNAVAILABLE,
        "not served",
    );
    assert!(aspect(&v, EXPOSURE_READY).message.contains("team-b"));
    assert!(
        !aspect(&v, EXPOSURE_READY).message.contains("may remain"),
        "nothing remains of an API never served"
    );

    let v = pass(&World::healthy().kind(ExposureKind::Route, Availability::Forbidden));
    let c = aspect(&v, EXPOSURE_READY);
    assert_condition(
        c,
        ConditionStatus::False,
        ROUTE_API_UNAVAILABLE,
        "not readable in team-b",
    );
    assert!(c.message.ends_with(SENTENCE), "{}", c.message);
    assert_eq!(v.fields()["publishedExposureKinds"], json!(["Route"]));
}

#[test]
fn gateway_api_unavailable_names_the_namespace() {
    let spec = json!({"exposure": {"type": "gateway", "hostname": HOST, "gateway": {"parentRef": {"name": "public"}}}});
    let v = run(
        parent_with(spec),
        SETTINGS,
        &World::healthy().kind(ExposureKind::HttpRoute, Availability::Forbidden),
    );
    let c = aspect(&v, EXPOSURE_READY);
    assert_condition(c, ConditionStatus::False, GATEWAY_API_UNAVAILABLE, "team-b");
    assert!(
        c.message
            .contains("an HTTPRoute orders-console published before may remain"),
        "{}",
        c.message
    );
}

#[test]
fn the_sentence_is_appended_whatever_the_reason() {
    // The console moved to clusterIP; status records the Route it published.
    let world = World::healthy().kind(ExposureKind::Route, Availability::Forbidden);
    let p = with_status(
        parent_with(json!({})),
        json!({"publishedExposureKinds": ["Route"]}),
    );
    let v = run(p, &SETTINGS[..2], &world);
    let c = aspect(&v, EXPOSURE_READY);
    assert_condition(c, ConditionStatus::True, NOT_REQUESTED, SENTENCE);
    assert_eq!(
        v.fields()["publishedExposureKinds"],
        json!(["Route"]),
        "kept while it may remain"
    );

    // And on a stall.
    let p = with_status(
        parent_with(json!({"image": "docker.io/x/y:1"})),
        json!({"publishedExposureKinds": ["Route"]}),
    );
    let v = run(p, &SETTINGS[..2], &world);
    assert!(aspect(&v, EXPOSURE_READY).message.ends_with(SENTENCE));
}

#[test]
fn a_route_known_gone_is_no_longer_recorded() {
    let mut world = World::healthy();
    world.exposures.clear();
    let p = with_status(
        parent_with(json!({})),
        json!({"publishedExposureKinds": ["Route"]}),
    );
    let v = run(p, &SETTINGS[..2], &world);
    assert_eq!(v.fields()["publishedExposureKinds"], Value::Null);
    assert!(!aspect(&v, EXPOSURE_READY).message.contains("may remain"));
}

#[test]
fn a_route_of_another_hostname_is_not_the_console_yet() {
    let mut world = World::healthy();
    world.exposures = vec![exposure_fact(
        ExposureKind::Route,
        "old.apps.example.com",
        Admission::Admitted,
    )];
    let v = pass(&world);
    assert_condition(
        aspect(&v, EXPOSURE_READY),
        ConditionStatus::Unknown,
        "Reconciling",
        "publishes old.apps.example.com",
    );
    assert_eq!(v.fields()["url"], Value::Null);
}
