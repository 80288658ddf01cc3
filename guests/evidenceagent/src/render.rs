//! The bodies of the agent's children, in the API server's canonical stored form (what a GET returns after defaulting), so a converged agent costs the host no request.

use serde_json::{Map, Value, json};

use crate::children::Children;
use crate::configuration::Valid;
use crate::issuer::Issuer;

/// The label naming the application, on every child and the Pods.
pub const NAME_LABEL: (&str, &str) = ("app.kubernetes.io/name", "evidence-agent");
/// The label naming the agent, on every child and the Pods.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// The agent's one container.
pub const CONTAINER: &str = "evidence-agent";
/// The container port the agent serves TLS on, and its name.
pub const CONTAINER_PORT: u16 = 8443;
pub const PORT_NAME: &str = "https";
/// The Service's port, in front of the container port.
pub const SERVICE_PORT: u16 = 443;
/// Where the serving certificate Secret is mounted (`tls.crt`, `tls.key`).
pub const TLS_MOUNT: &str = "/var/run/secrets/tls";
const TLS_VOLUME: &str = "tls";
/// The agent's readiness endpoint.
pub const READINESS_PATH: &str = "/readyz";
/// The Service's annotation naming who issues its serving certificate
/// (the setting's value), for whoever reads the Service.
pub const ISSUER_ANNOTATION: &str = "pgtoolbox.fyannk.dev/serving-certificate";
/// Asks the service CA for a serving certificate in the named Secret.
pub const SERVING_CERT_ANNOTATION: &str = "service.beta.openshift.io/serving-cert-secret-name";
/// Asks the service CA to inject its CA bundle into the ConfigMap.
pub const INJECT_CA_BUNDLE_ANNOTATION: &str = "service.beta.openshift.io/inject-cabundle";

/// The labels of every child, the Pods' labels and the selector.
pub fn labels(agent: &str) -> Value {
    json!({NAME_LABEL.0: NAME_LABEL.1, INSTANCE_LABEL: agent})
}

/// The Deployment: one replica of the agent, its ObjectStore's location
/// and credentials in its environment, the serving certificate mounted.
pub fn deployment(agent: &str, children: &Children, valid: &Valid) -> Value {
    let labels = labels(agent);
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": children.workload, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "automountServiceAccountToken": false,
                    "containers": [{
                        "name": CONTAINER,
                        "image": valid.image,
                        "env": env(valid),
                        "ports": [{
                            "name": PORT_NAME,
                            "containerPort": CONTAINER_PORT,
                            "protocol": "TCP",
                        }],
                        "readinessProbe": {
                            "httpGet": {"path": READINESS_PATH, "port": PORT_NAME, "scheme": "HTTPS"},
                        },
                        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "capabilities": {"drop": ["ALL"]},
                            "runAsNonRoot": true,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "volumeMounts": [{"name": TLS_VOLUME, "mountPath": TLS_MOUNT, "readOnly": true}],
                    }],
                    "volumes": [{"name": TLS_VOLUME, "secret": {"secretName": children.serving_secret}}],
                },
            },
        },
    })
}

/// The container's environment: the Cluster, the ObjectStore and where it
/// stores, then each credential by reference to its Secret key.
fn env(valid: &Valid) -> Vec<Value> {
    let value = |name: &str, value: &str| json!({"name": name, "value": value});
    let mut env = vec![
        value("EVIDENCE_AGENT_CLUSTER", &valid.spec.cluster.name),
        value("EVIDENCE_AGENT_OBJECT_STORE", &valid.object_store),
        value("EVIDENCE_AGENT_DESTINATION_PATH", &valid.store.destination),
    ];
    if let Some(endpoint) = &valid.store.endpoint {
        env.push(value("EVIDENCE_AGENT_ENDPOINT_URL", endpoint));
    }
    env.extend(valid.store.secrets.iter().map(
        |r| json!({"name": r.env, "valueFrom": {"secretKeyRef": {"name": r.name, "key": r.key}}}),
    ));
    env
}

/// The Service in front of the agent; with the service CA, annotated for
/// its serving certificate.
pub fn service(agent: &str, children: &Children, issuer: Issuer) -> Value {
    let mut annotations = Map::new();
    annotations.insert(ISSUER_ANNOTATION.into(), issuer.value().into());
    if issuer == Issuer::ServiceCa {
        annotations.insert(
            SERVING_CERT_ANNOTATION.into(),
            children.serving_secret.clone().into(),
        );
    }
    let labels = labels(agent);
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": children.workload, "labels": labels, "annotations": annotations},
        "spec": {
            "type": "ClusterIP",
            "selector": labels,
            "ports": [{
                "name": PORT_NAME,
                "port": SERVICE_PORT,
                "targetPort": PORT_NAME,
                "protocol": "TCP",
            }],
        },
    })
}

/// The ConfigMap the service CA injects its bundle into. It sets no
/// `data`: the service CA writes `service-ca.crt`, and a body with `data`
/// would take it back.
pub fn ca_bundle(agent: &str, children: &Children) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": children.ca_bundle,
            "labels": labels(agent),
            "annotations": {INJECT_CA_BUNDLE_ANNOTATION: "true"},
        },
    })
}
