//! Dispatch: a change a watch reported becomes passes of the parents it
//! concerns: the parent itself when its own object changed (not only its
//! status), and every parent whose last pass read what changed.

use crate::operator::cluster::cache::{Change, ObjectChange, ServedChange};
use crate::operator::schedule::{KindId, ParentKey, Scheduler};

impl Scheduler {
    /// Re-queues the parents `change` concerns.
    pub fn dispatch(&self, change: &Change) {
        match change {
            Change::Object(change) => self.object_changed(change),
            Change::Served(change) => self.served_changed(change),
        }
    }

    /// An object changed: the parent itself when its own object changed
    /// (not just its status), and every parent that read it.
    fn object_changed(&self, change: &ObjectChange) {
        if parent_changed(change) {
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
        let affected = self.deps.lock().expect("deps lock").affected(
            &change.kind,
            &change.namespace,
            &change.name,
            ObjectChange::labels(change.old.as_ref()).as_ref(),
            ObjectChange::labels(change.new.as_ref()).as_ref(),
        );
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

/// A parent's change that needs a pass: created, deleted, or a change of
/// spec (generation), labels, annotations or deletion; not its status.
fn parent_changed(change: &ObjectChange) -> bool {
    let (Some(old), Some(new)) = (&change.old, &change.new) else {
        return true;
    };
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
