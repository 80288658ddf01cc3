//! The harness of the operator tests: the guests and their CRDs (once per
//! test binary: the EvidenceAgent's, or those `fixture_of` names), the host
//! as a child process (stopped by SIGTERM, also when a test fails), polling
//! with a timeout, and reading statuses and Events.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client};
use reconciler_conventions::kind::KindSpec;
use reconciler_host::runtime::{ArtifactCache, Limits, Runtime, RuntimeConfig};
use serde_json::Value;

use crate::guests as support;
use crate::paths;

/// How long a condition may take to show.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// How often a condition is polled.
pub const POLL: Duration = Duration::from_millis(100);
/// How long the tests watch for something that must not happen.
pub const SETTLE: Duration = Duration::from_secs(3);

/// The guests a test binary serves: their crates (the first is the kind
/// the tests look at), the settings every host of the binary gets, the
/// WARN lines every host of the binary logs (substrings: an optional API
/// the test server does not serve), and the directory (under
/// `CARGO_TARGET_TMPDIR`) holding its guests, compiled modules and logs,
/// one per guest set: a host loads every module of its guests directory.
pub struct Guests {
    pub dir: &'static str,
    pub crates: &'static [&'static str],
    pub settings: &'static [&'static str],
    pub expected_warnings: &'static [&'static str],
}

/// The EvidenceAgent guest, what `fixture()` serves unless the binary
/// asked for other guests first (`fixture_of`).
pub const EVIDENCE_AGENT: Guests = Guests {
    dir: "operator-tests",
    crates: &["evidenceagent-guest"],
    settings: &[
        // objects::IMAGE, the image the agents' Pods run
        "EvidenceAgent.defaultImage=ghcr.io/fyannk/evidence-agent:1.0",
        "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/",
    ],
    expected_warnings: &[],
};

/// What every test of the binary shares: the guests, built and compiled
/// once, and the CRDs to install.
pub struct Fixture {
    pub guests: &'static Guests,
    pub guests_dir: PathBuf,
    pub cache_dir: PathBuf,
    pub logs_dir: PathBuf,
    /// The kind spec of the first guest: the kind the tests look at.
    pub spec: Arc<KindSpec>,
    pub crds: Vec<CustomResourceDefinition>,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();
static CRDS_INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// The fixture of the binary (built on first use, blocking): the
/// EvidenceAgent's, unless `fixture_of` chose other guests first.
pub fn fixture() -> &'static Fixture {
    FIXTURE.get_or_init(|| build_fixture(&EVIDENCE_AGENT))
}

/// The fixture serving `guests` (built on first use, blocking). A binary
/// serving other guests than the EvidenceAgent calls it before anything
/// else of the harness; asking for two guest sets in one binary fails.
pub fn fixture_of(guests: &'static Guests) -> &'static Fixture {
    let f = FIXTURE.get_or_init(|| build_fixture(guests));
    assert_eq!(
        f.guests.dir, guests.dir,
        "the binary's fixture serves other guests: call fixture_of first"
    );
    f
}

fn build_fixture(guests: &'static Guests) -> Fixture {
    let base = paths::target_tmpdir().join(guests.dir);
    let guests_dir = base.join("guests");
    let cache_dir = base.join("modules");
    let logs_dir = base.join("logs");
    for d in [&guests_dir, &cache_dir, &logs_dir] {
        std::fs::create_dir_all(d).expect("a test directory");
    }
    // Loading each guest here compiles it into the cache the hosts use
    // (same limits as the host's defaults, so the same engine), and gives
    // the kind spec the CRD is rendered from.
    let runtime = Runtime::new(RuntimeConfig {
        limits: Limits::default(),
        cache: Some(ArtifactCache::new(cache_dir.clone())),
    })
    .expect("a runtime");
    let mut specs = Vec::new();
    let mut crds: Vec<CustomResourceDefinition> = Vec::new();
    for crate_name in guests.crates {
        let wasm = support::guest_wasm(crate_name);
        let file = crate_name.replace('-', "_");
        // Copied atomically: another test binary may be reading it.
        let bytes = std::fs::read(&wasm).expect("the guest");
        let target = guests_dir.join(format!("{file}.wasm"));
        if std::fs::read(&target).ok().as_deref() != Some(&bytes[..]) {
            let tmp = guests_dir.join(format!(".{file}.{}", std::process::id()));
            std::fs::write(&tmp, &bytes).expect("writing the guest");
            std::fs::rename(&tmp, &target).expect("placing the guest");
        }
        let module = runtime.load_file(&target).expect("the guest loads");
        let spec = module.spec().clone();
        crds.push(
            serde_json::from_value(reconciler_host::crd::render(&spec))
                .expect("the rendered CRD is a CRD"),
        );
        specs.push(spec);
    }
    let cnpg = include_str!("../../../examples/crds/cloudnative-pg.yaml");
    for doc in serde_yaml::Deserializer::from_str(cnpg) {
        let value = <Value as serde::Deserialize>::deserialize(doc).expect("YAML");
        if !value.is_null() {
            crds.push(serde_json::from_value(value).expect("a CRD"));
        }
    }
    Fixture {
        guests,
        guests_dir,
        cache_dir,
        logs_dir,
        spec: specs.swap_remove(0),
        crds,
    }
}

/// The CRDs, installed once per test binary.
pub async fn install_crds(client: &Client) {
    CRDS_INSTALLED
        .get_or_init(|| async {
            for crd in fixture().crds.clone() {
                reconciler_testsupport::install_crd(client, crd)
                    .await
                    .expect("installing a CRD");
            }
        })
        .await;
}

/// `reconciler-host run` for one namespace, as a child process whose
/// stderr goes to a log file. Dropping it stops it (SIGTERM, then SIGKILL
/// after 10 s) and, when the test is failing, prints the log's tail.
pub struct Host {
    child: Child,
    log: PathBuf,
    stopped: Option<ExitStatus>,
}

impl Host {
    /// Starts the host for one namespace with the binary's settings and
    /// waits until its caches are synced.
    pub async fn start(namespace: &str) -> Host {
        Host::start_in(namespace, &[]).await
    }

    /// The same, with `args` after the binary's own (such as more
    /// `--setting`s).
    pub async fn start_in(namespace: &str, args: &[&str]) -> Host {
        let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
        let mut all = vec!["--namespaces", namespace];
        all.extend_from_slice(args);
        Host::start_with(&kubeconfig, &all, namespace).await
    }

    pub fn is_alive(&mut self) -> bool {
        self.stopped.is_none() && self.child.try_wait().expect("try_wait").is_none()
    }

    /// The log so far, without terminal escapes.
    pub fn log_text(&self) -> String {
        strip_ansi(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    /// Status writes (PATCH …/<plural>/<name>/status of the binary's kind)
    /// requested so far.
    pub fn status_writes(&self, namespace: &str, name: &str) -> usize {
        let plural = &fixture().spec.plural;
        let url = format!("/namespaces/{namespace}/{plural}/{name}/status");
        self.log_text()
            .lines()
            .filter(|l| l.contains("http.method=PATCH") && l.contains(&url))
            .filter(|l| l.trim_end().ends_with("requesting"))
            .count()
    }

    /// Requests with `method` whose URL contains `path` (such as
    /// `/namespaces/ns/configmaps/a`), requested so far.
    pub fn requests(&self, method: &str, path: &str) -> usize {
        let method = format!("http.method={method}");
        self.log_text()
            .lines()
            .filter(|l| l.contains(&method) && l.contains(path))
            .filter(|l| l.trim_end().ends_with("requesting"))
            .count()
    }

    /// WARN and ERROR lines of the log, but the binary's expected ones,
    /// and any panic of one of its threads (Rust prints it to stderr, not
    /// as a log line: a task that panicked is otherwise silent).
    pub fn problems(&self) -> Vec<String> {
        let expected = fixture().guests.expected_warnings;
        self.log_text()
            .lines()
            .filter(|l| {
                l.contains(" WARN ") || l.contains(" ERROR ") || l.contains("' panicked at ")
            })
            .filter(|l| !(l.contains(" WARN ") && expected.iter().any(|e| l.contains(e))))
            .map(str::to_owned)
            .collect()
    }

    /// The host process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`STOP`, `CONT`, …) to the host process: a frozen
    /// host (`STOP`) is alive and holds its connections, but runs nothing.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -{signal}");
    }

    /// SIGKILL, at once: no shutdown, nothing finished.
    pub fn kill(&mut self) {
        if self.stopped.is_some() {
            return;
        }
        let _ = self.child.kill();
        self.stopped = Some(self.child.wait().expect("wait"));
    }

    /// SIGTERM, then wait (10 s at most, then SIGKILL).
    pub fn stop(&mut self) -> ExitStatus {
        if let Some(s) = self.stopped {
            return s;
        }
        let status = crate::process::terminate(&mut self.child, || {});
        self.stopped = Some(status);
        status
    }

    /// Stops the host and checks it stopped cleanly with nothing to warn
    /// about; removes its log.
    pub fn finish(mut self) {
        let status = self.stop();
        let problems = self.problems();
        assert!(status.success(), "the host did not stop cleanly: {status}");
        assert!(
            problems.is_empty(),
            "the host warned:\n{}",
            problems.join("\n")
        );
        let log = self.log_text();
        assert!(log.contains("stopped"), "no clean shutdown in the log");
        let _ = std::fs::remove_file(&self.log);
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let status = self.stop();
        if std::thread::panicking() {
            let text = self.log_text();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(80)..];
            eprintln!(
                "--- host ({status}), log {} (last {} lines):\n{}\n---",
                self.log.display(),
                tail.len(),
                tail.join("\n")
            );
        }
    }
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Waits until the garbage collector follows the kind of the CRD `crd`:
/// it looks for new kinds every 30 s, so it knows of (and acts on the
/// deletion of) an owner of that kind from its first look after the CRD
/// was installed.
pub async fn garbage_collector_follows(client: &Client, crd: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get(crd).await.expect("the CRD");
    let installed = crd.metadata.creation_timestamp.expect("a creation time").0;
    let known = installed + jiff::SignedDuration::from_secs(35);
    let wait = known.duration_since(jiff::Timestamp::now());
    if wait.is_positive() {
        tokio::time::sleep(wait.unsigned_abs()).await;
    }
}

/// Polls `probe` every [`POLL`] until it answers `Ok`, for [`TIMEOUT`] at
/// most; then fails with its last `Err` (what it saw).
pub async fn eventually<T, E: Debug>(
    what: &str,
    mut probe: impl AsyncFnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match probe().await {
            Ok(t) => return t,
            Err(e) if Instant::now() >= deadline => {
                panic!("timed out after {TIMEOUT:?} waiting for {what}; last seen: {e:#?}")
            }
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

/// One condition, as the tests compare it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond {
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: String,
    pub observed_generation: i64,
}

pub fn condition(object: &Value, type_: &str) -> Option<Cond> {
    let c = object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let s = |f: &str| c[f].as_str().unwrap_or_default().to_owned();
    Some(Cond {
        status: s("status"),
        reason: s("reason"),
        message: s("message"),
        last_transition_time: s("lastTransitionTime"),
        observed_generation: c["observedGeneration"].as_i64().unwrap_or(-1),
    })
}

/// Whether the condition has this status and reason.
pub fn has(object: &Value, type_: &str, status: &str, reason: &str) -> bool {
    condition(object, type_).is_some_and(|c| c.status == status && c.reason == reason)
}

/// The conditions as `Type=Status/Reason`, for failure messages.
pub fn summary(object: &Value) -> Vec<String> {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}={}/{}: {}",
                c["type"].as_str().unwrap_or("?"),
                c["status"].as_str().unwrap_or("?"),
                c["reason"].as_str().unwrap_or("?"),
                c["message"].as_str().unwrap_or(""),
            )
        })
        .collect()
}

pub async fn get(api: &Api<DynamicObject>, name: &str) -> Value {
    let o = api
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("getting {name}: {e}"));
    serde_json::to_value(o).expect("JSON")
}

pub fn resource_version(object: &Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits until the object's conditions satisfy every `(type, status,
/// reason)`; returns the object.
pub async fn wait_for(api: &Api<DynamicObject>, name: &str, want: &[(&str, &str, &str)]) -> Value {
    let what = format!(
        "{name}: {}",
        want.iter()
            .map(|(t, s, r)| format!("{t}={s}/{r}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    eventually(&what, async || {
        let o = get(api, name).await;
        if want.iter().all(|(t, s, r)| has(&o, t, s, r)) {
            Ok(o)
        } else {
            Err(summary(&o))
        }
    })
    .await
}

/// Waits until the agent is Ready True with every aspect True.
pub async fn wait_healthy(api: &Api<DynamicObject>, name: &str) -> Value {
    let f = fixture();
    let mut want = vec![
        ("Ready", "True", "AsExpected"),
        ("Progressing", "False", "AsExpected"),
        ("Stalled", "False", "AsExpected"),
    ];
    for a in &f.spec.aspects {
        want.push((a.as_str(), "True", "AsExpected"));
    }
    wait_for(api, name, &want).await
}

/// An Event about one agent, as the tests count it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    pub type_: String,
    pub reason: String,
    pub note: String,
    /// How many times it was published: the recorder patches a repeated
    /// Event's series instead of creating another.
    pub count: i32,
}

/// The Events about the object `name` of the binary's kind
/// (events.k8s.io/v1), sorted.
pub async fn events_about(client: &Client, namespace: &str, name: &str) -> Vec<Published> {
    events_of(client, namespace, &fixture().spec.kind, name).await
}

/// The Events in `namespace` about the object `name` of kind `kind`
/// (events.k8s.io/v1; a cluster-scoped object's are in `default`), sorted.
pub async fn events_of(client: &Client, namespace: &str, kind: &str, name: &str) -> Vec<Published> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut found: Vec<Published> = api
        .list(&ListParams::default())
        .await
        .expect("listing Events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name))
        })
        .map(|e| Published {
            type_: e.type_.unwrap_or_default(),
            reason: e.reason.unwrap_or_default(),
            note: e.note.unwrap_or_default(),
            count: e.series.map_or(1, |s| s.count),
        })
        .collect();
    found.sort_by(|a, b| (&a.type_, &a.reason, &a.note).cmp(&(&b.type_, &b.reason, &b.note)));
    found
}

/// How many times an Event of this type and reason was published.
pub fn published(events: &[Published], type_: &str, reason: &str) -> i32 {
    events
        .iter()
        .filter(|e| e.type_ == type_ && e.reason == reason)
        .map(|e| e.count)
        .sum()
}

/// Waits `SETTLE` (for something that must not happen).
pub async fn settle() {
    tokio::time::sleep(SETTLE).await;
}

/// `reconciler-host` under the kubeconfig `kubeconfig` with the binary's
/// compiled guests, nothing of the caller's environment but `PATH` and
/// `HOME`, and no input; the caller adds the subcommand.
pub fn cli_command(kubeconfig: &Path) -> Command {
    let mut command = Command::new(paths::host_binary());
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::var_os("HOME").unwrap_or_default())
        .env("KUBECONFIG", kubeconfig)
        .env("NO_COLOR", "1")
        .arg("--cache-dir")
        .arg(&fixture().cache_dir)
        .stdin(Stdio::null());
    command
}

/// `reconciler-host run` with the binary's guests and settings under the
/// kubeconfig `kubeconfig`, its stderr to `stderr`; the caller adds the
/// namespaces and other options.
pub fn host_command(kubeconfig: &Path, stderr: Stdio) -> Command {
    host_command_overriding(kubeconfig, stderr, &[])
}

/// [`host_command`] with `overrides` (`<Kind>.<name>=<value>`) in place of
/// the binary's settings of the same name (a guest reads the first value
/// given for a name, so a later `--setting` would not change it).
pub fn host_command_overriding(kubeconfig: &Path, stderr: Stdio, overrides: &[&str]) -> Command {
    let f = fixture();
    let mut command = cli_command(kubeconfig);
    command
        .env("RUST_LOG", "info,kube_client::client::builder=debug")
        .arg("run")
        .arg("--guests")
        .arg(&f.guests_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let key = |s: &str| s.split_once('=').map(|(k, _)| k.to_owned());
    let overridden: Vec<_> = overrides.iter().filter_map(|o| key(o)).collect();
    for setting in f.guests.settings {
        if !key(setting).is_some_and(|k| overridden.contains(&k)) {
            command.args(["--setting", setting]);
        }
    }
    for setting in overrides {
        command.args(["--setting", setting]);
    }
    command
}

impl Host {
    /// Starts the host under `kubeconfig` with `args` after the tests'
    /// own (such as `--namespaces a,b`), logging to `<log_name>.log`, and
    /// waits until its caches are synced.
    pub async fn start_with(kubeconfig: &Path, args: &[&str], log_name: &str) -> Host {
        Host::start_overriding(kubeconfig, args, &[], log_name).await
    }

    /// The host started under `kubeconfig` with `args`, logging to
    /// `<log_name>.log`, not waited for (a standby never says it
    /// reconciles).
    pub fn start_spawned(kubeconfig: &Path, args: &[&str], log_name: &str) -> Host {
        Host::spawn(kubeconfig, args, &[], log_name)
    }

    fn spawn(kubeconfig: &Path, args: &[&str], overrides: &[&str], log_name: &str) -> Host {
        let log = fixture().logs_dir.join(format!("{log_name}.log"));
        let stderr = std::fs::File::create(&log).expect("the host's log");
        let child = host_command_overriding(kubeconfig, stderr.into(), overrides)
            .args(args)
            .spawn()
            .expect("the host starts");
        Host {
            child,
            log,
            stopped: None,
        }
    }

    /// [`start_with`](Self::start_with), with `overrides` in place of the
    /// binary's settings of the same name.
    pub async fn start_overriding(
        kubeconfig: &Path,
        args: &[&str],
        overrides: &[&str],
        log_name: &str,
    ) -> Host {
        let mut host = Host::spawn(kubeconfig, args, overrides, log_name);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if host.log_text().contains("caches synced; reconciling") {
                return host;
            }
            assert!(host.is_alive(), "the host exited while starting");
            assert!(
                Instant::now() < deadline,
                "the host did not sync its caches within 60 s"
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

/// One HTTP GET of `path` on `addr`: the status line and the body (empty
/// when the connection failed: the callers poll).
pub fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let mut out = String::new();
    let answered = std::net::TcpStream::connect(addr)
        .and_then(|mut s| {
            s.write_all(request.as_bytes())?;
            s.read_to_string(&mut out)
        })
        .is_ok();
    if !answered {
        return (String::new(), String::new());
    }
    let status = out.lines().next().unwrap_or_default().to_owned();
    let body = out.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    (status, body)
}

/// A free loopback port.
pub fn free_addr() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}
