//! The operator: kinds loaded from guests, shared caches fed by watches,
//! dependencies tracked from reads, a work queue per kind, one status write
//! per pass, and Events.

pub mod api_error;
pub mod cache;
pub mod deps;
pub mod gate;
mod grow;
pub mod guests_dir;
pub mod metrics;
pub mod namespaces;
mod pass;
pub mod probe;
pub mod queue;
pub mod swap;
mod watch;
pub mod writer;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::Context;
use kube::api::DynamicObject;
use kube::core::ApiResource;
use kube::{Api, Client};
use reconciler_conventions::kind::KindRef;
use tokio::sync::{mpsc, oneshot};

use crate::facts::Availability;
use crate::runtime::{GuestModule, Runtime};
use cache::{Change, ClusterSource, ObjectChange, ServedChange};
use deps::DependencyIndex;
use guests_dir::{DirEvent, GuestsDir};
use queue::{QueueConfig, WorkQueue};
pub use swap::RollbackPolicy;
use swap::{Reloader, Slot};
use writer::Writer;

/// A parent object: which kind (its index), namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParentKey {
    pub kind: usize,
    pub namespace: String,
    pub name: String,
}

/// How the operator runs.
#[derive(Clone, Debug)]
pub struct OperatorConfig {
    pub guests_dir: PathBuf,
    /// The namespaces to watch; empty: every namespace.
    pub namespaces: Vec<String>,
    /// Settings per kind (by kind name), handed to its guest.
    pub settings: BTreeMap<String, Vec<(String, String)>>,
    /// Passes of one kind running at once.
    pub concurrency: usize,
    /// Where `/metrics` is served, if anywhere.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// How often the guests directory is polled for new, changed or
    /// removed modules; `None`: never (modules are fixed at start).
    pub guests_poll: Option<Duration>,
    /// When a swapped-in module is rolled back.
    pub rollback: RollbackPolicy,
}

/// One served kind.
pub(crate) struct Kind {
    /// The module serving the kind, swapped while running; a pass takes it
    /// once, at its start.
    pub slot: RwLock<Slot>,
    pub resource: ApiResource,
    pub cache: Arc<cache::ObjectCache>,
    pub queue: WorkQueue<ParentKey>,
    pub writer: Writer,
    pub settings: Vec<(String, String)>,
}

impl Kind {
    /// The module serving the kind now, if any.
    pub fn module(&self) -> Option<GuestModule> {
        let slot = self.slot.read().expect("slot lock");
        slot.serving.then(|| slot.module.clone())
    }
}

/// What every pass shares.
pub(crate) struct Shared {
    pub rollback: RollbackPolicy,
    /// The served kinds, append-only: a `ParentKey.kind` indexes it, so a
    /// kind is never removed or moved (a kind served from a guest dropped
    /// in while the host runs is appended).
    kinds: RwLock<Vec<Arc<Kind>>>,
    pub source: Arc<ClusterSource>,
    pub deps: Mutex<DependencyIndex<ParentKey>>,
    pub metrics: Arc<metrics::Metrics>,
}

impl Shared {
    /// The kind at `index` (one Arc clone: what a pass takes once).
    pub fn kind(&self, index: usize) -> Arc<Kind> {
        self.kinds.read().expect("kinds lock")[index].clone()
    }

    /// Every served kind now, by index.
    pub fn kinds(&self) -> Vec<Arc<Kind>> {
        self.kinds.read().expect("kinds lock").clone()
    }

    /// Appends a kind; returns its index.
    pub fn push_kind(&self, kind: Arc<Kind>) -> usize {
        let mut kinds = self.kinds.write().expect("kinds lock");
        kinds.push(kind);
        kinds.len() - 1
    }
}

/// The tasks the operator started (watches, pass workers), also while
/// running: awaited or aborted at shutdown.
#[derive(Default)]
pub(crate) struct Tasks {
    pub watches: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    pub workers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// Starts a watch of `resource` in `namespace` ("" for all) feeding
/// `cache`; returns the receiver fired once it listed everything.
pub(crate) fn start_watch(
    client: &Client,
    tasks: &Tasks,
    changes: &mpsc::UnboundedSender<Change>,
    resource: &ApiResource,
    cache: &Arc<cache::ObjectCache>,
    namespace: &str,
) -> oneshot::Receiver<()> {
    let api: Api<DynamicObject> = if namespace.is_empty() {
        Api::all_with(client.clone(), resource)
    } else {
        Api::namespaced_with(client.clone(), namespace, resource)
    };
    let (done, wait) = oneshot::channel();
    let handle = tokio::spawn(watch::run(
        api,
        cache.clone(),
        namespace.to_owned(),
        changes.clone(),
        done,
    ));
    tasks.watches.lock().expect("tasks lock").push(handle);
    wait
}

/// Spawns the pass workers of the kind at `index`.
pub(crate) fn spawn_workers(shared: &Arc<Shared>, tasks: &Tasks, index: usize, concurrency: usize) {
    let mut workers = tasks.workers.lock().expect("tasks lock");
    for _ in 0..concurrency.max(1) {
        let shared = shared.clone();
        workers.push(tokio::spawn(async move {
            let queue = shared.kind(index).queue.clone();
            while let Some(key) = queue.next().await {
                let done = pass::run(&shared, &key).await;
                queue.done(&key, done);
            }
        }));
    }
}

/// The settings of a kind, from `--setting Kind.key=value`.
fn settings_of(
    settings: &BTreeMap<String, Vec<(String, String)>>,
    kind: &str,
) -> Vec<(String, String)> {
    settings
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(kind))
        .flat_map(|(_, v)| v.clone())
        .collect()
}

/// A served kind, its module serving, and its `reconciler_module` series.
pub(crate) fn new_kind(
    client: &Client,
    metrics: &metrics::Metrics,
    module: GuestModule,
    resource: ApiResource,
    cache: Arc<cache::ObjectCache>,
    settings: Vec<(String, String)>,
) -> Kind {
    metrics
        .modules
        .get_or_create(&metrics::ModuleLabels {
            kind: module.spec().kind.clone(),
            guest: module.name().to_owned(),
            digest: module.digest().to_owned(),
            contract: module.contract_version().to_owned(),
        })
        .set(1);
    Kind {
        writer: Writer::new(client.clone(), resource.clone()),
        slot: RwLock::new(Slot::new(module)),
        resource,
        cache,
        queue: WorkQueue::new(QueueConfig::default()),
        settings,
    }
}

/// Loads every `*.wasm` in the guests directory, sorted by file name.
pub fn load_guests(runtime: &Runtime, dir: &std::path::Path) -> anyhow::Result<Vec<GuestModule>> {
    let mut dir = GuestsDir::open(dir)
        .with_context(|| format!("opening the guests directory {}", dir.display()))?;
    Ok(load_dir(runtime, &mut dir)?
        .into_iter()
        .map(|(_, m)| m)
        .collect())
}

/// The first scan of the guests directory: every module, by file name.
fn load_dir(runtime: &Runtime, dir: &mut GuestsDir) -> anyhow::Result<Vec<(String, GuestModule)>> {
    let events = dir
        .scan()
        .with_context(|| format!("reading the guests directory {}", dir.path().display()))?;
    let mut modules: Vec<(String, GuestModule)> = Vec::new();
    for event in events {
        let file = match event {
            DirEvent::Changed(file) => file,
            DirEvent::Unreadable { file, error } => {
                anyhow::bail!(
                    "cannot read guest file {file} in {}: {error}",
                    dir.path().display()
                )
            }
            DirEvent::Removed { .. } => continue,
        };
        let module = runtime.load(&file.stem, &file.bytes)?;
        if let Some((_, other)) = modules
            .iter()
            .find(|(_, m)| m.spec().kind_ref() == module.spec().kind_ref())
        {
            anyhow::bail!(
                "guest {} claims kind {}, which guest {} serves already",
                module.name(),
                module.spec().kind_ref(),
                other.name()
            );
        }
        tracing::info!(guest = module.name(), kind = %module.spec().kind_ref(), digest = module.digest(), "loaded guest");
        modules.push((file.file, module));
    }
    anyhow::ensure!(
        !modules.is_empty(),
        "no guest (*.wasm) in {}",
        dir.path().display()
    );
    Ok(modules)
}

/// Runs the operator until `shutdown` resolves; in-flight passes finish.
pub async fn run(
    client: Client,
    runtime: &Runtime,
    config: OperatorConfig,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let mut guests_dir = GuestsDir::open(&config.guests_dir).with_context(|| {
        format!(
            "opening the guests directory {}",
            config.guests_dir.display()
        )
    })?;
    let (files, modules): (Vec<String>, Vec<GuestModule>) =
        load_dir(runtime, &mut guests_dir)?.into_iter().unzip();
    let metrics = Arc::new(metrics::Metrics::new());
    let metrics_server = config
        .metrics_addr
        .map(|addr| tokio::spawn(metrics::serve(addr, metrics.clone())));
    // Every kind read by some guest, optional unless one needs it.
    let mut reads: BTreeMap<KindRef, bool> = BTreeMap::new();
    for m in &modules {
        for r in &m.spec().reads {
            let optional = reads.entry(r.kind.clone()).or_insert(true);
            *optional &= r.optional;
        }
    }
    let readable: BTreeSet<KindRef> = reads.keys().cloned().collect();

    // The kinds the host needs wherever it watches: each guest's parent
    // kind and every read no guest has optional.
    let mut required: BTreeMap<KindRef, probe::Resolved> = BTreeMap::new();
    for module in &modules {
        let kind_ref = module.spec().kind_ref();
        let resource = probe::resolve(&client, &kind_ref)
            .await?
            .with_context(|| format!("the CustomResourceDefinition of {kind_ref} is not installed (see `reconciler-host crd`)"))?;
        required.insert(kind_ref, resource);
    }
    for (kind, optional) in &reads {
        if *optional || required.contains_key(kind) {
            continue;
        }
        let Some(resource) = probe::resolve(&client, kind).await? else {
            return Err(probe::ProbeError::Required { kind: kind.clone() }.into());
        };
        required.insert(kind.clone(), resource);
    }
    let left_out = namespaces::check(&client, &required, &config.namespaces).await?;
    for (ns, refused) in &left_out {
        tracing::warn!("{}", namespaces::left_out_line(ns, refused));
    }
    metrics
        .unwatched_namespaces
        .set(i64::try_from(left_out.len()).unwrap_or(i64::MAX));
    let scopes: Vec<String> = if config.namespaces.is_empty() {
        vec![String::new()]
    } else {
        config
            .namespaces
            .iter()
            .filter(|ns| !left_out.contains_key(*ns))
            .cloned()
            .collect()
    };
    let source = ClusterSource::default();
    let (tx, mut rx) = mpsc::unbounded_channel::<Change>();
    let tasks = Arc::new(Tasks::default());
    let mut synced = Vec::new();
    let mut add_watch =
        |resource: &ApiResource, cache: &Arc<cache::ObjectCache>, namespace: &str| {
            synced.push(start_watch(
                &client, &tasks, &tx, resource, cache, namespace,
            ));
        };

    for (kind, optional) in &reads {
        let resolved = match required.get(kind) {
            Some(resolved) => Some(resolved.clone()),
            None => probe::resolve(&client, kind).await?,
        };
        let Some(resolved) = resolved else {
            if !optional {
                return Err(probe::ProbeError::Required { kind: kind.clone() }.into());
            }
            tracing::warn!(%kind, "optional API not served: the feature is off until the next start");
            source.set_availability(kind.clone(), "", Availability::NotServed);
            continue;
        };
        let resource = &resolved.resource;
        let cache = source.add_kind(kind.clone());
        let mut refused = Vec::new();
        // A cluster-scoped kind (Nodes, ClusterRoles) is watched
        // cluster-wide, whatever --namespaces says.
        for ns in &resolved.scopes(&scopes) {
            let availability = if *optional {
                probe::readable(&client, kind, resource, ns).await?
            } else {
                Availability::Available
            };
            if availability == Availability::Available {
                add_watch(resource, &cache, ns);
            } else {
                source.set_availability(kind.clone(), ns, availability);
                refused.push(ns.clone());
            }
        }
        if !refused.is_empty() {
            tracing::warn!(%kind, namespaces = ?refused, "optional API refused (403): off in these namespaces");
            metrics
                .refused_namespaces
                .get_or_create(&metrics::Metrics::kind(&kind.kind))
                .set(i64::try_from(refused.len()).unwrap_or(i64::MAX));
        }
    }

    let mut kinds = Vec::new();
    for (index, module) in modules.into_iter().enumerate() {
        let kind_ref = module.spec().kind_ref();
        let resolved = required[&kind_ref].clone();
        let resource = resolved.resource.clone();
        let cache = source.add_kind(kind_ref.clone());
        for ns in &resolved.scopes(&scopes) {
            add_watch(&resource, &cache, ns);
        }
        let settings = settings_of(&config.settings, &kind_ref.kind);
        tracing::debug!(index, kind = %kind_ref, "serving kind");
        kinds.push(Arc::new(new_kind(
            &client, &metrics, module, resource, cache, settings,
        )));
    }

    namespaces::mark_not_watched(&client, &kinds, &metrics, &left_out).await;

    for wait in synced {
        let _ = wait.await;
    }
    tracing::info!(kinds = kinds.len(), "caches synced; reconciling");

    let shared = Arc::new(Shared {
        rollback: config.rollback,
        kinds: RwLock::new(kinds),
        source: Arc::new(source),
        deps: Mutex::new(DependencyIndex::new()),
        metrics,
    });
    let served = shared.kinds().len();
    for kind_index in 0..served {
        swap::requeue_all(&shared, kind_index);
    }
    let dispatcher = {
        let shared = shared.clone();
        tokio::spawn(async move {
            while let Some(change) = rx.recv().await {
                dispatch(&shared, &change);
            }
        })
    };
    for kind_index in 0..served {
        spawn_workers(&shared, &tasks, kind_index, config.concurrency);
    }

    match config.guests_poll.filter(|p| !p.is_zero()) {
        Some(poll) => {
            let files = files.into_iter().enumerate().map(|(i, f)| (f, i)).collect();
            let grow = grow::Grow {
                client: client.clone(),
                changes: tx,
                tasks: tasks.clone(),
                scopes,
                left_out,
                settings: config.settings.clone(),
                concurrency: config.concurrency,
                readable,
            };
            let reloader = Reloader::new(runtime, guests_dir, files, grow);
            tracing::info!(
                every_ms = u64::try_from(poll.as_millis()).unwrap_or(u64::MAX),
                "watching the guests directory"
            );
            tokio::select! {
                () = shutdown => {}
                () = reloader.run(shared.clone(), poll) => {}
            }
        }
        None => {
            drop(tx);
            shutdown.await;
        }
    }
    tracing::info!("shutting down: finishing in-flight passes");
    for kind in shared.kinds() {
        kind.queue.shutdown();
    }
    let workers = std::mem::take(&mut *tasks.workers.lock().expect("tasks lock"));
    for w in workers {
        let _ = w.await;
    }
    for w in tasks.watches.lock().expect("tasks lock").drain(..) {
        w.abort();
    }
    dispatcher.abort();
    if let Some(server) = metrics_server {
        server.abort();
    }
    tracing::info!("stopped");
    Ok(())
}

/// Re-queues the parents a change concerns.
fn dispatch(shared: &Shared, change: &Change) {
    match change {
        Change::Object(change) => object_changed(shared, change),
        Change::Served(change) => served_changed(shared, change),
    }
}

/// An object changed: the parent itself when its own object changed (not
/// just its status), and every parent that read it.
fn object_changed(shared: &Shared, change: &ObjectChange) {
    let kinds = shared.kinds.read().expect("kinds lock");
    for (index, kind) in kinds.iter().enumerate() {
        if kind.cache.kind() == &change.kind && parent_changed(change) {
            let key = ParentKey {
                kind: index,
                namespace: change.namespace.clone(),
                name: change.name.clone(),
            };
            kind.queue.add(key);
        }
    }
    let affected = shared.deps.lock().expect("deps lock").affected(
        &change.kind,
        &change.namespace,
        &change.name,
        ObjectChange::labels(change.old.as_ref()).as_ref(),
        ObjectChange::labels(change.new.as_ref()).as_ref(),
    );
    for key in affected {
        kinds[key.kind].queue.add(key);
    }
}

/// A kind stopped or started being served where one watch looks: every
/// parent that read anything of it there, found or not.
fn served_changed(shared: &Shared, change: &ServedChange) {
    let kinds = shared.kinds.read().expect("kinds lock");
    let affected = shared
        .deps
        .lock()
        .expect("deps lock")
        .reading_kind(&change.kind, &change.namespace);
    tracing::debug!(kind = %change.kind, namespace = change.namespace, served = change.served, parents = affected.len(), "re-queueing the readers of a kind whose served state flipped");
    for key in affected {
        kinds[key.kind].queue.add(key);
    }
}

/// A parent's change that needs a pass: created, deleted, or a change of
/// spec (generation), labels, annotations or deletion; not its status.
fn parent_changed(change: &ObjectChange) -> bool {
    let (Some(old), Some(new)) = (&change.old, &change.new) else {
        return true;
    };
    let (o, n) = (&old["metadata"], &new["metadata"]);
    [
        "generation",
        "labels",
        "annotations",
        "deletionTimestamp",
        "uid",
    ]
    .iter()
    .any(|f| o[*f] != n[*f])
}
