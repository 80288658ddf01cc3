//! The objects of the tests, built from JSON after `examples/evidenceagents.yaml`
//! (`orders` healthy, `billing` in CrashLoopBackOff), and their creation the
//! way `examples/apply` does it: create, then write `.status` through the
//! status subresource, as a cluster's controllers would have.

use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Api, Client};
use serde_json::{Value, json};

/// The EvidenceAgent's API.
pub const GROUP: &str = "pgtoolbox.fyannk.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "EvidenceAgent";
/// The pause annotation of the kind.
pub const PAUSE_KEY: &str = "pgtoolbox.fyannk.dev/reconcile";

/// The shared Cluster, its ObjectStore and the credentials Secret.
pub const CLUSTER: &str = "pg";
pub const OBJECT_STORE: &str = "backups";
pub const CREDENTIALS: &str = "aws-creds";

/// The image the operator's settings default to and allow.
pub const IMAGE: &str = "ghcr.io/fyannk/evidence-agent:1.0";

/// The API resource of an object's `apiVersion` and `kind` (every kind the
/// tests create pluralises regularly: `-s`, `-s` to `-ses`, or `-y` to
/// `-ies`).
pub fn resource_of(api_version: &str, kind: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let lower = kind.to_lowercase();
    let plural = if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &plural)
}

/// The API of a kind in `ns`; `""` for a cluster-scoped kind.
pub fn api(client: &Client, ns: &str, api_version: &str, kind: &str) -> Api<DynamicObject> {
    if ns.is_empty() {
        Api::all_with(client.clone(), &resource_of(api_version, kind))
    } else {
        Api::namespaced_with(client.clone(), ns, &resource_of(api_version, kind))
    }
}

pub fn agents(client: &Client, ns: &str) -> Api<DynamicObject> {
    api(client, ns, &format!("{GROUP}/{VERSION}"), KIND)
}

pub fn pods(client: &Client, ns: &str) -> Api<DynamicObject> {
    api(client, ns, "v1", "Pod")
}

fn api_for(client: &Client, ns: &str, object: &Value) -> Api<DynamicObject> {
    api(
        client,
        ns,
        object["apiVersion"].as_str().expect("apiVersion"),
        object["kind"].as_str().expect("kind"),
    )
}

/// Creates `object` in `ns`, then writes the `status` it carries (if any)
/// through the status subresource.
pub async fn create(client: &Client, ns: &str, object: Value) {
    let api = api_for(client, ns, &object);
    let name = object["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let what = format!("{} {name}", object["kind"]);
    let status = object.get("status").cloned();
    let typed: DynamicObject = serde_json::from_value(object).expect("an object");
    api.create(&PostParams::default(), &typed)
        .await
        .unwrap_or_else(|e| panic!("creating {what}: {e}"));
    if let Some(status) = status {
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .unwrap_or_else(|e| panic!("writing the status of {what}: {e}"));
    }
}

pub async fn create_all(client: &Client, ns: &str, objects: Vec<Value>) {
    for o in objects {
        create(client, ns, o).await;
    }
}

/// A JSON merge patch of an object's metadata or spec.
pub async fn merge(api: &Api<DynamicObject>, name: &str, patch: Value) {
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("patching {name}: {e}"));
}

/// A JSON merge patch of an object's status (lists are replaced whole).
pub async fn merge_status(api: &Api<DynamicObject>, name: &str, status: Value) {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap_or_else(|e| panic!("patching the status of {name}: {e}"));
}

pub async fn delete(api: &Api<DynamicObject>, name: &str) {
    api.delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting {name}: {e}"));
}

pub fn agent(name: &str, cluster: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {"cluster": {"name": cluster}},
    })
}

/// A Cluster archiving with the Barman Cloud plugin to `object_store`.
pub fn cluster(name: &str, object_store: &str) -> Value {
    json!({
        "apiVersion": "postgresql.cnpg.io/v1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {
            "instances": 3,
            "storage": {"size": "10Gi"},
            "plugins": [{
                "name": "barman-cloud.cloudnative-pg.io",
                "isWALArchiver": true,
                "parameters": {"barmanObjectName": object_store},
            }],
        },
    })
}

/// An AWS S3 ObjectStore whose credentials are in the Secret `secret`.
pub fn object_store(name: &str, secret: &str) -> Value {
    let key = |k: &str| json!({"name": secret, "key": k});
    json!({
        "apiVersion": "barmancloud.cnpg.io/v1",
        "kind": "ObjectStore",
        "metadata": {"name": name},
        "spec": {
            "configuration": {
                "destinationPath": "s3://evidence-backups/pg",
                "s3Credentials": {
                    "accessKeyId": key("ACCESS_KEY_ID"),
                    "secretAccessKey": key("ACCESS_SECRET_KEY"),
                    "region": key("REGION"),
                },
                "wal": {"compression": "gzip"},
            },
            "retentionPolicy": "30d",
        },
    })
}

/// The credentials Secret `object_store` refers to.
pub fn credentials(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": "Opaque",
        "data": {
            "ACCESS_KEY_ID": "QUtJQUVYQU1QTEU=",
            "ACCESS_SECRET_KEY": "c2VjcmV0",
            "REGION": "ZXUtd2VzdC0z",
        },
    })
}

/// The Cluster, its ObjectStore and the credentials every agent shares.
pub fn backup_setup() -> Vec<Value> {
    vec![
        cluster(CLUSTER, OBJECT_STORE),
        object_store(OBJECT_STORE, CREDENTIALS),
        credentials(CREDENTIALS),
    ]
}

fn workload_labels(agent: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "evidence-agent",
        "app.kubernetes.io/instance": agent,
    })
}

pub fn deployment_name(agent: &str) -> String {
    format!("{agent}-evidence-agent")
}

pub fn pod_name(agent: &str) -> String {
    format!("{agent}-evidence-agent-7d9f8c6b5-x2k4p")
}

/// The serving certificate the service CA would have issued.
pub fn serving_cert(agent: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": format!("{agent}-serving-cert"),
            "annotations": {
                "service.beta.openshift.io/expiry": "2028-11-28T12:00:00Z",
                "service.beta.openshift.io/originating-service-name": deployment_name(agent),
            },
        },
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "LS0tLS1CRUdJTi0tLS0t", "tls.key": "LS0tLS1CRUdJTi0tLS0t"},
    })
}

/// The CA bundle ConfigMap, injected.
pub fn service_ca(agent: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("{agent}-service-ca"),
            "annotations": {"service.beta.openshift.io/inject-cabundle": "true"},
        },
        "data": {"service-ca.crt": "-----BEGIN CERTIFICATE-----\n"},
    })
}

pub fn service(agent: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": deployment_name(agent),
            "annotations": {
                "service.beta.openshift.io/serving-cert-secret-name": format!("{agent}-serving-cert"),
            },
        },
        "spec": {
            "selector": workload_labels(agent),
            "ports": [{"name": "https", "port": 8443, "targetPort": 8443}],
        },
    })
}

/// The agent's Deployment, rolled out, its replica ready or not.
pub fn deployment(agent: &str, ready: bool) -> Value {
    let ready = i32::from(ready);
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": deployment_name(agent), "labels": workload_labels(agent)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": workload_labels(agent)},
            "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"labels": workload_labels(agent)},
                "spec": {"containers": [{"name": "agent", "image": IMAGE}]},
            },
        },
        "status": {
            "observedGeneration": 1,
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ],
        },
    })
}

/// What the agent's container is doing.
#[derive(Clone, Debug)]
pub enum PodState {
    Running,
    CrashLoop {
        restarts: i32,
        back_off: &'static str,
    },
}

pub fn pod_status(agent: &str, state: &PodState) -> Value {
    let (ready, restarts, container_state) = match state {
        PodState::Running => (
            true,
            0,
            json!({"running": {"startedAt": "2026-11-29T11:50:00Z"}}),
        ),
        PodState::CrashLoop { restarts, back_off } => (
            false,
            *restarts,
            json!({"waiting": {
                "reason": "CrashLoopBackOff",
                "message": format!(
                    "back-off {back_off} restarting failed container=agent pod={}_ns",
                    pod_name(agent)
                ),
            }}),
        ),
    };
    let ready_text = if ready { "True" } else { "False" };
    json!({
        "phase": "Running",
        "podIP": "10.128.2.17",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": ready_text},
        ],
        "containerStatuses": [{
            "name": "agent",
            "ready": ready,
            "restartCount": restarts,
            "image": IMAGE,
            "imageID": "",
            "state": container_state,
        }],
    })
}

pub fn pod(agent: &str, state: &PodState) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name(agent), "labels": workload_labels(agent)},
        "spec": {
            "nodeName": "worker-1",
            "containers": [{"name": "agent", "image": IMAGE}],
        },
        "status": pod_status(agent, state),
    })
}

/// Every child of `agent` the guest reads, its Pod in `state`.
pub fn children(agent: &str, state: &PodState) -> Vec<Value> {
    let ready = matches!(state, PodState::Running);
    vec![
        serving_cert(agent),
        service_ca(agent),
        service(agent),
        deployment(agent, ready),
        pod(agent, state),
    ]
}

pub fn crash_loop() -> PodState {
    PodState::CrashLoop {
        restarts: 5,
        back_off: "5m0s",
    }
}

/// The Pods of `agent` (label `app.kubernetes.io/instance`), as the
/// controllers made them from its Deployment, not being deleted.
pub async fn agent_pods(client: &Client, ns: &str, agent: &str) -> Vec<Value> {
    let params =
        kube::api::ListParams::default().labels(&format!("app.kubernetes.io/instance={agent}"));
    pods(client, ns)
        .list(&params)
        .await
        .unwrap_or_else(|e| panic!("listing the Pods of {agent}: {e}"))
        .items
        .into_iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .filter(|p| !p["metadata"]["deletionTimestamp"].is_string())
        .collect()
}

/// The name of the agent's serving certificate Secret.
pub fn serving_cert_name(agent: &str) -> String {
    format!("{agent}-serving-cert")
}
