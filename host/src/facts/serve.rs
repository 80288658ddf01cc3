//! The `facts` import: serves a pass's reads from an [`ObjectSource`],
//! refuses kinds the guest did not declare, and records every read as a
//! dependency of the parent.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use reconciler_conventions::kind::KindRef;
use serde::Deserialize;
use serde_json::Value;

use super::Selector;
use super::meta::{from_jiff, object_meta};
use super::source::{Availability, ObjectSource, SourceError};
use super::workload::{pod_fact, workload_fact};
use crate::bindings::reconciler::guest::facts::{
    self as wit, ConfigMapFact, ReadError, SecretFact, WorkloadFact,
};
use crate::bindings::reconciler::guest::types::{self as wit_types, Object, Timestamp};

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

fn core_kind(group: &str, kind: &str) -> KindRef {
    KindRef {
        group: group.to_owned(),
        version: "v1".to_owned(),
        kind: kind.to_owned(),
    }
}

/// Serves one pass's facts.
pub struct FactServer {
    source: Arc<dyn ObjectSource>,
    declared: BTreeSet<KindRef>,
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
        FactServer {
            source,
            declared: declared.into_iter().collect(),
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
    ) -> Result<Option<Arc<Value>>, ReadError> {
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
    ) -> Result<Vec<Arc<Value>>, ReadError> {
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
        let Some(json) = self.read_object(deployments, namespace, name)? else {
            return Ok(None);
        };

        let deployment =
            Deployment::deserialize(&*json).map_err(|e| malformed("Deployment", &json, e))?;
        let selector = Selector::from_json(&json["spec"]["selector"]);
        let pod_facts = self
            .read_list(pods, namespace, selector)?
            .iter()
            .map(|p| {
                Pod::deserialize(&**p)
                    .map(|pod| pod_fact(p, &pod))
                    .map_err(|e| malformed("Pod", p, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(workload_fact(&json, &deployment, pod_facts)))
    }
}

fn read_error(e: SourceError) -> ReadError {
    match e {
        SourceError::NotServed(_) => ReadError::NotServed(e.to_string()),
        SourceError::Forbidden { .. } => ReadError::Forbidden(e.to_string()),
        SourceError::NotWatched(_) => ReadError::Failed(e.to_string()),
    }
}

fn malformed(kind: &str, object: &Value, e: serde_json::Error) -> ReadError {
    let meta = object_meta(object);
    ReadError::Failed(format!(
        "{kind} {}/{} is malformed: {e}",
        meta.namespace, meta.name
    ))
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
        Ok(self
            .read_object(&kind, &namespace, &name)?
            .map(|s| SecretFact {
                meta: object_meta(&s),
                type_: s["type"].as_str().unwrap_or("Opaque").to_owned(),
                keys: key_names(&s, &["data", "stringData"]),
            }))
    }

    fn config_map(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<ConfigMapFact>, ReadError> {
        let kind = config_map_kind();
        self.allow(&kind, "facts.config-map")?;
        Ok(self
            .read_object(&kind, &namespace, &name)?
            .map(|c| ConfigMapFact {
                meta: object_meta(&c),
                keys: key_names(&c, &["data", "binaryData"]),
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
        Ok(self.read_object(&kind, &namespace, &name)?.map(|o| Object {
            meta: object_meta(&o),
            json: o.to_string(),
        }))
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
            .map(|o| Object {
                meta: object_meta(o),
                json: o.to_string(),
            })
            .collect())
    }

    fn api_availability(
        &mut self,
        kind: wit_types::KindRef,
        namespace: String,
    ) -> wit::Availability {
        match self.source.availability(&to_model(&kind), &namespace) {
            Availability::Available => wit::Availability::Available,
            Availability::NotServed => wit::Availability::NotServed,
            Availability::Forbidden => wit::Availability::Forbidden,
        }
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
    use crate::bindings::reconciler::guest::facts::Host as _;
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
    fn an_undeclared_kind_and_secret_data_are_refused() {
        let mut facts = server(MemorySource::new(), vec![secret_kind()]);
        let kind = crate::bindings::reconciler::guest::types::KindRef {
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
}
