//! Shared test fixtures: a healthy world of facts around one EvidenceAgent, and the contract every verdict keeps.

use std::collections::BTreeMap;

use evidenceagent_guest::EvidenceAgent;
use evidenceagent_guest::registry;
use reconciler_guest_sdk::mock::{MockFacts, evaluation, meta, workload_ready};
use reconciler_guest_sdk::{
    Availability, ControllerRef, Evaluation, Guest, KindRef, Reconciliation, SecretFact, Verdict,
    WorkloadFact, testing,
};
use serde_json::{Value, json};

pub const NS: &str = "team-a";
pub const NAME: &str = "a";
/// The uid the mock gives the parent (`uid-<namespace>-<name>`).
pub const UID: &str = "uid-team-a-a";
pub const NOW: i64 = 1_795_953_600;
/// The settings of the service CA path, which [`World::healthy`] is.
pub const SETTINGS: &[(&str, &str)] = &[
    ("defaultImage", "ghcr.io/fyannk/evidence-agent:1.0"),
    ("allowedImageRepositories", "ghcr.io/fyannk/"),
    ("servingCertificate", "service-ca"),
];
/// The default settings: the operator issues the serving certificate, as
/// in [`World::operator`].
pub const OPERATOR: &[(&str, &str)] = &[
    ("defaultImage", "ghcr.io/fyannk/evidence-agent:1.0"),
    ("allowedImageRepositories", "ghcr.io/fyannk/"),
];
/// When the operator's serving certificate expires.
pub const EXPIRY: &str = "2027-11-29T12:00:00Z";

pub fn parent_with(spec: Value) -> Value {
    json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "EvidenceAgent",
        "metadata": {"name": NAME, "namespace": NS, "generation": 1},
        "spec": spec,
    })
}

pub fn parent() -> Value {
    parent_with(json!({"cluster": {"name": "pg"}}))
}

pub fn selector(name: &str, key: &str) -> Value {
    json!({"name": name, "key": key})
}

pub fn cluster_with_plugins(plugins: Value) -> Value {
    json!({
        "apiVersion": "postgresql.cnpg.io/v1",
        "kind": "Cluster",
        "metadata": {"name": "pg", "namespace": NS},
        "spec": {"instances": 3, "plugins": plugins},
    })
}

pub fn cluster() -> Value {
    cluster_with_plugins(json!([{
        "name": "barman-cloud.cloudnative-pg.io",
        "isWALArchiver": true,
        "parameters": {"barmanObjectName": "backups"},
    }]))
}

pub fn object_store_with(configuration: Value) -> Value {
    json!({
        "apiVersion": "barmancloud.cnpg.io/v1",
        "kind": "ObjectStore",
        "metadata": {"name": "backups", "namespace": NS},
        "spec": {"configuration": configuration},
    })
}

pub fn s3_configuration() -> Value {
    json!({
        "destinationPath": "s3://evidence-backups/pg",
        "s3Credentials": {
            "accessKeyId": selector("aws-creds", "ACCESS_KEY_ID"),
            "secretAccessKey": selector("aws-creds", "ACCESS_SECRET_KEY"),
            "region": selector("aws-creds", "REGION"),
        },
    })
}

/// Everything a healthy agent reads, each piece replaceable.
pub struct World {
    pub cluster: Option<Value>,
    pub object_store: Option<Value>,
    pub object_store_availability: Availability,
    pub secrets: Vec<(String, Vec<String>)>,
    pub config_maps: Vec<(String, Vec<String>)>,
    pub workload: Option<WorkloadFact>,
    pub services: Vec<Value>,
    /// Patches the controller of an object by name (any kind).
    pub controllers: BTreeMap<String, ControllerRef>,
    /// Patches a Secret's annotations by name.
    pub secret_annotations: BTreeMap<String, Vec<(String, String)>>,
    /// Patches a Secret's uid by name.
    pub secret_uids: BTreeMap<String, String>,
    /// The agent's own children, as `facts.children` serves them.
    pub children: Vec<(KindRef, Value)>,
    /// Reads (`workload`, `secret`, `configmap` or a kind, and a name) that fail.
    pub failing: Vec<(String, String)>,
}

impl World {
    /// A healthy agent: its Deployment, Service and CA bundle ConfigMap
    /// made by the operator (the agent controls them).
    pub fn healthy() -> Self {
        World {
            cluster: Some(cluster()),
            object_store: Some(object_store_with(s3_configuration())),
            object_store_availability: Availability::Available,
            secrets: vec![
                secret(
                    "aws-creds",
                    &["ACCESS_KEY_ID", "ACCESS_SECRET_KEY", "REGION"],
                ),
                secret("a-serving-cert", &["tls.crt", "tls.key"]),
            ],
            config_maps: vec![("a-service-ca".into(), vec!["service-ca.crt".into()])],
            workload: Some(workload_ready(NS, "a-evidence-agent", 1)),
            services: vec![
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a-evidence-agent", "namespace": NS}}),
            ],
            controllers: BTreeMap::new(),
            secret_annotations: BTreeMap::new(),
            secret_uids: BTreeMap::new(),
            children: Vec::new(),
            failing: Vec::new(),
        }
        .controlled_by_this_agent("a-evidence-agent")
        .controlled_by_this_agent("a-service-ca")
    }

    /// A healthy agent whose serving certificate the operator issued (no
    /// CA bundle ConfigMap: the service CA is not used).
    pub fn operator() -> Self {
        let mut world = World::healthy()
            .with_secret("a-serving-cert", &["ca.crt", "tls.crt", "tls.key"])
            .controlled_by_this_agent("a-serving-cert");
        world.config_maps.clear();
        world.secret_annotations.insert(
            "a-serving-cert".into(),
            vec![("reconciler.dev/certificate-expiry".into(), EXPIRY.into())],
        );
        world
    }

    pub fn controlled_by_this_agent(mut self, name: &str) -> Self {
        self.controllers.insert(
            name.into(),
            ControllerRef {
                api_version: "pgtoolbox.fyannk.dev/v1alpha1".into(),
                kind: "EvidenceAgent".into(),
                name: NAME.into(),
                uid: UID.into(),
            },
        );
        self
    }

    /// `name` of `kind` is a child the agent controls, with `uid`.
    pub fn with_child(mut self, kind: KindRef, name: &str, uid: &str) -> Self {
        let api_version = if kind.group.is_empty() {
            kind.version.clone()
        } else {
            format!("{}/{}", kind.group, kind.version)
        };
        let child = json!({
            "apiVersion": api_version,
            "kind": kind.kind,
            "metadata": {
                "name": name, "namespace": NS, "uid": uid,
                "ownerReferences": [{
                    "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "EvidenceAgent",
                    "name": NAME, "uid": UID, "controller": true,
                }],
            },
        });
        self.children.push((kind, child));
        self
    }

    pub fn without_secret(mut self, name: &str) -> Self {
        self.secrets.retain(|(n, _)| n != name);
        self
    }

    pub fn with_secret(mut self, name: &str, keys: &[&str]) -> Self {
        self.secrets.retain(|(n, _)| n != name);
        self.secrets.push(secret(name, keys));
        self
    }

    pub fn controlled_by_another(mut self, name: &str) -> Self {
        self.controllers.insert(
            name.into(),
            ControllerRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "legacy-agent".into(),
                uid: "uid-someone-else".into(),
            },
        );
        self
    }

    pub fn facts(&self) -> MockFacts {
        let mut mock = MockFacts::at(NOW);
        let store_kind = registry::object_store_kind();
        if let Some(cluster) = &self.cluster {
            mock = mock.with_object(&registry::cluster_kind(), cluster.clone());
        }
        if let Some(store) = &self.object_store {
            mock = mock.with_object(&store_kind, store.clone());
        }
        if self.object_store_availability != Availability::Available {
            mock = mock.with_availability(&store_kind, NS, self.object_store_availability);
        }
        for (name, keys) in &self.secrets {
            let mut secret_meta = meta(NS, name);
            if let Some(a) = self.secret_annotations.get(name) {
                secret_meta.annotations = a.clone();
            }
            if let Some(uid) = self.secret_uids.get(name) {
                secret_meta.uid = uid.clone();
            }
            secret_meta.controller = self.controllers.get(name).cloned();
            mock = mock.with_secret_fact(SecretFact {
                meta: secret_meta,
                type_: "Opaque".into(),
                keys: keys.clone(),
            });
        }
        for (name, keys) in &self.config_maps {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            mock = mock.with_config_map(NS, name, &keys);
        }
        if let Some(workload) = &self.workload {
            mock = mock.with_workload(workload.clone());
        }
        for service in &self.services {
            mock = mock.with_object(&registry::service_kind(), service.clone());
        }
        for (name, controller) in &self.controllers {
            mock = mock.with_controller(name, controller.clone());
        }
        for (kind, child) in &self.children {
            mock = mock.with_child(kind, child.clone());
        }
        for (what, name) in &self.failing {
            mock = mock.failing(what, name);
        }
        mock
    }
}

fn secret(name: &str, keys: &[&str]) -> (String, Vec<String>) {
    (name.into(), keys.iter().map(|k| (*k).to_owned()).collect())
}

pub fn input(parent: Value, settings: &[(&str, &str)]) -> Evaluation {
    evaluation(parent, settings)
}

/// One pass, checked against the kind's contract.
pub fn run(parent: Value, settings: &[(&str, &str)], world: &World) -> Verdict {
    reconcile(parent, settings, world).verdict
}

/// One pass with its changes, checked against the kind's contract.
pub fn reconcile(parent: Value, settings: &[(&str, &str)], world: &World) -> Reconciliation {
    let reconciliation = EvidenceAgent::reconcile(&input(parent, settings), &world.facts());
    keeps_contract(&reconciliation.verdict);
    reconciliation
}

/// The default pass: the default parent and settings.
pub fn pass(world: &World) -> Verdict {
    run(parent(), SETTINGS, world)
}

/// What the host checks of an unpaused verdict, and the kind's own rule
/// that ConfigurationValid=False always stalls with its reason.
pub fn keeps_contract(verdict: &Verdict) {
    testing::keeps_contract(&EvidenceAgent::describe(), verdict, false);
    testing::stalls_only_on_invalid_configuration(verdict);
}
