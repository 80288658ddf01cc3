//! The console's RoleBindings: its ServiceAccount bound to each ClusterRole the spec needs (`pgtoolbox-console`, pod logs, restore drills).

use serde_json::{Value, json};

use super::{head, object};
use crate::children::Children;

/// The RoleBinding `<name>-console...` binding the console's
/// ServiceAccount to the ClusterRole `role` in the console's namespace.
pub fn role_binding(console: &str, namespace: &str, children: &Children, role: &str) -> Value {
    object(
        head(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            &children.role_binding(role),
            console,
        ),
        json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": children.workload, "namespace": namespace}],
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_names_the_role_and_the_service_account() {
        let b = role_binding(
            "orders",
            "team-b",
            &Children::of("orders"),
            "pgtoolbox-console-pod-logs",
        );
        assert_eq!(b["metadata"]["name"], "orders-console-pod-logs");
        assert_eq!(b["roleRef"]["name"], "pgtoolbox-console-pod-logs");
        assert_eq!(
            b["subjects"],
            json!([{"kind": "ServiceAccount", "name": "orders-console", "namespace": "team-b"}])
        );
    }
}
