//! A kind built against `reconciler:guest@0.1.0`, the released first
//! contract, with wit-bindgen directly (not the SDK, which follows the
//! current contract): the host's tests load it to show that a 0.1 component
//! keeps loading, describing and evaluating on a host serving 0.2.
//!
//! `LegacyWidget` has one aspect, WorkloadReady: the workload fact of the
//! Deployment its `spec.workload` names (the widget's own name by default),
//! mapped to the common reasons. When `spec.clusterRole` names a
//! ClusterRole, `status.clusterRole` says whether it exists (`present`,
//! `absent`, or why it could not be read): a cluster-scoped read, for the
//! host's tests of cluster-scoped watches.

wit_bindgen::generate!({
    path: "../../../wit/deps/reconciler-guest-0.1.0",
    world: "guest",
});

use exports::reconciler::guest::reconciler::{
    Condition, ConventionProfile, Evaluation, Guest, KindSpec, ReadDecl, ReasonEntry, Verdict,
};
use reconciler::guest::facts::{self, ReadError, WorkloadState};
use reconciler::guest::types::{ConditionStatus, KindRef};

pub struct LegacyWidget;

/// The kind's own reasons.
const OWNER: &str = "legacywidget";

/// The common reasons a workload state maps to, with their shared meaning
/// (as the SDK's `spec::COMMON_REASONS` words them).
const COMMON: &[(&str, &str)] = &[
    ("SecretNotFound", "A referenced Secret does not exist."),
    ("SecretKeyMissing", "A referenced Secret's key is missing."),
    (
        "ConfigMapNotFound",
        "A referenced ConfigMap does not exist.",
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
];

fn kind_ref(group: &str, kind: &str) -> KindRef {
    KindRef {
        group: group.to_owned(),
        version: "v1".to_owned(),
        kind: kind.to_owned(),
    }
}

fn reason(name: &str, owner: &str, meaning: &str) -> ReasonEntry {
    ReasonEntry {
        name: name.to_owned(),
        owner: owner.to_owned(),
        meaning: meaning.to_owned(),
    }
}

/// WorkloadReady from the workload fact: `(status, reason, message)`.
fn workload_ready(namespace: &str, name: &str) -> (ConditionStatus, String, String) {
    let not_ready =
        |reason: &str, message: String| (ConditionStatus::False, reason.to_owned(), message);
    match facts::workload(namespace, name) {
        Ok(Some(fact)) => match fact.state {
            WorkloadState::Ready => (
                ConditionStatus::True,
                "AsExpected".to_owned(),
                format!(
                    "Deployment {name}: {} of {} replicas ready",
                    fact.ready_replicas, fact.desired_replicas
                ),
            ),
            WorkloadState::ReplicaFailure(m) => not_ready("ReplicaFailure", m),
            WorkloadState::SecretNotFound(m) => not_ready("SecretNotFound", m),
            WorkloadState::SecretKeyMissing(m) => not_ready("SecretKeyMissing", m),
            WorkloadState::ConfigMapNotFound(m) => not_ready("ConfigMapNotFound", m),
            WorkloadState::PodUnschedulable(m) => not_ready("PodUnschedulable", m),
            WorkloadState::ImagePullFailed(m) => not_ready("ImagePullFailed", m),
            WorkloadState::CrashLoopBackOff(m) => not_ready("CrashLoopBackOff", m),
            WorkloadState::RolloutStuck(m) => not_ready("RolloutStuck", m),
            WorkloadState::RolloutInProgress(m) => not_ready("RolloutInProgress", m),
            WorkloadState::PodNotReady(m) => not_ready("PodNotReady", m),
        },
        Ok(None) => not_ready(
            "WorkloadMissing",
            format!("Deployment {namespace}/{name} does not exist"),
        ),
        Err(
            ReadError::NotDeclared(m)
            | ReadError::NotServed(m)
            | ReadError::Forbidden(m)
            | ReadError::Failed(m),
        ) => (ConditionStatus::Unknown, "WorkloadUnreadable".to_owned(), m),
    }
}

impl Guest for LegacyWidget {
    fn describe() -> KindSpec {
        let mut reasons: Vec<ReasonEntry> = COMMON
            .iter()
            .map(|(name, meaning)| reason(name, "common", meaning))
            .collect();
        reasons.push(reason(
            "WorkloadMissing",
            OWNER,
            "The Deployment the widget names does not exist.",
        ));
        reasons.push(reason(
            "WorkloadUnreadable",
            OWNER,
            "The host could not read the Deployment.",
        ));
        KindSpec {
            group: "testing.reconciler.dev".to_owned(),
            version: "v1".to_owned(),
            kind: "LegacyWidget".to_owned(),
            plural: "legacywidgets".to_owned(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec!["WorkloadReady".to_owned()],
            advisory: Vec::new(),
            reasons,
            negative_polarity: Vec::new(),
            quiet_reasons: vec!["RolloutInProgress".to_owned()],
            stalls: Vec::new(),
            reads: vec![
                ReadDecl {
                    kind: kind_ref("apps", "Deployment"),
                    optional: false,
                },
                ReadDecl {
                    kind: kind_ref("", "Pod"),
                    optional: false,
                },
                ReadDecl {
                    kind: kind_ref("rbac.authorization.k8s.io", "ClusterRole"),
                    optional: false,
                },
            ],
            pause: None,
            spec_schema: Some(
                r#"{"type":"object","properties":{"workload":{"type":"string"},"clusterRole":{"type":"string"}}}"#
                    .to_owned(),
            ),
        }
    }

    fn evaluate(input: Evaluation) -> Verdict {
        let parent: serde_json::Value =
            serde_json::from_str(&input.parent.json).unwrap_or_default();
        let meta = &input.parent.meta;
        let workload = parent["spec"]["workload"]
            .as_str()
            .unwrap_or(&meta.name)
            .to_owned();
        let (status, reason, message) = workload_ready(&meta.namespace, &workload);
        let mut fields = serde_json::json!({ "workload": workload });
        if let Some(role) = parent["spec"]["clusterRole"].as_str() {
            let kind = kind_ref("rbac.authorization.k8s.io", "ClusterRole");
            fields["clusterRole"] = match facts::get(&kind, "", role) {
                Ok(Some(_)) => "present".into(),
                Ok(None) => "absent".into(),
                Err(
                    ReadError::NotDeclared(m)
                    | ReadError::NotServed(m)
                    | ReadError::Forbidden(m)
                    | ReadError::Failed(m),
                ) => m.into(),
            };
        }
        Verdict {
            aspects: vec![Condition {
                type_: "WorkloadReady".to_owned(),
                status,
                reason,
                message,
            }],
            advisory: Vec::new(),
            stall: None,
            status_fields: fields.to_string(),
            events: Vec::new(),
            requeue_after_seconds: None,
        }
    }
}

#[cfg(target_arch = "wasm32")]
export!(LegacyWidget);
