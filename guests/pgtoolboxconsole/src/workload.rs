//! WorkloadReady: the OAuth2 client Secret holds its keys, and the console's Deployment runs Ready.

use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{Condition, Facts, ReadError, WorkloadFact, WorkloadState};

use crate::children::OAUTH_CLIENT_KEYS;
use crate::read;
use crate::registry::*;

/// What WorkloadReady found: the condition, and whether a read failed (the
/// pass is then retried soon).
pub struct Workload {
    pub condition: Condition,
    pub retry: bool,
}

/// Decides WorkloadReady from the Deployment `deployment` (already read:
/// `workload`) and the OAuth2 client Secret `client_secret`, if any.
pub fn evaluate(
    facts: &dyn Facts,
    namespace: &str,
    deployment: &str,
    workload: &Result<Option<WorkloadFact>, ReadError>,
    client_secret: Option<&str>,
) -> Workload {
    if let Some(name) = client_secret {
        match facts.secret(namespace, name) {
            Ok(Some(secret)) => {
                let missing: Vec<&str> = OAUTH_CLIENT_KEYS
                    .iter()
                    .copied()
                    .filter(|k| !secret.keys.iter().any(|have| have == k))
                    .collect();
                if !missing.is_empty() {
                    return Workload {
                        condition: fails(
                            WORKLOAD_READY,
                            SECRET_KEY_MISSING,
                            format!(
                                "Secret {name} (spec.oauthProxy.clientSecretRef) has no key {}: the OAuth2 proxy cannot start",
                                missing.join(", ")
                            ),
                        ),
                        retry: false,
                    };
                }
            }
            // The configuration checked it exists; gone since: the next
            // pass says so.
            Ok(None) => {}
            Err(e) => {
                return Workload {
                    condition: unknown(
                        WORKLOAD_READY,
                        RECONCILING,
                        read::failure(&format!("Secret {name}"), &e),
                    ),
                    retry: true,
                };
            }
        }
    }
    match workload {
        Ok(Some(w)) => Workload {
            condition: from_state(deployment, w),
            retry: false,
        },
        Ok(None) => Workload {
            condition: unknown(
                WORKLOAD_READY,
                RECONCILING,
                format!("Deployment {deployment} is not observed yet"),
            ),
            retry: false,
        },
        Err(e) => Workload {
            condition: unknown(
                WORKLOAD_READY,
                RECONCILING,
                read::failure(&format!("Deployment {deployment}"), e),
            ),
            retry: true,
        },
    }
}

/// The host's classification of the Deployment, as WorkloadReady; the
/// fact's message starts with the Deployment (prefixed when it does not already).
pub fn from_state(deployment: &str, workload: &WorkloadFact) -> Condition {
    if workload.meta.deletion.is_some() {
        return unknown(
            WORKLOAD_READY,
            RECONCILING,
            format!("Deployment {deployment} is being deleted"),
        );
    }
    let (reason, fact) = match &workload.state {
        WorkloadState::Ready => {
            return ok(
                WORKLOAD_READY,
                format!(
                    "Deployment {deployment}: {}/{} replicas Ready on the current template",
                    workload.ready_replicas, workload.desired_replicas
                ),
            );
        }
        WorkloadState::ReplicaFailure(m) => (REPLICA_FAILURE, m),
        WorkloadState::RolloutStuck(m) => (ROLLOUT_STUCK, m),
        WorkloadState::SecretNotFound(m) => (SECRET_NOT_FOUND, m),
        WorkloadState::SecretKeyMissing(m) => (SECRET_KEY_MISSING, m),
        WorkloadState::ConfigMapNotFound(m) => (CONFIG_MAP_NOT_FOUND, m),
        WorkloadState::PodUnschedulable(m) => (POD_UNSCHEDULABLE, m),
        WorkloadState::ImagePullFailed(m) => (IMAGE_PULL_FAILED, m),
        WorkloadState::CrashLoopBackOff(m) => (CRASH_LOOP_BACK_OFF, m),
        WorkloadState::RolloutInProgress(m) => (ROLLOUT_IN_PROGRESS, m),
        WorkloadState::PodNotReady(m) => (POD_NOT_READY, m),
    };
    let message = if fact.starts_with(&format!("Deployment {deployment}")) {
        fact.clone()
    } else {
        format!("Deployment {deployment}: {fact}")
    };
    fails(WORKLOAD_READY, reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::ConditionStatus;
    use reconciler_guest_sdk::mock::{MockFacts, workload_in, workload_ready};

    #[test]
    fn a_ready_deployment_is_true() {
        let w = Ok(Some(workload_ready("ns", "a-console", 2)));
        let v = evaluate(&MockFacts::at(0), "ns", "a-console", &w, None);
        assert_eq!(v.condition.status, ConditionStatus::True);
        assert!(v.condition.message.contains("2/2"));
    }

    #[test]
    fn a_client_secret_without_its_keys_is_secret_key_missing() {
        let facts = MockFacts::at(0).with_secret("ns", "oidc", &["client-id"]);
        let w = Ok(Some(workload_ready("ns", "a-console", 1)));
        let v = evaluate(&facts, "ns", "a-console", &w, Some("oidc"));
        assert_eq!(v.condition.reason, SECRET_KEY_MISSING);
        assert!(v.condition.message.contains("no key client-secret"));
    }

    #[test]
    fn states_are_copied_with_the_deployment_name_once() {
        let w = workload_in(
            "ns",
            "a-console",
            WorkloadState::PodNotReady("Deployment a-console: 0/1 Ready".into()),
        );
        let c = from_state("a-console", &w);
        assert_eq!(c.reason, POD_NOT_READY);
        assert_eq!(c.message, "Deployment a-console: 0/1 Ready");
        let w = workload_in(
            "ns",
            "a-console",
            WorkloadState::CrashLoopBackOff("back-off".into()),
        );
        assert_eq!(
            from_state("a-console", &w).message,
            "Deployment a-console: back-off"
        );
    }

    #[test]
    fn a_deployment_not_observed_is_reconciling() {
        let v = evaluate(&MockFacts::at(0), "ns", "a-console", &Ok(None), None);
        assert_eq!(v.condition.status, ConditionStatus::Unknown);
        assert!(!v.retry);
    }
}
