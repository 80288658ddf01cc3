//! Where facts come from: a read-only store of Kubernetes objects (the
//! operator's caches, or a fixture's objects in memory).

use std::collections::BTreeMap;
use std::sync::Arc;

use reconciler_conventions::kind::KindRef;
use serde_json::Value;

use super::{Cached, Selector};

/// Whether an optional API can be used in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Availability {
    Available,
    NotServed,
    Forbidden,
}

/// Why a source could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The kind is not served (an optional API).
    #[error("{0} is not served by this cluster")]
    NotServed(KindRef),
    /// The host's identity may not read the kind in the namespace.
    #[error("the host may not read {kind} in namespace {namespace:?}")]
    Forbidden { kind: KindRef, namespace: String },
    /// The source does not hold this kind (not watched): a host defect.
    #[error("{0} is not watched by the host")]
    NotWatched(KindRef),
    /// The kind was served when the host started watching it and is no
    /// longer served (its CustomResourceDefinition deleted while the host
    /// runs): the pass that reads it fails, and is retried with backoff.
    #[error(
        "{0} is no longer served: it was when the host started watching it (its CustomResourceDefinition deleted?)"
    )]
    NoLongerServed(KindRef),
    /// A read past the cache (one object of a kind the host may not list
    /// there) failed otherwise than refused: retried with the pass.
    /// `object` names it: `<kind> <namespace>/<name>`.
    #[error("reading {object} past the cache failed: {why}")]
    PastCache { object: String, why: String },
    /// An object the host could not read whole (nested too deep): the
    /// read fails until the object changes. `object` names it.
    #[error("{object} cannot be read: {why}")]
    Undecodable { object: String, why: String },
}

/// What a read of one object past the cache answered: found, absent, or
/// why not.
pub(crate) type PastCacheAnswer = Result<Option<Arc<Cached>>, SourceError>;

/// Which optional kinds can be read where: per namespace, with `""` as
/// the default for every namespace. A kind not in the table is available.
#[derive(Clone, Debug, Default)]
pub(crate) struct AvailabilityTable(BTreeMap<(KindRef, String), Availability>);

impl AvailabilityTable {
    pub(crate) fn set(&mut self, kind: KindRef, namespace: &str, availability: Availability) {
        self.0.insert((kind, namespace.to_owned()), availability);
    }

    pub(crate) fn get(&self, kind: &KindRef, namespace: &str) -> Availability {
        self.0
            .get(&(kind.clone(), namespace.to_owned()))
            .or_else(|| self.0.get(&(kind.clone(), String::new())))
            .copied()
            .unwrap_or(Availability::Available)
    }

    /// `Ok` when `kind` can be read in `namespace`, else why not.
    pub(crate) fn check(&self, kind: &KindRef, namespace: &str) -> Result<(), SourceError> {
        match self.get(kind, namespace) {
            Availability::Available => Ok(()),
            Availability::NotServed => Err(SourceError::NotServed(kind.clone())),
            Availability::Forbidden => Err(SourceError::Forbidden {
                kind: kind.clone(),
                namespace: namespace.to_owned(),
            }),
        }
    }
}

/// How the API server answered the host's last apply of a child.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum ApplyOutcome {
    Applied,
    /// The HTTP code, the Status reason (Invalid, Forbidden, ...) and the
    /// server's message.
    Refused {
        code: u16,
        reason: String,
        message: String,
    },
}

/// A child the host applies: its kind, namespace and name.
pub(crate) type ChildKey = (KindRef, String, String);

/// What holds a change the host did not make (`facts.change-state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Hold {
    /// Mode observe: planned, never made.
    Observe,
    /// Approval manual: its plan awaits a reviewer's decision.
    AwaitingApproval,
    /// A reviewer denied its plan.
    Denied,
    /// The pass failed before making it (Ready says why).
    PassFailed,
}

/// What became of the change a guest asked for a child
/// (`facts.change-state`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeState {
    /// The child is as the guest asked (applied, found so, or deleted).
    Made,
    Held(Hold),
    /// The API server refused it.
    Refused {
        code: u16,
        reason: String,
        message: String,
    },
    /// Deleted as a withdrawal.
    Withdrawn,
}

/// What became of the changes a pass asked for, remembered apart from the
/// objects (a dry run's): `facts.change-state` answered from it.
pub(crate) trait ChangeStates: Send + Sync {
    fn change_state(&self, child: &ChildKey) -> Option<ChangeState>;
}

/// A read-only store of objects, as JSON, each as a [`Cached`] (its text,
/// identity and memo).
pub trait ObjectSource: Send + Sync {
    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, SourceError>;

    /// The objects of `kind` in `namespace` (every namespace when empty)
    /// that `selector` matches, sorted by namespace and name.
    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Arc<Cached>>, SourceError>;

    /// The objects of `kind` in `namespace` whose controller (the owner
    /// reference marked `controller`) has `uid`, sorted by name.
    fn controlled(
        &self,
        kind: &KindRef,
        namespace: &str,
        uid: &str,
    ) -> Result<Vec<Arc<Cached>>, SourceError> {
        Ok(self
            .list(kind, namespace, &Selector::default())?
            .into_iter()
            .filter(|o| o.controller_uid() == Some(uid))
            .collect())
    }

    fn availability(&self, kind: &KindRef, namespace: &str) -> Availability;

    /// Whether the host watches `namespace` (its caches hold its objects):
    /// a cross-namespace read of one it does not watch is refused.
    fn watches(&self, _namespace: &str) -> bool {
        true
    }

    /// Whether `kind` was served in `namespace` when the host started
    /// watching it and is not now: asked of its availability, the source
    /// answers not served, and the pass that asked fails
    /// ([`SourceError::NoLongerServed`]).
    fn no_longer_served(&self, _kind: &KindRef, _namespace: &str) -> bool {
        false
    }

    /// The object `name` of `kind` in `namespace`, read past the cache: a
    /// kind the host may not list or watch there may still be readable
    /// one object at a time (`crate::facts::past_cache`). `None`: not read
    /// yet, which the pass's reader asks the host for.
    fn past_cache(
        &self,
        _kind: &KindRef,
        _namespace: &str,
        _name: &str,
    ) -> Option<PastCacheAnswer> {
        None
    }

    /// The outcome of the host's last apply of the child `name` of `kind`
    /// in `namespace`, if it applied it since it started.
    fn last_apply(&self, _kind: &KindRef, _namespace: &str, _name: &str) -> Option<ApplyOutcome> {
        None
    }

    /// When the API server answered that last apply.
    fn last_apply_time(
        &self,
        _kind: &KindRef,
        _namespace: &str,
        _name: &str,
    ) -> Option<jiff::Timestamp> {
        None
    }

    /// What became of the change last asked for the child `name` of
    /// `kind` in `namespace`, if the host acted on one since it started.
    fn change_state(&self, _kind: &KindRef, _namespace: &str, _name: &str) -> Option<ChangeState> {
        None
    }
}

/// Objects held in memory: what a fixture serves.
#[derive(Default, Clone)]
pub struct MemorySource {
    objects: BTreeMap<(KindRef, String, String), Arc<Cached>>,
    availability: AvailabilityTable,
    applies: BTreeMap<ChildKey, ApplyOutcome>,
    apply_times: BTreeMap<ChildKey, jiff::Timestamp>,
    changes: BTreeMap<ChildKey, ChangeState>,
    /// Namespaces the source does not watch.
    unwatched: std::collections::BTreeSet<String>,
    /// The (kind, namespace) pairs refused to a list whose objects a read
    /// past the cache finds (a fixture's `directGet`); any other refused
    /// kind refuses that read too.
    gettable: std::collections::BTreeSet<(KindRef, String)>,
}

impl MemorySource {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an object; its kind comes from `apiVersion` and `kind`.
    pub fn insert(&mut self, object: Value) {
        let kind = kind_of(&object);
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        // As the operator's cache holds it: the host's apply entry beside
        // the object, which guests do not read.
        let mut object = object;
        let applied = crate::facts::applied::take_applied(&mut object);
        self.objects.insert(
            (kind, namespace, name),
            Cached::applied(Arc::new(object), applied.as_ref()),
        );
    }

    pub(crate) fn set_availability(
        &mut self,
        kind: KindRef,
        namespace: &str,
        availability: Availability,
    ) {
        self.availability.set(kind, namespace, availability);
    }

    /// Lets a read past the cache find the objects of `kind` in
    /// `namespace` (every namespace when empty) while a list is refused.
    pub(crate) fn allow_direct_get(&mut self, kind: KindRef, namespace: &str) {
        self.gettable.insert((kind, namespace.to_owned()));
    }

    /// Leaves `namespace` out of what the source watches.
    #[cfg(test)]
    pub(crate) fn leave_out(&mut self, namespace: &str) {
        self.unwatched.insert(namespace.to_owned());
    }

    /// Records the outcome of the host's last apply of a child.
    pub(crate) fn set_last_apply(
        &mut self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        outcome: ApplyOutcome,
    ) {
        self.applies
            .insert((kind, namespace.to_owned(), name.to_owned()), outcome);
    }

    /// Records what became of the change asked for a child.
    #[cfg(test)]
    pub(crate) fn set_change_state(
        &mut self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        state: ChangeState,
    ) {
        self.changes
            .insert((kind, namespace.to_owned(), name.to_owned()), state);
    }

    /// Records when the API server answered the host's last apply of a
    /// child.
    pub(crate) fn set_last_apply_time(
        &mut self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        at: jiff::Timestamp,
    ) {
        self.apply_times
            .insert((kind, namespace.to_owned(), name.to_owned()), at);
    }
}

impl ObjectSource for MemorySource {
    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, SourceError> {
        self.availability.check(kind, namespace)?;
        Ok(self
            .objects
            .get(&(kind.clone(), namespace.to_owned(), name.to_owned()))
            .cloned())
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Arc<Cached>>, SourceError> {
        self.availability.check(kind, namespace)?;
        Ok(self
            .objects
            .iter()
            .filter(|((k, ns, _), _)| k == kind && (namespace.is_empty() || ns == namespace))
            .filter(|(_, o)| selector.matches_by(|k| o.label(k)))
            .map(|(_, o)| o.clone())
            .collect())
    }

    fn availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        self.availability.get(kind, namespace)
    }

    fn watches(&self, namespace: &str) -> bool {
        !self.unwatched.contains(namespace)
    }

    fn past_cache(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<PastCacheAnswer> {
        let gettable = [namespace, ""]
            .iter()
            .any(|ns| self.gettable.contains(&(kind.clone(), (*ns).to_owned())));
        Some(if gettable {
            Ok(self
                .objects
                .get(&(kind.clone(), namespace.to_owned(), name.to_owned()))
                .cloned())
        } else {
            self.availability.check(kind, namespace).map(|()| None)
        })
    }

    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome> {
        self.applies
            .get(&(kind.clone(), namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    fn last_apply_time(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<jiff::Timestamp> {
        self.apply_times
            .get(&(kind.clone(), namespace.to_owned(), name.to_owned()))
            .copied()
    }

    fn change_state(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ChangeState> {
        self.changes
            .get(&(kind.clone(), namespace.to_owned(), name.to_owned()))
            .cloned()
    }
}

/// The kind of an object's JSON, from `apiVersion` and `kind`.
pub(crate) fn kind_of(object: &Value) -> KindRef {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    KindRef {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: object["kind"].as_str().unwrap_or_default().to_owned(),
    }
}
