//! The operator at scale (issue 5's benchmarks): `reconciler-host run` as a
//! child process, with the EvidenceAgent guest, against the real local
//! kube-apiserver of `tests/support` (the integration tests' harness and
//! objects, included by path), N healthy EvidenceAgents in one namespace.
//!
//! 1. Convergence: the shared Cluster, ObjectStore and credentials Secret,
//!    then every agent's children (serving-cert Secret, CA ConfigMap,
//!    Service, Deployment and Pod with ready status) are created first
//!    (setup, not measured; 32 requests at once); the host starts and syncs
//!    its caches; then the N agents are created (32 at once) and the clock
//!    runs from the first agent's creation until a list (every 250 ms)
//!    shows every agent Ready True/AsExpected at its generation.
//! 2. Steady state: `reconciler_status_writes_total` scraped 10 s apart,
//!    touching nothing, then again while an unrelated ConfigMap (read by
//!    no agent) is touched once a second. The goal is 0 writes/s.
//! 3. Host time per pass, API round trips excluded: p50 and p99 from the
//!    `reconciler_pass_host_seconds` histogram (bucket upper bounds: the
//!    smallest bucket holding the quantile); and the host process's CPU
//!    time (utime + stime from /proc/<pid>/stat) over the passes, which
//!    includes everything else the process does (watches, caches, JSON,
//!    TLS, status writes, Events).
//! 4. Passes, status writes and Events in total, and the host's RSS.
//!
//! `make bench-operator`, or `cargo bench -p reconciler-host --bench
//! operator` (the host binary is the release build). Environment:
//! `BENCH_PARENTS` (default 1000), `BENCH_CONCURRENCY` (the host's
//! `--concurrency`; default: the host's own default), `BENCH_TIMEOUT_SECS`
//! (the convergence limit, default 900), `RECONCILER_TEST_KUBECONFIG` (reuse
//! a running test apiserver instead of starting one; its service IP range
//! must hold N Services: a server the bench starts gets a /16).

#[path = "../tests/support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "../tests/operator/harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "../tests/operator/objects.rs"]
mod objects;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use futures::{StreamExt, stream};
use kube::api::ListParams;
use reconciler_testsupport::TestNamespace;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use objects::{CLUSTER, IMAGE, PodState};

/// Requests in flight while creating objects.
const IN_FLIGHT: usize = 32;
/// How often convergence is polled (a list of every agent).
const POLL: Duration = Duration::from_millis(250);
/// The steady-state windows.
const WINDOW: Duration = Duration::from_secs(10);
/// The limit on the setup (children, shared objects).
const SETUP_LIMIT: Duration = Duration::from_secs(900);
/// The limit on the host's start (caches synced).
const START_LIMIT: Duration = Duration::from_secs(120);

fn env_num<T: std::str::FromStr>(name: &str) -> Option<T> {
    let v = std::env::var(name).ok().filter(|v| !v.trim().is_empty())?;
    match v.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={v:?} is not a number"),
    }
}

fn main() {
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
        Ok(report) => print!("{report}"),
        Err(e) => {
            eprintln!("bench-operator FAILED: {e:#}");
            std::process::exit(1);
        }
    }
}

async fn bench(
    parents: usize,
    concurrency: Option<usize>,
    timeout: Duration,
    kubeconfig: PathBuf,
) -> Result<String> {
    let ns = TestNamespace::new("bench").await?;
    harness::install_crds(&ns.client()).await;
    let result = run(&ns, parents, concurrency, timeout, kubeconfig).await;
    // The apiserver has no namespace controller: deletion only marks it.
    if let Err(e) = ns.cleanup().await {
        eprintln!("bench: deleting the namespace: {e:#}");
    }
    result
}

fn agent_name(i: usize) -> String {
    format!("agent-{i:05}")
}

const UNRELATED: &str = "bench-unrelated";

async fn run(
    ns: &TestNamespace,
    parents: usize,
    concurrency: Option<usize>,
    timeout: Duration,
    kubeconfig: PathBuf,
) -> Result<String> {
    let client = ns.client();
    let name = ns.name().to_owned();
    let mut out = Table::default();

    // --- setup (not measured) ---
    let setup_started = Instant::now();
    let mut setup = objects::backup_setup();
    setup.push(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": UNRELATED},
        "data": {"note": "read by no agent"},
    }));
    for i in 0..parents {
        setup.extend(objects::children(&agent_name(i), &PodState::Running));
    }
    let count = setup.len();
    eprintln!("bench: creating {count} objects (setup) in {name}");
    tokio::time::timeout(
        SETUP_LIMIT,
        stream::iter(setup)
            .map(|o| objects::create(&client, &name, o))
            .buffer_unordered(IN_FLIGHT)
            .collect::<Vec<()>>(),
    )
    .await
    .map_err(|_| anyhow!("the setup ({count} objects) did not finish within {SETUP_LIMIT:?}"))?;
    let setup_time = setup_started.elapsed();

    // --- the host ---
    let metrics_addr = free_port()?;
    let host_started = Instant::now();
    let mut host = HostProcess::start(&name, metrics_addr, concurrency, &kubeconfig)?;
    host.wait_synced(START_LIMIT).await?;
    let sync_time = host_started.elapsed();
    let cpu_synced = host.cpu()?;
    let before = Metrics::scrape(metrics_addr)
        .await
        .context("scraping the host's metrics after its start")?;
    ensure!(
        before.counter("reconciler_passes_total") == 0.0,
        "the host ran passes before any agent existed"
    );

    // --- convergence (measured) ---
    let agents = objects::agents(&client, &name);
    let apiserver = kubeconfig
        .parent()
        .map(|d| d.join("pid"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|p| p.trim().parse::<u32>().ok());
    let others_before = (cpu_of(apiserver), cpu_of(Some(std::process::id())));
    let started = Instant::now();
    let mut creating = Some(tokio::spawn({
        let client = client.clone();
        let name = name.clone();
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
        let (mut first_touched, mut ready) = (0usize, 0usize);
        let mut not_ready: Option<String> = None;
        for o in &state.items {
            let o = serde_json::to_value(o)?;
            if o["status"]["conditions"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
            {
                first_touched += 1;
            }
            let generation = o["metadata"]["generation"].as_i64().unwrap_or(-2);
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
        if touched.is_none() && first_touched == parents {
            touched = Some(started.elapsed());
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
        tokio::time::sleep(POLL).await;
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
    let hist = at_converged.histogram("reconciler_pass_host_seconds");
    let conc = concurrency.map_or("host default".to_owned(), |c| c.to_string());
    out.title(format!(
        "operator bench: {parents} EvidenceAgents in one namespace, release host, --concurrency {conc}, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    out.row(
        "setup: shared objects + 5 children per agent (not measured)",
        format!("{count} objects in {:.1} s", setup_time.as_secs_f64()),
    );
    out.row(
        "host start until caches synced",
        format!("{:.2} s", sync_time.as_secs_f64()),
    );
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
        "all agents Ready True/AsExpected at their generation",
        format!(
            "{:.2} s  ({:.1} agents/s; {lists} lists, every {} ms)",
            converged.as_secs_f64(),
            parents as f64 / converged.as_secs_f64(),
            POLL.as_millis()
        ),
    );
    out.section("2. steady state, the converged agents (goal: 0 writes/s)");
    for (label, w) in [
        ("idle", &idle),
        ("unrelated ConfigMap touched 1/s", &touching),
    ] {
        out.row(
            &format!("{} s {label}", WINDOW.as_secs()),
            format!(
                "{:.2} status writes/s ({} writes, {} passes, {} Events)",
                w.writes / w.seconds,
                w.writes,
                w.passes,
                w.events
            ),
        );
    }
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
    out.section("4. totals");
    for (label, m) in [("at convergence", &at_converged), ("at the end", &at_end)] {
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
        format!("{} / {}", mib(rss_converged.0), mib(rss_end.0)),
    );
    out.row("host peak RSS (VmHWM)", mib(rss_end.1));

    // --- the host stops cleanly, with nothing to warn about ---
    let status = host.stop();
    let problems = host.problems();
    out.row(
        "host stop (SIGTERM) / WARN+ERROR log lines",
        format!("{status} / {}", problems.len()),
    );
    for p in problems.iter().take(5) {
        eprintln!("bench: host log: {p}");
    }
    if status.success() && problems.is_empty() {
        let _ = std::fs::remove_file(&host.log);
    }
    Ok(out.finish())
}

/// What happened during one steady-state window.
struct Window {
    seconds: f64,
    writes: f64,
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
        writes: d("reconciler_status_writes_total"),
        passes: d("reconciler_passes_total"),
        events: d("reconciler_events_total"),
    })
}

/// utime + stime of a process so far, in seconds, if it can be read.
fn cpu_of(pid: Option<u32>) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    // Fields after the command's closing parenthesis start at field 3
    // (state); utime and stime are fields 14 and 15, in clock ticks.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: f64 = fields.get(15 - 3)?.parse().ok()?;
    Some((utime + stime) / clock_ticks())
}

/// Clock ticks a second (`getconf CLK_TCK`; Linux's USER_HZ is 100).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

fn ms(seconds: f64) -> String {
    if seconds < 0.001 {
        format!("{:.1} µs", seconds * 1e6)
    } else {
        format!("{:.3} ms", seconds * 1e3)
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn free_port() -> Result<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0").context("a free port")?;
    Ok(l.local_addr()?)
}

// ---------------------------------------------------------------------------
// The host process

/// `reconciler-host run` for one namespace, its metrics on `addr`, stderr
/// to a log file. Dropping it stops it (SIGTERM, then SIGKILL after 10 s),
/// and prints the log's tail when the bench is failing.
struct HostProcess {
    child: Child,
    log: PathBuf,
    stopped: Option<ExitStatus>,
}

impl HostProcess {
    fn start(
        namespace: &str,
        metrics: SocketAddr,
        concurrency: Option<usize>,
        kubeconfig: &PathBuf,
    ) -> Result<HostProcess> {
        let f = harness::fixture();
        let log = f.logs_dir.join(format!("bench-{namespace}.log"));
        let stderr = std::fs::File::create(&log).context("the host's log")?;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reconciler-host"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .arg("--cache-dir")
            .arg(&f.cache_dir)
            .arg("run")
            .arg("--guests")
            .arg(&f.guests_dir)
            .args(["--namespaces", namespace])
            .args(["--metrics-addr", &metrics.to_string()])
            .args(["--setting", &format!("EvidenceAgent.defaultImage={IMAGE}")])
            .args([
                "--setting",
                "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/",
            ]);
        if let Some(c) = concurrency {
            cmd.args(["--concurrency", &c.to_string()]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .context("starting the host")?;
        eprintln!(
            "bench: host pid {}, metrics http://{metrics}/metrics, log {}",
            child.id(),
            log.display()
        );
        Ok(HostProcess {
            child,
            log,
            stopped: None,
        })
    }

    async fn wait_synced(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            if self.log_text().contains("caches synced; reconciling") {
                return Ok(());
            }
            ensure!(
                self.is_alive(),
                "the host exited while starting; log {}",
                self.log.display()
            );
            ensure!(
                Instant::now() < deadline,
                "the host did not sync its caches within {limit:?}; log {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn is_alive(&mut self) -> bool {
        self.stopped.is_none() && matches!(self.child.try_wait(), Ok(None))
    }

    fn pid_alive(&self) -> bool {
        self.stopped.is_none()
            && std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
                .is_ok_and(|s| !s.contains(") Z "))
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn problems(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
            .map(str::to_owned)
            .collect()
    }

    /// utime + stime of the process so far, in seconds.
    fn cpu(&self) -> Result<f64> {
        cpu_of(Some(self.child.id()))
            .with_context(|| format!("reading /proc/{}/stat", self.child.id()))
    }

    /// (VmRSS, VmHWM) in KiB.
    fn memory(&self) -> Result<(u64, u64)> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        let field = |name: &str| -> Result<u64> {
            let line = status
                .lines()
                .find(|l| l.starts_with(name))
                .with_context(|| format!("no {name} in {path}"))?;
            Ok(line[name.len()..]
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()?)
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// SIGTERM, then wait (10 s at most, then SIGKILL).
    fn stop(&mut self) -> ExitStatus {
        if let Some(s) = self.stopped {
            return s;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                break s;
            }
            if Instant::now() > deadline {
                eprintln!("bench: the host did not stop within 10 s of SIGTERM; killing it");
                let _ = self.child.kill();
                break self.child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.stopped = Some(status);
        status
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let failing = self.stopped.is_none();
        let status = self.stop();
        if failing || std::thread::panicking() {
            let text = self.log_text();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            eprintln!(
                "--- host ({status}), log {} (last {} lines):\n{}\n---",
                self.log.display(),
                tail.len(),
                tail.join("\n")
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Metrics: one scrape of the Prometheus text exposition

struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

struct Metrics {
    samples: Vec<Sample>,
}

/// A histogram summed over its label sets (the kinds).
struct Histogram {
    /// (upper bound, cumulative count), ascending; the last is +Inf.
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

impl Histogram {
    /// The upper bound of the smallest bucket holding quantile `q`.
    fn quantile(&self, q: f64) -> Option<f64> {
        if self.count <= 0.0 {
            return None;
        }
        let rank = q * self.count;
        self.buckets
            .iter()
            .find(|(_, cumulative)| *cumulative >= rank)
            .map(|(le, _)| *le)
    }
}

impl Metrics {
    async fn scrape(addr: SocketAddr) -> Result<Metrics> {
        let limit = Duration::from_secs(10);
        let text = tokio::time::timeout(limit, async {
            let mut s = tokio::net::TcpStream::connect(addr).await?;
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .await?;
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).await?;
            Ok::<_, std::io::Error>(String::from_utf8_lossy(&buf).into_owned())
        })
        .await
        .map_err(|_| anyhow!("scraping http://{addr}/metrics took over {limit:?}"))?
        .with_context(|| format!("scraping http://{addr}/metrics"))?;
        let (head, body) = text
            .split_once("\r\n\r\n")
            .with_context(|| format!("no HTTP response from {addr}: {text:?}"))?;
        ensure!(
            head.starts_with("HTTP/1.1 200"),
            "http://{addr}/metrics answered {}",
            head.lines().next().unwrap_or_default()
        );
        Ok(Metrics {
            samples: body.lines().filter_map(parse_sample).collect(),
        })
    }

    /// The sum of a metric over its label sets (0 when absent).
    fn counter(&self, name: &str) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.value)
            .fold(0.0, |a, b| a + b)
    }

    fn histogram(&self, name: &str) -> Histogram {
        let mut buckets: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for s in self
            .samples
            .iter()
            .filter(|s| s.name == format!("{name}_bucket"))
        {
            let le = match s.labels.get("le").map(String::as_str) {
                Some("+Inf") => f64::INFINITY,
                Some(v) => v.parse().unwrap_or(f64::NAN),
                None => continue,
            };
            if le.is_nan() {
                continue;
            }
            // Ordered by the bound (non-negative floats order as their bits).
            buckets.entry(le.to_bits()).or_insert((le, 0.0)).1 += s.value;
        }
        Histogram {
            buckets: buckets.into_values().collect(),
            sum: self.counter(&format!("{name}_sum")),
            count: self.counter(&format!("{name}_count")),
        }
    }
}

/// `name{k="v",...} value` or `name value`; comments and blanks are None.
fn parse_sample(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (series, value) = line.rsplit_once(' ')?;
    let value: f64 = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    let (name, labels) = match series.split_once('{') {
        None => (series.to_owned(), BTreeMap::new()),
        Some((name, rest)) => (name.to_owned(), parse_labels(rest.strip_suffix('}')?)?),
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

fn parse_labels(s: &str) -> Option<BTreeMap<String, String>> {
    let mut labels = BTreeMap::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek() == Some(&',') || chars.peek() == Some(&' ') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Some(labels);
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if chars.next()? != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                '"' => break,
                c => value.push(c),
            }
        }
        labels.insert(key.trim().to_owned(), value);
    }
}

// ---------------------------------------------------------------------------
// The printed table

#[derive(Default)]
struct Table {
    text: String,
}

impl Table {
    fn title(&mut self, t: String) {
        self.text.insert_str(0, &format!("\n== {t}\n"));
    }
    fn section(&mut self, s: &str) {
        self.text.push_str(&format!("-- {s}\n"));
    }
    fn row(&mut self, label: &str, value: impl std::fmt::Display) {
        self.text.push_str(&format!("  {label:<58} {value}\n"));
    }
    fn finish(self) -> String {
        self.text
    }
}
