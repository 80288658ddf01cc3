//! The kind's static spec: names, aspects, the reason registry, stalls, reads and writes.

use reconciler_guest_sdk::spec::{
    self, Registry, kind_ref, metadata_only, pause, reads, reads_optional, stalls, with_fields,
};
use reconciler_guest_sdk::{ConventionProfile, KindRef, KindSpec};

pub const GROUP: &str = "pgtoolbox.fyannk.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "EvidenceAgent";
/// The owner of the reasons only this kind registers.
pub const OWNER: &str = "evidenceagent";

pub const CONFIGURATION_VALID: &str = "ConfigurationValid";
pub const SERVING_CERTIFICATE_READY: &str = "ServingCertificateReady";
pub const WORKLOAD_READY: &str = "WorkloadReady";

pub const CONFIGURATION_INVALID: &str = "ConfigurationInvalid";
pub const CLUSTER_NOT_FOUND: &str = "ClusterNotFound";
pub const BARMAN_PLUGIN_NOT_CONFIGURED: &str = "BarmanPluginNotConfigured";
pub const OBJECT_STORE_NOT_FOUND: &str = "ObjectStoreNotFound";
pub const OBJECT_STORE_API_UNAVAILABLE: &str = "ObjectStoreAPIUnavailable";
pub const UNSUPPORTED_OBJECT_STORE: &str = "UnsupportedObjectStore";
pub const DESTINATION_INVALID: &str = "DestinationInvalid";
pub const REGION_REQUIRED: &str = "RegionRequired";
pub const IMAGE_REQUIRED: &str = "ImageRequired";
pub const IMAGE_NOT_ALLOWED: &str = "ImageNotAllowed";
pub const RESOURCE_NOT_OWNED: &str = "ResourceNotOwned";
pub const SERVICE_CA_PENDING: &str = "ServiceCAPending";
pub const CERTIFICATE_ISSUED: &str = "CertificateIssued";
pub const SECRET_NOT_FOUND: &str = "SecretNotFound";
pub const SECRET_KEY_MISSING: &str = "SecretKeyMissing";
pub const CONFIG_MAP_NOT_FOUND: &str = "ConfigMapNotFound";
pub const ROLLOUT_IN_PROGRESS: &str = "RolloutInProgress";
pub const ROLLOUT_STUCK: &str = "RolloutStuck";
pub const REPLICA_FAILURE: &str = "ReplicaFailure";
pub const POD_UNSCHEDULABLE: &str = "PodUnschedulable";
pub const IMAGE_PULL_FAILED: &str = "ImagePullFailed";
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";
pub const POD_NOT_READY: &str = "PodNotReady";
pub const SCALED_TO_ZERO: &str = "ScaledToZero";

/// Every ConfigurationValid=False reason: each one stalls the agent.
pub const CONFIGURATION_REASONS: &[&str] = &[
    CONFIGURATION_INVALID,
    IMAGE_REQUIRED,
    IMAGE_NOT_ALLOWED,
    CLUSTER_NOT_FOUND,
    BARMAN_PLUGIN_NOT_CONFIGURED,
    OBJECT_STORE_API_UNAVAILABLE,
    OBJECT_STORE_NOT_FOUND,
    DESTINATION_INVALID,
    UNSUPPORTED_OBJECT_STORE,
    REGION_REQUIRED,
    RESOURCE_NOT_OWNED,
];

/// The common reasons the kind registers (the host registers its own):
/// those it sets itself, then ScaledToZero, which seed 000 registers for
/// every kind ("common reasons are shared by every kind") and says "no
/// current reconciler sets". WorkloadReady's reasons from the SDK's
/// workload helper (RolloutInProgress, CrashLoopBackOff ...) are its own
/// list, `workload::REASONS`, added in `describe`.
const COMMON_USED: &[&str] = &[
    CONFIGURATION_INVALID,
    CLUSTER_NOT_FOUND,
    IMAGE_NOT_ALLOWED,
    RESOURCE_NOT_OWNED,
    SECRET_NOT_FOUND,
    SECRET_KEY_MISSING,
    SCALED_TO_ZERO,
];

/// The reasons the kind owns, with their meanings.
const OWNED: &[(&str, &str)] = &[
    (
        BARMAN_PLUGIN_NOT_CONFIGURED,
        "The Cluster does not archive with the Barman Cloud plugin: no enabled spec.plugins entry barman-cloud.cloudnative-pg.io naming an ObjectStore in parameters.barmanObjectName.",
    ),
    (
        OBJECT_STORE_NOT_FOUND,
        "The ObjectStore the Cluster's Barman Cloud plugin names does not exist in the namespace.",
    ),
    (
        OBJECT_STORE_API_UNAVAILABLE,
        "The Barman Cloud plugin's ObjectStore API (barmancloud.cnpg.io/v1) is not served, or the operator may not read it in the namespace.",
    ),
    (
        UNSUPPORTED_OBJECT_STORE,
        "The ObjectStore is outside the supported profile: ambient credentials (IAM role, Azure AD, default Azure credentials, GKE environment) or none, or an Azure endpoint other than <account>.blob.core.windows.net.",
    ),
    (
        DESTINATION_INVALID,
        "The ObjectStore's destinationPath or endpointURL is not a valid location for its provider (s3://<bucket>, gs://<bucket>, https://<account>.blob.core.windows.net/<container>), or its credentials are for another provider.",
    ),
    (
        REGION_REQUIRED,
        "The ObjectStore stores in AWS S3 without s3Credentials.region: the agent signs its requests for one region and does not discover it.",
    ),
    (
        IMAGE_REQUIRED,
        "No image can be chosen: spec.image is not set and the operator has no defaultImage.",
    ),
    (
        SERVICE_CA_PENDING,
        "The OpenShift service CA has not issued the serving certificate or injected the CA bundle yet.",
    ),
    (
        CERTIFICATE_ISSUED,
        "Event: a serving certificate was issued or renewed.",
    ),
];

/// The pause annotation every pgtoolbox kind shares.
pub const PAUSE_KEY: &str = "pgtoolbox.fyannk.dev/reconcile";
pub const PAUSE_VALUE: &str = "skip";

pub fn cluster_kind() -> KindRef {
    kind_ref("postgresql.cnpg.io", "v1", "Cluster")
}

pub fn object_store_kind() -> KindRef {
    kind_ref("barmancloud.cnpg.io", "v1", "ObjectStore")
}

pub fn service_kind() -> KindRef {
    kind_ref("", "v1", "Service")
}

pub fn deployment_kind() -> KindRef {
    kind_ref("apps", "v1", "Deployment")
}

pub fn secret_kind() -> KindRef {
    kind_ref("", "v1", "Secret")
}

pub fn config_map_kind() -> KindRef {
    kind_ref("", "v1", "ConfigMap")
}

/// The kinds the guest applies and deletes.
pub fn writes() -> Vec<KindRef> {
    vec![
        deployment_kind(),
        service_kind(),
        config_map_kind(),
        secret_kind(),
    ]
}

pub fn describe() -> KindSpec {
    KindSpec {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: KIND.into(),
        plural: "evidenceagents".into(),
        namespaced: true,
        profile: ConventionProfile::Progressing,
        aspects: vec![
            CONFIGURATION_VALID.into(),
            SERVING_CERTIFICATE_READY.into(),
            WORKLOAD_READY.into(),
        ],
        advisory: vec![],
        reasons: Registry::new(OWNER)
            .common(COMMON_USED)
            .common(reconciler_guest_sdk::workload::REASONS)
            .owned(OWNED)
            .build(),
        negative_polarity: vec![],
        quiet_reasons: vec![SERVICE_CA_PENDING.into()],
        stalls: CONFIGURATION_REASONS.iter().map(|r| stalls(r)).collect(),
        // What the agent parses of each kind (contract 0.6.0): a Cluster's
        // Barman Cloud plugin entry (and whether it backs up in-tree), an
        // ObjectStore's configuration; of the rest, the metadata and the
        // typed facts (workload, secret, config-map) only.
        reads: vec![
            with_fields(
                reads(cluster_kind()),
                ["spec.plugins", "spec.backup.barmanObjectStore"],
            ),
            with_fields(reads_optional(object_store_kind()), ["spec.configuration"]),
            metadata_only(reads(deployment_kind())),
            metadata_only(reads(kind_ref("", "v1", "Pod"))),
            metadata_only(reads(secret_kind())),
            metadata_only(reads(config_map_kind())),
            metadata_only(reads(service_kind())),
        ],
        pause: pause(PAUSE_KEY, PAUSE_VALUE),
        spec_schema: Some(crate::spec::schema()),
        // `kubectl get -o wide`: when the serving certificate expires.
        printer_columns: vec![spec::wide_column(
            "Certificate-Expiry",
            "string",
            ".status.servingCertificate.expiry",
        )],
    }
}
