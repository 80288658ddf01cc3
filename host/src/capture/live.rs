//! The live pass of a capture: the parent read, the guest's reads watched and listed as the operator watches them, the watches stopped so the caches hold still, and the operator's pass made on them as a dry run ([`dry_pass`]), with nothing written.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::core::ApiResource;
use reconciler_conventions::kind::KindRef;
use serde_json::Value;
use tokio::sync::mpsc;

use super::CaptureError;
use super::plans::GivenGates;
use crate::operator::cluster::cache::{CacheEvent, ClusterSource, ObjectCache};
use crate::operator::cluster::health::WatchHealth;
use crate::operator::cluster::past_cache_reads::PastReads;
use crate::operator::cluster::{decode, probe};
use crate::operator::kinds::evaluator::{Evaluator, Wasm};
use crate::operator::kinds::watches::{Watches, reads_of};
use crate::operator::reconcile::driver::Pass;
use crate::operator::reconcile::dry_run::{self, DryPass, Setting};
use crate::operator::reconcile::evaluation::{Evaluation, World};
use crate::operator::replica::metrics::Metrics;
use crate::plan::record;
use crate::runtime::Module;

/// How long the watches may take to list what the guest reads.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a denial holds the same changes where no gates say
/// (`--replan-after`'s default).
const REPLAN_AFTER: Duration = Duration::from_secs(60);

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

/// One pass as the operator runs it, made as a dry run.
pub struct LivePass {
    /// The parent as the operator's cache holds it (slimmed).
    pub parent: Value,
    pub now: jiff::Timestamp,
    pub pass: DryPass,
}

/// Reads the parent `target` of `module`'s kind, watches what the guest
/// reads in `scopes` ("" for every namespace) until listed, stops the
/// watches, and makes the operator's pass of the parent with `settings`
/// and `gates` as a dry run. Nothing is written.
pub async fn pass(
    client: &Client,
    module: &Module,
    target: &Subject,
    scopes: &[String],
    settings: &[(String, String)],
    gates: GivenGates,
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
    let still = Still::of(client, &source, &resolved.resource, settings, gates).await;
    let pass = dry_pass(module, &parent, &still).await;
    Ok(LivePass {
        parent,
        now: still.now,
        pass,
    })
}

/// The caches of `reads` and of the ReconcilePlans (where served) in
/// `scopes` ("" for every namespace), watched until listed and the watches
/// stopped: they hold still from here. `kind` is the kind whose guest
/// reads them, as errors name it.
pub async fn still_caches(
    client: &Client,
    scopes: &[String],
    reads: &[(KindRef, bool)],
    kind: &str,
) -> Result<Arc<ClusterSource>, CaptureError> {
    let mut reads = reads.to_vec();
    if !reads.iter().any(|(read, _)| *read == record::kind_ref()) {
        reads.push((record::kind_ref(), true));
    }
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
        .watch_reads(&source, &metrics, &reads, &BTreeMap::new())
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

/// What a dry run of a pass is given besides the parent: the world's
/// caches held still, the client that reads past them, the kind's
/// settings, the host's gates, and the cluster's identity its plans bind.
pub struct Still<'a> {
    pub client: &'a Client,
    pub source: &'a Arc<ClusterSource>,
    /// The parent's API resource.
    pub resource: &'a ApiResource,
    pub settings: &'a [(String, String)],
    pub gates: GivenGates,
    /// The cluster's identity ([`cluster_identity`]).
    pub cluster: String,
    pub now: jiff::Timestamp,
}

impl<'a> Still<'a> {
    /// The still world of `source`, its clock now and the cluster's
    /// identity read once.
    pub async fn of(
        client: &'a Client,
        source: &'a Arc<ClusterSource>,
        resource: &'a ApiResource,
        settings: &'a [(String, String)],
        gates: GivenGates,
    ) -> Self {
        Still {
            client,
            source,
            resource,
            settings,
            gates,
            cluster: cluster_identity(client, source).await,
            now: jiff::Timestamp::now(),
        }
    }
}

/// The operator's pass of `parent` by `module`, made as a dry run on the
/// still world `still`: nothing is written.
pub async fn dry_pass(module: &Module, parent: &Value, still: &Still<'_>) -> DryPass {
    let evaluator: Arc<dyn Evaluator> = Arc::new(Wasm);
    let parent = Arc::new(parent.clone());
    let pass = Pass {
        evaluation: Evaluation {
            world: World {
                source: still.source,
                past: PastReads::Server(still.client),
            },
            evaluator: &evaluator,
            module,
            settings: still.settings,
            parent: &parent,
            paused: module.spec().is_paused(&parent),
            now: still.now,
        },
        spec: module.spec(),
        resource: still.resource,
        kind_gates: still.gates.kind,
        slot: None,
    };
    let setting = Setting {
        source: still.source,
        resource: still.resource,
        authority: None,
        kind_gates: still.gates.kind,
        cluster: &still.cluster,
        replan_after: still.gates.replan_after.unwrap_or(REPLAN_AFTER),
    };
    dry_run::pass(&pass, &setting).await
}

/// The cluster's identity, as the operator's plans bind it (the UID of
/// `kube-system`), where `source` holds ReconcilePlans; empty where it
/// holds none, or these credentials may not read it (then a parent's plan
/// reads as describing other changes, and a review says the live status is
/// not reproduced).
pub async fn cluster_identity(client: &Client, source: &ClusterSource) -> String {
    if source.resource(&record::kind_ref()).is_none() {
        return String::new();
    }
    let namespaces = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone());
    match namespaces.get("kube-system").await {
        Ok(ns) => ns.metadata.uid.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(error = %e, "the cluster's identity (kube-system's UID) cannot be read");
            String::new()
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
