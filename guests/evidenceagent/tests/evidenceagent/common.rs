//! Shared test fixtures: a healthy world of facts around one EvidenceAgent, and the contract every verdict keeps.

use std::collections::BTreeMap;

use evidenceagent_guest::EvidenceAgent;
use evidenceagent_guest::registry::{self, CONFIGURATION_VALID};
use reconciler_guest_sdk::mock::{MockFacts, evaluation, workload_ready};
use reconciler_guest_sdk::{
    ApplyOutcome, Availability, CertificateBundleFact, ConditionStatus, ConfigMapFact,
    ControllerRef, Evaluation, ExposureFact, ExposureKind, Facts, Guest, KindRef,
    NetworkPolicyFact, NodePodCidrsFact, Object, ObjectMeta, ReadError, SecretFact, Timestamp,
    Verdict, WorkloadFact,
};
use serde_json::{Value, json};

pub const NS: &str = "team-a";
pub const NAME: &str = "a";
/// The uid the mock gives the parent (`uid-<namespace>-<name>`).
pub const UID: &str = "uid-team-a-a";
pub const NOW: i64 = 1_795_953_600;
pub const SETTINGS: &[(&str, &str)] = &[
    ("defaultImage", "ghcr.io/fyannk/evidence-agent:1.0"),
    ("allowedImageRepositories", "ghcr.io/fyannk/"),
];

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
    /// Reads (`workload`, `secret`, `configmap` or a kind, and a name) that fail.
    pub failing: Vec<(String, String)>,
}

impl World {
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
            failing: Vec::new(),
        }
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

    pub fn facts(&self) -> WorldFacts {
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
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            mock = mock.with_secret(NS, name, &keys);
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
        WorldFacts {
            mock,
            controllers: self.controllers.clone(),
            secret_annotations: self.secret_annotations.clone(),
            secret_uids: self.secret_uids.clone(),
            failing: self.failing.clone(),
        }
    }
}

fn secret(name: &str, keys: &[&str]) -> (String, Vec<String>) {
    (name.into(), keys.iter().map(|k| (*k).to_owned()).collect())
}

/// MockFacts with the metadata the mock cannot express patched in
/// (controllers, Secret annotations and uids), and failing reads.
pub struct WorldFacts {
    pub mock: MockFacts,
    controllers: BTreeMap<String, ControllerRef>,
    secret_annotations: BTreeMap<String, Vec<(String, String)>>,
    secret_uids: BTreeMap<String, String>,
    failing: Vec<(String, String)>,
}

impl WorldFacts {
    fn fail(&self, what: &str, name: &str) -> Result<(), ReadError> {
        if self.failing.iter().any(|(w, n)| w == what && n == name) {
            Err(ReadError::Failed(format!(
                "the cache of {what} is not synced"
            )))
        } else {
            Ok(())
        }
    }

    fn controller(&self, name: &str) -> Option<ControllerRef> {
        self.controllers.get(name).cloned()
    }
}

impl Facts for WorldFacts {
    fn now(&self) -> Timestamp {
        self.mock.now()
    }

    fn workload(&self, namespace: &str, name: &str) -> Result<Option<WorkloadFact>, ReadError> {
        self.fail("workload", name)?;
        Ok(self.mock.workload(namespace, name)?.map(|mut w| {
            w.meta.controller = w.meta.controller.or_else(|| self.controller(name));
            w
        }))
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<Option<SecretFact>, ReadError> {
        self.fail("secret", name)?;
        Ok(self.mock.secret(namespace, name)?.map(|mut s| {
            if let Some(a) = self.secret_annotations.get(name) {
                s.meta.annotations = a.clone();
            }
            if let Some(uid) = self.secret_uids.get(name) {
                s.meta.uid = uid.clone();
            }
            s
        }))
    }

    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMapFact>, ReadError> {
        self.fail("configmap", name)?;
        Ok(self.mock.config_map(namespace, name)?.map(|mut c| {
            c.meta.controller = self.controller(name);
            c
        }))
    }

    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ReadError> {
        self.fail(&kind.kind, name)?;
        Ok(self.mock.get(kind, namespace, name)?.map(|mut o| {
            o.meta.controller = self.controller(name);
            o
        }))
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &[(String, String)],
    ) -> Result<Vec<Object>, ReadError> {
        self.mock.list(kind, namespace, selector)
    }

    fn api_availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        self.mock.api_availability(kind, namespace)
    }

    fn network_policies(&self, namespace: &str) -> Result<Vec<NetworkPolicyFact>, ReadError> {
        self.mock.network_policies(namespace)
    }

    fn node_pod_cidrs(&self) -> NodePodCidrsFact {
        self.mock.node_pod_cidrs()
    }

    fn exposure(
        &self,
        kind: ExposureKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ExposureFact>, ReadError> {
        self.mock.exposure(kind, namespace, name)
    }

    fn cluster_role(&self, name: &str) -> Result<Option<ObjectMeta>, ReadError> {
        self.mock.cluster_role(name)
    }

    fn secret_certificates(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<Option<CertificateBundleFact>, ReadError> {
        self.mock.secret_certificates(namespace, name, key)
    }

    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome> {
        self.mock.last_apply(kind, namespace, name)
    }
}

pub fn input(parent: Value, settings: &[(&str, &str)]) -> Evaluation {
    evaluation(parent, settings)
}

/// One pass, checked against the kind's contract.
pub fn run(parent: Value, settings: &[(&str, &str)], world: &World) -> Verdict {
    let verdict = EvidenceAgent::evaluate(&input(parent, settings), &world.facts());
    keeps_contract(&verdict);
    verdict
}

/// The default pass: the default parent and settings.
pub fn pass(world: &World) -> Verdict {
    run(parent(), SETTINGS, world)
}

/// What the host checks of an unpaused verdict: every aspect once, in
/// declared order, registered reasons, declared stalls; and the kind's own
/// rule that ConfigurationValid=False always stalls with its reason.
pub fn keeps_contract(verdict: &Verdict) {
    let spec = EvidenceAgent::describe();
    let types: Vec<&str> = verdict.aspects.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, spec.aspects, "aspects in declared order");
    let registered =
        |r: &str| HOST_REASONS_USED.contains(&r) || spec.reasons.iter().any(|e| e.name == r);
    for c in &verdict.aspects {
        assert!(registered(&c.reason), "unregistered reason {}", c.reason);
        assert!(!c.message.is_empty(), "{} has no message", c.type_);
    }
    for e in &verdict.events {
        assert!(registered(&e.reason), "unregistered event {}", e.reason);
    }
    let config = &verdict.aspects[0];
    assert_eq!(config.type_, CONFIGURATION_VALID);
    match (&config.status, &verdict.stall) {
        (ConditionStatus::False, Some(stall)) => {
            assert_eq!(stall.reason, config.reason);
            assert!(spec.stalls.iter().any(|s| s.reason == stall.reason));
        }
        (ConditionStatus::False, None) => panic!("ConfigurationValid=False without a stall"),
        (_, Some(stall)) => panic!("stall {} without ConfigurationValid=False", stall.reason),
        (_, None) => {}
    }
}

/// The host's reasons the guest uses itself.
const HOST_REASONS_USED: &[&str] = &["AsExpected", "Reconciling"];
