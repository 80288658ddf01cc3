//! A native mock of the `facts` import, so a guest's logic runs under plain
//! `cargo test` with no host and no cluster.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::facts::Facts;
use crate::{
    Availability, ConfigMapFact, KindRef, Object, ObjectMeta, ReadError, SecretFact, Timestamp,
    WorkloadFact, WorkloadState,
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
    reads: RefCell<BTreeSet<String>>,
}

impl MockFacts {
    /// Facts at `now` (seconds since the epoch).
    pub fn at(now: i64) -> Self {
        MockFacts {
            now,
            ..Default::default()
        }
    }

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

    /// What the pass read, one line per read (`workload ns/name`, ...).
    pub fn reads(&self) -> Vec<String> {
        self.reads.borrow().iter().cloned().collect()
    }

    fn record(&self, what: String) {
        self.reads.borrow_mut().insert(what);
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
        Ok(self
            .workloads
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned())
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<Option<SecretFact>, ReadError> {
        self.record(format!("secret {namespace}/{name}"));
        Ok(self
            .secrets
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned())
    }

    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMapFact>, ReadError> {
        self.record(format!("configmap {namespace}/{name}"));
        Ok(self
            .config_maps
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned())
    }

    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ReadError> {
        self.record(format!("get {} {namespace}/{name}", kind.kind));
        self.refuse_unavailable(kind, namespace)?;
        Ok(self
            .objects
            .get(&kind_key(kind))
            .and_then(|all| {
                all.iter()
                    .find(|o| o.meta.namespace == namespace && o.meta.name == name)
            })
            .cloned())
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &[(String, String)],
    ) -> Result<Vec<Object>, ReadError> {
        self.record(format!("list {} {namespace} {selector:?}", kind.kind));
        self.refuse_unavailable(kind, namespace)?;
        let mut found: Vec<Object> = self
            .objects
            .get(&kind_key(kind))
            .into_iter()
            .flatten()
            .filter(|o| o.meta.namespace == namespace)
            .filter(|o| selector.iter().all(|pair| o.meta.labels.contains(pair)))
            .cloned()
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

/// An object from its JSON; the metadata fields a guest reads come from
/// `metadata`.
pub fn object(json: serde_json::Value) -> Object {
    let md = &json["metadata"];
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let pairs = |v: &serde_json::Value| -> Vec<(String, String)> {
        v.as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default()
    };
    let mut meta = meta(&text(&md["namespace"]), &text(&md["name"]));
    meta.labels = pairs(&md["labels"]);
    meta.annotations = pairs(&md["annotations"]);
    meta.generation = md["generation"].as_i64().unwrap_or(1);
    Object {
        meta,
        json: json.to_string(),
    }
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
