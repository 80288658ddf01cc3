//! `run`: the operator, until SIGTERM or Ctrl-C.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use reconciler_host::oci::cache::DEFAULT_MAX_BYTES;
use reconciler_host::oci::{ModuleCache, Policy};
use reconciler_host::operator::guest_modules::kind::PromotionName;
use reconciler_host::operator::guest_modules::{GuestModulesConfig, Puller};
use reconciler_host::operator::hot_swap::promotion::Promotion;
use reconciler_host::operator::replica::fence::Fence;
use reconciler_host::operator::replica::leadership::{LeaderConfig, Shard};
use reconciler_host::operator::replica::metrics::Metrics;
use reconciler_host::operator::write::authority::AuthorityConfig;
use reconciler_host::operator::write::plans::PlanConfig;
use reconciler_host::operator::{self, OperatorConfig};
use reconciler_host::plan::record::Phase;
use reconciler_host::runtime::Runtime;

use super::gates::GateArgs;
use super::registry::RegistryArgs;

#[derive(Args)]
pub(super) struct RunArgs {
    /// The directory of guest modules (*.wasm), one kind each.
    #[arg(long, env = "GUESTS_DIR")]
    guests: PathBuf,
    /// Namespaces to watch, comma-separated; empty: all.
    #[arg(
        long,
        env = "WATCH_NAMESPACES",
        value_delimiter = ',',
        default_value = ""
    )]
    namespaces: Vec<String>,
    /// A setting handed to a kind's guest: `<Kind>.<name>=<value>`.
    #[arg(long = "setting", value_name = "KIND.NAME=VALUE")]
    settings: Vec<String>,
    /// Passes of one kind at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    concurrency: u16,
    /// Serve Prometheus metrics at http://<addr>/metrics, and readiness at
    /// /readyz.
    #[arg(long, env = "METRICS_ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Development only: serve a module at start even when it drops a reason
    /// of the `<guest>.reasons` golden list or an aspect of the
    /// `<guest>.aspects` one beside it (the refusal is logged as a WARN).
    #[arg(long)]
    allow_golden_drift: bool,
    /// How a new module that passed the gate comes to serve: `direct`
    /// (swapped in at once, on probation) or `auto` (first shadowed on
    /// every parent of its kind the host caches, beside the module
    /// serving, writing nothing; held when a parent would turn from Ready
    /// True to False or it would fail where the serving module does not).
    #[arg(long, value_enum, default_value_t = Promotion::Direct, env = "PROMOTION")]
    promotion: Promotion,
    /// Fail the start when any guest file is refused (unreadable, not a
    /// module of the contract, refused by its golden lists, a second module
    /// for a kind). Without it the others are served and the refused ones
    /// are logged, counted and listed by /readyz.
    #[arg(long, env = "STRICT_START")]
    strict_start: bool,
    /// How often the guests directory is checked for new, changed or removed
    /// modules (`2s`, `200ms`); `0` turns hot swapping off.
    #[arg(long, env = "GUESTS_POLL", default_value = "2s", value_parser = parse_duration)]
    guests_poll: Duration,
    /// Roll a swapped-in module back when more than this fraction of its
    /// first `--rollback-window` passes fail by the guest's fault.
    #[arg(long, default_value_t = 0.5)]
    rollback_threshold: f64,
    /// How many passes of a swapped-in module the rollback watches.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    rollback_window: u32,
    /// How often every parent is passed again, whatever changed (`10m`,
    /// `30s`); `0` turns it off. A pass that changes nothing writes nothing.
    #[arg(long, env = "RESYNC", default_value = "10m", value_parser = parse_duration)]
    resync: Duration,
    /// How long a required watch may be down before /readyz fails.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    watch_down_bound: Duration,
    /// How long parents may wait with no pass ending before /healthz fails
    /// (a wedged process, which the kubelet's liveness probe restarts).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    wedged_after: Duration,
    /// Write only while holding the shard's Lease (coordination.k8s.io);
    /// standbys keep their caches warm and take over when it lapses.
    #[arg(long, env = "LEADER_ELECT")]
    leader_elect: bool,
    /// The Lease's name (with `--shards`, `-shard-<i>-of-<n>` is added).
    #[arg(long, default_value = "reconciler-host")]
    lease_name: String,
    /// The Lease's namespace (default: the client's, the host's own in a
    /// cluster).
    #[arg(long, env = "POD_NAMESPACE")]
    lease_namespace: Option<String>,
    /// How long the Lease lasts unrenewed (the failover time); it is
    /// renewed once a third of it is left, and a holder whose renewal fails
    /// stops before it lapses. At least 3s.
    #[arg(long, default_value = "15s", value_parser = parse_lease_duration)]
    lease_duration: Duration,
    /// Who this replica is in the Lease (default: the Pod's name, else the
    /// hostname, with a random suffix).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Split parents into this many shards by a stable hash of
    /// namespace/name; each replica serves `--shard-index`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    shards: u32,
    /// The shard this replica serves, 0 to `--shards` - 1.
    #[arg(long, default_value_t = 0)]
    shard_index: u32,
    /// Join the ring named `--lease-name`: replicas join and leave while
    /// the host runs, each serving the parents assigned to it (a label
    /// the host owns) and holding a Lease `<name>-member-<identity>`; one
    /// of them, holding `<name>-coordinator`, assigns the parents.
    #[arg(long, env = "RING", conflicts_with_all = ["leader_elect", "shards", "guest_modules"])]
    ring: bool,
    /// How a ring member's watches select its parents and their children:
    /// `server`, by the API server's `shardSelector` (KEP-5866, its alpha
    /// ShardedListAndWatch gate on: nothing is relabelled, children carry
    /// their parent's slot); `labels`, by the labels the coordinator
    /// writes; `auto`, `server` where the API server serves it.
    #[arg(
        long,
        env = "RING_SELECTION",
        default_value = "auto",
        requires = "ring"
    )]
    ring_selection: operator::ring::Selection,
    /// The Secret holding the operator's CA, `<namespace>/<name>`, created
    /// on first use (default: `reconciler-host-ca` in the namespace of the
    /// client's configuration, the host's own in a cluster).
    #[arg(long, value_name = "NAMESPACE/NAME", value_parser = parse_secret_ref)]
    certificate_authority: Option<(String, String)>,
    /// How long a serving certificate the operator signs is valid (`90d`,
    /// `12h`); it is renewed once two thirds of it have passed.
    #[arg(long, default_value = "90d", value_parser = parse_validity)]
    certificate_validity: Duration,
    #[command(flatten)]
    gates: GateArgs,
    /// How many terminal plans of one parent are kept per phase,
    /// `<Phase>=<count>` (defaults: Applied=10, Rejected=5, Superseded=5,
    /// Failed=5); a plan annotated `reconciler.dev/keep: "true"` is kept.
    #[arg(long = "plan-retention", value_name = "PHASE=COUNT", value_parser = parse_retention)]
    plan_retention: Vec<(&'static str, usize)>,
    /// Serve GuestModule objects (reconciler.dev/v1alpha1): each names a
    /// kind and an OCI reference; every replica pulls and verifies it, the
    /// one holding the Lease gates and swaps it in. Needs
    /// `--verification-policy` and the guests directory polled.
    #[arg(long, env = "GUEST_MODULES")]
    guest_modules: bool,
    /// Serve only the GuestModules this label selector selects
    /// (`team=payments`): several installs of the host in one cluster.
    #[arg(long, value_name = "SELECTOR", env = "GUEST_MODULES_SELECTOR")]
    guest_modules_selector: Option<String>,
    /// The least review a kind's GuestModules get, `<Kind>=<promotion>`
    /// (`Widget=manual`; direct < auto < manual), repeated per kind: a
    /// GuestModule asking for less is served under the floor, and its
    /// status says so. The admission policy refuses the lowering write
    /// from its ConfigMap reconciler-promotion-floors: give both the same
    /// floors (the chart renders both from guestModules.promotionFloors).
    #[arg(long = "promotion-floor", value_name = "KIND=PROMOTION", value_parser = parse_floor, requires = "guest_modules")]
    promotion_floors: Vec<(String, PromotionName)>,
    /// The verification policy (YAML) GuestModules' sources are held to:
    /// which cosign keys must have signed each kind's module.
    #[arg(long, value_name = "FILE", env = "VERIFICATION_POLICY")]
    verification_policy: Option<PathBuf>,
    /// Where modules pulled for GuestModules are kept by digest (default:
    /// ~/.cache/reconciler-host/pulled).
    #[arg(long, env = "PULLED_DIR")]
    pulled_dir: Option<PathBuf>,
    /// The most the pulled modules take there, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_MAX_BYTES >> 20)]
    pulled_max_mib: u64,
    #[command(flatten)]
    registry: RegistryArgs,
}

fn parse_retention(s: &str) -> Result<(&'static str, usize), String> {
    let (phase, count) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected <Phase>=<count>"))?;
    let phase = Phase::parse(phase)
        .filter(|p| p.is_terminal())
        .ok_or_else(|| {
            format!("{s:?}: the phase must be Applied, Rejected, Superseded or Failed")
        })?;
    let count = count
        .parse()
        .map_err(|_| format!("{s:?}: the count must be a whole number"))?;
    Ok((phase.as_str(), count))
}

fn parse_floor(s: &str) -> Result<(String, PromotionName), String> {
    match s.split_once('=') {
        Some((kind, promotion)) if !kind.is_empty() => Ok((kind.to_owned(), promotion.parse()?)),
        _ => Err(format!("{s:?}: expected <Kind>=<promotion>")),
    }
}

fn parse_secret_ref(s: &str) -> Result<(String, String), String> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_owned(), name.to_owned()))
        }
        _ => Err(format!("{s:?}: expected <namespace>/<name>")),
    }
}

/// Six random lowercase letters and digits: two replicas on one host (or
/// a restarted one) are never the same holder.
fn random_suffix() -> String {
    let mut bytes = [0u8; 6];
    let _ = getrandom::fill(&mut bytes);
    bytes
        .iter()
        .map(|b| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[usize::from(*b) % 36]))
        .collect()
}

fn parse_lease_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_secs(3) {
        return Err(format!("{s:?}: a Lease lasts at least 3s"));
    }
    Ok(d)
}

/// A certificate's validity: at least a minute (it is renewed at two
/// thirds, and issued a minute back for clocks behind).
fn parse_validity(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_secs(60) {
        return Err(format!("{s:?}: a certificate must be valid at least 1m"));
    }
    Ok(d)
}

impl RunArgs {
    /// Guest instances alive at once: `--concurrency` passes of each kind
    /// in the guests directory at start, plus headroom for loads and the
    /// hot-swap gate. Kinds added later share the pool; a pass that finds
    /// it full waits for a slot.
    pub(super) fn instances(&self) -> u32 {
        let kinds = std::fs::read_dir(&self.guests)
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "wasm"))
                    .count()
            })
            .unwrap_or(0)
            .max(1);
        let passes = usize::from(self.concurrency).saturating_mul(kinds);
        // Capped: each slot reserves address space (not memory) for its
        // linear memories.
        u32::try_from(passes.saturating_add(4).min(1024)).unwrap_or(1024)
    }
}

/// `90d`, `12h`, `10m`, `2s`, `200ms`, `1.5s`, or plain seconds.
pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, scale) = if let Some(ms) = s.strip_suffix("ms") {
        (ms, 0.001)
    } else if let Some(days) = s.strip_suffix('d') {
        (days, 86400.0)
    } else if let Some(hours) = s.strip_suffix('h') {
        (hours, 3600.0)
    } else if let Some(mins) = s.strip_suffix('m') {
        (mins, 60.0)
    } else if let Some(secs) = s.strip_suffix('s') {
        (secs, 1.0)
    } else {
        (s, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected a duration such as 90d, 12h, 10m, 2s or 200ms"))?;
    Duration::try_from_secs_f64(value * scale).map_err(|e| format!("{s:?}: {e}"))
}

/// `--setting`s (`<Kind>.<name>=<value>`) by kind, in the order given.
pub(super) fn parse_settings(
    given: &[String],
) -> anyhow::Result<BTreeMap<String, Vec<(String, String)>>> {
    let mut settings: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for s in given {
        let (key, value) = s
            .split_once('=')
            .with_context(|| format!("--setting {s:?}: expected <Kind>.<name>=<value>"))?;
        let (kind, name) = key
            .split_once('.')
            .with_context(|| format!("--setting {s:?}: expected <Kind>.<name>=<value>"))?;
        settings
            .entry(kind.to_owned())
            .or_default()
            .push((name.to_owned(), value.to_owned()));
    }
    Ok(settings)
}

pub(super) fn run(runtime: &Runtime, args: RunArgs) -> anyhow::Result<ExitCode> {
    let settings = parse_settings(&args.settings)?;
    anyhow::ensure!(
        (0.0..=1.0).contains(&args.rollback_threshold),
        "--rollback-threshold {}: expected a fraction from 0 to 1",
        args.rollback_threshold
    );
    let plans = plan_config(&args);
    let shard = shard(&args)?;
    let identity = args.identity.clone().unwrap_or_else(hostname);
    let guest_modules = if args.guest_modules {
        let (policy, cache, floors) =
            guest_module_checks(&args, args.verification_policy.as_deref())?;
        Some(GuestModulesConfig {
            puller: Puller {
                remote: Arc::new(args.registry.remote()?),
                cache: Arc::new(cache),
                policy: Arc::new(Policy::read(policy)?),
                config_maps: None,
            },
            replica: identity.clone(),
            promotion: args.promotion,
            floors,
            selector: args.guest_modules_selector.clone(),
            entries: None,
        })
    } else {
        None
    };
    let certificate_authority = args.certificate_authority;
    let certificate_validity = args.certificate_validity;
    let mut config = OperatorConfig {
        guests_dir: args.guests,
        namespaces: args
            .namespaces
            .into_iter()
            .filter(|n| !n.is_empty())
            .collect(),
        settings,
        concurrency: usize::from(args.concurrency),
        metrics_addr: args.metrics_addr,
        allow_golden_drift: args.allow_golden_drift,
        strict_start: args.strict_start,
        guests_poll: Some(args.guests_poll).filter(|p| !p.is_zero()),
        promotion: args.promotion,
        rollback: operator::RollbackPolicy {
            threshold: args.rollback_threshold,
            window: args.rollback_window,
        },
        resync: Some(args.resync).filter(|r| !r.is_zero()),
        watch_down_bound: args.watch_down_bound,
        wedged_after: args.wedged_after,
        leader: None,
        shard,
        ring: args.ring,
        ring_selection: args.ring_selection,
        authority: AuthorityConfig {
            namespace: String::new(),
            name: String::new(),
            validity: certificate_validity,
        },
        plans,
        metrics: Arc::new(Metrics::new()),
        guest_modules,
    };
    let tokio = tokio::runtime::Runtime::new()?;
    tokio.block_on(async {
        let fence = lease_fence(args.ring, args.leader_elect, args.lease_duration);
        let client = operator::replica::client::counted(&config.metrics, &fence)
            .await
            .context(
                "no Kubernetes client configuration (KUBECONFIG, ~/.kube/config or in-cluster)",
            )?;
        if let Some(modules) = &mut config.guest_modules {
            connect_guest_modules(modules, &config.metrics, &client, &args.lease_namespace).await?;
        }
        if args.leader_elect || args.ring {
            config.leader = Some(LeaderConfig {
                lease: args.lease_name.clone(),
                namespace: args
                    .lease_namespace
                    .clone()
                    .unwrap_or_else(|| client.default_namespace().to_owned()),
                identity: format!("{identity}-{}", random_suffix()),
                duration: args.lease_duration,
                fence,
            });
        }
        (config.authority.namespace, config.authority.name) =
            certificate_authority.unwrap_or_else(|| default_authority(&client));
        operator::run(client, runtime, config, shutdown_signal()).await
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The plans' configuration: the gated kinds, when to replan, and `--plan-retention`.
fn plan_config(args: &RunArgs) -> PlanConfig {
    let mut plans = PlanConfig {
        kinds: args.gates.kinds(),
        replan_after: args.gates.replan_after,
        ..PlanConfig::default()
    };
    for &(phase, count) in &args.plan_retention {
        plans.retention.0.insert(phase, count);
    }
    plans
}

/// The shard this replica serves (`--shard-index`), checked to be one of `--shards`.
fn shard(args: &RunArgs) -> anyhow::Result<Shard> {
    anyhow::ensure!(
        args.shard_index < args.shards,
        "--shard-index {} is not a shard of --shards {} (0 to {})",
        args.shard_index,
        args.shards,
        args.shards - 1
    );
    Ok(Shard {
        count: args.shards,
        index: args.shard_index,
    })
}

/// This host's name (`/etc/hostname`), else `reconciler-host`.
fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "reconciler-host".to_owned())
}

/// `--guest-modules`' checks, in order: polling on, a policy, a cache for pulls, one floor a kind.
fn guest_module_checks<'p>(
    args: &RunArgs,
    policy: Option<&'p Path>,
) -> anyhow::Result<(&'p Path, ModuleCache, BTreeMap<String, PromotionName>)> {
    anyhow::ensure!(
        !args.guests_poll.is_zero(),
        "--guest-modules: GuestModules are swapped in as the guests directory's files are; give --guests-poll more than 0"
    );
    let policy = policy.context(
        "--guest-modules needs --verification-policy: a module from a registry is served only as the policy says",
    )?;
    let cache = ModuleCache::new(
        args.pulled_dir
            .clone()
            .or_else(ModuleCache::default_dir)
            .context("no cache directory for pulled modules: give --pulled-dir")?,
    )
    .bounded(args.pulled_max_mib.saturating_mul(1 << 20));
    let mut floors = BTreeMap::new();
    for (kind, floor) in &args.promotion_floors {
        anyhow::ensure!(
            floors.insert(kind.clone(), *floor).is_none(),
            "--promotion-floor: kind {kind} is given two floors"
        );
    }
    Ok((policy, cache, floors))
}

/// The fence of this replica's writes, by how it holds a Lease (if at all).
fn lease_fence(ring: bool, leader_elect: bool, lease_duration: Duration) -> Arc<Fence> {
    // A replica elected by Lease writes only while its Lease is
    // confirmed valid; a single replica is never fenced.
    if ring {
        LeaderConfig::member_fence(lease_duration)
    } else if leader_elect {
        LeaderConfig::fence(lease_duration)
    } else {
        Fence::open()
    }
}

/// Gives GuestModules an unfenced client for this replica's status entry, and ConfigMaps.
async fn connect_guest_modules(
    guest_modules: &mut GuestModulesConfig,
    metrics: &Arc<Metrics>,
    client: &kube::Client,
    lease_namespace: &Option<String>,
) -> anyhow::Result<()> {
    guest_modules.entries =
        Some(operator::replica::client::counted(metrics, &Fence::open()).await?);
    // A `configMap` source is read in the host's own namespace.
    let own = lease_namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_owned());
    guest_modules.puller.config_maps = Some(kube::Api::namespaced(client.clone(), &own));
    Ok(())
}

/// The CA's Secret without `--certificate-authority`: the default one, in the client's namespace.
fn default_authority(client: &kube::Client) -> (String, String) {
    (
        client.default_namespace().to_owned(),
        reconciler_host::rbac::CA_SECRET.to_owned(),
    )
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler installs");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_seconds_or_milliseconds() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
