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

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::Client;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use serde_json::json;
use tokio::sync::Notify;

use super::view::{self, View};
use super::{FIELD_MANAGER, members};
use crate::operator::cluster::decode::{self, Decoded};
use crate::operator::cluster::watching;
use crate::operator::replica::metrics::Metrics;

/// How often a member looks again without a change (its acknowledgement
/// may have failed, or its Lease been made anew).
const TICK: Duration = Duration::from_secs(1);

/// A member's own Lease and its coordinator's, as a watch of the Leases in
/// the ring's namespace keeps them: what the coordinator publishes, and the
/// member's acknowledgements. Shared by [`follow`] and, where the API server
/// selects, `passing::run`.
pub(super) struct OwnLease {
    api: Api<Decoded<Lease>>,
    store: Store<Decoded<Lease>>,
    wake: Arc<Notify>,
    watching: tokio::task::JoinHandle<()>,
    own: String,
    coordinator: String,
    /// An acknowledgement failed and was said; said again only after one
    /// succeeded.
    warned: bool,
}

impl OwnLease {
    /// Watches the Leases of member `identity` of `ring` in `namespace`
    /// with `client` (the member's, fenced by its Lease).
    pub(super) fn watch(client: &Client, ring: &str, namespace: &str, identity: &str) -> Self {
        let api = decode::leases(client, namespace);
        let (store, writer) = reflector::store();
        let wake = Arc::new(Notify::new());
        let watching = tokio::spawn(watching::drive(
            watching::reflect(writer, api.clone(), watcher::Config::default()),
            wake.clone(),
            "ring: a member's watch of its Lease",
        ));
        OwnLease {
            api,
            store,
            wake,
            watching,
            own: members::lease_name(ring, identity),
            coordinator: format!("{ring}-coordinator"),
            warned: false,
        }
    }

    /// The view the coordinator publishes, if its Lease is there.
    pub(super) fn published(&self) -> Option<View> {
        lookup(&self.store, &self.coordinator).map(|l| View::read(&l))
    }

    /// Acknowledges `epoch` on the member's Lease, unless it does already
    /// or is not there yet (made anew after it lapsed: acknowledged again).
    pub(super) async fn acknowledge(&mut self, epoch: u64) {
        let Some(own) = lookup(&self.store, &self.own) else {
            return;
        };
        if view::acked(&own) == Some(epoch) {
            return;
        }
        let ack = json!({"metadata": {"annotations": {view::ACKED: epoch.to_string()}}});
        match self
            .api
            .patch(
                &self.own,
                &PatchParams::apply(FIELD_MANAGER),
                &Patch::Merge(&ack),
            )
            .await
        {
            Ok(_) => self.warned = false,
            Err(e) if !self.warned => {
                self.warned = true;
                tracing::warn!(epoch, error = %e, "ring: the view could not be acknowledged; tried again");
            }
            Err(_) => {}
        }
    }

    /// Waits for a change of the Leases, or [`TICK`]; false once the watch
    /// ended.
    pub(super) async fn changed(&self) -> bool {
        tokio::select! {
            () = self.wake.notified() => {}
            () = tokio::time::sleep(TICK) => {}
        }
        !self.watching.is_finished()
    }
}

/// The member `identity` of the ring `ring` (Leases in `namespace`), with
/// `client` (its own, fenced by its Lease): acknowledges every view the
/// coordinator publishes (epoch 0 before the first), until the task is
/// dropped.
pub async fn follow(client: Client, ring: String, namespace: String, identity: String) {
    let mut lease = OwnLease::watch(&client, &ring, &namespace, &identity);
    loop {
        let epoch = lease.published().map_or(0, |v| v.epoch);
        lease.acknowledge(epoch).await;
        if !lease.changed().await {
            return;
        }
    }
}

/// The Lease `name` in `store`, if any.
fn lookup(store: &Store<Decoded<Lease>>, name: &str) -> Option<Lease> {
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
