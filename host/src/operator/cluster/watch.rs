//! Watches: keep one kind's cache in step with the API server, in one
//! namespace or all, and report every change: to an object, to whether
//! the kind is served there (its CRD deleted, or back), and a fresh listing
//! after a failure (the API server restarted, a watch answered 410).
//!
//! A failed watch restarts after the host's one watch backoff
//! ([`super::watching`]); one whose cache widens what it holds of each
//! object ([`super::projected`]) lists everything again.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::core::ApiResource;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use reconciler_conventions::kind::KindRef;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::operator::cluster::cache::{
    CacheEvent, ObjectCache, ObjectChange, RecoveredChange, ServedChange,
};
use crate::operator::cluster::decode::{self, Decoded};
use crate::operator::cluster::health::WatchProbe;
use crate::operator::cluster::selection::{Selecting, WatchSelector};
use crate::operator::cluster::watching;

/// How long a failed watch must go without an error to count as back.
const RECOVERED_AFTER: Duration = Duration::from_secs(5);

/// What one watch follows: `resource`'s objects in `namespace` ("" for
/// all) that `selecting` selects, read with `client`.
pub struct Watched {
    pub client: Client,
    pub resource: ApiResource,
    pub namespace: String,
    pub selecting: Selecting,
}

/// Runs until the stream ends (it retries with backoff on errors),
/// watching the objects `watched` selects, listing them again whenever
/// its selection changes (what left it leaves the cache).
/// `synced` fires after the first complete listing.
pub async fn run(
    watched: Watched,
    cache: Arc<ObjectCache>,
    changes: mpsc::UnboundedSender<CacheEvent>,
    synced: oneshot::Sender<()>,
    probe: WatchProbe,
) {
    let Watched {
        client,
        resource,
        namespace,
        mut selecting,
    } = watched;
    let open = |selector: WatchSelector| {
        let api: Api<Decoded> = decode::api(&selector.client(&client), &resource, &namespace);
        watching::watch(api, selector.config()).boxed()
    };
    let mut synced = Some(synced);
    let mut relists = cache.projected().relists();
    let mut stream = open(selecting.now());
    // Failing since the last sign of health. A watch resumed after a
    // failure says nothing when nothing changed, so it counts as recovered
    // on its first event, or after [`RECOVERED_AFTER`] without an error
    // (a failing watch retries, and fails, within its longest backoff).
    let mut failed = false;
    let mut listing: Vec<Value> = Vec::new();
    let report = Reporter {
        kind: cache.kind().clone(),
        namespace: &namespace,
        cache: &cache,
        changes: &changes,
        probe: &probe,
    };
    loop {
        let next = tokio::select! {
            () = selecting.changed() => {
                // A fresh listing of the new selection replaces the cache.
                stream = open(selecting.now());
                continue;
            }
            Ok(()) = relists.changed() => {
                // The cache holds more of each object from now on: a fresh
                // listing brings what it held without.
                stream = open(selecting.now());
                continue;
            }
            next = async {
                if failed {
                    tokio::time::timeout(RECOVERED_AFTER, stream.next()).await.ok()
                } else {
                    Some(stream.next().await)
                }
            } => next,
        };
        let Some(next) = next else {
            failed = false;
            report.recovered();
            continue;
        };
        let Some(event) = next else { break };
        if failed && event.is_ok() {
            failed = false;
            report.recovered();
        }
        match &event {
            Ok(Event::InitDone) => probe.synced(),
            Ok(_) => probe.heard(),
            // The kind is not served (any more): the watch works.
            Err(e) if is_not_found(e) => probe.heard(),
            Err(_) => probe.failed(),
        }
        match event {
            Ok(Event::Init) => listing.clear(),
            Ok(Event::InitApply(o)) => listing.push(to_json(o)),
            Ok(Event::InitDone) => {
                let epoch = cache.projected().current().0;
                report.listed(std::mem::take(&mut listing));
                cache.projected().listed(&namespace, epoch);
                if let Some(s) = synced.take() {
                    let _ = s.send(());
                }
            }
            Ok(Event::Apply(o)) => {
                if let Some((new, old)) = cache.apply(to_json(o)) {
                    report.object_changed(old, Some(new));
                }
            }
            Ok(Event::Delete(o)) => {
                let old = cache.delete(&to_json(o));
                if old.is_some() {
                    report.object_changed(old, None);
                }
            }
            Err(e) if is_not_found(&e) => report.not_served(&e, &mut listing),
            Err(e) => {
                failed = true;
                tracing::warn!(kind = %cache.kind(), namespace, error = %e, "watch failed; retrying")
            }
        }
    }
}

/// Where one watch says what it saw: into its cache, the changes' channel, its probe.
struct Reporter<'a> {
    kind: KindRef,
    namespace: &'a str,
    cache: &'a ObjectCache,
    changes: &'a mpsc::UnboundedSender<CacheEvent>,
    probe: &'a WatchProbe,
}

impl Reporter<'_> {
    /// Sends the change of one object (`old` or `new` absent: it came or went).
    fn object_changed(&self, old: Option<Arc<Value>>, new: Option<Arc<Value>>) {
        let o = new
            .as_ref()
            .or(old.as_ref())
            .expect("a change has an object");
        let md = &o["metadata"];
        let change = ObjectChange {
            kind: self.kind.clone(),
            namespace: md["namespace"].as_str().unwrap_or_default().to_owned(),
            name: md["name"].as_str().unwrap_or_default().to_owned(),
            old,
            new,
        };
        let _ = self.changes.send(CacheEvent::Object(change));
    }

    /// Sends that the kind is served here again (`true`) or no longer.
    fn served_changed(&self, served: bool) {
        // Sent after the cache holds the new state: every read of the kind
        // here answers otherwise now, including the reads that found nothing
        // (no object changes for them).
        let _ = self.changes.send(CacheEvent::Served(ServedChange {
            kind: self.kind.clone(),
            namespace: self.namespace.to_owned(),
            served,
        }));
    }

    /// Says the watch is back after a failure and sends every parent it caches.
    fn recovered(&self) {
        // Recovered: every parent the cache holds here is passed now (their
        // passes may have failed while the API server was away, and back off).
        let (cache, namespace) = (self.cache, self.namespace);
        tracing::info!(kind = %cache.kind(), namespace, "the watch is back after a failure");
        self.probe.heard();
        let objects = cache
            .list(namespace, &Default::default())
            .iter()
            .map(|o| {
                let md = &o["metadata"];
                (
                    md["namespace"].as_str().unwrap_or_default().to_owned(),
                    md["name"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let _ = self.changes.send(CacheEvent::Recovered(RecoveredChange {
            kind: self.kind.clone(),
            objects,
        }));
    }

    /// Replaces the cache with a complete `listing`, and sends what changed.
    fn listed(&self, listing: Vec<Value>) {
        let (cache, namespace) = (self.cache, self.namespace);
        let changed = cache.replace(namespace, listing);
        let back = cache.set_served(namespace, true);
        if back {
            tracing::warn!(kind = %cache.kind(), namespace, "the API is served again: reads of the kind resume");
        }
        for (old, new) in changed {
            self.object_changed(old, new);
        }
        if back {
            self.served_changed(true);
        }
    }

    /// The kind is gone (404): drops its objects here and sends it not served.
    fn not_served(&self, e: &watcher::Error, listing: &mut Vec<Value>) {
        // The kind is gone (its CRD deleted): passes that read it
        // fail with not-served, and its stale objects are dropped,
        // until a listing succeeds. The API server deletes the
        // objects first, so their readers may have run already,
        // finding them missing: the flip re-queues every reader.
        let (cache, namespace) = (self.cache, self.namespace);
        let gone = cache.set_served(namespace, false);
        if gone {
            tracing::warn!(kind = %cache.kind(), namespace, error = %e, "the API is no longer served (404): reads of the kind fail until it is served again");
        }
        listing.clear();
        for (old, new) in cache.replace(namespace, Vec::new()) {
            self.object_changed(old, new);
        }
        if gone {
            self.served_changed(false);
        }
    }
}

/// A watch answered 404: the kind is not served (any more).
fn is_not_found(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 404,
        watcher::Error::WatchError(s) => s.code == 404,
        _ => false,
    }
}

/// The object as the cache keeps it; one the host could not read whole
/// is said once per version, by name, with where it failed.
fn to_json(o: Decoded) -> Value {
    if let Some(why) = o.undecodable() {
        let md = kube::Resource::meta(&o);
        tracing::warn!(
            object.namespace = md.namespace.as_deref().unwrap_or_default(),
            object.name = md.name.as_deref().unwrap_or_default(),
            why,
            "an object is not read whole: what lies deeper is left out, and its readers fail"
        );
    }
    o.into_value()
}
