//! Helpers for a kind's static spec, the shared `common` reason
//! vocabulary (seed "Conditions and reasons") so every kind registers the
//! same meaning for the same reason, and the typed `.spec`: one Rust type
//! gives the CRD's schema ([`schema_of`]) and the parse ([`parse`]).

use crate::{KindRef, PauseAnnotation, PrinterColumn, ReadDecl, ReasonEntry, StallRule};

mod parse;
mod schema;

pub use parse::{SpecError, parse};
pub use schema::{schema_of, schema_value_of};

/// The owner of the shared vocabulary.
///
/// ```
/// use reconciler_guest_sdk::spec::{COMMON, common};
/// assert_eq!(common("ClusterNotFound").owner, COMMON);
/// ```
pub const COMMON: &str = "common";

/// The reasons the host registers for every kind and sets itself; a guest
/// may use them without registering them (and may not redefine them).
/// The host's test `sdk_host_reasons_mirror_the_engine` holds this list
/// equal to `reconciler_conventions::kind::HOST_REASONS`.
///
/// ```
/// use reconciler_guest_sdk::spec::HOST_REASONS;
/// assert!(HOST_REASONS.contains(&"AsExpected") && HOST_REASONS.contains(&"Reconciling"));
/// ```
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
    "ObjectUndecodable",
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
    "AwaitingApproval",
    "ChangeNotSettling",
    "ChangesDenied",
];

/// The common reasons a kind may register (the host registers the ones it
/// sets itself: AsExpected, Initializing, Reconciling, ReconcileError,
/// ReconciliationPaused, the error classes and NamespaceNotWatched).
///
/// ```
/// use reconciler_guest_sdk::spec::COMMON_REASONS;
/// assert!(COMMON_REASONS.iter().any(|(name, _)| *name == "ConfigurationInvalid"));
/// ```
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
/// ```
/// let entry = reconciler_guest_sdk::spec::common("SecretNotFound");
/// assert_eq!((entry.owner.as_str(), entry.meaning.as_str()), ("common", "A referenced Secret does not exist."));
/// ```
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
///
/// ```
/// let entry = reconciler_guest_sdk::spec::owned("greeting", "GreetingMissing", "spec.greeting is empty.");
/// assert_eq!(entry.owner, "greeting");
/// ```
pub fn owned(owner: &str, name: &str, meaning: &str) -> ReasonEntry {
    ReasonEntry {
        name: name.to_owned(),
        owner: owner.to_owned(),
        meaning: meaning.to_owned(),
    }
}

/// A kind's reason registry: the common reasons it sets (`common_used`),
/// then the reasons `owner` owns, with their meanings. [`Registry`] builds
/// the same with the reasons of the SDK's helpers added
/// ([`workload::REASONS`](crate::workload::REASONS)).
///
/// ```
/// use reconciler_guest_sdk::spec::registry;
/// let reasons = registry("greeting", &["ConfigurationInvalid"], &[("GreetingMissing", "spec.greeting is empty.")]);
/// assert_eq!(reasons.len(), 2);
/// ```
///
/// # Panics
/// When a name of `common_used` is not a common reason (see [`common`]).
pub fn registry(
    owner: &str,
    common_used: &[&str],
    owned_reasons: &[(&str, &str)],
) -> Vec<ReasonEntry> {
    Registry::new(owner)
        .common(common_used)
        .owned(owned_reasons)
        .build()
}

/// A kind's reason registry, built up: the common reasons the guest sets,
/// those the SDK's helpers it calls can set (each helper's list, such as
/// [`workload::REASONS`](crate::workload::REASONS), added by one call),
/// and the reasons the kind owns. A common reason is registered once
/// however many lists name it.
///
/// ```
/// use reconciler_guest_sdk::spec::Registry;
/// use reconciler_guest_sdk::workload;
///
/// let reasons = Registry::new("myagent")
///     .common(&["ConfigurationInvalid", "SecretNotFound"])
///     .common(workload::REASONS)       // CrashLoopBackOff, PodNotReady, SecretNotFound ...
///     .owned(&[("AgentMisconfigured", "ConfigurationValid=False: the agent refuses its flags.")])
///     .build();
/// let names: Vec<&str> = reasons.iter().map(|r| r.name.as_str()).collect();
/// assert!(names.contains(&"CrashLoopBackOff"));
/// assert_eq!(names.iter().filter(|n| **n == "SecretNotFound").count(), 1);
/// assert_eq!(names.last(), Some(&"AgentMisconfigured"));
/// ```
#[derive(Debug, Clone)]
pub struct Registry {
    owner: String,
    reasons: Vec<ReasonEntry>,
}

impl Registry {
    /// An empty registry of the kind whose own reasons `owner` owns.
    ///
    /// ```
    /// assert!(reconciler_guest_sdk::spec::Registry::new("myagent").build().is_empty());
    /// ```
    pub fn new(owner: &str) -> Registry {
        Registry {
            owner: owner.to_owned(),
            reasons: Vec::new(),
        }
    }

    /// Adds common reasons, with their shared meanings; one already
    /// registered is not added again.
    ///
    /// ```
    /// use reconciler_guest_sdk::spec::Registry;
    /// let reasons = Registry::new("me").common(&["SecretNotFound"]).common(&["SecretNotFound"]).build();
    /// assert_eq!(reasons.len(), 1);
    /// ```
    ///
    /// # Panics
    /// When a name is not a common reason (see [`common`]).
    pub fn common(mut self, names: &[&str]) -> Registry {
        for name in names {
            if !self.reasons.iter().any(|r| r.name == *name) {
                self.reasons.push(common(name));
            }
        }
        self
    }

    /// Adds reasons the kind owns, `(name, meaning)`.
    ///
    /// ```
    /// use reconciler_guest_sdk::spec::Registry;
    /// let reasons = Registry::new("me").owned(&[("Mine", "Only mine.")]).build();
    /// assert_eq!((reasons[0].owner.as_str(), reasons[0].name.as_str()), ("me", "Mine"));
    /// ```
    pub fn owned(mut self, reasons: &[(&str, &str)]) -> Registry {
        let owner = self.owner.clone();
        self.reasons.extend(
            reasons
                .iter()
                .map(|(name, meaning)| owned(&owner, name, meaning)),
        );
        self
    }

    /// The registry, for the kind spec's `reasons`, in the order added.
    ///
    /// ```
    /// use reconciler_guest_sdk::spec::Registry;
    /// let reasons = Registry::new("me").owned(&[("B", "b")]).common(&["SecretNotFound"]).build();
    /// assert_eq!(reasons.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["B", "SecretNotFound"]);
    /// ```
    pub fn build(self) -> Vec<ReasonEntry> {
        self.reasons
    }
}

/// A kind by group (empty for the core API), version and kind.
///
/// ```
/// let secret = reconciler_guest_sdk::spec::kind_ref("", "v1", "Secret");
/// assert_eq!((secret.group.as_str(), secret.kind.as_str()), ("", "Secret"));
/// ```
pub fn kind_ref(group: &str, version: &str, kind: &str) -> KindRef {
    KindRef {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
    }
}

/// A kind the guest reads and the cluster always serves (a read of an
/// undeclared kind answers `NotDeclared`; see [`Facts`](crate::Facts) for
/// what each fact read needs).
///
/// ```
/// use reconciler_guest_sdk::spec::{kind_ref, reads};
/// let decl = reads(kind_ref("apps", "v1", "Deployment"));
/// assert!(!decl.optional && !decl.cross_namespace);
/// ```
pub fn reads(kind: KindRef) -> ReadDecl {
    ReadDecl {
        kind,
        optional: false,
        cross_namespace: false,
        fields: None,
    }
}

/// A kind the guest reads that the cluster may not serve: the host
/// serves the kind without it, `api_availability` says `NotServed` or
/// `Forbidden`, and so do reads of it.
///
/// ```
/// use reconciler_guest_sdk::spec::{kind_ref, reads_optional};
/// assert!(reads_optional(kind_ref("route.openshift.io", "v1", "Route")).optional);
/// ```
pub fn reads_optional(kind: KindRef) -> ReadDecl {
    ReadDecl {
        kind,
        optional: true,
        cross_namespace: false,
        fields: None,
    }
}

/// The same read, in other namespaces than the parent's too (contract
/// 0.4.0, `read-decl.cross-namespace`): `facts.get` and `facts.list` answer
/// as that namespace does, `forbidden` where the host does not watch it or
/// may not read the kind there.
///
/// ```
/// use reconciler_guest_sdk::spec::{across_namespaces, kind_ref, reads};
/// assert!(across_namespaces(reads(kind_ref("", "v1", "Secret"))).cross_namespace);
/// ```
pub fn across_namespaces(read: ReadDecl) -> ReadDecl {
    ReadDecl {
        cross_namespace: true,
        ..read
    }
}

/// The same read, naming the fields of the kind's objects the guest reads
/// (contract 0.6.0, `read-decl.fields`): each a path of field names joined
/// by `.` (a `.` in a name escaped as `\\.`), through every item of a list
/// on its way. The host serves those fields only, with `apiVersion`,
/// `kind` and the whole `metadata`; its caches hold no more than what the
/// kind's readers name. A fixture whose verdict changes with a field left
/// out fails, naming it.
///
/// ```
/// use reconciler_guest_sdk::spec::{kind_ref, reads, with_fields};
/// let read = with_fields(reads(kind_ref("", "v1", "Pod")), ["status.phase", "spec.nodeName"]);
/// assert_eq!(read.fields, Some(vec!["status.phase".to_owned(), "spec.nodeName".to_owned()]));
/// ```
pub fn with_fields<S: Into<String>>(
    read: ReadDecl,
    fields: impl IntoIterator<Item = S>,
) -> ReadDecl {
    ReadDecl {
        fields: Some(fields.into_iter().map(Into::into).collect()),
        ..read
    }
}

/// [`with_fields`] naming none: the guest parses none of the kind's
/// objects itself. It reads their metadata (an `Object`'s `meta`), or
/// reads them through the typed facts the host derives (`workload` for
/// Deployments and Pods, `secret`, `config-map`, `job` ...), which are
/// served as before: the host keeps what it derives them from.
///
/// ```
/// use reconciler_guest_sdk::spec::{kind_ref, metadata_only, reads};
/// let read = metadata_only(reads(kind_ref("", "v1", "Pod")));
/// assert_eq!(read.fields, Some(vec![]));
/// ```
pub fn metadata_only(read: ReadDecl) -> ReadDecl {
    with_fields(read, std::iter::empty::<String>())
}

/// [`with_fields`], the fields being those the type `T` reads: the type the
/// guest parses the kind's objects into (`serde_json::from_str::<T>`),
/// deriving schemars' `JsonSchema` (which follows its serde attributes).
/// Each field holding no fields of its own is a path; `apiVersion`,
/// `kind` and `metadata` are always served and left out of the list.
///
/// ```
/// use reconciler_guest_sdk::spec::{kind_ref, reads, with_fields_of};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// struct PodRead {
///     spec: PodSpecRead,
///     status: Option<PodStatusRead>,
/// }
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// struct PodSpecRead {
///     node_name: Option<String>,
///     containers: Vec<ContainerRead>,
/// }
/// #[derive(Deserialize, JsonSchema)]
/// struct ContainerRead {
///     image: String,
/// }
/// #[derive(Deserialize, JsonSchema)]
/// struct PodStatusRead {
///     phase: Option<String>,
/// }
///
/// let read = with_fields_of::<PodRead>(reads(kind_ref("", "v1", "Pod")));
/// assert_eq!(
///     read.fields.unwrap(),
///     ["spec.containers.image", "spec.nodeName", "status.phase"]
/// );
/// ```
///
/// # Panics
///
/// As [`schema_of`] does, when `T` has no structural schema.
pub fn with_fields_of<T: schemars::JsonSchema>(read: ReadDecl) -> ReadDecl {
    with_fields(read, schema::field_paths(&schema_value_of::<T>()))
}

/// A stall, resolved only by a watched change.
///
/// ```
/// let rule = reconciler_guest_sdk::spec::stalls("ClusterNotFound");
/// assert_eq!(rule.recheck_seconds, None);
/// ```
pub fn stalls(reason: &str) -> StallRule {
    StallRule {
        reason: reason.to_owned(),
        recheck_seconds: None,
    }
}

/// A stall also looked at again every `seconds`: for inputs the host's
/// caches do not watch (a ClusterRole, a ConfigMap of another namespace).
///
/// ```
/// let rule = reconciler_guest_sdk::spec::stalls_rechecked("ConsoleRoleMissing", 120);
/// assert_eq!(rule.recheck_seconds, Some(120));
/// ```
pub fn stalls_rechecked(reason: &str, seconds: u32) -> StallRule {
    StallRule {
        reason: reason.to_owned(),
        recheck_seconds: Some(seconds),
    }
}

/// A stall, looked at again every `recheck_seconds` when set (for a
/// table of `(reason, recheck)`).
///
/// ```
/// use reconciler_guest_sdk::spec::stall;
/// let table = [("SecretNotFound", None), ("ConfigMapNotFound", Some(120))];
/// let rules: Vec<_> = table.iter().map(|(r, s)| stall(r, *s)).collect();
/// assert_eq!(rules[1].recheck_seconds, Some(120));
/// ```
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
///
/// ```
/// let expiry = reconciler_guest_sdk::spec::wide_column("Certificate-Expiry", "string", ".status.servingCertificate.expiry");
/// assert!(expiry.wide);
/// ```
pub fn wide_column(name: &str, type_: &str, json_path: &str) -> PrinterColumn {
    PrinterColumn {
        wide: true,
        ..column(name, type_, json_path)
    }
}

/// The column showing a condition's status (`-o wide`), such as
/// ExposureConfined's.
///
/// ```
/// let confined = reconciler_guest_sdk::spec::condition_column("ExposureConfined");
/// assert_eq!(confined.json_path, ".status.conditions[?(@.type==\"ExposureConfined\")].status");
/// ```
pub fn condition_column(type_: &str) -> PrinterColumn {
    wide_column(
        type_,
        "string",
        &format!(".status.conditions[?(@.type==\"{type_}\")].status"),
    )
}

/// The annotation `key: value` that pauses the kind's reconciliation
/// (the evaluation's `paused` is then true).
///
/// ```
/// let pause = reconciler_guest_sdk::spec::pause("pgtoolbox.fyannk.dev/reconcile", "skip").unwrap();
/// assert_eq!(pause.value, "skip");
/// ```
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
