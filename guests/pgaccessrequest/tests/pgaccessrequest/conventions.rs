//! The kind's static API: names, aspects, reasons (frozen, held against reasons.golden), reads and writes, no pause, no stall.

use std::path::Path;

use pgaccessrequest_guest::PgAccessRequest;
use pgaccessrequest_guest::registry::*;
use reconciler_guest_sdk::Guest;
use reconciler_guest_sdk::testing::{assert_kind, assert_reads, assert_registry, reasons_golden};

#[test]
fn the_kind_and_its_aspects() {
    let spec = PgAccessRequest::describe();
    assert_kind(&spec, [GROUP, VERSION, KIND, PLURAL]);
    assert_eq!(spec.aspects, [CONFIGURATION_VALID, ROLE_BINDING_SYNCED]);
    assert!(spec.advisory.is_empty());
    assert!(spec.stalls.is_empty(), "a PgAccessRequest never stalls");
    assert!(spec.pause.is_none(), "taking a grant away is never paused");
    assert_registry(&spec, &[OWNER]);
}

#[test]
fn reads_and_writes() {
    let spec = PgAccessRequest::describe();
    assert_reads(
        &spec,
        &[
            ("postgresql.cnpg.io/v1/Cluster", true),
            ("rbac.authorization.k8s.io/v1/ClusterRole", false),
            ("rbac.authorization.k8s.io/v1/RoleBinding", false),
        ],
    );
    assert_eq!(PgAccessRequest::writes(), [role_binding_kind()]);
}

#[test]
fn reasons_are_frozen() {
    reasons_golden(
        &PgAccessRequest::describe(),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("reasons.golden"),
        "pgaccessrequest-guest",
    );
}

#[test]
fn every_seed_reason_is_registered() {
    let spec = PgAccessRequest::describe();
    for reason in [
        CLUSTER_NOT_FOUND,
        AWAITING_DECISION,
        ACCESS_GRANTED,
        ACCESS_DENIED,
        ACCESS_EXPIRED,
        ACCESS_REVOKED,
        ROLE_BINDING_ORPHANED,
        SELF_APPROVAL_REFUSED,
        ROLE_BINDING_MISSING,
        ROLE_BINDING_DRIFTED,
        ROLE_BINDING_DELETED,
    ] {
        assert!(spec.reasons.iter().any(|r| r.name == reason), "{reason}");
    }
}
