//! The objects the operator renders for a console, under their generated names.

/// The labels of the console's Pods (with `app.kubernetes.io/instance: <name>`).
pub const POD_NAME_LABEL: (&str, &str) = ("app.kubernetes.io/name", "pgtoolbox-console");
pub const POD_INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// The console container's port.
pub const CONSOLE_PORT: u16 = 8080;
pub const CONSOLE_PORT_NAME: &str = "http";
/// The key of a CA bundle (the mirrored ConfigMap's, and a Cluster's CA Secret's).
pub const CA_KEY: &str = "ca.crt";
/// The keys of the OAuth2 client Secret the proxy reads: its client's
/// credentials and the secret its session cookies are sealed with.
pub const OAUTH_CLIENT_KEYS: [&str; 3] = ["client-id", "client-secret", "cookie-secret"];

/// The generated names of a console's children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Children {
    /// The console's Deployment, its Service and its ServiceAccount.
    pub workload: String,
    /// The Route, Ingress or HTTPRoute.
    pub exposure: String,
    /// The ingress NetworkPolicy.
    pub network_policy: String,
    /// The mirrored instance CA bundle ConfigMap.
    pub ca_bundle: String,
}

impl Children {
    pub fn of(console: &str) -> Self {
        Children {
            workload: format!("{console}-console"),
            exposure: format!("{console}-console"),
            network_policy: format!("{console}-ingress"),
            ca_bundle: format!("{console}-instance-ca"),
        }
    }

    /// The RoleBinding that binds the console's ServiceAccount to the
    /// ClusterRole `role` (`pgtoolbox-console...`): `<name>-console...`.
    pub fn role_binding(&self, role: &str) -> String {
        let suffix = role.strip_prefix("pgtoolbox-console").unwrap_or(role);
        format!("{}{suffix}", self.workload)
    }
}

pub use reconciler_guest_sdk::exposure::{kind_name, kind_named, kind_plural};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_derived_from_the_console() {
        let c = Children::of("orders");
        assert_eq!(c.workload, "orders-console");
        assert_eq!(c.exposure, "orders-console");
        assert_eq!(c.network_policy, "orders-ingress");
        assert_eq!(c.ca_bundle, "orders-instance-ca");
        assert_eq!(c.role_binding("pgtoolbox-console"), "orders-console");
        assert_eq!(
            c.role_binding("pgtoolbox-console-pod-logs"),
            "orders-console-pod-logs"
        );
    }
}
