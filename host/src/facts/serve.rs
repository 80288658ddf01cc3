//! The `facts` import: serves a pass's reads from an [`ObjectSource`],
//! refuses kinds the guest did not declare, and records every read as a
//! dependency of the parent.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use reconciler_conventions::kind::KindRef;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::certificates::bundle;
use super::exposure::{exposure_fact, exposure_kind_ref};
use super::memo::MemoKey;
use super::meta::{from_jiff, object_meta};
use super::network_policy::network_policy_fact;
use super::nodes::{MAX_NODES, from_nodes, node_cidrs, too_many};
use super::source::{ApplyOutcome, Availability, ObjectSource, SourceError};
use super::workload::{DeploymentPart, deployment_part, pod_fact};
use super::{Cached, Selector};
use crate::bindings::v0_2::reconciler::guest0_2_0::facts::{
    self as wit, CertificateBundleFact, ConfigMapFact, ExposureFact, ExposureKind,
    NetworkPolicyFact, NodePodCidrsFact, ReadError, SecretFact, WorkloadFact,
};
use crate::bindings::v0_2::reconciler::guest0_2_0::types::{self as wit_types, Object, Timestamp};

/// Something a pass read: a change to it re-queues the parent.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dependency {
    Object {
        kind: KindRef,
        namespace: String,
        name: String,
    },
    List {
        kind: KindRef,
        namespace: String,
        selector: Selector,
    },
    /// Whether the kind can be read in the namespace (`facts.api-availability`):
    /// the answer changes when the kind stops or starts being served.
    Availability { kind: KindRef, namespace: String },
}

impl std::fmt::Display for Dependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dependency::Object {
                kind,
                namespace,
                name,
            } => write!(f, "{} {namespace}/{name}", kind.kind),
            Dependency::List {
                kind,
                namespace,
                selector,
            } => write!(f, "{} in {namespace:?} matching {{{selector}}}", kind.kind),
            Dependency::Availability { kind, namespace } => {
                write!(f, "availability of {} in {namespace:?}", kind.kind)
            }
        }
    }
}

pub fn deployment_kind() -> KindRef {
    core_kind("apps", "Deployment")
}
pub fn pod_kind() -> KindRef {
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
pub fn node_kind() -> KindRef {
    core_kind("", "Node")
}
pub fn cluster_role_kind() -> KindRef {
    core_kind("rbac.authorization.k8s.io", "ClusterRole")
}

fn core_kind(group: &str, kind: &str) -> KindRef {
    KindRef {
        group: group.to_owned(),
        version: "v1".to_owned(),
        kind: kind.to_owned(),
    }
}

/// Serves one pass's facts. What it derives from an object is memoised
/// beside the object in the source ([`Cached`]), so a later pass reading
/// the same version of it copies the fact instead of deriving it again.
pub struct FactServer {
    source: Arc<dyn ObjectSource>,
    declared: Arc<BTreeSet<KindRef>>,
    now: jiff::Timestamp,
    reads: BTreeSet<Dependency>,
    /// Workloads derived in this pass: the source does not change within
    /// a pass, and deriving one parses the Deployment and all its Pods.
    workloads: BTreeMap<(String, String), Option<WorkloadFact>>,
}

impl FactServer {
    pub fn new(
        source: Arc<dyn ObjectSource>,
        declared: impl IntoIterator<Item = KindRef>,
        now: jiff::Timestamp,
    ) -> Self {
        Self::with_declared(source, Arc::new(declared.into_iter().collect()), now)
    }

    /// The same, with the declared kinds already collected (a module
    /// collects them once, not once a pass).
    pub fn with_declared(
        source: Arc<dyn ObjectSource>,
        declared: Arc<BTreeSet<KindRef>>,
        now: jiff::Timestamp,
    ) -> Self {
        FactServer {
            source,
            declared,
            now,
            reads: BTreeSet::new(),
            workloads: BTreeMap::new(),
        }
    }

    /// What the pass read so far.
    pub fn into_reads(self) -> BTreeSet<Dependency> {
        self.reads
    }

    fn allow(&self, kind: &KindRef, via: &str) -> Result<(), ReadError> {
        if self.declared.contains(kind) {
            Ok(())
        } else {
            Err(ReadError::NotDeclared(format!(
                "{via} needs {kind}, which the guest's kind-spec.reads does not declare"
            )))
        }
    }

    fn read_object(
        &mut self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, ReadError> {
        self.reads.insert(Dependency::Object {
            kind: kind.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        });
        self.source.get(kind, namespace, name).map_err(read_error)
    }

    fn read_list(
        &mut self,
        kind: &KindRef,
        namespace: &str,
        selector: Selector,
    ) -> Result<Vec<Arc<Cached>>, ReadError> {
        let found = self
            .source
            .list(kind, namespace, &selector)
            .map_err(read_error);
        self.reads.insert(Dependency::List {
            kind: kind.clone(),
            namespace: namespace.to_owned(),
            selector,
        });
        found
    }

    /// The Deployment `name` and the Pods its selector matches, as a fact.
    fn derive_workload(
        &mut self,
        deployments: &KindRef,
        pods: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<WorkloadFact>, ReadError> {
        let Some(cached) = self.read_object(deployments, namespace, name)? else {
            return Ok(None);
        };
        let part = cached.memo().get_or_insert(MemoKey::Deployment, || {
            typed::<Deployment>("Deployment", &cached).map(|d| deployment_part(&cached, &d))
        });
        let part: &DeploymentPart = match &*part {
            Ok(part) => part,
            Err(text) => return Err(ReadError::Failed(text.clone())),
        };
        let pod_facts = self
            .read_list(pods, namespace, part.selector().clone())?
            .iter()
            .map(|p| {
                let fact = p.memo().get_or_insert(MemoKey::Pod, || {
                    typed::<Pod>("Pod", p).map(|pod| pod_fact(p, &pod))
                });
                match &*fact {
                    Ok(fact) => Ok(fact.clone()),
                    Err(text) => Err(ReadError::Failed(text.clone())),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(part.with_pods(pod_facts)))
    }
}

fn read_error(e: SourceError) -> ReadError {
    match e {
        SourceError::NotServed(_) => ReadError::NotServed(e.to_string()),
        SourceError::Forbidden { .. } => ReadError::Forbidden(e.to_string()),
        SourceError::NotWatched(_) => ReadError::Failed(e.to_string()),
    }
}

/// An object read as its built-in type `T` (a Deployment, a Pod), or why
/// it is malformed (memoised with it): the object, the field and what is
/// wrong with it, e.g. `Pod ns/p is malformed at status.containerStatuses:
/// invalid type: string "x", expected a sequence`. The API server validates
/// these kinds, so only a fixture can hold a malformed one; a guest reading
/// it gets `read-error.failed` with this text, never a guess at what the
/// object meant.
fn typed<T: DeserializeOwned>(kind: &str, object: &Value) -> Result<T, String> {
    T::deserialize(object).map_err(|e| {
        let meta = object_meta(object);
        let at = culprit(object, |v| T::deserialize(v).is_ok())
            .map(|field| format!(" at {field}"))
            .unwrap_or_default();
        format!(
            "{kind} {}/{} is malformed{at}: {e}",
            meta.namespace, meta.name
        )
    })
}

/// The most trials [`culprit`] makes: each copies and reads the object.
const CULPRIT_TRIALS: usize = 256;

/// Where in `object` a typed read fails, as a path
/// (`spec.template.spec.containers[0].ports`): the deepest field whose
/// removal lets `reads` accept the object, found by descending into the one
/// child whose removal does. None when no single field is to blame (two
/// are malformed, or the object itself is not one); the path stops where
/// no child alone is, or after [`CULPRIT_TRIALS`] trials.
fn culprit(object: &Value, reads: impl Fn(&Value) -> bool) -> Option<String> {
    let mut path: Vec<(String, Option<usize>)> = Vec::new();
    let mut at = object;
    let mut trials = 0;
    loop {
        let children: Vec<(String, Option<usize>)> = match at {
            Value::Object(m) => m.keys().map(|k| (k.clone(), None)).collect(),
            Value::Array(a) => (0..a.len()).map(|i| (String::new(), Some(i))).collect(),
            _ => break,
        };
        let mut found = None;
        for child in children {
            if trials == CULPRIT_TRIALS {
                break;
            }
            trials += 1;
            let mut trial = object.clone();
            let parent = path.iter().try_fold(&mut trial, |v, step| match step {
                (_, Some(i)) => v.get_mut(*i),
                (key, None) => v.get_mut(key.as_str()),
            });
            match (&child, parent) {
                ((_, Some(i)), Some(Value::Array(a))) if *i < a.len() => drop(a.remove(*i)),
                ((key, None), Some(Value::Object(m))) => drop(m.remove(key)),
                _ => continue,
            }
            if reads(&trial) {
                found = Some(child);
                break;
            }
        }
        let Some(child) = found else { break };
        at = match &child {
            (_, Some(i)) => &at[*i],
            (key, None) => &at[key.as_str()],
        };
        path.push(child);
    }
    if path.is_empty() {
        return None;
    }
    let mut text = String::new();
    for (key, index) in path {
        match index {
            Some(i) => text.push_str(&format!("[{i}]")),
            None if text.is_empty() => text.push_str(&key),
            None => {
                text.push('.');
                text.push_str(&key);
            }
        }
    }
    Some(text)
}

/// The contract's `Object` of a cached object: metadata and JSON text,
/// serialised once per version of the object.
fn object_of(cached: &Cached) -> Object {
    Object::clone(&cached.memo().get_or_insert(MemoKey::Object, || Object {
        meta: object_meta(cached),
        json: cached.to_string(),
    }))
}

fn key_names(object: &Value, fields: &[&str]) -> Vec<String> {
    let mut keys: Vec<String> = fields
        .iter()
        .filter_map(|f| object[*f].as_object())
        .flat_map(|m| m.keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn to_model(kind: &wit_types::KindRef) -> KindRef {
    KindRef {
        group: kind.group.clone(),
        version: kind.version.clone(),
        kind: kind.kind.clone(),
    }
}

impl wit_types::Host for FactServer {}

impl wit::Host for FactServer {
    fn now(&mut self) -> Timestamp {
        from_jiff(self.now)
    }

    fn workload(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<WorkloadFact>, ReadError> {
        let (deployments, pods) = (deployment_kind(), pod_kind());
        self.allow(&deployments, "facts.workload")?;
        self.allow(&pods, "facts.workload")?;
        let key = (namespace, name);
        if let Some(derived) = self.workloads.get(&key) {
            return Ok(derived.clone());
        }
        let derived = self.derive_workload(&deployments, &pods, &key.0, &key.1)?;
        self.workloads.insert(key, derived.clone());
        Ok(derived)
    }

    fn secret(&mut self, namespace: String, name: String) -> Result<Option<SecretFact>, ReadError> {
        let kind = secret_kind();
        self.allow(&kind, "facts.secret")?;
        Ok(self.read_object(&kind, &namespace, &name)?.map(|s| {
            SecretFact::clone(&s.memo().get_or_insert(MemoKey::Secret, || SecretFact {
                meta: object_meta(&s),
                type_: s["type"].as_str().unwrap_or("Opaque").to_owned(),
                keys: key_names(&s, &["data", "stringData"]),
            }))
        }))
    }

    fn config_map(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<ConfigMapFact>, ReadError> {
        let kind = config_map_kind();
        self.allow(&kind, "facts.config-map")?;
        Ok(self.read_object(&kind, &namespace, &name)?.map(|c| {
            ConfigMapFact::clone(
                &c.memo()
                    .get_or_insert(MemoKey::ConfigMap, || ConfigMapFact {
                        meta: object_meta(&c),
                        keys: key_names(&c, &["data", "binaryData"]),
                    }),
            )
        }))
    }

    fn get(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
        name: String,
    ) -> Result<Option<Object>, ReadError> {
        let kind = to_model(&kind);
        refuse_secret_data(&kind)?;
        self.allow(&kind, "facts.get")?;
        Ok(self
            .read_object(&kind, &namespace, &name)?
            .map(|o| object_of(&o)))
    }

    fn list(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
        selector: Vec<(String, String)>,
    ) -> Result<Vec<Object>, ReadError> {
        let kind = to_model(&kind);
        refuse_secret_data(&kind)?;
        self.allow(&kind, "facts.list")?;
        let selector = Selector::from_pairs(selector.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Ok(self
            .read_list(&kind, &namespace, selector)?
            .iter()
            .map(|o| object_of(o))
            .collect())
    }

    fn api_availability(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
    ) -> wit::Availability {
        let kind = to_model(&kind);
        let availability = self.source.availability(&kind, &namespace);
        self.reads
            .insert(Dependency::Availability { kind, namespace });
        match availability {
            Availability::Available => wit::Availability::Available,
            Availability::NotServed => wit::Availability::NotServed,
            Availability::Forbidden => wit::Availability::Forbidden,
        }
    }

    fn network_policies(&mut self, namespace: String) -> Result<Vec<NetworkPolicyFact>, ReadError> {
        let kind = network_policy_kind();
        self.allow(&kind, "facts.network-policies")?;
        let mut policies: Vec<NetworkPolicyFact> = self
            .read_list(&kind, &namespace, Selector::default())?
            .iter()
            .map(|p| {
                NetworkPolicyFact::clone(
                    &p.memo()
                        .get_or_insert(MemoKey::NetworkPolicy, || network_policy_fact(p)),
                )
            })
            .collect();
        policies.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        Ok(policies)
    }

    /// No error channel: an undeclared Node, a refused or unserved list all
    /// answer `forbidden`, the text saying which.
    fn node_pod_cidrs(&mut self) -> NodePodCidrsFact {
        let kind = node_kind();
        if self.allow(&kind, "facts.node-pod-cidrs").is_err() {
            return NodePodCidrsFact::Forbidden(
                "the guest did not declare core v1 Node in its kind-spec.reads, which facts.node-pod-cidrs needs".to_owned(),
            );
        }
        match self.read_list(&kind, "", Selector::default()) {
            Ok(nodes) if nodes.len() > MAX_NODES => too_many(nodes.len()),
            Ok(nodes) => from_nodes(
                nodes
                    .iter()
                    .map(|n| {
                        wit::NodeCidrs::clone(
                            &n.memo().get_or_insert(MemoKey::NodeCidrs, || node_cidrs(n)),
                        )
                    })
                    .collect(),
            ),
            Err(ReadError::Forbidden(_)) => NodePodCidrsFact::Forbidden(
                "the host may not list nodes: grant list and watch on nodes (cluster-scoped)"
                    .to_owned(),
            ),
            Err(
                ReadError::NotServed(text) | ReadError::Failed(text) | ReadError::NotDeclared(text),
            ) => NodePodCidrsFact::Forbidden(text),
        }
    }

    fn exposure(
        &mut self,
        kind: ExposureKind,
        namespace: String,
        name: String,
    ) -> Result<Option<ExposureFact>, ReadError> {
        let api = exposure_kind_ref(kind);
        self.allow(&api, "facts.exposure")?;
        Ok(self.read_object(&api, &namespace, &name)?.map(|o| {
            ExposureFact::clone(
                &o.memo()
                    .get_or_insert(MemoKey::Exposure(kind as u8), || exposure_fact(kind, &o)),
            )
        }))
    }

    fn cluster_role(&mut self, name: String) -> Result<Option<wit_types::ObjectMeta>, ReadError> {
        let kind = cluster_role_kind();
        self.allow(&kind, "facts.cluster-role")?;
        Ok(self.read_object(&kind, "", &name)?.map(|r| {
            wit_types::ObjectMeta::clone(&r.memo().get_or_insert(MemoKey::Meta, || object_meta(&r)))
        }))
    }

    fn secret_certificates(
        &mut self,
        namespace: String,
        name: String,
        key: String,
    ) -> Result<Option<CertificateBundleFact>, ReadError> {
        let kind = secret_kind();
        self.allow(&kind, "facts.secret-certificates")?;
        Ok(self.read_object(&kind, &namespace, &name)?.map(|s| {
            CertificateBundleFact::clone(
                &s.memo()
                    .get_or_insert(MemoKey::Certificates(key.clone()), || bundle(&s, &key)),
            )
        }))
    }

    /// Recorded as a read of the child: a change to it re-queues the parent.
    fn last_apply(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<wit::ApplyOutcome> {
        let kind = to_model(&kind);
        let outcome = self.source.last_apply(&kind, &namespace, &name);
        self.reads.insert(Dependency::Object {
            kind,
            namespace,
            name,
        });
        outcome.map(|o| match o {
            ApplyOutcome::Applied => wit::ApplyOutcome::Applied,
            ApplyOutcome::Refused {
                code,
                reason,
                message,
            } => wit::ApplyOutcome::Refused(wit::ApplyRefusal {
                code,
                reason,
                message,
            }),
        })
    }
}

/// A Secret's data never reaches a guest: only `facts.secret` serves
/// Secrets, as key names.
fn refuse_secret_data(kind: &KindRef) -> Result<(), ReadError> {
    if *kind == secret_kind() {
        return Err(ReadError::Forbidden(
            "Secrets are served only as key names, through facts.secret".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::v0_2::reconciler::guest0_2_0::facts::Host as _;
    use crate::facts::MemorySource;
    use serde_json::json;

    fn server(source: MemorySource, declared: Vec<KindRef>) -> FactServer {
        FactServer::new(Arc::new(source), declared, jiff::Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn a_workload_read_twice_is_derived_once_and_recorded_once() {
        let mut source = MemorySource::new();
        source.insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {}},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}}));
        source.insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "d-1", "namespace": "ns", "labels": {"app": "d"}}}));
        let mut facts = server(source, vec![deployment_kind(), pod_kind()]);
        let first = facts.workload("ns".into(), "d".into()).unwrap().unwrap();
        let second = facts.workload("ns".into(), "d".into()).unwrap().unwrap();
        assert_eq!(format!("{first:?}"), format!("{second:?}"));
        assert_eq!(first.pods.len(), 1);
        let reads: Vec<String> = facts.into_reads().iter().map(ToString::to_string).collect();
        assert_eq!(reads, ["Deployment ns/d", "Pod in \"ns\" matching {app=d}"]);
    }

    #[test]
    fn a_later_pass_serves_what_an_earlier_one_derived_from_the_same_objects() {
        let mut source = MemorySource::new();
        source.insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {}},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}}));
        source.insert(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "d-1", "namespace": "ns", "labels": {"app": "d"}}}));
        source.insert(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}));
        let service = core_kind("", "Service");
        let source = Arc::new(source);
        let declared = vec![deployment_kind(), pod_kind(), service.clone()];
        let wit_service = wit_types::KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "Service".into(),
        };
        let pass = || {
            let mut facts = FactServer::new(
                source.clone(),
                declared.clone(),
                jiff::Timestamp::UNIX_EPOCH,
            );
            let w = facts.workload("ns".into(), "d".into()).unwrap().unwrap();
            let s = facts
                .get(wit_service.clone(), "ns".into(), "s".into())
                .unwrap()
                .unwrap();
            (format!("{w:?}"), s.json, reads(facts))
        };
        let first = pass();
        let memoised =
            |kind: &KindRef, name: &str| source.get(kind, "ns", name).unwrap().unwrap().memoised();
        assert_eq!(
            (
                memoised(&deployment_kind(), "d"),
                memoised(&pod_kind(), "d-1"),
                memoised(&service, "s")
            ),
            (1, 1, 1)
        );
        assert_eq!(
            pass(),
            first,
            "the memo serves the same facts and records the same reads"
        );
        assert!(first.1.contains(r#""port":80"#));
    }

    #[test]
    fn an_undeclared_kind_and_secret_data_are_refused() {
        let mut facts = server(MemorySource::new(), vec![secret_kind()]);
        let kind = crate::bindings::v0_2::reconciler::guest0_2_0::types::KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "Secret".into(),
        };
        assert!(matches!(
            facts.get(kind, "ns".into(), "s".into()),
            Err(ReadError::Forbidden(_))
        ));
        assert!(matches!(
            facts.config_map("ns".into(), "c".into()),
            Err(ReadError::NotDeclared(_))
        ));
        assert!(
            facts.into_reads().is_empty(),
            "a refused read is no dependency"
        );
    }

    fn reads(facts: FactServer) -> Vec<String> {
        facts.into_reads().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn an_availability_answer_is_recorded_as_a_read_of_the_kind() {
        let store = wit_types::KindRef {
            group: "barmancloud.cnpg.io".into(),
            version: "v1".into(),
            kind: "ObjectStore".into(),
        };
        let mut source = MemorySource::new();
        source.set_availability(to_model(&store), "ns", Availability::NotServed);
        let mut facts = server(source, vec![to_model(&store)]);
        assert!(matches!(
            facts.api_availability(store, "ns".into()),
            wit::Availability::NotServed
        ));
        assert_eq!(
            reads(facts),
            ["availability of ObjectStore in \"ns\""],
            "the answer changes when the kind is served again"
        );
    }

    #[test]
    fn network_policies_are_typed_sorted_and_recorded_as_a_list() {
        let mut source = MemorySource::new();
        for name in ["b", "a"] {
            source.insert(json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": name, "namespace": "ns"}, "spec": {"policyTypes": ["Egress"]}}));
        }
        source.insert(
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "c", "namespace": "other"}, "spec": {}}),
        );
        let mut facts = server(source, vec![network_policy_kind()]);
        let got = facts.network_policies("ns".into()).unwrap();
        let names: Vec<&str> = got.iter().map(|p| p.meta.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(!got[0].isolates_ingress);
        assert_eq!(reads(facts), ["NetworkPolicy in \"ns\" matching {}"]);
        let mut undeclared = server(MemorySource::new(), vec![]);
        assert!(matches!(
            undeclared.network_policies("ns".into()),
            Err(ReadError::NotDeclared(_))
        ));
    }

    #[test]
    fn node_pod_cidrs_answers_forbidden_when_undeclared_refused_or_not_served() {
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"podCIDR": "10.0.0.0/24"}});
        let mut source = MemorySource::new();
        source.insert(node);
        let mut facts = server(source.clone(), vec![node_kind()]);
        assert!(
            matches!(facts.node_pod_cidrs(), NodePodCidrsFact::Known(n) if n[0].pod_cidrs == ["10.0.0.0/24"])
        );
        assert_eq!(reads(facts), ["Node in \"\" matching {}"]);

        let mut undeclared = server(source.clone(), vec![]);
        assert!(
            matches!(undeclared.node_pod_cidrs(), NodePodCidrsFact::Forbidden(t) if t.contains("did not declare core v1 Node"))
        );
        assert!(reads(undeclared).is_empty());

        let mut refused = source.clone();
        refused.set_availability(node_kind(), "", Availability::Forbidden);
        let mut facts = server(refused, vec![node_kind()]);
        assert!(
            matches!(facts.node_pod_cidrs(), NodePodCidrsFact::Forbidden(t) if t.contains("list nodes"))
        );

        let mut gone = source;
        gone.set_availability(node_kind(), "", Availability::NotServed);
        let mut facts = server(gone, vec![node_kind()]);
        assert!(
            matches!(facts.node_pod_cidrs(), NodePodCidrsFact::Forbidden(t) if t.contains("not served"))
        );
    }

    #[test]
    fn exposure_reads_the_kind_it_names_where_available() {
        let route = exposure_kind_ref(ExposureKind::Route);
        let mut source = MemorySource::new();
        source.insert(
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "i", "namespace": "ns"},
            "spec": {"rules": [{"host": "a.example.com"}]},
            "status": {"loadBalancer": {"ingress": [{"hostname": "lb"}]}}}),
        );
        source.set_availability(route.clone(), "", Availability::NotServed);
        let ingress = exposure_kind_ref(ExposureKind::Ingress);
        let mut facts = server(source, vec![ingress, route]);
        let got = facts
            .exposure(ExposureKind::Ingress, "ns".into(), "i".into())
            .unwrap()
            .unwrap();
        assert!(matches!(got.admission, wit::Admission::Admitted));
        assert!(matches!(
            facts.exposure(ExposureKind::Route, "ns".into(), "r".into()),
            Err(ReadError::NotServed(_))
        ));
        assert!(matches!(
            facts.exposure(ExposureKind::HttpRoute, "ns".into(), "h".into()),
            Err(ReadError::NotDeclared(_))
        ));
        assert_eq!(reads(facts), ["Ingress ns/i", "Route ns/r"]);
    }

    #[test]
    fn cluster_roles_secret_certificates_and_last_applies() {
        use base64::Engine as _;
        let pem = crate::facts::certificates::tests::TWO;
        let mut source = MemorySource::new();
        source.insert(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "view", "labels": {"a": "b"}}, "rules": []}),
        );
        source.insert(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls", "namespace": "ns"},
            "data": {"tls.crt": base64::engine::general_purpose::STANDARD.encode(pem)}}));
        let deployment = deployment_kind();
        source.set_last_apply(
            deployment.clone(),
            "ns",
            "d",
            ApplyOutcome::Refused {
                code: 403,
                reason: "Forbidden".into(),
                message: "quota".into(),
            },
        );
        let mut facts = server(source, vec![cluster_role_kind(), secret_kind()]);
        let role = facts.cluster_role("view".into()).unwrap().unwrap();
        assert_eq!((role.name.as_str(), role.namespace.as_str()), ("view", ""));
        assert!(facts.cluster_role("edit".into()).unwrap().is_none());
        let bundle = facts
            .secret_certificates("ns".into(), "tls".into(), "tls.crt".into())
            .unwrap()
            .unwrap();
        assert!(bundle.has_key);
        assert_eq!(bundle.certificates.len(), 2);
        let kind = wit_types::KindRef {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
        };
        assert!(matches!(
            facts.last_apply(kind.clone(), "ns".into(), "d".into()),
            Some(wit::ApplyOutcome::Refused(r)) if r.code == 403 && r.reason == "Forbidden"
        ));
        assert!(facts.last_apply(kind, "ns".into(), "e".into()).is_none());
        assert_eq!(
            reads(facts),
            [
                "Secret ns/tls",
                "Deployment ns/d",
                "Deployment ns/e",
                "ClusterRole /edit",
                "ClusterRole /view"
            ]
        );
        let mut undeclared = server(MemorySource::new(), vec![]);
        assert!(matches!(
            undeclared.cluster_role("view".into()),
            Err(ReadError::NotDeclared(_))
        ));
        assert!(matches!(
            undeclared.secret_certificates("ns".into(), "tls".into(), "tls.crt".into()),
            Err(ReadError::NotDeclared(_))
        ));
    }

    /// A Deployment whose Pods are `pods`, read through `facts.workload`.
    fn workload_with(
        deployment: Value,
        pods: Vec<Value>,
    ) -> Result<Option<WorkloadFact>, ReadError> {
        let mut source = MemorySource::new();
        source.insert(deployment);
        for p in pods {
            source.insert(p);
        }
        let mut facts = server(source, vec![deployment_kind(), pod_kind()]);
        facts.workload("ns".into(), "d".into())
    }

    fn deployment(spec: Value, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "generation": 1},
            "spec": spec, "status": status})
    }

    fn pod(status: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "d-1", "namespace": "ns", "labels": {"app": "d"}},
            "spec": {"containers": [{"name": "a", "image": "i"}]}, "status": status})
    }

    /// Deployments and Pods are read as their built-in types: one of the
    /// wrong shape is no guess but a read error naming the object, the
    /// field and what is wrong with it (the API server validates these
    /// kinds, so only a fixture can hold one).
    #[test]
    fn a_malformed_deployment_or_pod_is_an_error_naming_the_field() {
        let spec = json!({"replicas": 1, "selector": {"matchLabels": {"app": "d"}}});
        let failed = |got: Result<Option<WorkloadFact>, ReadError>| match got {
            Err(ReadError::Failed(text)) => text,
            other => panic!("{other:?}"),
        };
        for (name, dep, pods, want) in [
            (
                "containerStatuses is a string",
                deployment(spec.clone(), json!({})),
                vec![pod(json!({"containerStatuses": "x"}))],
                "Pod ns/d-1 is malformed at status.containerStatuses: invalid type: string \"x\", expected a sequence",
            ),
            (
                "an array of nulls where statuses belong",
                deployment(spec.clone(), json!({})),
                vec![pod(json!({"containerStatuses": [null]}))],
                "Pod ns/d-1 is malformed at status.containerStatuses[0]: invalid type: null, expected ContainerStatus",
            ),
            (
                "a restart count beyond i32",
                deployment(spec.clone(), json!({})),
                vec![pod(
                    json!({"containerStatuses": [{"name": "a", "restartCount": 1u64 << 63}]}),
                )],
                "Pod ns/d-1 is malformed at status.containerStatuses[0].restartCount: invalid value: integer `9223372036854775808`, expected i32",
            ),
            (
                "replicas as 2^63",
                deployment(json!({"replicas": 1u64 << 63}), json!({})),
                vec![],
                "Deployment ns/d is malformed at spec.replicas: invalid value: integer `9223372036854775808`, expected i32",
            ),
            (
                "a count as a string (the negative one beside it is no error)",
                deployment(
                    spec.clone(),
                    json!({"readyReplicas": -1, "replicas": "two"}),
                ),
                vec![],
                "Deployment ns/d is malformed at status.replicas: invalid type: string \"two\", expected i32",
            ),
            (
                "two malformed fields: the path stops where both are",
                deployment(
                    spec.clone(),
                    json!({"replicas": "two", "readyReplicas": "one"}),
                ),
                vec![],
                "Deployment ns/d is malformed at status: invalid type: string",
            ),
            (
                "a container deep in the template",
                deployment(
                    json!({"template": {"spec": {"containers": [{"name": "a", "ports": {"containerPort": 80}}]}}}),
                    json!({}),
                ),
                vec![],
                "Deployment ns/d is malformed at spec.template.spec.containers[0].ports: invalid type: map",
            ),
        ] {
            let got = failed(workload_with(dep, pods));
            assert!(got.starts_with(want), "{name}: {got}");
        }
    }

    #[test]
    fn a_negative_count_reads_as_zero() {
        let got = workload_with(
            deployment(
                json!({"replicas": -3, "selector": {"matchLabels": {"app": "d"}}}),
                json!({"readyReplicas": -1, "replicas": i32::MIN}),
            ),
            vec![pod(
                json!({"containerStatuses": [{"name": "a", "restartCount": -5}]}),
            )],
        )
        .unwrap()
        .unwrap();
        assert_eq!((got.desired_replicas, got.ready_replicas), (0, 0));
        assert_eq!(got.pods[0].restart_count, 0);
    }

    #[test]
    fn the_culprit_is_the_deepest_field_whose_removal_lets_the_object_read() {
        let reads = |v: &Value| serde_json::from_value::<Pod>(v.clone()).is_ok();
        for (object, want) in [
            (json!({"status": {"phase": 3}}), Some("status.phase")),
            (
                json!({"spec": {"containers": [{"name": "a"}, {"name": 1}]}}),
                Some("spec.containers[1].name"),
            ),
            (json!("a string"), None),
            (json!({"status": {"phase": 3, "podIP": 4}}), Some("status")),
        ] {
            assert_eq!(culprit(&object, reads).as_deref(), want, "{object}");
        }
        let mut wide = json!({"spec": {"containers": []}});
        for i in 0..1000 {
            wide["spec"]["containers"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": format!("c{i}")}));
        }
        wide["spec"]["containers"][999]["name"] = json!(1);
        assert_eq!(
            culprit(&wide, reads).as_deref(),
            Some("spec.containers"),
            "the search stops after {CULPRIT_TRIALS} trials"
        );
    }
}
