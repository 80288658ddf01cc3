//! The operator at scale (issue 5's benchmarks): `reconciler-host run` as a
//! child process, with the EvidenceAgent guest, against the real local
//! kube-apiserver of `tests/support` (the integration tests' harness and
//! objects, included by path), N healthy EvidenceAgents in one namespace.
//!
//! 1. Convergence: the shared Cluster, ObjectStore and credentials Secret
//!    are created first (setup, not measured); the host starts and syncs
//!    its caches; then
//!    the N agents are created (32 at once) and the clock runs from the
//!    first agent's creation until a list (every 250 ms per 1,000 agents)
//!    shows every agent Ready True/AsExpected at its generation. That is
//!    the whole path of a
//!    new agent: the host applies its Deployment and Service and issues its
//!    serving certificate (its CA's first signature included), the test
//!    API server's controllers make a ReplicaSet and a Pod, the
//!    kube-scheduler binds it to one of kwok's simulated Nodes, kwok
//!    reports it running, and the Deployment's status follows. The controllers' client may send 500 requests/s
//!    (bursts of 1,000; `tests/apiserver/main.go`), and each agent costs
//!    them a few (a ReplicaSet, a Pod, status updates). The time until
//!    every agent's serving certificate is ready (children applied,
//!    certificate issued) is the host's part alone.
//! 2. Steady state: `reconciler_api_requests_total` (every request the
//!    host sent), `reconciler_status_writes_total` and
//!    `reconciler_child_applies_total` scraped 10 s apart, touching
//!    nothing, then again while an unrelated ConfigMap (read by no agent)
//!    is touched once a second. The goal is 0 API requests/s.
//! 3. Host time per pass, API round trips excluded: p50 and p99 from the
//!    `reconciler_pass_host_seconds` histogram (bucket upper bounds: the
//!    smallest bucket holding the quantile); and the host process's CPU
//!    time (utime + stime from /proc/<pid>/stat) over the passes, which
//!    includes everything else the process does (watches, caches, JSON,
//!    TLS, status writes, Events).
//! 4. Passes, status writes and Events in total, the children applied and
//!    deleted, and the host's RSS.
//! 5. The host's API requests during convergence by verb and resource
//!    (`reconciler_api_requests_total`), and its writes per new agent
//!    against seed 000's minimum, each write above it explained.
//! 6. Memory: the host's RSS per cached object (every object of the kinds
//!    it watches, listed at the end) against their average JSON size, as
//!    listed and as the cache slims it.
//!
//! The native baseline: the same run again, back to back against the same
//! API server in a namespace of its own, with the host replaced by this
//! bench's binary started as the host (`operator/native_host.rs`): the same
//! operator, its EvidenceAgent passes evaluated by the guest crate's logic
//! compiled in (`operator/native.rs`) instead of the wasm module. Then the
//! ratios of the two. `BENCH_ORDER` gives the runs in order
//! (`wasm,native` by default; `wasm,native,native,wasm` cancels the drift
//! of a later run, as the API server's store grows; `wasm` alone skips the
//! baseline); each variant's figures are the mean of its runs.
//!
//! `make bench-operator`, or `cargo bench -p reconciler-host --bench
//! operator` (the host binary is the release build). Environment:
//! `BENCH_PARENTS` (default 1000), `BENCH_CONTENTION` (busy loops
//! competing for the CPUs from the agents' creation on, at most 300 s),
//! `BENCH_CONCURRENCY` (the host's
//! `--concurrency`; default: the host's own default), `BENCH_TIMEOUT_SECS`
//! (the convergence limit, default 900), `BENCH_PLANS=1` (install the
//! plans' manifests of `deploy/`: every agent's changes are then recorded
//! in a ReconcilePlan the host approves itself, approval auto; the totals
//! count the plans), `BENCH_ORDER` (above), `BENCH_PERF=<dir>` (`perf
//! record -g` of each host during convergence, to `<dir>/wasm.perf.data`
//! and `<dir>/native.perf.data`), `BENCH_HEAPTRACK=<dir>` (`heaptrack`
//! attached to each host from caches synced on, to
//! `<dir>/<variant>.heaptrack.zst`), `RECONCILER_TEST_KUBECONFIG` (reuse
//! a running test apiserver instead of starting one; its service IP range
//! must hold N Services: a server the bench starts gets a /16; and it must
//! run the deployment and replicaset controllers, as `tests/apiserver`
//! does).

#[path = "operator/native.rs"]
mod native;
#[path = "operator/native_host.rs"]
mod native_host;

use reconciler_host_harness::bench as common;
use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;

use common::{
    Contention, HostProcess, Memory, Metrics, Table, cpu_of, env_num, free_port, mib, ms,
};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use futures::{StreamExt, stream};
use kube::api::ListParams;
use reconciler_testsupport::TestNamespace;
use serde_json::json;

use objects::{CLUSTER, IMAGE};

/// Requests in flight while creating objects.
const IN_FLIGHT: usize = 32;
/// How often convergence is polled (a list of every agent), per 1,000
/// agents: the lists cost the API server the same each second at any N.
const POLL_PER_THOUSAND: Duration = Duration::from_millis(250);

fn poll_interval(parents: usize) -> Duration {
    POLL_PER_THOUSAND
        .mul_f64(parents as f64 / 1000.0)
        .max(POLL_PER_THOUSAND)
}
/// The steady-state windows.
const WINDOW: Duration = Duration::from_secs(10);
/// The limit on the setup (the shared objects).
const SETUP_LIMIT: Duration = Duration::from_secs(900);
/// The limit on the host's start (caches synced).
const START_LIMIT: Duration = Duration::from_secs(120);

#[allow(unsafe_code)]
fn main() {
    // This binary, started again as the native baseline's host.
    if std::env::var_os(native_host::ROLE).is_some() {
        if let Err(e) = native_host::main() {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
        return;
    }
    // `cargo bench` passes `--bench`; any other argument is a filter this
    // bench does not take.
    let parents: usize = env_num("BENCH_PARENTS").unwrap_or(1000);
    assert!(parents > 0, "BENCH_PARENTS must be at least 1");
    let concurrency: Option<usize> = env_num("BENCH_CONCURRENCY");
    let timeout = Duration::from_secs(env_num("BENCH_TIMEOUT_SECS").unwrap_or(900));

    // One Service per agent: the test apiserver's default service range
    // (a /24) holds about 250. A server this bench starts gets a /16; a
    // reused one (RECONCILER_TEST_KUBECONFIG) needs a range that large.
    let extra = std::env::var("APISERVER_ARGS").unwrap_or_default();
    // SAFETY: nothing else runs yet (no thread has been started).
    unsafe {
        std::env::set_var(
            "APISERVER_ARGS",
            format!("--service-cluster-ip-range=10.0.0.0/16 {extra}"),
        )
    };

    // Blocking: builds the guest (a no-op when fresh), compiles it into
    // the module cache the host uses, starts (or reuses) the apiserver.
    let fixture = harness::fixture();
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    eprintln!("bench: apiserver kubeconfig {}", kubeconfig.display());
    eprintln!(
        "bench: guest {} (kind spec: {} aspects)",
        fixture.guests_dir.display(),
        fixture.spec.aspects.len()
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let report = rt.block_on(bench(parents, concurrency, timeout, kubeconfig));
    match report {
        // Each variant's table was printed as it finished; this is the
        // comparison.
        Ok(report) => print!("{report}"),
        Err(e) => {
            eprintln!("bench-operator FAILED: {e:#}");
            std::process::exit(1);
        }
    }
}

/// What evaluates the EvidenceAgents' passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    /// The release `reconciler-host`, the guest's wasm module.
    Wasm,
    /// The same operator with the guest's logic compiled in.
    Native,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Wasm => "wasm guest (release reconciler-host)",
            Variant::Native => "native baseline (the guest crate compiled in)",
        }
    }
}

async fn bench(
    parents: usize,
    concurrency: Option<usize>,
    timeout: Duration,
    kubeconfig: PathBuf,
) -> Result<String> {
    let variants = std::env::var("BENCH_ORDER")
        .unwrap_or_else(|_| "wasm,native".to_owned())
        .split(',')
        .map(|v| match v.trim() {
            "wasm" => Ok(Variant::Wasm),
            "native" => Ok(Variant::Native),
            other => Err(anyhow!("BENCH_ORDER: {other:?} is neither wasm nor native")),
        })
        .collect::<Result<Vec<_>>>()?;
    let mut report = String::new();
    let mut runs = Vec::new();
    // Each variant in a namespace of its own, kept until both ran: a
    // namespace's deletion (thousands of objects collected) would load
    // the API server during the next run.
    let mut namespaces = Vec::new();
    for (i, &variant) in variants.iter().enumerate() {
        let ns = TestNamespace::new("bench").await?;
        if i == 0 {
            harness::install_crds(&ns.client()).await;
            if std::env::var("BENCH_PLANS").is_ok_and(|v| v == "1") {
                reconciler_host_harness::plans::install(&ns.client()).await;
            }
        }
        eprintln!("bench: --- {} in {}", variant.name(), ns.name());
        let result = run(
            &ns,
            variant,
            parents,
            concurrency,
            timeout,
            kubeconfig.clone(),
        )
        .await;
        namespaces.push(ns);
        let done = match result {
            Ok(done) => done,
            Err(e) => {
                report.push_str(&format!("\n== {}: FAILED: {e:#}\n", variant.name()));
                break;
            }
        };
        print!("{}", done.table);
        runs.push(done);
    }
    let mean = |variant: Variant| Run::mean(runs.iter().filter(|r| r.variant == variant));
    if let (Some(wasm), Some(native)) = (mean(Variant::Wasm), mean(Variant::Native)) {
        report.push_str(&compare(parents, &wasm, &native));
    }
    // The namespace controller deletes what is in them (the agents, then
    // their children by garbage collection).
    for ns in namespaces {
        if let Err(e) = ns.cleanup().await {
            eprintln!("bench: deleting the namespace: {e:#}");
        }
    }
    ensure!(runs.len() == variants.len(), "{report}");
    Ok(report)
}

impl Run {
    /// The mean of `runs` (of one variant), `None` when there are none.
    fn mean<'a>(runs: impl Iterator<Item = &'a Run>) -> Option<Run> {
        let runs: Vec<&Run> = runs.collect();
        let first = runs.first()?;
        let n = runs.len() as f64;
        let avg = |f: fn(&Run) -> f64| runs.iter().map(|r| f(r)).sum::<f64>() / n;
        Some(Run {
            variant: first.variant,
            runs: runs.len(),
            table: String::new(),
            converged: avg(|r| r.converged),
            passes: avg(|r| r.passes),
            host_cpu: avg(|r| r.host_cpu),
            apiserver_cpu: runs
                .iter()
                .map(|r| r.apiserver_cpu)
                .sum::<Option<f64>>()
                .map(|s| s / n),
            guest_seconds: avg(|r| r.guest_seconds),
            rss_kib: avg(|r| r.rss_kib as f64) as u64,
            requests: avg(|r| r.requests),
        })
    }
}

/// The wasm host against the native baseline, side by side.
fn compare(parents: usize, wasm: &Run, native: &Run) -> String {
    let mut out = Table::default();
    out.title(format!(
        "wasm guest against the native baseline, {parents} EvidenceAgents, back to back against the same API server \
         (means of {} wasm and {} native runs)",
        wasm.runs, native.runs
    ));
    let row = |out: &mut Table, label: &str, w: f64, n: f64, unit: &dyn Fn(f64) -> String| {
        out.row(
            label,
            format!(
                "{} / {}  (wasm/native {:.2}x)",
                unit(w),
                unit(n),
                if n > 0.0 { w / n } else { f64::NAN }
            ),
        );
    };
    let secs = |v: f64| format!("{v:.2} s");
    row(
        &mut out,
        "all Ready: wasm / native",
        wasm.converged,
        native.converged,
        &secs,
    );
    row(
        &mut out,
        "convergence throughput, agents/s: wasm / native",
        parents as f64 / wasm.converged,
        parents as f64 / native.converged,
        &|v| format!("{v:.1}"),
    );
    row(
        &mut out,
        "host CPU during convergence",
        wasm.host_cpu,
        native.host_cpu,
        &secs,
    );
    row(
        &mut out,
        "host CPU per pass",
        wasm.host_cpu / wasm.passes.max(1.0),
        native.host_cpu / native.passes.max(1.0),
        &|v| ms(v),
    );
    row(
        &mut out,
        "guest evaluation per pass (mean, wall time: preemption included)",
        wasm.guest_seconds / wasm.passes.max(1.0),
        native.guest_seconds / native.passes.max(1.0),
        &|v| ms(v),
    );
    row(
        &mut out,
        "API server CPU during convergence",
        wasm.apiserver_cpu.unwrap_or(f64::NAN),
        native.apiserver_cpu.unwrap_or(f64::NAN),
        &secs,
    );
    row(
        &mut out,
        "host RSS at convergence",
        wasm.rss_kib as f64,
        native.rss_kib as f64,
        &|v| mib(v as u64),
    );
    row(
        &mut out,
        "API requests during convergence",
        wasm.requests,
        native.requests,
        &|v| format!("{v}"),
    );
    out.row(
        "the goal: throughput within 1.1x of native",
        if native.converged > 0.0 && wasm.converged / native.converged <= 1.1 {
            "met"
        } else {
            "not met"
        },
    );
    out.finish()
}

/// One variant's run: its table and the figures compared.
struct Run {
    variant: Variant,
    /// How many runs these figures are the mean of.
    runs: usize,
    table: String,
    /// Seconds until every agent was Ready.
    converged: f64,
    passes: f64,
    /// Host CPU seconds from the first creation until convergence.
    host_cpu: f64,
    apiserver_cpu: Option<f64>,
    /// Seconds in guest evaluation until convergence (the histogram's sum).
    guest_seconds: f64,
    rss_kib: u64,
    requests: f64,
}

fn agent_name(i: usize) -> String {
    format!("agent-{i:05}")
}

const UNRELATED: &str = "bench-unrelated";

async fn run(
    ns: &TestNamespace,
    variant: Variant,
    parents: usize,
    concurrency: Option<usize>,
    timeout: Duration,
    kubeconfig: PathBuf,
) -> Result<Run> {
    let client = ns.client();
    let name = ns.name().to_owned();
    let mut out = Table::default();

    // --- setup (not measured) ---
    let (count, setup_time) = create_setup(&client, &name).await?;

    // --- the host ---
    let metrics_addr = free_port()?;
    let host_started = Instant::now();
    let concurrency = concurrency.map(|c| c.to_string());
    let mut host = start_host(
        variant,
        &name,
        concurrency.as_deref(),
        &kubeconfig,
        metrics_addr,
    )?;
    host.wait_synced(START_LIMIT).await?;
    let sync_time = host_started.elapsed();
    let cpu_synced = host.cpu()?;
    let rss_synced = host.memory()?;
    let heap_profile = HeapProfile::start(host.pid(), variant)?;
    let before = Metrics::scrape(metrics_addr)
        .await
        .context("scraping the host's metrics after its start")?;
    ensure!(
        before.counter("reconciler_passes_total") == 0.0,
        "the host ran passes before any agent existed"
    );

    // --- convergence (measured) ---
    let contention = Contention::from_env(Duration::from_secs(300))?;
    let apiserver = apiserver_pid(&kubeconfig);
    let others_before = (cpu_of(apiserver), cpu_of(Some(std::process::id())));
    let load_average = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let profile = Profile::start(host.pid(), variant)?;
    let convergence = converge(&mut host, &client, &name, parents, timeout).await?;
    let converged = convergence.converged;
    let profile = profile.map(Profile::stop).transpose()?;
    let at_converged = Metrics::scrape(metrics_addr).await?;
    let cpu_converged = host.cpu()?;
    let others_after = (cpu_of(apiserver), cpu_of(Some(std::process::id())));
    let rss_converged = host.memory()?;

    // --- steady state ---
    let idle = window(&host, metrics_addr, None).await?;
    let unrelated = objects::api(&client, &name, "v1", "ConfigMap");
    let touching = window(&host, metrics_addr, Some(&unrelated)).await?;
    let at_end = Metrics::scrape(metrics_addr).await?;
    let cpu_end = host.cpu()?;
    let rss_end = host.memory()?;

    // --- the report ---
    let passes = at_converged.counter("reconciler_passes_total");
    let conc = concurrency.map_or("host default".to_owned(), |c| c.to_string());
    out.title(format!(
        "operator bench: {parents} EvidenceAgents in one namespace, {}, --concurrency {conc}, {} CPUs, {} busy loops competing; load average at the start {}",
        variant.name(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        contention.loops(),
        load_average
    ));
    out.row(
        "setup: shared objects (not measured)",
        format!("{count} objects in {:.1} s", setup_time.as_secs_f64()),
    );
    out.row(
        "host start until caches synced",
        format!("{:.2} s", sync_time.as_secs_f64()),
    );
    convergence_section(&mut out, parents, &convergence);
    steady_section(&mut out, &idle, &touching);
    let cpu = Cpu {
        synced: cpu_synced,
        converged: cpu_converged,
        end: cpu_end,
        others_before,
        others_after,
    };
    host_time_section(&mut out, &at_converged, passes, &cpu);
    totals_section(
        &mut out,
        ns,
        [&at_converged, &at_end],
        rss_converged,
        rss_end,
    )
    .await;

    if let Some(file) = profile {
        out.row(
            "perf profile of the host, convergence (BENCH_PERF)",
            file.display(),
        );
    }
    let requests = requests_section(&mut out, parents, &before, &at_converged);
    let cached = cached_objects(&client, &name, &at_end).await?;
    memory_section(&mut out, &cached, rss_synced, rss_converged);
    held_section(&mut out, &at_end);

    stop_section(&mut out, &mut host, heap_profile)?;
    Ok(Run {
        variant,
        runs: 1,
        table: out.finish(),
        converged: converged.as_secs_f64(),
        passes,
        host_cpu: cpu_converged - cpu_synced,
        apiserver_cpu: others_before.0.zip(others_after.0).map(|(a, b)| b - a),
        guest_seconds: at_converged
            .histogram("reconciler_guest_evaluation_seconds")
            .sum,
        rss_kib: rss_converged.rss_kib,
        requests,
    })
}

/// The host stops cleanly, with nothing to warn about (its log kept
/// otherwise); where heaptrack followed it, the file it wrote.
fn stop_section(
    out: &mut Table,
    host: &mut HostProcess,
    heap_profile: Option<HeapProfile>,
) -> Result<()> {
    let clean = host.stop_reported(out);
    if let Some(file) = heap_profile.map(HeapProfile::finish).transpose()? {
        out.row(
            "heaptrack of the host, caches synced to its stop (BENCH_HEAPTRACK)",
            file.display(),
        );
    }
    if clean {
        let _ = std::fs::remove_file(&host.log);
    }
    Ok(())
}

/// The API server's process, from the `pid` file beside its kubeconfig.
fn apiserver_pid(kubeconfig: &std::path::Path) -> Option<u32> {
    kubeconfig
        .parent()
        .map(|d| d.join("pid"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|p| p.trim().parse::<u32>().ok())
}

/// The objects every agent shares, and one no agent reads, created; how
/// many and how long it took.
async fn create_setup(client: &kube::Client, name: &str) -> Result<(usize, Duration)> {
    let setup_started = Instant::now();
    let mut setup = objects::backup_setup();
    setup.push(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": UNRELATED},
        "data": {"note": "read by no agent"},
    }));
    let count = setup.len();
    eprintln!("bench: creating {count} objects (setup) in {name}");
    tokio::time::timeout(
        SETUP_LIMIT,
        stream::iter(setup)
            .map(|o| objects::create(client, name, o))
            .buffer_unordered(IN_FLIGHT)
            .collect::<Vec<()>>(),
    )
    .await
    .map_err(|_| anyhow!("the setup ({count} objects) did not finish within {SETUP_LIMIT:?}"))?;
    let setup_time = setup_started.elapsed();
    Ok((count, setup_time))
}

/// The host (`reconciler-host`, or this bench's binary as the native host)
/// on the fixture's guests, serving the namespace `name`; not yet synced.
fn start_host(
    variant: Variant,
    name: &str,
    concurrency: Option<&str>,
    kubeconfig: &std::path::Path,
    metrics_addr: SocketAddr,
) -> Result<HostProcess> {
    let f = harness::fixture();
    let image = format!("EvidenceAgent.defaultImage={IMAGE}");
    let mut args: Vec<&OsStr> = vec![
        "--cache-dir".as_ref(),
        f.cache_dir.as_os_str(),
        "run".as_ref(),
        "--guests".as_ref(),
        f.guests_dir.as_os_str(),
        "--namespaces".as_ref(),
        name.as_ref(),
        "--setting".as_ref(),
        image.as_ref(),
        "--setting".as_ref(),
        "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/".as_ref(),
    ];
    if let Some(c) = concurrency {
        args.extend([OsStr::new("--concurrency"), OsStr::new(c)]);
    }
    let log = f.logs_dir.join(format!("bench-{name}.log"));
    let host = match variant {
        Variant::Wasm => HostProcess::start(kubeconfig, log, metrics_addr, &args)?,
        Variant::Native => HostProcess::start_program(
            &std::env::current_exe().context("this bench's binary")?,
            &[(native_host::ROLE, "1")],
            kubeconfig,
            log,
            metrics_addr,
            &args,
        )?,
    };
    Ok(host)
}

/// When, from the first agent's creation, all agents were created, first
/// touched, had their certificate and were Ready; how many lists it took.
struct Convergence {
    created: Duration,
    touched: Option<Duration>,
    certified: Option<Duration>,
    converged: Duration,
    lists: usize,
}

/// Creates `parents` agents and lists them until every one is Ready
/// True/AsExpected at its generation.
async fn converge(
    host: &mut HostProcess,
    client: &kube::Client,
    name: &str,
    parents: usize,
    timeout: Duration,
) -> Result<Convergence> {
    let agents = objects::agents(client, name);
    let started = Instant::now();
    let mut creating = Some(tokio::spawn({
        let client = client.clone();
        let name = name.to_owned();
        async move {
            stream::iter(0..parents)
                .map(|i| {
                    let (client, name) = (client.clone(), name.clone());
                    async move {
                        objects::create(&client, &name, objects::agent(&agent_name(i), CLUSTER))
                            .await
                    }
                })
                .buffer_unordered(IN_FLIGHT)
                .collect::<Vec<()>>()
                .await;
            started.elapsed()
        }
    }));
    let mut created: Option<Duration> = None;
    let mut touched: Option<Duration> = None;
    let mut certified: Option<Duration> = None;
    let mut last_progress = Instant::now();
    let mut lists = 0usize;
    let converged = loop {
        if let Some(handle) = creating.take_if(|h| h.is_finished()) {
            created = Some(
                handle
                    .await
                    .map_err(|e| anyhow!("creating the agents failed: {e}"))?,
            );
        }
        let state =
            tokio::time::timeout(Duration::from_secs(30), agents.list(&ListParams::default()))
                .await
                .map_err(|_| anyhow!("listing the agents took over 30 s"))?
                .context("listing the agents")?;
        lists += 1;
        let Tally {
            first_touched,
            with_certificate,
            ready,
            not_ready,
        } = tally(&state.items)?;
        if touched.is_none() && first_touched == parents {
            touched = Some(started.elapsed());
        }
        if certified.is_none() && with_certificate == parents {
            certified = Some(started.elapsed());
        }
        if ready == parents && state.items.len() == parents {
            break started.elapsed();
        }
        if !host.is_alive() {
            bail!(
                "the host exited while {ready}/{parents} agents were Ready; log {}",
                host.log.display()
            );
        }
        if started.elapsed() > timeout {
            bail!(
                "not converged within {timeout:?} (BENCH_TIMEOUT_SECS): {ready}/{parents} Ready, \
                 {first_touched} first-touched, {} listed; one not Ready: {}",
                state.items.len(),
                not_ready.unwrap_or_default()
            );
        }
        if last_progress.elapsed() >= Duration::from_secs(5) {
            last_progress = Instant::now();
            eprintln!(
                "bench: {:>6.1} s: {} created, {first_touched} first-touched, {ready} Ready of {parents}",
                started.elapsed().as_secs_f64(),
                state.items.len(),
            );
        }
        tokio::time::sleep(poll_interval(parents)).await;
    };
    let created = match (created, creating) {
        (Some(c), _) => c,
        // The last list showed every agent Ready before the creating task
        // was seen finished.
        (None, Some(handle)) => handle
            .await
            .map_err(|e| anyhow!("creating the agents failed: {e}"))?,
        (None, None) => converged,
    };
    Ok(Convergence {
        created,
        touched,
        certified,
        converged,
        lists,
    })
}

/// How many agents of one list have some status, their certificate, and
/// Ready True/AsExpected at their generation; one not Ready.
struct Tally {
    first_touched: usize,
    with_certificate: usize,
    ready: usize,
    not_ready: Option<String>,
}

fn tally(items: &[kube::api::DynamicObject]) -> Result<Tally> {
    let (mut first_touched, mut with_certificate, mut ready) = (0usize, 0usize, 0usize);
    let mut not_ready: Option<String> = None;
    for o in items {
        let o = serde_json::to_value(o)?;
        if o["status"]["conditions"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
        {
            first_touched += 1;
        }
        let generation = o["metadata"]["generation"].as_i64().unwrap_or(-2);
        if harness::condition(&o, "ServingCertificateReady")
            .is_some_and(|c| c.status == "True" && c.observed_generation == generation)
        {
            with_certificate += 1;
        }
        match harness::condition(&o, "Ready") {
            Some(c)
                if c.status == "True"
                    && c.reason == "AsExpected"
                    && c.observed_generation == generation =>
            {
                ready += 1
            }
            _ => {
                if not_ready.is_none() {
                    not_ready = Some(format!(
                        "{}: {:?}",
                        o["metadata"]["name"].as_str().unwrap_or("?"),
                        harness::summary(&o)
                    ));
                }
            }
        }
    }
    Ok(Tally {
        first_touched,
        with_certificate,
        ready,
        not_ready,
    })
}

/// Section 1: convergence, clock from the first agent's creation.
fn convergence_section(out: &mut Table, parents: usize, c: &Convergence) {
    let Convergence {
        created,
        touched,
        certified,
        converged,
        lists,
    } = c;
    out.section("1. convergence, clock from the first agent's creation");
    out.row(
        "all agents created (last create returned)",
        format!("{:.2} s", created.as_secs_f64()),
    );
    out.row(
        "all agents first-touched (some status written)",
        touched.map_or("-".into(), |t| format!("{:.2} s", t.as_secs_f64())),
    );
    out.row(
        "all agents ServingCertificateReady True (the host's part)",
        certified.map_or("-".into(), |t| format!("{:.2} s", t.as_secs_f64())),
    );
    out.row(
        "all agents Ready True/AsExpected at their generation",
        format!(
            "{:.2} s  ({:.1} agents/s; {lists} lists, every {} ms)",
            converged.as_secs_f64(),
            parents as f64 / converged.as_secs_f64(),
            poll_interval(parents).as_millis()
        ),
    );
}

/// The host's API requests from `before` to `after`, by verb and resource.
fn requests_between(before: &Metrics, after: &Metrics) -> BTreeMap<(String, String), f64> {
    let keys = ["verb", "resource"];
    let a = before.by_labels("reconciler_api_requests_total", &keys);
    let b = after.by_labels("reconciler_api_requests_total", &keys);
    let mut delta = BTreeMap::new();
    for (k, v) in &b {
        let d = v - a.get(k).copied().unwrap_or(0.0);
        if d > 0.0 {
            delta.insert((k[0].clone(), k[1].clone()), d);
        }
    }
    delta
}

/// Section 2: the steady state of the converged agents.
fn steady_section(out: &mut Table, idle: &Window, touching: &Window) {
    out.section("2. steady state, the converged agents (goal: 0 API requests/s)");
    for (label, w) in [
        ("idle", idle),
        ("unrelated ConfigMap touched 1/s", touching),
    ] {
        out.row(
            &format!("{} s {label}", WINDOW.as_secs()),
            format!(
                "{:.2} API requests/s, {:.2} status writes/s, {:.2} child applies/s ({} requests, {} writes, {} applies, {} passes, {} Events)",
                w.requests / w.seconds,
                w.writes / w.seconds,
                w.applies / w.seconds,
                w.requests,
                w.writes,
                w.applies,
                w.passes,
                w.events
            ),
        );
        if !w.sent.is_empty() {
            let sent: Vec<String> = w
                .sent
                .iter()
                .map(|((verb, resource), n)| format!("{n} {verb} {resource}"))
                .collect();
            out.row("  the requests sent", sent.join(", "));
        }
    }
}

/// Host CPU seconds at the sync, at convergence and at the end, and the
/// API server's and the bench's before and after convergence.
struct Cpu {
    synced: f64,
    converged: f64,
    end: f64,
    others_before: (Option<f64>, Option<f64>),
    others_after: (Option<f64>, Option<f64>),
}

/// Section 3: host time per pass, to convergence.
fn host_time_section(out: &mut Table, at_converged: &Metrics, passes: f64, cpu: &Cpu) {
    let &Cpu {
        synced: cpu_synced,
        converged: cpu_converged,
        end: cpu_end,
        others_before,
        others_after,
    } = cpu;
    let hist = at_converged.histogram("reconciler_pass_host_seconds");
    out.section("3. host time per pass (to convergence)");
    out.row(
        "reconciler_pass_host_seconds p50 (bucket upper bound)",
        hist.quantile(0.50)
            .map_or("-".into(), |q| format!("<= {}", ms(q))),
    );
    out.row(
        "reconciler_pass_host_seconds p99 (bucket upper bound)",
        hist.quantile(0.99)
            .map_or("-".into(), |q| format!("<= {}", ms(q))),
    );
    out.row(
        "reconciler_pass_host_seconds mean (sum/count)",
        if hist.count > 0.0 {
            format!("{} over {} passes", ms(hist.sum / hist.count), hist.count)
        } else {
            "-".into()
        },
    );
    out.row(
        "host process CPU (utime+stime) / pass, convergence",
        format!(
            "{} ({:.2} s CPU over {passes} passes, start excluded)",
            ms((cpu_converged - cpu_synced) / passes.max(1.0)),
            cpu_converged - cpu_synced
        ),
    );
    let delta = |a: Option<f64>, b: Option<f64>| {
        a.zip(b)
            .map_or("-".to_owned(), |(a, b)| format!("{:.2} s", b - a))
    };
    out.row(
        "CPU during convergence: host / apiserver / bench (lists)",
        format!(
            "{:.2} s / {} / {}",
            cpu_converged - cpu_synced,
            delta(others_before.0, others_after.0),
            delta(others_before.1, others_after.1)
        ),
    );
    out.row(
        "host process CPU, start until caches synced",
        format!("{:.2} s", cpu_synced),
    );
    out.row(
        "host process CPU, steady-state windows (20 s)",
        format!("{:.3} s", cpu_end - cpu_converged),
    );
}

/// Section 4: the totals at convergence and at the end.
async fn totals_section(
    out: &mut Table,
    ns: &TestNamespace,
    [at_converged, at_end]: [&Metrics; 2],
    rss_converged: Memory,
    rss_end: Memory,
) {
    out.section("4. totals");
    for (label, m) in [("at convergence", at_converged), ("at the end", at_end)] {
        out.row(
            &format!("passes / status writes / Events, {label}"),
            format!(
                "{} / {} / {}",
                m.counter("reconciler_passes_total"),
                m.counter("reconciler_status_writes_total"),
                m.counter("reconciler_events_total"),
            ),
        );
    }
    for (label, m) in [("at convergence", at_converged), ("at the end", at_end)] {
        out.row(
            &format!("children applied / unchanged / deleted, {label}"),
            format!(
                "{} / {} / {}",
                m.counter("reconciler_child_applies_total"),
                m.counter("reconciler_child_applies_unchanged_total"),
                m.counter("reconciler_child_deletes_total"),
            ),
        );
    }
    let plans = objects::api(
        &ns.client(),
        ns.name(),
        "reconciler.dev/v1alpha1",
        "ReconcilePlan",
    )
    .list(&Default::default())
    .await
    .map(|l| {
        let applied = l
            .items
            .iter()
            .filter(|p| p.data["status"]["phase"] == "Applied")
            .count();
        format!("{} / {applied}", l.items.len())
    })
    .unwrap_or_else(|_| "not served (BENCH_PLANS=1 installs them)".to_owned());
    out.row("ReconcilePlans / Applied, at the end", plans);
    out.row(
        "guest errors / dependency entries, at the end",
        format!(
            "{} / {}",
            at_end.counter("reconciler_guest_errors_total"),
            at_end.counter("reconciler_dependency_entries")
        ),
    );
    out.row(
        "host RSS (VmRSS) at convergence / at the end",
        format!(
            "{} / {} (anonymous {} / {})",
            mib(rss_converged.rss_kib),
            mib(rss_end.rss_kib),
            mib(rss_converged.anon_kib),
            mib(rss_end.anon_kib)
        ),
    );
    out.row("host peak RSS (VmHWM)", mib(rss_end.peak_kib));
}

/// Section 5: the host's requests from its start until convergence, by
/// verb and resource, and its writes per new agent against seed 000's
/// minimum; the total of requests.
fn requests_section(out: &mut Table, parents: usize, before: &Metrics, after: &Metrics) -> f64 {
    let delta = requests_between(before, after);
    let n = parents as f64;
    out.section("5. the host's API requests during convergence (reconciler_api_requests_total)");
    for ((verb, resource), count) in &delta {
        out.row(
            &format!("{verb} {resource}"),
            format!("{count} ({:.3} per agent)", count / n),
        );
    }
    let is_read = |verb: &str| matches!(verb, "get" | "list" | "watch");
    let mut status = 0.0;
    let mut events = 0.0;
    let mut applies = 0.0;
    let mut others: Vec<String> = Vec::new();
    let mut other = 0.0;
    for ((verb, resource), count) in &delta {
        match (verb.as_str(), resource.as_str()) {
            (v, _) if is_read(v) => {}
            ("patch" | "update", r) if r.ends_with("/status") => status += count,
            ("create", "events") => events += count,
            ("patch", "deployments" | "services") | ("create", "secrets") => applies += count,
            (v, r) => {
                other += count;
                others.push(format!("{count} {v} {r}"));
            }
        }
    }
    out.section("6. writes per new agent, against seed 000's minimum");
    out.row(
        "status writes (patch */status)",
        format!(
            "{:.3}; minimum 2: the first pass applies the children, its Pod is not running yet, and that pass \
             ends with its one status write (Ready Unknown/False, Progressing True); the pass that sees the Pod \
             running writes Ready True",
            status / n
        ),
    );
    out.row(
        "Events (create events)",
        format!(
            "{:.3}; minimum 2: CertificateIssued (seed: a newly issued operator-signed serving certificate) \
             and Ready turning True",
            events / n
        ),
    );
    out.row(
        "children written (patch deployments, services; create secrets)",
        format!(
            "{:.3}; minimum 3: the Deployment and the Service applied, the serving certificate's \
             Secret created (and once per API server, the operator's CA Secret: create secrets too)",
            applies / n
        ),
    );
    out.row(
        "other writes",
        if others.is_empty() {
            "none".to_owned()
        } else {
            format!(
                "{:.3} per agent: {} (patch events: an Event repeated within six minutes, \
                 counted as a series)",
                other / n,
                others.join(", ")
            )
        },
    );
    let errors = after.by_labels("reconciler_guest_errors_total", &["class"]);
    let errors: Vec<String> = errors
        .iter()
        .filter(|(_, v)| **v > 0.0)
        .map(|(k, v)| format!("{v} {}", k[0]))
        .collect();
    out.row(
        "above the minimum: passes that failed",
        if errors.is_empty() {
            "none".to_owned()
        } else {
            format!(
                "{}: each writes Ready False/ReconcileError and a Warning (ReconciliationFailed; \
                 a series when repeated), and a later pass writes Ready back; a deadline is the guest's \
                 100 ms of wall time, which a starved CPU exceeds (the native baseline has no deadline)",
                errors.join(", ")
            )
        },
    );
    delta.values().sum()
}

/// Every object of the kinds the host watches (`reconciler_watch_connected`'s
/// kinds) in the bench's namespace, as the API server lists them.
async fn cached_objects(
    client: &kube::Client,
    ns: &str,
    metrics: &Metrics,
) -> Result<Vec<serde_json::Value>> {
    let mut objects = Vec::new();
    for key in metrics
        .by_labels("reconciler_watch_connected", &["kind"])
        .into_keys()
    {
        let Some((api_version, kind)) = key[0].rsplit_once('/') else {
            continue;
        };
        let list = objects::api(client, ns, api_version, kind)
            .list(&ListParams::default())
            .await
            .with_context(|| format!("listing {api_version} {kind}"))?;
        for o in list.items {
            let mut v = serde_json::to_value(&o)?;
            v["apiVersion"] = json!(api_version);
            v["kind"] = json!(kind);
            objects.push(v);
        }
    }
    Ok(objects)
}

/// Section 7: the host's RSS per cached object against the objects' JSON.
fn memory_section(
    out: &mut Table,
    cached: &[serde_json::Value],
    synced: Memory,
    converged: Memory,
) {
    let (synced_kib, rss_kib) = (synced.rss_kib, converged.rss_kib);
    let n = cached.len().max(1) as f64;
    let listed: usize = cached.iter().map(|o| o.to_string().len()).sum();
    let slimmed_texts: Vec<String> = cached
        .iter()
        .map(|o| reconciler_host::operator::cluster::cache::slim(o.clone()).to_string())
        .collect();
    let slimmed: usize = slimmed_texts.iter().map(String::len).sum();
    let packed = packed_size(cached, &slimmed_texts);
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for o in cached {
        *by_kind
            .entry(o["kind"].as_str().unwrap_or("?"))
            .or_default() += 1;
    }
    let per_object = rss_kib as f64 * 1024.0 / n;
    out.section("7. memory");
    out.row(
        "objects of the watched kinds (what the caches hold)",
        format!(
            "{} ({})",
            cached.len(),
            by_kind
                .iter()
                .map(|(k, c)| format!("{c} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    out.row(
        "average JSON size: as listed / as the cache slims it / packed",
        format!(
            "{:.0} B / {:.0} B / {:.0} B (packed: each kind's texts against its first listed; the cache's dictionary is the first it admitted)",
            listed as f64 / n,
            slimmed as f64 / n,
            packed as f64 / n
        ),
    );
    let grown = rss_kib.saturating_sub(synced_kib) as f64 * 1024.0 / n;
    out.row(
        "host RSS grown from caches synced to convergence, per object",
        format!(
            "{grown:.0} B ({:.2}x the listed JSON, {:.2}x the slimmed; {} at caches synced)",
            grown * n / listed.max(1) as f64,
            grown * n / slimmed.max(1) as f64,
            mib(synced_kib)
        ),
    );
    let grown_of =
        |at: fn(&Memory) -> u64| at(&converged).saturating_sub(at(&synced)) as f64 * 1024.0 / n;
    out.row(
        "  of it: anonymous (heap, stacks, guests) / mapped from files (code first run)",
        format!(
            "{:.0} B / {:.0} B (files {} at caches synced, {} at convergence: code, whatever the objects)",
            grown_of(|m| m.anon_kib),
            grown_of(|m| m.file_kib),
            mib(synced.file_kib),
            mib(converged.file_kib)
        ),
    );
    out.row(
        "host RSS at convergence per object (all of it: runtime, pool, code)",
        format!(
            "{:.0} B ({:.2}x the listed JSON, {:.2}x the slimmed)",
            per_object,
            per_object * n / listed.max(1) as f64,
            per_object * n / slimmed.max(1) as f64
        ),
    );
}

/// Section 7, what the host's caches hold of the objects' text, as it says
/// (`reconciler_cached_bytes`, `reconciler_cached_objects`): per object,
/// in all and per kind. Smaller than the bench's own packing where a kind
/// is held projected to what its readers and the host's facts read.
fn held_section(out: &mut Table, at_end: &Metrics) {
    let bytes = at_end.by_labels("reconciler_cached_bytes", &["kind"]);
    let objects = at_end.by_labels("reconciler_cached_objects", &["kind"]);
    let total_objects: f64 = objects.values().sum();
    let total_bytes: f64 = bytes.values().sum();
    let by_kind: Vec<String> = bytes
        .iter()
        .map(|(kind, b)| {
            let n = objects.get(kind).copied().unwrap_or(0.0).max(1.0);
            format!("{} {:.0} B", kind[0], b / n)
        })
        .collect();
    out.row(
        "text the host's caches hold per object (reconciler_cached_bytes)",
        format!(
            "{:.0} B ({})",
            total_bytes / total_objects.max(1.0),
            by_kind.join(", ")
        ),
    );
}

/// The bytes the slimmed `texts` of the `objects` take packed as the
/// host's caches pack them: each against a dictionary of its kind, made
/// from the kind's first object (here the first listed; the host's is the
/// first its cache admitted, which may match the rest less well).
fn packed_size(objects: &[serde_json::Value], texts: &[String]) -> usize {
    use reconciler_host::facts::packed::Packer;
    let mut packers: BTreeMap<&str, std::sync::Arc<Packer>> = BTreeMap::new();
    objects
        .iter()
        .zip(texts)
        .map(|(object, text)| {
            let kind = object["kind"].as_str().unwrap_or("?");
            let packer = packers.entry(kind).or_insert_with(|| Packer::new(text));
            packer.pack(text).map_or(text.len(), |p| p.packed_len())
        })
        .sum()
}

/// `heaptrack` attached to the host from caches synced until it stops,
/// when `BENCH_HEAPTRACK` names a directory: `heaptrack_print
/// <dir>/<variant>.heaptrack.zst` says which allocations the host holds at
/// its peak (what grows with the objects cached).
struct HeapProfile {
    heaptrack: std::process::Child,
    file: PathBuf,
}

impl HeapProfile {
    fn start(pid: u32, variant: Variant) -> Result<Option<HeapProfile>> {
        let Some(dir) = std::env::var_os("BENCH_HEAPTRACK") else {
            return Ok(None);
        };
        let file = PathBuf::from(dir).join(match variant {
            Variant::Wasm => "wasm.heaptrack",
            Variant::Native => "native.heaptrack",
        });
        // heaptrack 1.4 reads `-o` only before `-p`, and writes
        // `<file>.zst`; what it says goes to `<file>.log`.
        let log = std::fs::File::create(file.with_extension("log"))
            .context("creating heaptrack's log (BENCH_HEAPTRACK)")?;
        let heaptrack = std::process::Command::new("heaptrack")
            .arg("-o")
            .arg(&file)
            .args(["-p", &pid.to_string()])
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting heaptrack (BENCH_HEAPTRACK)")?;
        Ok(Some(HeapProfile { heaptrack, file }))
    }

    /// Once the host stopped: heaptrack writes its file as the host
    /// exits; an error naming its log where it wrote none.
    fn finish(mut self) -> Result<PathBuf> {
        self.heaptrack.wait()?;
        let written = self.file.with_extension("heaptrack.zst");
        ensure!(
            written.exists(),
            "heaptrack wrote no {} (its output: {})",
            written.display(),
            self.file.with_extension("log").display()
        );
        Ok(written)
    }
}

/// `perf record` of the host during convergence, when `BENCH_PERF` names
/// a directory: `perf report -i <dir>/<variant>.perf.data` reads it.
struct Profile {
    perf: std::process::Child,
    file: PathBuf,
}

impl Profile {
    fn start(pid: u32, variant: Variant) -> Result<Option<Profile>> {
        let Some(dir) = std::env::var_os("BENCH_PERF") else {
            return Ok(None);
        };
        let file = PathBuf::from(dir).join(match variant {
            Variant::Wasm => "wasm.perf.data",
            Variant::Native => "native.perf.data",
        });
        let perf = std::process::Command::new("perf")
            .args(["record", "-F", "499", "-g", "-p", &pid.to_string(), "-o"])
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("starting perf record (BENCH_PERF)")?;
        Ok(Some(Profile { perf, file }))
    }

    fn stop(mut self) -> Result<PathBuf> {
        std::process::Command::new("kill")
            .args(["-INT", &self.perf.id().to_string()])
            .status()?;
        self.perf.wait()?;
        Ok(self.file)
    }
}

/// What happened during one steady-state window.
struct Window {
    seconds: f64,
    /// Every request the host sent (`reconciler_api_requests_total`).
    requests: f64,
    /// Those requests, by verb and resource.
    sent: BTreeMap<(String, String), f64>,
    writes: f64,
    applies: f64,
    passes: f64,
    events: f64,
}

/// Scrapes, waits [`WINDOW`] (touching `touch`'s unrelated ConfigMap once a
/// second, if given), scrapes again.
async fn window(
    host: &HostProcess,
    addr: SocketAddr,
    touch: Option<&kube::Api<kube::api::DynamicObject>>,
) -> Result<Window> {
    let a = Metrics::scrape(addr).await?;
    let t = Instant::now();
    let mut n = 0u32;
    while t.elapsed() < WINDOW {
        if let Some(api) = touch {
            n += 1;
            objects::merge(
                api,
                UNRELATED,
                json!({"metadata": {"annotations": {"bench.reconciler.dev/touched": n.to_string()}}}),
            )
            .await;
        }
        let left = WINDOW.saturating_sub(t.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
    }
    let b = Metrics::scrape(addr).await?;
    let seconds = t.elapsed().as_secs_f64();
    ensure!(
        host.pid_alive(),
        "the host exited during the steady-state window"
    );
    let d = |m: &str| b.counter(m) - a.counter(m);
    Ok(Window {
        seconds,
        requests: d("reconciler_api_requests_total"),
        sent: requests_between(&a, &b),
        writes: d("reconciler_status_writes_total"),
        applies: d("reconciler_child_applies_total"),
        passes: d("reconciler_passes_total"),
        events: d("reconciler_events_total"),
    })
}
