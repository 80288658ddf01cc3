//! Dispatch: a change a watch reported becomes passes of the parents it
//! concerns: the parent itself when its own object changed (not only its
//! status), and every parent whose last pass read what changed.

use reconciler_conventions::kind::KindRef;
use serde_json::Value;

use crate::facts::meta::controller_uid;
use crate::operator::cluster::cache::{CacheEvent, ObjectChange, RecoveredChange, ServedChange};
use crate::operator::schedule::{KindId, ParentKey, Scheduler};

impl Scheduler {
    /// Re-queues the parents `change` concerns.
    pub(crate) fn dispatch(&self, change: &CacheEvent) {
        match change {
            CacheEvent::Object(change) => self.object_changed(change),
            CacheEvent::Served(change) => self.served_changed(change),
            CacheEvent::Recovered(change) => self.recovered(change),
        }
    }

    /// A watch of a parent kind is back after it failed: every parent it
    /// holds is passed now, not after its failure backoff.
    fn recovered(&self, change: &RecoveredChange) {
        self.pass_now(&change.kind, &change.objects);
    }

    /// Queues each of `parents` (namespace, name) of `kind` now.
    pub(crate) fn pass_now(&self, kind: &KindRef, parents: &[(String, String)]) {
        let queues = self.queues.read().expect("queues lock");
        for (index, q) in queues.iter().enumerate() {
            if q.kind != *kind {
                continue;
            }
            for (namespace, name) in parents {
                q.queue.add(ParentKey {
                    kind: KindId(index),
                    namespace: namespace.clone(),
                    name: name.clone(),
                });
            }
        }
    }

    /// An object changed: the parent itself when its own object changed
    /// (not just its status), and every parent that read it.
    fn object_changed(&self, change: &ObjectChange) {
        if parent_changed(change) || status_changed(change) {
            let queues = self.queues.read().expect("queues lock");
            for (index, q) in queues.iter().enumerate() {
                if q.kind == change.kind {
                    q.queue.add(ParentKey {
                        kind: KindId(index),
                        namespace: change.namespace.clone(),
                        name: change.name.clone(),
                    });
                }
            }
        }
        let controllers = [change.old.as_ref(), change.new.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|o| controller_uid(o));
        let deps = self.deps.lock().expect("deps lock");
        let mut affected = deps.affected(
            &change.kind,
            &change.namespace,
            &change.name,
            ObjectChange::labels(change.old.as_ref()).as_ref(),
            ObjectChange::labels(change.new.as_ref()).as_ref(),
        );
        affected.extend(deps.controlling(&change.kind, controllers));
        drop(deps);
        for key in affected {
            self.add(key);
        }
    }

    /// A kind stopped or started being served where one watch looks: every
    /// parent that read anything of it there, found or not.
    fn served_changed(&self, change: &ServedChange) {
        let affected = self
            .deps
            .lock()
            .expect("deps lock")
            .reading_kind(&change.kind, &change.namespace);
        tracing::debug!(kind = %change.kind, namespace = change.namespace, served = change.served, parents = affected.len(), "re-queueing the readers of a kind whose served state flipped");
        for key in affected {
            self.add(key);
        }
    }
}

/// A parent's change that needs a pass: created, deleted, or
/// [`needs_pass`].
fn parent_changed(change: &ObjectChange) -> bool {
    let (Some(old), Some(new)) = (&change.old, &change.new) else {
        return true;
    };
    needs_pass(old, new)
}

/// A change of its status that the host did not make: the host's own
/// writes enter the cache before their watch events, which then compare
/// equal. A status changed by another writer (or a second host) is put
/// back by the pass it triggers, if the host owns what changed; a pass
/// that finds its own part unchanged writes nothing.
fn status_changed(change: &ObjectChange) -> bool {
    match (&change.old, &change.new) {
        (Some(old), Some(new)) => old["status"] != new["status"],
        _ => false,
    }
}

/// Whether `new`, a later version of the parent `old`, needs a pass: a
/// change of spec (generation), labels, annotations, deletion or identity;
/// not of its status.
pub(crate) fn needs_pass(old: &Value, new: &Value) -> bool {
    let (o, n) = (&old["metadata"], &new["metadata"]);
    [
        "generation",
        "labels",
        "annotations",
        "deletionTimestamp",
        "uid",
    ]
    .iter()
    .any(|f| o[*f] != n[*f])
}
