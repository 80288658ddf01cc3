//! ConfigurationValid: the Cluster `spec.cluster` names, reported and never a stall, and the orphan grace the operator was configured with.

use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{Availability, Condition, Evaluation, Facts, read};

use crate::registry::{
    CLUSTER_NOT_FOUND, CONFIGURATION_VALID, DEFAULT_ORPHAN_GRACE_SECONDS, MAX_ORPHAN_GRACE_SECONDS,
    ORPHAN_GRACE_SETTING, cluster_kind,
};
use crate::spec::AccessSpec;

/// The orphan grace in seconds, and a note when the setting could not be
/// used (the one-minute default applies then).
pub fn orphan_grace(input: &Evaluation) -> (u32, Option<String>) {
    match input.setting(ORPHAN_GRACE_SETTING) {
        None => (DEFAULT_ORPHAN_GRACE_SECONDS, None),
        Some(text) => match text.trim().parse::<u32>() {
            Ok(s) if (1..=MAX_ORPHAN_GRACE_SECONDS).contains(&s) => (s, None),
            _ => (
                DEFAULT_ORPHAN_GRACE_SECONDS,
                Some(format!(
                    "setting {ORPHAN_GRACE_SETTING} {text:?} is not a number of seconds from 1 to {MAX_ORPHAN_GRACE_SECONDS}: the grace of an approval in flight is the default {DEFAULT_ORPHAN_GRACE_SECONDS} s"
                )),
            ),
        },
    }
}

/// ConfigurationValid. False (ClusterNotFound) when `spec.cluster.name`
/// names no Cluster of the namespace, or the Cluster API is not usable
/// there: reported, never a stall, and the RoleBinding is judged all the
/// same. True says the grant covers every Cluster of the namespace (a
/// RoleBinding grants namespace-wide). A failed read is Unknown and tried
/// again.
pub fn evaluate(
    facts: &dyn Facts,
    namespace: &str,
    spec: &AccessSpec,
    notes: &[String],
) -> (Condition, Option<u32>) {
    let suffix = notes.iter().map(|n| format!("; {n}")).collect::<String>();
    let missing = |why: String| {
        fails(
            CONFIGURATION_VALID,
            CLUSTER_NOT_FOUND,
            format!("{why}; expiry and revocation keep working{suffix}"),
        )
    };
    if spec.cluster.is_empty() {
        return (missing("spec.cluster.name is not set".to_owned()), None);
    }
    let cluster = &spec.cluster;
    match facts.api_availability(&cluster_kind(), namespace) {
        Availability::Available => {}
        Availability::NotServed => {
            return (
                missing(format!(
                    "spec.cluster.name {cluster} names no Cluster: the CloudNativePG Cluster API (postgresql.cnpg.io/v1) is not served"
                )),
                None,
            );
        }
        Availability::Forbidden => {
            return (
                missing(format!(
                    "spec.cluster.name {cluster} names no Cluster the operator may read: it may not read CloudNativePG Clusters in {namespace}"
                )),
                None,
            );
        }
    }
    match facts.get(&cluster_kind(), namespace, cluster) {
        Ok(Some(_)) => (
            ok(
                CONFIGURATION_VALID,
                format!(
                    "Cluster {cluster} exists; the grant covers every Cluster of namespace {namespace}{suffix}"
                ),
            ),
            None,
        ),
        Ok(None) => (
            missing(format!(
                "spec.cluster.name {cluster} names no Cluster in namespace {namespace}"
            )),
            None,
        ),
        Err(e) => (
            unknown(
                CONFIGURATION_VALID,
                RECONCILING,
                read::failure(&format!("Cluster {cluster}"), &e),
            ),
            Some(read::RETRY_SECONDS),
        ),
    }
}
