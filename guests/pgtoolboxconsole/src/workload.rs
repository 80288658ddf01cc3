//! WorkloadReady: the OAuth2 client Secret holds its keys, and the console's Deployment runs Ready.

use reconciler_guest_sdk::verdict::{RECONCILING, fails, unknown};
use reconciler_guest_sdk::{Condition, Facts, ReadError, WorkloadFact, read};

use crate::children::OAUTH_CLIENT_KEYS;
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
    Workload {
        condition: reconciler_guest_sdk::workload::condition(WORKLOAD_READY, deployment, workload),
        retry: workload.is_err(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::ConditionStatus;
    use reconciler_guest_sdk::mock::{MockFacts, workload_ready};

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
    fn a_deployment_not_observed_is_reconciling() {
        let v = evaluate(&MockFacts::at(0), "ns", "a-console", &Ok(None), None);
        assert_eq!(v.condition.status, ConditionStatus::Unknown);
        assert!(!v.retry);
    }
}
