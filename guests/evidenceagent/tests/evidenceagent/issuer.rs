//! ServingCertificateReady and CertificateIssued when the operator issues the serving certificate (the default), and the service CA path around a mode switch.

use evidenceagent_guest::registry::*;
use reconciler_guest_sdk::testing::{aspect, assert_as_expected, assert_condition};
use reconciler_guest_sdk::{ConditionStatus, EventType, Verdict};
use serde_json::json;

use crate::common::*;

fn expiring(world: &mut World, expiry: &str) {
    world.secret_annotations.insert(
        "a-serving-cert".into(),
        vec![("reconciler.dev/certificate-expiry".into(), expiry.into())],
    );
}

fn certificate_events(v: &Verdict) -> Vec<String> {
    v.events
        .iter()
        .inspect(|e| {
            assert_eq!(
                (e.type_, e.reason.as_str()),
                (EventType::Normal, CERTIFICATE_ISSUED)
            )
        })
        .map(|e| e.message.clone())
        .collect()
}

#[test]
fn the_operators_certificate_makes_a_healthy_agent_ready() {
    let v = run(parent(), OPERATOR, &World::operator());
    assert_as_expected(&v);
    assert_eq!(
        aspect(&v, SERVING_CERTIFICATE_READY).message,
        format!(
            "Secret a-serving-cert holds the serving certificate signed by the operator's CA (expires {EXPIRY})"
        )
    );
}

#[test]
fn unknown_while_the_operator_is_issuing_it() {
    let v = run(
        parent(),
        OPERATOR,
        &World::operator().without_secret("a-serving-cert"),
    );
    assert_condition(
        aspect(&v, SERVING_CERTIFICATE_READY),
        ConditionStatus::Unknown,
        "Reconciling",
        "the operator is issuing the serving certificate in Secret a-serving-cert",
    );
    assert!(v.stall.is_none());
    assert!(v.events.is_empty());
    assert!(v.fields().get("servingCertificate").is_none());
}

#[test]
fn a_secret_the_operator_did_not_issue_is_not_its_certificate() {
    let mut world = World::operator();
    world.secret_annotations.clear();
    let v = run(parent(), OPERATOR, &world);
    assert_condition(
        aspect(&v, SERVING_CERTIFICATE_READY),
        ConditionStatus::Unknown,
        "Reconciling",
        "no reconciler.dev/certificate-expiry annotation",
    );
    assert!(v.events.is_empty());
    let v = run(
        parent(),
        OPERATOR,
        &World::operator().with_secret("a-serving-cert", &["tls.crt"]),
    );
    assert_condition(
        aspect(&v, SERVING_CERTIFICATE_READY),
        ConditionStatus::Unknown,
        "Reconciling",
        "the Secret lacks tls.key",
    );
}

#[test]
fn certificate_issued_by_the_operator_once_then_on_each_renewal() {
    let mut world = World::operator();
    let first = run(parent(), OPERATOR, &world);
    assert_eq!(
        certificate_events(&first),
        [format!(
            "the operator issued the serving certificate in Secret a-serving-cert, valid until {EXPIRY}"
        )]
    );
    let recorded = first.fields()["servingCertificate"].clone();
    assert_eq!(
        recorded,
        json!({"secretName": "a-serving-cert", "uid": "uid-team-a-a-serving-cert", "expiry": EXPIRY})
    );

    let mut next = parent();
    next["status"] = json!({"servingCertificate": recorded});
    let again = run(next.clone(), OPERATOR, &world);
    assert!(again.events.is_empty(), "not repeated");

    expiring(&mut world, "2028-11-29T12:00:00Z");
    let renewed = run(next.clone(), OPERATOR, &world);
    assert_eq!(
        certificate_events(&renewed),
        [
            "the operator renewed the serving certificate in Secret a-serving-cert, valid until 2028-11-29T12:00:00Z"
        ]
    );
    assert_eq!(
        renewed.fields()["servingCertificate"]["uid"],
        "uid-team-a-a-serving-cert"
    );

    world
        .secret_uids
        .insert("a-serving-cert".into(), "uid-replaced".into());
    expiring(&mut world, EXPIRY);
    assert_eq!(
        certificate_events(&run(next, OPERATOR, &world)).len(),
        1,
        "a replaced Secret is a new certificate"
    );
}

#[test]
fn under_the_service_ca_the_operators_secret_is_not_issued_yet() {
    let mut world = World::operator();
    world.config_maps = vec![("a-service-ca".into(), vec!["service-ca.crt".into()])];
    let v = run(parent(), SETTINGS, &world);
    assert_condition(
        aspect(&v, SERVING_CERTIFICATE_READY),
        ConditionStatus::False,
        SERVICE_CA_PENDING,
        "the Secret there is the one the operator issued",
    );
    assert!(v.events.is_empty(), "the service CA issued nothing");
    assert!(v.fields().get("servingCertificate").is_none());
}
