//! Reads past the cache: single objects of a kind the host may not list
//! or watch in a namespace, read one at a time, at most [`MAX_READS`] a
//! pass, and the source that serves a pass's answers to them.
//!
//! Seed 000 (RouteAPIUnavailable): "A Route or HTTPRoute the object
//! published before its kind was refused in its namespace is no longer in
//! the cache: the operator reads it past the cache once per loop". The
//! guest asks through its ordinary reads (`facts.get`, `facts.exposure`);
//! a read the cache refuses is recorded as wanted, the host reads it
//! directly after the evaluation, and evaluates the pass again with the
//! answer ([`WithPastCache`]), so no guest call ever waits on the network.

use std::collections::BTreeMap;
use std::sync::Arc;

use reconciler_conventions::kind::KindRef;

use super::source::{
    ApplyOutcome, Availability, ChangeState, ObjectSource, PastCacheAnswer, SourceError,
};
use super::{Cached, Selector};

/// The most objects a pass reads past the cache: a guest that asks for
/// more is answered with the cache's refusal for the rest.
pub(crate) const MAX_READS: usize = 4;

/// One object: its kind, namespace and name.
pub(crate) type ObjectKey = (KindRef, String, String);

/// The answers of a pass's reads past the cache.
#[derive(Clone, Debug, Default)]
pub struct PastCache(BTreeMap<ObjectKey, PastCacheAnswer>);

impl PastCache {
    pub fn insert(&mut self, key: ObjectKey, answer: PastCacheAnswer) {
        self.0.insert(key, answer);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.0.contains_key(key)
    }

    /// The object found past the cache, if it was read and found.
    pub fn found(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<Arc<Cached>> {
        match self
            .0
            .get(&(kind.clone(), namespace.to_owned(), name.to_owned()))
        {
            Some(Ok(found)) => found.clone(),
            _ => None,
        }
    }
}

/// A source whose reads past the cache are answered from a [`PastCache`];
/// everything else is the inner source's.
pub(crate) struct WithPastCache {
    inner: Arc<dyn ObjectSource>,
    answers: Arc<PastCache>,
}

impl WithPastCache {
    pub(crate) fn new(inner: Arc<dyn ObjectSource>, answers: Arc<PastCache>) -> Self {
        WithPastCache { inner, answers }
    }
}

impl ObjectSource for WithPastCache {
    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, SourceError> {
        self.inner.get(kind, namespace, name)
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Arc<Cached>>, SourceError> {
        self.inner.list(kind, namespace, selector)
    }

    fn controlled(
        &self,
        kind: &KindRef,
        namespace: &str,
        uid: &str,
    ) -> Result<Vec<Arc<Cached>>, SourceError> {
        self.inner.controlled(kind, namespace, uid)
    }

    fn availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        self.inner.availability(kind, namespace)
    }

    fn watches(&self, namespace: &str) -> bool {
        self.inner.watches(namespace)
    }

    fn no_longer_served(&self, kind: &KindRef, namespace: &str) -> bool {
        self.inner.no_longer_served(kind, namespace)
    }

    fn past_cache(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<PastCacheAnswer> {
        self.answers
            .0
            .get(&(kind.clone(), namespace.to_owned(), name.to_owned()))
            .cloned()
            .or_else(|| self.inner.past_cache(kind, namespace, name))
    }

    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome> {
        self.inner.last_apply(kind, namespace, name)
    }

    fn last_apply_time(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<jiff::Timestamp> {
        self.inner.last_apply_time(kind, namespace, name)
    }

    fn change_state(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ChangeState> {
        self.inner.change_state(kind, namespace, name)
    }
}
