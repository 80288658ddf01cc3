//! The PgToolBoxConsole tests' objects, built from JSON after the guest's
//! fixtures (`guests/pgtoolboxconsole/fixtures`): only what a user or
//! another controller makes (the console, Nodes with their podCIDRs, the
//! ClusterRoles of the installation, CloudNativePG Clusters and their CA
//! Secrets, the OAuth2 client Secret, NetworkPolicies of the namespace's
//! own), and the ingress controller's admission of an Ingress
//! ([`admit_as_router`] in a test, [`RouterStandIn`] as a loop). The
//! console's children (its NetworkPolicy, ServiceAccount, RoleBindings, CA
//! bundle, Deployment, Service, Ingress) are the host's to make, their
//! ReplicaSets and Pods the test API server's controllers', the Pods'
//! status kwok's (`crate::pod_states`).

use base64::Engine as _;
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::objects::{api, resource_of};
use crate::operator::Guests;

/// The PgToolBoxConsole's API.
pub const API_VERSION: &str = "pgtoolbox.fyannk.dev/v1alpha1";
pub const KIND: &str = "PgToolBoxConsole";

/// The console image the operator's settings default to and allow.
pub const IMAGE: &str = "ghcr.io/fyannk/pgtoolbox-console:1.0";
/// The host suffix the operator allows (a leading dot: names below it).
pub const HOST_SUFFIX: &str = ".apps.example.com";

/// The PgToolBoxConsole guest, with the settings every host of the
/// console tests runs with.
pub const CONSOLE: Guests = Guests {
    dir: "console-tests",
    crates: &["pgtoolboxconsole-guest"],
    settings: &[
        "PgToolBoxConsole.defaultConsoleImage=ghcr.io/fyannk/pgtoolbox-console:1.0",
        "PgToolBoxConsole.allowedImageRepositories=ghcr.io/fyannk/",
        "PgToolBoxConsole.allowedHostSuffixes=.apps.example.com",
    ],
    // The test server serves neither OpenShift Routes nor the Gateway API.
    expected_warnings: &[
        "optional API not served: the feature is off until the next start kind=route.openshift.io/v1/Route",
        "optional API not served: the feature is off until the next start kind=gateway.networking.k8s.io/v1/HTTPRoute",
    ],
};

/// The ClusterRole every console is bound to.
pub const CONSOLE_ROLE: &str = "pgtoolbox-console";
/// The ClusterRole bound unless `podLogs: false`.
pub const POD_LOGS_ROLE: &str = "pgtoolbox-console-pod-logs";

/// The Pod annotation of the X-Forwarded-For grant, and the grant.
pub const TRUST_ANNOTATION: &str = "pgtoolbox.fyannk.dev/xff-trust";
pub const TRUST_ALL_PEERS: &str = "all-peers";

/// A self-signed EC CA (openssl, P-256), as a Cluster's `<cluster>-ca`
/// Secret holds it under `ca.crt`. The block is 663 bytes from its header
/// to the end of its footer: 664 bytes in the mirrored bundle.
pub const CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBvTCCAWOgAwIBAgIUAXeqUJhAkCyOBBY7pk8rjlIT4d4wCgYIKoZIzj0EAwIw
NDESMBAGA1UEAwwJb3JkZXJzLWNhMR4wHAYDVQQKDBVyZWNvbmNpbGVyLWhvc3Qg
dGVzdHMwHhcNMjYxMTI5MjAyODUzWhcNMzYxMTI2MjAyODUzWjA0MRIwEAYDVQQD
DAlvcmRlcnMtY2ExHjAcBgNVBAoMFXJlY29uY2lsZXItaG9zdCB0ZXN0czBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABPnAS0bsARQfBfw6Vzhy30kvdlXPbOKI+1NZ
KIrH0AHdbBzVAXbhIBS6WFbZvTLbKbIsb7kuREO/Wsqb7SiJykKjUzBRMB0GA1Ud
DgQWBBTAWAcOZTmwBFSskTg2OVXZUllMMzAfBgNVHSMEGDAWgBTAWAcOZTmwBFSs
kTg2OVXZUllMMzAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQCQ
V88fY7UOTZg9Gd/Jo8La56xu5aXCRSVSLayQXSNzhgIgKRSqUHeaWQczEeFdtL+E
gfcue/uDsLkPaOYMihG+1vE=
-----END CERTIFICATE-----
";

pub fn consoles(client: &Client, ns: &str) -> Api<DynamicObject> {
    api(client, ns, API_VERSION, KIND)
}

/// A cluster-scoped kind's API.
pub fn cluster_api(client: &Client, api_version: &str, kind: &str) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &resource_of(api_version, kind))
}

pub fn nodes(client: &Client) -> Api<DynamicObject> {
    cluster_api(client, "v1", "Node")
}

pub fn cluster_roles(client: &Client) -> Api<DynamicObject> {
    cluster_api(client, "rbac.authorization.k8s.io/v1", "ClusterRole")
}

/// Creates a cluster-scoped object.
pub async fn create_cluster_scoped(client: &Client, object: Value) {
    let api = cluster_api(
        client,
        object["apiVersion"].as_str().expect("apiVersion"),
        object["kind"].as_str().expect("kind"),
    );
    let what = format!("{} {}", object["kind"], object["metadata"]["name"]);
    let typed: DynamicObject = serde_json::from_value(object).expect("an object");
    api.create(&PostParams::default(), &typed)
        .await
        .unwrap_or_else(|e| panic!("creating {what}: {e}"));
}

/// Creates a ClusterRole of the installation unless it exists (the
/// roles are shared by every test of the binary).
pub async fn ensure_cluster_role(client: &Client, name: &str) {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    });
    let typed: DynamicObject = serde_json::from_value(role).expect("a ClusterRole");
    match cluster_roles(client)
        .create(&PostParams::default(), &typed)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("creating ClusterRole {name}: {e}"),
    }
}

/// Deletes a cluster-scoped object, if it exists.
pub async fn delete_cluster_scoped(api: &Api<DynamicObject>, name: &str) {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => panic!("deleting {name}: {e}"),
    }
}

/// A console with `spec`.
pub fn console(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// The ingress controller's Pods (ingress-nginx) as a peer.
pub fn ingress_nginx_peer() -> Value {
    json!({
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "ingress-nginx"}},
    })
}

/// An `ipBlock` peer.
pub fn ip_block_peer(cidr: &str, except: &[&str]) -> Value {
    json!({"ipBlock": {"cidr": cidr, "except": except}})
}

/// The spec of a console exposed through an Ingress for `hostname`,
/// confined to `from`; `podLogs: false` unless `pod_logs` (the pod-logs
/// ClusterRole is deleted by one test: the others do not need it).
pub fn ingress_spec(hostname: &str, from: &[Value], pod_logs: bool) -> Value {
    json!({
        "exposure": {
            "type": "ingress",
            "hostname": hostname,
            "networkPolicy": {"from": from},
        },
        "podLogs": pod_logs,
    })
}

pub fn labels(console: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "pgtoolbox-console",
        "app.kubernetes.io/instance": console,
    })
}

/// The name of the console's Deployment, ServiceAccount, Service and
/// exposure object (the host makes them).
pub fn workload_name(console: &str) -> String {
    format!("{console}-console")
}

/// The name of the console's ingress NetworkPolicy.
pub fn policy_name(console: &str) -> String {
    format!("{console}-ingress")
}

/// The name of the console's mirrored instance CA bundle ConfigMap.
pub fn ca_bundle_name(console: &str) -> String {
    format!("{console}-instance-ca")
}

/// The OAuth2 proxy's client Secret `name`, as the user creates it: the
/// three keys the console's Pod reads (`client-id`, `client-secret`,
/// `cookie-secret`).
pub fn oauth_client_secret(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": "Opaque",
        "data": {
            "client-id": b64("orders-console"),
            "client-secret": b64("not a secret: a test's"),
            "cookie-secret": b64("0123456789abcdef0123456789abcdef"),
        },
    })
}

/// The Pods of `console` (label `app.kubernetes.io/instance`), as the
/// ReplicaSet controller made them from the host's Deployment, not being
/// deleted.
pub async fn console_pods(client: &Client, ns: &str, console: &str) -> Vec<Value> {
    let params = ListParams::default().labels(&format!("app.kubernetes.io/instance={console}"));
    api(client, ns, "v1", "Pod")
        .list(&params)
        .await
        .unwrap_or_else(|e| panic!("listing the Pods of {console}: {e}"))
        .items
        .into_iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .filter(|p| !p["metadata"]["deletionTimestamp"].is_string())
        .collect()
}

/// Standing in for the ingress controller (no router runs beside the test
/// API server): once the host's Ingress `<console>-console` for `hostname`
/// exists, writes its load-balancer address into its status, as an
/// ingress controller admitting it would. The only exposure status the
/// tests write.
pub async fn admit_as_router(client: &Client, ns: &str, console: &str, hostname: &str) {
    let ingresses = api(client, ns, "networking.k8s.io/v1", "Ingress");
    let name = workload_name(console);
    let deadline = std::time::Instant::now() + crate::operator::TIMEOUT;
    loop {
        let found = ingresses
            .get_opt(&name)
            .await
            .unwrap_or_else(|e| panic!("reading Ingress {name}: {e}"))
            .and_then(|i| serde_json::to_value(i).ok())
            .filter(|i| {
                !i["metadata"]["deletionTimestamp"].is_string()
                    && i["spec"]["rules"][0]["host"] == hostname
            });
        if found.is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the host made no Ingress {name} for {hostname}"
        );
        tokio::time::sleep(crate::operator::POLL).await;
    }
    admit(&ingresses, &name)
        .await
        .unwrap_or_else(|e| panic!("admitting Ingress {name}: {e}"));
}

/// The load-balancer address the ingress controller's stand-in gives an
/// Ingress it admits.
pub const LOAD_BALANCER_IP: &str = "192.0.2.10";

/// Writes into Ingress `name`'s status the load-balancer address an
/// ingress controller admitting it would.
pub async fn admit(ingresses: &Api<DynamicObject>, name: &str) -> Result<(), kube::Error> {
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": LOAD_BALANCER_IP}]}}});
    ingresses
        .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .map(drop)
}

/// The ingress controller's stand-in as a loop (`make run`'s, beside
/// [`crate::pod_states::PodStates`]): every Ingress of its namespace that
/// an ingress controller serving `host_suffixes` would take (see
/// [`serves`]) is admitted ([`admit`]) once the host has made it, until
/// dropped. An Ingress already carrying a load-balancer address is left as
/// it is; one for another host is never admitted.
pub struct RouterStandIn {
    task: tokio::task::JoinHandle<()>,
}

impl RouterStandIn {
    pub fn start(client: &Client, namespace: &str, host_suffixes: &[String]) -> Self {
        let ingresses = api(client, namespace, "networking.k8s.io/v1", "Ingress");
        let suffixes = host_suffixes.to_vec();
        let task = tokio::spawn(async move {
            loop {
                if let Ok(list) = ingresses.list(&ListParams::default()).await {
                    for ingress in list {
                        let Ok(ingress) = serde_json::to_value(&ingress) else {
                            continue;
                        };
                        let admitted = ingress["status"]["loadBalancer"]["ingress"]
                            .as_array()
                            .is_some_and(|a| !a.is_empty());
                        if !admitted && serves(&ingress, &suffixes) {
                            let name = ingress["metadata"]["name"].as_str().unwrap_or_default();
                            // Best effort, as a controller's: retried next round.
                            let _ = admit(&ingresses, name).await;
                        }
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        });
        RouterStandIn { task }
    }
}

impl Drop for RouterStandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether an ingress controller serving `host_suffixes` takes `ingress`:
/// it is not being deleted, it has rules, and every rule's host is below
/// a suffix at a label boundary (`.apps.example.com`: the names below it;
/// `example.com`: it and the names below it; case ignored).
pub fn serves(ingress: &Value, host_suffixes: &[String]) -> bool {
    let below = |host: &str| {
        let host = host.to_ascii_lowercase();
        host_suffixes.iter().any(|suffix| {
            let suffix = suffix.to_ascii_lowercase();
            let bare = suffix.trim_start_matches('.');
            !bare.is_empty()
                && (host.ends_with(&format!(".{bare}"))
                    || (!suffix.starts_with('.') && host == bare))
        })
    };
    let rules = ingress["spec"]["rules"].as_array();
    !ingress["metadata"]["deletionTimestamp"].is_string()
        && rules.is_some_and(|r| !r.is_empty())
        && rules
            .into_iter()
            .flatten()
            .all(|r| r["host"].as_str().is_some_and(below))
}

/// A NetworkPolicy of the namespace's own admitting every source to port
/// 8080 of every console Pod of the namespace.
pub fn open_policy(name: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name},
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "pgtoolbox-console"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"protocol": "TCP", "port": 8080}]}],
        },
    })
}

/// A Node with `pod_cidrs` (cluster-scoped: name it per test).
pub fn node(name: &str, pod_cidrs: &[&str]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"podCIDR": pod_cidrs[0], "podCIDRs": pod_cidrs},
    })
}

/// A CloudNativePG Cluster labelled `labels`.
pub fn pg_cluster(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "postgresql.cnpg.io/v1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": labels},
        "spec": {"instances": 1, "storage": {"size": "1Gi"}},
    })
}

/// The Cluster's generated server CA Secret `<cluster>-ca`, with the PEM
/// `ca.crt` or without it (the key only).
pub fn ca_secret(cluster: &str, with_ca_crt: bool) -> Value {
    let mut data = json!({"ca.key": b64("not a key: the host never reads it")});
    if with_ca_crt {
        data["ca.crt"] = Value::String(b64(CA_PEM));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": format!("{cluster}-ca")},
        "type": "Opaque",
        "data": data,
    })
}

/// Base64, as a Secret's `data` holds it.
pub fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingress(hosts: &[&str]) -> Value {
        let rules: Vec<Value> = hosts.iter().map(|h| json!({"host": h})).collect();
        json!({"metadata": {"name": "i"}, "spec": {"rules": rules}})
    }

    #[test]
    fn the_router_stand_in_takes_only_the_hosts_below_its_suffixes() {
        let apps = [".apps.example.com".to_owned()];
        assert!(serves(&ingress(&["orders.apps.example.com"]), &apps));
        assert!(serves(&ingress(&["Orders.Apps.Example.com"]), &apps));
        assert!(!serves(&ingress(&["apps.example.com"]), &apps));
        assert!(!serves(&ingress(&["audit.corp.example.net"]), &apps));
        assert!(!serves(&ingress(&["badapps.example.com"]), &apps));
        assert!(!serves(
            &ingress(&["a.apps.example.com", "b.example.org"]),
            &apps
        ));
        assert!(!serves(&ingress(&[]), &apps), "no rule, no host");
        let domain = ["example.com".to_owned()];
        assert!(serves(&ingress(&["example.com"]), &domain));
        assert!(serves(&ingress(&["a.example.com"]), &domain));
        assert!(!serves(&ingress(&["badexample.com"]), &domain));
        assert!(!serves(&ingress(&["a.example.com"]), &[]));
        let mut deleted = ingress(&["orders.apps.example.com"]);
        deleted["metadata"]["deletionTimestamp"] = json!("2026-11-29T12:00:00Z");
        assert!(!serves(&deleted, &apps));
    }
}
