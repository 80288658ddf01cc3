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
//! Beside them: [`kinds`], the registry of served kinds; [`hot_swap`], the
//! guest modules loaded at start and hot swapped while running, and the one
//! path serving a kind ([`hot_swap::serving`]); [`guest_modules`], modules
//! declared as GuestModule objects and pulled from OCI registries; the
//! [`http`] endpoints;
//! [`replica`], what one replica of the operator is (its client, Lease and
//! shard, liveness and metrics). This file starts it all ([`run`]).

pub mod cluster;
pub mod guest_modules;
pub mod hot_swap;
pub mod http;
pub mod kinds;
pub mod reconcile;
pub mod replica;
pub mod ring;
mod sampled;
pub mod schedule;
mod startup;
mod supervisor;
pub mod write;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::{mpsc, watch};

use crate::runtime::Runtime;
use cluster::health::WatchHealth;
use hot_swap::reloader::Reloader;
use hot_swap::serving::Serving;
use kinds::evaluator::{Evaluator, Wasm};
pub use kinds::served::RollbackPolicy;
use reconcile::workers::Workers;
use replica::leadership::{LeaderConfig, Shard};
use replica::liveness::Liveness;
use supervisor::{Group, Supervisor};
use write::authority::AuthorityConfig;
use write::plans::PlanConfig;

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
    pub promotion: hot_swap::promotion::Promotion,
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
/// it with anything but [`Wasm`]). The start in order: modules loaded,
/// endpoints, what the modules need resolved, the caches synced, the
/// Lease, the passes, the background; then it runs until `shutdown` (the
/// guests directory polled) and stops the groups in reverse
/// ([`supervisor`]). A lost Lease returns at once, nothing waited for.
pub async fn run_with(
    client: Client,
    runtime: &Runtime,
    config: OperatorConfig,
    evaluator: Arc<dyn Evaluator>,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let mut tasks = Supervisor::default();
    let startup::Loaded {
        guests_dir,
        modules: loaded,
        unserved,
    } = startup::load(runtime, &config)?;
    let health = Arc::new(WatchHealth::new(config.metrics.clone()));
    let liveness = Arc::new(Liveness::default());
    startup::endpoints(&config, &health, &liveness, &unserved, &mut tasks).await?;

    let startup::ResolvedModules {
        required,
        files,
        modules,
        pending,
    } = startup::resolve(&client, loaded, &config).await?;
    let reads = startup::reads(&modules);
    let (left_out, scopes) = startup::scopes(&client, &required, &config).await?;
    let partition = startup::partition(&client, &config).await?;
    let (watches, registry, changes) = startup::caches(
        &client, &config, &modules, &scopes, health, partition, evaluator,
    );
    // The caches hold what the modules read, from their first listing.
    crate::operator::cluster::projections::set(
        registry.source(),
        modules.iter().map(|m| &**m.spec()),
    );
    let mut synced = startup::watch_reads(&watches, &registry, &reads, &required).await?;
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
        let (id, parents) = serving.add(&registry, &module, &required[&module.spec().kind_ref()]);
        synced.extend(parents);
        ids.push(id);
    }
    for wait in synced {
        let _ = wait.await;
    }
    startup::dispatch(&registry, changes, &watches, &mut tasks);

    // Every replica stages GuestModules' sources from now on; the one
    // holding the Lease serves them.
    let (leading_tx, leading_rx) = watch::channel(None);
    if let Some(gm) = config.guest_modules.clone() {
        let task = tokio::spawn(guest_modules::run(client.clone(), gm, leading_rx));
        tasks.spawned(Group::Leading, "guest modules", task);
    }
    let mut leadership = startup::lease(&config, ids.len()).await?;
    startup::ring_tasks(&client, &config, &registry, scopes, &mut tasks);
    tracing::info!(
        kinds = ids.len(),
        shard = config.shard.index,
        shards = config.shard.count,
        "caches synced; reconciling"
    );
    serving.start(&registry, &ids).await;
    let passing = registry.clone();
    tasks.on_stop(Group::Passes, "workers", async move {
        tracing::info!("shutting down: finishing in-flight passes");
        passing.scheduler().shutdown();
        workers.join().await;
    });
    startup::plans_later(&registry, &watches, &mut tasks);
    startup::background(&registry, &liveness, config.resync, &mut tasks);

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
            .settling(unserved)
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
                lost = startup::lost(leadership.as_mut()) => return Err(lost.into()),
            }
        }
        None => tokio::select! {
            () = shutdown => {}
            lost = startup::lost(leadership.as_mut()) => return Err(lost.into()),
        },
    }
    startup::leave_ring(&registry, config.leader.as_ref()).await;
    tasks.stop().await;
    if let Some(leadership) = leadership {
        leadership.release().await;
    }
    tracing::info!("stopped");
    Ok(())
}
