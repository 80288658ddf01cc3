//! What the PgAdmin tests create and stand in for: PgAdmins, PgAdminAccesses, CloudNativePG Clusters and Poolers, the CloudNativePG and PgAdminAccess CRDs a PgAdmin reads, and the Job controller's verdict on a Job (no Job controller runs beside the test API server).

use kube::api::{Api, DynamicObject};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::objects::{api, merge_status};
use crate::operator::{Guests, eventually};

pub const API_VERSION: &str = "pgtoolbox.fyannk.dev/v1alpha1";
pub const KIND: &str = "PgAdmin";
/// The image the operator's settings default to and allow.
pub const IMAGE: &str = "docker.io/dpage/pgadmin4:9.3";

/// The PgAdmin guest, with the settings every host of the PgAdmin tests
/// runs with.
pub const PGADMIN: Guests = Guests {
    dir: "pgadmin-tests",
    crates: &["pgadmin-guest"],
    settings: &[
        "PgAdmin.defaultImage=docker.io/dpage/pgadmin4:9.3",
        "PgAdmin.allowedImageRepositories=docker.io/dpage/",
        "PgAdmin.allowedHostSuffixes=.apps.example.com",
    ],
    // The test server serves neither OpenShift Routes nor the Gateway API.
    expected_warnings: &[
        "optional API not served: the feature is off until the next start kind=route.openshift.io/v1/Route",
        "optional API not served: the feature is off until the next start kind=gateway.networking.k8s.io/v1/HTTPRoute",
    ],
};

pub fn pgadmins(client: &Client, ns: &str) -> Api<DynamicObject> {
    api(client, ns, API_VERSION, KIND)
}

pub fn jobs(client: &Client, ns: &str) -> Api<DynamicObject> {
    api(client, ns, "batch/v1", "Job")
}

pub fn pgadmin(name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec})
}

/// A CloudNativePG Cluster with `labels`.
pub fn pg_cluster(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
        "metadata": {"name": name, "labels": labels}, "spec": {"instances": 1}})
}

/// A Pooler of `cluster`.
pub fn pooler(name: &str, cluster: &str) -> Value {
    json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Pooler",
        "metadata": {"name": name}, "spec": {"cluster": {"name": cluster}, "type": "rw"}})
}

/// The CRDs of `examples/crds/cloudnative-pg-pgadmin.yaml` (Pooler,
/// Database, DatabaseRole), installed before a host starts so that it
/// probes them served.
pub async fn install_cloudnative_pg_crds(client: &Client) {
    let text = include_str!("../../../examples/crds/cloudnative-pg-pgadmin.yaml");
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value = <Value as serde::Deserialize>::deserialize(doc).expect("YAML");
        if value.is_null() {
            continue;
        }
        let crd = serde_json::from_value(value).expect("a CRD");
        reconciler_testsupport::install_crd(client, crd)
            .await
            .expect("installing a CRD");
    }
}

/// The PgAdminAccess CRD (`deploy/pgadminaccess-crd.yaml`), installed
/// before a host starts so that it probes the kind served.
pub async fn install_pgadmin_access_crd(client: &Client) {
    let text = include_str!("../../../deploy/pgadminaccess-crd.yaml");
    let crd = serde_yaml::from_str(text).expect("a CRD");
    reconciler_testsupport::install_crd(client, crd)
        .await
        .expect("installing the PgAdminAccess CRD");
}

/// A PgAdminAccess granting the PgAdmins `pgadmins` (namespace, name) the
/// Clusters `clusters` of its namespace.
pub fn pgadmin_access(name: &str, pgadmins: &[(&str, &str)], clusters: &[&str]) -> Value {
    let pgadmins: Vec<Value> = pgadmins
        .iter()
        .map(|(namespace, name)| json!({"namespace": namespace, "name": name}))
        .collect();
    let clusters: Vec<Value> = clusters.iter().map(|c| json!({"name": c})).collect();
    json!({"apiVersion": API_VERSION, "kind": "PgAdminAccess", "metadata": {"name": name},
        "spec": {"pgAdmins": pgadmins, "clusters": clusters}})
}

/// The PgAdmin's Jobs of `component` (registration, upgrade-backup).
pub async fn component_jobs(client: &Client, ns: &str, component: &str) -> Vec<Value> {
    let mut found: Vec<Value> = jobs(client, ns)
        .list(&Default::default())
        .await
        .expect("listing Jobs")
        .items
        .into_iter()
        .filter(|j| {
            j.labels()
                .get("app.kubernetes.io/component")
                .map(String::as_str)
                == Some(component)
                && j.metadata.deletion_timestamp.is_none()
        })
        .map(|j| serde_json::to_value(j).expect("JSON"))
        .collect();
    found.sort_by_key(|j| {
        j["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    found
}

/// The one Job of `component` other than `except`, once it exists.
pub async fn the_job(client: &Client, ns: &str, component: &str, except: Option<&str>) -> Value {
    eventually(&format!("a {component} Job"), async || {
        let found: Vec<Value> = component_jobs(client, ns, component)
            .await
            .into_iter()
            .filter(|j| j["metadata"]["name"].as_str() != except)
            .collect();
        match found.as_slice() {
            [job] => Ok(job.clone()),
            other => Err(other.len()),
        }
    })
    .await
}

/// How a Job ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    Succeeded,
    Failed,
}

/// Writes the status the Job controller writes when the Job `name` ends
/// with `outcome` (its Pods never existed: no Job controller runs beside
/// the test API server).
pub async fn end_as_job_controller(client: &Client, ns: &str, name: &str, outcome: JobOutcome) {
    let start = "2026-01-01T00:00:00Z";
    let end = "2026-01-01T00:00:10Z";
    let condition = |type_: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": "True", "reason": reason, "message": message,
            "lastProbeTime": end, "lastTransitionTime": end})
    };
    let status = match outcome {
        JobOutcome::Succeeded => json!({
        "startTime": start, "completionTime": end, "succeeded": 1, "active": 0,
        "conditions": [
            condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
            condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
        ]}),
        JobOutcome::Failed => json!({
        "startTime": start, "failed": 3, "active": 0,
        "conditions": [
            condition("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
            condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ]}),
    };
    merge_status(&jobs(client, ns), name, status).await;
}

/// Writes the status CloudNativePG writes once it has applied the
/// DatabaseRole or Database `name` (`kind`) in PostgreSQL: `applied`, and
/// for a DatabaseRole the Secret it generated the password into (no
/// CloudNativePG runs beside the test API server).
pub async fn report_applied_as_cloudnative_pg(
    client: &Client,
    ns: &str,
    kind: &str,
    name: &str,
    password_secret: Option<&str>,
) {
    let mut status = json!({"applied": true});
    if let Some(secret) = password_secret {
        status["passwordSecret"] = json!({"name": secret});
    }
    merge_status(
        &api(client, ns, "postgresql.cnpg.io/v1", kind),
        name,
        status,
    )
    .await;
}
