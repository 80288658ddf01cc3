//! The operator's running tasks in groups, stopped in the reverse of the order the groups started in.

use std::future::Future;
use std::pin::Pin;

use tokio::task::JoinHandle;

/// The groups a start brings up, in the order it brings them up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Group {
    /// `/metrics`, `/readyz` and `/healthz`: up first, so a starting
    /// replica answers its probes.
    Endpoints,
    /// The watches keeping the caches, and what queues the parents their
    /// changes concern.
    Caches,
    /// What runs beside the passes once the caches are synced: GuestModules
    /// staged (served by the replica holding the Lease), the ring's
    /// coordinator and its followers.
    Leading,
    /// The passes: the work queues and their workers.
    Passes,
    /// Sampling the queues for liveness, and the resync.
    Background,
}

/// How one task stops: awaited once, when its group stops.
type Stop = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a start registered, and how each of it stops.
#[derive(Default)]
pub(crate) struct Supervisor {
    stops: Vec<(Group, &'static str, Stop)>,
}

impl Supervisor {
    /// Registers `stop`, how `name` of `group` stops.
    pub(crate) fn on_stop(
        &mut self,
        group: Group,
        name: &'static str,
        stop: impl Future<Output = ()> + Send + 'static,
    ) {
        self.stops.push((group, name, Box::pin(stop)));
    }

    /// Registers `task`, stopped by aborting it.
    pub(crate) fn spawned(&mut self, group: Group, name: &'static str, task: JoinHandle<()>) {
        self.on_stop(group, name, async move { task.abort() });
    }

    /// Stops every group, the last started first; within a group, what
    /// was registered last first.
    pub(crate) async fn stop(self) {
        let mut stops = self.stops;
        stops.reverse();
        stops.sort_by_key(|(group, _, _)| std::cmp::Reverse(*group));
        for (group, name, stop) in stops {
            tracing::debug!(?group, name, "stopping");
            stop.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[tokio::test]
    async fn groups_stop_in_reverse_and_within_one_the_last_registered_first() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut supervisor = Supervisor::default();
        for (group, name) in [
            (Group::Endpoints, "http"),
            (Group::Caches, "watches"),
            (Group::Caches, "dispatcher"),
            (Group::Passes, "workers"),
            (Group::Leading, "coordinator"),
            (Group::Background, "resync"),
        ] {
            let order = order.clone();
            supervisor.on_stop(group, name, async move {
                order.lock().unwrap().push(name);
            });
        }
        supervisor.stop().await;
        assert_eq!(
            *order.lock().unwrap(),
            [
                "resync",
                "workers",
                "coordinator",
                "dispatcher",
                "watches",
                "http"
            ]
        );
    }
}
