//! Helpers for a kind's static spec, and the shared `common` reason
//! vocabulary (seed "Conditions and reasons") so every kind registers the
//! same meaning for the same reason.

use crate::{KindRef, PauseAnnotation, PrinterColumn, ReadDecl, ReasonEntry, StallRule};

/// The owner of the shared vocabulary.
pub const COMMON: &str = "common";

/// The reasons the host registers for every kind and sets itself; a guest
/// may use them without registering them (and may not redefine them).
/// The host's test `sdk_host_reasons_mirror_the_engine` holds this list
/// equal to `reconciler_conventions::kind::HOST_REASONS`.
pub const HOST_REASONS: &[&str] = &[
    "AsExpected",
    "Initializing",
    "Reconciling",
    "ReconcileError",
    "ReconciliationPaused",
    "ReconciliationFailed",
    "QuotaExceeded",
    "AdmissionDenied",
    "GuestFailed",
    "NamespaceNotWatched",
    "Planned",
    "ChangesPending",
    "InSync",
    "ObserveMode",
    "PlanCreated",
    "PlanApproved",
    "PlanRejected",
    "PlanSuperseded",
    "PlanApplied",
    "PlanFailed",
];

/// The common reasons a kind may register (the host registers the ones it
/// sets itself: AsExpected, Initializing, Reconciling, ReconcileError,
/// ReconciliationPaused, the error classes and NamespaceNotWatched).
pub const COMMON_REASONS: &[(&str, &str)] = &[
    (
        "ConfigurationInvalid",
        "ConfigurationValid=False (and Stalled=True): a cross-object check the CRD cannot express failed.",
    ),
    (
        "ResourceNotOwned",
        "An object the operator must manage exists under the generated name and is controlled by someone else.",
    ),
    ("SecretNotFound", "A referenced Secret does not exist."),
    ("SecretKeyMissing", "A referenced Secret's key is missing."),
    (
        "ConfigMapNotFound",
        "A referenced ConfigMap does not exist.",
    ),
    (
        "ClusterNotFound",
        "A referenced CloudNativePG Cluster does not exist in the namespace.",
    ),
    ("RolloutInProgress", "A rollout is on its way."),
    (
        "RolloutStuck",
        "The Deployment's progress deadline is exceeded.",
    ),
    (
        "PodUnschedulable",
        "The child's own fact, copied: a Pod cannot be scheduled.",
    ),
    (
        "ImagePullFailed",
        "The child's own fact, copied: an image cannot be pulled.",
    ),
    (
        "CrashLoopBackOff",
        "The child's own fact, copied: a container restarts in a loop.",
    ),
    (
        "ReplicaFailure",
        "The child's own fact, copied: the Deployment cannot create a Pod (e.g. a quota).",
    ),
    (
        "PodNotReady",
        "The child's own fact, copied: a Pod is not Ready.",
    ),
    ("ScaledToZero", "Registered; no current reconciler sets it."),
    (
        "NotRequested",
        "The exposure is clusterIP: nothing to publish.",
    ),
    (
        "NotAdmitted",
        "The Route or Ingress was not accepted by its controller.",
    ),
    (
        "NotAccepted",
        "The HTTPRoute was not accepted by its controller.",
    ),
    (
        "GatewayNotFound",
        "The Gateway named by parentRef is absent. Registered; the current reconcilers do not set it.",
    ),
    (
        "HostnameConflict",
        "Another route claims the hostname. Registered; the current reconcilers do not set it.",
    ),
    (
        "RouteAPIUnavailable",
        "The Route API the exposure needs is not served or not readable.",
    ),
    (
        "GatewayAPIUnavailable",
        "The Gateway API the exposure needs is not served or not readable.",
    ),
    (
        "ImageNotAllowed",
        "A spec.image or oauth-proxy image repository is outside the operator's allow-list.",
    ),
    (
        "HostnameNotAllowed",
        "spec.exposure.hostname is outside the allowed host suffixes; what was published under the name is withdrawn.",
    ),
];

/// A common reason, with its shared meaning.
///
/// # Panics
/// When `name` is not a common reason: a kind's describe is static, so
/// this fails the guest's own unit tests, never a pass.
pub fn common(name: &str) -> ReasonEntry {
    let (_, meaning) = COMMON_REASONS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("{name} is not a common reason"));
    ReasonEntry {
        name: name.to_owned(),
        owner: COMMON.to_owned(),
        meaning: (*meaning).to_owned(),
    }
}

/// A reason the kind owns.
pub fn owned(owner: &str, name: &str, meaning: &str) -> ReasonEntry {
    ReasonEntry {
        name: name.to_owned(),
        owner: owner.to_owned(),
        meaning: meaning.to_owned(),
    }
}

/// A kind's reason registry: the common reasons it sets (`common_used`),
/// then the reasons `owner` owns, with their meanings.
pub fn registry(
    owner: &str,
    common_used: &[&str],
    owned_reasons: &[(&str, &str)],
) -> Vec<ReasonEntry> {
    common_used
        .iter()
        .map(|name| common(name))
        .chain(
            owned_reasons
                .iter()
                .map(|(name, meaning)| owned(owner, name, meaning)),
        )
        .collect()
}

/// A kind by group (empty for the core API), version and kind.
pub fn kind_ref(group: &str, version: &str, kind: &str) -> KindRef {
    KindRef {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
    }
}

/// A kind the guest reads and the cluster always serves.
pub fn reads(kind: KindRef) -> ReadDecl {
    ReadDecl {
        kind,
        optional: false,
        cross_namespace: false,
    }
}

/// A kind the guest reads that the cluster may not serve.
pub fn reads_optional(kind: KindRef) -> ReadDecl {
    ReadDecl {
        kind,
        optional: true,
        cross_namespace: false,
    }
}

/// The same read, in other namespaces than the parent's too (contract
/// 0.4.0, `read-decl.cross-namespace`): `facts.get` and `facts.list` answer
/// as that namespace does, `forbidden` where the host does not watch it or
/// may not read the kind there.
pub fn across_namespaces(read: ReadDecl) -> ReadDecl {
    ReadDecl {
        cross_namespace: true,
        ..read
    }
}

/// A stall, resolved only by a watched change.
pub fn stalls(reason: &str) -> StallRule {
    StallRule {
        reason: reason.to_owned(),
        recheck_seconds: None,
    }
}

/// A stall also looked at again every `seconds`.
pub fn stalls_rechecked(reason: &str, seconds: u32) -> StallRule {
    StallRule {
        reason: reason.to_owned(),
        recheck_seconds: Some(seconds),
    }
}

/// A stall, looked at again every `recheck_seconds` when set.
pub fn stall(reason: &str, recheck_seconds: Option<u32>) -> StallRule {
    StallRule {
        reason: reason.to_owned(),
        recheck_seconds,
    }
}

/// A column of `kubectl get`: `type_` is `string`, `integer`, `number`,
/// `boolean` or `date`; `json_path` starts with `.`.
///
/// ```
/// let url = reconciler_guest_sdk::spec::column("URL", "string", ".status.url");
/// assert!(!url.wide);
/// ```
pub fn column(name: &str, type_: &str, json_path: &str) -> PrinterColumn {
    PrinterColumn {
        name: name.to_owned(),
        type_: type_.to_owned(),
        json_path: json_path.to_owned(),
        wide: false,
        description: None,
    }
}

/// A column shown only by `kubectl get -o wide`.
pub fn wide_column(name: &str, type_: &str, json_path: &str) -> PrinterColumn {
    PrinterColumn {
        wide: true,
        ..column(name, type_, json_path)
    }
}

/// The column showing a condition's status (`-o wide`), such as
/// ExposureConfined's.
pub fn condition_column(type_: &str) -> PrinterColumn {
    wide_column(
        type_,
        "string",
        &format!(".status.conditions[?(@.type==\"{type_}\")].status"),
    )
}

/// The annotation `key: value` that pauses the kind's reconciliation.
pub fn pause(key: &str, value: &str) -> Option<PauseAnnotation> {
    Some(PauseAnnotation {
        key: key.to_owned(),
        value: value.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_reasons_are_unique() {
        let mut names: Vec<_> = COMMON_REASONS.iter().map(|(n, _)| *n).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), COMMON_REASONS.len());
    }

    #[test]
    #[should_panic(expected = "NotAReason is not a common reason")]
    fn unknown_common_reason_fails_loudly() {
        common("NotAReason");
    }

    #[test]
    fn a_registry_lists_the_common_reasons_then_the_owned_ones() {
        let reasons = registry("me", &["SecretNotFound"], &[("Mine", "Only mine.")]);
        let listed: Vec<(&str, &str)> = reasons
            .iter()
            .map(|r| (r.name.as_str(), r.owner.as_str()))
            .collect();
        assert_eq!(listed, [("SecretNotFound", COMMON), ("Mine", "me")]);
        assert_eq!(reasons[1].meaning, "Only mine.");
    }

    #[test]
    fn stalls_and_pause_are_spelled_out() {
        assert_eq!(stall("A", None), stalls("A"));
        assert_eq!(stall("A", Some(120)), stalls_rechecked("A", 120));
        let pause = pause("example.dev/reconcile", "skip").unwrap();
        assert_eq!(
            (pause.key.as_str(), pause.value.as_str()),
            ("example.dev/reconcile", "skip")
        );
    }
}
