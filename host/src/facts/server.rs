//! The recording reader: serves one pass's reads from an [`ObjectSource`],
//! refuses kinds the guest did not declare, and records every read as a
//! dependency of the parent. The contract's `facts` import is served from
//! it (`crate::contract`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use reconciler_conventions::kind::KindRef;
use reconciler_conventions::projection::Projection;
use serde_json::Value;

use crate::contract::facts::{ReadError, WorkloadFact};
use crate::facts::diagnose::typed;
use crate::facts::known_kinds::{deployment_kind, pod_kind};
use crate::facts::past_cache::{MAX_READS, ObjectKey};
use crate::facts::source::{
    ApplyOutcome, Availability, ChangeState, ChildKey, ObjectSource, SourceError,
};
use crate::facts::workload::{deployment_part, pod_fact};
use crate::facts::{Cached, Dependency, Selector};

/// Serves one pass's facts, each derived from the text its source holds
/// ([`Cached`]) when the guest asks for it.
pub struct FactServer {
    source: Arc<dyn ObjectSource>,
    declared: Arc<BTreeSet<KindRef>>,
    now: jiff::Timestamp,
    reads: BTreeSet<Dependency>,
    /// The parent's namespace: the only one the guest reads (and, for a
    /// cluster-scoped kind, its cluster-wide objects); `None` reads
    /// everywhere (a cluster-scoped parent, or a test).
    scope: Option<String>,
    /// The parent's UID: its children are the objects it controls.
    parent_uid: Option<String>,
    /// Workloads derived in this pass: the source does not change within
    /// a pass, and deriving one parses the Deployment and all its Pods.
    workloads: BTreeMap<(String, String), Option<WorkloadFact>>,
    /// The declared kinds the guest reads as optional: found not served or
    /// refused, the guest's answer is its own (RouteAPIUnavailable and the
    /// like), not an error of the pass.
    optional: Arc<BTreeSet<KindRef>>,
    /// The first read that fails the pass whatever the guest makes of its
    /// answer: every read the source could not serve, except an optional
    /// kind not served or refused (see [`Self::read_error`]).
    failed_read: Option<SourceError>,
    /// The declared kinds the guest may read in other namespaces than its
    /// parent's (`read-decl.cross-namespace`).
    across: Arc<BTreeSet<KindRef>>,
    /// The objects the cache refused whose source has no answer past the
    /// cache yet: the host reads them and passes again
    /// (`crate::facts::past_cache`).
    past_cache_wanted: BTreeSet<ObjectKey>,
    /// The change states the guest read, with the answers it got: when
    /// the pass's changes answer otherwise, the host evaluates it again
    /// (`facts.change-state`).
    change_states: BTreeMap<ChildKey, Option<ChangeState>>,
    /// What the guest is served of each kind whose read names its fields
    /// (`read-decl.fields`): those fields only, in every pass alike.
    projections: Arc<BTreeMap<KindRef, Projection>>,
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
            scope: None,
            parent_uid: None,
            workloads: BTreeMap::new(),
            optional: Arc::default(),
            failed_read: None,
            across: Arc::default(),
            past_cache_wanted: BTreeSet::new(),
            change_states: BTreeMap::new(),
            projections: Arc::default(),
        }
    }

    /// The declared kinds the guest reads as optional.
    pub fn with_optional(mut self, optional: Arc<BTreeSet<KindRef>>) -> Self {
        self.optional = optional;
        self
    }

    /// The declared kinds the guest may read in other namespaces than its
    /// parent's.
    pub fn with_cross_namespace(mut self, across: Arc<BTreeSet<KindRef>>) -> Self {
        self.across = across;
        self
    }

    /// What the guest is served of the kinds whose reads name their fields.
    pub fn with_projections(mut self, projections: Arc<BTreeMap<KindRef, Projection>>) -> Self {
        self.projections = projections;
        self
    }

    /// An object of `kind` as the guest is served it: its JSON text, with
    /// only the fields its read declares where it declares them.
    pub(crate) fn served_text(&self, kind: &KindRef, object: &Cached) -> String {
        match self.projections.get(kind) {
            Some(projection) => projection.apply(&object.value()).to_string(),
            None => object.text().into_owned(),
        }
    }

    /// Serves the pass of `parent`: reads are limited to its namespace (a
    /// cluster-scoped parent reads everywhere: a guest has no business
    /// with another namespace's objects, and could copy what it found into
    /// its parent's status) but for the kinds it declared to read across
    /// namespaces, and its children are what it controls.
    pub fn for_parent(mut self, parent: &Value) -> Self {
        let md = &parent["metadata"];
        self.scope = md["namespace"]
            .as_str()
            .filter(|ns| !ns.is_empty())
            .map(str::to_owned);
        self.parent_uid = md["uid"].as_str().map(str::to_owned);
        self
    }

    /// The parent's own children of `kind`: the objects of its namespace
    /// it controls, sorted by name; recorded as what it controls of the
    /// kind (a change of another object of the kind does not concern it).
    pub(crate) fn read_children(&mut self, kind: &KindRef) -> Result<Vec<Arc<Cached>>, ReadError> {
        self.allow(kind, "facts.children")?;
        let namespace = self.scope.clone().unwrap_or_default();
        let uid = self.parent_uid.clone().unwrap_or_default();
        self.reads.insert(Dependency::Children {
            kind: kind.clone(),
            controller: uid.clone(),
        });
        let controlled = self
            .source
            .controlled(kind, &namespace, &uid)
            .map_err(|e| self.read_error(e))?;
        Ok(controlled.into_iter().filter(|o| self.visible(o)).collect())
    }

    /// Refuses a read in another namespace than the parent's, unless the
    /// guest declared the kind a cross-namespace read and the host watches
    /// that namespace; `Ok(true)` for such a read, whose objects are all
    /// the guest's to see.
    fn in_scope(&self, kind: &KindRef, namespace: &str) -> Result<bool, ReadError> {
        match &self.scope {
            Some(scope) if !namespace.is_empty() && namespace != scope => {
                if !self.across.contains(kind) {
                    Err(ReadError::Forbidden(format!(
                        "the guest reads {kind} in namespace {namespace:?}; it may read only its parent's namespace {scope:?}"
                    )))
                } else if !self.source.watches(namespace) {
                    Err(ReadError::Forbidden(format!(
                        "the host does not watch namespace {namespace:?}: it may not read {kind} there"
                    )))
                } else {
                    Ok(true)
                }
            }
            _ => Ok(false),
        }
    }

    /// Whether a listed object is one the guest may see: in the parent's
    /// namespace, or cluster-scoped.
    fn visible(&self, object: &Cached) -> bool {
        match &self.scope {
            Some(scope) => {
                let ns = object.namespace();
                ns.is_empty() || ns == scope
            }
            None => true,
        }
    }

    /// The read that fails the pass, if one did: the guest's verdict is
    /// not used, the pass ends in error and is retried with backoff.
    pub fn take_failed_read(&mut self) -> Option<SourceError> {
        self.failed_read.take()
    }

    /// The guest's answer to a read the source could not serve. Seed 000:
    /// an error ends in Ready=False (ReconcileError), so every such read
    /// also fails the pass ([`Self::take_failed_read`]), except an optional
    /// kind not served or refused, which the guest reports under its own
    /// reason. A kind no longer served fails it, optional or not.
    fn read_error(&mut self, e: SourceError) -> ReadError {
        let text = e.to_string();
        let answer = match &e {
            SourceError::NotServed(kind) if self.optional.contains(kind) => {
                return ReadError::NotServed(text);
            }
            SourceError::Forbidden { kind, .. } if self.optional.contains(kind) => {
                return ReadError::Forbidden(text);
            }
            SourceError::NotServed(_) => ReadError::NotServed(text),
            SourceError::Forbidden { .. } => ReadError::Forbidden(text),
            SourceError::NotWatched(_)
            | SourceError::NoLongerServed(_)
            | SourceError::PastCache { .. }
            | SourceError::Undecodable { .. } => ReadError::Failed(text),
        };
        self.failed_read.get_or_insert(e);
        answer
    }

    /// The objects to read past the cache before the pass is evaluated
    /// again: at most [`MAX_READS`], beyond which the refusal stands.
    pub fn take_past_cache_wanted(&mut self) -> BTreeSet<ObjectKey> {
        std::mem::take(&mut self.past_cache_wanted)
    }

    /// An object the cache refused (its kind may not be listed in the
    /// namespace), from the source's read past the cache; not read yet,
    /// it is wanted (within the bound) and the refusal is the answer of
    /// this evaluation, which the host runs again with the object read.
    fn past_the_cache(
        &mut self,
        refused: SourceError,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, SourceError> {
        if let Some(answer) = self.source.past_cache(kind, namespace, name) {
            return answer;
        }
        if self.past_cache_wanted.len() < MAX_READS {
            self.past_cache_wanted
                .insert((kind.clone(), namespace.to_owned(), name.to_owned()));
        }
        Err(refused)
    }

    /// The change states the guest read, with their answers.
    pub fn take_change_states(&mut self) -> BTreeMap<ChildKey, Option<ChangeState>> {
        std::mem::take(&mut self.change_states)
    }

    /// What the pass read so far.
    pub fn into_reads(self) -> BTreeSet<Dependency> {
        self.reads
    }

    /// Refuses a kind the guest did not declare, naming the call.
    pub(crate) fn allow(&self, kind: &KindRef, via: &str) -> Result<(), ReadError> {
        if self.declared.contains(kind) {
            Ok(())
        } else {
            Err(ReadError::NotDeclared(format!(
                "{via} needs {kind}, which the guest's kind-spec.reads does not declare"
            )))
        }
    }

    /// Reads an object, recorded as a dependency.
    pub(crate) fn read_object(
        &mut self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, ReadError> {
        let across = self.in_scope(kind, namespace)?;
        self.reads.insert(Dependency::Object {
            kind: kind.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        });
        let found = match self.source.get(kind, namespace, name) {
            Err(refused @ SourceError::Forbidden { .. }) => {
                self.past_the_cache(refused, kind, namespace, name)
            }
            answer => answer,
        };
        Ok(found
            .map_err(|e| self.read_error(e))?
            .filter(|o| across || self.visible(o)))
    }

    /// Lists objects, recorded as a dependency.
    pub(crate) fn read_list(
        &mut self,
        kind: &KindRef,
        namespace: &str,
        selector: Selector,
    ) -> Result<Vec<Arc<Cached>>, ReadError> {
        let across = self.in_scope(kind, namespace)?;
        let found = self
            .source
            .list(kind, namespace, &selector)
            .map_err(|e| self.read_error(e))
            .map(|objects| {
                objects
                    .into_iter()
                    .filter(|o| across || self.visible(o))
                    .collect()
            });
        self.reads.insert(Dependency::List {
            kind: kind.clone(),
            namespace: namespace.to_owned(),
            selector,
        });
        found
    }

    /// The pass's clock.
    pub(crate) fn clock(&self) -> jiff::Timestamp {
        self.now
    }

    /// The workload fact of Deployment `name` (its Pods included), derived
    /// once a pass.
    pub(crate) fn read_workload(
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

    /// Whether `kind` can be read in `namespace`, recorded as a read of the
    /// kind there (the answer changes when it stops or starts being served).
    pub(crate) fn read_availability(&mut self, kind: KindRef, namespace: String) -> Availability {
        let availability = self.source.availability(&kind, &namespace);
        if self.source.no_longer_served(&kind, &namespace) {
            self.failed_read
                .get_or_insert(SourceError::NoLongerServed(kind.clone()));
        }
        self.reads
            .insert(Dependency::Availability { kind, namespace });
        availability
    }

    /// What the host did with the child, recorded as a read of the child: a
    /// change to it re-queues the parent.
    pub(crate) fn read_last_apply(
        &mut self,
        kind: KindRef,
        namespace: String,
        name: String,
    ) -> Option<ApplyOutcome> {
        let outcome = self.source.last_apply(&kind, &namespace, &name);
        self.reads.insert(Dependency::Object {
            kind,
            namespace,
            name,
        });
        outcome
    }

    /// What became of the change asked for the child, recorded as a read
    /// of the child and with its answer; a child outside the parent's
    /// namespace is none of its business (`None`).
    pub(crate) fn read_change_state(
        &mut self,
        kind: KindRef,
        namespace: String,
        name: String,
    ) -> Option<ChangeState> {
        let ours = self.scope.as_ref().is_none_or(|scope| *scope == namespace);
        if !ours {
            return None;
        }
        let state = self.source.change_state(&kind, &namespace, &name);
        self.change_states.insert(
            (kind.clone(), namespace.clone(), name.clone()),
            state.clone(),
        );
        self.reads.insert(Dependency::Object {
            kind,
            namespace,
            name,
        });
        state
    }

    /// When the API server answered the host's last apply of the child,
    /// recorded as a read of the child.
    pub(crate) fn read_last_apply_time(
        &mut self,
        kind: KindRef,
        namespace: String,
        name: String,
    ) -> Option<jiff::Timestamp> {
        let at = self.source.last_apply_time(&kind, &namespace, &name);
        self.reads.insert(Dependency::Object {
            kind,
            namespace,
            name,
        });
        at
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
        let deployment = cached.value();
        let part = typed::<Deployment>("Deployment", &deployment)
            .map(|d| deployment_part(&deployment, &d))
            .map_err(ReadError::Failed)?;
        let pod_facts = self
            .read_list(pods, namespace, part.selector().clone())?
            .iter()
            .map(|p| {
                let p = p.value();
                typed::<Pod>("Pod", &p)
                    .map(|pod| pod_fact(&p, &pod))
                    .map_err(ReadError::Failed)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(part.with_pods(pod_facts)))
    }
}
