//! The kind's static spec: names, aspects, the reason registry, stalls, reads, writes and the spec schema.

use reconciler_guest_sdk::spec::{
    across_namespaces, kind_ref, metadata_only, pause, reads, reads_optional, registry, stall,
    with_fields,
};
use reconciler_guest_sdk::{ConventionProfile, KindRef, KindSpec};

pub const GROUP: &str = "pgtoolbox.fyannk.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "PgAdmin";
pub const PLURAL: &str = "pgadmins";
/// The owner of the reasons only PgAdmins register.
pub const OWNER: &str = "pgadmin";

pub const CONFIGURATION_VALID: &str = "ConfigurationValid";
pub const WORKLOAD_READY: &str = "WorkloadReady";
pub const EXPOSURE_READY: &str = "ExposureReady";
pub const SERVERS_SYNCED: &str = "ServersSynced";
pub const EGRESS_CONFINED: &str = "PgAdminEgressConfined";

// ConfigurationValid=False: each a stall (seed: "Only some
// ConfigurationValid=False reasons stall the PgAdmin").
pub const IMAGE_NOT_ALLOWED: &str = "ImageNotAllowed";
pub const HOSTNAME_NOT_ALLOWED: &str = "HostnameNotAllowed";
pub const RESOURCE_NOT_OWNED: &str = "ResourceNotOwned";
pub const SECRET_NOT_FOUND: &str = "SecretNotFound";
pub const CONFIGURATION_INVALID: &str = "ConfigurationInvalid";

// ConfigurationValid=False that leave the PgAdmin running with the
// servers that resolve.
pub const CLUSTER_NOT_FOUND: &str = "ClusterNotFound";
pub const NO_CLUSTER_SELECTED: &str = "NoClusterSelected";
pub const POOLER_NOT_FOUND: &str = "PoolerNotFound";
pub const TOO_MANY_SERVERS: &str = "TooManyServers";
pub const POOLER_API_UNAVAILABLE: &str = "PoolerAPIUnavailable";
pub const DATABASE_ROLE_API_UNAVAILABLE: &str = "DatabaseRoleAPIUnavailable";
pub const GRANT_MISSING: &str = "GrantMissing";

// configDatabase problems: each a stall.
pub const DATABASE_API_UNAVAILABLE: &str = "DatabaseAPIUnavailable";
pub const PASSWORD_GENERATION_UNAVAILABLE: &str = "PasswordGenerationUnavailable";

// WorkloadReady=False of the PgAdmin's own.
pub const CONFIG_DATABASE_NOT_READY: &str = "ConfigDatabaseNotReady";
pub const UPGRADE_BACKUP_RUNNING: &str = "UpgradeBackupRunning";
pub const UPGRADE_BACKUP_FAILED: &str = "UpgradeBackupFailed";
// Events.
pub const UPGRADE_BACKUP_COMPLETED: &str = "UpgradeBackupCompleted";
pub const UPGRADE_BACKUP_SKIPPED: &str = "UpgradeBackupSkipped";
pub const ROLLOUT_STARTED: &str = "RolloutStarted";

/// How often a PasswordGenerationUnavailable stall is looked at again: an
/// upgrade of CloudNativePG's CRDs changes no object the PgAdmin reads.
pub const PASSWORD_GENERATION_RECHECK_SECONDS: u32 = 300;

// ServersSynced.
pub const REGISTRATION_RUNNING: &str = "RegistrationRunning";
pub const REGISTRATION_FAILED: &str = "RegistrationFailed";
// Events.
pub const REGISTRATION_STARTED: &str = "RegistrationStarted";
pub const SERVERS_REGISTERED: &str = "ServersRegistered";

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

/// The reasons that stall, as seed 000 lists them: ConfigurationValid's
/// (DatabaseRoleAPIUnavailable when configDatabase needs DatabaseRoles; as
/// a problem of the offered set it does not stall) and WorkloadReady's
/// UpgradeBackupFailed.
pub const STALLS: &[&str] = &[
    HOSTNAME_NOT_ALLOWED,
    IMAGE_NOT_ALLOWED,
    RESOURCE_NOT_OWNED,
    SECRET_NOT_FOUND,
    CONFIGURATION_INVALID,
    DATABASE_API_UNAVAILABLE,
    DATABASE_ROLE_API_UNAVAILABLE,
    PASSWORD_GENERATION_UNAVAILABLE,
    UPGRADE_BACKUP_FAILED,
];

/// The common reasons the kind registers: those it sets, then those seed
/// 000 registers and says no current reconciler sets (ScaledToZero,
/// GatewayNotFound, HostnameConflict).
const COMMON_USED: &[&str] = &[
    CONFIGURATION_INVALID,
    CLUSTER_NOT_FOUND,
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
    (NO_CLUSTER_SELECTED, "clusterSelector matches no Cluster."),
    (
        POOLER_NOT_FOUND,
        "A pooler:<name> endpoint names no Pooler of a registered Cluster.",
    ),
    (
        TOO_MANY_SERVERS,
        "The offered set exceeds the bound the credential files and the registration accept (64).",
    ),
    (
        REGISTRATION_RUNNING,
        "The registration Job for the current offered set is running.",
    ),
    (
        REGISTRATION_FAILED,
        "The registration Job for the current offered set failed.",
    ),
    (
        REGISTRATION_STARTED,
        "Event: a new registration Job started.",
    ),
    (
        SERVERS_REGISTERED,
        "Event: a new registration Job succeeded.",
    ),
    (
        DATABASE_ROLE_API_UNAVAILABLE,
        "The CloudNativePG DatabaseRole API is not readable, or not served while the spec needs it (configDatabase). CloudNativePG 1.30 and later serve DatabaseRole; an install whose CRDs lack it only means none is offered: the PgAdmin stays Ready.",
    ),
    (
        CONFIG_DATABASE_NOT_READY,
        "CloudNativePG has not applied the configDatabase role, its generated password or the database yet; pgAdmin has no Pod until it has.",
    ),
    (
        PASSWORD_GENERATION_UNAVAILABLE,
        "configDatabase needs CloudNativePG to generate the role's password (DatabaseRole spec.password, 1.31 and later).",
    ),
    (
        DATABASE_API_UNAVAILABLE,
        "The CloudNativePG Database API, which configDatabase needs, is not served or not readable.",
    ),
    (
        UPGRADE_BACKUP_RUNNING,
        "The pre-upgrade backup of the settings database runs.",
    ),
    (
        UPGRADE_BACKUP_FAILED,
        "The pre-upgrade backup of the settings database failed (the old image keeps running).",
    ),
    (
        UPGRADE_BACKUP_COMPLETED,
        "Event: the pre-upgrade backup of the settings database completed.",
    ),
    (
        UPGRADE_BACKUP_SKIPPED,
        "Warning Event: the pgtoolbox.fyannk.dev/skip-upgrade-backup annotation named the target image, and it replaced the old one with no backup.",
    ),
    (ROLLOUT_STARTED, "Event: a changed workload hash."),
    (
        POOLER_API_UNAVAILABLE,
        "The CloudNativePG Pooler API is not readable, or not served while the spec needs it (a pooler endpoint).",
    ),
    (
        GRANT_MISSING,
        "A crossNamespaceClusterRefs entry names a Cluster no PgAdminAccess of its namespace grants this PgAdmin.",
    ),
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

pub fn config_map_kind() -> KindRef {
    kind_ref("", "v1", "ConfigMap")
}

pub fn pvc_kind() -> KindRef {
    kind_ref("", "v1", "PersistentVolumeClaim")
}

pub fn job_kind() -> KindRef {
    kind_ref("batch", "v1", "Job")
}

pub fn cluster_kind() -> KindRef {
    kind_ref("postgresql.cnpg.io", "v1", "Cluster")
}

pub fn database_kind() -> KindRef {
    kind_ref("postgresql.cnpg.io", "v1", "Database")
}

pub fn pooler_kind() -> KindRef {
    kind_ref("postgresql.cnpg.io", "v1", "Pooler")
}

pub fn database_role_kind() -> KindRef {
    kind_ref("postgresql.cnpg.io", "v1", "DatabaseRole")
}

/// The grant of Clusters to PgAdmins of other namespaces (a kind no guest
/// serves: its CRD is `deploy/pgadminaccess-crd.yaml`).
pub fn pgadmin_access_kind() -> KindRef {
    kind_ref(GROUP, VERSION, "PgAdminAccess")
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
pub use reconciler_guest_sdk::exposure::kind_ref as exposure_kind;

/// Every kind the guest applies or deletes: the workload (Deployment,
/// Service, the data PersistentVolumeClaim), the exposure object of each
/// kind, the registration's ConfigMap and Jobs, the upgrade backup Jobs,
/// and the configDatabase's DatabaseRole and Database.
pub fn writes() -> Vec<KindRef> {
    vec![
        deployment_kind(),
        service_kind(),
        pvc_kind(),
        config_map_kind(),
        job_kind(),
        database_role_kind(),
        database_kind(),
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
            SERVERS_SYNCED.into(),
        ],
        advisory: vec![EGRESS_CONFINED.into()],
        reasons: registry(OWNER, COMMON_USED, OWNED),
        negative_polarity: vec![],
        quiet_reasons: vec![
            ROLLOUT_IN_PROGRESS.into(),
            POD_NOT_READY.into(),
            UPGRADE_BACKUP_RUNNING.into(),
            CONFIG_DATABASE_NOT_READY.into(),
        ],
        stalls: STALLS
            .iter()
            .map(|reason| {
                let recheck = (*reason == PASSWORD_GENERATION_UNAVAILABLE)
                    .then_some(PASSWORD_GENERATION_RECHECK_SECONDS);
                stall(reason, recheck)
            })
            .collect(),
        // What the PgAdmin parses of each kind (contract 0.6.0): the
        // pgAdmin container's image of its Deployment (the upgrade backup);
        // a Cluster's initdb database and owner; the Cluster a Pooler
        // serves; a DatabaseRole's login role and Cluster, and of its own
        // (configDatabase) the generated password and whether CloudNativePG
        // applied it; whether its Database is applied; what a PgAdminAccess
        // grants to whom. Of the rest, the metadata and the typed facts
        // (workload, secret, config-map, job, egress policies, node pod
        // CIDRs, exposure) only.
        reads: vec![
            with_fields(
                reads(deployment_kind()),
                [
                    "spec.template.spec.containers.name",
                    "spec.template.spec.containers.image",
                ],
            ),
            metadata_only(reads(kind_ref("", "v1", "Pod"))),
            metadata_only(reads(kind_ref("", "v1", "Secret"))),
            metadata_only(reads(config_map_kind())),
            metadata_only(reads(pvc_kind())),
            metadata_only(reads(job_kind())),
            // A Cluster of another namespace (crossNamespaceClusterRefs),
            // its Poolers and DatabaseRoles, and the grant of it there.
            with_fields(
                across_namespaces(reads_optional(cluster_kind())),
                [
                    "spec.bootstrap.initdb.database",
                    "spec.bootstrap.initdb.owner",
                ],
            ),
            with_fields(
                across_namespaces(reads_optional(pooler_kind())),
                ["spec.cluster.name"],
            ),
            with_fields(
                across_namespaces(reads_optional(database_role_kind())),
                [
                    "spec.cluster.name",
                    "spec.name",
                    "spec.login",
                    "spec.ensure",
                    "spec.password.generate",
                    "status.applied",
                    "status.passwordSecret.name",
                ],
            ),
            with_fields(
                across_namespaces(reads_optional(pgadmin_access_kind())),
                [
                    "spec.clusters.name",
                    "spec.pgAdmins.namespace",
                    "spec.pgAdmins.name",
                ],
            ),
            with_fields(reads_optional(database_kind()), ["status.applied"]),
            metadata_only(reads(network_policy_kind())),
            metadata_only(reads_optional(kind_ref("", "v1", "Node"))),
            metadata_only(reads_optional(route_kind())),
            metadata_only(reads(ingress_kind())),
            metadata_only(reads_optional(http_route_kind())),
        ],
        pause: pause(PAUSE_KEY, PAUSE_VALUE),
        spec_schema: Some(SPEC_SCHEMA.into()),
        printer_columns: vec![],
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
