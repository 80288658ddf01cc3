//! WorkloadReady of a Deployment child, copied from the host's classification of it (`WorkloadState`).

use crate::read;
use crate::verdict::{RECONCILING, fails, ok, unknown};
use crate::{Condition, ReadError, WorkloadFact, WorkloadState};

/// Every common reason [`condition`] and [`from_state`] can set (besides
/// the host's AsExpected and Reconciling): a guest that calls them
/// registers these with one call,
/// [`Registry::common`](crate::spec::Registry::common).
///
/// ```
/// use reconciler_guest_sdk::spec::Registry;
/// use reconciler_guest_sdk::workload;
/// let reasons = Registry::new("myagent").common(&["ConfigurationInvalid"]).common(workload::REASONS).build();
/// assert_eq!(reasons.len(), 1 + workload::REASONS.len());
/// ```
pub const REASONS: &[&str] = &[
    "ReplicaFailure",
    "RolloutStuck",
    "SecretNotFound",
    "SecretKeyMissing",
    "ConfigMapNotFound",
    "PodUnschedulable",
    "ImagePullFailed",
    "CrashLoopBackOff",
    "RolloutInProgress",
    "PodNotReady",
];

/// The condition `type_` (WorkloadReady) for the Deployment `deployment`
/// as read: Unknown (Reconciling) while it is not observed yet or the read
/// failed (the caller retries the pass then), else [`from_state`]. The
/// reasons it can set are [`REASONS`].
///
/// ```
/// use reconciler_guest_sdk::{ConditionStatus, Facts, mock::{MockFacts, workload_ready}, workload};
/// let facts = MockFacts::at(0).with_workload(workload_ready("ns", "a-agent", 2));
/// let c = workload::condition("WorkloadReady", "a-agent", &facts.workload("ns", "a-agent"));
/// assert_eq!(c.status, ConditionStatus::True);
/// assert_eq!(c.message, "Deployment a-agent: 2/2 replicas Ready on the current template");
/// let missing = workload::condition("WorkloadReady", "b-agent", &facts.workload("ns", "b-agent"));
/// assert_eq!(missing.reason, "Reconciling");
/// ```
pub fn condition(
    type_: &str,
    deployment: &str,
    read: &Result<Option<WorkloadFact>, ReadError>,
) -> Condition {
    match read {
        Ok(Some(workload)) => from_state(type_, deployment, workload),
        Ok(None) => unknown(
            type_,
            RECONCILING,
            format!("Deployment {deployment} is not observed yet"),
        ),
        Err(error) => unknown(
            type_,
            RECONCILING,
            read::failure(&format!("Deployment {deployment}"), error),
        ),
    }
}

/// The host's classification of the Deployment, as the condition `type_`;
/// the fact's message starts with the Deployment (prefixed when it does not
/// already).
///
/// ```
/// use reconciler_guest_sdk::{WorkloadState, mock::workload_in, workload};
/// let w = workload_in("ns", "a-agent", WorkloadState::CrashLoopBackOff("back-off 5m0s".into()));
/// let c = workload::from_state("WorkloadReady", "a-agent", &w);
/// assert_eq!((c.reason.as_str(), c.message.as_str()), ("CrashLoopBackOff", "Deployment a-agent: back-off 5m0s"));
/// ```
pub fn from_state(type_: &str, deployment: &str, workload: &WorkloadFact) -> Condition {
    if workload.meta.deletion.is_some() {
        return unknown(
            type_,
            RECONCILING,
            format!("Deployment {deployment} is being deleted"),
        );
    }
    let (reason, fact) = match &workload.state {
        WorkloadState::Ready => {
            return ok(
                type_,
                format!(
                    "Deployment {deployment}: {}/{} replicas Ready on the current template",
                    workload.ready_replicas, workload.desired_replicas
                ),
            );
        }
        WorkloadState::ReplicaFailure(m) => ("ReplicaFailure", m),
        WorkloadState::RolloutStuck(m) => ("RolloutStuck", m),
        WorkloadState::SecretNotFound(m) => ("SecretNotFound", m),
        WorkloadState::SecretKeyMissing(m) => ("SecretKeyMissing", m),
        WorkloadState::ConfigMapNotFound(m) => ("ConfigMapNotFound", m),
        WorkloadState::PodUnschedulable(m) => ("PodUnschedulable", m),
        WorkloadState::ImagePullFailed(m) => ("ImagePullFailed", m),
        WorkloadState::CrashLoopBackOff(m) => ("CrashLoopBackOff", m),
        WorkloadState::RolloutInProgress(m) => ("RolloutInProgress", m),
        WorkloadState::PodNotReady(m) => ("PodNotReady", m),
    };
    let message = if fact.starts_with(&format!("Deployment {deployment}")) {
        fact.clone()
    } else {
        format!("Deployment {deployment}: {fact}")
    };
    fails(type_, reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConditionStatus;
    use crate::mock::{workload_in, workload_ready};
    use crate::spec::COMMON_REASONS;

    const TYPE: &str = "WorkloadReady";

    #[test]
    fn a_ready_deployment_is_true() {
        let c = condition(TYPE, "a", &Ok(Some(workload_ready("ns", "a", 2))));
        assert_eq!(c.status, ConditionStatus::True);
        assert_eq!(
            c.message,
            "Deployment a: 2/2 replicas Ready on the current template"
        );
    }

    #[test]
    fn states_are_copied_with_the_deployment_name_once() {
        let w = workload_in(
            "ns",
            "a",
            WorkloadState::PodNotReady("Deployment a: 0/1 Ready".into()),
        );
        let c = from_state(TYPE, "a", &w);
        assert_eq!(
            (c.status, c.reason.as_str()),
            (ConditionStatus::False, "PodNotReady")
        );
        assert_eq!(c.message, "Deployment a: 0/1 Ready");
        let w = workload_in(
            "ns",
            "a",
            WorkloadState::CrashLoopBackOff("back-off".into()),
        );
        assert_eq!(from_state(TYPE, "a", &w).message, "Deployment a: back-off");
    }

    #[test]
    fn every_reason_copied_is_a_common_reason_and_listed_in_reasons() {
        let states = [
            WorkloadState::ReplicaFailure(String::new()),
            WorkloadState::RolloutStuck(String::new()),
            WorkloadState::SecretNotFound(String::new()),
            WorkloadState::SecretKeyMissing(String::new()),
            WorkloadState::ConfigMapNotFound(String::new()),
            WorkloadState::PodUnschedulable(String::new()),
            WorkloadState::ImagePullFailed(String::new()),
            WorkloadState::CrashLoopBackOff(String::new()),
            WorkloadState::RolloutInProgress(String::new()),
            WorkloadState::PodNotReady(String::new()),
        ];
        assert_eq!(REASONS.len(), states.len(), "REASONS lists only these");
        for state in states {
            let reason = from_state(TYPE, "a", &workload_in("ns", "a", state)).reason;
            assert!(COMMON_REASONS.iter().any(|(n, _)| *n == reason), "{reason}");
            assert!(REASONS.contains(&reason.as_str()), "{reason}");
        }
    }

    #[test]
    fn not_observed_deleted_or_unread_is_reconciling() {
        let c = condition(TYPE, "a", &Ok(None));
        assert_eq!(
            (c.status, c.reason.as_str()),
            (ConditionStatus::Unknown, RECONCILING)
        );
        assert_eq!(c.message, "Deployment a is not observed yet");
        let mut w = workload_ready("ns", "a", 1);
        w.meta.deletion = Some(crate::Timestamp {
            seconds: 1,
            nanos: 0,
        });
        assert_eq!(
            from_state(TYPE, "a", &w).message,
            "Deployment a is being deleted"
        );
        let c = condition(TYPE, "a", &Err(ReadError::Failed("not synced".into())));
        assert_eq!(c.status, ConditionStatus::Unknown);
        assert_eq!(c.message, "could not read Deployment a: not synced");
    }
}
