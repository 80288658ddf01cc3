//! Acknowledgements where the coordinator labels: a member proves it
//! serves by acknowledging, on its own Lease, each view the coordinator
//! publishes ([`follow`], run once its caches synced); the coordinator
//! gives parents only to the members of its view, which a member joins by
//! acknowledging one and leaves when it has not acknowledged within
//! [`view::ACK_BOUND`] ([`Views`]). A Lease with no member behind it
//! (forged, or a process that never came up) is given no parent.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::Client;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::sync::Notify;

use super::view::{self, View};
use super::{FIELD_MANAGER, members};
use crate::operator::cluster::decode::{self, Decoded};
use crate::operator::replica::metrics::Metrics;

/// How often a member looks again without a change (its acknowledgement
/// may have failed, or its Lease been made anew).
const TICK: Duration = Duration::from_secs(1);

/// Acknowledges `epoch` on the member Lease `own`.
pub(super) async fn acknowledge(
    leases: &Api<Decoded<Lease>>,
    own: &str,
    epoch: u64,
) -> Result<(), kube::Error> {
    let ack = json!({"metadata": {"annotations": {view::ACKED: epoch.to_string()}}});
    leases
        .patch(own, &PatchParams::apply(FIELD_MANAGER), &Patch::Merge(&ack))
        .await
        .map(drop)
}

/// The member `identity` of the ring `ring` (Leases in `namespace`), with
/// `client` (its own, fenced by its Lease): acknowledges every view the
/// coordinator publishes, until the task is dropped.
pub async fn follow(client: Client, ring: String, namespace: String, identity: String) {
    let leases = decode::leases(&client, &namespace);
    let (store, writer) = reflector::store();
    let wake = Arc::new(Notify::new());
    let watching = {
        let wake = wake.clone();
        let stream =
            reflector::reflector(writer, watcher(leases.clone(), watcher::Config::default()))
                .default_backoff();
        tokio::spawn(async move {
            let mut stream = stream.boxed();
            while stream.next().await.is_some() {
                wake.notify_one();
            }
        })
    };
    let coordinator = format!("{ring}-coordinator");
    let own = members::lease_name(&ring, &identity);
    let mut warned = false;
    loop {
        let published = lookup(&store, &coordinator).map_or(0, |l| View::read(&l).epoch);
        let acked = lookup(&store, &own).as_ref().and_then(view::acked);
        if lookup(&store, &own).is_some() && acked != Some(published) {
            match acknowledge(&leases, &own, published).await {
                Ok(()) => warned = false,
                Err(e) if !warned => {
                    warned = true;
                    tracing::warn!(epoch = published, error = %e, "ring: the view could not be acknowledged; tried again");
                }
                Err(_) => {}
            }
        }
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(TICK) => {}
        }
        if watching.is_finished() {
            return;
        }
    }
}

/// The Lease `name` in `store`, if any.
pub(super) fn lookup(store: &Store<Decoded<Lease>>, name: &str) -> Option<Lease> {
    store
        .state()
        .iter()
        .find(|l| l.metadata.name.as_deref() == Some(name))
        .map(|l| (***l).clone())
}

/// The coordinator's side: the view it last saw published, since when.
#[derive(Default)]
pub(super) struct Views {
    seen: Option<(u64, Instant)>,
}

impl Views {
    /// The members given parents now (the published view's), among the
    /// `live` ones by `leases`; publishes the next view on the coordinator
    /// Lease when the members acknowledging differ from it. Counts the
    /// members by state.
    pub(super) async fn serving(
        &mut self,
        api: &Api<Decoded<Lease>>,
        ring: &str,
        leases: &[Lease],
        live: &[String],
        metrics: &Metrics,
    ) -> Vec<String> {
        let lease = |n: &str| {
            leases
                .iter()
                .find(|l| l.metadata.name.as_deref() == Some(n))
        };
        let Some(own) = lease(&format!("{ring}-coordinator")) else {
            return Vec::new();
        };
        let current = View::read(own);
        let since = match self.seen {
            Some((epoch, at)) if epoch == current.epoch => at,
            _ => {
                let now = Instant::now();
                self.seen = Some((current.epoch, now));
                now
            }
        };
        let acked: BTreeMap<String, u64> = live
            .iter()
            .filter_map(|m| {
                Some((
                    m.clone(),
                    view::acked(lease(&members::lease_name(ring, m))?)?,
                ))
            })
            .collect();
        if let Some(next) = current.serving_next(live, &acked, since.elapsed() >= view::ACK_BOUND) {
            super::coordinator::publish(api, own, &next).await;
        }
        let waiting = live.iter().filter(|m| !current.members.contains(m)).count();
        let serving: Vec<String> = current
            .members
            .into_iter()
            .filter(|m| live.contains(m))
            .collect();
        super::coordinator::members_by_state(metrics, serving.len(), waiting);
        serving
    }
}
