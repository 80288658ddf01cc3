//! A native mock of the `facts` import, so a guest's logic runs under plain
//! `cargo test` with no host and no cluster.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::facts::Facts;
use crate::{
    ApplyOutcome, Availability, CertificateBundleFact, ConfigMapFact, ControllerRef,
    EgressPolicyFact, ExposureFact, ExposureKind, JobFact, KindRef, NetworkPolicyFact,
    NodePodCidrsFact, Object, ObjectMeta, ReadError, SecretFact, Timestamp, WorkloadFact,
    WorkloadState,
};

type Key = (String, String);

/// Facts held in memory. Reads are recorded, so a test can assert what a
/// pass depends on.
#[derive(Default)]
pub struct MockFacts {
    now: i64,
    workloads: BTreeMap<Key, WorkloadFact>,
    secrets: BTreeMap<Key, SecretFact>,
    config_maps: BTreeMap<Key, ConfigMapFact>,
    objects: BTreeMap<(String, String, String), Vec<Object>>,
    unavailable: BTreeMap<(String, String), Availability>,
    network_policies: BTreeMap<String, Vec<NetworkPolicyFact>>,
    node_pod_cidrs: Option<NodePodCidrsFact>,
    exposures: Vec<ExposureFact>,
    cluster_roles: BTreeMap<String, ObjectMeta>,
    certificates: BTreeMap<(String, String, String), CertificateBundleFact>,
    applies: BTreeMap<(String, String, String, String), ApplyOutcome>,
    apply_times: BTreeMap<(String, String, String, String), i64>,
    controllers: BTreeMap<String, ControllerRef>,
    children: BTreeMap<(String, String), Vec<Object>>,
    jobs: BTreeMap<Key, JobFact>,
    egress_policies: BTreeMap<String, Vec<EgressPolicyFact>>,
    failing: BTreeSet<(String, String)>,
    reads: RefCell<BTreeSet<String>>,
}

impl MockFacts {
    /// A child of the parent, of a kind the guest writes (served by
    /// `children`, sorted by name).
    pub fn with_child(mut self, kind: &KindRef, json: serde_json::Value) -> Self {
        let (group, _, kind_name) = kind_key(kind);
        let list = self.children.entry((group, kind_name)).or_default();
        list.push(object(json));
        list.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        self
    }

    /// Facts at `now` (seconds since the epoch).
    pub fn at(now: i64) -> Self {
        MockFacts {
            now,
            ..Default::default()
        }
    }

    /// The workload fact `facts.workload` answers for its Deployment.
    pub fn with_workload(mut self, workload: WorkloadFact) -> Self {
        let key = (workload.meta.namespace.clone(), workload.meta.name.clone());
        self.workloads.insert(key, workload);
        self
    }

    /// A Secret holding `keys`.
    pub fn with_secret(mut self, namespace: &str, name: &str, keys: &[&str]) -> Self {
        self.secrets.insert(
            (namespace.to_owned(), name.to_owned()),
            SecretFact {
                meta: meta(namespace, name),
                type_: "Opaque".to_owned(),
                keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            },
        );
        self
    }

    /// A Secret as the host reads it (its metadata as given).
    pub fn with_secret_fact(mut self, secret: SecretFact) -> Self {
        let key = (secret.meta.namespace.clone(), secret.meta.name.clone());
        self.secrets.insert(key, secret);
        self
    }

    /// A ConfigMap holding `keys`.
    pub fn with_config_map(mut self, namespace: &str, name: &str, keys: &[&str]) -> Self {
        self.config_maps.insert(
            (namespace.to_owned(), name.to_owned()),
            ConfigMapFact {
                meta: meta(namespace, name),
                keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            },
        );
        self
    }

    /// An object of any kind, from its JSON (metadata is read from it).
    pub fn with_object(mut self, kind: &KindRef, json: serde_json::Value) -> Self {
        let object = object(json);
        self.objects.entry(kind_key(kind)).or_default().push(object);
        self
    }

    /// The optional API `kind` is not usable in `namespace`.
    pub fn with_availability(
        mut self,
        kind: &KindRef,
        namespace: &str,
        availability: Availability,
    ) -> Self {
        self.unavailable
            .insert((kind.kind.clone(), namespace.to_owned()), availability);
        self
    }

    /// A Job (served by `job`).
    pub fn with_job(mut self, job: JobFact) -> Self {
        let key = (job.meta.namespace.clone(), job.meta.name.clone());
        self.jobs.insert(key, job);
        self
    }

    /// A NetworkPolicy's egress side (served by `egress_policies`).
    pub fn with_egress_policy(mut self, policy: EgressPolicyFact) -> Self {
        let policies = self
            .egress_policies
            .entry(policy.meta.namespace.clone())
            .or_default();
        policies.push(policy);
        policies.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        self
    }

    /// A NetworkPolicy of its namespace.
    pub fn with_network_policy(mut self, policy: NetworkPolicyFact) -> Self {
        let policies = self
            .network_policies
            .entry(policy.meta.namespace.clone())
            .or_default();
        policies.push(policy);
        policies.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        self
    }

    /// What `node_pod_cidrs` answers (`known` with no Nodes unless set).
    pub fn with_node_pod_cidrs(mut self, nodes: NodePodCidrsFact) -> Self {
        self.node_pod_cidrs = Some(nodes);
        self
    }

    /// A Route, Ingress or HTTPRoute.
    pub fn with_exposure(mut self, exposure: ExposureFact) -> Self {
        self.exposures.push(exposure);
        self
    }

    /// A ClusterRole that exists.
    pub fn with_cluster_role(mut self, name: &str) -> Self {
        self.cluster_roles.insert(name.to_owned(), meta("", name));
        self
    }

    /// What `secret_certificates(namespace, name, key)` answers.
    pub fn with_certificates(mut self, key: &str, bundle: CertificateBundleFact) -> Self {
        let id = (
            bundle.meta.namespace.clone(),
            bundle.meta.name.clone(),
            key.to_owned(),
        );
        self.certificates.insert(id, bundle);
        self
    }

    /// The outcome of the host's last apply of a child.
    pub fn with_last_apply(
        mut self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
        outcome: ApplyOutcome,
    ) -> Self {
        let (group, _, kind) = kind_key(kind);
        self.applies.insert(
            (group, kind, namespace.to_owned(), name.to_owned()),
            outcome,
        );
        self
    }

    /// When the API server answered the host's last apply of the child
    /// (seconds since the epoch).
    pub fn with_last_apply_time(
        mut self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
        at: i64,
    ) -> Self {
        let (group, _, kind) = kind_key(kind);
        self.apply_times
            .insert((group, kind, namespace.to_owned(), name.to_owned()), at);
        self
    }

    /// The workloads, ConfigMaps and objects (of `get` and `list`) named
    /// `name` that have no controller of their own are controlled by
    /// `controller`.
    pub fn with_controller(mut self, name: &str, controller: ControllerRef) -> Self {
        self.controllers.insert(name.to_owned(), controller);
        self
    }

    /// The read of `name` by `what` fails (`ReadError::Failed`, "the cache
    /// of `what` is not synced"). `what` is `workload`, `secret`,
    /// `configmap`, `clusterrole`, `exposure`, `certificates` or `job`; a kind
    /// (`Cluster`) for `get`; `list` with the kind as `name` for a list.
    pub fn failing(mut self, what: &str, name: &str) -> Self {
        self.failing.insert((what.to_owned(), name.to_owned()));
        self
    }

    /// What the pass read, one line per read (`workload ns/name`, ...).
    pub fn reads(&self) -> Vec<String> {
        self.reads.borrow().iter().cloned().collect()
    }

    fn record(&self, what: String) {
        self.reads.borrow_mut().insert(what);
    }

    fn fail(&self, what: &str, name: &str) -> Result<(), ReadError> {
        if self.failing.contains(&(what.to_owned(), name.to_owned())) {
            Err(ReadError::Failed(format!(
                "the cache of {what} is not synced"
            )))
        } else {
            Ok(())
        }
    }

    fn controlled(&self, mut meta: ObjectMeta) -> ObjectMeta {
        if meta.controller.is_none() {
            meta.controller = self.controllers.get(&meta.name).cloned();
        }
        meta
    }
}

impl Facts for MockFacts {
    fn now(&self) -> Timestamp {
        Timestamp {
            seconds: self.now,
            nanos: 0,
        }
    }

    fn workload(&self, namespace: &str, name: &str) -> Result<Option<WorkloadFact>, ReadError> {
        self.record(format!("workload {namespace}/{name}"));
        self.fail("workload", name)?;
        Ok(self
            .workloads
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .map(|mut w| {
                w.meta = self.controlled(w.meta);
                w
            }))
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<Option<SecretFact>, ReadError> {
        self.record(format!("secret {namespace}/{name}"));
        self.fail("secret", name)?;
        Ok(self
            .secrets
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned())
    }

    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMapFact>, ReadError> {
        self.record(format!("configmap {namespace}/{name}"));
        self.fail("configmap", name)?;
        Ok(self
            .config_maps
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .map(|mut c| {
                c.meta = self.controlled(c.meta);
                c
            }))
    }

    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ReadError> {
        self.record(format!("get {} {namespace}/{name}", kind.kind));
        self.fail(&kind.kind, name)?;
        self.refuse_unavailable(kind, namespace)?;
        Ok(self
            .objects
            .get(&kind_key(kind))
            .and_then(|all| {
                all.iter()
                    .find(|o| o.meta.namespace == namespace && o.meta.name == name)
            })
            .cloned()
            .map(|mut o| {
                o.meta = self.controlled(o.meta);
                o
            }))
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &[(String, String)],
    ) -> Result<Vec<Object>, ReadError> {
        self.record(format!("list {} {namespace} {selector:?}", kind.kind));
        self.fail("list", &kind.kind)?;
        self.refuse_unavailable(kind, namespace)?;
        let mut found: Vec<Object> = self
            .objects
            .get(&kind_key(kind))
            .into_iter()
            .flatten()
            .filter(|o| o.meta.namespace == namespace)
            .filter(|o| selector.iter().all(|pair| o.meta.labels.contains(pair)))
            .cloned()
            .map(|mut o| {
                o.meta = self.controlled(o.meta);
                o
            })
            .collect();
        found.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        Ok(found)
    }

    fn api_availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        self.unavailable
            .get(&(kind.kind.clone(), namespace.to_owned()))
            .copied()
            .unwrap_or(Availability::Available)
    }

    fn job(&self, namespace: &str, name: &str) -> Result<Option<JobFact>, ReadError> {
        self.record(format!("job {namespace}/{name}"));
        self.fail("job", name)?;
        Ok(self
            .jobs
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .map(|mut j| {
                j.meta = self.controlled(j.meta);
                j
            }))
    }

    fn egress_policies(&self, namespace: &str) -> Result<Vec<EgressPolicyFact>, ReadError> {
        self.record(format!("egresspolicies {namespace}"));
        Ok(self
            .egress_policies
            .get(namespace)
            .cloned()
            .unwrap_or_default())
    }

    fn network_policies(&self, namespace: &str) -> Result<Vec<NetworkPolicyFact>, ReadError> {
        self.record(format!("networkpolicies {namespace}"));
        Ok(self
            .network_policies
            .get(namespace)
            .cloned()
            .unwrap_or_default())
    }

    fn node_pod_cidrs(&self) -> NodePodCidrsFact {
        self.record("nodes".to_owned());
        self.node_pod_cidrs
            .clone()
            .unwrap_or(NodePodCidrsFact::Known(Vec::new()))
    }

    fn exposure(
        &self,
        kind: ExposureKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ExposureFact>, ReadError> {
        self.record(format!("exposure {kind:?} {namespace}/{name}"));
        self.fail("exposure", name)?;
        let api = exposure_kind_ref(kind);
        self.refuse_unavailable(&api, namespace)?;
        Ok(self
            .exposures
            .iter()
            .find(|e| e.kind == kind && e.meta.namespace == namespace && e.meta.name == name)
            .cloned())
    }

    fn cluster_role(&self, name: &str) -> Result<Option<ObjectMeta>, ReadError> {
        self.record(format!("clusterrole {name}"));
        self.fail("clusterrole", name)?;
        Ok(self.cluster_roles.get(name).cloned())
    }

    fn secret_certificates(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<Option<CertificateBundleFact>, ReadError> {
        self.record(format!("certificates {namespace}/{name}[{key}]"));
        self.fail("certificates", name)?;
        let id = (namespace.to_owned(), name.to_owned(), key.to_owned());
        if let Some(bundle) = self.certificates.get(&id) {
            return Ok(Some(bundle.clone()));
        }
        let secret = self.secrets.get(&(namespace.to_owned(), name.to_owned()));
        Ok(secret.map(|s| CertificateBundleFact {
            meta: s.meta.clone(),
            has_key: s.keys.iter().any(|k| k == key),
            certificates: Vec::new(),
        }))
    }

    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome> {
        self.record(format!("last-apply {} {namespace}/{name}", kind.kind));
        let (group, _, kind) = kind_key(kind);
        self.applies
            .get(&(group, kind, namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    fn last_apply_time(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<Timestamp> {
        self.record(format!("last-apply-time {} {namespace}/{name}", kind.kind));
        let (group, _, kind) = kind_key(kind);
        self.apply_times
            .get(&(group, kind, namespace.to_owned(), name.to_owned()))
            .map(|&seconds| Timestamp { seconds, nanos: 0 })
    }

    fn children(&self, kind: &KindRef) -> Result<Vec<Object>, ReadError> {
        self.record(format!("children {}", kind.kind));
        self.fail("children", &kind.kind)?;
        // As the host: a Secret's data never reaches a guest.
        if kind.group.is_empty() && kind.kind == "Secret" {
            return Err(ReadError::Forbidden(
                "Secrets are served only as key names, through facts.secret".to_owned(),
            ));
        }
        let (group, _, kind) = kind_key(kind);
        Ok(self
            .children
            .get(&(group, kind))
            .cloned()
            .unwrap_or_default())
    }
}

/// The API of an exposure kind, as the host declares and probes it.
pub fn exposure_kind_ref(kind: ExposureKind) -> KindRef {
    let (group, kind) = match kind {
        ExposureKind::Route => ("route.openshift.io", "Route"),
        ExposureKind::Ingress => ("networking.k8s.io", "Ingress"),
        ExposureKind::HttpRoute => ("gateway.networking.k8s.io", "HTTPRoute"),
    };
    KindRef {
        group: group.to_owned(),
        version: "v1".to_owned(),
        kind: kind.to_owned(),
    }
}

impl MockFacts {
    fn refuse_unavailable(&self, kind: &KindRef, namespace: &str) -> Result<(), ReadError> {
        match self.api_availability(kind, namespace) {
            Availability::Available => Ok(()),
            Availability::NotServed => Err(ReadError::NotServed(format!(
                "{} is not served by this cluster",
                kind.kind
            ))),
            Availability::Forbidden => Err(ReadError::Forbidden(format!(
                "the host may not read {} in {namespace}",
                kind.kind
            ))),
        }
    }
}

fn kind_key(kind: &KindRef) -> (String, String, String) {
    (kind.group.clone(), kind.version.clone(), kind.kind.clone())
}

/// Metadata with a name and namespace, everything else empty.
pub fn meta(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        uid: format!("uid-{namespace}-{name}"),
        generation: 1,
        labels: Vec::new(),
        annotations: Vec::new(),
        controller: None,
        creation: None,
        deletion: None,
    }
}

/// An object from its JSON; its metadata is read as the host reads it
/// (name, namespace, uid, generation, labels, annotations, the controller
/// owner, creation and deletion times).
pub fn object(json: serde_json::Value) -> Object {
    Object {
        meta: object_meta(&json),
        json: json.to_string(),
    }
}

/// Reads `metadata` from an object's JSON the way the host does.
pub fn object_meta(json: &serde_json::Value) -> ObjectMeta {
    let md = &json["metadata"];
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let pairs = |v: &serde_json::Value| -> Vec<(String, String)> {
        v.as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default()
    };
    let time = |v: &serde_json::Value| {
        v.as_str()
            .and_then(parse_rfc3339)
            .map(|seconds| Timestamp { seconds, nanos: 0 })
    };
    let mut meta = meta(&text(&md["namespace"]), &text(&md["name"]));
    if let Some(uid) = md["uid"].as_str() {
        meta.uid = uid.to_owned();
    }
    meta.labels = pairs(&md["labels"]);
    meta.annotations = pairs(&md["annotations"]);
    meta.generation = md["generation"].as_i64().unwrap_or(1);
    meta.controller = md["ownerReferences"].as_array().and_then(|owners| {
        owners
            .iter()
            .find(|o| o["controller"].as_bool() == Some(true))
            .map(|o| crate::ControllerRef {
                api_version: text(&o["apiVersion"]),
                kind: text(&o["kind"]),
                name: text(&o["name"]),
                uid: text(&o["uid"]),
            })
    });
    meta.creation = time(&md["creationTimestamp"]);
    meta.deletion = time(&md["deletionTimestamp"]);
    meta
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (what the API server
/// writes); anything else is `None`.
fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss) = (n(11..13)?, n(14..16)?, n(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3_600 + mm * 60 + ss)
}

/// A Deployment whose `replicas` Pods are all Ready on the current template.
pub fn workload_ready(namespace: &str, name: &str, replicas: u32) -> WorkloadFact {
    WorkloadFact {
        meta: meta(namespace, name),
        generation_observed: true,
        desired_replicas: replicas,
        updated_replicas: replicas,
        ready_replicas: replicas,
        available_replicas: replicas,
        progress_deadline_exceeded: false,
        replica_failure: None,
        pods: Vec::new(),
        state: WorkloadState::Ready,
    }
}

/// A Deployment in `state` (the host's classification).
pub fn workload_in(namespace: &str, name: &str, state: WorkloadState) -> WorkloadFact {
    WorkloadFact {
        ready_replicas: 0,
        available_replicas: 0,
        state,
        ..workload_ready(namespace, name, 1)
    }
}

/// An evaluation of `parent` (its JSON), not paused, with `settings`.
pub fn evaluation(parent: serde_json::Value, settings: &[(&str, &str)]) -> crate::Evaluation {
    crate::Evaluation {
        parent: object(parent),
        paused: false,
        settings: settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_meta_reads_what_the_host_reads() {
        let m = object_meta(&serde_json::json!({"metadata": {
            "name": "a", "namespace": "ns", "uid": "u1",
            "creationTimestamp": "2026-11-29T12:00:00Z",
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "p", "uid": "u0", "controller": true}]
        }}));
        assert_eq!(m.uid, "u1");
        assert_eq!(m.controller.unwrap().uid, "u0");
        assert_eq!(m.creation.unwrap().seconds, 1_795_953_600);
    }

    fn someone() -> ControllerRef {
        ControllerRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "legacy".into(),
            uid: "uid-legacy".into(),
        }
    }

    #[test]
    fn a_failing_read_fails_and_is_still_recorded() {
        let facts = MockFacts::at(0)
            .with_secret("ns", "s", &["k"])
            .failing("secret", "s")
            .failing("Cluster", "pg");
        assert_eq!(
            facts.secret("ns", "s"),
            Err(ReadError::Failed(
                "the cache of secret is not synced".into()
            ))
        );
        let cluster = crate::spec::kind_ref("postgresql.cnpg.io", "v1", "Cluster");
        assert!(facts.get(&cluster, "ns", "pg").is_err());
        assert!(facts.config_map("ns", "s").is_ok());
        assert_eq!(
            facts.reads(),
            ["configmap ns/s", "get Cluster ns/pg", "secret ns/s"]
        );
    }

    #[test]
    fn a_controller_is_patched_only_where_there_is_none() {
        let service = crate::spec::kind_ref("", "v1", "Service");
        let mut own = workload_ready("ns", "a", 1);
        own.meta.controller = Some(ControllerRef {
            uid: "uid-mine".into(),
            ..someone()
        });
        let facts = MockFacts::at(0)
            .with_workload(own)
            .with_config_map("ns", "a", &[])
            .with_object(
                &service,
                serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}),
            )
            .with_controller("a", someone());
        let uid = |meta: ObjectMeta| meta.controller.map(|c| c.uid);
        assert_eq!(
            uid(facts.workload("ns", "a").unwrap().unwrap().meta).as_deref(),
            Some("uid-mine")
        );
        assert_eq!(
            uid(facts.config_map("ns", "a").unwrap().unwrap().meta).as_deref(),
            Some("uid-legacy")
        );
        assert_eq!(
            uid(facts.get(&service, "ns", "a").unwrap().unwrap().meta).as_deref(),
            Some("uid-legacy")
        );
    }

    #[test]
    fn a_secret_fact_keeps_its_metadata() {
        let mut meta = meta("ns", "s");
        meta.uid = "reissued".into();
        let facts = MockFacts::at(0).with_secret_fact(SecretFact {
            meta,
            type_: "kubernetes.io/tls".into(),
            keys: vec!["tls.crt".into()],
        });
        assert_eq!(
            facts.secret("ns", "s").unwrap().unwrap().meta.uid,
            "reissued"
        );
    }
}
