//! The Probe guest `new --child ConfigMap` scaffolds: built, varied by one edit, and served.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use kube::Api;
use kube::api::DynamicObject;
use reconciler_host::runtime::artifacts::digest;
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

use crate::objects::{self, create};
use crate::operator::{POLL, SETTLE, condition, eventually, get, summary};
use crate::paths::{host_binary, target_tmpdir, workspace};
use crate::process;

pub const API_VERSION: &str = "probes.example.com/v1alpha1";
pub const KIND: &str = "Probe";
/// The scaffold's package, and its component's file stem.
const PACKAGE: &str = "probe-guest";
const LIB: &str = "probe_guest";
/// The file a guests directory serves the scaffold (v1) from; a candidate
/// dropped over it is a hot swap.
pub const FILE: &str = "probe_guest.wasm";
/// The guests directory's poll interval of a [`ProbeHost`].
const GUESTS_POLL: &str = "200ms";
/// The scaffold's ChildReady once its ConfigMap is made (v1): the one
/// expression the variants edit.
pub const MADE_TRUE: &str = r#"ok(CHILD_READY, format!("{what} is applied as asked"))"#;
/// The candidate's (v2, [`modules`]): False, with a reason v1 registers
/// already (so the gate sees the same kind, reasons and aspects).
pub const MADE_FALSE: &str = r#"fails(CHILD_READY, CHILD_REFUSED, format!("{what} is made, and this candidate finds fault with it"))"#;

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `command`, panicking with its output unless it succeeds; returns
/// its stdout.
pub fn ok(mut command: Command, what: &str) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The workspace's target directory: the SDK's dependencies are built
/// there already (a crate outside the workspace shares them).
pub fn target_dir() -> PathBuf {
    target_tmpdir().parent().expect("<target>").to_path_buf()
}

/// `reconciler-host new Probe --child ConfigMap` into `crate_dir`, on the
/// workspace's SDK.
pub fn new_probe(crate_dir: &Path) {
    let mut new = Command::new(host_binary());
    new.args([
        "new",
        KIND,
        "--child",
        "ConfigMap",
        "--group",
        "probes.example.com",
        "--sdk-path",
    ])
    .arg(workspace().join("guests/sdk"))
    .arg(crate_dir);
    let said = ok(new, "reconciler-host new --child ConfigMap");
    assert!(said.contains("owning a ConfigMap"), "{said}");
}

/// Renames the scaffold's package to `package`. cargo hashes a crate by
/// its path relative to its workspace, so another crate of the same name
/// built in the same target directory would be taken for the one already
/// built. (The host names a module after its file, not its crate.)
pub fn rename_package(crate_dir: &Path, package: &str) {
    let manifest = crate_dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let name = format!("name = \"{PACKAGE}\"");
    assert_eq!(text.matches(&name).count(), 1, "{text}");
    std::fs::write(
        &manifest,
        text.replace(&name, &format!("name = \"{package}\"")),
    )
    .unwrap();
}

/// Replaces `from` by `to` in the crate's src/lib.rs, asserting the edit
/// applies: `from` is there exactly once.
pub fn edit_once(crate_dir: &Path, from: &str, to: &str) {
    let lib = crate_dir.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).unwrap();
    assert_eq!(source.matches(from).count(), 1, "{source}");
    std::fs::write(&lib, source.replace(from, to)).unwrap();
}

/// A scaffold's component built outside the workspace (the guest
/// profile), the crate's library `lib`: its bytes. Its native tests are
/// not run (a variant's would expect the scaffold's verdict).
pub fn built(crate_dir: &Path, lib: &str) -> Vec<u8> {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .args(["build", "--target", "wasm32-wasip2", "--profile", "guest"])
        .current_dir(crate_dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("RUSTFLAGS");
    ok(cargo, &format!("building {}", crate_dir.display()));
    std::fs::read(target_dir().join(format!("wasm32-wasip2/guest/{lib}.wasm")))
        .expect("the component")
}

/// v1, the scaffold as `new --child ConfigMap` makes it, and v2, a copy
/// whose ChildReady is False once its ConfigMap is made ([`MADE_FALSE`]),
/// both built under `dir`: their bytes. Before the child is made both say
/// the same.
pub fn modules(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let v1_dir = dir.join("probe");
    new_probe(&v1_dir);
    let v1 = built(&v1_dir, LIB);

    // The same crate (its Cargo.lock too) in another directory, renamed,
    // one expression of src/lib.rs changed.
    let v2_dir = dir.join("probe-v2");
    let mut copy = Command::new("cp");
    copy.arg("-r").arg(&v1_dir).arg(&v2_dir);
    ok(copy, "copying the crate");
    rename_package(&v2_dir, "probe-v2-guest");
    // The scaffold says ChildReady True in exactly one place, once its
    // child is made.
    edit_once(&v2_dir, MADE_TRUE, MADE_FALSE);
    let v2 = built(&v2_dir, "probe_v2_guest");
    assert_ne!(digest(&v1), digest(&v2), "v2 is another module");
    (v1, v2)
}

/// `component` released again, changing nothing it does: a custom section
/// appended (allowed anywhere in a component, ignored by what runs it),
/// so another digest.
pub fn released_again(component: &[u8]) -> Vec<u8> {
    const NAME: &[u8] = b"released-again";
    let mut again = component.to_vec();
    // The section's id (0: custom), its size and its name's, each one
    // byte as LEB128 (under 128).
    again.extend([0, 1 + NAME.len() as u8, NAME.len() as u8]);
    again.extend_from_slice(NAME);
    assert_ne!(digest(&again), digest(component));
    again
}

/// Writes `bytes` to `dir/name` atomically (a hidden temporary renamed),
/// as a hot swap lands.
pub fn place(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(dir).expect("a guests directory");
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).expect("writing a module");
    std::fs::rename(&tmp, dir.join(name)).expect("placing a module");
}

/// Compiles `bytes` into the compiled guests' cache `cache`
/// (`reconciler-host describe` loads it, from `<cache>.in/<digest>.wasm`),
/// so that a host compiling into the same cache takes it from there: a
/// hot swap's check then waits for no compile, whose time is the
/// machine's.
pub fn precompile(cache: &Path, bytes: &[u8]) {
    let dir = cache.with_extension("in");
    std::fs::create_dir_all(&dir).expect("a directory for modules to compile");
    let wasm = dir.join(format!("{}.wasm", digest(bytes)));
    std::fs::write(&wasm, bytes).expect("writing a module");
    let mut describe = Command::new(host_binary());
    describe
        .env("NO_COLOR", "1")
        .arg("--cache-dir")
        .arg(cache)
        .arg("describe")
        .arg(&wasm);
    ok(describe, "reconciler-host describe");
}

/// Installs the CRD `reconciler-host crd` prints for `wasm`.
pub async fn install_crd_of(wasm: &Path, client: &kube::Client) {
    let mut crd = Command::new(host_binary());
    crd.arg("crd").arg(wasm);
    let crd: Value = serde_yaml::from_str(&ok(crd, "its CRD")).expect("YAML");
    reconciler_testsupport::install_crd(client, serde_json::from_value(crd).unwrap())
        .await
        .expect("installing the CRD");
}

/// Whether `type_` is `status`/`reason` for the generation the object
/// has now.
pub fn is_now(o: &Value, type_: &str, status: &str, reason: &str) -> bool {
    let generation = o["metadata"]["generation"].as_i64().unwrap_or(-1);
    condition(o, type_).is_some_and(|c| {
        c.status == status && c.reason == reason && c.observed_generation == generation
    })
}

/// The Probes of `ns`.
pub fn probes(ns: &TestNamespace) -> Api<DynamicObject> {
    objects::api(&ns.client(), ns.name(), API_VERSION, KIND)
}

/// Creates a Probe named each of `parents` in `ns`, asking for `greeting`
/// (its child, the ConfigMap `<name>-greeting`, holds it).
pub async fn create_probes(ns: &TestNamespace, parents: &[&str], greeting: &str) {
    for name in parents {
        create(
            &ns.client(),
            ns.name(),
            json!({"apiVersion": API_VERSION, "kind": KIND,
                   "metadata": {"name": name}, "spec": {"greeting": greeting}}),
        )
        .await;
    }
}

/// Waits until each of `parents` is Ready True with ChildReady True, for
/// its generation, and its ConfigMap holds `greeting`; with `never_false`,
/// failing as soon as one is seen Ready False.
pub async fn all_ready(ns: &TestNamespace, parents: &[&str], greeting: &str, never_false: bool) {
    let probes = probes(ns);
    let configmaps = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    eventually("every Probe Ready, its ConfigMap made", async || {
        let mut wrong = Vec::new();
        for name in parents {
            let p = get(&probes, name).await;
            // Under the serving module a parent whose child is being made
            // again is at most Ready Unknown, never False.
            if never_false {
                assert_ne!(
                    condition(&p, "Ready").map(|c| c.status),
                    Some("False".to_owned()),
                    "{name}: {:?}",
                    summary(&p)
                );
            }
            let made = configmaps
                .get_opt(&format!("{name}-greeting"))
                .await
                .expect("reading a ConfigMap")
                .map(|c| serde_json::to_value(c).unwrap());
            let says = made.as_ref().map(|c| c["data"]["greeting"].clone());
            if !(is_now(&p, "Ready", "True", "AsExpected")
                && is_now(&p, "ChildReady", "True", "AsExpected")
                && says == Some(json!(greeting)))
            {
                wrong.push((name, summary(&p), says));
            }
        }
        if wrong.is_empty() { Ok(()) } else { Err(wrong) }
    })
    .await;
}

/// Polls `parents` for [`SETTLE`]: each stays Ready True throughout.
pub async fn stay_ready(ns: &TestNamespace, parents: &[&str]) {
    let probes = probes(ns);
    let until = Instant::now() + SETTLE;
    while Instant::now() < until {
        for name in parents {
            let p = get(&probes, name).await;
            assert_eq!(
                condition(&p, "Ready").map(|c| c.status),
                Some("True".to_owned()),
                "{name} stays Ready True under the serving module: {:?}",
                summary(&p)
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The resourceVersion of every object of `kind` in `ns`, by name.
pub async fn versions(ns: &TestNamespace, api_version: &str, kind: &str) -> Vec<(String, String)> {
    let listed = objects::api(&ns.client(), ns.name(), api_version, kind)
        .list(&Default::default())
        .await
        .expect("a list");
    listed
        .items
        .into_iter()
        .map(|o| {
            (
                o.metadata.name.unwrap_or_default(),
                o.metadata.resource_version.unwrap_or_default(),
            )
        })
        .collect()
}

/// The resourceVersions of `ns`'s Probes, ConfigMaps and Events, by name:
/// whatever a host or a command writes there (a status, a child, an
/// Event) changes them.
pub async fn written(ns: &TestNamespace) -> [Vec<(String, String)>; 3] {
    [
        versions(ns, API_VERSION, KIND).await,
        versions(ns, "v1", "ConfigMap").await,
        versions(ns, "events.k8s.io/v1", "Event").await,
    ]
}

/// `reconciler-host` under `kubeconfig`, compiling guests into `cache`,
/// nothing of the caller's environment but `PATH` and `HOME`; the caller
/// adds the subcommand.
pub fn host_command(kubeconfig: &Path, cache: &Path) -> Command {
    let mut command = Command::new(host_binary());
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::var_os("HOME").unwrap_or_default())
        .env("KUBECONFIG", kubeconfig)
        .env("NO_COLOR", "1")
        .arg("--cache-dir")
        .arg(cache)
        .stdin(Stdio::null());
    command
}

/// A free loopback port for `/metrics`.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `reconciler-host run` over a guests directory, one namespace, under the
/// test apiserver's admin kubeconfig, the directory polled every
/// [`GUESTS_POLL`], `/metrics` on a free port, its log to `<name>.log`
/// beside the guests directory. Stopped on drop (SIGTERM); prints its
/// log's tail when the test fails.
pub struct ProbeHost {
    child: Child,
    log: PathBuf,
    metrics_port: u16,
}

impl ProbeHost {
    /// Started with `extra` arguments, and waited for until its caches are
    /// synced and it reconciles.
    pub async fn start(
        namespace: &str,
        guests: &Path,
        cache: &Path,
        extra: &[&str],
        name: &str,
    ) -> ProbeHost {
        let mut host = ProbeHost::spawn(namespace, guests, cache, extra, name);
        host.wait_for_log("caches synced; reconciling").await;
        host
    }

    /// Started, not waited for (a standby never says it reconciles until
    /// it holds the Lease).
    pub fn spawn(
        namespace: &str,
        guests: &Path,
        cache: &Path,
        extra: &[&str],
        name: &str,
    ) -> ProbeHost {
        let log = guests
            .parent()
            .expect("a test directory")
            .join(format!("{name}.log"));
        let stderr = std::fs::File::create(&log).expect("the host's log");
        let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
        let metrics_port = free_port();
        let child = host_command(&kubeconfig, cache)
            .env("RUST_LOG", "info")
            .arg("run")
            .arg("--guests")
            .arg(guests)
            .args(["--namespaces", namespace])
            .args(["--guests-poll", GUESTS_POLL])
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("the host starts");
        ProbeHost {
            child,
            log,
            metrics_port,
        }
    }

    /// Waits until a line of the log contains `part`, failing if the host
    /// exits first or has not said it within 60 s.
    pub async fn wait_for_log(&mut self, part: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.log_text().contains(part) {
            assert!(
                self.child.try_wait().expect("try_wait").is_none(),
                "the host exited before saying {part:?}"
            );
            assert!(
                Instant::now() < deadline,
                "the host did not say {part:?} in 60 s"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Lines of the log containing every one of `parts`.
    pub fn lines_with(&self, parts: &[&str]) -> Vec<String> {
        self.log_text()
            .lines()
            .filter(|l| parts.iter().all(|p| l.contains(p)))
            .map(str::to_owned)
            .collect()
    }

    /// Waits (as [`eventually`] does) until exactly one line of the log
    /// contains every one of `parts` (`what` names it): that line.
    pub async fn one_line_with(&self, what: &str, parts: &[&str]) -> String {
        eventually(what, async || match self.lines_with(parts).as_slice() {
            [line] => Ok(line.clone()),
            other => Err(other.to_vec()),
        })
        .await
    }

    /// The Prometheus exposition.
    pub fn metrics(&self) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.metrics_port))
            .expect("the metrics endpoint");
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .expect("a request");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("a response");
        out
    }

    /// The value of one sample (`name{labels}`), if exposed.
    pub fn sample(&self, series: &str) -> Option<f64> {
        self.metrics().lines().find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
        })
    }

    /// The value of the module series of `digest` serving the Probe from
    /// [`FILE`], whatever its other labels (the contract the module was
    /// built against).
    pub fn module_sample(&self, digest: &str) -> Option<f64> {
        let prefix =
            format!("reconciler_module{{kind=\"{KIND}\",guest=\"{LIB}\",digest=\"{digest}\"");
        self.metrics().lines().find_map(|l| {
            l.strip_prefix(&prefix)
                .and_then(|rest| rest.split_once("} "))
                .and_then(|(_, v)| v.trim().parse().ok())
        })
    }

    /// SIGTERM; asserts a clean stop.
    pub fn finish(mut self) {
        let status = self.stop();
        assert!(status.success(), "the host did not stop cleanly: {status}");
        assert!(self.log_text().contains("stopped"), "no clean shutdown");
    }

    /// SIGTERM, then wait (10 s at most, then SIGKILL).
    pub fn stop(&mut self) -> ExitStatus {
        process::terminate(&mut self.child, || {})
    }

    /// SIGKILL, at once: no shutdown, its Lease not released.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ProbeHost {
    fn drop(&mut self) {
        let status = self.stop();
        if std::thread::panicking() {
            let text = self.log_text();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(60)..];
            eprintln!(
                "--- host ({status}), log {}:\n{}\n---",
                self.log.display(),
                tail.join("\n")
            );
        }
    }
}
