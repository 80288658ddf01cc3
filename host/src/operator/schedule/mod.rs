//! Scheduling: from a change in the cluster to the parents that need a
//! pass. The scheduler owns a work queue per served kind and the
//! dependency index that maps what changed to the parents that read it.

pub mod deps;
pub mod dispatch;
pub mod filed;
pub mod parents;
pub mod queue;
pub mod selections;
pub mod write_bound;

use std::collections::BTreeSet;
use std::sync::{Mutex, RwLock};

use reconciler_conventions::kind::KindRef;
use serde_json::Value;

use crate::facts::{Cached, Dependency};
use deps::DependencyIndex;
use queue::{QueueConfig, WorkQueue};

/// A served kind's place in the scheduler (and in the registry of served
/// kinds): kinds are only ever appended, so an id stays valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindId(pub usize);

/// A parent object: which served kind, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParentKey {
    pub kind: KindId,
    pub namespace: String,
    pub name: String,
}

impl ParentKey {
    /// The key of `object`, a parent of kind `kind`.
    pub fn of(kind: KindId, object: &Value) -> Self {
        let md = &object["metadata"];
        ParentKey {
            kind,
            namespace: md["namespace"].as_str().unwrap_or_default().to_owned(),
            name: md["name"].as_str().unwrap_or_default().to_owned(),
        }
    }

    /// The key of a cached parent of kind `kind`, read without parsing it.
    pub(crate) fn of_cached(kind: KindId, object: &Cached) -> Self {
        ParentKey {
            kind,
            namespace: object.namespace().to_owned(),
            name: object.name().to_owned(),
        }
    }
}

/// One served kind's queue.
struct KindQueue {
    kind: KindRef,
    queue: WorkQueue<ParentKey>,
}

/// The work queues of every served kind and the dependency index.
#[derive(Default)]
pub struct Scheduler {
    queues: RwLock<Vec<KindQueue>>,
    deps: Mutex<DependencyIndex<ParentKey>>,
}

impl Scheduler {
    /// Adds a queue for a newly served kind; returns its id.
    pub fn add_kind(&self, kind: KindRef) -> KindId {
        let mut queues = self.queues.write().expect("queues lock");
        queues.push(KindQueue {
            kind,
            queue: WorkQueue::new(QueueConfig::default()),
        });
        KindId(queues.len() - 1)
    }

    /// The queue of kind `id` (a clone shares the queue).
    pub fn queue(&self, id: KindId) -> WorkQueue<ParentKey> {
        self.queues.read().expect("queues lock")[id.0].queue.clone()
    }

    /// Asks for a pass of `key`.
    pub fn add(&self, key: ParentKey) {
        self.queue(key.kind).add(key);
    }

    /// Records what `key`'s pass read, in place of what its last pass
    /// read.
    pub(crate) fn record_reads(&self, key: &ParentKey, reads: BTreeSet<Dependency>) {
        self.deps.lock().expect("deps lock").replace(key, reads);
    }

    /// Adds what a second evaluation of `key`'s pass read to its reads.
    pub(crate) fn add_reads(&self, key: &ParentKey, reads: BTreeSet<Dependency>) {
        self.deps.lock().expect("deps lock").extend(key, reads);
    }

    /// Forgets what `key`'s passes read (its parent is gone).
    pub(crate) fn forget_reads(&self, key: &ParentKey) {
        self.deps.lock().expect("deps lock").remove(key);
    }

    /// How many entries the dependency index holds.
    pub(crate) fn dependency_entries(&self) -> usize {
        self.deps.lock().expect("deps lock").entries()
    }

    /// Stops handing out keys, on every queue.
    pub fn shutdown(&self) {
        for q in self.queues.read().expect("queues lock").iter() {
            q.queue.shutdown();
        }
    }
}
