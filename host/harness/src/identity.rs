//! A least-privilege identity for a host or CLI under test: RBAC objects
//! applied as admin, and a kubeconfig acting as the user (the admin's,
//! with impersonation).

use std::path::{Path, PathBuf};

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::objects;

/// Server-side applies a cluster-scoped or namespaced RBAC object
/// (`rbac.authorization.k8s.io/v1`) as admin.
pub async fn apply_rbac(client: &Client, object: Value) {
    let kind = object["kind"].as_str().expect("kind").to_owned();
    let name = object["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let resource = objects::resource_of("rbac.authorization.k8s.io/v1", &kind);
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        &name,
        &PatchParams::apply("identity-test").force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap_or_else(|e| panic!("applying {kind} {name}: {e}"));
}

/// A RoleBinding `name` in `namespace` of the `role_kind` (Role or
/// ClusterRole) `role` to the user `user`.
pub fn role_binding(namespace: &str, name: &str, role_kind: &str, role: &str, user: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    })
}

/// A ClusterRoleBinding of the ClusterRole `role` to the user `user`,
/// named after both.
pub fn cluster_role_binding(role: &str, user: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": format!("{user}-{role}")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    })
}

/// Lets `user` read everything in `namespace` and the cluster's
/// ClusterRoles, and nothing more: the read-only reviewer `shadow` runs as.
pub async fn read_only_reviewer(client: &Client, namespace: &str, user: &str) {
    apply_rbac(
        client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "reader", "namespace": namespace},
               "rules": [{"apiGroups": ["*"], "resources": ["*"],
                          "verbs": ["get", "list", "watch"]}]}),
    )
    .await;
    apply_rbac(
        client,
        role_binding(namespace, "reader", "Role", "reader", user),
    )
    .await;
    let cluster_role = format!("{user}-clusterrole-reader");
    apply_rbac(
        client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": cluster_role},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                          "verbs": ["get", "list", "watch"]}]}),
    )
    .await;
    apply_rbac(client, cluster_role_binding(&cluster_role, user)).await;
}

/// The admin kubeconfig of the test API server acting as `user`
/// (impersonation), written to `dir`.
pub fn kubeconfig_as(user: &str, dir: &Path) -> PathBuf {
    let admin = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let mut config = kube::config::Kubeconfig::read_from(&admin).expect("the admin kubeconfig");
    for named in &mut config.auth_infos {
        if let Some(auth) = named.auth_info.as_mut() {
            auth.impersonate = Some(user.to_string());
        }
    }
    let path = dir.join(format!("kubeconfig-{user}"));
    std::fs::write(&path, serde_yaml::to_string(&config).expect("YAML")).expect("writing it");
    path
}
