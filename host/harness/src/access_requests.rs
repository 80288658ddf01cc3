//! The people around PgAccessRequests in the tests: `deploy/`'s admission policy and roles applied as shipped and awaited until enforced, users bound to those roles in a namespace (with `bind` on the ClusterRole they grant), and the Events about a request with their times.

use k8s_openapi::api::events::v1::Event;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};
use kube::{Api, Client};
use reconciler_testsupport::{Access, await_access};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::makefile::workspace;

/// The field manager the tests apply their setup with.
const MANAGER: &str = "accessrequest-test";

/// Every document of a YAML file of `deploy/`.
pub fn deploy_documents(file: &str) -> Vec<Value> {
    let path = workspace().join("deploy").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{file}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

/// Server-side applies `manifest` (any kind, namespaced ones in `namespace`).
pub async fn apply(client: &Client, namespace: &str, manifest: &Value) {
    let (group, version) = match manifest["apiVersion"].as_str().expect("apiVersion") {
        v if v.contains('/') => v.split_once('/').expect("group/version"),
        v => ("", v),
    };
    let gvk = GroupVersionKind::gvk(group, version, manifest["kind"].as_str().expect("kind"));
    let (resource, caps) = pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("{gvk:?} is served: {e}"));
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), namespace, &resource),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let name = manifest["metadata"]["name"].as_str().expect("a name");
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(manifest),
    )
    .await
    .unwrap_or_else(|e| panic!("applying {} {name}: {e}", gvk.kind));
}

/// `deploy/accessrequest-rbac.yaml` and `deploy/accessrequest-admission.yaml`
/// as shipped (cluster-scoped: the same for every test; applying them again
/// changes nothing).
pub async fn install_shipped(client: &Client) {
    for file in ["accessrequest-rbac.yaml", "accessrequest-admission.yaml"] {
        for manifest in deploy_documents(file) {
            apply(client, "", &manifest).await;
        }
    }
}

/// The ClusterRole `role`, granting `list` and `get` on CloudNativePG
/// Clusters: what the tests' requests ask for.
pub async fn reader_role(client: &Client, role: &str) {
    apply(
        client,
        "",
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [{"apiGroups": ["postgresql.cnpg.io"], "resources": ["clusters"], "verbs": ["get", "list"]}],
        }),
    )
    .await;
}

/// Binds `user` to the ClusterRole `role` in `namespace` (as the
/// administrator, the test's setup).
pub async fn bind(client: &Client, namespace: &str, user: &str, role: &str) {
    let name = format!("{}-{role}", user.split('@').next().unwrap_or(user));
    apply(
        client,
        namespace,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }),
    )
    .await;
}

/// Makes `user` an approver in `namespace` who may bind the ClusterRole
/// `grantable` (the shipped approver role, and `bind` on that ClusterRole by
/// name, as README's "Approving" tells an administrator), and waits until
/// the authorizer says so.
pub async fn approver(client: &Client, namespace: &str, user: &str, grantable: &str) {
    let bind_role = format!("pgaccessrequest-bind-{grantable}");
    apply(
        client,
        "",
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": bind_role},
            "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                       "verbs": ["bind"], "resourceNames": [grantable]}],
        }),
    )
    .await;
    bind(client, namespace, user, "pgaccessrequest-approver").await;
    bind(client, namespace, user, &bind_role).await;
    let access = |verb, group, resource| Access {
        verb,
        group,
        resource,
        namespace: Some(namespace),
    };
    await_access(
        client,
        user,
        &[],
        &[
            access("decide", "pgtoolbox.fyannk.dev", "pgaccessrequests"),
            access("patch", "pgtoolbox.fyannk.dev", "pgaccessrequests/status"),
            access("create", "rbac.authorization.k8s.io", "rolebindings"),
        ],
    )
    .await
    .expect("the approver's grants");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !allowed(
        client,
        user,
        "bind",
        "rbac.authorization.k8s.io",
        "clusterroles",
        namespace,
        grantable,
    )
    .await
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{user} still may not bind ClusterRole {grantable} in {namespace} after 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Makes `user` a requester in `namespace` and waits until it may create
/// requests.
pub async fn requester(client: &Client, namespace: &str, user: &str) {
    bind(client, namespace, user, "pgaccessrequest-requester").await;
    await_access(
        client,
        user,
        &[],
        &[Access {
            verb: "create",
            group: "pgtoolbox.fyannk.dev",
            resource: "pgaccessrequests",
            namespace: Some(namespace),
        }],
    )
    .await
    .expect("the requester's grant");
}

/// Furnishes `namespace` for PgAccessRequests: the CRDs, `deploy/`'s
/// admission policy and roles as shipped, the ClusterRole `reader`,
/// `requester_user` a requester and `approver_user` an approver of it, and
/// the CloudNativePG Cluster `orders` the requests name.
pub async fn furnish(
    admin: &Client,
    namespace: &str,
    reader: &str,
    requester_user: &str,
    approver_user: &str,
) {
    crate::operator::install_crds(admin).await;
    install_shipped(admin).await;
    reader_role(admin, reader).await;
    requester(admin, namespace, requester_user).await;
    approver(admin, namespace, approver_user, reader).await;
    crate::objects::create(
        admin,
        namespace,
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
               "metadata": {"name": "orders"}, "spec": {"instances": 1}}),
    )
    .await;
}

/// Who the API server says `client` is: its username and groups (`kubectl
/// auth whoami`); a decision or revocation is stamped with exactly those.
pub async fn whoami(client: &Client) -> (String, Vec<String>) {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    let review: SelfSubjectReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
    }))
    .expect("a review");
    let answer = Api::<SelfSubjectReview>::all(client.clone())
        .create(&kube::api::PostParams::default(), &review)
        .await
        .expect("a SelfSubjectReview");
    let info = answer
        .status
        .and_then(|s| s.user_info)
        .expect("the user's info");
    (
        info.username.unwrap_or_default(),
        info.groups.unwrap_or_default(),
    )
}

/// Whether `user` may `verb` CloudNativePG Clusters in `namespace`, as the
/// API server's authorizer answers now.
pub async fn may(client: &Client, user: &str, verb: &str, namespace: &str) -> bool {
    allowed(
        client,
        user,
        verb,
        "postgresql.cnpg.io",
        "clusters",
        namespace,
        "",
    )
    .await
}

/// Whether `user` may `verb` `resource` of `group` in `namespace` (the
/// object `name`, or any when empty), as the authorizer answers now.
async fn allowed(
    client: &Client,
    user: &str,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> bool {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_owned()),
                group: Some(group.to_owned()),
                resource: Some(resource.to_owned()),
                namespace: Some(namespace.to_owned()),
                name: (!name.is_empty()).then(|| name.to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<SubjectAccessReview>::all(client.clone())
        .create(&Default::default(), &review)
        .await
        .expect("a SubjectAccessReview")
        .status
        .is_some_and(|s| s.allowed)
}

/// An Event about one object, with when it was published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedEvent {
    pub type_: String,
    pub reason: String,
    pub note: String,
    /// How many times it was published (a series counts each).
    pub count: i32,
    /// Its `eventTime`: when the host first published it.
    pub time: jiff::Timestamp,
}

/// The Events (events.k8s.io/v1) about the `kind` `name` in `namespace`,
/// oldest first.
pub async fn events_of(
    client: &Client,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Vec<TimedEvent> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut found: Vec<TimedEvent> = api
        .list(&ListParams::default())
        .await
        .expect("listing Events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name))
        })
        .map(|e| TimedEvent {
            type_: e.type_.unwrap_or_default(),
            reason: e.reason.unwrap_or_default(),
            note: e.note.unwrap_or_default(),
            count: e.series.map_or(1, |s| s.count),
            time: e.event_time.map_or(jiff::Timestamp::UNIX_EPOCH, |t| t.0),
        })
        .collect();
    found.sort_by_key(|e| e.time);
    found
}
