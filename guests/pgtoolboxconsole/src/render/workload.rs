//! The console's workload: its Deployment (the console container, the OAuth2 proxy sidecar, the instance CA bundle and the X-Forwarded-For grant), its Service and its ServiceAccount.

use serde_json::{Value, json};

use super::{head, labels, object};
use crate::children::{CA_KEY, CONSOLE_PORT, CONSOLE_PORT_NAME, Children, OAUTH_CLIENT_KEYS};
use crate::confinement::pods::{TRUST_ALL_PEERS, TRUST_ANNOTATION, TRUST_NONE};

/// The console's container.
pub const CONSOLE_CONTAINER: &str = "console";
/// The OAuth2 proxy's container, in front of the console when configured.
pub const PROXY_CONTAINER: &str = "oauth2-proxy";
/// The volume of the instance CA bundle, and where it is mounted.
pub const CA_VOLUME: &str = "instance-ca";
pub const CA_MOUNT_PATH: &str = "/etc/pgtoolbox/instance-ca";
/// Where the console listens behind the proxy (the proxy holds the
/// console port).
pub const UPSTREAM_PORT: u16 = 8081;

/// The console's environment: where it listens, whether it trusts
/// X-Forwarded-For from every peer (the Pod's grant annotation, through
/// the downward API), and the CA bundle it verifies the Clusters with
/// (`none` when none is mounted). Each is always set, so a change of
/// either is a change of the Pod template.
pub const LISTEN_ENV: &str = "PGTOOLBOX_LISTEN_ADDRESS";
pub const XFF_TRUST_ENV: &str = "PGTOOLBOX_XFF_TRUST";
pub const INSTANCE_CA_ENV: &str = "PGTOOLBOX_INSTANCE_CA";

/// The environment variables of the proxy that carry the client Secret's
/// keys ([`OAUTH_CLIENT_KEYS`], in that order).
const PROXY_SECRET_ENV: [&str; 3] = [
    "OAUTH2_PROXY_CLIENT_ID",
    "OAUTH2_PROXY_CLIENT_SECRET",
    "OAUTH2_PROXY_COOKIE_SECRET",
];

/// The OAuth2 proxy in front of the console.
#[derive(Clone, Copy, Debug)]
pub struct Proxy<'a> {
    pub image: &'a str,
    /// The client Secret (`spec.oauthProxy.clientSecretRef`).
    pub client_secret: &'a str,
}

/// What the console's Pod runs.
#[derive(Clone, Copy, Debug)]
pub struct Pod<'a> {
    pub image: &'a str,
    pub proxy: Option<Proxy<'a>>,
    /// The Pods carry the X-Forwarded-For grant (`all-peers`).
    pub trust_every_peer: bool,
    /// The ConfigMap of the instance CA bundle mounted, if any.
    pub ca_bundle: Option<&'a str>,
}

/// The hardening every container gets (the restricted Pod Security
/// Standard).
fn security_context() -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": true,
        "seccompProfile": {"type": "RuntimeDefault"},
    })
}

fn http_port() -> Value {
    json!([{"name": CONSOLE_PORT_NAME, "containerPort": CONSOLE_PORT, "protocol": "TCP"}])
}

fn env(name: &str, value: &str) -> Value {
    json!({"name": name, "value": value})
}

fn console_container(pod: &Pod) -> Value {
    let listen = match pod.proxy {
        Some(_) => format!("127.0.0.1:{UPSTREAM_PORT}"),
        None => format!("0.0.0.0:{CONSOLE_PORT}"),
    };
    let ca = pod.ca_bundle.map_or_else(
        || "none".to_owned(),
        |_| format!("{CA_MOUNT_PATH}/{CA_KEY}"),
    );
    let mut container = json!({
        "name": CONSOLE_CONTAINER,
        "image": pod.image,
        "env": [
            env(LISTEN_ENV, &listen),
            {"name": XFF_TRUST_ENV, "valueFrom": {"fieldRef": {
                "apiVersion": "v1",
                "fieldPath": format!("metadata.annotations['{TRUST_ANNOTATION}']"),
            }}},
            env(INSTANCE_CA_ENV, &ca),
        ],
        "securityContext": security_context(),
    });
    if pod.proxy.is_none() {
        container["ports"] = http_port();
    }
    if pod.ca_bundle.is_some() {
        container["volumeMounts"] =
            json!([{"name": CA_VOLUME, "mountPath": CA_MOUNT_PATH, "readOnly": true}]);
    }
    container
}

fn proxy_container(proxy: &Proxy, trust_every_peer: bool) -> Value {
    let mut env_list = vec![
        env(
            "OAUTH2_PROXY_HTTP_ADDRESS",
            &format!("0.0.0.0:{CONSOLE_PORT}"),
        ),
        env(
            "OAUTH2_PROXY_UPSTREAMS",
            &format!("http://127.0.0.1:{UPSTREAM_PORT}"),
        ),
        // The proxy believes X-Forwarded-For exactly when the console may.
        env(
            "OAUTH2_PROXY_REVERSE_PROXY",
            if trust_every_peer { "true" } else { "false" },
        ),
    ];
    env_list.extend(PROXY_SECRET_ENV.iter().zip(OAUTH_CLIENT_KEYS).map(|(name, key)| {
        json!({"name": name, "valueFrom": {"secretKeyRef": {"name": proxy.client_secret, "key": key}}})
    }));
    json!({
        "name": PROXY_CONTAINER,
        "image": proxy.image,
        "env": env_list,
        "ports": http_port(),
        "securityContext": security_context(),
    })
}

/// The Deployment `<name>-console`: the console (and the proxy in front of
/// it, holding the console port), run as the console's ServiceAccount,
/// with the grant annotation on its Pod template. Replicas are left to
/// their default (or to whoever scales it).
pub fn deployment(console: &str, children: &Children, pod: &Pod) -> Value {
    let mut containers = vec![console_container(pod)];
    if let Some(proxy) = &pod.proxy {
        containers.push(proxy_container(proxy, pod.trust_every_peer));
    }
    let grant = if pod.trust_every_peer {
        TRUST_ALL_PEERS
    } else {
        TRUST_NONE
    };
    let mut pod_spec = json!({
        "serviceAccountName": children.workload,
        "containers": containers,
    });
    if let Some(ca) = pod.ca_bundle {
        pod_spec["volumes"] = json!([{"name": CA_VOLUME, "configMap": {"name": ca}}]);
    }
    object(
        head("apps/v1", "Deployment", &children.workload, console),
        json!({"spec": {
            "selector": {"matchLabels": labels(console)},
            "template": {
                "metadata": {"labels": labels(console), "annotations": {TRUST_ANNOTATION: grant}},
                "spec": pod_spec,
            },
        }}),
    )
}

/// The Service `<name>-console`: the console port of the console's Pods.
pub fn service(console: &str, children: &Children) -> Value {
    object(
        head("v1", "Service", &children.workload, console),
        json!({"spec": {
            "selector": labels(console),
            "ports": [{
                "name": CONSOLE_PORT_NAME,
                "port": CONSOLE_PORT,
                "targetPort": CONSOLE_PORT_NAME,
                "protocol": "TCP",
            }],
        }}),
    )
}

/// The ServiceAccount `<name>-console` the console's Pods run as.
pub fn service_account(console: &str, children: &Children) -> Value {
    Value::Object(head("v1", "ServiceAccount", &children.workload, console))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(proxy: Option<Proxy<'static>>, trust: bool, ca: Option<&'static str>) -> Value {
        deployment(
            "orders",
            &Children::of("orders"),
            &Pod {
                image: "ghcr.io/fyannk/pgtoolbox-console:1.0",
                proxy,
                trust_every_peer: trust,
                ca_bundle: ca,
            },
        )
    }

    #[test]
    fn the_console_alone_holds_the_http_port_and_mounts_the_bundle() {
        let d = pod(None, true, Some("orders-instance-ca"));
        assert_eq!(d["metadata"]["name"], "orders-console");
        assert_eq!(
            d["spec"]["selector"]["matchLabels"],
            json!({"app.kubernetes.io/name": "pgtoolbox-console", "app.kubernetes.io/instance": "orders"})
        );
        let template = &d["spec"]["template"];
        assert_eq!(
            template["metadata"]["annotations"][TRUST_ANNOTATION],
            "all-peers"
        );
        assert_eq!(template["spec"]["serviceAccountName"], "orders-console");
        let containers = template["spec"]["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 1);
        assert_eq!(
            containers[0]["ports"],
            json!([{"name": "http", "containerPort": 8080, "protocol": "TCP"}])
        );
        assert_eq!(containers[0]["env"][0]["value"], "0.0.0.0:8080");
        assert_eq!(
            containers[0]["env"][2]["value"],
            "/etc/pgtoolbox/instance-ca/ca.crt"
        );
        assert_eq!(
            template["spec"]["volumes"],
            json!([{"name": "instance-ca", "configMap": {"name": "orders-instance-ca"}}])
        );
    }

    #[test]
    fn the_proxy_holds_the_http_port_and_reads_the_client_secret() {
        let proxy = Proxy {
            image: "quay.io/oauth2-proxy/oauth2-proxy:v7.6.0",
            client_secret: "orders-oidc",
        };
        let d = pod(Some(proxy), false, None);
        let template = &d["spec"]["template"];
        assert_eq!(
            template["metadata"]["annotations"][TRUST_ANNOTATION],
            "none"
        );
        let containers = template["spec"]["containers"].as_array().unwrap();
        let (console, proxy) = (&containers[0], &containers[1]);
        assert!(console.get("ports").is_none());
        assert_eq!(console["env"][0]["value"], "127.0.0.1:8081");
        assert_eq!(console["env"][2]["value"], "none");
        assert!(console.get("volumeMounts").is_none());
        assert!(template["spec"].get("volumes").is_none());
        assert_eq!(proxy["name"], "oauth2-proxy");
        assert_eq!(proxy["ports"][0]["containerPort"], 8080);
        let env = proxy["env"].as_array().unwrap();
        assert!(env.contains(&json!({"name": "OAUTH2_PROXY_REVERSE_PROXY", "value": "false"})));
        assert!(env.contains(&json!({"name": "OAUTH2_PROXY_CLIENT_SECRET",
            "valueFrom": {"secretKeyRef": {"name": "orders-oidc", "key": "client-secret"}}})));
        assert!(env.contains(&json!({"name": "OAUTH2_PROXY_COOKIE_SECRET",
            "valueFrom": {"secretKeyRef": {"name": "orders-oidc", "key": "cookie-secret"}}})));
    }

    #[test]
    fn the_service_targets_the_named_port() {
        let s = service("orders", &Children::of("orders"));
        assert_eq!(
            s["spec"]["ports"],
            json!([{"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}])
        );
        let a = service_account("orders", &Children::of("orders"));
        assert_eq!(
            a,
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "orders-console",
                "labels": {"app.kubernetes.io/name": "pgtoolbox-console", "app.kubernetes.io/instance": "orders"}}})
        );
    }
}
