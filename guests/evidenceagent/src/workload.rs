//! WorkloadReady: the Secrets the ObjectStore references hold their keys, and the agent's Deployment runs Ready.

use std::collections::BTreeMap;

use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{
    Condition, Facts, SecretFact, VerdictBuilder, WorkloadFact, WorkloadState,
};

use crate::objectstore::SecretRef;
use crate::read;
use crate::registry::*;

/// Decides WorkloadReady for the Deployment `deployment`, whose container
/// reads the ObjectStore `object_store`'s `secrets`.
pub fn evaluate(
    facts: &dyn Facts,
    namespace: &str,
    deployment: &str,
    object_store: &str,
    secrets: &[SecretRef],
    verdict: &mut VerdictBuilder,
) {
    let condition = match referenced_secrets(facts, namespace, object_store, secrets) {
        Err(message) => {
            verdict.requeue_after(read::RETRY_SECONDS);
            unknown(WORKLOAD_READY, RECONCILING, message)
        }
        Ok(Some(condition)) => condition,
        Ok(None) => match facts.workload(namespace, deployment) {
            Ok(Some(workload)) => from_state(deployment, &workload),
            Ok(None) => unknown(
                WORKLOAD_READY,
                RECONCILING,
                format!("Deployment {deployment} is not observed yet"),
            ),
            Err(error) => {
                verdict.requeue_after(read::RETRY_SECONDS);
                unknown(
                    WORKLOAD_READY,
                    RECONCILING,
                    read::failure(&format!("Deployment {deployment}"), &error),
                )
            }
        },
    };
    verdict.aspect(condition);
}

/// SecretNotFound or SecretKeyMissing for the ObjectStore's Secrets, None
/// when every key is there; Err with the message when a read failed.
fn referenced_secrets(
    facts: &dyn Facts,
    namespace: &str,
    object_store: &str,
    secrets: &[SecretRef],
) -> Result<Option<Condition>, String> {
    let mut found: BTreeMap<&str, Option<SecretFact>> = BTreeMap::new();
    for r in secrets {
        if !found.contains_key(r.name.as_str()) {
            let secret = facts
                .secret(namespace, &r.name)
                .map_err(|e| read::failure(&format!("Secret {}", r.name), &e))?;
            found.insert(&r.name, secret);
        }
    }
    let mut absent_fields: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in secrets {
        if found.get(r.name.as_str()).is_some_and(Option::is_none) {
            absent_fields.entry(&r.name).or_default().push(&r.field);
        }
    }
    let absent: Vec<String> = absent_fields
        .iter()
        .map(|(name, fields)| format!("Secret {name} ({})", fields.join(", ")))
        .collect();
    if !absent.is_empty() {
        return Ok(Some(fails(
            WORKLOAD_READY,
            SECRET_NOT_FOUND,
            format!(
                "ObjectStore {object_store} references Secrets that do not exist in {namespace}: {}",
                absent.join(", ")
            ),
        )));
    }
    let keyless: Vec<String> = secrets
        .iter()
        .filter(|r| {
            found
                .get(r.name.as_str())
                .and_then(Option::as_ref)
                .is_some_and(|s| !s.keys.contains(&r.key))
        })
        .map(|r| format!("Secret {} has no key {} ({})", r.name, r.key, r.field))
        .collect();
    Ok((!keyless.is_empty()).then(|| {
        fails(
            WORKLOAD_READY,
            SECRET_KEY_MISSING,
            format!("ObjectStore {object_store}: {}", keyless.join("; ")),
        )
    }))
}

/// The host's classification of the Deployment, as WorkloadReady; the
/// fact's message starts with the Deployment (prefixed when it does not already).
fn from_state(deployment: &str, workload: &WorkloadFact) -> Condition {
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
