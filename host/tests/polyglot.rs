//! Guests in JavaScript (componentize-js) and Python (componentize-py),
//! built by `make guests-js guests-py` (issue 21): the same inert WASI
//! against guests that try to escape it in each language; the JavaScript
//! EvidenceAgent accepted by the hot-swap gate in place of the Rust one,
//! and swapped in for it (and back) by a running host against the real
//! API server; the Python SecretCheck served by the unchanged host against
//! the real API server.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use reconciler_host::operator::hot_swap::gate;
use reconciler_host::runtime::{
    ArtifactCache, GuestErrorClass, Limits, Module, Runtime, RuntimeConfig,
};
use reconciler_host_harness::escape::{NOW, attempt, attempt_at};
use reconciler_host_harness::guests::{self as support, polyglot};
use reconciler_host_harness::objects::{self, create, create_all};
use reconciler_host_harness::operator::{condition, eventually, get};
use reconciler_host_harness::paths::{host_binary, target_tmpdir, workspace};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// The deadline of the tests' passes: a JavaScript or Python pass takes a
/// few milliseconds of CPU time, but the tests' host is a debug build and
/// its wall-time ceiling (ten deadlines) must outlast two shared cores
/// under load. A loop still meets it, in a second of CPU time.
const DEADLINE: Duration = Duration::from_secs(1);
const DEADLINE_MS: &str = "1000";

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        limits: Limits {
            deadline: DEADLINE,
            ..Limits::default()
        },
        cache: None,
    })
    .expect("runtime")
}

fn load(rt: &Runtime, file: &str) -> Module {
    rt.load_file(&polyglot(file))
        .unwrap_or_else(|e| panic!("{file} loads: {e}"))
}

/// A listener nothing may reach, and whether anything did.
struct Listener(std::net::TcpListener);

impl Listener {
    fn new() -> Self {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        Listener(l)
    }
    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }
    fn assert_untouched(&self) {
        assert!(
            matches!(self.0.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "nothing reached the listener"
        );
    }
}

/// A guest that fills stderr, then fails: the failure's own message, the
/// last thing written, is in the error, and the error stays bounded.
fn assert_stderr_bounded(m: &Module, failure: &str) {
    let e = attempt_at(m, json!({"attempt": "stderr", "bytes": 10}), "1", NOW).expect_err("fails");
    assert_eq!(e.class, GuestErrorClass::Trap, "{e}");
    assert!(e.detail.contains("eeeeeeeeee"), "{e}");
    assert!(
        e.detail
            .contains(&format!("{failure}: after 10 bytes of stderr")),
        "{e}"
    );
    let e = attempt_at(
        m,
        json!({"attempt": "stderr", "bytes": 1_000_000}),
        "1",
        NOW,
    )
    .expect_err("fails");
    assert_eq!(e.class, GuestErrorClass::Trap, "{e}");
    assert!(
        e.detail
            .contains(&format!("{failure}: after 1000000 bytes of stderr")),
        "the failure, written after a megabyte: {e}"
    );
    assert!(e.detail.contains("earlier bytes of stderr dropped"), "{e}");
    assert!(
        e.detail.len() < 4096 + 300,
        "at most the capture's 4 KiB of stderr: {} bytes",
        e.detail.len()
    );
}

#[test]
fn javascript_cannot_escape_the_pass() {
    let rt = runtime();
    let m = load(&rt, "escape_js.wasm");
    // Its imports are the contract and the inert WASI only: `fetch` exists
    // in the engine, but the component links no HTTP.
    let imports = reconciler_host::runtime::sandbox::imports(
        &std::fs::read(polyglot("escape_js.wasm")).unwrap(),
    )
    .unwrap();
    assert!(
        imports.iter().all(|i| i.starts_with("reconciler:guest/")
            || reconciler_host::runtime::sandbox::provides(i)),
        "{imports:?}"
    );
    for wasi in [
        "wasi:filesystem/preopens@0.2.12",
        "wasi:sockets/tcp-create-socket@0.2.12",
        "wasi:clocks/monotonic-clock@0.2.12",
    ] {
        assert!(imports.iter().any(|i| i == wasi), "{wasi}: {imports:?}");
    }
    assert!(
        !imports.iter().any(|i| i.starts_with("wasi:http")),
        "{imports:?}"
    );

    // The wall clock is the pass's now.
    assert_eq!(
        attempt(&m, json!({"attempt": "clock"})),
        "wall 1795953600000 2026-11-29T12:00:00.000Z"
    );
    assert_eq!(
        attempt_at(
            &m,
            json!({"attempt": "clock"}),
            "1",
            "2030-01-01T00:00:00.5Z"
        )
        .unwrap(),
        "wall 1893456000500 2030-01-01T00:00:00.500Z"
    );
    // A sleep returns, the virtual clock advanced by it: one that held the
    // host thread would hold this test for the hour (no wall-clock bound
    // here: CI shares its cores).
    assert_eq!(
        attempt(&m, json!({"attempt": "sleep", "seconds": 3600})),
        "slept 3600s"
    );
    // Time does not pass while the guest computes: waiting for it is a
    // loop, and the deadline ends it.
    let e = attempt_at(&m, json!({"attempt": "monotonic", "ms": 10}), "1", NOW)
        .expect_err("a busy wait never ends");
    assert_eq!(e.class, GuestErrorClass::Deadline, "{e}");
    // Random replays per pass, and differs between passes.
    let random = attempt(&m, json!({"attempt": "random"}));
    assert_eq!(
        random,
        attempt(&m, json!({"attempt": "random"})),
        "a pass replays"
    );
    let other = attempt_at(&m, json!({"attempt": "random"}), "2", NOW).unwrap();
    assert_ne!(random, other, "another object version draws others");
    // No directory to open a file in.
    assert_eq!(
        attempt(&m, json!({"attempt": "read-file"})),
        "preopened directories: 0"
    );
    // No socket, no HTTP.
    let listener = Listener::new();
    assert_eq!(
        attempt(&m, json!({"attempt": "connect", "port": listener.port()})),
        "connect refused: access-denied"
    );
    // Built without HTTP (`-d http`), the engine traps at a fetch.
    let e = attempt_at(
        &m,
        json!({"attempt": "fetch", "url": format!("http://127.0.0.1:{}/", listener.port())}),
        "1",
        NOW,
    )
    .expect_err("no fetch");
    assert_eq!(e.class, GuestErrorClass::Trap, "{e}");
    listener.assert_untouched();
    assert_eq!(attempt(&m, json!({"attempt": "env"})), "env [] args []");
    // A loop meets the deadline; an exception's message reaches the error.
    let e = attempt_at(&m, json!({"attempt": "loop"}), "1", NOW).expect_err("interrupted");
    assert_eq!(e.class, GuestErrorClass::Deadline, "{e}");
    let e = attempt_at(&m, json!({"attempt": "throw"}), "1", NOW).expect_err("it throws");
    assert_eq!(e.class, GuestErrorClass::Trap, "{e}");
    assert!(
        e.detail.contains("Error: told to throw"),
        "the exception's message: {e}"
    );
    assert_stderr_bounded(&m, "Error");
}

#[test]
fn python_cannot_escape_the_pass() {
    let rt = runtime();
    let m = load(&rt, "escape_py.wasm");
    assert_eq!(
        attempt(&m, json!({"attempt": "clock"})),
        "wall 1795953600.0"
    );
    assert_eq!(
        attempt(&m, json!({"attempt": "sleep", "seconds": 3600})),
        "slept 3600.0"
    );
    let random = attempt(&m, json!({"attempt": "random"}));
    assert_eq!(
        random,
        attempt(&m, json!({"attempt": "random"})),
        "a pass replays"
    );
    let later = attempt_at(
        &m,
        json!({"attempt": "random"}),
        "1",
        "2026-11-29T12:00:01Z",
    )
    .unwrap();
    assert_ne!(random, later, "another instant draws others");
    for path in ["/etc/passwd", "app.py", "."] {
        let said = attempt(&m, json!({"attempt": "read-file", "path": path}));
        assert!(said.starts_with("read refused"), "{path}: {said}");
    }
    let said = attempt(&m, json!({"attempt": "list-root"}));
    assert!(said.starts_with("list refused"), "{said}");
    let listener = Listener::new();
    let address = format!("127.0.0.1:{}", listener.port());
    let said = attempt(&m, json!({"attempt": "connect", "address": address}));
    assert!(said.starts_with("connect refused"), "{said}");
    assert!(said.contains("Permission denied"), "access-denied: {said}");
    listener.assert_untouched();
    let said = attempt(&m, json!({"attempt": "resolve", "host": "localhost"}));
    assert!(said.starts_with("resolve refused"), "{said}");
    assert_eq!(attempt(&m, json!({"attempt": "env"})), "env {} args []");
    let e = attempt_at(&m, json!({"attempt": "loop"}), "1", NOW).expect_err("interrupted");
    assert_eq!(e.class, GuestErrorClass::Deadline, "{e}");
    let e = attempt_at(&m, json!({"attempt": "raise"}), "1", NOW).expect_err("it raises");
    assert_eq!(e.class, GuestErrorClass::Trap, "{e}");
    assert!(
        e.detail.contains("ValueError: told to raise"),
        "the traceback's end: {e}"
    );
    assert_stderr_bounded(&m, "RuntimeError");
}

#[tokio::test]
async fn the_javascript_evidenceagent_is_accepted_by_the_gate_in_place_of_the_rust_one() {
    let rt = runtime();
    let rust = rt
        .load_file(&support::guest_wasm("evidenceagent-guest"))
        .expect("the Rust EvidenceAgent loads");
    let js = load(&rt, "evidenceagent_js.wasm");
    assert_eq!(js.spec().kind, "EvidenceAgent");
    // Either may replace the other: the same kind, reasons and aspects.
    gate::compatible(rust.spec(), js.spec())
        .expect("the JavaScript module may replace the Rust one");
    gate::compatible(js.spec(), rust.spec()).expect("and back");
    // Every fixture of the kind, as a hot swap runs those shipped beside it.
    let dir = workspace().join("guests/evidenceagent/fixtures");
    // Their golden files too: the gate compares them as `test` does.
    let mut fixtures: Vec<gate::ShippedFixture> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| gate::ShippedFixture {
            name: p.file_name().unwrap().to_string_lossy().into_owned(),
            text: std::fs::read_to_string(&p).unwrap(),
            golden: std::fs::read_to_string(p.with_extension("golden")).ok(),
        })
        .collect();
    fixtures.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(fixtures.len() >= 20, "{} fixtures", fixtures.len());
    assert!(fixtures.iter().all(|f| f.golden.is_some()));
    gate::fixtures(&js, &fixtures)
        .await
        .expect("the JavaScript module passes every fixture");
}

/// `reconciler-host run` over `guests` for one namespace, polling the
/// directory every 200 ms, `/metrics` on a free port; killed on drop.
struct RunningHost {
    child: std::process::Child,
    log: PathBuf,
    metrics_port: u16,
}

impl RunningHost {
    async fn start(namespace: &str, guests: &std::path::Path, settings: &[&str]) -> RunningHost {
        let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
        let log = guests.with_extension("log");
        let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut command = Command::new(host_binary());
        command
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .arg("--cache-dir")
            .arg(target_tmpdir().join("polyglot-modules"))
            .args(["--deadline-ms", DEADLINE_MS])
            .arg("run")
            .arg("--guests")
            .arg(guests)
            .args(["--namespaces", namespace, "--guests-poll", "200ms"])
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("the host's log"));
        for setting in settings {
            command.args(["--setting", setting]);
        }
        let host = RunningHost {
            child: command.spawn().expect("the host starts"),
            log,
            metrics_port,
        };
        eventually("the host reconciling", async || {
            let text = host.log_text();
            if text.contains("caches synced; reconciling") {
                Ok(())
            } else {
                Err(text.lines().last().unwrap_or_default().to_owned())
            }
        })
        .await;
        host
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The Prometheus exposition (empty when it cannot be read).
    fn metrics(&self) -> String {
        use std::io::{Read as _, Write as _};
        let mut text = String::new();
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.metrics_port)) {
            let _ = s.write_all(
                b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            );
            let _ = s.read_to_string(&mut text);
        }
        text
    }

    /// One sample of `/metrics` (`name{labels}`), if exposed.
    fn sample(&self, series: &str) -> Option<f64> {
        self.metrics().lines().find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
        })
    }

    /// Asserts that no guest error of `kind` was counted, and that its
    /// passes were.
    fn assert_no_guest_error(&self, kind: &str) {
        let metrics = self.metrics();
        assert!(
            metrics.contains(&format!("reconciler_passes_total{{kind=\"{kind}\"}}")),
            "{metrics}"
        );
        let errors: Vec<&str> = metrics
            .lines()
            .filter(|l| l.starts_with(&format!("reconciler_guest_errors_total{{kind=\"{kind}\"")))
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
}

impl Drop for RunningHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = self.log_text();
            let lines: Vec<&str> = text.lines().collect();
            eprintln!(
                "--- host log {}:\n{}\n---",
                self.log.display(),
                lines[lines.len().saturating_sub(60)..].join("\n")
            );
        }
    }
}

/// Compiles `modules` into the cache the tests' hosts use (the host's
/// engine is the default runtime's), so that a host's start or swap is not
/// a compile of a 13 MB JavaScript or a 19 MB Python component in a debug
/// build, which the tests' timeouts do not allow for.
fn precompile(modules: &[&[u8]]) {
    let cache = Runtime::new(RuntimeConfig {
        limits: Limits::default(),
        cache: Some(ArtifactCache::new(target_tmpdir().join("polyglot-modules"))),
    })
    .expect("runtime");
    for bytes in modules {
        cache.load("precompiled", bytes).expect("the module loads");
    }
}

/// Places `bytes` as `dir/name` in one rename, as a ConfigMap volume does.
fn place(dir: &std::path::Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// The CRDs of a kind (from `reconciler-host crd`) and of CloudNativePG.
async fn install_crds(client: &kube::Client, wasm: &std::path::Path) {
    let crd = Command::new(host_binary())
        .arg("crd")
        .arg(wasm)
        .output()
        .expect("reconciler-host crd");
    assert!(
        crd.status.success(),
        "{}",
        String::from_utf8_lossy(&crd.stderr)
    );
    let mut crds = vec![serde_yaml::from_slice::<Value>(&crd.stdout).expect("YAML")];
    let cnpg = std::fs::read_to_string(workspace().join("examples/crds/cloudnative-pg.yaml"))
        .expect("the CloudNativePG CRDs");
    for doc in serde_yaml::Deserializer::from_str(&cnpg) {
        let value = <Value as serde::Deserialize>::deserialize(doc).expect("YAML");
        if !value.is_null() {
            crds.push(value);
        }
    }
    for crd in crds {
        reconciler_testsupport::install_crd(client, serde_json::from_value(crd).unwrap())
            .await
            .expect("installing a CRD");
    }
}

/// The running host swaps the JavaScript EvidenceAgent in for the Rust one
/// of the same file (its fixtures beside it, run by the gate), serves the
/// kind with it, and swaps the Rust one back.
#[tokio::test]
async fn a_running_host_swaps_the_javascript_evidenceagent_in_for_the_rust_one_and_back() {
    use reconciler_host::runtime::artifacts::digest;
    let rust = std::fs::read(support::guest_wasm("evidenceagent-guest")).unwrap();
    let js = std::fs::read(polyglot("evidenceagent_js.wasm")).unwrap();
    let (rust_digest, js_digest) = (digest(&rust), digest(&js));
    let ns = TestNamespace::new("js-swap").await.expect("a namespace");
    let client = ns.client();
    install_crds(&client, &support::guest_wasm("evidenceagent-guest")).await;

    let dir = target_tmpdir().join(format!("js-swap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let fixtures = dir.join("evidenceagent_guest.fixtures");
    std::fs::create_dir_all(&fixtures).unwrap();
    for entry in std::fs::read_dir(workspace().join("guests/evidenceagent/fixtures")).unwrap() {
        let path = entry.unwrap().path();
        if path
            .extension()
            .is_some_and(|x| x == "yaml" || x == "golden")
        {
            std::fs::copy(&path, fixtures.join(path.file_name().unwrap())).unwrap();
        }
    }
    const FILE: &str = "evidenceagent_guest.wasm";
    precompile(&[&rust, &js]);
    place(&dir, FILE, &rust);
    let host = RunningHost::start(
        ns.name(),
        &dir,
        &["EvidenceAgent.defaultImage=ghcr.io/fyannk/evidence-agent:1.0"],
    )
    .await;
    let module = |d: &str| {
        format!(
            "reconciler_module{{kind=\"EvidenceAgent\",guest=\"evidenceagent_guest\",digest=\"{d}\",contract=\"0.6.0\"}}"
        )
    };
    assert_eq!(host.sample(&module(&rust_digest)), Some(1.0));

    create_all(&client, ns.name(), objects::backup_setup()).await;
    create(&client, ns.name(), objects::agent("a", "pg")).await;
    let agents = objects::agents(&client, ns.name());
    let valid = |cluster: &'static str, reason: &'static str| {
        let agents = agents.clone();
        async move || {
            let o = get(&agents, "a").await;
            condition(&o, "ConfigurationValid")
                .filter(|c| {
                    c.reason == reason && c.message.starts_with(&format!("Cluster {cluster}"))
                })
                .ok_or(o)
        }
    };
    eventually(
        "the Rust module's ConfigurationValid",
        valid("pg", "AsExpected"),
    )
    .await;

    // The JavaScript module of the same kind, in the Rust one's place: the
    // gate holds it to the running module and the fixtures beside it.
    place(&dir, FILE, &js);
    eventually("the JavaScript module swapped in", async || {
        match host.sample(&module(&js_digest)) {
            Some(1.0) => Ok(()),
            other => Err(other),
        }
    })
    .await;
    assert_eq!(host.sample(&module(&rust_digest)), None);
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"EvidenceAgent\"}"),
        Some(1.0)
    );
    // It serves the kind: a change of the agent is its to evaluate.
    objects::merge(
        &agents,
        "a",
        json!({"spec": {"cluster": {"name": "missing"}}}),
    )
    .await;
    let c = eventually(
        "the JavaScript module's ClusterNotFound",
        valid("missing", "ClusterNotFound"),
    )
    .await;
    assert_eq!(
        c.message,
        format!("Cluster missing does not exist in {}", ns.name())
    );

    // And back: the gate accepts the Rust module in the JavaScript one's place.
    place(&dir, FILE, &rust);
    eventually("the Rust module swapped back in", async || {
        match host.sample(&module(&rust_digest)) {
            Some(1.0) => Ok(()),
            other => Err(other),
        }
    })
    .await;
    objects::merge(&agents, "a", json!({"spec": {"cluster": {"name": "pg"}}})).await;
    eventually(
        "the Rust module's ConfigurationValid again",
        valid("pg", "AsExpected"),
    )
    .await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"EvidenceAgent\"}"),
        Some(2.0)
    );
    host.assert_no_guest_error("EvidenceAgent");
    assert_eq!(
        host.sample("reconciler_rollbacks_total{kind=\"EvidenceAgent\"}"),
        None
    );
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_python_secretcheck_is_served_against_the_real_api_server() {
    let wasm = polyglot("secretcheck_py.wasm");
    let ns = TestNamespace::new("python-guest")
        .await
        .expect("a namespace");
    let crd = Command::new(host_binary())
        .arg("crd")
        .arg(&wasm)
        .output()
        .expect("reconciler-host crd");
    assert!(
        crd.status.success(),
        "{}",
        String::from_utf8_lossy(&crd.stderr)
    );
    let crd: Value = serde_yaml::from_slice(&crd.stdout).expect("YAML");
    reconciler_testsupport::install_crd(&ns.client(), serde_json::from_value(crd).unwrap())
        .await
        .expect("installing the CRD");
    let guests = target_tmpdir().join(format!("python-guest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&guests);
    std::fs::create_dir_all(&guests).unwrap();
    let bytes = std::fs::read(&wasm).unwrap();
    precompile(&[&bytes]);
    place(&guests, "secretcheck_py.wasm", &bytes);
    let host = RunningHost::start(ns.name(), &guests, &[]).await;
    let api = objects::api(
        &ns.client(),
        ns.name(),
        "examples.reconciler.dev/v1alpha1",
        "SecretCheck",
    );
    create(
        &ns.client(),
        ns.name(),
        json!({"apiVersion": "examples.reconciler.dev/v1alpha1", "kind": "SecretCheck",
               "metadata": {"name": "app"}, "spec": {"secretName": "app-db", "keys": ["username", "password"]}}),
    )
    .await;
    let missing = eventually("the SecretCheck SecretNotFound", async || {
        let o = get(&api, "app").await;
        condition(&o, "KeysPresent")
            .filter(|c| c.reason == "SecretNotFound")
            .ok_or(o)
    })
    .await;
    assert!(missing.message.contains("app-db"), "{}", missing.message);
    create(
        &ns.client(),
        ns.name(),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "app-db"},
               "stringData": {"username": "app", "password": "s3cret"}}),
    )
    .await;
    let ready = eventually("the SecretCheck Ready", async || {
        let o = get(&api, "app").await;
        condition(&o, "Ready")
            .filter(|c| c.status == "True")
            .ok_or(o)
    })
    .await;
    assert_eq!(ready.reason, "AsExpected");
    let o = get(&api, "app").await;
    assert_eq!(o["status"]["checkedKeys"], 2, "the guest's status field");
    host.assert_no_guest_error("SecretCheck");
    drop(host);
    let _ = std::fs::remove_dir_all(&guests);
}
