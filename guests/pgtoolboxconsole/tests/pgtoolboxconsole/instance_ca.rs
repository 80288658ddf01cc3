//! InstanceCABundleComplete: present only while the operator mirrors the bundle; each missing CA named; a bundle ConfigMap of someone else.

use pgtoolboxconsole_guest::registry::*;
use reconciler_guest_sdk::ConditionStatus;
use serde_json::{Value, json};

use crate::common::*;

fn selecting(team: &str) -> Value {
    let mut spec = route_spec();
    spec["clusterSelector"] = json!({"matchLabels": {"team": team}});
    parent_with(spec)
}

#[test]
fn complete_when_every_selected_cluster_ca_is_in() {
    let mut world = World::healthy();
    world.clusters = vec![
        cluster("pg-a", "b"),
        cluster("pg-b", "b"),
        cluster("other", "c"),
    ];
    world.certificates = vec![ca("pg-a-ca", "aa"), ca("pg-b-ca", "bb")];
    let v = run(selecting("b"), SETTINGS, &world);
    let c = v.advisory_of(INSTANCE_CA_BUNDLE_COMPLETE).expect("present");
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::True, "AsExpected")
    );
    assert!(
        c.message.contains("every selected Cluster (2)"),
        "{}",
        c.message
    );
    assert_eq!(v.fields()["instanceCABundle"], Value::Null);
}

#[test]
fn missing_cas_are_named_with_their_reason() {
    let mut world = World::healthy().with_secret("pg-b-ca", &["tls.crt"]);
    world.clusters = vec![cluster("pg-a", "b"), cluster("pg-b", "b")];
    let v = run(selecting("b"), SETTINGS, &world);
    let c = v.advisory_of(INSTANCE_CA_BUNDLE_COMPLETE).expect("present");
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::False, INSTANCE_CA_MISSING)
    );
    assert!(
        c.message
            .contains("SecretNotFound (its CA Secret does not exist): pg-a (pg-a-ca)"),
        "{}",
        c.message
    );
    assert!(
        c.message
            .contains("SecretKeyMissing (a Secret without ca.crt): pg-b (pg-b-ca)"),
        "{}",
        c.message
    );
    assert_eq!(
        v.fields()["instanceCABundle"],
        json!({"missing": [
            {"cluster": "pg-a", "secret": "pg-a-ca", "reason": "SecretNotFound"},
            {"cluster": "pg-b", "secret": "pg-b-ca", "reason": "SecretKeyMissing"},
        ]})
    );
    assert!(v.stall.is_none(), "the console keeps running");
    assert_eq!(
        v.aspect(CONFIGURATION_VALID).unwrap().status,
        ConditionStatus::True
    );
}

#[test]
fn a_bundle_configmap_of_someone_else_is_resource_not_owned() {
    let mut world = World::healthy().with_config_map("orders-instance-ca");
    world
        .controllers
        .insert("orders-instance-ca".into(), someone_else());
    let v = pass(&world);
    let c = v.advisory_of(INSTANCE_CA_BUNDLE_COMPLETE).expect("present");
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::False, RESOURCE_NOT_OWNED)
    );
    assert!(c.message.contains(
        "ConfigMap orders-instance-ca exists and is controlled by Deployment legacy-console"
    ));
    assert!(v.stall.is_none(), "advisory: no stall");
}

#[test]
fn absent_while_the_user_names_the_bundle() {
    let mut spec = route_spec();
    spec["instanceCABundleRef"] = json!({"name": "cas"});
    let v = run(
        parent_with(spec),
        SETTINGS,
        &World::healthy().with_config_map("cas"),
    );
    assert!(v.advisory_of(INSTANCE_CA_BUNDLE_COMPLETE).is_none());
    assert!(
        v.fields()
            .as_object()
            .unwrap()
            .contains_key("instanceCABundle")
    );
    assert_eq!(v.fields()["instanceCABundle"], Value::Null);
}

#[test]
fn kept_as_it_was_while_stalled() {
    let mut p = selecting("b");
    p["spec"]["image"] = json!("docker.io/x/y:1");
    let v = run(p.clone(), SETTINGS, &World::healthy());
    assert!(
        v.advisory_of(INSTANCE_CA_BUNDLE_COMPLETE).is_none(),
        "nothing said before"
    );
    let p = with_status(
        p,
        json!({"conditions": [condition("InstanceCABundleComplete", "True", "AsExpected")]}),
    );
    let v = run(p, SETTINGS, &World::healthy());
    assert_eq!(
        v.advisory_of(INSTANCE_CA_BUNDLE_COMPLETE).unwrap().message,
        "before"
    );
}

#[test]
fn a_failed_certificate_read_is_unknown_and_retried() {
    let mut world = World::healthy();
    world.clusters = vec![cluster("pg-a", "b")];
    world
        .failing
        .push(("certificates".into(), "pg-a-ca".into()));
    let v = run(selecting("b"), SETTINGS, &world);
    let c = v.advisory_of(INSTANCE_CA_BUNDLE_COMPLETE).unwrap();
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::Unknown, "Reconciling")
    );
    assert_eq!(v.requeue_after_seconds, Some(30));
}
