//! The ring's coordinator: the member holding the Lease
//! `<ring>-coordinator` watches the member Leases and the metadata of every
//! served kind's parents, and keeps each parent labelled with the member
//! rendezvous hashing names among those serving: the live members of the
//! view it publishes, which a member joins once it acknowledged one
//! ([`super::acks`]). A parent whose owner is live is moved
//! by its owner: [`DRAIN`] names the new owner, and the old one hands it
//! over after its pass in flight ([`super::Member::hand_over`]). An
//! unlabelled parent, or one whose owner's Lease lapsed (its writes fenced
//! off since), is assigned at once. Every label write has the
//! parent's resourceVersion as precondition, so a coordinator acting on a
//! stale view writes nothing. Where the API server selects, it labels
//! nothing: it publishes the members owning the slots, a view at a time
//! ([`super::view`]), on its own Lease, with that Lease's resourceVersion
//! as precondition.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{
    Api, DeleteParams, DynamicObject, PartialObjectMeta, Patch, PatchParams, Preconditions,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinSet;

use super::acks::Views;
use super::view::{self, View};
use super::{DRAIN, FIELD_MANAGER, MEMBER, assignment, members};
use crate::operator::cluster::decode::{self, Decoded};
use crate::operator::cluster::watching;
use crate::operator::replica::leadership::{LeaderConfig, Leadership};
use crate::operator::replica::metrics::{MemberLabel, Metrics};

/// How often the coordinator looks again without a change (a member's
/// Lease lapses without one).
const TICK: Duration = Duration::from_secs(1);

/// What a failed watch of the coordinator's is said as.
const WATCH: &str = "ring: a coordinator watch";

/// How long a lapsed member's Lease is kept before it is deleted.
const FORGET_AFTER: jiff::SignedDuration = jiff::SignedDuration::from_secs(60);

/// What the coordinator writes on a parent's labels (a `null` removes
/// one): it is assigned among the `staying` members (the `live` ones but
/// those leaving).
pub fn decide(
    member: Option<&str>,
    drain: Option<&str>,
    live: &[String],
    staying: &[String],
    namespace: &str,
    name: &str,
) -> Option<Value> {
    let desired = assignment::owner(staying, namespace, name)?;
    match member {
        None => Some(json!({MEMBER: desired, DRAIN: null})),
        Some(m) if m == desired => drain.map(|_| json!({DRAIN: null})),
        Some(m) if !live.iter().any(|l| l == m) => Some(json!({MEMBER: desired, DRAIN: null})),
        Some(_) if drain == Some(desired) => None,
        Some(_) => Some(json!({DRAIN: desired})),
    }
}

/// The parent kinds the registry holds now (a kind registered later is
/// assigned from then).
pub type ParentKinds = Arc<dyn Fn() -> Vec<ApiResource> + Send + Sync>;

/// What the coordinator keeps assigned: the parents of the kinds
/// `kinds` in the namespaces `scopes` (`""`: all), by their labels; or,
/// where the API server selects, the slots.
pub enum Assigning {
    Labels {
        kinds: ParentKinds,
        scopes: Vec<String>,
    },
    Slots,
}

/// Competes for the coordinator Lease of the ring `leader.lease` and
/// keeps `assigning` assigned while holding it; until `stop` fires, when
/// it releases the Lease (held or competed for), so another member takes
/// it at once and no request of its is cut off by the exit.
pub async fn run(
    client: Client,
    assigning: Assigning,
    leader: LeaderConfig,
    metrics: Arc<Metrics>,
    mut stop: oneshot::Receiver<()>,
) {
    let lease = format!("{}-coordinator", leader.lease);
    let ring = leader.lease.clone();
    let namespace = leader.namespace.clone();
    // The coordinator Lease's own fence: the label writes go through the
    // member's client, fenced by the member's Lease.
    let config = LeaderConfig {
        fence: LeaderConfig::fence(leader.duration),
        ..leader
    };
    loop {
        let competing = tokio::select! {
            competing = Leadership::compete(config.clone(), lease.clone()) => competing,
            _ = &mut stop => return,
        };
        let mut held = match competing {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(error = %e, "ring: the coordinator Lease could not be competed for; trying again");
                tokio::select! {
                    () = tokio::time::sleep(config.duration) => continue,
                    _ = &mut stop => return,
                }
            }
        };
        tokio::select! {
            got = held.held() => {
                if let Err(e) = got {
                    tracing::warn!(error = %e, "ring: the coordinator Lease was not had; trying again");
                    continue;
                }
            }
            _ = &mut stop => {
                held.release().await;
                return;
            }
        }
        tracing::info!(ring = %ring, "ring: coordinating");
        tokio::select! {
            () = coordinate(&client, &assigning, &ring, &namespace, &metrics) => {}
            lost = held.lost() => {
                tracing::warn!(error = %lost, "ring: no longer coordinating");
                continue;
            }
            _ = &mut stop => {}
        }
        held.release().await;
        return;
    }
}

/// One parent kind's metadata, as watched by the coordinator (a store per
/// namespace watched).
struct Parents {
    resource: ApiResource,
    stores: Vec<Store<Decoded<PartialObjectMeta<DynamicObject>>>>,
}

/// Keeps every parent (or slot) assigned; returns only if the member
/// Leases cannot be listed.
async fn coordinate(
    client: &Client,
    assigning: &Assigning,
    ring: &str,
    namespace: &str,
    metrics: &Metrics,
) {
    let wake = Arc::new(Notify::new());
    let mut watches = JoinSet::new();
    let leases = decode::leases(client, namespace);
    let (lease_store, writer) = reflector::store();
    watches.spawn(watching::drive(
        watching::reflect(writer, leases.clone(), watcher::Config::default()),
        wake.clone(),
        WATCH,
    ));
    if lease_store.wait_until_ready().await.is_err() {
        return;
    }
    let (kinds, scopes) = match assigning {
        Assigning::Labels { kinds, scopes } => (kinds, scopes),
        Assigning::Slots => {
            return publish_views(&leases, &lease_store, &wake, ring, metrics).await;
        }
    };
    let mut parents: BTreeMap<String, Parents> = BTreeMap::new();
    // The resourceVersion each parent was last written from: not written
    // again until the watch shows it changed.
    let mut written: HashMap<(String, String, String), String> = HashMap::new();
    let mut seen = Seen::default();
    let mut views = Views::default();
    loop {
        for resource in kinds() {
            let key = format!("{}/{}", resource.api_version, resource.plural);
            if parents.contains_key(&key) {
                continue;
            }
            // Where the kind's parents are: the namespaces watched, or
            // the cluster for a cluster-scoped kind.
            let gvk = GroupVersionKind::gvk(&resource.group, &resource.version, &resource.kind);
            let namespaced = match kube::discovery::pinned_kind(client, &gvk).await {
                Ok((_, caps)) => caps.scope == Scope::Namespaced,
                Err(e) => {
                    tracing::warn!(kind = %resource.kind, error = %e, "ring: a served kind could not be resolved; tried again");
                    continue;
                }
            };
            let cluster = [String::new()];
            let mut stores = Vec::new();
            for scope in if namespaced { scopes } else { &cluster[..] } {
                let writer = reflector::store::Writer::new(resource.clone());
                stores.push(writer.as_reader());
                // Metadata only, without managedFields: the labels are
                // all it reads (at 3,000 parents the coordinator held
                // twice a member's RSS with them), each parent decoded
                // bounded (one nested too deep is still assigned).
                let api = decode::metadata_api(client, &resource, scope);
                watches.spawn(watching::drive(
                    watching::reflect(writer, api, watcher::Config::default()),
                    wake.clone(),
                    WATCH,
                ));
            }
            parents.insert(key, Parents { resource, stores });
        }
        let now = Timestamp::now();
        let leases_now: Vec<Lease> = lease_store.state().iter().map(|l| (***l).clone()).collect();
        let Membership { live, staying } = membership(ring, &leases_now, now, &mut seen, metrics);
        // Given parents: the members serving; a parent of a member that
        // is not (lapsed, or no longer acknowledging) is assigned at once.
        let live = views
            .serving(&leases, ring, &leases_now, &live, metrics)
            .await;
        let staying: Vec<String> = live
            .iter()
            .filter(|m| staying.contains(m))
            .cloned()
            .collect();
        let mut unowned: i64 = 0;
        let mut writes = Vec::new();
        for kind in parents.values() {
            for object in kind.stores.iter().flat_map(Store::state) {
                let md = &object.metadata;
                let (Some(name), Some(rv)) = (md.name.clone(), md.resource_version.clone()) else {
                    continue;
                };
                let ns = md.namespace.clone().unwrap_or_default();
                let labels = md.labels.as_ref();
                let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
                if label(MEMBER).is_none_or(|m| !live.iter().any(|l| l == m)) {
                    unowned += 1;
                }
                let Some(change) = decide(label(MEMBER), label(DRAIN), &live, &staying, &ns, &name)
                else {
                    continue;
                };
                let key = (kind.resource.plural.clone(), ns.clone(), name.clone());
                if written.get(&key) == Some(&rv) {
                    continue;
                }
                written.insert(key.clone(), rv.clone());
                let resource = &kind.resource;
                writes.push(async move {
                    relabel(client, resource, &ns, &name, &rv, &change)
                        .await
                        .map_err(|e| (key, e))
                });
            }
        }
        metrics.ring_parents_unowned.set(unowned);
        let failed: Vec<_> = futures::stream::iter(writes)
            .buffer_unordered(16)
            .filter_map(|w| async move { w.err() })
            .collect()
            .await;
        // Tried again on the next round, changed or not; said once a round.
        if let Some((_, first)) = failed.first() {
            tracing::warn!(parents = failed.len(), error = %first, "ring: parents could not be relabelled; tried again");
        }
        for (key, _) in failed {
            written.remove(&key);
        }
        forget_lapsed(&leases, ring, &leases_now, &live, now).await;
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(TICK) => {}
        }
    }
}

/// Publishes the next view of the slots whenever every live member
/// acknowledged the last and the members staying changed (or a move
/// settles).
async fn publish_views(
    leases: &Api<Decoded<Lease>>,
    store: &Store<Decoded<Lease>>,
    wake: &Notify,
    ring: &str,
    metrics: &Metrics,
) {
    let name = format!("{ring}-coordinator");
    let mut seen = Seen::default();
    loop {
        let now = Timestamp::now();
        let all: Vec<Lease> = store.state().iter().map(|l| (***l).clone()).collect();
        let Membership { live, staying } = membership(ring, &all, now, &mut seen, metrics);
        let lease = |n: &str| all.iter().find(|l| l.metadata.name.as_deref() == Some(n));
        if let Some(own) = lease(&name) {
            let acked: BTreeMap<String, u64> = live
                .iter()
                .filter_map(|m| {
                    let epoch = view::acked(lease(&members::lease_name(ring, m))?)?;
                    Some((m.clone(), epoch))
                })
                .collect();
            let current = View::read(own);
            let waiting = live
                .iter()
                .filter(|m| acked.get(*m) != Some(&current.epoch));
            members_by_state(metrics, current.members.len(), waiting.count());
            if let Some(next) = current.next(&live, &staying, &acked) {
                publish(leases, own, &next).await;
            }
        }
        forget_lapsed(leases, ring, &all, &live, now).await;
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(TICK) => {}
        }
    }
}

/// The live members, and those staying (live, not leaving).
struct Membership {
    live: Vec<String>,
    staying: Vec<String>,
}

/// What the coordinator last said of the members: live, leaving, and the
/// Leases named like members that the ring did not write.
#[derive(Default)]
struct Seen {
    live: Vec<String>,
    leaving: Vec<String>,
    refused: Vec<String>,
}

/// The members of the ring `ring` by `leases` at `now`; said when they
/// differ from `seen`, which they become; the refused ones counted.
fn membership(
    ring: &str,
    leases: &[Lease],
    now: Timestamp,
    seen: &mut Seen,
    metrics: &Metrics,
) -> Membership {
    let live = members::live(ring, leases, now);
    let leaving = members::leaving(ring, leases, &live);
    let refused = members::refused(ring, leases);
    if (&live, &leaving) != (&seen.live, &seen.leaving) {
        tracing::info!(members = ?live, leaving = ?leaving, "ring: members");
        seen.live = live.clone();
        seen.leaving = leaving.clone();
    }
    if refused != seen.refused {
        if !refused.is_empty() {
            tracing::warn!(leases = ?refused, "ring: Leases named like members that the ring did not write (no ring label set by its field manager): no member, given no parent");
        }
        seen.refused = refused.clone();
    }
    metrics
        .ring_members
        .get_or_create(&MemberLabel {
            state: "refused".to_owned(),
        })
        .set(i64::try_from(refused.len()).unwrap_or(i64::MAX));
    let staying = live
        .iter()
        .filter(|m| !leaving.contains(m))
        .cloned()
        .collect();
    Membership { live, staying }
}

/// Merges `metadata` into the object `name` of `api` if it is still at
/// resourceVersion `rv`: `Ok(false)` when it changed or went since (the
/// watch brings what became of it, decided again).
async fn patch_if_unchanged<K>(
    api: &Api<K>,
    name: &str,
    rv: &str,
    mut metadata: Value,
) -> Result<bool, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    metadata["resourceVersion"] = json!(rv);
    let patch = json!({ "metadata": metadata });
    match api
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Publishes `next` on the coordinator Lease `own`, unless it changed
/// since it was read (the next round reads it again).
pub(super) async fn publish(leases: &Api<Decoded<Lease>>, own: &Lease, next: &View) {
    let name = own.metadata.name.as_deref().unwrap_or_default();
    let rv = own.metadata.resource_version.as_deref().unwrap_or_default();
    let annotations = json!({ "annotations": next.annotations() });
    match patch_if_unchanged(leases, name, rv, annotations).await {
        Ok(true) => {
            tracing::info!(epoch = next.epoch, members = ?next.members, next = ?next.next, "ring: view published")
        }
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(error = %e, "ring: the next view could not be published; tried again")
        }
    }
}

/// Counts the members serving and those live but waiting to.
pub(super) fn members_by_state(metrics: &Metrics, serving: usize, waiting: usize) {
    for (state, n) in [("serving", serving), ("unacknowledged", waiting)] {
        metrics
            .ring_members
            .get_or_create(&MemberLabel {
                state: state.to_owned(),
            })
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

/// Writes `change` on the labels of a parent, if it is still at `rv`; a
/// parent changed since or gone is not an error (the watch brings what
/// became of it, decided again).
async fn relabel(
    client: &Client,
    resource: &ApiResource,
    namespace: &str,
    name: &str,
    rv: &str,
    change: &Value,
) -> Result<(), kube::Error> {
    let api = decode::api(client, resource, namespace);
    if patch_if_unchanged(&api, name, rv, json!({ "labels": change })).await? {
        tracing::debug!(kind = %resource.kind, namespace, name, labels = %change, "ring: relabelled");
    }
    Ok(())
}

/// Deletes the Leases of members lapsed for over [`FORGET_AFTER`].
async fn forget_lapsed(
    leases: &Api<Decoded<Lease>>,
    ring: &str,
    all: &[Lease],
    live: &[String],
    now: Timestamp,
) {
    let prefix = format!("{ring}-member-");
    for lease in all {
        let Some(name) = lease.metadata.name.as_deref() else {
            continue;
        };
        let Some(identity) = name.strip_prefix(&prefix) else {
            continue;
        };
        if live.iter().any(|l| l == identity) {
            continue;
        }
        // Last renewed, else made (a Lease is created before it is held).
        let touched = lease
            .spec
            .as_ref()
            .and_then(|s| s.renew_time.as_ref())
            .map(|t| t.0)
            .or(lease.metadata.creation_timestamp.as_ref().map(|t| t.0));
        if touched.is_none_or(|t| now.duration_since(t) < FORGET_AFTER) {
            continue;
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: lease.metadata.resource_version.clone(),
                uid: None,
            }),
            ..DeleteParams::default()
        };
        if leases.delete(name, &params).await.is_ok() {
            tracing::info!(member = identity, "ring: a lapsed member's Lease deleted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    /// A parent the members a, b and c hash to `owner`, and another one.
    fn parent_of(members: &[String], owner: &str) -> String {
        (0..)
            .map(|i| format!("p-{i}"))
            .find(|p| assignment::owner(members, "ns", p) == Some(owner))
            .unwrap()
    }

    #[test]
    fn an_unassigned_parent_is_assigned_to_its_owner() {
        let abc = live(&["a", "b", "c"]);
        let p = parent_of(&abc, "b");
        assert_eq!(
            decide(None, None, &abc, &abc, "ns", &p),
            Some(json!({MEMBER: "b", DRAIN: null}))
        );
        // A drain left behind is cleared with it.
        assert_eq!(
            decide(None, Some("a"), &abc, &abc, "ns", &p),
            Some(json!({MEMBER: "b", DRAIN: null}))
        );
    }

    #[test]
    fn a_live_owner_is_asked_to_drain_and_then_waited_for() {
        let abc = live(&["a", "b", "c"]);
        let p = parent_of(&abc, "b");
        // Assigned to a, which is live: asked to hand it over to b, then
        // left alone until a does; asked again if the target changed.
        assert_eq!(
            decide(Some("a"), None, &abc, &abc, "ns", &p),
            Some(json!({DRAIN: "b"}))
        );
        assert_eq!(decide(Some("a"), Some("b"), &abc, &abc, "ns", &p), None);
        assert_eq!(
            decide(Some("a"), Some("c"), &abc, &abc, "ns", &p),
            Some(json!({DRAIN: "b"}))
        );
        // Its owner already: nothing, or the drain withdrawn.
        assert_eq!(decide(Some("b"), None, &abc, &abc, "ns", &p), None);
        assert_eq!(
            decide(Some("b"), Some("b"), &abc, &abc, "ns", &p),
            Some(json!({DRAIN: null}))
        );
    }

    #[test]
    fn a_dead_owners_parents_are_assigned_at_once() {
        let bc = live(&["b", "c"]);
        let p = parent_of(&bc, "c");
        for drain in [None, Some("a")] {
            assert_eq!(
                decide(Some("a"), drain, &bc, &bc, "ns", &p),
                Some(json!({MEMBER: "c", DRAIN: null}))
            );
        }
    }

    #[test]
    fn a_leaving_member_is_assigned_nothing_and_hands_over_its_own() {
        let abc = live(&["a", "b", "c"]);
        let ab = live(&["a", "b"]);
        // A parent of c's, c leaving: handed over to its owner among a and
        // b; a new parent never goes to c.
        let p = parent_of(&abc, "c");
        let to = assignment::owner(&ab, "ns", &p).unwrap();
        assert_eq!(
            decide(Some("c"), None, &abc, &ab, "ns", &p),
            Some(json!({DRAIN: to}))
        );
        assert_eq!(
            decide(None, None, &abc, &ab, "ns", &p),
            Some(json!({MEMBER: to, DRAIN: null}))
        );
    }

    #[test]
    fn nothing_is_assigned_without_a_live_member() {
        assert_eq!(decide(None, None, &[], &[], "ns", "p"), None);
        assert_eq!(decide(Some("a"), None, &[], &[], "ns", "p"), None);
    }
}
