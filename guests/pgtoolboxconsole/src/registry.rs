//! The kind's static spec: names, aspects, the reason registry, stalls, reads, writes and the spec schema.

use reconciler_guest_sdk::spec::{
    self, Registry, kind_ref, metadata_only, pause, reads, reads_optional, stall, with_fields,
};
use reconciler_guest_sdk::{ConventionProfile, KindRef, KindSpec};

pub const GROUP: &str = "pgtoolbox.fyannk.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "PgToolBoxConsole";
pub const PLURAL: &str = "pgtoolboxconsoles";
/// The owner of the reasons only consoles register.
pub const OWNER: &str = "console";

pub const CONFIGURATION_VALID: &str = "ConfigurationValid";
pub const WORKLOAD_READY: &str = "WorkloadReady";
pub const EXPOSURE_READY: &str = "ExposureReady";
pub const INSTANCE_CA_BUNDLE_COMPLETE: &str = "InstanceCABundleComplete";
pub const EXPOSURE_CONFINED: &str = "ExposureConfined";

// ConfigurationValid=False: every one a stall.
pub const CONSOLE_IMAGE_REQUIRED: &str = "ConsoleImageRequired";
pub const IMAGE_NOT_ALLOWED: &str = "ImageNotAllowed";
pub const HOSTNAME_NOT_ALLOWED: &str = "HostnameNotAllowed";
pub const CONSOLE_ROLE_MISSING: &str = "ConsoleRoleMissing";
pub const SECRET_NOT_FOUND: &str = "SecretNotFound";
pub const CONFIG_MAP_NOT_FOUND: &str = "ConfigMapNotFound";
pub const EXPOSURE_POLICY_INVALID: &str = "ExposurePolicyInvalid";
pub const RESOURCE_NOT_OWNED: &str = "ResourceNotOwned";
pub const CONFIGURATION_INVALID: &str = "ConfigurationInvalid";

// WorkloadReady=False.
pub const ROLLOUT_IN_PROGRESS: &str = "RolloutInProgress";
pub const ROLLOUT_STUCK: &str = "RolloutStuck";
pub const REPLICA_FAILURE: &str = "ReplicaFailure";
pub const SECRET_KEY_MISSING: &str = "SecretKeyMissing";
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

// InstanceCABundleComplete (and the reasons of status.instanceCABundle.missing).
pub const INSTANCE_CA_MISSING: &str = "InstanceCAMissing";
pub const INSTANCE_CA_INVALID: &str = "InstanceCAInvalid";
pub const INSTANCE_CA_BUNDLE_FULL: &str = "InstanceCABundleFull";

// ExposureConfined (decided by the confinement module).
pub const EXPOSURE_OPEN: &str = "ExposureOpen";
pub const EXPOSURE_PEERS_BROAD: &str = "ExposurePeersBroad";
pub const EXPOSURE_POLICY_BYPASSED: &str = "ExposurePolicyBypassed";
pub const EXPOSURE_TRUST_UNVERIFIED: &str = "ExposureTrustUnverified";
pub const EXPOSURE_POLICY_KEPT: &str = "ExposurePolicyKept";

/// How often the stalls whose inputs the host's caches do not see are
/// looked at again: ClusterRoles and a user's ConfigMaps (seed: two minutes).
pub const UNCACHED_RECHECK_SECONDS: u32 = 120;
/// How often a refused ingress NetworkPolicy is applied again (five minutes).
pub const POLICY_RECHECK_SECONDS: u32 = 300;

/// Every ConfigurationValid=False reason, each a stall, with its recheck.
pub const CONFIGURATION_REASONS: &[(&str, Option<u32>)] = &[
    (HOSTNAME_NOT_ALLOWED, None),
    (CONFIGURATION_INVALID, None),
    (CONSOLE_IMAGE_REQUIRED, None),
    (IMAGE_NOT_ALLOWED, None),
    (CONSOLE_ROLE_MISSING, Some(UNCACHED_RECHECK_SECONDS)),
    (SECRET_NOT_FOUND, None),
    (CONFIG_MAP_NOT_FOUND, Some(UNCACHED_RECHECK_SECONDS)),
    (EXPOSURE_POLICY_INVALID, Some(POLICY_RECHECK_SECONDS)),
    (RESOURCE_NOT_OWNED, None),
];

/// The common reasons the kind registers (the host registers its own):
/// those it sets, then those seed 000 registers and says no current
/// reconciler sets: ScaledToZero (every kind: "common reasons are shared by
/// every kind"), GatewayNotFound and HostnameConflict (an exposure's).
/// WorkloadReady's reasons from the SDK's workload helper
/// (RolloutInProgress, CrashLoopBackOff ...) are its own list,
/// `workload::REASONS`, added in `describe`.
const COMMON_USED: &[&str] = &[
    CONFIGURATION_INVALID,
    RESOURCE_NOT_OWNED,
    SECRET_NOT_FOUND,
    SECRET_KEY_MISSING,
    CONFIG_MAP_NOT_FOUND,
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

/// The reasons the `console` owner registers, with the seed's meanings.
const OWNED: &[(&str, &str)] = &[
    (
        CONSOLE_IMAGE_REQUIRED,
        "spec.image is not set and the operator has no default console image (setting defaultConsoleImage).",
    ),
    (
        CONSOLE_ROLE_MISSING,
        "A ClusterRole the operator binds for the console (pgtoolbox-console; pgtoolbox-console-pod-logs unless podLogs: false; pgtoolbox-console-restore-drills with restore drills) does not exist: the operator installation is incomplete.",
    ),
    (
        INSTANCE_CA_MISSING,
        "InstanceCABundleComplete=False: at least one selected Cluster's server CA is not in the mirrored bundle; status.instanceCABundle.missing gives each Cluster, its CA Secret and the reason (SecretNotFound, SecretKeyMissing for a Secret without ca.crt, InstanceCAInvalid, InstanceCABundleFull).",
    ),
    (
        INSTANCE_CA_INVALID,
        "A Cluster's server CA Secret has a ca.crt with no PEM certificate in it.",
    ),
    (
        INSTANCE_CA_BUNDLE_FULL,
        "The mirrored bundle reached the size a ConfigMap holds (several hundred distinct CAs); the Clusters after it, by name, are left out.",
    ),
    (
        EXPOSURE_OPEN,
        "ExposureConfined=False: the console is exposed without its ingress NetworkPolicy, so any Pod can reach its port; Unknown: the only exposure object is a Route or HTTPRoute published before the operator was refused its kind, which it may not read either.",
    ),
    (
        EXPOSURE_PEERS_BROAD,
        "ExposureConfined=False: a peer of spec.exposure.networkPolicy.from admits (nearly) every namespace, every Pod of the namespace, the Pod network or every address, so the console trusts no peer with X-Forwarded-For.",
    ),
    (
        EXPOSURE_POLICY_INVALID,
        "ConfigurationValid=False: the API server refused the ingress NetworkPolicy rendered from spec.exposure.networkPolicy, or an admission policy or webhook denied it (Invalid or Forbidden); the message carries its answer. Retried every five minutes and on every change of the spec.",
    ),
    (
        EXPOSURE_POLICY_BYPASSED,
        "ExposureConfined=False: another NetworkPolicy of the namespace admits, to the console port, peers the exposure does not list, or there were more than 250 to check; the console trusts no peer with X-Forwarded-For.",
    ),
    (
        EXPOSURE_TRUST_UNVERIFIED,
        "ExposureConfined=False: the peers of networkPolicy.from could not be checked yet, or a wider from is held back until no console Pod trusts every peer; the console trusts no peer with X-Forwarded-For meanwhile.",
    ),
    (
        EXPOSURE_POLICY_KEPT,
        "ExposureConfined=False: the ingress NetworkPolicy is no longer rendered and is kept while a console Pod may still trust every peer it admits; also while the console is stalled on HostnameNotAllowed.",
    ),
];

/// The pause annotation every pgtoolbox kind shares.
pub const PAUSE_KEY: &str = "pgtoolbox.fyannk.dev/reconcile";
pub const PAUSE_VALUE: &str = "skip";

pub fn cluster_kind() -> KindRef {
    kind_ref("postgresql.cnpg.io", "v1", "Cluster")
}

pub fn deployment_kind() -> KindRef {
    kind_ref("apps", "v1", "Deployment")
}

pub fn service_kind() -> KindRef {
    kind_ref("", "v1", "Service")
}

pub fn service_account_kind() -> KindRef {
    kind_ref("", "v1", "ServiceAccount")
}

pub fn config_map_kind() -> KindRef {
    kind_ref("", "v1", "ConfigMap")
}

pub fn role_binding_kind() -> KindRef {
    kind_ref("rbac.authorization.k8s.io", "v1", "RoleBinding")
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
pub use reconciler_guest_sdk::exposure::kind_ref as exposure_kind;

/// Every kind the guest applies or deletes: the console's workload
/// (Deployment, Service, ServiceAccount), its RoleBindings, the exposure
/// object of each kind, the ingress NetworkPolicy and the mirrored CA
/// bundle ConfigMap. (The X-Forwarded-For grant is an annotation of the
/// Deployment's Pod template, no kind of its own.)
pub fn writes() -> Vec<KindRef> {
    vec![
        deployment_kind(),
        service_kind(),
        service_account_kind(),
        role_binding_kind(),
        network_policy_kind(),
        route_kind(),
        ingress_kind(),
        http_route_kind(),
        config_map_kind(),
    ]
}

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
        advisory: vec![INSTANCE_CA_BUNDLE_COMPLETE.into(), EXPOSURE_CONFINED.into()],
        reasons: Registry::new(OWNER)
            .common(COMMON_USED)
            .common(reconciler_guest_sdk::workload::REASONS)
            .owned(OWNED)
            .build(),
        negative_polarity: vec![],
        quiet_reasons: vec![ROLLOUT_IN_PROGRESS.into(), POD_NOT_READY.into()],
        stalls: CONFIGURATION_REASONS
            .iter()
            .map(|(reason, recheck)| stall(reason, *recheck))
            .collect(),
        // What the console parses of each kind (contract 0.6.0): a
        // Cluster's server CA Secret; of the rest, the metadata and the
        // typed facts (workload, secret, network policies, nodes, exposure,
        // cluster roles) only.
        reads: vec![
            metadata_only(reads(deployment_kind())),
            metadata_only(reads(kind_ref("", "v1", "Pod"))),
            metadata_only(reads(kind_ref("", "v1", "Secret"))),
            metadata_only(reads(config_map_kind())),
            with_fields(
                reads_optional(cluster_kind()),
                ["spec.certificates.serverCASecret"],
            ),
            metadata_only(reads(network_policy_kind())),
            metadata_only(reads_optional(kind_ref("", "v1", "Node"))),
            metadata_only(reads_optional(route_kind())),
            metadata_only(reads(ingress_kind())),
            metadata_only(reads_optional(http_route_kind())),
            metadata_only(reads(kind_ref(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
            ))),
        ],
        pause: pause(PAUSE_KEY, PAUSE_VALUE),
        spec_schema: Some(crate::spec::schema()),
        // `kubectl get -o wide`: where it is published, and whether that is
        // confined.
        printer_columns: vec![
            spec::wide_column("URL", "string", ".status.url"),
            spec::condition_column(EXPOSURE_CONFINED),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_json_and_every_stall_is_registered() {
        let schema: serde_json::Value = serde_json::from_str(&crate::spec::schema()).expect("JSON");
        assert_eq!(schema["type"], "object");
        let spec = describe();
        for rule in &spec.stalls {
            assert!(spec.reasons.iter().any(|r| r.name == rule.reason));
        }
        for quiet in &spec.quiet_reasons {
            assert!(spec.reasons.iter().any(|r| &r.name == quiet));
        }
    }
}
