//! What the operator deletes: only what the request controls, by the UID it saw; never on a failed read; never what another object controls.

use pgaccessrequest_guest::PgAccessRequest;
use pgaccessrequest_guest::registry::*;
use reconciler_guest_sdk::mock::evaluation;
use reconciler_guest_sdk::testing::assert_deterministic;
use reconciler_guest_sdk::{ConditionStatus, Guest};
use serde_json::json;

use crate::common::*;

#[test]
fn a_labelled_role_binding_of_another_owner_is_named_and_never_deleted() {
    let theirs = role_binding(
        "dave-orders-copy",
        "2026-11-29T11:00:00Z",
        json!([user(DAVE)]),
        "pg-reader",
        Some("uid-other"),
    );
    let nobodys = role_binding(
        "dave-orders-manual",
        "2026-11-29T11:00:00Z",
        json!([user(DAVE)]),
        "pg-reader",
        None,
    );
    for status in [json!({}), approved_by("carol"), approved_by(DAVE)] {
        let world = World::at(NOW + 3_600)
            .with(theirs.clone())
            .with(nobodys.clone());
        let r = reconcile(request(status), &world);
        assert!(deleted(&r).is_empty(), "{r:?}");
        let message = &r.verdict.aspect(ROLE_BINDING_SYNCED).unwrap().message;
        assert!(
            message.contains(
                "RoleBinding dave-orders-copy (controlled by PgAccessRequest dave-orders)"
            ),
            "{message}"
        );
        assert!(
            message.contains("RoleBinding dave-orders-manual (controlled by no object)"),
            "{message}"
        );
    }
}

#[test]
fn a_failed_read_deletes_nothing_and_is_tried_again() {
    let world = World::at(NOW + 3_600).with(granted_binding("2026-11-29T11:58:00Z"));
    let facts = world.facts().failing("children", "RoleBinding");
    let r = PgAccessRequest::reconcile(&evaluation(request(approved_by("carol")), &[]), &facts);
    let c = r.verdict.aspect(ROLE_BINDING_SYNCED).unwrap();
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::Unknown, "Reconciling")
    );
    assert!(
        c.message
            .contains("could not read the request's RoleBindings"),
        "{c:?}"
    );
    assert!(r.changes.is_empty());
    assert_eq!(r.verdict.requeue_after_seconds, Some(30));
}

#[test]
fn the_exact_binding_is_kept_beside_a_drifted_one() {
    let edit = role_binding(
        "dave-orders-edit",
        "2026-11-29T11:58:00Z",
        json!([user(DAVE)]),
        "edit",
        Some(UID),
    );
    let world = World::at(NOW)
        .with(granted_binding("2026-11-29T11:58:00Z"))
        .with(edit);
    let r = reconcile(request(approved_by("carol")), &world);
    assert_eq!(deleted(&r), ["uid-dave-orders-edit"]);
}

#[test]
fn a_cluster_role_that_does_not_exist_is_named() {
    let mut world = World::at(NOW);
    world.cluster_role = false;
    let r = reconcile(request(json!({})), &world);
    let c = r.verdict.aspect(ROLE_BINDING_SYNCED).unwrap();
    assert_eq!(c.reason, AWAITING_DECISION);
    assert!(
        c.message
            .contains("ClusterRole pg-reader (spec.clusterRole) does not exist"),
        "{c:?}"
    );
}

#[test]
fn an_expiry_before_creation_expires_on_arrival() {
    let mut parent = request(json!({}));
    parent["spec"]["expiresAt"] = json!("2026-11-29T11:00:00Z");
    let r = reconcile(parent, &World::at(NOW));
    let c = r.verdict.aspect(ROLE_BINDING_SYNCED).unwrap();
    assert_eq!(c.reason, ACCESS_EXPIRED);
    assert!(
        c.message
            .contains("Expired on arrival: spec.expiresAt 2026-11-29T11:00:00Z"),
        "{c:?}"
    );
    assert_eq!(r.verdict.requeue_after_seconds, None);
}

#[test]
fn the_same_pass_gives_the_same_verdict() {
    let world = World::at(NOW).with(granted_binding("2026-11-29T11:59:30Z"));
    assert_deterministic(|| reconcile(request(json!({})), &world).verdict);
}
