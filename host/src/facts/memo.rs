//! What facts derive from one version of an object, kept beside it.
//!
//! A source holds each object as a [`Cached`](super::Cached): its JSON
//! text and a small memo of what the host derived from it for guests (its
//! Pod or Deployment part of a workload fact, its NetworkPolicy, Node,
//! exposure, Secret, ConfigMap or certificate facts). Each is derived the
//! first time a pass asks for it and served from the memo afterwards. No
//! entry keeps the object's metadata, which repeats what the text holds:
//! `facts.get` and `facts.list` read it from the text per read
//! (`meta::object_meta_of`), and a fact that carries it ([`Described`]) is
//! memoised without it and served with it read from the text
//! ([`Cached::fact`](super::Cached::fact)). A new
//! version of the object (a watch event, a relist with another
//! `resourceVersion`) is a new `Cached` with an empty memo, so nothing
//! derived from an old version is ever served.
//!
//! Only what a guest reads is memoised, so the memory it takes follows the
//! reads; typed facts are a fraction of their object.

use std::any::Any;
use std::sync::{Arc, Mutex};

use crate::contract::facts::{
    CertificateBundleFact, ConfigMapFact, EgressPolicyFact, ExposureFact, NetworkPolicyFact,
    PodFact, SecretFact,
};
use crate::contract::types::ObjectMeta;

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
            // Most objects memoise one derivation: room for four (what a
            // vector's first push makes) would be most of the memo.
            entries.reserve_exact(1);
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

/// A derivation that carries its object's metadata: memoised without it
/// ([`Described::meta`] emptied), served with it.
pub(crate) trait Described {
    /// Its metadata, where it has one (a derivation that failed has none).
    fn meta(&mut self) -> Option<&mut ObjectMeta>;
}

impl<T: Described> Described for Result<T, String> {
    fn meta(&mut self) -> Option<&mut ObjectMeta> {
        self.as_mut().ok().and_then(Described::meta)
    }
}

/// The facts whose metadata is their `meta` field.
macro_rules! described_by_meta {
    ($($fact:ty),* $(,)?) => {$(
        impl Described for $fact {
            fn meta(&mut self) -> Option<&mut ObjectMeta> {
                Some(&mut self.meta)
            }
        }
    )*};
}

described_by_meta!(
    CertificateBundleFact,
    ConfigMapFact,
    EgressPolicyFact,
    ExposureFact,
    NetworkPolicyFact,
    PodFact,
    SecretFact,
);

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
