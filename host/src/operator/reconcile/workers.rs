//! Pass workers: each takes a key from its kind's queue, runs the pass,
//! counts the pass against the serving module's probation, and hands the
//! key back to the queue with how the pass ended.

use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use crate::operator::kinds::Registry;
use crate::operator::kinds::probation;
use crate::operator::reconcile;
use crate::operator::replica::liveness::Liveness;
use crate::operator::schedule::KindId;

/// The pass workers of every served kind.
pub struct Workers {
    handles: Mutex<Vec<JoinHandle<()>>>,
    liveness: Arc<Liveness>,
}

impl Workers {
    /// Workers marking each pass they end on `liveness`.
    pub fn new(liveness: Arc<Liveness>) -> Self {
        Workers {
            handles: Mutex::new(Vec::new()),
            liveness,
        }
    }

    /// Spawns `concurrency` workers (at least one) for kind `id`.
    pub fn spawn(&self, registry: &Arc<Registry>, id: KindId, concurrency: usize) {
        let mut handles = self.handles.lock().expect("workers lock");
        for _ in 0..concurrency.max(1) {
            let registry = registry.clone();
            let liveness = self.liveness.clone();
            handles.push(tokio::spawn(async move {
                let queue = registry.scheduler().queue(id);
                while let Some(key) = queue.next().await {
                    let pass = reconcile::run(&registry, &key).await;
                    if let Some((module, blamed)) = &pass.evaluated {
                        probation::record(&registry, id, module, *blamed);
                    }
                    queue.done(&key, pass.done);
                    liveness.progressed();
                }
            }));
        }
    }

    /// Waits for every worker to finish (after the queues shut down: the
    /// passes in flight finish, status and Events included).
    pub async fn join(&self) {
        let handles = std::mem::take(&mut *self.handles.lock().expect("workers lock"));
        for handle in handles {
            let _ = handle.await;
        }
    }
}
