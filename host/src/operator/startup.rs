//! The steps of the operator's start, in order, each handing the next what it needs: modules loaded, what they need resolved, the caches synced, the Lease, the ring's tasks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use kube::Client;
use reconciler_conventions::kind::KindRef;
use tokio::sync::{mpsc, oneshot};

use super::cluster::cache::{CacheEvent, ClusterSource};
use super::cluster::health::WatchHealth;
use super::cluster::namespaces::{self, LeftOut};
use super::cluster::probe;
use super::hot_swap::guests_dir::{GuestFile, GuestsDir};
use super::hot_swap::resolution::{self, Unmet};
use super::hot_swap::unserved::Unserved;
use super::kinds::Registry;
use super::kinds::evaluator::Evaluator;
use super::kinds::watches::{ReadRefused, Watches};
use super::replica::leadership::{LeaderConfig, Leadership, LeadershipError};
use super::replica::liveness::Liveness;
use super::replica::metrics::RefusalLabels;
use super::ring::partition::{Claim, Partition};
use super::ring::{self, Member};
use super::schedule::ParentKey;
use super::supervisor::{Group, Supervisor};
use super::write::authority::Authority;
use super::write::plans::Planner;
use super::{OperatorConfig, hot_swap, http, kinds, reconcile};
use crate::runtime::{Module, Runtime};

/// How often at most the host looks whether the ReconcilePlan kind, not
/// served at start, is served now (when a pass had changes to record).
const PLANS_PROBED_EVERY: Duration = Duration::from_secs(10);

/// How long a ring member leaving waits for its parents to be taken over
/// (within Kubernetes' default 30 s grace before SIGKILL).
const RING_LEAVE_WITHIN: Duration = Duration::from_secs(20);

/// The guests directory and the modules loaded from it.
pub(super) struct Loaded {
    pub(super) guests_dir: GuestsDir,
    pub(super) modules: Vec<(GuestFile, Module)>,
    /// The files the start refused, listed by `/readyz`.
    pub(super) unserved: Arc<Unserved>,
}

/// The guests directory opened and its modules loaded; what the start
/// refused is counted as a refusal at run time is, and listed by
/// `/readyz` until it is served or removed.
pub(super) fn load(runtime: &Runtime, config: &OperatorConfig) -> anyhow::Result<Loaded> {
    let mut guests_dir = GuestsDir::open(&config.guests_dir).with_context(|| {
        format!(
            "opening the guests directory {}",
            config.guests_dir.display()
        )
    })?;
    let scan = hot_swap::load_dir(
        runtime,
        &mut guests_dir,
        config.allow_golden_drift,
        config.strict_start,
    )?;
    scan.say_loaded();
    let hot_swap::FirstScan {
        modules, refused, ..
    } = scan;
    let unserved = Arc::new(Unserved::default());
    for r in &refused {
        config
            .metrics
            .swap_refusals
            .get_or_create(&RefusalLabels {
                kind: r.kind.clone().unwrap_or_default(),
                check: r.refusal.check.to_string(),
            })
            .inc();
        unserved.refused(&r.file, r.line.clone());
    }
    Ok(Loaded {
        guests_dir,
        modules,
        unserved,
    })
}

/// The endpoints (`--metrics-addr`), registered first.
pub(super) async fn endpoints(
    config: &OperatorConfig,
    health: &Arc<WatchHealth>,
    liveness: &Arc<Liveness>,
    unserved: &Arc<Unserved>,
    tasks: &mut Supervisor,
) -> anyhow::Result<()> {
    let Some(addr) = config.metrics_addr else {
        return Ok(());
    };
    let listener = http::bind(addr).await?;
    let endpoints = Arc::new(http::Endpoints {
        metrics: config.metrics.clone(),
        health: health.clone(),
        watch_down_bound: config.watch_down_bound,
        liveness: liveness.clone(),
        wedged_after: config.wedged_after,
        unserved: unserved.clone(),
    });
    tasks.spawned(
        Group::Endpoints,
        "endpoints",
        tokio::spawn(http::serve(listener, endpoints)),
    );
    Ok(())
}

/// The loaded modules sorted by what the cluster serves: those served now
/// (by file), and those held pending until what they need is installed.
pub(super) struct ResolvedModules {
    /// The kinds the host needs wherever it watches, resolved.
    pub(super) required: BTreeMap<KindRef, probe::Resolved>,
    pub(super) files: Vec<String>,
    pub(super) modules: Vec<Module>,
    pub(super) pending: Vec<GuestFile>,
}

/// A module whose kind, or a kind it needs to read, is not served is held
/// pending (one line now, its refusal and count on the first poll, served
/// once the API appears), as a module dropped in while the host runs is
/// ([`resolution::needs`], one path for both): the others are served.
pub(super) async fn resolve(
    client: &Client,
    loaded: Vec<(GuestFile, Module)>,
    config: &OperatorConfig,
) -> anyhow::Result<ResolvedModules> {
    let mut resolved = ResolvedModules {
        required: BTreeMap::new(),
        files: Vec::new(),
        modules: Vec::new(),
        pending: Vec::new(),
    };
    for (file, module) in loaded {
        match resolution::needs(client, module.spec(), &resolved.required).await {
            Ok(needs) => {
                resolved
                    .required
                    .insert(module.spec().kind_ref(), needs.kind);
                resolved.required.extend(needs.reads);
                resolved.files.push(file.file);
                resolved.modules.push(module);
            }
            Err(Unmet::Probe(e)) => return Err(e.into()),
            Err(missing) => {
                tracing::warn!(
                    guest = module.name(),
                    kind = %module.spec().kind_ref(),
                    "guest {} held pending: {missing}; it is served once that is installed{}",
                    module.name(),
                    if config.guests_poll.is_some_and(|p| !p.is_zero()) {
                        " (the guests directory is polled)"
                    } else {
                        " and the host restarted (--guests-poll 0)"
                    }
                );
                resolved.pending.push(file);
            }
        }
    }
    config
        .metrics
        .modules_pending
        .set(i64::try_from(resolved.pending.len()).unwrap_or(i64::MAX));
    Ok(resolved)
}

/// Every kind read by some guest, optional unless one needs it; a kind a
/// guest writes is a required read (its children are watched); and the
/// host's own plans, where the cluster serves them (a decision written to
/// one passes its parent).
pub(super) fn reads(modules: &[Module]) -> Vec<(KindRef, bool)> {
    let mut reads: BTreeMap<KindRef, bool> = BTreeMap::new();
    for m in modules {
        for (kind, optional) in kinds::watches::reads_of(m.spec()) {
            let entry = reads.entry(kind).or_insert(true);
            *entry &= optional;
        }
    }
    reads.entry(crate::plan::record::kind_ref()).or_insert(true);
    reads.into_iter().collect()
}

/// The namespaces left out (the host may not watch what it needs there,
/// each said once), and the scopes watched: `""` for every namespace.
pub(super) async fn scopes(
    client: &Client,
    required: &BTreeMap<KindRef, probe::Resolved>,
    config: &OperatorConfig,
) -> anyhow::Result<(LeftOut, Vec<String>)> {
    let left_out = namespaces::check(client, required, &config.namespaces).await?;
    for (ns, refused) in &left_out {
        tracing::warn!("{}", namespaces::left_out_line(ns, refused));
    }
    config
        .metrics
        .unwatched_namespaces
        .set(i64::try_from(left_out.len()).unwrap_or(i64::MAX));
    let scopes = if config.namespaces.is_empty() {
        vec![String::new()]
    } else {
        config
            .namespaces
            .iter()
            .filter(|ns| !left_out.contains_key(*ns))
            .cloned()
            .collect()
    };
    Ok((left_out, scopes))
}

/// Which parents this replica passes: a ring member's (`--ring`, which
/// watches only the parents assigned to it), else its shard's.
pub(super) async fn partition(
    client: &Client,
    config: &OperatorConfig,
) -> anyhow::Result<Partition> {
    match (&config.leader, config.ring) {
        (_, true) if config.shard != Default::default() => {
            anyhow::bail!("a ring member serves no static shard: --ring excludes --shards")
        }
        (Some(leader), true) => {
            let server = ring_selects(client, config.ring_selection, &leader.namespace).await?;
            Ok(Partition::Ring(Arc::new(
                Member::new(&leader.lease, &leader.identity, client.clone(), server)
                    .map_err(anyhow::Error::msg)?,
            )))
        }
        (None, true) => anyhow::bail!("a ring member needs its Lease's configuration"),
        (_, false) => Ok(Partition::sharded(config.shard)),
    }
}

/// Whether a ring member's watches select by the API server's
/// `shardSelector`: as `selection` says, probed on the Leases of the
/// ring's namespace `namespace` for [`ring::Selection::Auto`]; refused
/// when asked for and not served.
async fn ring_selects(
    client: &Client,
    selection: ring::Selection,
    namespace: &str,
) -> anyhow::Result<bool> {
    if selection == ring::Selection::Labels {
        return Ok(false);
    }
    let served = ring::server_selects(client, namespace)
        .await
        .context("probing whether the API server selects by shardSelector")?;
    if selection == ring::Selection::Server && !served {
        anyhow::bail!(
            "--ring-selection server: the API server does not select by shardSelector (KEP-5866: its ShardedListAndWatch feature gate is off); use --ring-selection labels or auto"
        );
    }
    tracing::info!(
        selection = if served {
            "server (shardSelector)"
        } else {
            "labels"
        },
        "ring: how this member's watches select"
    );
    Ok(served)
}

/// The watches and the registry of served kinds over the caches they keep.
/// A ring member's watches select its parents and, of the kinds guests
/// only write (not read, not served), only its parents' children, labelled
/// alike. The changes the watches see arrive on the receiver returned.
pub(super) fn caches(
    client: &Client,
    config: &OperatorConfig,
    modules: &[Module],
    scopes: &[String],
    health: Arc<WatchHealth>,
    partition: Partition,
    evaluator: Arc<dyn Evaluator>,
) -> (
    Arc<Watches>,
    Arc<Registry>,
    mpsc::UnboundedReceiver<CacheEvent>,
) {
    let (tx, rx) = mpsc::unbounded_channel::<CacheEvent>();
    let source = Arc::new(ClusterSource::watching(scopes));
    let written_only: BTreeSet<KindRef> = modules
        .iter()
        .flat_map(|m| m.spec().writes.iter().cloned())
        .filter(|w| {
            modules
                .iter()
                .all(|m| m.spec().kind_ref() != *w && m.spec().reads.iter().all(|r| r.kind != *w))
        })
        .collect();
    let member = partition.member();
    let watches = Arc::new(
        Watches::new(client.clone(), tx, scopes.to_vec(), health)
            .selecting_parents(member.map(Member::parents).unwrap_or_default())
            .selecting_children(written_only, member.map(Member::children)),
    );
    let authority = Arc::new(Authority::new(client.clone(), config.authority.clone()));
    let planner = Arc::new(Planner::new(client.clone(), config.plans.clone()));
    let registry = Arc::new(
        Registry::new(source, config.metrics.clone(), authority, planner)
            .partitioned(partition)
            .evaluating_with(evaluator),
    );
    (watches, registry, rx)
}

/// Watches every kind read, the required ones resolved; what it returns
/// resolves as each is synced.
pub(super) async fn watch_reads(
    watches: &Watches,
    registry: &Registry,
    reads: &[(KindRef, bool)],
    required: &BTreeMap<KindRef, probe::Resolved>,
) -> anyhow::Result<Vec<oneshot::Receiver<()>>> {
    watches
        .watch_reads(registry.source(), registry.metrics(), reads, required)
        .await
        .map_err(|e| match e {
            ReadRefused::Probe(e) => anyhow::Error::from(e),
            ReadRefused::NotInstalled { kind } | ReadRefused::NotServed { kind } => {
                probe::ProbeError::Required { kind }.into()
            }
            e => e.into(),
        })
}

/// Changes queue their parents from now on (a queue holds a parent once,
/// however many changes): a standby's queues wait for its workers.
pub(super) fn dispatch(
    registry: &Arc<Registry>,
    mut changes: mpsc::UnboundedReceiver<CacheEvent>,
    watches: &Arc<Watches>,
    tasks: &mut Supervisor,
) {
    let dispatched = registry.clone();
    let dispatcher = tokio::spawn(async move {
        while let Some(change) = changes.recv().await {
            dispatched.scheduler().dispatch(&change);
        }
    });
    let watches = watches.clone();
    tasks.on_stop(
        Group::Caches,
        "watches",
        async move { watches.stop().await },
    );
    tasks.spawned(Group::Caches, "dispatcher", dispatcher);
}

/// A standby keeps its caches warm (and is ready) until it holds its
/// shard's Lease (a ring member: its member Lease, made labelled with its
/// ring by the ring's own identity); nothing is written before.
pub(super) async fn lease(
    config: &OperatorConfig,
    kinds: usize,
) -> anyhow::Result<Option<Leadership>> {
    let Some(leader) = &config.leader else {
        return Ok(None);
    };
    tracing::info!(kinds, "caches synced; standby until the Lease is held");
    let lease = if config.ring {
        // With a client of its own: the replica's writes are fenced until
        // its Lease is held, and a write through the Lease's client would
        // open that fence; a member Lease anyone else made is no member.
        let lease_client = kube::Client::try_default()
            .await
            .context("a client to make this member's Lease")?;
        ring::members::make_lease(
            &lease_client,
            &leader.namespace,
            &leader.lease,
            &leader.identity,
        )
        .await
        .context("making this member's Lease")?;
        ring::members::lease_name(&leader.lease, &leader.identity)
    } else {
        config.shard.lease_name(&leader.lease)
    };
    Ok(Some(Leadership::acquire(leader.clone(), lease).await?))
}

/// Every ring member competes to coordinate the ring; where the API server
/// selects, each follows the views the coordinator publishes (and passes
/// the parents it gains), else it acknowledges the labels assigned.
pub(super) fn ring_tasks(
    client: &Client,
    config: &OperatorConfig,
    registry: &Arc<Registry>,
    scopes: Vec<String>,
    tasks: &mut Supervisor,
) {
    let (Some(leader), Some(member)) = (&config.leader, registry.ring()) else {
        return;
    };
    let assigning = match member.passing() {
        Some(passing) => {
            tasks.spawned(
                Group::Leading,
                "ring views followed",
                tokio::spawn(ring::passing::run(
                    passing.clone(),
                    client.clone(),
                    leader.lease.clone(),
                    leader.namespace.clone(),
                )),
            );
            tasks.spawned(
                Group::Leading,
                "ring parents gained",
                tokio::spawn(reconcile::handover::pass_gained(
                    registry.clone(),
                    passing.gained(),
                )),
            );
            ring::coordinator::Assigning::Slots
        }
        None => {
            tasks.spawned(
                Group::Leading,
                "ring labels acknowledged",
                tokio::spawn(ring::acks::follow(
                    client.clone(),
                    leader.lease.clone(),
                    leader.namespace.clone(),
                    leader.identity.clone(),
                )),
            );
            let registered = registry.clone();
            let kinds: ring::coordinator::ParentKinds = Arc::new(move || {
                registered
                    .kinds()
                    .into_iter()
                    .map(|(_, k)| k.resource.clone())
                    .collect()
            });
            ring::coordinator::Assigning::Labels { kinds, scopes }
        }
    };
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(ring::coordinator::run(
        client.clone(),
        assigning,
        leader.clone(),
        registry.metrics().clone(),
        stopped,
    ));
    tasks.on_stop(Group::Leading, "ring coordinator", async move {
        let _ = stop.send(());
        let _ = task.await;
    });
}

/// Where the ReconcilePlan kind was not served at start, it is watched
/// once it is.
pub(super) fn plans_later(
    registry: &Arc<Registry>,
    watches: &Arc<Watches>,
    tasks: &mut Supervisor,
) {
    let plans_kind = crate::plan::record::kind_ref();
    if registry.source().resource(&plans_kind).is_some() {
        return;
    }
    let (watches, registry) = (watches.clone(), registry.clone());
    let task = tokio::spawn(async move {
        watches
            .watch_once_served(
                registry.source(),
                registry.metrics(),
                &plans_kind,
                registry.planner().wanted(),
                PLANS_PROBED_EVERY,
            )
            .await;
    });
    tasks.spawned(Group::Caches, "plans watched once served", task);
}

/// Sampling the queues for liveness, and the resync.
pub(super) fn background(
    registry: &Arc<Registry>,
    liveness: &Arc<Liveness>,
    every: Option<Duration>,
    tasks: &mut Supervisor,
) {
    tasks.spawned(
        Group::Background,
        "sampled",
        tokio::spawn(super::sampled::every_second(
            registry.clone(),
            liveness.clone(),
        )),
    );
    tasks.spawned(
        Group::Background,
        "resync",
        tokio::spawn(resync(registry.clone(), every)),
    );
}

/// Passes every parent again every `every`: a missed event (of any cause)
/// is caught within it, at the cost of passes that write nothing when
/// nothing changed.
async fn resync(registry: Arc<Registry>, every: Option<Duration>) {
    let Some(every) = every.filter(|e| !e.is_zero()) else {
        return;
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let mut parents = 0;
        for (id, _) in registry.kinds() {
            parents += registry.requeue_all(id);
        }
        tracing::debug!(parents, "resync: every parent queued");
    }
}

/// Resolves when `leadership` is lost (never without one). The caller
/// returns at once: the process exits with the error, nothing in flight is
/// waited for, and its restart competes again as a standby.
pub(super) async fn lost(leadership: Option<&mut Leadership>) -> LeadershipError {
    match leadership {
        Some(l) => l.lost().await,
        None => std::future::pending().await,
    }
}

/// A ring member hands its parents over while its passes still run.
pub(super) async fn leave_ring(registry: &Registry, leader: Option<&LeaderConfig>) {
    let (Some(member), Some(leader)) = (registry.ring(), leader) else {
        return;
    };
    // The parents it still claims (a claim counted in flight, where slots
    // count passes, is dropped at once).
    let owned = || {
        registry
            .kinds()
            .into_iter()
            .flat_map(|(id, k)| {
                let parents = k.cache.list("", &Default::default()).into_iter();
                parents.map(move |p| (ParentKey::of(id, &p), p))
            })
            .filter(|(key, p)| !matches!(registry.partition().claim(key, Some(p)), Claim::Other))
            .count()
    };
    member
        .leave(&leader.namespace, owned, RING_LEAVE_WITHIN)
        .await;
}
