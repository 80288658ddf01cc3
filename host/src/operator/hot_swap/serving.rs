//! Serving a kind, one path at start and while running: its parents
//! watched and the kind added ([`Serving::add`]), then, once its watches
//! listed, passed ([`Serving::start`]: NamespaceNotWatched marked, its
//! workers spawned, every object queued). A guest dropped in for a kind
//! not served yet goes through the same two steps after its checks
//! ([`Serving::serve`]); a replacement reading a kind not watched yet gets
//! that kind's watches before it is swapped in.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::oneshot;

use crate::facts::Availability;
use crate::operator::cluster::namespaces::{self, LeftOut};
use crate::operator::cluster::probe;
use crate::operator::hot_swap::gate::{Check, Refusal};
use crate::operator::hot_swap::resolution::{self, Unmet, crd_name};
use crate::operator::kinds::not_watched::mark_not_watched;
use crate::operator::kinds::watches::{ReadRefused, Watches, reads_of};
use crate::operator::kinds::{Registry, settings_of};
use crate::operator::reconcile::workers::Workers;
use crate::operator::schedule::KindId;
use crate::runtime::Module;

/// How long the watches started for a new kind or read may take to list
/// everything before the kind is served anyway (the watches go on).
pub(crate) const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// A module not (yet) served: why, and whether it is retried on every poll
/// (a CRD not installed yet, a permission not granted yet).
pub struct NotYet {
    pub refusal: Refusal,
    pub retry: bool,
}

impl NotYet {
    fn retry(check: Check, detail: String) -> Self {
        NotYet {
            refusal: Refusal::new(check, detail),
            retry: true,
        }
    }

    fn refuse(check: Check, detail: String) -> Self {
        NotYet {
            refusal: Refusal::new(check, detail),
            retry: false,
        }
    }
}

impl From<Unmet> for NotYet {
    fn from(e: Unmet) -> Self {
        match e {
            Unmet::NotInstalled { .. } => NotYet::retry(
                Check::Crd,
                format!("{e}; retrying on every poll until it is"),
            ),
            Unmet::Read(e) => e.into(),
            Unmet::Probe(e) => NotYet::retry(Check::Probe, e.to_string()),
        }
    }
}

impl From<ReadRefused> for NotYet {
    fn from(e: ReadRefused) -> Self {
        match e {
            ReadRefused::Probe(e) => NotYet::retry(Check::Probe, e.to_string()),
            e => NotYet::retry(Check::Reads, format!("{e}; retrying on every poll")),
        }
    }
}

/// What serving a kind needs besides the registry.
pub struct Serving {
    pub client: Client,
    pub watches: Arc<Watches>,
    pub workers: Arc<Workers>,
    pub left_out: LeftOut,
    pub settings: BTreeMap<String, Vec<(String, String)>>,
    pub concurrency: usize,
}

impl Serving {
    /// Starts the watches of every kind `module` reads that the host does
    /// not watch yet ([`Watches::watch_reads`]); returns the receivers of
    /// their first listings.
    pub(crate) async fn watch_reads(
        &self,
        registry: &Registry,
        module: &Module,
    ) -> Result<Vec<oneshot::Receiver<()>>, NotYet> {
        let reads = reads_of(module.spec());
        Ok(self
            .watches
            .watch_reads(
                registry.source(),
                registry.metrics(),
                &reads,
                &BTreeMap::new(),
            )
            .await?)
    }

    /// Serves a kind no module serves yet from `module` (the gate's load
    /// checks and fixtures passed): resolves its CRD, starts the watches of
    /// the kind and of its new reads, waits for their first listings, then
    /// adds the kind, spawns its workers and queues every object.
    pub async fn serve(&self, registry: &Arc<Registry>, module: &Module) -> Result<KindId, NotYet> {
        let spec = module.spec();
        let kind_ref = spec.kind_ref();
        let resolved = resolution::needs(&self.client, spec, &BTreeMap::new())
            .await?
            .kind;
        let resource = resolved.resource.clone();
        if resource.kind != kind_ref.kind {
            return Err(NotYet::refuse(
                Check::Kind,
                format!("the cluster serves {kind_ref} as {}", resource.kind),
            ));
        }
        let parent_watched = registry.source().cache(&kind_ref).is_some();
        let availability = if parent_watched {
            Vec::new()
        } else {
            self.watches
                .availability(&kind_ref, &resolved)
                .await
                .map_err(|e| NotYet::retry(Check::Probe, e.to_string()))?
        };
        if let Some((ns, a)) = availability
            .iter()
            .find(|(_, a)| *a != Availability::Available)
        {
            let detail = match a {
                Availability::Forbidden => format!(
                    "the host may not list {} {} (403); retrying on every poll",
                    namespaces::resource_name(&resource),
                    if ns.is_empty() {
                        "in every namespace".to_owned()
                    } else {
                        format!("in namespace {ns}")
                    }
                ),
                _ => format!(
                    "the CustomResourceDefinition {} of kind {kind_ref} is not served; retrying on every poll until it is",
                    crd_name(&kind_ref, Some(&resource), &spec.plural)
                ),
            };
            return Err(NotYet::retry(Check::Crd, detail));
        }
        let mut synced = self.watch_reads(registry, module).await?;
        let (id, parents) = self.add(registry, module, &resolved);
        synced.extend(parents);
        let waits = synced.len();
        if tokio::time::timeout(SYNC_TIMEOUT, futures::future::join_all(synced))
            .await
            .is_err()
        {
            tracing::warn!(kind = %kind_ref, watches = waits, timeout_s = SYNC_TIMEOUT.as_secs(), "the new kind's watches did not list everything in time; serving it anyway, objects are queued as they arrive");
        }
        registry.hold_reads(None).await;
        let queued = self.start(registry, &[id]).await;
        tracing::info!(
            index = id.0,
            digest = module.digest(),
            objects = queued,
            "serving new kind {kind_ref} from guest {}",
            module.name()
        );
        Ok(id)
    }

    /// Adds `module`'s kind (resolved as `resolved`) to the registry, its
    /// parents watched unless a guest's reads watch them already; nothing
    /// passes it before [`Serving::start`]. Returns its id and the
    /// receivers of its watch's first listing.
    pub fn add(
        &self,
        registry: &Registry,
        module: &Module,
        resolved: &probe::Resolved,
    ) -> (KindId, Vec<oneshot::Receiver<()>>) {
        let kind_ref = module.spec().kind_ref();
        let watched = registry.source().cache(&kind_ref).is_some();
        let cache = registry.source().add_kind(kind_ref.clone());
        let synced = if watched {
            Vec::new()
        } else {
            self.watches.watch_parent(resolved, &cache)
        };
        let settings = settings_of(&self.settings, &kind_ref.kind);
        let id = registry.add(
            &self.client,
            module.clone(),
            resolved.resource.clone(),
            cache,
            settings,
        );
        tracing::debug!(index = id.0, kind = %kind_ref, "serving kind");
        (id, synced)
    }

    /// Starts passing the kinds `ids` (their watches listed): their objects
    /// in namespaces left out of the watch marked NamespaceNotWatched,
    /// their workers spawned, every object queued. Returns how many.
    pub async fn start(&self, registry: &Arc<Registry>, ids: &[KindId]) -> usize {
        if !self.left_out.is_empty() {
            let kinds: Vec<_> = ids.iter().map(|id| registry.kind(*id)).collect();
            mark_not_watched(
                &self.client,
                &kinds,
                registry.metrics(),
                &self.left_out,
                registry.shard(),
            )
            .await;
        }
        let mut queued = 0;
        for id in ids {
            self.workers.spawn(registry, *id, self.concurrency);
            queued += registry.requeue_all(*id);
        }
        queued
    }
}
