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

pub fn deployment_name(agent: &str) -> String {
    format!("{agent}-evidence-agent")
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

/// `{"x": {"x": ... {"leaf": 1}}}`, `levels` objects deep: what an attacker
/// nests past what kube's client (128) and the host (100) decode.
pub fn nested(levels: usize) -> Value {
    let mut value = json!({"leaf": 1});
    for _ in 1..levels {
        value = json!({ "x": value });
    }
    value
}
