//! WorkloadReady: the Secrets the ObjectStore references hold their keys, and the agent's Deployment runs Ready.

use std::collections::BTreeMap;

use reconciler_guest_sdk::verdict::{RECONCILING, fails, unknown};
use reconciler_guest_sdk::{Condition, Facts, SecretFact, VerdictBuilder, read, workload};

use crate::objectstore::SecretRef;
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
        Ok(None) => {
            let observed = facts.workload(namespace, deployment);
            if observed.is_err() {
                verdict.requeue_after(read::RETRY_SECONDS);
            }
            workload::condition(WORKLOAD_READY, deployment, &observed)
        }
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
