//! Hot swap end to end: `reconciler-host run` as a child process serving
//! the Hostile test guest against the real local kube-apiserver, while the
//! test replaces the module in its guests directory with variants of the
//! guest (built with the hostile guest's `variant-*` features): one the
//! gate refuses, one that traps and is rolled back, one that serves, put in
//! place the way a ConfigMap volume updates.
//!
//! The same variants pushed to an OCI registry and rolled out by
//! GuestModule objects: [`guest_modules`].
//!
//! Every expectation is polled with a timeout (`harness::TIMEOUT`).

mod guest_modules;

use reconciler_host_harness::guests as support;

use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;

use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::DynamicObject;
use reconciler_host::runtime::{ArtifactCache, Limits, Runtime, RuntimeConfig, artifacts::digest};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

use harness::{POLL, condition, eventually, get, summary};

const API_VERSION: &str = "testing.reconciler.dev/v1";
const KIND: &str = "Hostile";
/// The file the host serves the kind from.
const FILE: &str = "hostile_guest.wasm";
/// The poll interval of the tests' hosts.
const GUESTS_POLL: &str = "200ms";

/// The guest's variants (module bytes) and the kind's CRD, built once.
struct Variants {
    base: Vec<u8>,
    drop_reason: Vec<u8>,
    trap: Vec<u8>,
    message: Vec<u8>,
    /// Reads Services naming `spec.ports`, or the whole `spec`.
    service_ports: Vec<u8>,
    service_spec: Vec<u8>,
    crd: CustomResourceDefinition,
    dir: PathBuf,
    cache_dir: PathBuf,
}

static VARIANTS: OnceLock<Variants> = OnceLock::new();
static CRD_INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// Builds the hostile guest with `feature` (or none) and returns its bytes.
fn build(feature: Option<&str>) -> Vec<u8> {
    std::fs::read(support::guest_wasm_with("hostile-guest", feature)).expect("the guest")
}

fn variants() -> &'static Variants {
    VARIANTS.get_or_init(|| {
        let drop_reason = build(Some("variant-drop-reason"));
        let trap = build(Some("variant-trap"));
        let message = build(Some("variant-message"));
        let service_ports = build(Some("variant-service-ports"));
        let service_spec = build(Some("variant-service-spec"));
        // The plain guest last: other test binaries expect it in place.
        let base = build(None);
        let variants = [
            &base,
            &drop_reason,
            &trap,
            &message,
            &service_ports,
            &service_spec,
        ]
        .map(|b| digest(b));
        for (i, d) in variants.iter().enumerate() {
            assert!(
                !variants[..i].contains(d),
                "the variants are distinct modules"
            );
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hotswap-tests");
        let cache_dir = dir.join("modules");
        std::fs::create_dir_all(&cache_dir).expect("a test directory");
        // The plain guest compiled into the hosts' cache (same limits as
        // the host's defaults); the variants are compiled by the host when
        // they land, as in production.
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
        Variants {
            base,
            drop_reason,
            trap,
            message,
            service_ports,
            service_spec,
            crd,
            dir,
            cache_dir,
        }
    })
}

async fn namespace(prefix: &str) -> TestNamespace {
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    let client = ns.client();
    CRD_INSTALLED
        .get_or_init(|| async {
            reconciler_testsupport::install_crd(&client, variants().crd.clone())
                .await
                .expect("installing the Hostile CRD");
        })
        .await;
    ns
}

/// A fresh guests directory for one test.
fn guests_dir(test: &str) -> PathBuf {
    let dir = variants().dir.join(test).join("guests");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a guests directory");
    dir
}

/// Writes `bytes` to `dir/name` atomically (a hidden temporary renamed).
fn place(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).expect("writing a module");
    std::fs::rename(&tmp, dir.join(name)).expect("placing a module");
}

fn hostiles(ns: &TestNamespace) -> Api<DynamicObject> {
    objects::api(&ns.client(), ns.name(), API_VERSION, KIND)
}

async fn create_hostile(ns: &TestNamespace, name: &str, message: &str) {
    objects::create(
        &ns.client(),
        ns.name(),
        json!({
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": name},
            "spec": {"behavior": "ok", "message": message},
        }),
    )
    .await;
}

async fn set_message(api: &Api<DynamicObject>, name: &str, message: &str) {
    objects::merge(api, name, json!({"spec": {"message": message}})).await;
}

/// Whether the object is Ready with Behaving True carrying `message`, for
/// the generation it has now.
fn evaluated_with(o: &Value, message: &str) -> bool {
    let generation = o["metadata"]["generation"].as_i64().unwrap_or(-1);
    let behaving = condition(o, "Behaving");
    let ready = condition(o, "Ready");
    behaving.is_some_and(|c| {
        c.status == "True" && c.message == message && c.observed_generation == generation
    }) && ready.is_some_and(|c| c.status == "True")
}

/// Waits until every `(name, message)` is evaluated with its message.
async fn wait_messages(api: &Api<DynamicObject>, want: &[(String, String)]) {
    eventually("every object evaluated with its message", async || {
        let mut wrong = Vec::new();
        for (name, message) in want {
            let o = get(api, name).await;
            if !evaluated_with(&o, message) {
                wrong.push((name.clone(), message.clone(), summary(&o)));
            }
        }
        if wrong.is_empty() { Ok(()) } else { Err(wrong) }
    })
    .await;
}

/// A free loopback port for `/metrics`.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `reconciler-host run` over a guests directory, one namespace, with the
/// tests' poll interval, `/metrics` on a free port. Stopped on drop
/// (SIGTERM); prints its log's tail when the test fails.
struct SwapHost {
    child: Child,
    log: PathBuf,
    metrics_port: u16,
}

impl SwapHost {
    async fn start(namespace: &str, guests: &Path, extra: &[&str]) -> SwapHost {
        SwapHost::start_as(
            namespace,
            guests,
            extra,
            "host",
            "caches synced; reconciling",
        )
        .await
    }

    /// [`SwapHost::start`], its log `<name>.log` beside the guests
    /// directory, started once its log says `ready`.
    async fn start_as(
        namespace: &str,
        guests: &Path,
        extra: &[&str],
        name: &str,
        ready: &str,
    ) -> SwapHost {
        let v = variants();
        let log = guests
            .parent()
            .expect("a test directory")
            .join(format!("{name}.log"));
        let stderr = std::fs::File::create(&log).expect("the host's log");
        let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
        let metrics_port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .arg("--cache-dir")
            .arg(&v.cache_dir)
            .arg("run")
            .arg("--guests")
            .arg(guests)
            .args(["--namespaces", namespace])
            .args(["--guests-poll", GUESTS_POLL])
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("the host starts");
        let mut host = SwapHost {
            child,
            log,
            metrics_port,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !host.log_text().contains(ready) {
            assert!(
                host.child.try_wait().expect("try_wait").is_none(),
                "the host exited while starting"
            );
            assert!(Instant::now() < deadline, "the host did not start in 60 s");
            tokio::time::sleep(POLL).await;
        }
        host
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Lines of the log containing every one of `parts`.
    fn lines_with(&self, parts: &[&str]) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| parts.iter().all(|p| l.contains(p)))
            .map(str::to_owned)
            .collect()
    }

    fn problems(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
            .map(str::to_owned)
            .collect()
    }

    /// The Prometheus exposition.
    fn metrics(&self) -> String {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.metrics_port))
            .expect("the metrics endpoint");
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .expect("a request");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("a response");
        out
    }

    /// The value of one sample (`name{labels}`), if exposed.
    fn sample(&self, series: &str) -> Option<f64> {
        self.metrics().lines().find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
        })
    }

    /// SIGTERM; asserts a clean stop.
    fn finish(mut self) {
        let status = self.stop();
        assert!(status.success(), "the host did not stop cleanly: {status}");
        assert!(self.log_text().contains("stopped"), "no clean shutdown");
    }

    fn stop(&mut self) -> std::process::ExitStatus {
        if let Some(s) = self.child.try_wait().expect("try_wait") {
            return s;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return self.child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for SwapHost {
    fn drop(&mut self) {
        let status = self.stop();
        if std::thread::panicking() {
            let text = self.log_text();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(80)..];
            eprintln!(
                "--- host ({status}), log {}:\n{}\n---",
                self.log.display(),
                tail.join("\n")
            );
        }
    }
}

fn module_series(d: &str) -> String {
    format!(
        "reconciler_module{{kind=\"Hostile\",guest=\"hostile_guest\",digest=\"{d}\",contract=\"0.6.0\"}}"
    )
}

/// 1. A module that drops a reason of the running one is refused, in one
/// log line and a metric; the running module goes on serving.
#[tokio::test]
async fn module_dropping_a_reason_is_refused_and_the_old_one_serves_on() {
    let v = variants();
    let ns = namespace("swap-refused").await;
    let dir = guests_dir("refused");
    place(&dir, FILE, &v.base);
    let host = SwapHost::start(ns.name(), &dir, &[]).await;
    let api = hostiles(&ns);
    let mut want = Vec::new();
    for i in 0..3 {
        let (name, message) = (format!("h{i}"), format!("one-{i}"));
        create_hostile(&ns, &name, &message).await;
        want.push((name, message));
    }
    wait_messages(&api, &want).await;

    place(&dir, FILE, &v.drop_reason);
    let refused_digest = digest(&v.drop_reason);
    let line = eventually("the refusal in the log", async || {
        match host
            .lines_with(&["refused guest hostile_guest (digest "])
            .as_slice()
        {
            [line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        }
    })
    .await;
    assert!(line.contains(&refused_digest[..12]), "{line}");
    assert!(
        line.contains("reason \"Misbehaving\" was registered by the running module and is missing"),
        "{line}"
    );
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"Hostile\",check=\"reasons\"}"),
        Some(1.0)
    );
    assert_eq!(host.sample(&module_series(&digest(&v.base))), Some(1.0));
    assert_eq!(host.sample(&module_series(&refused_digest)), None);

    // The running module still evaluates changes.
    want[1].1 = "two".into();
    set_message(&api, &want[1].0, "two").await;
    wait_messages(&api, &want).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        None,
        "nothing was swapped"
    );
    let problems = host.problems();
    assert_eq!(problems, vec![line], "the refusal is the only warning");
    host.finish();
    ns.cleanup().await.unwrap();
}

/// The golden list of reasons shipped beside a module holds at hot swap as
/// at start: a module compatible with the running one but missing a reason
/// of its `<guest>.reasons` is refused, naming the reason and the file, and
/// the running module serves on. The module already served, copied back,
/// says so instead of nothing.
#[tokio::test]
async fn a_swap_is_held_to_the_golden_list_beside_the_module() {
    let v = variants();
    let ns = namespace("swap-golden").await;
    let dir = guests_dir("golden");
    place(&dir, FILE, &v.base);
    let host = SwapHost::start(ns.name(), &dir, &[]).await;
    let api = hostiles(&ns);
    create_hostile(&ns, "h", "one").await;
    wait_messages(&api, &[("h".into(), "one".into())]).await;

    place(&dir, "hostile_guest.reasons", b"AsExpected\nNoSuchReason\n");
    place(&dir, FILE, &v.message);
    let line = eventually("the refusal in the log", async || {
        match host
            .lines_with(&["refused guest hostile_guest (digest "])
            .as_slice()
        {
            [line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        }
    })
    .await;
    assert!(
        line.contains(
            "reason \"NoSuchReason\" is in the golden list hostile_guest.reasons and is not registered by the module"
        ),
        "{line}"
    );
    assert_eq!(host.sample(&module_series(&digest(&v.base))), Some(1.0));

    std::fs::remove_file(dir.join("hostile_guest.reasons")).unwrap();
    place(&dir, FILE, &v.base);
    eventually("the module served already, said", async || {
        match host
            .lines_with(&["is the module serving kind Hostile already: nothing to swap"])
            .len()
        {
            1 => Ok(()),
            n => Err(n),
        }
    })
    .await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        None,
        "nothing was swapped"
    );
    assert_eq!(
        host.problems(),
        vec![line],
        "the refusal is the only warning"
    );
    host.finish();
    ns.cleanup().await.unwrap();
}

/// A host started with `extra` over a guests directory of the test `test`
/// serving the base module, and four Hostiles it evaluated: their
/// namespace, the directory, the host, their API and (name, message).
async fn four_served(
    test: &str,
    extra: &[&str],
) -> (
    TestNamespace,
    PathBuf,
    SwapHost,
    Api<DynamicObject>,
    Vec<(String, String)>,
) {
    let ns = namespace(&format!("swap-{test}")).await;
    let dir = guests_dir(test);
    place(&dir, FILE, &variants().base);
    let host = SwapHost::start(ns.name(), &dir, extra).await;
    let api = hostiles(&ns);
    let mut want = Vec::new();
    for i in 0..4 {
        let (name, message) = (format!("h{i}"), format!("m-{i}"));
        create_hostile(&ns, &name, &message).await;
        want.push((name, message));
    }
    wait_messages(&api, &want).await;
    (ns, dir, host, api, want)
}

/// 2. A module whose passes trap after the swap is rolled back to the
/// previous one, which evaluates every object again.
#[tokio::test]
async fn trapping_module_is_rolled_back() {
    let v = variants();
    let (ns, dir, host, api, mut want) = four_served("rollback", &["--rollback-window", "4"]).await;

    place(&dir, FILE, &v.trap);
    let trap_digest = digest(&v.trap);
    let line = eventually("the rollback in the log", async || {
        match host
            .lines_with(&["rolled back guest hostile_guest"])
            .as_slice()
        {
            [line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        }
    })
    .await;
    assert!(line.contains(&trap_digest[..12]), "{line}");
    assert!(line.contains(&digest(&v.base)[..12]), "{line}");
    assert_eq!(
        host.sample("reconciler_rollbacks_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    assert_eq!(host.sample(&module_series(&digest(&v.base))), Some(1.0));
    assert_eq!(host.sample(&module_series(&trap_digest)), None);
    let failed = host
        .sample("reconciler_guest_errors_total{kind=\"Hostile\",class=\"trap\"}")
        .unwrap_or(0.0);
    assert!(
        failed >= 3.0,
        "more than half of a window of 4 failed: {failed}"
    );

    // Every object evaluated by the old module again, and still served by it.
    wait_messages(&api, &want).await;
    want[0].1 = "after".into();
    set_message(&api, &want[0].0, "after").await;
    wait_messages(&api, &want).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0),
        "the refused file is not loaded again"
    );
    host.finish();
    ns.cleanup().await.unwrap();
}

/// Under `--promotion auto` a module that passed the gate is shadowed on
/// every cached parent, beside the module serving, before it serves. The
/// trapping module would fail on every parent where the serving one does
/// not: it is held (one refusal, check `shadow`, naming the counts) and
/// never serves: no swap, no rollback, no pass failed, every object still
/// evaluated by the old module. The message variant keeps every
/// condition's status and reason (only messages change): it is swapped in.
#[tokio::test]
async fn under_auto_promotion_a_module_failing_its_shadow_never_serves() {
    let v = variants();
    let (ns, dir, host, api, mut want) = four_served("shadow", &["--promotion", "auto"]).await;

    place(&dir, FILE, &v.trap);
    let trap_digest = digest(&v.trap);
    let line = eventually("the shadow's refusal in the log", async || {
        match host
            .lines_with(&["refused guest hostile_guest", "shadowed on 4 parent(s)"])
            .as_slice()
        {
            [line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        }
    })
    .await;
    assert!(line.contains(&trap_digest[..12]), "{line}");
    assert!(
        line.contains("4 would fail where the serving module does not"),
        "{line}"
    );
    assert!(line.contains("held (promotion auto)"), "{line}");
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"Hostile\",check=\"shadow\"}"),
        Some(1.0)
    );
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        None
    );
    assert_eq!(
        host.sample("reconciler_rollbacks_total{kind=\"Hostile\"}"),
        None
    );
    assert_eq!(
        host.sample("reconciler_guest_errors_total{kind=\"Hostile\",class=\"trap\"}"),
        None,
        "the shadow's evaluations are no pass"
    );
    want[0].1 = "after".into();
    set_message(&api, &want[0].0, "after").await;
    wait_messages(&api, &want).await;

    place(&dir, FILE, &v.message);
    eventually(
        "the message variant shadowed and swapped in",
        async || match host.sample("reconciler_swaps_total{kind=\"Hostile\"}") {
            Some(1.0) => Ok(()),
            other => Err(other),
        },
    )
    .await;
    assert_eq!(
        host.lines_with(&[
            "shadowed guest hostile_guest",
            "on 4 parent(s): no parent turns"
        ])
        .len(),
        1
    );
    let v2: Vec<(String, String)> = want
        .iter()
        .map(|(name, message)| (name.clone(), format!("v2: {message}")))
        .collect();
    wait_messages(&api, &v2).await;
    host.finish();
    ns.cleanup().await.unwrap();
}

/// A ConfigMap volume: `hostile_guest.wasm -> ..data/hostile_guest.wasm`,
/// `..data -> ..<timestamp>`.
fn configmap(dir: &Path, bytes: &[u8]) {
    let version = dir.join("..2026_11_29_00_00_00.1");
    std::fs::create_dir(&version).unwrap();
    std::fs::write(version.join(FILE), bytes).unwrap();
    symlink("..2026_11_29_00_00_00.1", dir.join("..data")).unwrap();
    symlink(format!("..data/{FILE}"), dir.join(FILE)).unwrap();
}

/// The kubelet's update of a ConfigMap volume: a new timestamped
/// directory, a new `..data` link renamed over the old one, the old
/// directory removed.
fn configmap_update(dir: &Path, bytes: &[u8]) {
    let version = dir.join("..2026_11_29_00_00_00.2");
    std::fs::create_dir(&version).unwrap();
    std::fs::write(version.join(FILE), bytes).unwrap();
    symlink("..2026_11_29_00_00_00.2", dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    std::fs::remove_dir_all(dir.join("..2026_11_29_00_00_00.1")).unwrap();
}

/// The timestamp of the first log line containing `part`.
fn logged_at(host: &SwapHost, part: &str) -> Option<jiff::Timestamp> {
    let line = host.lines_with(&[part]).into_iter().next()?;
    line.split_whitespace().next()?.parse().ok()
}

/// 3. A swap through a ConfigMap-style `..data` flip: the new module serves,
/// and every object is re-evaluated by it.
#[tokio::test]
async fn configmap_data_flip_swaps_and_reevaluates_every_object() {
    let v = variants();
    let ns = namespace("swap-configmap").await;
    let dir = guests_dir("configmap");
    configmap(&dir, &v.base);
    let host = SwapHost::start(ns.name(), &dir, &[]).await;
    let api = hostiles(&ns);
    let mut want = Vec::new();
    for i in 0..5 {
        let (name, message) = (format!("h{i}"), format!("m-{i}"));
        create_hostile(&ns, &name, &message).await;
        want.push((name, message));
    }
    wait_messages(&api, &want).await;

    let landed = Instant::now();
    let landed_at = jiff::Timestamp::now();
    configmap_update(&dir, &v.message);
    let first = eventually("a first object evaluated by the new module", async || {
        for (name, message) in &want {
            if evaluated_with(&get(&api, name).await, &format!("v2: {message}")) {
                return Ok(landed.elapsed());
            }
        }
        Err(())
    })
    .await;
    let v2: Vec<(String, String)> = want
        .iter()
        .map(|(n, m)| (n.clone(), format!("v2: {m}")))
        .collect();
    wait_messages(&api, &v2).await;
    let all = landed.elapsed();
    let new_digest = digest(&v.message);
    let swapped = host.lines_with(&["swapped in guest hostile_guest", &new_digest[..12]]);
    assert_eq!(swapped.len(), 1, "{swapped:?}");
    assert!(
        swapped[0].contains("re-evaluating 5 objects"),
        "{}",
        swapped[0]
    );
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    assert_eq!(host.sample(&module_series(&new_digest)), Some(1.0));
    assert_eq!(host.sample(&module_series(&digest(&v.base))), None);
    let since = |part: &str| {
        logged_at(&host, part).map(|t| {
            (t - landed_at)
                .total(jiff::Unit::Millisecond)
                .unwrap_or(f64::NAN)
        })
    };
    eprintln!(
        "hot swap through a ..data flip, polling every {GUESTS_POLL}, ms after the flip: detected {:.0?}, swapped in {:.0?}, first pass on the new module {:.0?} (host log); first new status seen {first:?}, all 5 {all:?} (test, polling every {POLL:?})",
        since("guest file changed"),
        since("swapped in guest"),
        since("first pass on the swapped-in module"),
    );
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    host.finish();
    ns.cleanup().await.unwrap();
}

/// 4. A swap while many objects change continuously: no pass fails, and
/// every object ends on the status its final spec implies, by the new
/// module.
#[tokio::test]
async fn swap_under_load_fails_no_pass() {
    let v = variants();
    let ns = namespace("swap-load").await;
    let dir = guests_dir("load");
    place(&dir, FILE, &v.base);
    let host = SwapHost::start(ns.name(), &dir, &[]).await;
    let api = hostiles(&ns);
    const N: usize = 30;
    for i in 0..N {
        create_hostile(&ns, &format!("h{i}"), "start").await;
    }
    // Every object's message changes round after round, from before the
    // swap until three rounds after it.
    let swapped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let api = api.clone();
        let swapped = swapped.clone();
        tokio::spawn(async move {
            let mut last = vec![String::from("start"); N];
            let mut after = 0;
            for round in 0..300 {
                for (i, message) in last.iter_mut().enumerate() {
                    *message = format!("round-{round}");
                    set_message(&api, &format!("h{i}"), message).await;
                }
                if swapped.load(std::sync::atomic::Ordering::SeqCst) {
                    after += 1;
                    if after == 3 {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (last, after)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    place(&dir, FILE, &v.message);
    eventually("the swap in the log", async || {
        match host.lines_with(&["swapped in guest hostile_guest"]).len() {
            1 => Ok(()),
            n => Err(n),
        }
    })
    .await;
    swapped.store(true, std::sync::atomic::Ordering::SeqCst);
    let (last, after) = churn.await.expect("the churn");
    assert_eq!(after, 3, "the objects changed on after the swap");
    let want: Vec<(String, String)> = last
        .iter()
        .enumerate()
        .map(|(i, m)| (format!("h{i}"), format!("v2: {m}")))
        .collect();
    wait_messages(&api, &want).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    assert!(
        !host.metrics().contains("reconciler_guest_errors_total{"),
        "no pass failed"
    );
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    host.finish();
    ns.cleanup().await.unwrap();
}

/// 4b. The same with both CPUs contended by busy loops (a loaded node),
/// many objects and concurrent spec changes: every object ends on the
/// status its last spec implies, by the new module. Under contention a
/// pass's status write often returned a spec newer than the one it
/// evaluated, and that change was then never reconciled (issue 19).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swap_under_load_on_contended_cpus_loses_no_update() {
    use futures::StreamExt;

    let v = variants();
    let ns = namespace("swap-contended").await;
    let dir = guests_dir("contended");
    place(&dir, FILE, &v.base);
    let host = SwapHost::start(ns.name(), &dir, &[]).await;
    let api = hostiles(&ns);
    const N: usize = 60;
    futures::stream::iter(0..N)
        .for_each_concurrent(16, |i| {
            let ns = &ns;
            async move { create_hostile(ns, &format!("h{i}"), "start").await }
        })
        .await;
    let _contention = reconciler_host_harness::bench::Contention::start(2, Duration::from_secs(60))
        .expect("busy loops");
    // Rounds of concurrent changes to every object, from before the swap
    // until three rounds after it.
    let swapped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let api = api.clone();
        let swapped = swapped.clone();
        tokio::spawn(async move {
            let mut round = 0;
            let mut after = 0;
            loop {
                let message = format!("round-{round}");
                futures::stream::iter(0..N)
                    .for_each_concurrent(32, |i| {
                        let (api, message) = (&api, &message);
                        async move { set_message(api, &format!("h{i}"), message).await }
                    })
                    .await;
                if swapped.load(std::sync::atomic::Ordering::SeqCst) {
                    after += 1;
                    if after == 3 {
                        return message;
                    }
                }
                round += 1;
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    place(&dir, FILE, &v.message);
    eventually("the swap in the log", async || {
        match host.lines_with(&["swapped in guest hostile_guest"]).len() {
            1 => Ok(()),
            n => Err(n),
        }
    })
    .await;
    swapped.store(true, std::sync::atomic::Ordering::SeqCst);
    let last = churn.await.expect("the churn");
    let want: Vec<(String, String)> = (0..N)
        .map(|i| (format!("h{i}"), format!("v2: {last}")))
        .collect();
    wait_messages(&api, &want).await;
    assert!(
        !host.metrics().contains("reconciler_guest_errors_total{"),
        "no pass failed"
    );
    host.finish();
    ns.cleanup().await.unwrap();
}

/// 5. A removed module stops its kind's passes (nothing is written to its
/// objects); a module placed again serves it again, re-evaluating them.
#[tokio::test]
async fn removed_module_stops_the_kind_and_a_returning_one_resumes() {
    let v = variants();
    let ns = namespace("swap-removed").await;
    let dir = guests_dir("removed");
    place(&dir, FILE, &v.base);
    let host = SwapHost::start(ns.name(), &dir, &[]).await;
    let api = hostiles(&ns);
    create_hostile(&ns, "h0", "a").await;
    wait_messages(&api, &[("h0".into(), "a".into())]).await;

    std::fs::remove_file(dir.join(FILE)).unwrap();
    eventually("the removal in the log", async || {
        match host.lines_with(&["guest hostile_guest removed"]).len() {
            1 => Ok(()),
            n => Err(n),
        }
    })
    .await;
    assert_eq!(host.sample(&module_series(&digest(&v.base))), None);
    let before = get(&api, "h0").await;
    set_message(&api, "h0", "b").await;
    harness::settle().await;
    let after = get(&api, "h0").await;
    assert_eq!(
        after["status"], before["status"],
        "nothing is written while no module serves the kind"
    );

    place(&dir, FILE, &v.message);
    wait_messages(&api, &[("h0".into(), "v2: b".into())]).await;
    let swapped = host.lines_with(&["swapped in guest hostile_guest", "file was removed"]);
    assert_eq!(swapped.len(), 1, "{swapped:?}");
    assert_eq!(host.sample(&module_series(&digest(&v.message))), Some(1.0));
    host.finish();
    ns.cleanup().await.unwrap();
}

/// A swap to a module reading more of a kind (a field its read now names)
/// lists the kind again before the module's first pass, which reads the
/// field; a swap back to one reading less lists nothing, and the cache
/// holds less of each object from its next version on
/// (`reconciler_cached_bytes`). Contract 0.6.0's `read-decl.fields`.
#[tokio::test]
async fn a_wider_read_is_listed_before_its_first_pass_and_a_narrower_one_frees_the_cache() {
    let v = variants();
    let ns = namespace("swap-fields").await;
    let dir = guests_dir("fields");
    let client = ns.client();
    objects::create(
        &client,
        ns.name(),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
               "spec": {"ports": [{"port": 5432}]}}),
    )
    .await;
    let services = objects::api(&client, ns.name(), "v1", "Service");
    let cluster_ip = get(&services, "db").await["spec"]["clusterIP"]
        .as_str()
        .expect("the API server gave the Service a cluster IP")
        .to_owned();
    place(&dir, FILE, &v.service_ports);
    // A probation of one pass: the module swapped out stops counting once
    // the new one passed once.
    let host = SwapHost::start(ns.name(), &dir, &["--rollback-window", "1"]).await;
    let api = hostiles(&ns);
    objects::create(
        &client,
        ns.name(),
        json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "h0"},
               "spec": {"behavior": "service-ip"}}),
    )
    .await;
    wait_messages(&api, &[("h0".into(), "clusterIP absent".into())]).await;
    let held = "reconciler_cached_bytes{kind=\"Service\"}";
    let narrow = eventually("the Service cache's bytes", async || {
        host.sample(held).filter(|b| *b > 0.0).ok_or(())
    })
    .await;
    let relisted = || host.lines_with(&["listing it again", "v1/Service"]).len();
    assert_eq!(relisted(), 0, "the first listing held spec.ports already");

    // Wider: the first pass after the swap reads the new field. It is the
    // only pass (nothing else changes), so the field was in the cache
    // before it ran.
    place(&dir, FILE, &v.service_spec);
    wait_messages(&api, &[("h0".into(), format!("clusterIP {cluster_ip}"))]).await;
    assert_eq!(relisted(), 1, "the Services were listed again, once");
    let wide = eventually("the Service cache holding more", async || {
        host.sample(held)
            .filter(|b| *b > narrow)
            .ok_or(host.sample(held))
    })
    .await;

    // Narrower: served what it declares at once; the cache shrinks as the
    // Service's next version arrives, once the module swapped out no
    // longer counts (its probation ended after one pass).
    place(&dir, FILE, &v.service_ports);
    wait_messages(&api, &[("h0".into(), "clusterIP absent".into())]).await;
    eventually("the probation ended", async || {
        match host
            .lines_with(&["swapped-in module kept after its rollback window"])
            .len()
        {
            2 => Ok(()),
            n => Err(n),
        }
    })
    .await;
    objects::merge(&services, "db", json!({"metadata": {"labels": {"t": "1"}}})).await;
    eventually("the Service cache holding less", async || {
        host.sample(held)
            .filter(|b| *b < wide)
            .ok_or(host.sample(held))
    })
    .await;
    assert_eq!(relisted(), 1, "a narrower read lists nothing");
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(2.0)
    );
    assert_eq!(host.problems(), Vec::<String>::new());
    host.finish();
    ns.cleanup().await.unwrap();
}

/// 6. A module dropped in for a kind no module serves waits for its CRD
/// (refused once, naming it, and retried on every poll), then is served
/// without a restart: the watches of its kind and of the kinds it reads
/// start, its objects are evaluated and their reads followed. A second
/// file claiming a served kind is refused, and the first serves on.
///
/// The only test of this binary installing the EvidenceAgent and CNPG
/// CRDs: it needs them missing at first (each run of the tests starts its
/// own API server).
#[tokio::test]
async fn new_kind_is_served_once_its_crd_is_installed_and_a_second_claim_is_refused() {
    use objects::{
        CLUSTER, CREDENTIALS, OBJECT_STORE, agent, agents, cluster, create_all, credentials,
        object_store,
    };
    let v = variants();
    let ns = namespace("swap-claims").await;
    let client = ns.client();
    let dir = guests_dir("claims");
    place(&dir, FILE, &v.base);
    let image = format!("EvidenceAgent.defaultImage={}", objects::IMAGE);
    let host = SwapHost::start(
        ns.name(),
        &dir,
        &[
            "--setting",
            &image,
            "--setting",
            "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/",
        ],
    )
    .await;
    let api = hostiles(&ns);
    create_hostile(&ns, "h0", "a").await;
    wait_messages(&api, &[("h0".into(), "a".into())]).await;

    let bytes = std::fs::read(support::guest_wasm("evidenceagent-guest")).unwrap();
    let crds = &harness::fixture().crds;
    let agents = agents(&client, ns.name());
    // With an API server reused across test binaries
    // (`reconciler_testsupport`'s reuse variable), the CRDs may be there.
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut fresh = true;
    for crd in crds {
        let name = crd.metadata.name.as_deref().expect("a CRD name");
        fresh &= crd_api.get_opt(name).await.expect("a CRD lookup").is_none();
    }
    if fresh {
        waits_for_its_crds(&host, &client, ns.name(), &dir, &bytes).await;
    } else {
        eprintln!("the CRDs are installed already: the missing-CRD half is skipped");
        harness::install_crds(&client).await;
        objects::create(&client, ns.name(), agent("orders", CLUSTER)).await;
        place(&dir, "evidenceagent_guest.wasm", &bytes);
    }
    harness::wait_for(&agents, "orders", &[("Ready", "False", "ClusterNotFound")]).await;
    let served = host.lines_with(&[
        "serving new kind",
        "EvidenceAgent from guest evidenceagent_guest",
    ]);
    assert_eq!(served.len(), 1, "{served:?}");
    assert!(served[0].contains(" INFO "), "{}", served[0]);
    assert!(served[0].contains("objects=1"), "{}", served[0]);
    create_all(
        &client,
        ns.name(),
        vec![
            object_store(OBJECT_STORE, CREDENTIALS),
            credentials(CREDENTIALS),
        ],
    )
    .await;
    assert_eq!(
        host.sample(&format!(
            "reconciler_module{{kind=\"EvidenceAgent\",guest=\"evidenceagent_guest\",digest=\"{}\",contract=\"0.6.0\"}}",
            digest(&bytes)
        )),
        Some(1.0)
    );
    // Its reads are watched: the Cluster created re-queues the agent.
    objects::create(&client, ns.name(), cluster(CLUSTER, OBJECT_STORE)).await;
    harness::wait_healthy(&agents, "orders").await;

    // A second claim of a served kind is refused; the first serves on.
    place(&dir, "hostile_copy.wasm", &v.message);
    eventually("the second claim refused", async || {
        let claimed = host.lines_with(&[
            "refused guest hostile_copy",
            "which guest file hostile_guest.wasm serves",
        ]);
        if claimed.len() == 1 {
            Ok(())
        } else {
            Err(claimed)
        }
    })
    .await;
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"Hostile\",check=\"claimed\"}"),
        Some(1.0)
    );
    set_message(&api, "h0", "b").await;
    wait_messages(&api, &[("h0".into(), "b".into())]).await;
    let problems: Vec<String> = host
        .problems()
        .into_iter()
        .filter(|l| {
            !l.contains("refused guest hostile_copy")
                && !l.contains("refused guest evidenceagent_guest")
        })
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    host.finish();
    ns.cleanup().await.unwrap();
}

/// The EvidenceAgent module dropped in before its CRDs: refused once,
/// naming its CRD; its CRD installed, refused again naming the Cluster it
/// reads, an agent waiting; then the CRDs it reads installed (the optional
/// ObjectStore's first).
async fn waits_for_its_crds(
    host: &SwapHost,
    client: &kube::Client,
    ns: &str,
    dir: &Path,
    bytes: &[u8],
) {
    use objects::{CLUSTER, agent};
    let crds = &harness::fixture().crds;
    // Its CRD not installed: refused, naming it, once.
    place(dir, "evidenceagent_guest.wasm", bytes);
    let line = eventually("the missing CRD in the log", async || {
        match host
            .lines_with(&["refused guest evidenceagent_guest"])
            .as_slice()
        {
            [line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        }
    })
    .await;
    assert!(
        line.contains("the CustomResourceDefinition evidenceagents.pgtoolbox.fyannk.dev of kind"),
        "{line}"
    );
    harness::settle().await;
    assert_eq!(
        host.lines_with(&["refused guest evidenceagent_guest"])
            .len(),
        1,
        "refused once while it waits"
    );
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"EvidenceAgent\",check=\"crd\"}"),
        Some(1.0)
    );

    // Its CRD installed, not yet the Cluster's it must read: refused
    // again, naming the read, while an agent waits.
    reconciler_testsupport::install_crd(client, crds[0].clone())
        .await
        .expect("installing the EvidenceAgent CRD");
    objects::create(client, ns, agent("orders", CLUSTER)).await;
    let line = eventually("the missing read in the log", async || {
        match host
            .lines_with(&[
                "refused guest evidenceagent_guest",
                "postgresql.cnpg.io/v1/Cluster",
            ])
            .as_slice()
        {
            [line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        }
    })
    .await;
    assert!(line.contains("check=\"reads\""), "{line}");

    // The CRDs it reads installed (the optional ObjectStore's first):
    // served on a later poll, no restart, the waiting agent evaluated.
    for crd in crds[1..].iter().rev() {
        reconciler_testsupport::install_crd(client, crd.clone())
            .await
            .expect("installing a CRD");
    }
}

/// A fixture of the Hostile kind: a healthy object's Behaving message.
fn hostile_fixture(message: &str) -> String {
    format!(
        r#"name: a healthy object carries its message
parent:
  apiVersion: {API_VERSION}
  kind: {KIND}
  metadata: {{name: h, namespace: ns, uid: 00000000-0000-4000-8000-000000000001, generation: 1}}
  spec: {{behavior: ok, message: hello}}
expect:
  aspects:
    Behaving: {{status: "True", reason: AsExpected, message: "{message}"}}
"#
    )
}

/// The golden file of the fixture `fixtures/<name>.yaml` as `module`
/// produces it, recorded beside it (`reconciler-host test --bless`, the
/// module's bytes in a file of their own).
fn bless(fixtures: &Path, name: &str, module: &[u8]) {
    // Outside the guests directory, which the host watches.
    let scratch = std::env::temp_dir().join(format!("swap-bless-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let file = scratch.join("module.wasm");
    std::fs::write(&file, module).unwrap();
    let golden = fixtures.join(format!("{name}.golden"));
    let tmp = scratch.join(format!("{name}.yaml"));
    std::fs::copy(fixtures.join(format!("{name}.yaml")), &tmp).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
        .args(["test", "--bless"])
        .arg(&file)
        .arg(&tmp)
        .output()
        .expect("reconciler-host test");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = std::fs::read(tmp.with_extension("golden")).unwrap();
    place(
        fixtures,
        golden.file_name().unwrap().to_str().unwrap(),
        &text,
    );
}

/// 7. Fixtures shipped beside a module (`<stem>.fixtures/`) gate it,
/// exactly as `reconciler-host test` runs them: a module failing them is
/// refused; one meeting their expectations whose outcomes are not their
/// golden files' is refused too; with fixtures and goldens it meets, put
/// in place again, it is swapped in.
#[tokio::test]
async fn fixtures_beside_a_module_gate_it() {
    let v = variants();
    let ns = namespace("swap-fixtures").await;
    let dir = guests_dir("fixtures");
    let fixtures = dir.join("hostile_guest.fixtures");
    std::fs::create_dir(&fixtures).unwrap();
    place(
        &fixtures,
        "healthy.yaml",
        hostile_fixture("hello").as_bytes(),
    );
    bless(&fixtures, "healthy", &v.base);
    place(&dir, FILE, &v.base);
    let host = SwapHost::start(ns.name(), &dir, &[]).await;
    let api = hostiles(&ns);
    create_hostile(&ns, "h0", "a").await;
    wait_messages(&api, &[("h0".into(), "a".into())]).await;

    place(&dir, FILE, &v.message);
    let line = eventually("the refusal in the log", async || {
        match host.lines_with(&["refused guest hostile_guest"]).as_slice() {
            [line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        }
    })
    .await;
    assert!(
        line.contains("fixture hostile_guest.fixtures/healthy.yaml"),
        "{line}"
    );
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"Hostile\",check=\"fixtures\"}"),
        Some(1.0)
    );
    set_message(&api, "h0", "b").await;
    wait_messages(&api, &[("h0".into(), "b".into())]).await;

    // The fixture's expectation updated for the new module, its golden
    // file not: refused again, the golden named.
    place(
        &fixtures,
        "healthy.yaml",
        hostile_fixture("v2: hello").as_bytes(),
    );
    place(&dir, FILE, &v.message);
    let line = eventually("the second refusal in the log", async || {
        match host.lines_with(&["refused guest hostile_guest"]).as_slice() {
            [_, line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        }
    })
    .await;
    assert!(
        line.contains("differs from hostile_guest.fixtures/healthy.golden"),
        "{line}"
    );
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"Hostile\",check=\"fixtures\"}"),
        Some(2.0)
    );

    // The golden recorded for the new module, and the module put in place
    // again (a ConfigMap update does both at once).
    bless(&fixtures, "healthy", &v.message);
    place(&dir, FILE, &v.message);
    wait_messages(&api, &[("h0".into(), "v2: b".into())]).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    host.finish();
    ns.cleanup().await.unwrap();
}
