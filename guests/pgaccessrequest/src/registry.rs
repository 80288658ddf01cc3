//! The kind's static spec: names, aspects, the reason registry, reads, writes and the spec schema.

use reconciler_guest_sdk::spec::{
    kind_ref, metadata_only, reads, reads_optional, registry, with_fields,
};
use reconciler_guest_sdk::{ConventionProfile, KindRef, KindSpec};

pub const GROUP: &str = "pgtoolbox.fyannk.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "PgAccessRequest";
pub const PLURAL: &str = "pgaccessrequests";
/// The owner of the reasons only this kind registers.
pub const OWNER: &str = "pgaccessrequest";

pub const CONFIGURATION_VALID: &str = "ConfigurationValid";
pub const ROLE_BINDING_SYNCED: &str = "RoleBindingSynced";

pub const CLUSTER_NOT_FOUND: &str = "ClusterNotFound";
pub const AWAITING_DECISION: &str = "AwaitingDecision";
pub const ACCESS_GRANTED: &str = "AccessGranted";
pub const ACCESS_DENIED: &str = "AccessDenied";
pub const ACCESS_EXPIRED: &str = "AccessExpired";
pub const ACCESS_REVOKED: &str = "AccessRevoked";
pub const ROLE_BINDING_MISSING: &str = "RoleBindingMissing";
pub const ROLE_BINDING_DRIFTED: &str = "RoleBindingDrifted";
pub const ROLE_BINDING_ORPHANED: &str = "RoleBindingOrphaned";
pub const SELF_APPROVAL_REFUSED: &str = "SelfApprovalRefused";
pub const ROLE_BINDING_DELETED: &str = "RoleBindingDeleted";

/// The label an approver puts on the RoleBinding of a request: its value
/// is the request's name.
pub const REQUEST_LABEL: &str = "pgtoolbox.fyannk.dev/access-request";

/// The setting of the orphan grace, in seconds.
pub const ORPHAN_GRACE_SETTING: &str = "orphanGraceSeconds";
/// The seed's one-minute grace of an approval in flight.
pub const DEFAULT_ORPHAN_GRACE_SECONDS: u32 = 60;
/// The longest grace the setting accepts.
pub const MAX_ORPHAN_GRACE_SECONDS: u32 = 3_600;

/// The common reasons the kind sets (the host registers its own).
const COMMON_USED: &[&str] = &[CLUSTER_NOT_FOUND];

/// The reasons the kind owns, with the seed's meanings.
const OWNED: &[(&str, &str)] = &[
    (AWAITING_DECISION, "Pending: nothing is bound."),
    (ACCESS_GRANTED, "Approved, and the RoleBinding is in place."),
    (ACCESS_DENIED, "Terminal: nothing is bound."),
    (
        ACCESS_EXPIRED,
        "Terminal: nothing is bound. AccessExpired is also the Event of the expiry.",
    ),
    (ACCESS_REVOKED, "Terminal: nothing is bound."),
    (
        ROLE_BINDING_MISSING,
        "Approved, but the RoleBinding does not exist; revoke and request again.",
    ),
    (
        ROLE_BINDING_DRIFTED,
        "A RoleBinding of the request bound another subject or ClusterRole and was deleted (fail closed).",
    ),
    (
        ROLE_BINDING_ORPHANED,
        "A RoleBinding of a request that is not Approved outlived the one-minute grace of an approval in flight and was deleted.",
    ),
    (
        SELF_APPROVAL_REFUSED,
        "The recorded approver is the subject; the operator revoked the grant (four eyes).",
    ),
    (
        ROLE_BINDING_DELETED,
        "Event: the operator deleted a RoleBinding (expiry, revocation, drift, orphan).",
    ),
];

pub fn cluster_kind() -> KindRef {
    kind_ref("postgresql.cnpg.io", "v1", "Cluster")
}

pub fn role_binding_kind() -> KindRef {
    kind_ref("rbac.authorization.k8s.io", "v1", "RoleBinding")
}

pub fn cluster_role_kind() -> KindRef {
    kind_ref("rbac.authorization.k8s.io", "v1", "ClusterRole")
}

/// The kinds the guest deletes: it never applies one.
pub fn writes() -> Vec<KindRef> {
    vec![role_binding_kind()]
}

/// The OpenAPI v3 schema of `spec`: every field required but `reason`, the
/// subject's kind one of three, and the whole spec immutable (a request is
/// asked again, never widened or extended in place).
const SPEC_SCHEMA: &str = r#"{
  "type": "object",
  "required": ["cluster", "clusterRole", "subject", "expiresAt"],
  "x-kubernetes-validations": [
    {"rule": "self == oldSelf", "message": "spec is immutable: ask again with a new PgAccessRequest"}
  ],
  "properties": {
    "cluster": {
      "type": "object",
      "description": "The CloudNativePG Cluster, in the request's namespace, the access is asked for. The RoleBinding grants the ClusterRole in the whole namespace, so the grant covers every Cluster of the namespace.",
      "required": ["name"],
      "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 253}
      }
    },
    "clusterRole": {
      "type": "string",
      "description": "The ClusterRole the approver binds to the subject in the request's namespace.",
      "minLength": 1,
      "maxLength": 253
    },
    "subject": {
      "type": "object",
      "description": "Who gets the access: exactly this subject is bound.",
      "required": ["kind", "name"],
      "x-kubernetes-validations": [
        {"rule": "self.kind == 'ServiceAccount' || !has(self.__namespace__)", "message": "subject.namespace is only for a ServiceAccount"}
      ],
      "properties": {
        "kind": {"type": "string", "enum": ["User", "Group", "ServiceAccount"]},
        "name": {"type": "string", "minLength": 1, "maxLength": 253},
        "namespace": {"type": "string", "description": "A ServiceAccount's namespace; the request's when left out.", "minLength": 1, "maxLength": 63}
      }
    },
    "expiresAt": {
      "type": "string",
      "format": "date-time",
      "description": "When the access ends: the operator deletes the RoleBinding at this time. A time not after the request's creation expires the request at once."
    },
    "reason": {
      "type": "string",
      "description": "Why the access is needed, for the approver.",
      "maxLength": 1024
    }
  }
}"#;

pub fn describe() -> KindSpec {
    KindSpec {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: KIND.into(),
        plural: PLURAL.into(),
        namespaced: true,
        profile: ConventionProfile::Progressing,
        aspects: vec![CONFIGURATION_VALID.into(), ROLE_BINDING_SYNCED.into()],
        advisory: vec![],
        reasons: registry(OWNER, COMMON_USED, OWNED),
        negative_polarity: vec![],
        quiet_reasons: vec![],
        stalls: vec![],
        // What the request parses of each kind (contract 0.6.0): what a
        // RoleBinding binds; a Cluster and a ClusterRole by their
        // metadata only (whether they exist).
        reads: vec![
            metadata_only(reads_optional(cluster_kind())),
            metadata_only(reads(cluster_role_kind())),
            with_fields(reads(role_binding_kind()), ["roleRef", "subjects"]),
        ],
        pause: None,
        spec_schema: Some(SPEC_SCHEMA.into()),
        printer_columns: vec![],
    }
}
