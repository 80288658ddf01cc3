//! The live pass of a capture: the parent read, the guest's reads watched and listed as the operator watches them, the watches stopped so the caches hold still, and one evaluation (reads past the cache included), with nothing written.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use reconciler_conventions::kind::KindRef;
use serde_json::Value;
use tokio::sync::mpsc;

use super::CaptureError;
use crate::facts::ObjectSource;
use crate::operator::cluster::cache::{CacheEvent, ClusterSource, ObjectCache};
use crate::operator::cluster::health::WatchHealth;
use crate::operator::cluster::past_cache_reads::Rounds;
use crate::operator::cluster::{decode, probe};
use crate::operator::kinds::watches::{Watches, reads_of};
use crate::operator::replica::metrics::Metrics;
use crate::runtime::{EvaluateRequest, Evaluated, GuestModule};

/// How long the watches may take to list what the guest reads.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// The parent a capture passes: its namespace ("" for a cluster-scoped
/// kind) and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// One pass as the operator runs it, up to the guest's verdict.
pub struct LivePass {
    /// The parent as the operator's cache holds it (slimmed).
    pub parent: Value,
    pub now: jiff::Timestamp,
    pub evaluated: Evaluated,
    /// What the last evaluation read from: the caches, with the answers
    /// of its reads past the cache.
    pub source: Arc<dyn ObjectSource>,
}

/// Reads the parent `target` of `module`'s kind, watches what the guest
/// reads in `scopes` ("" for every namespace) until listed, stops the
/// watches, and evaluates the parent with `settings` as the operator's
/// pass does. Nothing is written.
pub async fn pass(
    client: &Client,
    module: &GuestModule,
    target: &Subject,
    scopes: &[String],
    settings: &[(String, String)],
) -> Result<LivePass, CaptureError> {
    let spec = module.spec();
    let kind = spec.kind_ref();
    let resolved = probe::resolve(client, &kind)
        .await
        .map_err(|e| CaptureError::Probe(Box::new(e)))?
        .ok_or_else(|| CaptureError::NotInstalled { kind: kind.clone() })?;
    match (resolved.namespaced, target.namespace.is_empty()) {
        (true, true) => return Err(CaptureError::NamespaceMissing { kind }),
        (false, false) => return Err(CaptureError::ClusterScoped { kind }),
        _ => {}
    }
    if resolved.namespaced
        && !scopes
            .iter()
            .any(|s| s.is_empty() || *s == target.namespace)
    {
        return Err(CaptureError::NamespaceNotWatched {
            namespace: target.namespace.clone(),
            watched: scopes.to_vec(),
        });
    }
    // Read first for a clear error before anything is watched; read again
    // once the caches hold still.
    read_parent(client, &kind, &resolved.resource, target).await?;

    // Stopped before the evaluation: the caches hold still from here, so
    // what the fixture keeps is what the pass read.
    let source = still_caches(client, scopes, &reads_of(spec), &kind.kind).await?;
    let parent = read_parent(client, &kind, &resolved.resource, target).await?;
    let now = jiff::Timestamp::now();
    let (evaluated, source) = evaluate(client, module, &parent, &source, settings, now).await;
    Ok(LivePass {
        parent,
        now,
        evaluated,
        source,
    })
}

/// The caches of `reads` in `scopes` ("" for every namespace), watched
/// until listed and the watches stopped: they hold still from here.
/// `kind` is the kind whose guest reads them, as errors name it.
pub async fn still_caches(
    client: &Client,
    scopes: &[String],
    reads: &[(KindRef, bool)],
    kind: &str,
) -> Result<Arc<ClusterSource>, CaptureError> {
    let metrics = Arc::new(Metrics::new());
    let (changes, _unheard) = mpsc::unbounded_channel::<CacheEvent>();
    let source = Arc::new(ClusterSource::watching(scopes));
    let watches = Watches::new(
        client.clone(),
        changes,
        scopes.to_vec(),
        Arc::new(WatchHealth::new(metrics.clone())),
    );
    let synced = watches
        .watch_reads(&source, &metrics, reads, &BTreeMap::new())
        .await
        .map_err(|e| CaptureError::Reads {
            kind: kind.to_owned(),
            refused: Box::new(e),
        })?;
    let listed = tokio::time::timeout(SYNC_TIMEOUT, async {
        for wait in synced {
            let _ = wait.await;
        }
    })
    .await;
    watches.stop().await;
    listed.map_err(|_| CaptureError::SyncTimeout {
        after: SYNC_TIMEOUT,
    })?;
    Ok(source)
}

/// `parent` evaluated by `module` from `source` as the operator's pass
/// evaluates it: objects the cache refused are read past it after an
/// evaluation that wanted them, and the parent is evaluated again with
/// them (at most MAX_READS objects, in as many rounds). Returns the last
/// evaluation and what it read from.
pub async fn evaluate(
    client: &Client,
    module: &GuestModule,
    parent: &Value,
    source: &Arc<ClusterSource>,
    settings: &[(String, String)],
    now: jiff::Timestamp,
) -> (Evaluated, Arc<dyn ObjectSource>) {
    let paused = module.spec().is_paused(parent);
    let mut rounds = Rounds::default();
    loop {
        let read_from = rounds.source(source);
        let evaluated = {
            let (module, parent, settings, read_from) = (
                module.clone(),
                parent.clone(),
                settings.to_vec(),
                read_from.clone(),
            );
            tokio::task::spawn_blocking(move || {
                module.evaluate(EvaluateRequest {
                    parent: &parent,
                    paused,
                    settings: &settings,
                    source: read_from,
                    now,
                })
            })
            .await
            .expect("an evaluation never panics")
        };
        if !rounds.read_wanted(client, source, &evaluated).await {
            return (evaluated, read_from);
        }
    }
}

/// The parent, as the operator's cache admits it (typed and slimmed).
async fn read_parent(
    client: &Client,
    kind: &KindRef,
    resource: &kube::core::ApiResource,
    target: &Subject,
) -> Result<Value, CaptureError> {
    let api = decode::api(client, resource, &target.namespace);
    let parent = format!("{} {target}", kind.kind);
    let found = match api.get_opt(&target.name).await {
        Ok(Some(found)) => found,
        Ok(None) => {
            return Err(CaptureError::NotFound {
                parent,
                kind: kind.clone(),
            });
        }
        Err(kube::Error::Api(s)) if s.code == 403 => {
            return Err(CaptureError::Forbidden {
                what: format!("get {parent}"),
                message: s.message,
            });
        }
        Err(e) => {
            return Err(CaptureError::Api {
                what: format!("reading {parent}"),
                source: Box::new(e),
            });
        }
    };
    let object = found.into_value();
    let cache = ObjectCache::new(kind.clone());
    let (admitted, _) = cache
        .apply(object)
        .expect("an empty cache admits any version");
    Ok((*admitted).clone())
}
