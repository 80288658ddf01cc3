//! A hot swap under load (issue 7's figure): `reconciler-host run` as a
//! child process serving the Hostile test guest (`--guests-poll 200ms`)
//! against the real local kube-apiserver of `tests/support`, N Hostile
//! objects whose `spec.message` changes at a steady rate (each change is
//! one pass), while the guest's `variant-message` module (which prefixes
//! every healthy message with `v2: `) is put in place by a ConfigMap-style
//! `..data` symlink flip, as `tests/hotswap.rs` does.
//!
//! 1. Setup: the N objects created (32 at once) and evaluated by the base
//!    module (not measured).
//! 2. Churn: spec changes at `BENCH_RATE` a second, round robin over the
//!    objects, up to 64 requests in flight (one at a time per object, so
//!    each object's last message is known). After 1 s of warm-up the
//!    passes are counted (`reconciler_passes_total`) over 5 s.
//! 3. The flip; the churn runs 3 s more (passes counted again), then stops.
//!    Every 50 ms a list of every object (lists overlap when one is slower)
//!    records when each first shows a `v2: ` Behaving message (max and p50
//!    over the objects, from the flip, at the arrival of the list's answer).
//! 4. Every object must end on `v2: <its last message>` (no lost update),
//!    and no pass may fail (`reconciler_guest_errors_total`).
//!
//! `make bench-hotswap`, or `cargo bench -p reconciler-host --bench
//! hotswap`. Environment: `BENCH_OBJECTS` (default 100), `BENCH_RATE`
//! (spec changes a second, default 200), `BENCH_CONTENTION` (busy loops
//! competing for the CPUs from the churn on, at most 60 s, default none:
//! `BENCH_CONTENTION=2` loads both cores of the development VM),
//! `RECONCILER_TEST_KUBECONFIG` (reuse a running test apiserver).

use reconciler_host_harness::bench as common;
use reconciler_host_harness::guests as support;
use reconciler_host_harness::objects;

use common::{Contention, HostProcess, Metrics, Table, env_num, free_port};
use std::ffi::OsStr;
use std::net::SocketAddr;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use futures::{StreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams};
use reconciler_host::runtime::{ArtifactCache, Limits, Runtime, RuntimeConfig, artifacts::digest};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

use tokio::sync::{Mutex, Semaphore};

const API_VERSION: &str = "testing.reconciler.dev/v1";
const KIND: &str = "Hostile";
/// The file the host serves the kind from.
const FILE: &str = "hostile_guest.wasm";
const GUESTS_POLL: &str = "200ms";
/// Requests in flight while creating objects.
const CREATING: usize = 32;
/// Requests in flight during the churn.
const IN_FLIGHT: usize = 64;
/// Status polling after the flip.
const POLL: Duration = Duration::from_millis(50);
const WARM_UP: Duration = Duration::from_secs(1);
const BEFORE: Duration = Duration::from_secs(5);
const DURING: Duration = Duration::from_secs(3);
/// The limit on each wait (setup, convergence).
const LIMIT: Duration = Duration::from_secs(120);

fn main() {
    let objects: usize = env_num("BENCH_OBJECTS").unwrap_or(100);
    let rate: f64 = env_num("BENCH_RATE").unwrap_or(200.0);
    assert!(objects > 0, "BENCH_OBJECTS must be at least 1");
    assert!(rate > 0.0, "BENCH_RATE must be positive");

    // Blocking: the guest's two modules, the base compiled into the cache
    // the host uses; the apiserver started (or reused).
    let modules = Modules::build();
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    eprintln!("bench: apiserver kubeconfig {}", kubeconfig.display());

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match rt.block_on(bench(&modules, objects, rate, &kubeconfig)) {
        Ok(report) => print!("{report}"),
        Err(e) => {
            eprintln!("bench-hotswap FAILED: {e:#}");
            std::process::exit(1);
        }
    }
}

/// The base module and the `variant-message` one, and the kind's CRD.
struct Modules {
    base: Vec<u8>,
    message: Vec<u8>,
    crd: CustomResourceDefinition,
    dir: PathBuf,
    cache_dir: PathBuf,
}

/// Builds the hostile guest with `feature` (or none) and returns its bytes.
fn build(feature: Option<&str>) -> Vec<u8> {
    std::fs::read(support::guest_wasm_with("hostile-guest", feature)).expect("the guest")
}

impl Modules {
    fn build() -> Modules {
        let message = build(Some("variant-message"));
        // The plain guest last: the test binaries expect it in place.
        let base = build(None);
        assert_ne!(digest(&base), digest(&message), "distinct modules");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hotswap-bench");
        let cache_dir = dir.join("modules");
        std::fs::create_dir_all(&cache_dir).expect("a bench directory");
        let runtime = Runtime::new(RuntimeConfig {
            limits: Limits::default(),
            cache: Some(ArtifactCache::new(cache_dir.clone())),
        })
        .expect("a runtime");
        let module = runtime
            .load("hostile_guest", &base)
            .expect("the guest loads");
        let crd = serde_json::from_value(reconciler_host::crd::render(module.spec()))
            .expect("the rendered CRD is a CRD");
        Modules {
            base,
            message,
            crd,
            dir,
            cache_dir,
        }
    }
}

/// A ConfigMap volume: `hostile_guest.wasm -> ..data/hostile_guest.wasm`,
/// `..data -> ..<timestamp>`.
fn configmap(dir: &Path, bytes: &[u8]) -> Result<()> {
    let version = dir.join("..2026_11_29_00_00_00.1");
    std::fs::create_dir(&version)?;
    std::fs::write(version.join(FILE), bytes)?;
    symlink("..2026_11_29_00_00_00.1", dir.join("..data"))?;
    symlink(format!("..data/{FILE}"), dir.join(FILE))?;
    Ok(())
}

/// The kubelet's update of a ConfigMap volume: a new timestamped
/// directory, a new `..data` link renamed over the old one, the old
/// directory removed.
fn configmap_update(dir: &Path, bytes: &[u8]) -> Result<()> {
    let version = dir.join("..2026_11_29_00_00_00.2");
    std::fs::create_dir(&version)?;
    std::fs::write(version.join(FILE), bytes)?;
    symlink("..2026_11_29_00_00_00.2", dir.join("..data_tmp"))?;
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data"))?;
    std::fs::remove_dir_all(dir.join("..2026_11_29_00_00_00.1"))?;
    Ok(())
}

async fn bench(m: &Modules, n: usize, rate: f64, kubeconfig: &Path) -> Result<String> {
    let ns = TestNamespace::new("bench-swap").await?;
    reconciler_testsupport::install_crd(&ns.client(), m.crd.clone())
        .await
        .context("installing the Hostile CRD")?;
    let result = run(&ns, m, n, rate, kubeconfig).await;
    if let Err(e) = ns.cleanup().await {
        eprintln!("bench: deleting the namespace: {e:#}");
    }
    result
}

fn object_name(i: usize) -> String {
    format!("h{i:04}")
}

/// The Behaving condition's message, if the object is Ready and Behaving
/// True at its generation.
fn behaving(o: &Value) -> Option<&str> {
    let generation = o["metadata"]["generation"].as_i64()?;
    let conditions = o["status"]["conditions"].as_array()?;
    let find = |t: &str| conditions.iter().find(|c| c["type"] == t);
    let b = find("Behaving")?;
    let ready = find("Ready")?;
    (b["status"] == "True"
        && ready["status"] == "True"
        && b["observedGeneration"].as_i64() == Some(generation))
    .then(|| b["message"].as_str())
    .flatten()
}

/// Every object's Behaving message (`None`: not evaluated at its generation).
async fn messages(api: &Api<DynamicObject>) -> Result<Vec<(String, Option<String>)>> {
    let list = tokio::time::timeout(Duration::from_secs(30), api.list(&ListParams::default()))
        .await
        .map_err(|_| anyhow!("listing the objects took over 30 s"))?
        .context("listing the objects")?;
    list.items
        .into_iter()
        .map(|o| {
            let name = o.metadata.name.clone().unwrap_or_default();
            let v = serde_json::to_value(o)?;
            Ok((name, behaving(&v).map(str::to_owned)))
        })
        .collect()
}

/// Polls until every object shows `want(i)`; the time it took.
async fn wait_all(
    api: &Api<DynamicObject>,
    want: impl Fn(usize) -> String,
    n: usize,
) -> Result<Result<Duration, String>> {
    let started = Instant::now();
    loop {
        let state = messages(api).await?;
        let wrong: Vec<String> = (0..n)
            .filter_map(|i| {
                let name = object_name(i);
                let have = state
                    .iter()
                    .find(|(o, _)| *o == name)
                    .and_then(|(_, m)| m.clone());
                (have.as_deref() != Some(&want(i)))
                    .then(|| format!("{name}: {have:?}, want {:?}", want(i)))
            })
            .collect();
        if wrong.is_empty() {
            return Ok(Ok(started.elapsed()));
        }
        if started.elapsed() > LIMIT {
            return Ok(Err(format!(
                "{} of {n} not on their final status after {LIMIT:?}; first: {}",
                wrong.len(),
                wrong[0]
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The churn: spec changes at `rate` a second, round robin, one request at
/// a time per object, until `stop`.
struct Churn {
    last: Vec<Arc<Mutex<u64>>>,
    sent: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Churn {
    fn message(seq: u64) -> String {
        format!("c-{seq}")
    }

    fn start(
        api: &Api<DynamicObject>,
        n: usize,
        rate: f64,
    ) -> (Churn, tokio::task::JoinHandle<()>) {
        let churn = Churn {
            last: (0..n).map(|_| Arc::new(Mutex::new(0))).collect(),
            sent: Arc::default(),
            failed: Arc::default(),
            stop: Arc::default(),
        };
        let (last, sent, failed, stop) = (
            churn.last.clone(),
            churn.sent.clone(),
            churn.failed.clone(),
            churn.stop.clone(),
        );
        let api = api.clone();
        let task = tokio::spawn(async move {
            let permits = Arc::new(Semaphore::new(IN_FLIGHT));
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
            let mut i = 0usize;
            while !stop.load(Ordering::SeqCst) {
                tick.tick().await;
                let permit = permits.clone().acquire_owned().await.expect("open");
                let (api, slot, sent, failed) =
                    (api.clone(), last[i].clone(), sent.clone(), failed.clone());
                let name = object_name(i);
                i = (i + 1) % last.len();
                tokio::spawn(async move {
                    let mut seq = slot.lock().await;
                    let next = *seq + 1;
                    let patch = json!({"spec": {"message": Churn::message(next)}});
                    match api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        Ok(_) => *seq = next,
                        Err(e) => {
                            if failed.fetch_add(1, Ordering::SeqCst) == 0 {
                                eprintln!("bench: patching {name}: {e}");
                            }
                        }
                    }
                    sent.fetch_add(1, Ordering::SeqCst);
                    drop(permit);
                });
            }
            // Every request in flight answered.
            let _all = permits.acquire_many(IN_FLIGHT as u32).await.expect("open");
        });
        (churn, task)
    }
}

async fn run(
    ns: &TestNamespace,
    m: &Modules,
    n: usize,
    rate: f64,
    kubeconfig: &Path,
) -> Result<String> {
    let client = ns.client();
    let name = ns.name().to_owned();
    let api = objects::api(&client, &name, API_VERSION, KIND);
    let (mut host, guests, metrics) = start_host(m, &name, kubeconfig).await?;

    // --- setup (not measured) ---
    let setup = create_all(&client, &name, &api, n).await?;
    ensure!(host.is_alive(), "the host exited during the setup");

    let swap = swap_under_churn(&api, m, &guests, metrics, n, rate).await?;
    ensure!(host.is_alive(), "the host exited during the bench");

    // --- the report ---
    let mut out = report(n, rate, setup, &swap);
    if host.stop_reported(&mut out) {
        let _ = std::fs::remove_dir_all(m.dir.join(&name));
    }
    Ok(out.finish())
}

/// The host on a ConfigMap-style guests directory holding the base module,
/// synced; the directory and the host's metrics address.
async fn start_host(
    m: &Modules,
    name: &str,
    kubeconfig: &Path,
) -> Result<(HostProcess, PathBuf, SocketAddr)> {
    let guests = m.dir.join(name).join("guests");
    let _ = std::fs::remove_dir_all(&guests);
    std::fs::create_dir_all(&guests).context("a guests directory")?;
    configmap(&guests, &m.base).context("the ConfigMap-style guests directory")?;
    let metrics = free_port()?;
    let log = guests
        .parent()
        .context("a bench directory")?
        .join("host.log");
    let args: Vec<&OsStr> = vec![
        "--cache-dir".as_ref(),
        m.cache_dir.as_os_str(),
        "run".as_ref(),
        "--guests".as_ref(),
        guests.as_os_str(),
        "--namespaces".as_ref(),
        name.as_ref(),
        "--guests-poll".as_ref(),
        GUESTS_POLL.as_ref(),
    ];
    let mut host = HostProcess::start(kubeconfig, log, metrics, &args)?;
    host.wait_synced(LIMIT).await?;
    Ok((host, guests, metrics))
}

/// `n` objects created and evaluated by the base module; how long it took.
async fn create_all(
    client: &kube::Client,
    name: &str,
    api: &Api<DynamicObject>,
    n: usize,
) -> Result<Duration> {
    let setup_started = Instant::now();
    tokio::time::timeout(
        LIMIT,
        stream::iter(0..n)
            .map(|i| {
                let (client, name) = (client.clone(), name.to_owned());
                async move {
                    objects::create(
                        &client,
                        &name,
                        json!({
                            "apiVersion": API_VERSION,
                            "kind": KIND,
                            "metadata": {"name": object_name(i)},
                            "spec": {"behavior": "ok", "message": Churn::message(0)},
                        }),
                    )
                    .await
                }
            })
            .buffer_unordered(CREATING)
            .collect::<Vec<()>>(),
    )
    .await
    .map_err(|_| anyhow!("creating {n} objects took over {LIMIT:?}"))?;
    if let Err(e) = wait_all(api, |_| Churn::message(0), n).await? {
        bail!("the base module did not evaluate every object: {e}");
    }
    let setup = setup_started.elapsed();
    Ok(setup)
}

/// The passes the host made and the spec changes sent, at one moment.
struct Sample {
    passes: f64,
    sent: u64,
    at: Instant,
}

impl Sample {
    async fn take(metrics: SocketAddr, churn: &Churn) -> Result<Sample> {
        Ok(Sample {
            passes: Metrics::scrape(metrics)
                .await?
                .counter("reconciler_passes_total"),
            sent: churn.sent.load(Ordering::SeqCst),
            at: Instant::now(),
        })
    }
}

/// What the swap under churn measured.
struct Swap {
    /// Before the churn's window before the flip, at the flip, and at the
    /// end of the window from it.
    samples: [Sample; 3],
    churn: Churn,
    polled: Polled,
    /// Every object on its last message, or which were not.
    settled: Result<Duration, String>,
    /// The busy loops competing for the CPUs.
    loops: usize,
    /// The host's metrics at the end.
    end: Metrics,
}

/// The churn on, the ..data flip to the new module under it, the churn off,
/// and every object then on `v2: <its last message>`.
async fn swap_under_churn(
    api: &Api<DynamicObject>,
    m: &Modules,
    guests: &Path,
    metrics: SocketAddr,
    n: usize,
    rate: f64,
) -> Result<Swap> {
    // --- churn before the swap ---
    let contention = Contention::from_env(Duration::from_secs(60))?;
    let (churn, churning) = Churn::start(api, n, rate);
    tokio::time::sleep(WARM_UP).await;
    let before = Sample::take(metrics, &churn).await?;
    tokio::time::sleep(BEFORE).await;
    let at_flip = Sample::take(metrics, &churn).await?;

    // --- the flip, the churn on for DURING ---
    let flipped = Instant::now();
    configmap_update(guests, &m.message).context("the ..data flip")?;
    let first_v2 = tokio::spawn(poll_first_v2(api.clone(), n, flipped));
    tokio::time::sleep(DURING.saturating_sub(flipped.elapsed())).await;
    let during = Sample::take(metrics, &churn).await?;
    churn.stop.store(true, Ordering::SeqCst);
    churning
        .await
        .map_err(|e| anyhow!("the churn failed: {e}"))?;
    let polled = first_v2
        .await
        .map_err(|e| anyhow!("the status polling failed: {e}"))?;

    // --- the end state ---
    let mut last = Vec::with_capacity(n);
    for slot in &churn.last {
        last.push(*slot.lock().await);
    }
    let settled = wait_all(api, |i| format!("v2: {}", Churn::message(last[i])), n).await?;
    let loops = contention.loops();
    drop(contention);
    let end = Metrics::scrape(metrics).await?;
    Ok(Swap {
        samples: [before, at_flip, during],
        churn,
        polled,
        settled,
        loops,
        end,
    })
}

/// The table of the bench, but for how the host stopped.
fn report(n: usize, rate: f64, setup: Duration, swap: &Swap) -> Table {
    let Swap {
        samples: [before, at_flip, during],
        churn,
        polled: Polled {
            seen,
            lists,
            round_trip,
        },
        settled,
        loops,
        end,
    } = swap;
    let (p0, s0, t0) = (before.passes, before.sent, before.at);
    let (p1, s1, t1) = (at_flip.passes, at_flip.sent, at_flip.at);
    let (p2, s2, t2) = (during.passes, during.sent, during.at);
    let mut out = Table::default();
    out.title(format!(
        "hot swap under load: {n} Hostile objects, target {rate} spec changes/s ({IN_FLIGHT} in flight), --guests-poll {GUESTS_POLL}, {} host, {} CPUs, {loops} busy loops competing",
        if cfg!(debug_assertions) { "dev" } else { "release" },
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    out.row(
        "setup: objects created and evaluated (not measured)",
        format!("{n} in {:.2} s", setup.as_secs_f64()),
    );
    let per_s = |d: f64, a: Instant, b: Instant| d / (b - a).as_secs_f64();
    out.section("load (reconciler_passes_total; spec changes answered)");
    out.row(
        &format!("before the swap ({:.1} s)", (t1 - t0).as_secs_f64()),
        format!(
            "{:.1} passes/s, {:.1} changes/s",
            per_s(p1 - p0, t0, t1),
            per_s((s1 - s0) as f64, t0, t1)
        ),
    );
    out.row(
        &format!("from the flip ({:.1} s)", (t2 - t1).as_secs_f64()),
        format!(
            "{:.1} passes/s, {:.1} changes/s",
            per_s(p2 - p1, t1, t2),
            per_s((s2 - s1) as f64, t1, t2)
        ),
    );
    out.row(
        "spec changes sent / failed (whole churn)",
        format!(
            "{} / {}",
            churn.sent.load(Ordering::SeqCst),
            churn.failed.load(Ordering::SeqCst)
        ),
    );
    out.section(&format!(
        "the swap: from the ..data flip until each object shows `v2: ` (lists every {} ms)",
        POLL.as_millis()
    ));
    let mut times: Vec<Duration> = seen.iter().flatten().copied().collect();
    times.sort();
    let quantile = |q: f64| -> String {
        if times.is_empty() {
            return "-".into();
        }
        let idx = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1;
        format!("{:.0} ms", times[idx].as_secs_f64() * 1e3)
    };
    out.row(
        "objects seen on the new module",
        format!(
            "{} of {n} ({lists} lists, mean round trip {:.0} ms)",
            times.len(),
            round_trip.as_secs_f64() * 1e3
        ),
    );
    out.row("first object", quantile(0.0));
    out.row("p50 over the objects", quantile(0.5));
    out.row(
        "max (every object)",
        if times.len() == n {
            quantile(1.0)
        } else {
            format!("not all within {LIMIT:?}")
        },
    );
    out.section("correctness");
    out.row(
        "reconciler_guest_errors_total (expected 0)",
        end.counter("reconciler_guest_errors_total"),
    );
    out.row(
        "reconciler_swaps_total / rollbacks",
        format!(
            "{} / {}",
            end.counter("reconciler_swaps_total"),
            end.counter("reconciler_rollbacks_total")
        ),
    );
    out.row(
        "every object on `v2: <its last message>` (no lost update)",
        match &settled {
            Ok(d) => format!("yes ({:.2} s after the churn stopped)", d.as_secs_f64()),
            Err(e) => format!("NO: {e}"),
        },
    );
    out.row("passes in total", end.counter("reconciler_passes_total"));
    out
}

/// When each object first showed a `v2: ` message, from the flip.
struct Polled {
    seen: Vec<Option<Duration>>,
    lists: usize,
    round_trip: Duration,
}

/// Lists every object every [`POLL`] (lists overlap when one takes longer,
/// at most 8 in flight) until each has shown a `v2: ` message; an object's
/// time is the answer's arrival of the first list showing it.
async fn poll_first_v2(api: Api<DynamicObject>, n: usize, flipped: Instant) -> Polled {
    let seen = Arc::new(std::sync::Mutex::new(vec![None::<Duration>; n]));
    let trips = Arc::new(std::sync::Mutex::new(Vec::<Duration>::new()));
    let permits = Arc::new(Semaphore::new(8));
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let pending = |seen: &std::sync::Mutex<Vec<Option<Duration>>>| {
        seen.lock().expect("unpoisoned").iter().any(Option::is_none)
    };
    while pending(&seen) && flipped.elapsed() < LIMIT {
        tick.tick().await;
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            continue;
        };
        let (api, seen, trips) = (api.clone(), seen.clone(), trips.clone());
        tokio::spawn(async move {
            let sent = Instant::now();
            if let Ok(state) = messages(&api).await {
                let at = flipped.elapsed();
                trips.lock().expect("unpoisoned").push(sent.elapsed());
                let mut seen = seen.lock().expect("unpoisoned");
                for (name, message) in state {
                    let i: Option<usize> = name.strip_prefix('h').and_then(|d| d.parse().ok());
                    if let (Some(i), Some(message)) = (i, message)
                        && i < n
                        && message.starts_with("v2: ")
                        && seen[i].is_none_or(|t| at < t)
                    {
                        seen[i] = Some(at);
                    }
                }
            }
            drop(permit);
        });
    }
    let _all = permits.acquire_many(8).await.expect("open");
    let trips = trips.lock().expect("unpoisoned").clone();
    let seen = seen.lock().expect("unpoisoned").clone();
    Polled {
        seen,
        lists: trips.len(),
        round_trip: trips.iter().sum::<Duration>() / (trips.len().max(1) as u32),
    }
}
