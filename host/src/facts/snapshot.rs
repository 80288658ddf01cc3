//! The world a pass read, held still: each read answers, when the pass
//! evaluates its guest again, what it answered the first time, so a
//! second evaluation (after the pass made its changes) differs from the
//! first only in what the host did (`facts.change-state`, `last-apply`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use reconciler_conventions::kind::KindRef;

use super::source::{
    ApplyOutcome, Availability, ChangeState, ChangeStates, ObjectSource, PastCacheAnswer,
    SourceError,
};
use super::{Cached, Selector};

type Objects = Result<Vec<Arc<Cached>>, SourceError>;
type Object = Result<Option<Arc<Cached>>, SourceError>;
/// An object's kind, namespace and name.
type Key = (KindRef, String, String);

/// Answers by their reads' arguments.
type Answers<K, V> = Mutex<BTreeMap<K, V>>;

/// A source answering each read of the world as it first answered it;
/// what the host did (change states, last applies) is always the inner
/// source's now, or, where the pass remembers change states apart, those.
pub(crate) struct Snapshot {
    inner: Arc<dyn ObjectSource>,
    changes: Option<Arc<dyn ChangeStates>>,
    gets: Answers<Key, Object>,
    lists: Answers<(KindRef, String, Selector), Objects>,
    controlled: Answers<(KindRef, String, String), Objects>,
    availability: Answers<(KindRef, String), Availability>,
    watches: Answers<String, bool>,
    no_longer_served: Answers<(KindRef, String), bool>,
    past_cache: Answers<(KindRef, String, String), Option<PastCacheAnswer>>,
}

impl Snapshot {
    /// `inner` held still; `facts.change-state` answered by `changes`
    /// where given.
    pub(crate) fn new(
        inner: Arc<dyn ObjectSource>,
        changes: Option<Arc<dyn ChangeStates>>,
    ) -> Self {
        Snapshot {
            inner,
            changes,
            gets: Answers::default(),
            lists: Answers::default(),
            controlled: Answers::default(),
            availability: Answers::default(),
            watches: Answers::default(),
            no_longer_served: Answers::default(),
            past_cache: Answers::default(),
        }
    }
}

/// The answer to the read `key`: as first answered, or `ask`ed now and
/// kept.
fn held<K: Ord, V: Clone>(answers: &Answers<K, V>, key: K, ask: impl FnOnce() -> V) -> V {
    if let Some(answer) = answers.lock().expect("snapshot lock").get(&key) {
        return answer.clone();
    }
    let answer = ask();
    answers
        .lock()
        .expect("snapshot lock")
        .entry(key)
        .or_insert(answer)
        .clone()
}

fn key3(kind: &KindRef, namespace: &str, name: &str) -> (KindRef, String, String) {
    (kind.clone(), namespace.to_owned(), name.to_owned())
}

impl ObjectSource for Snapshot {
    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, SourceError> {
        held(&self.gets, key3(kind, namespace, name), || {
            self.inner.get(kind, namespace, name)
        })
    }

    fn list(&self, kind: &KindRef, namespace: &str, selector: &Selector) -> Objects {
        let key = (kind.clone(), namespace.to_owned(), selector.clone());
        held(&self.lists, key, || {
            self.inner.list(kind, namespace, selector)
        })
    }

    fn controlled(&self, kind: &KindRef, namespace: &str, uid: &str) -> Objects {
        held(&self.controlled, key3(kind, namespace, uid), || {
            self.inner.controlled(kind, namespace, uid)
        })
    }

    fn availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        let key = (kind.clone(), namespace.to_owned());
        held(&self.availability, key, || {
            self.inner.availability(kind, namespace)
        })
    }

    fn watches(&self, namespace: &str) -> bool {
        held(&self.watches, namespace.to_owned(), || {
            self.inner.watches(namespace)
        })
    }

    fn no_longer_served(&self, kind: &KindRef, namespace: &str) -> bool {
        let key = (kind.clone(), namespace.to_owned());
        held(&self.no_longer_served, key, || {
            self.inner.no_longer_served(kind, namespace)
        })
    }

    fn past_cache(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<PastCacheAnswer> {
        held(&self.past_cache, key3(kind, namespace, name), || {
            self.inner.past_cache(kind, namespace, name)
        })
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
        match &self.changes {
            Some(changes) => changes.change_state(&key3(kind, namespace, name)),
            None => self.inner.change_state(kind, namespace, name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::MemorySource;
    use serde_json::json;

    fn config_map() -> KindRef {
        KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        }
    }

    /// A source whose objects change between two reads: the snapshot
    /// answers the first read's objects; what the host did is read now.
    #[test]
    fn a_second_read_answers_the_first_but_change_states_are_read_now() {
        let mut before = MemorySource::new();
        before.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns"}}));
        let live = Arc::new(Mutex::new(before));
        struct Live(Arc<Mutex<MemorySource>>);
        impl ObjectSource for Live {
            fn get(
                &self,
                kind: &KindRef,
                namespace: &str,
                name: &str,
            ) -> Result<Option<Arc<Cached>>, SourceError> {
                self.0.lock().unwrap().get(kind, namespace, name)
            }
            fn list(&self, kind: &KindRef, namespace: &str, selector: &Selector) -> Objects {
                self.0.lock().unwrap().list(kind, namespace, selector)
            }
            fn availability(&self, kind: &KindRef, namespace: &str) -> Availability {
                self.0.lock().unwrap().availability(kind, namespace)
            }
            fn change_state(
                &self,
                kind: &KindRef,
                namespace: &str,
                name: &str,
            ) -> Option<ChangeState> {
                self.0.lock().unwrap().change_state(kind, namespace, name)
            }
        }
        let snapshot = Snapshot::new(Arc::new(Live(live.clone())), None);
        let cm = config_map();
        assert!(snapshot.get(&cm, "ns", "a").unwrap().is_some());
        assert_eq!(
            snapshot
                .list(&cm, "ns", &Selector::default())
                .unwrap()
                .len(),
            1
        );
        assert_eq!(snapshot.change_state(&cm, "ns", "a"), None);
        // The pass deletes the ConfigMap: the world moves, the snapshot not.
        *live.lock().unwrap() = {
            let mut after = MemorySource::new();
            after.set_change_state(cm.clone(), "ns", "a", ChangeState::Withdrawn);
            after
        };
        assert!(snapshot.get(&cm, "ns", "a").unwrap().is_some());
        assert_eq!(
            snapshot
                .list(&cm, "ns", &Selector::default())
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            snapshot.change_state(&cm, "ns", "a"),
            Some(ChangeState::Withdrawn)
        );
        // A read the first evaluation did not make is the world's now.
        assert!(snapshot.get(&cm, "ns", "b").unwrap().is_none());
    }
}
