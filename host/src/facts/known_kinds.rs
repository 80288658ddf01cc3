//! The built-in kinds the host derives facts from, by name.

use reconciler_conventions::kind::KindRef;

pub fn deployment_kind() -> KindRef {
    core_kind("apps", "Deployment")
}
pub(crate) fn pod_kind() -> KindRef {
    core_kind("", "Pod")
}
pub fn secret_kind() -> KindRef {
    core_kind("", "Secret")
}
pub fn config_map_kind() -> KindRef {
    core_kind("", "ConfigMap")
}
pub fn network_policy_kind() -> KindRef {
    core_kind("networking.k8s.io", "NetworkPolicy")
}
pub(crate) fn node_kind() -> KindRef {
    core_kind("", "Node")
}
pub fn cluster_role_kind() -> KindRef {
    core_kind("rbac.authorization.k8s.io", "ClusterRole")
}

/// A `v1` kind of `group`.
pub(crate) fn core_kind(group: &str, kind: &str) -> KindRef {
    KindRef {
        group: group.to_owned(),
        version: "v1".to_owned(),
        kind: kind.to_owned(),
    }
}
