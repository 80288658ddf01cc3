//! Watches: keep one kind's cache in step with the API server, in one
//! namespace or all, and report every change: to an object, and to whether
//! the kind is served there (its CRD deleted, or back).

use std::sync::Arc;

use futures::StreamExt;
use kube::Api;
use kube::api::DynamicObject;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::operator::cluster::cache::{Change, ObjectCache, ObjectChange, ServedChange};

/// Runs until the stream ends (it retries with backoff on errors).
/// `synced` fires after the first complete listing.
pub async fn run(
    api: Api<DynamicObject>,
    cache: Arc<ObjectCache>,
    namespace: String,
    changes: mpsc::UnboundedSender<Change>,
    synced: oneshot::Sender<()>,
) {
    let mut synced = Some(synced);
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut listing: Vec<Value> = Vec::new();
    let kind = cache.kind().clone();
    let send = |old: Option<Arc<Value>>, new: Option<Arc<Value>>| {
        let o = new
            .as_ref()
            .or(old.as_ref())
            .expect("a change has an object");
        let md = &o["metadata"];
        let change = ObjectChange {
            kind: kind.clone(),
            namespace: md["namespace"].as_str().unwrap_or_default().to_owned(),
            name: md["name"].as_str().unwrap_or_default().to_owned(),
            old,
            new,
        };
        let _ = changes.send(Change::Object(change));
    };
    // Sent after the cache holds the new state: every read of the kind
    // here answers otherwise now, including the reads that found nothing
    // (no object changes for them).
    let flipped = |served: bool| {
        let _ = changes.send(Change::Served(ServedChange {
            kind: kind.clone(),
            namespace: namespace.clone(),
            served,
        }));
    };
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => listing.clear(),
            Ok(Event::InitApply(o)) => listing.push(to_json(o)),
            Ok(Event::InitDone) => {
                let changed = cache.replace(&namespace, std::mem::take(&mut listing));
                let back = cache.set_served(&namespace, true);
                if back {
                    tracing::warn!(kind = %cache.kind(), namespace, "the API is served again: reads of the kind resume");
                }
                for (old, new) in changed {
                    send(old, new);
                }
                if back {
                    flipped(true);
                }
                if let Some(s) = synced.take() {
                    let _ = s.send(());
                }
            }
            Ok(Event::Apply(o)) => {
                let (new, old) = cache.apply(to_json(o));
                send(old, Some(new));
            }
            Ok(Event::Delete(o)) => {
                let old = cache.delete(&to_json(o));
                if old.is_some() {
                    send(old, None);
                }
            }
            Err(e) if is_not_found(&e) => {
                // The kind is gone (its CRD deleted): passes that read it
                // fail with not-served, and its stale objects are dropped,
                // until a listing succeeds. The API server deletes the
                // objects first, so their readers may have run already,
                // finding them missing: the flip re-queues every reader.
                let gone = cache.set_served(&namespace, false);
                if gone {
                    tracing::warn!(kind = %cache.kind(), namespace, error = %e, "the API is no longer served (404): reads of the kind fail until it is served again");
                }
                listing.clear();
                for (old, new) in cache.replace(&namespace, Vec::new()) {
                    send(old, new);
                }
                if gone {
                    flipped(false);
                }
            }
            Err(e) => {
                tracing::warn!(kind = %cache.kind(), namespace, error = %e, "watch failed; retrying")
            }
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

fn to_json(o: DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}
