//! What a kind's cache holds of each object: the projection its readers
//! declare, numbered by epoch, and how far each of its watches has listed
//! since it last widened.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use reconciler_conventions::projection::Projection;
use serde_json::Value;
use tokio::sync::{Notify, watch};

/// A cache's projection and what its watches listed under it.
pub(crate) struct Projected {
    current: RwLock<(u32, Arc<Projection>)>,
    /// The epoch the watches must list at: raised when the projection
    /// widens (the objects held lack what it now keeps), so each watch
    /// lists everything again.
    relist: watch::Sender<u32>,
    /// The epoch at which each watch, by namespace ("" for all), last
    /// listed everything.
    listed: Mutex<BTreeMap<String, u32>>,
    listed_changed: Notify,
}

impl Default for Projected {
    fn default() -> Self {
        Projected {
            current: RwLock::new((0, Arc::new(Projection::Whole))),
            relist: watch::Sender::new(0),
            listed: Mutex::default(),
            listed_changed: Notify::new(),
        }
    }
}

impl Projected {
    /// The projection and its epoch.
    pub(crate) fn current(&self) -> (u32, Arc<Projection>) {
        let current = self.current.read().expect("projection lock");
        (current.0, current.1.clone())
    }

    /// `object` as the cache holds it under `projection`: the fields kept,
    /// and the host's mark of an object it could not read whole.
    pub(crate) fn apply(projection: &Projection, object: Value) -> Value {
        if projection.is_whole() {
            return object;
        }
        let mut kept = projection.apply(&object);
        if let Some(mark) = object.get(crate::marks::UNDECODABLE) {
            kept[crate::marks::UNDECODABLE] = mark.clone();
        }
        kept
    }

    /// Holds `projection` from now on; returns the new epoch if it keeps
    /// a field the one before did not (the watches list everything again),
    /// `None` otherwise: the same, or narrower (each object shrinks as its
    /// next version arrives).
    pub(crate) fn set(&self, projection: Projection) -> Option<u32> {
        let mut current = self.current.write().expect("projection lock");
        if *current.1 == projection {
            return None;
        }
        let widened = current.1.union(&projection) != *current.1;
        current.0 += 1;
        current.1 = Arc::new(projection);
        let epoch = current.0;
        drop(current);
        if widened {
            self.relist.send_replace(epoch);
            return Some(epoch);
        }
        None
    }

    /// What a watch follows to know when to list everything again.
    pub(crate) fn relists(&self) -> watch::Receiver<u32> {
        self.relist.subscribe()
    }

    /// A watch of `namespace` listed everything, held under `epoch`.
    pub(crate) fn listed(&self, namespace: &str, epoch: u32) {
        self.listed
            .lock()
            .expect("listed lock")
            .insert(namespace.to_owned(), epoch);
        self.listed_changed.notify_waiters();
    }

    /// Resolves once every watch of the cache listed at `epoch` or later.
    pub(crate) async fn listed_at(&self, epoch: u32) {
        loop {
            let changed = self.listed_changed.notified();
            let done = self
                .listed
                .lock()
                .expect("listed lock")
                .values()
                .all(|e| *e >= epoch);
            if done {
                return;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(paths: &[&str]) -> Projection {
        Projection::of_paths(paths.iter().copied()).unwrap()
    }

    #[test]
    fn a_wider_projection_asks_for_a_listing_and_a_narrower_one_does_not() {
        let projected = Projected::default();
        let relists = projected.relists();
        assert_eq!(
            projected.set(fields(&["spec.ports"])),
            None,
            "narrower than whole"
        );
        assert_eq!(projected.set(fields(&["spec.ports"])), None, "the same");
        assert_eq!(
            projected.set(fields(&["spec.ports", "spec.clusterIP"])),
            Some(2)
        );
        assert_eq!(*relists.borrow(), 2);
        assert_eq!(projected.set(fields(&["spec"])), Some(3));
        assert_eq!(projected.set(fields(&["spec.ports"])), None);
        assert_eq!(projected.current().0, 4);
    }

    #[tokio::test]
    async fn listed_at_waits_for_every_watch() {
        let projected = Arc::new(Projected::default());
        projected.listed("a", 0);
        projected.listed("b", 0);
        let waiting = tokio::spawn({
            let projected = projected.clone();
            async move { projected.listed_at(1).await }
        });
        projected.listed("a", 1);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "b has not listed at 1 yet");
        projected.listed("b", 1);
        waiting.await.unwrap();
    }

    #[test]
    fn the_undecodable_mark_is_kept() {
        let object = json!({"kind": "Service", "metadata": {}, "spec": {"clusterIP": "x"},
                            crate::marks::UNDECODABLE: "too deep"});
        let kept = Projected::apply(&fields(&["spec.ports"]), object);
        assert_eq!(
            kept,
            json!({"kind": "Service", "metadata": {}, "spec": {}, crate::marks::UNDECODABLE: "too deep"})
        );
    }
}
