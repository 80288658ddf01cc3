//! The operator. A pass's data flows through these folders in order:
//!
//! - [`cluster`]: what the host sees: discovery and probing, namespaces it
//!   may watch, watches keeping one cache per kind in step;
//! - [`schedule`]: from a change to the parents that need a pass (the
//!   dependency index recorded from reads, a work queue per kind);
//! - [`reconcile`]: one pass over one parent (its inputs gathered, the
//!   pass's core in [`crate::pass`] settling it, its effects carried out),
//!   run by the [`reconcile::workers`];
//! - [`write`]: the plans, the children, the status write and the Events.
//!
//! Beside them: [`kinds`], the registry of served kinds; [`modules`], the
//! guest modules loaded at start and hot swapped while running, and the one
//! path serving a kind ([`modules::serving`]); [`guest_modules`], modules
//! declared as GuestModule objects and pulled from OCI registries; the
//! [`http`] endpoints;
//! [`replica`], what one replica of the operator is (its client, Lease and
//! shard, liveness and metrics). This file starts it all ([`run`]).

pub mod cluster;
pub mod guest_modules;
pub mod http;
pub mod kinds;
pub mod modules;
pub mod reconcile;
pub mod replica;
pub mod ring;
mod sampled;
pub mod schedule;
pub mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use kube::Client;
use reconciler_conventions::kind::KindRef;
use tokio::sync::{mpsc, oneshot, watch};

use crate::runtime::{GuestModule, Runtime};
use cluster::cache::{CacheEvent, ClusterSource};
use cluster::health::WatchHealth;
use cluster::{namespaces, probe};
use kinds::Registry;
use kinds::evaluator::{Evaluator, Wasm};
pub use kinds::served::RollbackPolicy;
use kinds::watches::{ReadRefused, Watches};
use modules::guests_dir::GuestsDir;
use modules::reloader::Reloader;
use modules::serving::Serving;
use reconcile::workers::Workers;
use replica::leadership::{LeaderConfig, Leadership, LeadershipError, Shard};
use replica::liveness::Liveness;
use ring::Member;
use write::authority::{Authority, AuthorityConfig};
use write::plans::{PlanConfig, Planner};

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
    /// Serve a module at start even when it drops a reason or aspect of
    /// the golden lists beside it (development only).
    pub allow_golden_drift: bool,
    /// Fail the start on any refused guest file, instead of serving the
    /// others (`--strict-start`).
    pub strict_start: bool,
    /// How often the guests directory is polled for new, changed or
    /// removed modules; `None`: never (modules are fixed at start).
    pub guests_poll: Option<Duration>,
    /// How a new module that passed the gate comes to serve.
    pub promotion: modules::promotion::Promotion,
    /// When a swapped-in module is rolled back.
    pub rollback: RollbackPolicy,
    /// How often every parent is passed again, whatever changed (the
    /// safety net against a missed event; a pass that changes nothing
    /// writes nothing); `None`: never.
    pub resync: Option<Duration>,
    /// How long a required watch may be down before `/readyz` fails.
    pub watch_down_bound: Duration,
    /// How long parents may wait with no pass ending before `/healthz`
    /// fails (a wedged process).
    pub wedged_after: Duration,
    /// Compete for the shard's Lease and write only while holding it;
    /// `None`: write from the start (one replica).
    pub leader: Option<LeaderConfig>,
    /// Which parents this replica serves.
    pub shard: Shard,
    /// Serve the parents the ring assigns this replica (`--ring`): its
    /// member Lease is `leader`'s name with `-member-<identity>`.
    pub ring: bool,
    /// How a ring member's watches select its parents and their children.
    pub ring_selection: ring::Selection,
    /// Where the operator's CA lives and how long what it signs is valid.
    pub authority: AuthorityConfig,
    /// The gates per kind, plan retention, the hold after a rejection.
    pub plans: PlanConfig,
    /// The operator's metrics; the client's requests count in them
    /// ([`replica::client::counted`]).
    pub metrics: Arc<replica::metrics::Metrics>,
    /// Serve GuestModule objects (`--guest-modules`); needs the guests
    /// directory polled.
    pub guest_modules: Option<guest_modules::GuestModulesConfig>,
}

/// Runs the operator until `shutdown` resolves; in-flight passes finish.
pub async fn run(
    client: Client,
    runtime: &Runtime,
    config: OperatorConfig,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    run_with(client, runtime, config, Arc::new(Wasm), shutdown).await
}

/// [`run`], its passes evaluated by `evaluator` instead of the guests'
/// wasm: the operator benchmark's native baseline (the binary never calls
/// it with anything but [`Wasm`]).
pub async fn run_with(
    client: Client,
    runtime: &Runtime,
    config: OperatorConfig,
    evaluator: Arc<dyn Evaluator>,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let mut guests_dir = GuestsDir::open(&config.guests_dir).with_context(|| {
        format!(
            "opening the guests directory {}",
            config.guests_dir.display()
        )
    })?;
    let modules::Loaded {
        modules: loaded,
        refused,
    } = modules::load_dir(
        runtime,
        &mut guests_dir,
        config.allow_golden_drift,
        config.strict_start,
    )?;
    let metrics = config.metrics.clone();
    // What the start refused: counted as a refusal at run time is, and
    // listed by /readyz until it is served or removed.
    let unserved = Arc::new(modules::unserved::Unserved::default());
    for r in &refused {
        metrics
            .swap_refusals
            .get_or_create(&replica::metrics::RefusalLabels {
                kind: r.kind.clone().unwrap_or_default(),
                check: r.refusal.check.to_string(),
            })
            .inc();
        unserved.refused(&r.file, r.line.clone());
    }
    let health = Arc::new(WatchHealth::new(metrics.clone()));
    let liveness = Arc::new(Liveness::default());
    let http_server = match config.metrics_addr {
        Some(addr) => {
            let listener = http::bind(addr).await?;
            let endpoints = Arc::new(http::Endpoints {
                metrics: metrics.clone(),
                health: health.clone(),
                watch_down_bound: config.watch_down_bound,
                liveness: liveness.clone(),
                wedged_after: config.wedged_after,
                unserved: unserved.clone(),
            });
            Some(tokio::spawn(http::serve(listener, endpoints)))
        }
        None => None,
    };
    // A module whose kind, or a kind it needs to read, is not served is
    // held pending (one line now, its refusal and count on the first poll,
    // served once the API appears), as a module dropped in while the host
    // runs is: the others are served.
    let mut required: BTreeMap<KindRef, probe::Resolved> = BTreeMap::new();
    let mut files = Vec::new();
    let mut modules = Vec::new();
    let mut pending = Vec::new();
    for (file, module) in loaded {
        match needs(&client, &module, &mut required).await? {
            None => {
                files.push(file.file);
                modules.push(module);
            }
            Some(missing) => {
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
                pending.push(file);
            }
        }
    }
    metrics
        .modules_pending
        .set(i64::try_from(pending.len()).unwrap_or(i64::MAX));
    // Every kind read by some guest, optional unless one needs it; a kind
    // a guest writes is a required read (its children are watched).
    let mut reads: BTreeMap<KindRef, bool> = BTreeMap::new();
    for m in &modules {
        for (kind, optional) in kinds::watches::reads_of(m.spec()) {
            let entry = reads.entry(kind).or_insert(true);
            *entry &= optional;
        }
    }
    // The host's own plans, where the cluster serves them: a decision
    // written to one passes its parent.
    reads.entry(crate::plan::record::kind_ref()).or_insert(true);

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
    // A ring member watches only the parents assigned to it.
    let member = match (&config.leader, config.ring) {
        (Some(leader), true) => {
            let server = ring_selects(&client, config.ring_selection, &leader.namespace).await?;
            Some(Arc::new(
                Member::new(&leader.lease, &leader.identity, client.clone(), server)
                    .map_err(anyhow::Error::msg)?,
            ))
        }
        (None, true) => anyhow::bail!("a ring member needs its Lease's configuration"),
        (_, false) => None,
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<CacheEvent>();
    let source = Arc::new(ClusterSource::watching(&scopes));
    let ring_scopes = scopes.clone();
    // ... and, of the kinds guests only write (not read, not served), only
    // its parents' children, labelled alike.
    let written_only: BTreeSet<KindRef> = modules
        .iter()
        .flat_map(|m| m.spec().writes.iter().cloned())
        .filter(|w| {
            modules
                .iter()
                .all(|m| m.spec().kind_ref() != *w && m.spec().reads.iter().all(|r| r.kind != *w))
        })
        .collect();
    let watches = Arc::new(
        Watches::new(client.clone(), tx, scopes, health)
            .selecting_parents(member.as_ref().map(|m| m.parents()).unwrap_or_default())
            .selecting_children(written_only, member.as_ref().map(|m| m.children())),
    );
    let authority = Arc::new(Authority::new(client.clone(), config.authority.clone()));
    let planner = Arc::new(Planner::new(client.clone(), config.plans.clone()));
    let registry = Arc::new(
        Registry::new(source, metrics, authority, planner)
            .serving(config.shard)
            .in_ring(member)
            .evaluating_with(evaluator),
    );
    let reads: Vec<(KindRef, bool)> = reads.into_iter().collect();
    let mut synced = watches
        .watch_reads(registry.source(), registry.metrics(), &reads, &required)
        .await
        .map_err(|e| match e {
            ReadRefused::Probe(e) => anyhow::Error::from(e),
            ReadRefused::NotInstalled { kind } | ReadRefused::NotServed { kind } => {
                probe::ProbeError::Required { kind }.into()
            }
            e => e.into(),
        })?;

    let workers = Arc::new(Workers::new(liveness.clone()));
    let serving = Serving {
        client: client.clone(),
        watches: watches.clone(),
        workers: workers.clone(),
        left_out,
        settings: config.settings.clone(),
        concurrency: config.concurrency,
    };
    let mut ids = Vec::new();
    for module in modules {
        let resolved = &required[&module.spec().kind_ref()];
        let (id, parents) = serving.add(&registry, &module, resolved);
        synced.extend(parents);
        ids.push(id);
    }
    for wait in synced {
        let _ = wait.await;
    }
    // Changes queue their parents from now on (a queue holds a parent
    // once, however many changes): a standby's queues wait for its workers.
    let dispatcher = {
        let registry = registry.clone();
        tokio::spawn(async move {
            while let Some(change) = rx.recv().await {
                registry.scheduler().dispatch(&change);
            }
        })
    };
    // Every replica stages GuestModules' sources from now on; the one
    // holding the Lease serves them.
    let (leading_tx, leading_rx) = watch::channel(None);
    let guest_modules = config
        .guest_modules
        .clone()
        .map(|gm| tokio::spawn(guest_modules::run(client.clone(), gm, leading_rx)));
    // A standby keeps its caches warm (and is ready) until it holds its
    // shard's Lease; nothing is written before.
    let mut leadership = match &config.leader {
        Some(leader) => {
            tracing::info!(
                kinds = ids.len(),
                "caches synced; standby until the Lease is held"
            );
            let lease = if config.ring {
                // Made labelled with its ring by the ring's own identity
                // (with a client of its own: the replica's writes are
                // fenced until its Lease is held, and a write through the
                // Lease's client would open that fence): a member Lease
                // anyone else made is no member.
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
            Some(Leadership::acquire(leader.clone(), lease).await?)
        }
        None => None,
    };
    // Every ring member competes to coordinate the ring; where the API
    // server selects, each follows the views the coordinator publishes.
    let mut following = Vec::new();
    let coordinator = match (&config.leader, registry.ring()) {
        (Some(leader), Some(member)) => {
            let assigning = match member.passing() {
                Some(passing) => {
                    following.extend([
                        tokio::spawn(ring::passing::run(
                            passing.clone(),
                            client.clone(),
                            leader.lease.clone(),
                            leader.namespace.clone(),
                        )),
                        tokio::spawn(reconcile::handover::pass_gained(
                            registry.clone(),
                            passing.gained(),
                        )),
                    ]);
                    ring::coordinator::Assigning::Slots
                }
                None => {
                    following.push(tokio::spawn(ring::acks::follow(
                        client.clone(),
                        leader.lease.clone(),
                        leader.namespace.clone(),
                        leader.identity.clone(),
                    )));
                    let served = registry.clone();
                    let served: ring::coordinator::ServedKinds = Arc::new(move || {
                        served
                            .kinds()
                            .into_iter()
                            .map(|(_, k)| k.resource.clone())
                            .collect()
                    });
                    ring::coordinator::Assigning::Labels {
                        served,
                        scopes: ring_scopes,
                    }
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
            Some((stop, task))
        }
        _ => None,
    };
    tracing::info!(
        kinds = ids.len(),
        shard = config.shard.index,
        shards = config.shard.count,
        "caches synced; reconciling"
    );
    serving.start(&registry, &ids).await;
    let plans_kind = crate::plan::record::kind_ref();
    let plans_later = registry.source().resource(&plans_kind).is_none().then(|| {
        let (watches, registry) = (watches.clone(), registry.clone());
        tokio::spawn(async move {
            watches
                .watch_once_served(
                    registry.source(),
                    registry.metrics(),
                    &plans_kind,
                    registry.planner().wanted(),
                    PLANS_PROBED_EVERY,
                )
                .await;
        })
    });
    let background = [
        tokio::spawn(sampled::every_second(registry.clone(), liveness.clone())),
        tokio::spawn(resync(registry.clone(), config.resync)),
    ];

    match config.guests_poll.filter(|p| !p.is_zero()) {
        Some(poll) => {
            let files = files.into_iter().zip(ids.iter().copied()).collect();
            let reloader = Reloader::new(
                runtime,
                guests_dir,
                files,
                serving,
                config.rollback,
                pending,
                config.allow_golden_drift,
            )
            .settling(unserved.clone())
            .promoting(config.promotion);
            tracing::info!(
                every_ms = u64::try_from(poll.as_millis()).unwrap_or(u64::MAX),
                "watching the guests directory"
            );
            let (offers, offered) = mpsc::unbounded_channel();
            let _ = leading_tx.send(Some(guest_modules::Leading {
                registry: registry.clone(),
                offers,
                reports: config.shard.index == 0,
            }));
            tokio::select! {
                () = shutdown => {}
                () = reloader.run(registry.clone(), poll, offered) => {}
                lost = lost(leadership.as_mut()) => return Err(lost.into()),
            }
        }
        None => tokio::select! {
            () = shutdown => {}
            lost = lost(leadership.as_mut()) => return Err(lost.into()),
        },
    }
    // A ring member hands its parents over while its passes still run.
    if let (Some(member), Some(leader)) = (registry.ring(), &config.leader) {
        let owned = || {
            registry
                .kinds()
                .iter()
                .flat_map(|(_, k)| k.cache.list("", &Default::default()))
                .filter(|p| member.claim(p) != ring::Claim::Other)
                .count()
        };
        member
            .leave(&leader.namespace, owned, RING_LEAVE_WITHIN)
            .await;
    }
    tracing::info!("shutting down: finishing in-flight passes");
    registry.scheduler().shutdown();
    workers.join().await;
    watches.stop().await;
    dispatcher.abort();
    if let Some(task) = guest_modules {
        task.abort();
    }
    if let Some((stop, task)) = coordinator {
        let _ = stop.send(());
        let _ = task.await;
    }
    for task in following {
        task.abort();
    }
    for task in background.into_iter().chain(plans_later) {
        task.abort();
    }
    if let Some(server) = http_server {
        server.abort();
    }
    if let Some(leadership) = leadership {
        leadership.release().await;
    }
    tracing::info!("stopped");
    Ok(())
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

/// How often at most the host looks whether the ReconcilePlan kind, not
/// served at start, is served now (when a pass had changes to record).
const PLANS_PROBED_EVERY: Duration = Duration::from_secs(10);

/// How long a ring member leaving waits for its parents to be taken over
/// (within Kubernetes' default 30 s grace before SIGKILL).
const RING_LEAVE_WITHIN: Duration = Duration::from_secs(20);

/// What `module` needs that the cluster does not serve (its kind's CRD, or
/// a kind it must read), `None` when everything resolves; what resolves is
/// added to `required`, the kinds the host needs wherever it watches.
async fn needs(
    client: &Client,
    module: &GuestModule,
    required: &mut BTreeMap<KindRef, probe::Resolved>,
) -> anyhow::Result<Option<String>> {
    let kind_ref = module.spec().kind_ref();
    let mut resolved = Vec::new();
    match probe::resolve(client, &kind_ref).await? {
        Some(r) => resolved.push((kind_ref.clone(), r)),
        None => {
            return Ok(Some(format!(
                "the CustomResourceDefinition of {kind_ref} is not installed (see `reconciler-host crd`)"
            )));
        }
    }
    for (kind, optional) in kinds::watches::reads_of(module.spec()) {
        if optional || required.contains_key(&kind) || kind == kind_ref {
            continue;
        }
        match probe::resolve(client, &kind).await? {
            Some(r) => resolved.push((kind, r)),
            None => {
                return Ok(Some(format!(
                    "it reads {kind}, which this cluster does not serve"
                )));
            }
        }
    }
    required.extend(resolved);
    Ok(None)
}

/// Resolves when `leadership` is lost (never without one). The caller
/// returns at once: the process exits with the error, nothing in flight is
/// waited for, and its restart competes again as a standby.
async fn lost(leadership: Option<&mut Leadership>) -> LeadershipError {
    match leadership {
        Some(l) => l.lost().await,
        None => std::future::pending().await,
    }
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
