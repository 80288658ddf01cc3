//! What the host's own once-a-second reads derive from one version of an
//! object, kept beside it.
//!
//! The sampler (`operator/sampled.rs`) reads every parent's generations,
//! and every plan awaiting a decision, each second; each is derived from
//! the object's text once and served from the memo afterwards. A new
//! version of the object (a watch event, a relist with another
//! `resourceVersion`) is a new `Cached` with an empty memo, so nothing
//! derived from an old version is ever served.
//!
//! A guest's facts are not memoised: a pass derives each from the text
//! when the guest asks (`FactServer`), so the cache holds each object once,
//! as its packed text, and not a second time as the facts a pass read
//! from it (decision 0010, "The facts a pass reads, derived each time").

use std::any::Any;
use std::sync::{Arc, Mutex};

/// Which derivation a memo entry holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MemoKey {
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
            let text = cached.memo().get_or_insert(MemoKey::Generations, || {
                made += 1;
                cached.text().into_owned()
            });
            assert_eq!(*text, r#"{"metadata":{"name":"a"}}"#);
        }
        assert_eq!(made, 1);
        let other = cached
            .memo()
            .get_or_insert(MemoKey::AwaitingDecision, || 7u32);
        assert_eq!(*other, 7);
        assert_eq!(cached.memoised(), 2);
    }
}
