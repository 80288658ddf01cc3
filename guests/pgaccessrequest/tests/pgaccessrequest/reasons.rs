//! One test at least per reason the kind sets, each with a realistic trigger.

use pgaccessrequest_guest::registry::*;
use reconciler_guest_sdk::testing::{aspect, assert_condition};
use reconciler_guest_sdk::{ConditionStatus, EventType, Verdict};
use serde_json::json;

use crate::common::*;

fn synced(v: &Verdict) -> &reconciler_guest_sdk::Condition {
    aspect(v, ROLE_BINDING_SYNCED)
}

fn reasons(r: &reconciler_guest_sdk::Reconciliation) -> Vec<(EventType, String)> {
    events(r).into_iter().map(|(t, r, _)| (t, r)).collect()
}

#[test]
fn awaiting_decision_while_pending_requeued_at_expires_at() {
    let r = reconcile(request(json!({})), &World::at(NOW));
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::True,
        AWAITING_DECISION,
        "Pending: nothing is bound",
    );
    assert_condition(
        aspect(&r.verdict, CONFIGURATION_VALID),
        ConditionStatus::True,
        "AsExpected",
        "the grant covers every Cluster of namespace team-a",
    );
    assert_eq!(r.verdict.requeue_after_seconds, Some(3_600));
    assert_eq!(r.verdict.fields()["phase"], "Pending");
    assert!(r.changes.is_empty());
}

#[test]
fn access_granted_names_the_binding_and_the_approver() {
    let world = World::at(NOW).with(granted_binding("2026-11-29T11:58:00Z"));
    let r = reconcile(request(approved_by("carol")), &world);
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::True,
        ACCESS_GRANTED,
        "Approved by carol: RoleBinding dave-orders binds User dave@example.com",
    );
    assert_eq!(r.verdict.fields()["roleBindings"], json!([NAME]));
    assert!(r.changes.is_empty());
}

#[test]
fn access_denied_deletes_what_is_left_of_an_approval_in_flight() {
    let world = World::at(NOW).with(granted_binding("2026-11-29T11:59:59Z"));
    let status = json!({"decision": {"outcome": "Denied", "decidedBy": {"username": "erin"}}});
    let r = reconcile(request(status), &world);
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::True,
        ACCESS_DENIED,
        "Denied by erin",
    );
    assert_eq!(deleted(&r), ["uid-dave-orders"]);
    assert_eq!(
        r.verdict.fields()["deletedRoleBindings"][0]["cause"],
        ROLE_BINDING_ORPHANED
    );
    assert_eq!(r.verdict.requeue_after_seconds, None);
}

#[test]
fn access_expired_at_expires_at_deletes_and_reports_once() {
    let world = World::at(NOW + 3_600).with(granted_binding("2026-11-29T11:58:00Z"));
    let r = reconcile(request(approved_by("carol")), &world);
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::True,
        ACCESS_EXPIRED,
        "Expired at 2026-11-29T13:00:00Z",
    );
    assert_eq!(deleted(&r), ["uid-dave-orders"]);
    assert_eq!(
        reasons(&r),
        [
            (EventType::Normal, ROLE_BINDING_DELETED.to_owned()),
            (EventType::Normal, ACCESS_EXPIRED.to_owned())
        ]
    );
    // The status says Expired now: the same pass again reports no expiry.
    let mut status = approved_by("carol");
    status["phase"] = json!("Expired");
    let again = reconcile(request(status), &world);
    assert_eq!(
        reasons(&again),
        [(EventType::Normal, ROLE_BINDING_DELETED.to_owned())]
    );
    assert_eq!(
        again.verdict.fields(),
        r.verdict.fields(),
        "the same status"
    );
}

#[test]
fn access_revoked_deletes_by_uid() {
    let world = World::at(NOW).with(granted_binding("2026-11-29T11:58:00Z"));
    let mut status = approved_by("carol");
    status["revocation"] = json!({"revokedBy": {"username": "erin"}});
    let r = reconcile(request(status), &world);
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::True,
        ACCESS_REVOKED,
        "Revoked by erin",
    );
    assert_eq!(deleted(&r), ["uid-dave-orders"]);
    assert!(events(&r)[0].2.contains("the access was revoked by erin"));
}

#[test]
fn role_binding_missing_is_never_recreated() {
    let r = reconcile(request(approved_by("carol")), &World::at(NOW));
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::False,
        ROLE_BINDING_MISSING,
        "never recreates one; revoke and request again",
    );
    assert!(r.changes.is_empty(), "nothing applied, ever");
}

#[test]
fn role_binding_drifted_is_deleted_and_stays_the_reason_once_gone() {
    let drifted = role_binding(
        NAME,
        "2026-11-29T11:58:00Z",
        json!([user(DAVE), user("mallory")]),
        "pg-reader",
        Some(UID),
    );
    let r = reconcile(request(approved_by("carol")), &World::at(NOW).with(drifted));
    let c = synced(&r.verdict).clone();
    assert_condition(
        &c,
        ConditionStatus::False,
        ROLE_BINDING_DRIFTED,
        "User dave@example.com, User mallory to ClusterRole pg-reader instead of",
    );
    assert_eq!(deleted(&r), ["uid-dave-orders"]);
    let mut status = approved_by("carol");
    status["conditions"] = json!([{"type": ROLE_BINDING_SYNCED, "status": "False", "reason": ROLE_BINDING_DRIFTED, "message": c.message}]);
    let gone = reconcile(request(status), &World::at(NOW + 1));
    assert_eq!(
        synced(&gone.verdict),
        &c,
        "drifted, not missing: the cause is known"
    );
}

#[test]
fn role_binding_orphaned_after_the_grace_and_kept_inside_it() {
    let young = World::at(NOW).with(granted_binding("2026-11-29T11:59:30Z"));
    let r = reconcile(request(json!({})), &young);
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::Unknown,
        "Reconciling",
        "an approval in flight, kept until 2026-11-29T12:00:30Z",
    );
    assert!(r.changes.is_empty(), "younger than the grace: kept");
    assert_eq!(
        r.verdict.requeue_after_seconds,
        Some(30),
        "at the end of the grace, exactly"
    );
    let old = World::at(NOW + 30).with(granted_binding("2026-11-29T11:59:30Z"));
    let r = reconcile(request(json!({})), &old);
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::True,
        ROLE_BINDING_ORPHANED,
        "no approval was recorded within the 60 s grace",
    );
    assert_eq!(deleted(&r), ["uid-dave-orders"]);
}

#[test]
fn self_approval_refused_revokes_with_a_warning() {
    let world = World::at(NOW).with(granted_binding("2026-11-29T11:58:00Z"));
    let r = reconcile(request(approved_by(DAVE)), &world);
    assert_condition(
        synced(&r.verdict),
        ConditionStatus::True,
        SELF_APPROVAL_REFUSED,
        "four eyes",
    );
    assert_eq!(r.verdict.fields()["phase"], "Revoked");
    assert_eq!(deleted(&r), ["uid-dave-orders"]);
    assert_eq!(
        reasons(&r),
        [
            (EventType::Normal, ROLE_BINDING_DELETED.to_owned()),
            (EventType::Warning, SELF_APPROVAL_REFUSED.to_owned())
        ]
    );
}

#[test]
fn cluster_not_found_is_reported_and_the_grant_still_expires() {
    let mut world = World::at(NOW + 3_600).with(granted_binding("2026-11-29T11:58:00Z"));
    world.cluster = false;
    let r = reconcile(request(approved_by("carol")), &world);
    assert_condition(
        aspect(&r.verdict, CONFIGURATION_VALID),
        ConditionStatus::False,
        CLUSTER_NOT_FOUND,
        "spec.cluster.name orders names no Cluster in namespace team-a",
    );
    assert!(r.verdict.stall.is_none());
    assert_eq!(synced(&r.verdict).reason, ACCESS_EXPIRED);
    assert_eq!(deleted(&r), ["uid-dave-orders"]);
}
