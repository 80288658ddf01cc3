//! The kind's static spec: names, aspects, the reason registry, stalls, reads, writes and the spec schema.

use reconciler_guest_sdk::spec::{kind_ref, pause, reads, reads_optional, registry, stall};
use reconciler_guest_sdk::{ConventionProfile, ExposureKind, KindRef, KindSpec};

pub const GROUP: &str = "pgtoolbox.fyannk.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "PgAdmin";
pub const PLURAL: &str = "pgadmins";
/// The owner of the reasons only PgAdmins register.
pub const OWNER: &str = "pgadmin";

pub const CONFIGURATION_VALID: &str = "ConfigurationValid";
pub const WORKLOAD_READY: &str = "WorkloadReady";
pub const EXPOSURE_READY: &str = "ExposureReady";
pub const EGRESS_CONFINED: &str = "PgAdminEgressConfined";

// ConfigurationValid=False: each a stall (seed: "Only some
// ConfigurationValid=False reasons stall the PgAdmin").
pub const IMAGE_NOT_ALLOWED: &str = "ImageNotAllowed";
pub const HOSTNAME_NOT_ALLOWED: &str = "HostnameNotAllowed";
pub const RESOURCE_NOT_OWNED: &str = "ResourceNotOwned";
pub const SECRET_NOT_FOUND: &str = "SecretNotFound";
pub const CONFIGURATION_INVALID: &str = "ConfigurationInvalid";

// WorkloadReady=False: the Deployment's fact, copied.
pub const ROLLOUT_IN_PROGRESS: &str = "RolloutInProgress";
pub const ROLLOUT_STUCK: &str = "RolloutStuck";
pub const REPLICA_FAILURE: &str = "ReplicaFailure";
pub const SECRET_KEY_MISSING: &str = "SecretKeyMissing";
pub const CONFIG_MAP_NOT_FOUND: &str = "ConfigMapNotFound";
pub const POD_UNSCHEDULABLE: &str = "PodUnschedulable";
pub const IMAGE_PULL_FAILED: &str = "ImagePullFailed";
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";
pub const POD_NOT_READY: &str = "PodNotReady";
pub const SCALED_TO_ZERO: &str = "ScaledToZero";

// ExposureReady.
pub const NOT_REQUESTED: &str = "NotRequested";
pub const NOT_ADMITTED: &str = "NotAdmitted";
pub const NOT_ACCEPTED: &str = "NotAccepted";
pub const ROUTE_API_UNAVAILABLE: &str = "RouteAPIUnavailable";
pub const GATEWAY_API_UNAVAILABLE: &str = "GatewayAPIUnavailable";
pub const GATEWAY_NOT_FOUND: &str = "GatewayNotFound";
pub const HOSTNAME_CONFLICT: &str = "HostnameConflict";

// PgAdminEgressConfined.
pub const PGADMIN_NOT_RUNNING: &str = "PgAdminNotRunning";
pub const PGADMIN_EGRESS_OPEN: &str = "PgAdminEgressOpen";

/// The ConfigurationValid=False reasons that stall, as seed 000 lists them
/// (so far: the configDatabase and ServersSynced reasons come with them).
pub const STALLS: &[&str] = &[
    HOSTNAME_NOT_ALLOWED,
    IMAGE_NOT_ALLOWED,
    RESOURCE_NOT_OWNED,
    SECRET_NOT_FOUND,
    CONFIGURATION_INVALID,
];

/// The common reasons the kind registers: those it sets, then those seed
/// 000 registers and says no current reconciler sets (ScaledToZero,
/// GatewayNotFound, HostnameConflict).
const COMMON_USED: &[&str] = &[
    CONFIGURATION_INVALID,
    RESOURCE_NOT_OWNED,
    SECRET_NOT_FOUND,
    SECRET_KEY_MISSING,
    CONFIG_MAP_NOT_FOUND,
    ROLLOUT_IN_PROGRESS,
    ROLLOUT_STUCK,
    REPLICA_FAILURE,
    POD_UNSCHEDULABLE,
    IMAGE_PULL_FAILED,
    CRASH_LOOP_BACK_OFF,
    POD_NOT_READY,
    NOT_REQUESTED,
    NOT_ADMITTED,
    NOT_ACCEPTED,
    ROUTE_API_UNAVAILABLE,
    GATEWAY_API_UNAVAILABLE,
    IMAGE_NOT_ALLOWED,
    HOSTNAME_NOT_ALLOWED,
    SCALED_TO_ZERO,
    GATEWAY_NOT_FOUND,
    HOSTNAME_CONFLICT,
];

/// The reasons the `pgadmin` owner registers, with the seed's meanings.
const OWNED: &[(&str, &str)] = &[
    (
        PGADMIN_NOT_RUNNING,
        "pgAdmin has no Ready Pod yet; registration and the egress statement wait.",
    ),
    (PGADMIN_EGRESS_OPEN, "PgAdminEgressConfined=False."),
];

/// The pause annotation every pgtoolbox kind shares.
pub const PAUSE_KEY: &str = "pgtoolbox.fyannk.dev/reconcile";
pub const PAUSE_VALUE: &str = "skip";

pub fn deployment_kind() -> KindRef {
    kind_ref("apps", "v1", "Deployment")
}

pub fn service_kind() -> KindRef {
    kind_ref("", "v1", "Service")
}

pub fn network_policy_kind() -> KindRef {
    kind_ref("networking.k8s.io", "v1", "NetworkPolicy")
}

pub fn route_kind() -> KindRef {
    kind_ref("route.openshift.io", "v1", "Route")
}

pub fn ingress_kind() -> KindRef {
    kind_ref("networking.k8s.io", "v1", "Ingress")
}

pub fn http_route_kind() -> KindRef {
    kind_ref("gateway.networking.k8s.io", "v1", "HTTPRoute")
}

/// The API of an exposure kind.
pub fn exposure_kind(kind: ExposureKind) -> KindRef {
    match kind {
        ExposureKind::Route => route_kind(),
        ExposureKind::Ingress => ingress_kind(),
        ExposureKind::HttpRoute => http_route_kind(),
    }
}

/// Every kind the guest applies or deletes: the workload (Deployment,
/// Service) and the exposure object of each kind.
pub fn writes() -> Vec<KindRef> {
    vec![
        deployment_kind(),
        service_kind(),
        route_kind(),
        ingress_kind(),
        http_route_kind(),
    ]
}

/// The OpenAPI v3 schema of `spec` (see the README for every field).
pub const SPEC_SCHEMA: &str = include_str!("spec-schema.json");

pub fn describe() -> KindSpec {
    KindSpec {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: KIND.into(),
        plural: PLURAL.into(),
        namespaced: true,
        profile: ConventionProfile::Progressing,
        aspects: vec![
            CONFIGURATION_VALID.into(),
            WORKLOAD_READY.into(),
            EXPOSURE_READY.into(),
        ],
        advisory: vec![EGRESS_CONFINED.into()],
        reasons: registry(OWNER, COMMON_USED, OWNED),
        negative_polarity: vec![],
        quiet_reasons: vec![ROLLOUT_IN_PROGRESS.into(), POD_NOT_READY.into()],
        stalls: STALLS.iter().map(|reason| stall(reason, None)).collect(),
        reads: vec![
            reads(deployment_kind()),
            reads(kind_ref("", "v1", "Pod")),
            reads(kind_ref("", "v1", "Secret")),
            reads(network_policy_kind()),
            reads_optional(kind_ref("", "v1", "Node")),
            reads_optional(route_kind()),
            reads(ingress_kind()),
            reads_optional(http_route_kind()),
        ],
        pause: pause(PAUSE_KEY, PAUSE_VALUE),
        spec_schema: Some(SPEC_SCHEMA.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_json_and_every_stall_and_quiet_reason_is_registered() {
        let schema: serde_json::Value = serde_json::from_str(SPEC_SCHEMA).expect("JSON");
        assert_eq!(schema["type"], "object");
        let spec = describe();
        for reason in spec
            .stalls
            .iter()
            .map(|s| &s.reason)
            .chain(&spec.quiet_reasons)
        {
            assert!(spec.reasons.iter().any(|r| &r.name == reason), "{reason}");
        }
    }
}
