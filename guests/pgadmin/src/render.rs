//! The children a PgAdmin with a valid configuration asks the host for (its data PersistentVolumeClaim, Deployment, Service and exposure object), and the withdrawal of its exposure objects no longer wanted.
//!
//! Bodies are written in the form the API server stores (no nulls, no
//! empty lists or maps), so a converged PgAdmin costs the host no request.

use reconciler_guest_sdk::{ApplyObject, Change, ExposureKind, Facts, KindRef, change};
use serde_json::{Value, json};

use crate::configdb::Connection;
use crate::exposure::{EXPOSURE_KINDS, Entry, Observation};
use crate::registry::*;
use crate::spec::Exposure;

/// The port pgAdmin listens on, named `http`.
pub const PORT: u16 = 80;
/// The Secret keys of the OAuth2 client (`spec.oauth2.clientSecretRef`).
pub const OAUTH2_CLIENT_KEYS: [&str; 2] = ["client-id", "client-secret"];

/// Where pgAdmin keeps its settings (SQLite) and sessions: the data
/// PersistentVolumeClaim `<name>-pgadmin`.
pub const DATA_DIR: &str = "/var/lib/pgadmin";
/// The size of the data PersistentVolumeClaim.
pub const DATA_SIZE: &str = "1Gi";

/// The name of every child: `<name>-pgadmin`.
pub fn child_name(pgadmin: &str) -> String {
    format!("{pgadmin}-pgadmin")
}

/// The labels of every child, and the selector of pgAdmin's Pods.
pub fn labels(pgadmin: &str) -> Value {
    json!({"app.kubernetes.io/name": "pgadmin", "app.kubernetes.io/instance": pgadmin})
}

pub fn apply(kind: KindRef, body: Value) -> Change {
    Change::Apply(ApplyObject {
        name: body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        kind,
        body: body.to_string(),
    })
}

pub fn head(api_version: &str, kind: &str, pgadmin: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": child_name(pgadmin), "labels": labels(pgadmin)}})
}

/// What the pass renders.
pub struct Plan<'a> {
    pub pgadmin: &'a str,
    pub image: &'a str,
    pub oauth2_secret: Option<&'a str>,
    pub exposure: Option<&'a Exposure>,
    /// The settings database in PostgreSQL, when configDatabase is ready.
    pub database: Option<&'a Connection>,
    /// No Pod: configDatabase is not ready yet.
    pub stopped: bool,
    /// The exposure objects as the pass found them.
    pub observation: &'a Observation,
}

fn deployment(plan: &Plan) -> Value {
    let mut env = vec![json!({"name": "PGADMIN_LISTEN_PORT", "value": PORT.to_string()})];
    if let Some(secret) = plan.oauth2_secret {
        env.push(json!({"name": "PGADMIN_CONFIG_AUTHENTICATION_SOURCES", "value": "['oauth2']"}));
        for (name, key) in [
            ("PGADMIN_OAUTH2_CLIENT_ID", OAUTH2_CLIENT_KEYS[0]),
            ("PGADMIN_OAUTH2_CLIENT_SECRET", OAUTH2_CLIENT_KEYS[1]),
        ] {
            env.push(json!({"name": name,
                "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}));
        }
    }
    if let Some(database) = plan.database {
        env.extend(database.env());
    }
    let mut body = head("apps/v1", "Deployment", plan.pgadmin);
    body["spec"] = json!({
        "selector": {"matchLabels": labels(plan.pgadmin)},
        // The data volume mounts on one node at a time.
        "strategy": {"type": "Recreate"},
        "template": {
            "metadata": {"labels": labels(plan.pgadmin)},
            "spec": {
                "containers": [{
                    "name": "pgadmin",
                    "image": plan.image,
                    "env": env,
                    "ports": [{"name": "http", "containerPort": PORT, "protocol": "TCP"}],
                    "readinessProbe": {"httpGet": {"path": "/misc/ping", "port": "http"}},
                    "volumeMounts": [{"name": "data", "mountPath": DATA_DIR}],
                }],
                "volumes": [{"name": "data",
                    "persistentVolumeClaim": {"claimName": child_name(plan.pgadmin)}}],
            }
        }
    });
    if plan.stopped {
        body["spec"]["replicas"] = json!(0);
    }
    body
}

fn data_claim(pgadmin: &str) -> Value {
    let mut body = head("v1", "PersistentVolumeClaim", pgadmin);
    body["spec"] = json!({
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": DATA_SIZE}},
    });
    body
}

fn service(pgadmin: &str) -> Value {
    let mut body = head("v1", "Service", pgadmin);
    body["spec"] = json!({
        "selector": labels(pgadmin),
        "ports": [{"name": "http", "port": PORT, "protocol": "TCP", "targetPort": "http"}],
    });
    body
}

fn exposure_object(pgadmin: &str, exposure: &Exposure) -> Value {
    let service = child_name(pgadmin);
    let host = &exposure.hostname;
    match exposure.kind {
        ExposureKind::Route => {
            let mut body = head("route.openshift.io/v1", "Route", pgadmin);
            body["spec"] = json!({
                "host": host,
                "to": {"kind": "Service", "name": service},
                "port": {"targetPort": "http"},
                "tls": {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"},
            });
            body
        }
        ExposureKind::Ingress => {
            let mut body = head("networking.k8s.io/v1", "Ingress", pgadmin);
            body["spec"] = json!({"rules": [{"host": host, "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": service, "port": {"name": "http"}}}}]}}]});
            if let Some(class) = &exposure.ingress_class {
                body["spec"]["ingressClassName"] = json!(class);
            }
            body
        }
        ExposureKind::HttpRoute => {
            let mut body = head("gateway.networking.k8s.io/v1", "HTTPRoute", pgadmin);
            let mut parent = json!({"group": "gateway.networking.k8s.io", "kind": "Gateway"});
            if let Some(g) = &exposure.gateway {
                parent["name"] = json!(g.name);
                if let Some(ns) = &g.namespace {
                    parent["namespace"] = json!(ns);
                }
            }
            body["spec"] = json!({
                "parentRefs": [parent],
                "hostnames": [host],
                "rules": [{"backendRefs": [{"group": "", "kind": "Service", "name": service, "port": PORT, "weight": 1}],
                           "matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}],
            });
            body
        }
    }
}

/// The Deployment's body.
pub fn workload(plan: &Plan) -> Value {
    deployment(plan)
}

/// The children, in order: the data claim, the Deployment, the Service,
/// the exposure object; then the withdrawal of the PgAdmin's exposure
/// objects of the other kinds.
pub fn changes(plan: &Plan, facts: &dyn Facts) -> Vec<Change> {
    let mut changes = vec![
        apply(pvc_kind(), data_claim(plan.pgadmin)),
        apply(deployment_kind(), deployment(plan)),
        apply(service_kind(), service(plan.pgadmin)),
    ];
    if let Some(exposure) = plan.exposure {
        changes.push(apply(
            exposure_kind(exposure.kind),
            exposure_object(plan.pgadmin, exposure),
        ));
    }
    changes.extend(withdraw(facts, plan.observation, plan.exposure.map(|e| e.kind)).deletions);
    changes
}

/// The PgAdmin's own exposure objects of every kind but `keep`, asked
/// to be deleted (by the UID seen); what the host withdrew, by kind and
/// name, and what is still there and why (`facts.change-state`).
pub struct Withdrawal {
    pub deletions: Vec<Change>,
    pub withdrawn: Vec<String>,
    pub still_there: Vec<String>,
}

impl Withdrawal {
    /// Says the deletion of `name` (of `api`): withdrawn once the host
    /// made it, else still there and why.
    fn said(&mut self, facts: &dyn Facts, api: &KindRef, namespace: &str, name: &str) {
        let what = format!("{} {name}", api.kind);
        let state = facts.change_state(api, namespace, name);
        match change::not_withdrawn(&what, state.as_ref()) {
            None => self.withdrawn.push(what),
            Some(still) => self.still_there.push(still),
        }
    }
}

/// Deletes the PgAdmin's exposure objects of every kind but `keep`. A kind
/// whose children cannot be read (not served, refused) has none to delete
/// that the host could see.
pub fn withdraw(
    facts: &dyn Facts,
    observation: &Observation,
    keep: Option<ExposureKind>,
) -> Withdrawal {
    let mut withdrawal = Withdrawal {
        deletions: Vec::new(),
        withdrawn: Vec::new(),
        still_there: Vec::new(),
    };
    for kind in EXPOSURE_KINDS.into_iter().filter(|k| Some(*k) != keep) {
        let api = exposure_kind(kind);
        // A kind refused to a list: what the pass read past the cache.
        if let Some(uid) = observation
            .entries
            .iter()
            .find(|e| e.kind == kind)
            .and_then(Entry::withdrawable_uid)
        {
            withdrawal.said(facts, &api, &observation.namespace, &observation.object);
            withdrawal.deletions.push(reconciler_guest_sdk::withdraw(
                api.clone(),
                observation.object.clone(),
                uid.to_owned(),
                None,
            ));
            continue;
        }
        for child in facts.children(&api).unwrap_or_default() {
            if child.meta.deletion.is_some() {
                continue;
            }
            withdrawal.said(facts, &api, &observation.namespace, &child.meta.name);
            withdrawal.deletions.push(reconciler_guest_sdk::withdraw(
                api.clone(),
                child.meta.name,
                child.meta.uid,
                None,
            ));
        }
    }
    withdrawal
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::GatewayRef;
    use reconciler_guest_sdk::mock::MockFacts;

    /// No exposure object requested or recorded as published.
    fn nothing_observed() -> Observation {
        Observation {
            namespace: "ns".into(),
            object: "orders-pgadmin".into(),
            requested: None,
            entries: Vec::new(),
            previous: Vec::new(),
        }
    }

    fn body(change: &Change) -> Value {
        match change {
            Change::Apply(a) => serde_json::from_str(&a.body).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_oauth2_client_reaches_the_container_by_secret_reference() {
        let plan = Plan {
            pgadmin: "orders",
            image: "dpage/pgadmin4:9.3",
            oauth2_secret: Some("orders-oidc"),
            exposure: None,
            database: None,
            stopped: false,
            observation: &nothing_observed(),
        };
        let changes = changes(&plan, &MockFacts::at(0));
        assert_eq!(changes.len(), 3);
        let d = body(&changes[1]);
        let env = &d["spec"]["template"]["spec"]["containers"][0]["env"];
        assert_eq!(env[2]["valueFrom"]["secretKeyRef"]["name"], "orders-oidc");
        assert_eq!(d["metadata"]["name"], "orders-pgadmin");
    }

    #[test]
    fn an_http_route_attaches_to_its_gateway_and_the_other_kinds_are_withdrawn() {
        let exposure = Exposure {
            kind: ExposureKind::HttpRoute,
            hostname: "pgadmin.apps.example.com".into(),
            ingress_class: None,
            gateway: Some(GatewayRef {
                name: "public".into(),
                namespace: Some("infra".into()),
            }),
        };
        let plan = Plan {
            pgadmin: "orders",
            image: "i",
            oauth2_secret: None,
            exposure: Some(&exposure),
            database: None,
            stopped: false,
            observation: &nothing_observed(),
        };
        let facts = MockFacts::at(0).with_child(
            &route_kind(),
            json!({"metadata": {"name": "orders-pgadmin", "namespace": "ns", "uid": "r1"}}),
        );
        let changes = changes(&plan, &facts);
        let route = body(&changes[3]);
        assert_eq!(route["spec"]["parentRefs"][0]["namespace"], "infra");
        assert!(matches!(&changes[4], Change::Withdraw(w) if w.object.uid == "r1"));
    }
}
