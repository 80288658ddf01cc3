//! Probe and watch: the one path by which the host starts watching a kind,
//! a served kind's own objects or a kind its guest reads, at start and
//! while running. An optional read not served, or refused (403) in a
//! namespace, is turned off there; a required one must be listable
//! wherever the host watches.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use kube::Client;
use kube::core::ApiResource;
use reconciler_conventions::kind::KindRef;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::facts::Availability;
use crate::operator::cluster::cache::{CacheEvent, ClusterSource, ObjectCache};
use crate::operator::cluster::health::WatchHealth;
use crate::operator::cluster::namespaces::resource_name;
use crate::operator::cluster::probe::{self, ProbeError, Resolved};
use crate::operator::cluster::selection::Selecting;
use crate::operator::cluster::watch;
use crate::operator::replica::metrics::Metrics;

/// A read the host cannot watch, so the module reading it is not served
/// (yet). Retried on every poll while running: a CRD may be installed, a
/// permission granted.
#[derive(Debug, thiserror::Error)]
pub enum ReadRefused {
    #[error(
        "it reads {kind}, which this cluster does not serve (is its CustomResourceDefinition installed?)"
    )]
    NotInstalled { kind: KindRef },
    #[error("it reads {kind}, which this cluster does not serve")]
    NotServed { kind: KindRef },
    #[error(
        "it reads {kind}, and the host may not list {resource} {}",
        where_(namespace)
    )]
    Forbidden {
        kind: KindRef,
        resource: String,
        namespace: String,
    },
    #[error(transparent)]
    Probe(#[from] ProbeError),
}

fn where_(namespace: &str) -> String {
    if namespace.is_empty() {
        "in every namespace".to_owned()
    } else {
        format!("in namespace {namespace}")
    }
}

/// What a kind's guest needs watched: every read (kind, optional), and
/// every kind it writes: a required read, unless the guest also declares
/// it as an optional read (a Route it writes only where Routes are
/// served; asking for one elsewhere fails that pass, not the host).
pub(crate) fn reads_of(spec: &reconciler_conventions::kind::KindSpec) -> Vec<(KindRef, bool)> {
    let declared = |w: &KindRef| spec.reads.iter().any(|r| r.kind == *w);
    spec.reads
        .iter()
        .map(|r| (r.kind.clone(), r.optional))
        .chain(
            spec.writes
                .iter()
                .filter(|w| !declared(w))
                .map(|w| (w.clone(), false)),
        )
        .collect()
}

/// A read to start: its resource (`None`: optional and not served) and
/// where it may be read.
struct ReadToStart {
    kind: KindRef,
    optional: bool,
    resource: Option<ApiResource>,
    availability: Vec<(String, Availability)>,
}

/// Starts and keeps the operator's watches.
pub struct Watches {
    client: Client,
    changes: mpsc::UnboundedSender<CacheEvent>,
    /// The namespaces watched ("" for all): `--namespaces` without the
    /// ones left out at start.
    scopes: Vec<String>,
    /// What the parent watches select (a ring member's: its own).
    parents_selected: Selecting,
    /// The kinds guests only write, and the selector their watches use (a
    /// ring member's: only the children of its parents).
    children_selected: Option<(BTreeSet<KindRef>, Selecting)>,
    /// The kinds read by some module, watched or probed (optional, not
    /// served); a kind with a cache is watched as well.
    readable: Mutex<BTreeSet<KindRef>>,
    handles: Mutex<Vec<JoinHandle<()>>>,
    health: Arc<WatchHealth>,
}

impl Watches {
    pub fn new(
        client: Client,
        changes: mpsc::UnboundedSender<CacheEvent>,
        scopes: Vec<String>,
        health: Arc<WatchHealth>,
    ) -> Self {
        Watches {
            client,
            changes,
            scopes,
            health,
            parents_selected: Selecting::All,
            children_selected: None,
            readable: Mutex::new(BTreeSet::new()),
            handles: Mutex::new(Vec::new()),
        }
    }

    /// The watches whose parent watches select `selector` (a ring
    /// member's: only the parents assigned to it).
    pub fn selecting_parents(mut self, selector: Selecting) -> Self {
        self.parents_selected = selector;
        self
    }

    /// The watches whose watches of `kinds` (those guests only write)
    /// select `selector` (a ring member's: only its parents' children).
    pub fn selecting_children(
        mut self,
        kinds: BTreeSet<KindRef>,
        selector: Option<Selecting>,
    ) -> Self {
        self.children_selected = selector.map(|s| (kinds, s));
        self
    }

    /// The selector of the watch of `kind`, if it is selected.
    fn children_selector(&self, kind: &KindRef) -> Selecting {
        self.children_selected
            .as_ref()
            .filter(|(kinds, _)| kinds.contains(kind))
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    }

    /// Starts a watch of `resource` in `namespace` ("" for all) feeding
    /// `cache`; returns the receiver fired once it listed everything.
    /// `required`: the host is not ready while it is down (a parent kind,
    /// or a read no guest has optional).
    pub fn start(
        &self,
        resource: &ApiResource,
        cache: &Arc<ObjectCache>,
        namespace: &str,
        required: bool,
    ) -> oneshot::Receiver<()> {
        self.start_selecting(resource, cache, namespace, required, Selecting::All)
    }

    /// [`Watches::start`], of the objects `selector` selects only.
    fn start_selecting(
        &self,
        resource: &ApiResource,
        cache: &Arc<ObjectCache>,
        namespace: &str,
        required: bool,
        selecting: Selecting,
    ) -> oneshot::Receiver<()> {
        let (done, wait) = oneshot::channel();
        let watched = watch::Watched {
            client: self.client.clone(),
            resource: resource.clone(),
            namespace: namespace.to_owned(),
            selecting,
        };
        let handle = tokio::spawn(watch::run(
            watched,
            cache.clone(),
            self.changes.clone(),
            done,
            self.health.register(cache.kind(), namespace, required),
        ));
        self.handles.lock().expect("watches lock").push(handle);
        wait
    }

    /// Starts the watches of a served kind's own objects, wherever the
    /// host watches; returns the receivers of their first listings.
    pub(crate) fn watch_parent(
        &self,
        resolved: &Resolved,
        cache: &Arc<ObjectCache>,
    ) -> Vec<oneshot::Receiver<()>> {
        resolved
            .scopes(&self.scopes)
            .iter()
            .map(|ns| {
                self.start_selecting(
                    &resolved.resource,
                    cache,
                    ns,
                    true,
                    self.parents_selected.clone(),
                )
            })
            .collect()
    }

    /// Where the host may list `resolved`, in every scope (only
    /// cluster-wide for a cluster-scoped kind).
    pub async fn availability(
        &self,
        kind: &KindRef,
        resolved: &Resolved,
    ) -> Result<Vec<(String, Availability)>, ProbeError> {
        let mut found = Vec::new();
        for ns in &resolved.scopes(&self.scopes) {
            let a = probe::readable(&self.client, kind, &resolved.resource, ns).await?;
            found.push((ns.clone(), a));
        }
        Ok(found)
    }

    /// Starts the watches of every kind in `reads` (kind, optional) that
    /// the host does not watch yet: an optional one is off where it is not
    /// served or refused; a required one must be listable wherever the
    /// host watches, unless `checked` holds it (resolved and found
    /// listable in every scope already, as at start). Nothing is started
    /// when a read is refused. Returns the receivers of the watches' first
    /// listings.
    pub(crate) async fn watch_reads(
        &self,
        source: &ClusterSource,
        metrics: &Metrics,
        reads: &[(KindRef, bool)],
        checked: &BTreeMap<KindRef, Resolved>,
    ) -> Result<Vec<oneshot::Receiver<()>>, ReadRefused> {
        let mut plan: Vec<ReadToStart> = Vec::new();
        for (kind, optional) in reads {
            let watched = self.readable.lock().expect("readable lock").contains(kind)
                || source.cache(kind).is_some();
            // A kind some guest read as optional and found not served is
            // probed again when another needs it: not served still, that
            // one waits (held pending); served now, it is watched.
            let needed_unserved = !*optional && source.resource(kind).is_none();
            if (watched && !needed_unserved) || plan.iter().any(|p| &p.kind == kind) {
                continue;
            }
            plan.push(self.resolve_read(kind, *optional, checked).await?);
        }
        let mut synced = Vec::new();
        for p in plan {
            self.readable
                .lock()
                .expect("readable lock")
                .insert(p.kind.clone());
            let Some(resource) = p.resource else {
                if p.kind == crate::plan::record::kind_ref() {
                    // The host's own kind: no guest's feature is off.
                    tracing::info!(
                        "ReconcilePlans are not served (deploy/plans-crd.yaml installs them): until they are, \
                         changes are made without a plan record, and mode observe or approval manual fail the pass"
                    );
                } else {
                    tracing::warn!(kind = %p.kind, "optional API not served: the feature is off until the next start");
                }
                source.set_availability(p.kind.clone(), "", Availability::NotServed);
                continue;
            };
            source.set_resource(p.kind.clone(), resource.clone());
            let cache = source.add_kind(p.kind.clone());
            let mut refused = Vec::new();
            for (ns, a) in &p.availability {
                if *a == Availability::Available {
                    synced.push(self.start_selecting(
                        &resource,
                        &cache,
                        ns,
                        !p.optional,
                        self.children_selector(&p.kind),
                    ));
                } else {
                    source.set_availability(p.kind.clone(), ns, *a);
                    refused.push(ns.clone());
                }
            }
            tracing::debug!(kind = %p.kind, optional = p.optional, "watching a kind a guest reads");
            if !refused.is_empty() {
                tracing::warn!(kind = %p.kind, namespaces = ?refused, "optional API refused (403): off in these namespaces");
                metrics
                    .refused_namespaces
                    .get_or_create(&Metrics::kind(&p.kind.kind))
                    .set(i64::try_from(refused.len()).unwrap_or(i64::MAX));
            }
        }
        Ok(synced)
    }

    /// Probes, each time `wanted` is notified (at most once every
    /// `every`), whether the cluster serves the optional kind `kind` it did
    /// not serve when the host started (the ReconcilePlan kind, its CRD
    /// installed later), and once it does, watches it as if it had been
    /// served from the start; says so once. Returns then. Nothing is sent
    /// while nothing wants the kind (steady state costs no request).
    pub(crate) async fn watch_once_served(
        &self,
        source: &ClusterSource,
        metrics: &Metrics,
        kind: &KindRef,
        wanted: &tokio::sync::Notify,
        every: std::time::Duration,
    ) {
        loop {
            wanted.notified().await;
            let probed = tokio::time::Instant::now();
            let next = async {
                tokio::time::sleep_until(probed + every).await;
            };
            let served = probe::resolve(&self.client, kind).await;
            match served {
                Ok(Some(_)) => {}
                Ok(None) => {
                    next.await;
                    continue;
                }
                Err(e) => {
                    tracing::debug!(kind = %kind, error = %e, "probing a kind not served at start failed; tried again");
                    next.await;
                    continue;
                }
            }
            self.readable.lock().expect("readable lock").remove(kind);
            match self
                .watch_reads(source, metrics, &[(kind.clone(), true)], &BTreeMap::new())
                .await
            {
                Ok(synced) => {
                    for listed in synced {
                        let _ = listed.await;
                    }
                    source.set_availability(kind.clone(), "", Availability::Available);
                    tracing::info!(kind = %kind, "served now (its CRD was installed): watched from now on");
                    return;
                }
                Err(e) => {
                    tracing::warn!(kind = %kind, error = %e, "served now, but not watchable; tried again");
                    next.await;
                }
            }
        }
    }

    /// Resolves and probes one read.
    async fn resolve_read(
        &self,
        kind: &KindRef,
        optional: bool,
        checked: &BTreeMap<KindRef, Resolved>,
    ) -> Result<ReadToStart, ReadRefused> {
        if let Some(resolved) = checked.get(kind) {
            let availability = resolved
                .scopes(&self.scopes)
                .into_iter()
                .map(|ns| (ns, Availability::Available))
                .collect();
            return Ok(ReadToStart {
                kind: kind.clone(),
                optional,
                resource: Some(resolved.resource.clone()),
                availability,
            });
        }
        let Some(resolved) = probe::resolve(&self.client, kind).await? else {
            if optional {
                return Ok(ReadToStart {
                    kind: kind.clone(),
                    optional,
                    resource: None,
                    availability: Vec::new(),
                });
            }
            return Err(ReadRefused::NotInstalled { kind: kind.clone() });
        };
        let availability = self.availability(kind, &resolved).await?;
        if !optional
            && let Some((ns, a)) = availability
                .iter()
                .find(|(_, a)| *a != Availability::Available)
        {
            return Err(match a {
                Availability::Forbidden => ReadRefused::Forbidden {
                    kind: kind.clone(),
                    resource: resource_name(&resolved.resource),
                    namespace: ns.clone(),
                },
                _ => ReadRefused::NotServed { kind: kind.clone() },
            });
        }
        Ok(ReadToStart {
            kind: kind.clone(),
            optional,
            resource: Some(resolved.resource),
            availability,
        })
    }

    /// Stops every watch, and waits until each is gone: none reports
    /// anything (a connection closing under it at shutdown) afterwards.
    pub async fn stop(&self) {
        let handles: Vec<JoinHandle<()>> = self
            .handles
            .lock()
            .expect("watches lock")
            .drain(..)
            .collect();
        for handle in &handles {
            handle.abort();
        }
        for handle in handles {
            let _ = handle.await;
        }
    }
}
