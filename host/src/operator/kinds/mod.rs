//! The registry of served kinds: for each, the module serving it, its
//! cache, its status writer and settings; and what every pass shares (the
//! cluster source, the scheduler, the metrics). Startup and hot swap serve
//! kinds through it alike.

pub mod evaluator;
pub mod not_watched;
pub mod probation;
pub mod served;
pub mod watches;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use kube::Client;
use kube::core::ApiResource;

use crate::operator::cluster::cache::{ClusterSource, ObjectCache};
use crate::operator::kinds::evaluator::{Evaluator, Wasm};
use crate::operator::kinds::served::ServedModule;
use crate::operator::replica::leadership::Shard;
use crate::operator::replica::metrics::{Metrics, ModuleLabels};
use crate::operator::ring::Member;
use crate::operator::ring::partition::Partition;
use crate::operator::schedule::{KindId, ParentKey, Scheduler};
use crate::operator::write::StatusWriter;
use crate::operator::write::authority::Authority;
use crate::operator::write::plans::Planner;
use crate::runtime::Module;

/// One served kind.
pub struct Kind {
    /// The module serving the kind, swapped while running; a pass takes it
    /// once, at its start.
    pub served: RwLock<ServedModule>,
    pub resource: ApiResource,
    pub cache: Arc<ObjectCache>,
    pub writer: StatusWriter,
    pub settings: Vec<(String, String)>,
}

impl Kind {
    /// The module serving the kind now, if any.
    pub fn module(&self) -> Option<Module> {
        self.served.read().expect("served lock").serving()
    }
}

/// The served kinds, append-only (a [`KindId`] indexes them, so a kind is
/// never removed or moved; a kind served from a guest dropped in while the
/// host runs is appended), and what every pass shares.
pub struct Registry {
    kinds: RwLock<Vec<Arc<Kind>>>,
    source: Arc<ClusterSource>,
    scheduler: Scheduler,
    metrics: Arc<Metrics>,
    /// The operator's CA, for the serving certificates guests ask for.
    authority: Arc<Authority>,
    /// The plans changes go through.
    planner: Arc<Planner>,
    /// The parents this replica passes.
    partition: Partition,
    /// What evaluates a pass ([`Wasm`] unless a bench says otherwise).
    evaluator: Arc<dyn Evaluator>,
}

impl Registry {
    pub fn new(
        source: Arc<ClusterSource>,
        metrics: Arc<Metrics>,
        authority: Arc<Authority>,
        planner: Arc<Planner>,
    ) -> Self {
        Registry {
            kinds: RwLock::new(Vec::new()),
            source,
            scheduler: Scheduler::default(),
            metrics,
            authority,
            planner,
            partition: Partition::Whole,
            evaluator: Arc::new(Wasm),
        }
    }

    /// The registry passing only the parents of `partition`.
    pub(crate) fn partitioned(mut self, partition: Partition) -> Self {
        self.partition = partition;
        self
    }

    /// The registry whose passes `evaluator` evaluates.
    pub(crate) fn evaluating_with(mut self, evaluator: Arc<dyn Evaluator>) -> Self {
        self.evaluator = evaluator;
        self
    }

    /// What the host knows of the cluster: the caches, the API resources,
    /// what became of its changes.
    pub fn source(&self) -> &Arc<ClusterSource> {
        &self.source
    }

    /// The work queues and the index of what each pass read.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The parents this replica passes.
    pub(crate) fn partition(&self) -> &Partition {
        &self.partition
    }

    /// The static shard this replica serves (every parent's unless
    /// `--shards`).
    pub fn shard(&self) -> Shard {
        self.partition.shard()
    }

    /// This replica as a member of the ring, if it is one.
    pub fn ring(&self) -> Option<&Member> {
        self.partition.member()
    }

    /// What evaluates a pass.
    pub(crate) fn evaluator(&self) -> &Arc<dyn Evaluator> {
        &self.evaluator
    }

    /// The operator's CA, for the serving certificates guests ask for.
    pub(crate) fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The plans changes go through.
    pub(crate) fn planner(&self) -> &Planner {
        &self.planner
    }

    /// The kind `id` (one Arc clone: what a pass takes once).
    pub fn kind(&self, id: KindId) -> Arc<Kind> {
        self.kinds.read().expect("kinds lock")[id.0].clone()
    }

    /// Every served kind now, by id.
    pub fn kinds(&self) -> Vec<(KindId, Arc<Kind>)> {
        let kinds = self.kinds.read().expect("kinds lock");
        kinds
            .iter()
            .enumerate()
            .map(|(i, k)| (KindId(i), k.clone()))
            .collect()
    }

    /// Serves a kind from `module`, its watches started: its module series
    /// set, its queue added. Returns its id.
    pub fn add(
        &self,
        client: &Client,
        module: Module,
        resource: ApiResource,
        cache: Arc<ObjectCache>,
        settings: Vec<(String, String)>,
    ) -> KindId {
        self.metrics
            .modules
            .get_or_create(&ModuleLabels::of(&resource.kind, &module))
            .set(1);
        self.source
            .set_resource(cache.kind().clone(), resource.clone());
        let kind = Arc::new(Kind {
            writer: StatusWriter::new(client.clone(), resource.clone()),
            served: RwLock::new(ServedModule::new(module)),
            resource,
            cache,
            settings,
        });
        let mut kinds = self.kinds.write().expect("kinds lock");
        let id = self.scheduler.add_kind(kind.cache.kind().clone());
        debug_assert_eq!(id.0, kinds.len(), "the scheduler and the registry agree");
        kinds.push(kind);
        id
    }

    /// The modules whose reads the caches hold ([`projections`]): each
    /// serving kind's, the one a kind on probation may fall back to, and
    /// `incoming`, about to serve.
    ///
    /// [`projections`]: crate::operator::cluster::projections
    pub(crate) fn reading_modules(&self, incoming: Option<&Module>) -> Vec<Module> {
        let mut modules: Vec<Module> = incoming.into_iter().cloned().collect();
        for kind in self.kinds.read().expect("kinds lock").iter() {
            let served = kind.served.read().expect("served lock");
            modules.extend(served.serving());
            modules.extend(served.probation.as_ref().map(|p| p.previous.clone()));
        }
        modules
    }

    /// Holds in the caches what the modules serving (and `incoming`) read,
    /// waiting for the caches that widened to be listed again
    /// ([`projections::hold`]).
    ///
    /// [`projections::hold`]: crate::operator::cluster::projections::hold
    pub(crate) async fn hold_reads(&self, incoming: Option<&Module>) {
        let modules = self.reading_modules(incoming);
        crate::operator::cluster::projections::hold(
            &self.source,
            modules.iter().map(|m| &**m.spec()),
        )
        .await;
    }

    /// [`Registry::hold_reads`] when the modules read less than before
    /// (a probation ended): nothing to wait for, each object shrinks as
    /// its next version arrives.
    pub(crate) fn narrow_reads(&self) {
        let modules = self.reading_modules(None);
        crate::operator::cluster::projections::set(
            &self.source,
            modules.iter().map(|m| &**m.spec()),
        );
    }

    /// Asks for a pass of every cached object of kind `id`; returns how
    /// many.
    pub(crate) fn requeue_all(&self, id: KindId) -> usize {
        // Keyed from what the cache holds beside each text: no parent is
        // parsed, nor all of them held parsed at once.
        let objects = self.kind(id).cache.list_cached("", &Default::default());
        for object in &objects {
            self.scheduler.add(ParentKey::of_cached(id, object));
        }
        objects.len()
    }
}

/// The settings of a kind, from `--setting Kind.key=value`.
pub fn settings_of(
    settings: &BTreeMap<String, Vec<(String, String)>>,
    kind: &str,
) -> Vec<(String, String)> {
    settings
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(kind))
        .flat_map(|(_, v)| v.clone())
        .collect()
}
