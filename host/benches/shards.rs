//! The ring at scale (issue 34's figure): replicas of `reconciler-host run
//! --ring` as separate processes against the real local kube-apiserver of
//! `tests/support`, serving the writer test guest: N Widgets, each owning
//! one ConfigMap (no controller needed to keep up on two cores).
//!
//! 1. The N Widgets created, then three replicas started: the time until
//!    every Widget is labelled with the member rendezvous hashing names
//!    among the three and its ConfigMap is made and labelled alike
//!    (convergence). Each replica's cached objects (Widgets and ConfigMaps,
//!    `reconciler_cached_objects`) over all of them, and its RSS, in all
//!    and per cached object.
//! 2. While specs keep changing (`BENCH_RATE` a second, one at a time), a
//!    fourth replica joins; once converged, one leaves (SIGTERM) and one is
//!    SIGKILLed; converged again on the two left.
//! 3. The churn stops: every ConfigMap must hold its Widget's last data
//!    (lost updates); then 10 s of steady state, its requests counted.
//!
//! A bench's own Widget watch records when each Widget's label changed.
//! `written by two replicas at once` counts the status and ConfigMap
//! writes (from each replica's request log) made by a replica after the
//! watch saw its Widget assigned elsewhere (a write by the new owner just
//! before the watch saw the move is not one). `longest time a parent had
//! no owner`: from a member's death, or a Widget's losing its label, until
//! the watch saw it assigned to a live member.
//!
//! With `BENCH_RING_SELECTION=server` the replicas run on an API server of
//! the bench's own with KEP-5866's gate on, and select by `shardSelector`:
//! nothing is labelled but each ConfigMap's slot, so a Widget's owner is
//! the one the coordinator's published view lets pass its slot (none while
//! the slot moves), as the bench's watch of that Lease saw it, and the
//! convergence is the view settled on the live members with each
//! replica's cache holding exactly its slots' Widgets.
//!
//! `make bench-shards`, or `cargo bench -p reconciler-host --bench shards`.
//! Environment: `BENCH_PARENTS` (default 3000), `BENCH_RATE` (spec changes
//! a second, default 20), `BENCH_RING_SELECTION` (`labels`, the default,
//! or `server`), `RECONCILER_TEST_KUBECONFIG` (reuse a running test
//! apiserver; labels only).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use reconciler_host::operator::ring::view::View;
use reconciler_host::operator::ring::{MEMBER, assignment, members, slots};
use reconciler_host_harness::bench::{Metrics, Table, env_num, free_port};
use reconciler_host_harness::objects::{self, create};
use reconciler_host_harness::operator::{Guests, Host, fixture, fixture_of, install_crds};
use reconciler_host_harness::paths;
use reconciler_host_harness::proxy::RestartableServer;
use reconciler_host_harness::widgets::{widget, widgets};
use reconciler_testsupport::TestNamespace;
use serde_json::json;

const WRITER: Guests = Guests {
    dir: "bench-shards",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

const RING: &str = "bench";
const LEASE: &str = "15s";
/// The limit on each wait for convergence.
const LIMIT: Duration = Duration::from_secs(600);
const STEADY: Duration = Duration::from_secs(10);
/// Longer than the host's sampling of `reconciler_cached_objects` (1 s).
const CACHE_GAUGES: Duration = Duration::from_millis(2500);

/// When each Widget's member label changed, as the bench's watch saw it.
type Moves = Arc<Mutex<HashMap<String, Vec<(Timestamp, Option<String>)>>>>;

struct Replica {
    host: Host,
    metrics: SocketAddr,
    /// `--identity`; the member is `<prefix>-<random suffix>`.
    prefix: String,
    /// When it stopped (SIGTERM returned, or SIGKILL).
    stopped: Option<Timestamp>,
}

impl Replica {
    fn is(&self, member: &str) -> bool {
        member.starts_with(&format!("{}-", self.prefix))
    }
}

/// Where the replicas run and how they select.
struct Ring {
    kubeconfig: std::path::PathBuf,
    /// The API server selects (`BENCH_RING_SELECTION=server`).
    server: bool,
}

fn start(ring: &Ring, ns: &TestNamespace, index: usize) -> Replica {
    let kubeconfig = &ring.kubeconfig;
    let selection = if ring.server { "server" } else { "labels" };
    let metrics = free_port().expect("a port");
    let prefix = format!("bench-{index}");
    let metrics_arg = format!("--metrics-addr={metrics}");
    let args = [
        metrics_arg.as_str(),
        "--namespaces",
        ns.name(),
        "--ring",
        "--lease-name",
        RING,
        "--lease-namespace",
        ns.name(),
        "--lease-duration",
        LEASE,
        "--identity",
        &prefix,
        "--concurrency",
        "8",
        "--ring-selection",
        selection,
    ];
    let host = Host::start_spawned(kubeconfig, &args, &prefix);
    Replica {
        host,
        metrics,
        prefix,
        stopped: None,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let parents: usize = env_num("BENCH_PARENTS").unwrap_or(3000);
    let rate: f64 = env_num("BENCH_RATE").unwrap_or(20.0);
    let server = std::env::var("BENCH_RING_SELECTION").is_ok_and(|s| s == "server");
    fixture_of(&WRITER);
    // The API server of the bench's own, with the gate on, kept until the
    // end.
    let (_gated, ring, ns) = ring_namespace(server).await;
    let names: Vec<String> = (0..parents).map(|i| format!("w{i}")).collect();
    create_widgets(&ns, &names).await;

    let moves: Moves = Arc::default();
    let watch = if ring.server {
        let uids = uids(&ns).await;
        let leases: Api<Lease> = Api::namespaced(ns.client(), ns.name());
        tokio::spawn(record_views(leases, uids, moves.clone()))
    } else {
        tokio::spawn(record_moves(widgets(&ns), moves.clone()))
    };
    let mut table = Table::default();
    table.title(format!(
        "the ring: {parents} Widgets (each one ConfigMap), replicas as processes, {LEASE} Leases, selected by {}",
        if ring.server { "the API server (shardSelector)" } else { "labels" }
    ));

    // 1. Three replicas to convergence.
    let (mut replicas, convergence, worst_ratio) =
        three_replicas(&ring, &ns, &names, &mut table).await;

    // 2. Churn; a fourth joins; one leaves, one is killed.
    let last: Arc<Mutex<BTreeMap<String, String>>> = Arc::new(Mutex::new(
        names.iter().map(|n| (n.clone(), n.clone())).collect(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let churn = tokio::spawn(churn(
        widgets(&ns),
        names.clone(),
        last.clone(),
        rate,
        stop.clone(),
    ));
    join_and_leave(&ring, &ns, &names, &mut replicas, &mut table).await;

    // 3. The churn stops; every change made; steady state.
    stop.store(true, Ordering::Relaxed);
    let changes = churn.await.expect("the churn");
    let wanted = last.lock().unwrap().clone();
    let lost = lost_updates(&ns, &wanted).await;
    let live: Vec<&Replica> = replicas.iter().filter(|r| r.stopped.is_none()).collect();
    let steady = steady_requests(&live).await;
    watch.abort();

    let (two_writers, unowned) = {
        let moves = moves.lock().unwrap();
        (
            written_after_moving(&replicas, &moves),
            longest_unowned(&replicas, &moves),
        )
    };
    table.section("correctness");
    table.row("spec changes", changes);
    print!("{}", table.finish());
    println!("written by two replicas at once: {two_writers}");
    println!("lost updates: {lost}");
    println!("longest time a parent had no owner: {unowned:.1} s");
    println!("cached objects per replica / all: {worst_ratio:.3}");
    for r in &live {
        println!("RSS of {}: {:.1} MiB", r.prefix, rss_mib(r.host.pid()));
    }
    println!(
        "convergence time (three replicas): {:.1} s",
        convergence.as_secs_f64()
    );
    println!("requests per second at steady state: {steady:.1}");
    let held = two_writers == 0 && lost == 0 && steady == 0.0 && worst_ratio < 0.4;
    println!(
        "bench-shards: {}",
        if held { "every line green" } else { "FAILED" }
    );
    for mut r in replicas {
        r.host.stop();
    }
    if !held {
        std::process::exit(1);
    }
}

/// The API server the ring runs against (the bench's own, with the
/// ShardedListAndWatch gate on, when the API server selects; kept until the
/// end), the ring, and the namespace of the bench.
async fn ring_namespace(server: bool) -> (Option<RestartableServer>, Ring, TestNamespace) {
    if server {
        let dir = paths::target_tmpdir().join(format!("bench-shards-{}", std::process::id()));
        let gated = tokio::task::block_in_place(|| {
            RestartableServer::start_with(&dir, "--feature-gates=ShardedListAndWatch=true")
        })
        .expect("an API server with ShardedListAndWatch on");
        let admin = gated.client().await.expect("an admin client");
        for crd in fixture().crds.clone() {
            reconciler_testsupport::install_crd(&admin, crd)
                .await
                .expect("installing a CRD");
        }
        let ns = TestNamespace::on(admin, "bench-shards")
            .await
            .expect("a test namespace");
        let ring = Ring {
            kubeconfig: gated.kubeconfig(),
            server: true,
        };
        (Some(gated), ring, ns)
    } else {
        let ns = TestNamespace::new("bench-shards")
            .await
            .expect("a test namespace");
        install_crds(&ns.client()).await;
        let ring = Ring {
            kubeconfig: reconciler_testsupport::kubeconfig_path().expect("the test apiserver"),
            server: false,
        };
        (None, ring, ns)
    }
}

/// A Widget for each name, created.
async fn create_widgets(ns: &TestNamespace, names: &[String]) {
    let parents = names.len();
    let client = ns.client();
    let names: Vec<String> = (0..parents).map(|i| format!("w{i}")).collect();
    let created = Instant::now();
    stream::iter(names.iter())
        .map(|n| {
            let (client, ns_name) = (client.clone(), ns.name().to_owned());
            async move { create(&client, &ns_name, widget(n, json!({"data": {"n": n}}))).await }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    eprintln!(
        "bench: {parents} Widgets created in {:?}",
        created.elapsed()
    );
}

/// Section 1: three replicas to convergence, each caching its share; the
/// replicas, the time to convergence, and the largest share cached.
async fn three_replicas(
    ring: &Ring,
    ns: &TestNamespace,
    names: &[String],
    table: &mut Table,
) -> (Vec<Replica>, Duration, f64) {
    let parents = names.len();
    let started = Instant::now();
    let replicas: Vec<Replica> = (0..3).map(|i| start(ring, ns, i)).collect();
    let three = converge(ring, ns, names, &replicas, 3).await;
    let convergence = started.elapsed();
    // The cache gauges are sampled every second.
    tokio::time::sleep(CACHE_GAUGES).await;
    table.section("three replicas");
    table.row("convergence", format!("{:.1} s", convergence.as_secs_f64()));
    let mut worst_ratio: f64 = 0.0;
    for r in &replicas {
        let cached = cached(r.metrics).await;
        let ratio = cached as f64 / (2 * parents) as f64;
        worst_ratio = worst_ratio.max(ratio);
        table.row(
            &format!("{}: cached objects / all", r.prefix),
            format!("{cached} / {} = {ratio:.3}", 2 * parents),
        );
        let rss = rss_mib(r.host.pid());
        table.row(
            &format!("{}: RSS / per cached object (all of it)", r.prefix),
            format!(
                "{rss:.1} MiB / {:.0} B",
                rss * f64::from(1 << 20) / cached.max(1) as f64
            ),
        );
    }
    println!("cached objects per replica / all: {worst_ratio:.3}");
    drop(three);

    (replicas, convergence, worst_ratio)
}

/// Section 2, under churn: a fourth replica joins, then one leaves
/// (SIGTERM) and one is killed (SIGKILL), each to convergence.
async fn join_and_leave(
    ring: &Ring,
    ns: &TestNamespace,
    names: &[String],
    replicas: &mut Vec<Replica>,
    table: &mut Table,
) {
    let parents = names.len();
    let joined = Instant::now();
    replicas.push(start(ring, ns, 3));
    converge(ring, ns, names, replicas, 4).await;
    let join_convergence = joined.elapsed();
    tokio::time::sleep(CACHE_GAUGES).await;
    table.section("a fourth joins, under churn");
    table.row(
        "convergence",
        format!("{:.1} s", join_convergence.as_secs_f64()),
    );
    for r in replicas.iter() {
        table.row(
            &format!("{}: cached objects / all", r.prefix),
            format!(
                "{:.3}",
                cached(r.metrics).await as f64 / (2 * parents) as f64
            ),
        );
    }

    let left = Instant::now();
    let leaving = leave(&mut replicas[0].host).await;
    replicas[0].stopped = Some(Timestamp::now());
    replicas[1].host.kill();
    replicas[1].stopped = Some(Timestamp::now());
    converge(ring, ns, names, replicas, 2).await;
    table.section("one leaves (SIGTERM), one is killed (SIGKILL), under churn");
    table.row("the leaving one exited", leaving);
    table.row(
        "convergence",
        format!("{:.1} s", left.elapsed().as_secs_f64()),
    );
}

/// The requests per second of the live replicas over [`STEADY`], once the
/// last change's consequences are past.
async fn steady_requests(live: &[&Replica]) -> f64 {
    // Past the last change's consequences: a pass whose changes found no
    // ReconcilePlans served has the host look again whether they are, once,
    // up to 10 s later (operator::PLANS_PROBED_EVERY; this bench installs no
    // plans CRD), so the window opens 13 s after the last change was made.
    tokio::time::sleep(Duration::from_secs(13)).await;
    let before: Vec<usize> = live.iter().map(|r| requests(&r.host)).collect();
    tokio::time::sleep(STEADY).await;
    let after: Vec<usize> = live.iter().map(|r| requests(&r.host)).collect();
    before
        .iter()
        .zip(&after)
        .map(|(b, a)| (a - b) as f64)
        .sum::<f64>()
        / STEADY.as_secs_f64()
}

/// SIGTERM, then as Kubernetes does: SIGKILL after 30 s (its default
/// grace). How the process ended, and after how long.
async fn leave(host: &mut Host) -> String {
    let started = Instant::now();
    host.signal("TERM");
    while host.is_alive() && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = host.stop();
    format!("{status} after {:.1} s", started.elapsed().as_secs_f64())
}

/// Records every change of a Widget's member label.
async fn record_moves(api: Api<DynamicObject>, moves: Moves) {
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    // A failed watch is retried (with backoff), not the end of the record.
    while let Some(event) = events.next().await {
        let Ok(w) = event else { continue };
        let name = w.metadata.name.clone().unwrap_or_default();
        let member = w
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(MEMBER))
            .cloned();
        let mut moves = moves.lock().unwrap();
        let seen = moves.entry(name).or_default();
        if seen.last().map(|(_, m)| m) != Some(&member) {
            seen.push((Timestamp::now(), member));
        }
    }
}

/// Each Widget's uid, by name.
async fn uids(ns: &TestNamespace) -> HashMap<String, String> {
    let list = widgets(ns)
        .list(&Default::default())
        .await
        .expect("Widgets");
    list.items
        .into_iter()
        .map(|w| {
            (
                w.metadata.name.unwrap_or_default(),
                w.metadata.uid.unwrap_or_default(),
            )
        })
        .collect()
}

/// The member the view `view` lets pass each slot (none while it moves):
/// computed once a view (each member's slots hash every slot).
fn passers(view: &View) -> HashMap<slots::Slot, String> {
    let mut by_slot = HashMap::new();
    for m in view.members.iter().chain(view.next.iter().flatten()) {
        for slot in view.passable(m) {
            by_slot.insert(slot, m.clone());
        }
    }
    by_slot
}

/// Records, for every Widget of `uids`, each change of the member the
/// coordinator's published view lets pass its slot.
async fn record_views(leases: Api<Lease>, uids: HashMap<String, String>, moves: Moves) {
    let config = watcher::Config::default().fields(&format!("metadata.name={RING}-coordinator"));
    let mut events = watcher(leases, config)
        .default_backoff()
        .applied_objects()
        .boxed();
    let mut last = View::default();
    // A failed watch is retried (with backoff), not the end of the record.
    while let Some(event) = events.next().await {
        let Ok(lease) = event else { continue };
        let view = View::read(&lease);
        if view.epoch <= last.epoch {
            continue;
        }
        let now = Timestamp::now();
        eprintln!(
            "bench: view {} seen at {now}: members {:?}, next {:?}",
            view.epoch, view.members, view.next
        );
        let passers = passers(&view);
        let mut moves = moves.lock().unwrap();
        for (name, uid) in &uids {
            let member = passers.get(&slots::of_uid(uid)).cloned();
            let seen = moves.entry(name.clone()).or_default();
            if seen.last().map(|(_, m)| m) != Some(&member) {
                seen.push((now, member));
            }
        }
        last = view;
    }
}

/// Waits until the live members are `count` of `replicas` and every
/// Widget, and its ConfigMap, is labelled with its owner among them (where
/// the API server selects: the view settled on them, each ConfigMap
/// labelled with its Widget's slot, each replica caching exactly its
/// slots' Widgets); returns the members.
async fn converge(
    ring: &Ring,
    ns: &TestNamespace,
    names: &[String],
    replicas: &[Replica],
    count: usize,
) -> Vec<String> {
    let leases: Api<Lease> = Api::namespaced(ns.client(), ns.name());
    let config_maps = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    let deadline = Instant::now() + LIMIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "not converged on {count} replicas within {LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let Ok(all) = leases.list(&Default::default()).await else {
            continue;
        };
        let live = members::live(RING, &all.items, Timestamp::now());
        let running = replicas.iter().filter(|r| r.stopped.is_none()).count();
        if live.len() != count || running != count {
            continue;
        }
        if ring.server {
            if converged_on_slots(ns, names.len(), replicas, &live, &all.items).await {
                return live;
            }
            continue;
        }
        let labels = |list: Vec<DynamicObject>| -> HashMap<String, Option<String>> {
            list.into_iter()
                .map(|o| {
                    let member = o
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(MEMBER))
                        .cloned();
                    (o.metadata.name.unwrap_or_default(), member)
                })
                .collect()
        };
        let (Ok(ws), Ok(cms)) = (
            widgets(ns).list(&Default::default()).await,
            config_maps.list(&Default::default()).await,
        ) else {
            continue;
        };
        let (ws, cms) = (labels(ws.items), labels(cms.items));
        let done = names.iter().all(|n| {
            let owner = assignment::owner(&live, ns.name(), n).map(str::to_owned);
            ws.get(n) == Some(&owner) && cms.get(&format!("{n}-config")) == Some(&owner)
        });
        if done {
            return live;
        }
    }
}

/// Where the API server selects: whether the view published in `leases`
/// settled on `live`, every one of `parents` ConfigMaps carries its
/// Widget's slot, and each running replica caches exactly its slots'
/// Widgets.
async fn converged_on_slots(
    ns: &TestNamespace,
    parents: usize,
    replicas: &[Replica],
    live: &[String],
    leases: &[Lease],
) -> bool {
    let coordinator = format!("{RING}-coordinator");
    let Some(view) = leases
        .iter()
        .find(|l| l.metadata.name.as_deref() == Some(coordinator.as_str()))
        .map(View::read)
    else {
        return false;
    };
    if view.members != live || view.next.is_some() {
        return false;
    }
    let uids = uids(ns).await;
    let config_maps = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    let Ok(cms) = config_maps.list(&Default::default()).await else {
        return false;
    };
    let slotted = cms
        .items
        .iter()
        .filter(|cm| {
            let name = cm.metadata.name.as_deref().unwrap_or_default();
            let slot = cm.metadata.labels.as_ref().and_then(|l| l.get(slots::SLOT));
            name.strip_suffix("-config")
                .and_then(|w| uids.get(w))
                .is_some_and(|uid| slot == Some(&slots::of_uid(uid).to_string()))
        })
        .count();
    if slotted != parents {
        return false;
    }
    for r in replicas.iter().filter(|r| r.stopped.is_none()) {
        let Some(member) = live.iter().find(|m| r.is(m)) else {
            return false;
        };
        let share = slots::owned(live, member);
        let own = uids
            .values()
            .filter(|u| share.contains(&slots::of_uid(u)))
            .count();
        let Ok(m) = Metrics::scrape(r.metrics).await else {
            return false;
        };
        let by = m.by_labels("reconciler_cached_objects", &["kind"]);
        let widgets = by.get(&vec!["Widget".to_owned()]).copied().unwrap_or(0.0) as usize;
        if widgets != own {
            return false;
        }
    }
    true
}

/// Changes one Widget's data at a time, `rate` a second, until `stop`;
/// returns how many changes were made.
async fn churn(
    api: Api<DynamicObject>,
    names: Vec<String>,
    last: Arc<Mutex<BTreeMap<String, String>>>,
    rate: f64,
    stop: Arc<AtomicBool>,
) -> u64 {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut made = 0;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let name = &names[(state >> 33) as usize % names.len()];
        let data = format!("{name}-{made}");
        let patch = json!({"spec": {"data": {"n": data}}});
        if api
            .patch(name, &Default::default(), &kube::api::Patch::Merge(&patch))
            .await
            .is_ok()
        {
            last.lock().unwrap().insert(name.clone(), data);
            made += 1;
        }
    }
    made
}

/// How many ConfigMaps do not hold their Widget's last data 120 s after the
/// churn stopped.
async fn lost_updates(ns: &TestNamespace, last: &BTreeMap<String, String>) -> usize {
    let api = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let behind = match api.list(&Default::default()).await {
            Ok(list) => {
                let held: HashMap<String, String> = list
                    .items
                    .into_iter()
                    .map(|o| {
                        (
                            o.metadata.name.clone().unwrap_or_default(),
                            o.data["data"]["n"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect();
                last.iter()
                    .filter(|(n, d)| held.get(&format!("{n}-config")) != Some(*d))
                    .count()
            }
            Err(_) => last.len(),
        };
        if behind == 0 || Instant::now() > deadline {
            return behind;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Requests a replica sent so far (its Leases' aside).
fn requests(host: &Host) -> usize {
    host.log_text()
        .lines()
        .filter(|l| l.trim_end().ends_with("requesting") && !l.contains("/leases/"))
        .count()
}

/// Writes of a Widget (its status, its ConfigMap) by a replica after the
/// watch saw the Widget assigned to another member, unless the watch saw
/// it come to that replica within 2 s after (the new owner's first writes,
/// sent before the watch saw the move).
fn written_after_moving(
    replicas: &[Replica],
    moves: &HashMap<String, Vec<(Timestamp, Option<String>)>>,
) -> usize {
    let mut count = 0;
    for r in replicas {
        for (at, widget) in writes(&r.host) {
            let Some(seen) = moves.get(&widget) else {
                continue;
            };
            let before = seen.iter().rev().find(|(t, _)| *t <= at);
            let owner_then = before.and_then(|(_, m)| m.as_deref());
            if owner_then.is_some_and(|m| r.is(m)) {
                continue;
            }
            let soon = seen.iter().find(|(t, m)| {
                *t > at
                    && t.duration_since(at) <= jiff::SignedDuration::from_secs(2)
                    && m.as_deref().is_some_and(|m| r.is(m))
            });
            if soon.is_none() && owner_then.is_some() {
                eprintln!(
                    "bench: {} wrote {widget} at {at} while it was {owner_then:?}'s",
                    r.prefix
                );
                count += 1;
            }
        }
    }
    count
}

/// The writes (time, Widget) in a replica's request log: PATCHes of a
/// Widget's status or of its ConfigMap.
fn writes(host: &Host) -> Vec<(Timestamp, String)> {
    host.log_text()
        .lines()
        .filter(|l| l.trim_end().ends_with("requesting") && l.contains("http.method=PATCH"))
        .filter_map(|l| {
            let at: Timestamp = l.split_whitespace().next()?.parse().ok()?;
            let url = l.split("http.url=").nth(1)?.split_whitespace().next()?;
            let path = url.split('?').next()?;
            let widget = if let Some(rest) = path.split("/widgets/").nth(1) {
                rest.strip_suffix("/status")?.to_owned()
            } else {
                path.split("/configmaps/")
                    .nth(1)?
                    .strip_suffix("-config")?
                    .to_owned()
            };
            Some((at, widget))
        })
        .collect()
}

/// The longest a Widget stayed assigned to a stopped replica (from its
/// stop) or to none (after it first had one), until the watch saw it
/// assigned to a running one.
fn longest_unowned(
    replicas: &[Replica],
    moves: &HashMap<String, Vec<(Timestamp, Option<String>)>>,
) -> f64 {
    let stopped_at = |member: &str| {
        replicas
            .iter()
            .find(|r| r.is(member))
            .and_then(|r| r.stopped)
    };
    let mut longest: f64 = 0.0;
    for seen in moves.values() {
        for (i, (at, member)) in seen.iter().enumerate() {
            let from = match member {
                Some(m) => match stopped_at(m) {
                    Some(stop) if stop >= *at => stop,
                    Some(_) => *at,
                    None => continue,
                },
                None if i > 0 => *at,
                None => continue,
            };
            let until = seen.get(i + 1).map_or_else(Timestamp::now, |(t, _)| *t);
            if until > from {
                longest = longest.max(until.duration_since(from).as_secs_f64());
            }
        }
    }
    longest
}

/// Widgets and ConfigMaps a replica caches, by its metrics.
async fn cached(metrics: SocketAddr) -> usize {
    let m = Metrics::scrape(metrics)
        .await
        .expect("the replica's metrics");
    let by = m.by_labels("reconciler_cached_objects", &["kind"]);
    ["Widget", "ConfigMap"]
        .iter()
        .map(|k| by.get(&vec![(*k).to_owned()]).copied().unwrap_or(0.0) as usize)
        .sum()
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}
