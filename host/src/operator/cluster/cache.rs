//! The shared object caches: one per watched kind, fed by watches, holding
//! only what fact derivation needs, and read as the facts' source.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use kube::core::ApiResource;
use reconciler_conventions::kind::KindRef;
use reconciler_conventions::projection::Projection;
use serde_json::Value;

use crate::children::bodies::value_digest;
use crate::children::settling::Unsettled;
use crate::facts::certificates;
use crate::facts::packed::Packers;
use crate::facts::source::{AvailabilityTable, ChildKey};
use crate::facts::{
    ApplyOutcome, Availability, Cached, ChangeState, ObjectSource, Selector, SourceError,
};
use crate::operator::cluster::child_records::ChildRecords;
use crate::operator::cluster::managed_fields::slim_managed_fields;
use crate::operator::cluster::objects::Objects;
use crate::operator::cluster::projected::Projected;

/// What a watch reports to the dispatcher: what changed in a cache.
#[derive(Debug, Clone)]
pub enum CacheEvent {
    /// An object was created, changed or deleted.
    Object(ObjectChange),
    /// The kind stopped or started being served, as the watch of one
    /// namespace saw it.
    Served(ServedChange),
    /// A watch is back after it failed.
    Recovered(RecoveredChange),
}

/// A watch back after a failure (the API server restarted, or was out of
/// reach): every object its cache holds, by namespace and name. Passes
/// that failed while the API server was away wait for their backoff; each
/// parent is passed at once instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredChange {
    pub kind: KindRef,
    pub objects: Vec<(String, String)>,
}

/// An object before and after a change, for the dependency index.
#[derive(Debug, Clone)]
pub struct ObjectChange {
    pub kind: KindRef,
    pub namespace: String,
    pub name: String,
    pub old: Option<Arc<Value>>,
    pub new: Option<Arc<Value>>,
}

impl ObjectChange {
    pub fn labels(object: Option<&Arc<Value>>) -> Option<BTreeMap<String, String>> {
        object.map(|o| Selector::labels_of(o))
    }
}

/// A kind's served state flipped where one watch looks: its CRD was
/// deleted (the watch answered 404) or is back (the watch listed it).
/// Every read of the kind there now answers otherwise, whether or not an
/// object changed with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedChange {
    pub kind: KindRef,
    /// The watch's namespace; "" for an all-namespaces or cluster-wide
    /// watch.
    pub namespace: String,
    pub served: bool,
}

/// The objects of one kind, by namespace and name, each a [`Cached`]: a
/// changed object is stored as a new `Cached`, so its memo starts empty.
pub struct ObjectCache {
    kind: KindRef,
    objects: RwLock<Objects>,
    /// The namespaces whose watch of the kind was answered 404 (its CRD
    /// deleted while the host runs), "" for the all-namespaces or
    /// cluster-wide watch, each until its watch lists the kind again.
    not_served: RwLock<BTreeSet<String>>,
    /// The kind's dictionaries: each object's text is held packed against
    /// the first object the cache admitted, the host's apply entry on it
    /// against the first such entry.
    packers: Packers,
    /// What it holds of each object: what the kind's readers declare.
    projected: Projected,
}

/// An object before and after a change (`None`: absent).
pub(crate) type Transition = (Option<Arc<Value>>, Option<Arc<Value>>);

/// An object's `resourceVersion` as a number (etcd's revision), to tell
/// which of two versions of an object is the later one.
fn resource_version(object: &Cached) -> Option<u64> {
    object.resource_version().parse::<u64>().ok()
}

/// An object's namespace ("" when cluster-scoped) and name.
type Key = (String, String);

fn cached_key(object: &Cached) -> Key {
    (object.namespace().to_owned(), object.name().to_owned())
}

impl ObjectCache {
    pub fn new(kind: KindRef) -> Self {
        ObjectCache {
            kind,
            objects: RwLock::default(),
            not_served: RwLock::default(),
            packers: Packers::default(),
            projected: Projected::default(),
        }
    }

    pub fn kind(&self) -> &KindRef {
        &self.kind
    }

    /// Whether the API server still serves the kind in `namespace`, as
    /// the watches there last saw it: the all-namespaces watch, or the
    /// namespace's own. A read of every namespace ("") needs every watch
    /// to see it served.
    pub(crate) fn is_served(&self, namespace: &str) -> bool {
        let not_served = self.not_served.read().expect("served lock");
        if namespace.is_empty() {
            return not_served.is_empty();
        }
        !not_served.contains("") && !not_served.contains(namespace)
    }

    /// Records whether the watch of `namespace` ("" for all) sees the kind
    /// served; returns whether that changed what it saw.
    pub(crate) fn set_served(&self, namespace: &str, served: bool) -> bool {
        let mut not_served = self.not_served.write().expect("served lock");
        if served {
            not_served.remove(namespace)
        } else {
            not_served.insert(namespace.to_owned())
        }
    }

    /// Typed (a list's items carry no `apiVersion` and `kind`), slimmed
    /// and projected; with the parsed object, which the `Cached` shares
    /// while it is held.
    fn admit(&self, mut object: Value) -> (Arc<Cached>, Arc<Value>) {
        if let Some(o) = object.as_object_mut() {
            o.insert("apiVersion".into(), Value::String(self.kind.api_version()));
            o.insert("kind".into(), Value::String(self.kind.kind.clone()));
        }
        let mut slimmed = slim(object);
        // The host's apply entry is kept beside the object: no guest reads it.
        let applied = crate::facts::applied::take_applied(&mut slimmed);
        let (epoch, projection) = self.projected.current();
        let value = Arc::new(Projected::apply(&projection, slimmed));
        (self.held(value.clone(), applied.as_ref(), epoch), value)
    }

    /// The object as the cache holds it: its text packed with the kind's
    /// dictionary.
    fn held(&self, value: Arc<Value>, applied: Option<&Value>, epoch: u32) -> Arc<Cached> {
        Cached::packed(value, applied, epoch, &self.packers)
    }

    /// What the cache holds of each object, and how far its watches listed.
    pub(crate) fn projected(&self) -> &Projected {
        &self.projected
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.get_cached(namespace, name).map(|c| c.value())
    }

    /// The object as the cache holds it, with its memo.
    pub(crate) fn get_cached(&self, namespace: &str, name: &str) -> Option<Arc<Cached>> {
        let objects = self.objects.read().expect("cache lock");
        objects.get(namespace, name).cloned()
    }

    pub fn list(&self, namespace: &str, selector: &Selector) -> Vec<Arc<Value>> {
        self.list_cached(namespace, selector)
            .into_iter()
            .map(|c| c.value())
            .collect()
    }

    /// The objects with the memos of their facts, in namespace and name
    /// order.
    pub(crate) fn list_cached(&self, namespace: &str, selector: &Selector) -> Vec<Arc<Cached>> {
        let objects = self.objects.read().expect("cache lock");
        objects.select(namespace, selector)
    }

    /// The objects in `namespace` whose controller has `uid`, by name.
    pub fn controlled(&self, namespace: &str, uid: &str) -> Vec<Arc<Cached>> {
        let objects = self.objects.read().expect("cache lock");
        objects.controlled(namespace, uid)
    }

    /// Stores an object from a watch event; returns what the cache holds
    /// now and what it held before, or `None` for an event older than the
    /// version the cache holds (the host's own write, stored when it
    /// returned, may overtake the watch): the cache never goes back.
    pub fn apply(&self, object: Value) -> Option<(Arc<Value>, Option<Arc<Value>>)> {
        let (object, value) = self.admit(object);
        let mut objects = self.objects.write().expect("cache lock");
        if objects
            .get(object.namespace(), object.name())
            .is_some_and(|cached| resource_version(cached) > resource_version(&object))
        {
            return None;
        }
        let old = objects.insert(object);
        Some((value, old.map(|o| o.value())))
    }

    /// Stores an object as a cache held it, slimmed already (a captured
    /// fixture's): slimmed again, a ConfigMap's digests would be digested.
    pub(crate) fn apply_held(&self, object: Value) {
        let object = self.held(Arc::new(object), None, self.projected.current().0);
        self.objects.write().expect("cache lock").insert(object);
    }

    /// Stores an object the host just wrote, unless the cache already holds
    /// a newer version (the watch may have delivered a later change, such
    /// as a pause annotation, first); returns what the cache holds.
    pub(crate) fn apply_if_newer(&self, object: Value) -> Arc<Value> {
        let (object, value) = self.admit(object);
        let mut objects = self.objects.write().expect("cache lock");
        match objects.get(object.namespace(), object.name()) {
            Some(cached) if resource_version(cached) > resource_version(&object) => cached.value(),
            _ => {
                objects.insert(object);
                value
            }
        }
    }

    /// Removes an object; returns it.
    pub fn delete(&self, object: &Value) -> Option<Arc<Value>> {
        let md = &object["metadata"];
        let (namespace, name) = (md["namespace"].as_str(), md["name"].as_str());
        self.objects
            .write()
            .expect("cache lock")
            .remove(namespace.unwrap_or_default(), name.unwrap_or_default())
            .map(|o| o.value())
    }

    /// Replaces everything in `namespace` (every namespace when empty) by
    /// a fresh listing; returns what changed. An object listed at the
    /// `resourceVersion` the cache holds keeps its memo, unless it was
    /// held under another projection: it is held again as the projection
    /// of the moment keeps it, and nothing is reported changed.
    pub fn replace(&self, namespace: &str, listed: Vec<Value>) -> Vec<Transition> {
        let epoch = self.projected.current().0;
        let mut objects = self.objects.write().expect("cache lock");
        let mut fresh: HashMap<Key, (Arc<Cached>, Arc<Value>)> = listed
            .into_iter()
            .map(|o| {
                let (o, value) = self.admit(o);
                (cached_key(&o), (o, value))
            })
            .collect();
        let mut changes = Vec::new();
        let listed: HashSet<(&str, &str)> = fresh.keys().map(|(n, m)| (&**n, &**m)).collect();
        let stale: Vec<Key> = objects
            .keys_in(namespace)
            .filter(|k| !listed.contains(k))
            .map(|(n, m)| (n.to_owned(), m.to_owned()))
            .collect();
        drop(listed);
        for (ns, name) in stale {
            let old = objects.remove(&ns, &name);
            changes.push((old.map(|o| o.value()), None));
        }
        for (k, (new, value)) in fresh.drain() {
            let version =
                |o: &Cached| Some(o.resource_version().to_owned()).filter(|v| !v.is_empty());
            let held = objects.get(&k.0, &k.1);
            if held.is_some_and(|o| {
                version(o).is_some() && version(o) == version(&new) && o.epoch() == epoch
            }) {
                continue;
            }
            let old = objects.insert(new.clone());
            let same = old
                .as_ref()
                .is_some_and(|o| o.resource_version() == new.resource_version());
            if !same {
                changes.push((old.map(|o| o.value()), Some(value)));
            }
        }
        changes
    }

    pub fn len(&self) -> usize {
        self.objects.read().expect("cache lock").len()
    }

    /// The bytes of the objects' text as held (packed).
    pub fn held_bytes(&self) -> usize {
        self.list_cached("", &Selector::default())
            .iter()
            .map(|o| o.held_len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Drops what no fact needs: managedFields (but for the host's own entry on
/// the status subresource, reduced to the names of what it owns: see
/// [`slim_managed_fields`]), the last-applied annotation, the values of
/// Secrets and ConfigMaps (only key names are served; a ConfigMap's values
/// stay as digests, [`value_digest`], so a child the host applies is known
/// to be current), and the values of a Pod's environment variables (a fact
/// never needs them, and they may hold credentials), and a plan's effects
/// (but for what the host checks of them).
/// A Secret's certificates are summarised first (SHA-256 and PEM size per
/// block, under [`certificates::SUMMARY_FIELD`]), so
/// `facts.secret-certificates` is served without the data being held.
pub fn slim(mut object: Value) -> Value {
    if let Some(md) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        slim_managed_fields(md);
        if let Some(a) = md.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    let keys_only = matches!(
        (object["apiVersion"].as_str(), object["kind"].as_str()),
        (Some("v1"), Some("Secret" | "ConfigMap"))
    );
    let secret = object["apiVersion"] == "v1" && object["kind"] == "Secret";
    if secret && object.get(certificates::SUMMARY_FIELD).is_none() {
        let summary = certificates::summarize(&object);
        object[certificates::SUMMARY_FIELD] = summary;
    }
    if keys_only {
        for field in ["data", "binaryData", "stringData"] {
            if let Some(m) = object.get_mut(field).and_then(Value::as_object_mut) {
                for v in m.values_mut() {
                    // A ConfigMap's values are kept as digests, so that a
                    // child the host applies is known to hold what it
                    // asked for; a Secret's are dropped.
                    *v = Value::String(if secret {
                        String::new()
                    } else {
                        value_digest(v.as_str().unwrap_or_default())
                    });
                }
            }
        }
    }
    // A plan's review artifact is for reviewers: the host recomputes what
    // it executes. Kept: the reference binding an effects ConfigMap to the
    // plan (checked before the plan is executed), and a withdrawal
    // record's deletions (a line each: what ends the record a stopped host
    // left Applying).
    if object["kind"] == crate::plan::record::KIND {
        let withdrawal =
            object["metadata"]["labels"][crate::plan::record::WITHDRAWAL_LABEL] == "true";
        if let Some(effects) = object
            .get_mut("spec")
            .and_then(|s| s.get_mut("effects"))
            .and_then(Value::as_object_mut)
        {
            effects.retain(|k, _| k == "configMapRef" || (withdrawal && k == "inline"));
        }
    }
    if object["apiVersion"] == "v1" && object["kind"] == "Pod" {
        for list in ["containers", "initContainers", "ephemeralContainers"] {
            let containers = object["spec"]
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten();
            for env in containers.filter_map(|c| c.get_mut("env").and_then(Value::as_array_mut)) {
                for var in env.iter_mut().filter_map(Value::as_object_mut) {
                    var.remove("value");
                }
            }
        }
    }
    object
}

/// Every watched kind's cache, which optional APIs can be read where, each
/// watched kind's API resource, and what the host's last apply of each
/// child came to: the facts' source in the operator. Kinds are added while
/// the host runs (a guest dropped in for a new kind, or reading a kind not
/// watched yet).
#[derive(Default)]
pub struct ClusterSource {
    /// The namespaces the host watches; `None`: every one.
    watched: Option<BTreeSet<String>>,
    caches: RwLock<HashMap<KindRef, Arc<ObjectCache>>>,
    availability: RwLock<AvailabilityTable>,
    resources: RwLock<HashMap<KindRef, ApiResource>>,
    /// What each child's last apply came to, and what became of the
    /// change last asked for it.
    children: RwLock<ChildRecords>,
    /// The children whose last apply did not settle (the loop breaker).
    unsettled: RwLock<HashMap<ChildKey, Unsettled>>,
    /// What each kind's cache holds of its objects
    /// ([`super::projections`]): a kind not named is held whole.
    projections: RwLock<BTreeMap<KindRef, Projection>>,
}

impl ClusterSource {
    /// The source of a host watching `scopes` ("" for every namespace).
    pub fn watching(scopes: &[String]) -> Self {
        ClusterSource {
            watched: (!scopes.iter().any(String::is_empty))
                .then(|| scopes.iter().cloned().collect()),
            ..ClusterSource::default()
        }
    }

    /// Records the API resource of a watched kind (its plural and scope,
    /// from discovery): what the host writes it through.
    pub(crate) fn set_resource(&self, kind: KindRef, resource: ApiResource) {
        self.resources
            .write()
            .expect("resources lock")
            .insert(kind, resource);
    }

    /// Each kind's cached objects: how many, and the bytes of their text
    /// as held.
    pub fn cache_sizes(&self) -> Vec<(KindRef, usize, usize)> {
        self.caches
            .read()
            .expect("caches lock")
            .iter()
            .map(|(k, c)| (k.clone(), c.len(), c.held_bytes()))
            .collect()
    }

    /// Every cached object in `namespace` whose controller has `uid`,
    /// whatever its kind, with its kind's API resource.
    pub fn controlled_everywhere(
        &self,
        namespace: &str,
        uid: &str,
    ) -> Vec<(ApiResource, Arc<Value>)> {
        let caches: Vec<(KindRef, Arc<ObjectCache>)> = self
            .caches
            .read()
            .expect("caches lock")
            .iter()
            .map(|(k, c)| (k.clone(), c.clone()))
            .collect();
        caches
            .into_iter()
            .filter_map(|(kind, cache)| Some((self.resource(&kind)?, cache)))
            .flat_map(|(resource, cache)| {
                cache
                    .controlled(namespace, uid)
                    .into_iter()
                    .map(move |c| (resource.clone(), c.value()))
            })
            .collect()
    }

    /// The API resource of a watched kind.
    pub fn resource(&self, kind: &KindRef) -> Option<ApiResource> {
        self.resources
            .read()
            .expect("resources lock")
            .get(kind)
            .cloned()
    }

    /// Records what the host's apply of a child came to, now
    /// (`facts.last-apply`, `facts.last-apply-time`).
    pub(crate) fn record_apply(
        &self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        outcome: ApplyOutcome,
    ) {
        self.record_apply_at(kind, namespace, name, outcome, Some(jiff::Timestamp::now()));
    }

    /// Records what an apply of a child came to, answered `at`.
    pub(crate) fn record_apply_at(
        &self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        outcome: ApplyOutcome,
        at: Option<jiff::Timestamp>,
    ) {
        self.children
            .write()
            .expect("children lock")
            .record_apply(kind, namespace, name, outcome, at);
    }

    /// Records what became of the change asked for a child
    /// (`facts.change-state`).
    pub(crate) fn record_change(
        &self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        state: ChangeState,
    ) {
        self.children
            .write()
            .expect("children lock")
            .record_change(kind, namespace, name, state);
    }

    /// What is remembered of the child's last apply that did not settle.
    pub(crate) fn unsettled(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<Unsettled> {
        let all = self.unsettled.read().expect("unsettled lock");
        // Nearly always empty: no key is built on a converged pass.
        if all.is_empty() {
            return None;
        }
        all.get(&(kind.clone(), namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Remembers (or, `None`, forgets) the child's last apply that did not
    /// settle.
    pub(crate) fn record_unsettled(
        &self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        unsettled: Option<Unsettled>,
    ) {
        let mut all = self.unsettled.write().expect("unsettled lock");
        let key = (kind, namespace.to_owned(), name.to_owned());
        match unsettled {
            Some(u) => all.insert(key, u),
            None => all.remove(&key),
        };
    }

    pub fn add_kind(&self, kind: KindRef) -> Arc<ObjectCache> {
        // Locked before the caches, as `set_projections` does: a cache added
        // meanwhile is held as the projections of the moment say.
        let projections = self.projections.read().expect("projections lock");
        self.caches
            .write()
            .expect("caches lock")
            .entry(kind.clone())
            .or_insert_with(|| {
                let cache = ObjectCache::new(kind);
                if let Some(projection) = projections.get(cache.kind()) {
                    cache.projected.set(projection.clone());
                }
                Arc::new(cache)
            })
            .clone()
    }

    /// Holds of each kind's objects what `projections` names (a kind it
    /// does not name: whole), in the caches there are and those added
    /// later; returns the caches that widened, each with the epoch its
    /// watches are to list at ([`Projected::set`]).
    pub(crate) fn set_projections(
        &self,
        projections: BTreeMap<KindRef, Projection>,
    ) -> Vec<(Arc<ObjectCache>, u32)> {
        let mut held = self.projections.write().expect("projections lock");
        let caches = self.caches.read().expect("caches lock");
        let widened = caches
            .values()
            .filter_map(|cache| {
                let projection = projections
                    .get(cache.kind())
                    .cloned()
                    .unwrap_or(Projection::Whole);
                let epoch = cache.projected.set(projection)?;
                Some((cache.clone(), epoch))
            })
            .collect();
        *held = projections;
        widened
    }

    pub(crate) fn set_availability(
        &self,
        kind: KindRef,
        namespace: &str,
        availability: Availability,
    ) {
        self.availability
            .write()
            .expect("availability lock")
            .set(kind, namespace, availability);
    }

    pub fn cache(&self, kind: &KindRef) -> Option<Arc<ObjectCache>> {
        self.caches.read().expect("caches lock").get(kind).cloned()
    }

    /// The kind's cache when it may be read in `namespace`: probed
    /// available, and still served (a kind whose CRD was deleted while
    /// running fails the read as no longer served until it is listed
    /// again).
    fn check(&self, kind: &KindRef, namespace: &str) -> Result<Arc<ObjectCache>, SourceError> {
        self.availability
            .read()
            .expect("availability lock")
            .check(kind, namespace)?;
        let cache = self
            .cache(kind)
            .ok_or_else(|| SourceError::NotWatched(kind.clone()))?;
        if !cache.is_served(namespace) {
            return Err(SourceError::NoLongerServed(kind.clone()));
        }
        Ok(cache)
    }
}

/// A read that would give an object the host could not read whole fails,
/// naming it: its readers say so rather than judge a part of it.
fn readable(kind: &KindRef, object: &Cached) -> Result<(), SourceError> {
    match object.undecodable() {
        None => Ok(()),
        Some(why) => Err(SourceError::Undecodable {
            object: format!("{} {}/{}", kind.kind, object.namespace(), object.name()),
            why: why.to_owned(),
        }),
    }
}

impl ObjectSource for ClusterSource {
    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, SourceError> {
        let found = self.check(kind, namespace)?.get_cached(namespace, name);
        if let Some(o) = &found {
            readable(kind, o)?;
        }
        Ok(found)
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Arc<Cached>>, SourceError> {
        let listed = self
            .check(kind, namespace)?
            .list_cached(namespace, selector);
        listed.iter().try_for_each(|o| readable(kind, o))?;
        Ok(listed)
    }

    fn controlled(
        &self,
        kind: &KindRef,
        namespace: &str,
        uid: &str,
    ) -> Result<Vec<Arc<Cached>>, SourceError> {
        let controlled = self.check(kind, namespace)?.controlled(namespace, uid);
        controlled.iter().try_for_each(|o| readable(kind, o))?;
        Ok(controlled)
    }

    fn availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        if self.no_longer_served(kind, namespace) {
            return Availability::NotServed;
        }
        self.availability
            .read()
            .expect("availability lock")
            .get(kind, namespace)
    }

    fn watches(&self, namespace: &str) -> bool {
        self.watched.as_ref().is_none_or(|w| w.contains(namespace))
    }

    fn no_longer_served(&self, kind: &KindRef, namespace: &str) -> bool {
        let probed = self
            .availability
            .read()
            .expect("availability lock")
            .get(kind, namespace);
        probed == Availability::Available
            && self.cache(kind).is_some_and(|c| !c.is_served(namespace))
    }

    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome> {
        self.children
            .read()
            .expect("children lock")
            .last_apply(kind, namespace, name)
            .map(|(outcome, _)| outcome)
    }

    fn last_apply_time(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<jiff::Timestamp> {
        self.children
            .read()
            .expect("children lock")
            .last_apply(kind, namespace, name)
            .and_then(|(_, at)| at)
    }

    fn change_state(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ChangeState> {
        self.children
            .read()
            .expect("children lock")
            .change_state(kind, namespace, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slim_drops_managed_fields_and_secret_values() {
        let s = slim(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "managedFields": [{}],
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "1"}},
            "data": {"password": "c2VjcmV0"}
        }));
        assert!(s["metadata"].get("managedFields").is_none());
        assert_eq!(s["metadata"]["annotations"], json!({"keep": "1"}));
        assert_eq!(s["data"], json!({"password": ""}));
        let c = slim(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"setting": "on"}}),
        );
        assert_eq!(c["data"]["setting"], json!(value_digest("on")));
        assert!(!c.to_string().contains("\"on\""), "{c}");
    }

    #[test]
    fn slim_keeps_of_a_plans_effects_only_what_the_host_checks() {
        let plan = |labels: Value, effects: Value| {
            json!({"apiVersion": "reconciler.dev/v1alpha1", "kind": "ReconcilePlan",
                   "metadata": {"name": "p", "labels": labels},
                   "spec": {"digest": "d", "effects": effects}})
        };
        let reference = json!({"name": "p-effects", "key": "effects.yaml.gz", "sha256": "ab"});
        let big = slim(plan(json!({}), json!({"configMapRef": reference})));
        assert_eq!(big["spec"]["effects"], json!({"configMapRef": reference}));
        let inline = slim(plan(json!({}), json!({"inline": "- a lot of text"})));
        assert_eq!(inline["spec"]["effects"], json!({}));
        let record = slim(plan(
            json!({"reconciler.dev/withdrawal": "true"}),
            json!({"inline": "- name: b"}),
        ));
        assert_eq!(record["spec"]["effects"], json!({"inline": "- name: b"}));
        assert_eq!(record["spec"]["digest"], "d");
    }

    #[test]
    fn slim_drops_the_values_of_a_pods_environment_and_keeps_their_names() {
        let pod = slim(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c", "env": [
                    {"name": "PASSWORD", "value": "hunter2"},
                    {"name": "FROM", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                ]}],
                "initContainers": [{"name": "i", "env": [{"name": "TOKEN", "value": "t"}]}]
            }
        }));
        let text = pod.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("\"t\""),
            "{text}"
        );
        assert_eq!(
            pod["spec"]["containers"][0]["env"][0],
            json!({"name": "PASSWORD"})
        );
        assert_eq!(
            pod["spec"]["containers"][0]["env"][1]["valueFrom"]["secretKeyRef"]["key"],
            "k"
        );
        assert_eq!(
            pod["spec"]["initContainers"][0]["env"][0],
            json!({"name": "TOKEN"})
        );
    }

    #[test]
    fn a_slimmed_secret_holds_no_data_and_serves_the_same_certificates() {
        use base64::Engine as _;
        let pem = crate::facts::certificates::tests::TWO;
        let encoded = base64::engine::general_purpose::STANDARD.encode(pem);
        let full = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "tls", "namespace": "ns"},
            "data": {"tls.crt": encoded, "tls.key": "c2VjcmV0", "ca.crt": encoded},
            "stringData": {"extra": "plain"}
        });
        let slimmed = slim(full.clone());
        for field in ["data", "stringData"] {
            for (key, value) in slimmed[field].as_object().unwrap() {
                assert_eq!(value, "", "{field}.{key} keeps no data");
            }
        }
        let text = slimmed.to_string();
        assert!(
            !text.contains(&encoded) && !text.contains("c2VjcmV0") && !text.contains("plain"),
            "{text}"
        );
        for key in ["tls.crt", "tls.key", "ca.crt", "extra", "absent"] {
            let (from_full, from_slim) = (
                crate::facts::certificates::bundle(&full, key),
                crate::facts::certificates::bundle(&slimmed, key),
            );
            assert_eq!(
                serde_json::to_value(from_full).unwrap(),
                serde_json::to_value(from_slim).unwrap(),
                "{key}"
            );
        }
        assert_eq!(
            crate::facts::certificates::bundle(&slimmed, "tls.crt")
                .certificates
                .len(),
            2
        );
        assert_eq!(
            slim(slimmed.clone()),
            slimmed,
            "slimming twice keeps the summary"
        );
    }

    #[test]
    fn replace_reports_removed_and_changed_objects_only() {
        let cache = ObjectCache::new(KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        });
        let obj = |name: &str, rv: &str| json!({"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}});
        cache.apply(obj("a", "1"));
        cache.apply(obj("b", "1"));
        let changes = cache.replace("ns", vec![obj("a", "1"), obj("c", "2")]);
        let mut names: Vec<(String, bool, bool)> = changes
            .iter()
            .map(|(old, new)| {
                let o = new.as_ref().or(old.as_ref()).unwrap();
                (
                    o["metadata"]["name"].as_str().unwrap().to_owned(),
                    old.is_some(),
                    new.is_some(),
                )
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![("b".into(), true, false), ("c".into(), false, true)]
        );
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn a_relisted_object_keeps_its_memo_until_its_version_changes() {
        use crate::facts::memo::MemoKey;
        let cache = ObjectCache::new(KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        });
        let obj =
            |rv: &str| json!({"metadata": {"namespace": "ns", "name": "a", "resourceVersion": rv}});
        cache.apply(obj("1"));
        let first = cache.get_cached("ns", "a").unwrap();
        first.memo().get_or_insert(MemoKey::Generations, || 1u8);
        assert!(cache.replace("ns", vec![obj("1")]).is_empty());
        let relisted = cache.get_cached("ns", "a").unwrap();
        assert!(
            Arc::ptr_eq(&first, &relisted),
            "the same version keeps its memo"
        );
        assert_eq!(relisted.memoised(), 1);
        assert_eq!(cache.replace("ns", vec![obj("2")]).len(), 1);
        assert_eq!(cache.get_cached("ns", "a").unwrap().memoised(), 0);
        cache.apply(obj("3"));
        assert_eq!(cache.get_cached("ns", "a").unwrap().memoised(), 0);
    }

    #[test]
    fn a_written_object_never_replaces_a_newer_cached_one() {
        let cache = ObjectCache::new(KindRef {
            group: "x".into(),
            version: "v1".into(),
            kind: "Y".into(),
        });
        let obj = |rv: &str, paused: bool| json!({"metadata": {"namespace": "ns", "name": "a", "resourceVersion": rv, "annotations": {"paused": paused.to_string()}}});
        cache.apply(obj("12", true));
        let held = cache.apply_if_newer(obj("11", false));
        assert_eq!(held["metadata"]["resourceVersion"], "12");
        let held = cache.apply_if_newer(obj("13", false));
        assert_eq!(held["metadata"]["resourceVersion"], "13");
    }

    #[test]
    fn a_kind_no_longer_served_fails_its_reads_until_served_again() {
        let kind = KindRef {
            group: "route.openshift.io".into(),
            version: "v1".into(),
            kind: "Route".into(),
        };
        let source = ClusterSource::default();
        let cache = source.add_kind(kind.clone());
        assert!(cache.set_served("", false), "a flip");
        assert!(!cache.set_served("", false), "no flip");
        for namespace in ["team-a", ""] {
            assert!(matches!(
                source.get(&kind, namespace, "x"),
                Err(SourceError::NoLongerServed(_))
            ));
            assert_eq!(
                source.availability(&kind, namespace),
                Availability::NotServed
            );
            assert!(source.no_longer_served(&kind, namespace));
        }
        assert!(cache.set_served("", true));
        assert!(!source.no_longer_served(&kind, "team-a"));
        assert!(source.get(&kind, "team-a", "x").is_ok());
        assert_eq!(
            source.availability(&kind, "team-a"),
            Availability::Available
        );
    }

    #[test]
    fn a_namespace_reads_as_its_own_watch_saw_the_kind() {
        let kind = KindRef {
            group: "barmancloud.cnpg.io".into(),
            version: "v1".into(),
            kind: "ObjectStore".into(),
        };
        let source = ClusterSource::default();
        let cache = source.add_kind(kind.clone());
        assert!(cache.set_served("team-a", false));
        assert!(matches!(
            source.get(&kind, "team-a", "x"),
            Err(SourceError::NoLongerServed(_))
        ));
        assert_eq!(
            source.availability(&kind, "team-a"),
            Availability::NotServed
        );
        assert!(
            source.get(&kind, "team-b", "x").is_ok(),
            "team-b's watch still lists it"
        );
        assert!(
            matches!(
                source.list(&kind, "", &Selector::default()),
                Err(SourceError::NoLongerServed(_))
            ),
            "a read of every namespace needs every watch"
        );
        assert!(cache.set_served("team-a", true));
        assert!(!cache.set_served("team-a", true), "no flip");
        assert!(source.get(&kind, "team-a", "x").is_ok());
        assert!(source.list(&kind, "", &Selector::default()).is_ok());
    }

    #[test]
    fn a_kind_not_served_at_start_is_not_served_not_gone() {
        let kind = KindRef {
            group: "route.openshift.io".into(),
            version: "v1".into(),
            kind: "Route".into(),
        };
        let source = ClusterSource::default();
        let cache = source.add_kind(kind.clone());
        source.set_availability(kind.clone(), "", Availability::NotServed);
        cache.set_served("", false);
        assert!(matches!(
            source.get(&kind, "team-a", "x"),
            Err(SourceError::NotServed(_))
        ));
        assert!(!source.no_longer_served(&kind, "team-a"));
    }

    #[test]
    fn forbidden_namespace_is_refused_other_served() {
        let kind = KindRef {
            group: "route.openshift.io".into(),
            version: "v1".into(),
            kind: "Route".into(),
        };
        let source = ClusterSource::default();
        source.add_kind(kind.clone());
        source.set_availability(kind.clone(), "team-b", Availability::Forbidden);
        assert!(source.get(&kind, "team-a", "x").is_ok());
        assert!(matches!(
            source.get(&kind, "team-b", "x"),
            Err(SourceError::Forbidden { .. })
        ));
    }
}
