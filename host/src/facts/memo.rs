//! What facts derive from one version of an object, kept beside it.
//!
//! A source holds each object as a [`Cached`](super::Cached): its JSON
//! text and a small memo of what the host derived from it for guests (its
//! Pod or Deployment part of a workload fact, its NetworkPolicy, Node,
//! exposure, Secret, ConfigMap or certificate facts; not the metadata
//! `facts.get` and `facts.list` serve, which repeats the text and is
//! derived per read: `meta::object_meta_of`). Each is derived the first
//! time a pass asks for it and served from the memo afterwards. A new
//! version of the object (a watch event, a relist with another
//! `resourceVersion`) is a new `Cached` with an empty memo, so nothing
//! derived from an old version is ever served.
//!
//! Only what a guest reads is memoised, so the memory it takes follows the
//! reads; typed facts are a fraction of their object.

use std::any::Any;
use std::sync::{Arc, Mutex};

/// Which derivation a memo entry holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MemoKey {
    /// A Deployment's part of a workload fact.
    Deployment,
    Pod,
    Secret,
    ConfigMap,
    NetworkPolicy,
    NodeCidrs,
    /// An exposure fact, by the exposure kind's index.
    Exposure(u8),
    /// A Secret's certificate bundle under a key.
    Certificates(String),
    /// A Job's part of a Job fact.
    Job,
    /// A Pod's failure, as a Job fact reports it.
    PodFailure,
    /// A NetworkPolicy's egress side.
    EgressPolicy,
    /// A parent's generation and the one its Ready condition observed, as
    /// the once-a-second sampler reads them.
    Generations,
    /// A plan's parent kind and age, while it awaits a decision.
    AwaitingDecision,
}

type Entry = (MemoKey, Arc<dyn Any + Send + Sync>);

/// A few derivations of one object, by key.
#[derive(Default)]
pub struct Memo(Mutex<Vec<Entry>>);

impl Memo {
    /// The derivation under `key`, made by `make` the first time. Two
    /// passes asking at once may both make it; one is kept.
    pub(crate) fn get_or_insert<T: Send + Sync + 'static>(
        &self,
        key: MemoKey,
        make: impl FnOnce() -> T,
    ) -> Arc<T> {
        if let Some(found) = self.find(&key).and_then(|d| d.downcast::<T>().ok()) {
            return found;
        }
        let made = Arc::new(make());
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !entries.iter().any(|(k, _)| *k == key) {
            entries.push((key, made.clone()));
        }
        made
    }

    fn find(&self, key: &MemoKey) -> Option<Arc<dyn Any + Send + Sync>> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, d)| d.clone())
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Cached;
    use serde_json::json;

    #[test]
    fn a_derivation_is_made_once_per_key() {
        let cached = Cached::new(Arc::new(json!({"metadata": {"name": "a"}})));
        let mut made = 0;
        for _ in 0..3 {
            let text = cached.memo().get_or_insert(MemoKey::ConfigMap, || {
                made += 1;
                cached.text().into_owned()
            });
            assert_eq!(*text, r#"{"metadata":{"name":"a"}}"#);
        }
        assert_eq!(made, 1);
        let other = cached
            .memo()
            .get_or_insert(MemoKey::Certificates("ca.crt".into()), || 7u32);
        assert_eq!(*other, 7);
        assert_eq!(cached.memoised(), 2);
    }
}
