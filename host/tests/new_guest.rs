//! `reconciler-host new` (issue 20): a guest crate made in a directory
//! outside the workspace builds there as a component, passes its own
//! native tests and fixtures, and is served by the unchanged host against
//! the real API server, Ready True for a Greeting that says something.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use reconciler_host::runtime::ArtifactCache;
use reconciler_host::runtime::artifacts::digest;
use reconciler_host_harness::identity;
use reconciler_host_harness::objects::{self, create};
use reconciler_host_harness::operator::{condition, eventually, get};
use reconciler_host_harness::paths::{host_binary, target_tmpdir, workspace};
use reconciler_host_harness::scaffold::{ProbeHost, host_command, install_crd_of};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// Runs `command` in `dir`, panicking with its output unless it succeeds;
/// returns its stdout.
fn ok(mut command: Command, what: &str) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cargo(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    // The workspace's target directory: the SDK's dependencies are built
    // there already (a crate outside the workspace shares them).
    let target = target_tmpdir().parent().expect("<target>").to_path_buf();
    c.args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS");
    c
}

/// A scaffold's component built outside the workspace (the guest profile),
/// its native tests passed; the component's path.
fn built(crate_dir: &Path, lower: &str) -> std::path::PathBuf {
    ok(
        cargo(
            crate_dir,
            &["build", "--target", "wasm32-wasip2", "--profile", "guest"],
        ),
        "building the component outside the workspace",
    );
    ok(cargo(crate_dir, &["test"]), "the crate's native tests");
    target_tmpdir()
        .parent()
        .expect("<target>")
        .join(format!("wasm32-wasip2/guest/{lower}_guest.wasm"))
}

/// The scaffold's two fixtures through `wasm`: blessed, then passing.
fn fixtures_pass(wasm: &Path, crate_dir: &Path) {
    let fixtures = [
        crate_dir.join("fixtures/valid.yaml"),
        crate_dir.join("fixtures/missing-greeting.yaml"),
    ];
    let mut bless = Command::new(host_binary());
    bless.arg("test").arg("--bless").arg(wasm).args(&fixtures);
    ok(bless, "blessing its fixtures");
    let mut test = Command::new(host_binary());
    test.arg("test").arg(wasm).args(&fixtures);
    let passed = ok(test, "its fixtures");
    assert!(passed.contains("2 passed, 0 failed"), "{passed}");
}

/// The unchanged host serving the modules of `guests` in `namespace`.
fn serve(guests: &Path, namespace: &str) -> std::process::Child {
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    Command::new(host_binary())
        .env("KUBECONFIG", kubeconfig)
        .args([
            "run",
            "--guests-poll",
            "0",
            "--namespaces",
            namespace,
            "--guests",
        ])
        .arg(guests)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the host starts")
}

/// The three SDKs as their registries would serve them (`make sdks`'s
/// tools/pack-sdks, nothing in the checkout written): made once per test
/// binary.
struct Packages {
    /// `cargo package`'s `.crate`.
    rust: PathBuf,
    /// `npm pack`'s tarball.
    js: PathBuf,
    /// `pip wheel`'s wheel.
    python: PathBuf,
}

fn packages() -> &'static Packages {
    static PACKAGES: std::sync::OnceLock<Packages> = std::sync::OnceLock::new();
    PACKAGES.get_or_init(|| {
        let dir = target_tmpdir().join(format!("sdks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let target = target_tmpdir().parent().expect("<target>").to_path_buf();
        let mut pack = Command::new(workspace().join("tools/pack-sdks"));
        pack.arg(&dir).env("CARGO_TARGET_DIR", target);
        ok(pack, "tools/pack-sdks");
        let version = env!("CARGO_PKG_VERSION");
        Packages {
            rust: dir.join(format!("reconciler-guest-sdk-{version}.crate")),
            js: dir.join(format!("reconciler-host-guest-sdk-{version}.tgz")),
            python: dir.join(format!(
                "reconciler_host_guest_sdk-{version}-py3-none-any.whl"
            )),
        }
    })
}

/// A JavaScript scaffold in `js` as its README says: installed (its SDK
/// the packed one, as `--sdk-path` wrote it), its `tests` node tests
/// passed, built; the component's path. Each step's time is printed.
fn built_js(js: &Path, lower: &str, tests: usize) -> PathBuf {
    let package = std::fs::read_to_string(js.join("package.json")).unwrap();
    assert!(
        package.contains(&format!(
            "\"@reconciler-host/guest-sdk\": \"file:{}\"",
            &packages().js.canonicalize().unwrap().display()
        )),
        "{package}"
    );
    for args in [
        &["install", "--no-audit", "--no-fund"][..],
        &["test"],
        &["run", "build"],
    ] {
        let started = Instant::now();
        let mut npm = Command::new("npm");
        npm.args(args).current_dir(js);
        let out = ok(npm, &format!("npm {args:?}"));
        eprintln!(
            "{}: npm {args:?} took {:.1?}",
            js.display(),
            started.elapsed()
        );
        if args == ["test"] {
            assert!(out.contains(&format!("# pass {tests}\n")), "{out}");
            assert!(out.contains("# fail 0\n"), "{out}");
        }
    }
    js.join(format!("{lower}_guest.wasm"))
}

/// A parent `kind` named after its `child` kind, saying "hi", created in
/// `ns` whose host serves `kind`: Ready True (AsExpected) and ChildReady
/// True, and exactly one `child` (`api_version`) of its, named after it
/// (its name and `suffix`), controlled by it, labelled as the host's and
/// holding the greeting.
async fn owns_its_child(
    ns: &TestNamespace,
    kind: &str,
    child: &str,
    api_version: &str,
    suffix: &str,
) {
    let parents = objects::api(
        &ns.client(),
        ns.name(),
        "greetings.example.com/v1alpha1",
        kind,
    );
    let name = child.to_lowercase();
    create(
        &ns.client(),
        ns.name(),
        json!({"apiVersion": "greetings.example.com/v1alpha1", "kind": kind,
               "metadata": {"name": name}, "spec": {"greeting": "hi"}}),
    )
    .await;
    let ready = eventually(&format!("the {kind} Ready"), async || {
        let p = get(&parents, &name).await;
        condition(&p, "Ready")
            .filter(|c| c.status == "True")
            .ok_or(p)
    })
    .await;
    assert_eq!(ready.reason, "AsExpected", "{kind}");
    let parent = get(&parents, &name).await;
    assert_eq!(
        condition(&parent, "ChildReady").map(|c| c.status),
        Some("True".into())
    );
    let made: Vec<Value> = objects::api(&ns.client(), ns.name(), api_version, child)
        .list(&Default::default())
        .await
        .expect("listing the children")
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .filter(|o| o["metadata"]["ownerReferences"][0]["kind"] == kind)
        .collect();
    assert_eq!(made.len(), 1, "{kind}: {made:?}");
    let md = &made[0]["metadata"];
    assert_eq!(md["name"], format!("{name}{suffix}"));
    assert_eq!(md["ownerReferences"][0]["uid"], parent["metadata"]["uid"]);
    assert_eq!(md["ownerReferences"][0]["controller"], true);
    assert_eq!(
        md["labels"]["app.kubernetes.io/managed-by"],
        "reconciler-host"
    );
    assert!(made[0].to_string().contains("\"hi\""), "{kind}: {made:?}");
}

/// A scaffold depends on the SDK by version, overridden by `--sdk-path`
/// only in a `[patch.crates-io]` section saying so: the `.crate` given,
/// unpacked into the scaffold's `sdk/`.
fn assert_depends_by_version(crate_dir: &Path) {
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        manifest.contains(&format!("reconciler-guest-sdk = \"{version}\"")),
        "{manifest}"
    );
    let unpacked = format!("sdk/reconciler-guest-sdk-{version}");
    assert!(
        manifest.contains(&format!(
            "[patch.crates-io]\nreconciler-guest-sdk = {{ path = {unpacked:?} }}"
        )),
        "{manifest}"
    );
    assert!(
        crate_dir
            .join(unpacked)
            .join("wit/reconciler.wit")
            .is_file()
    );
}

/// From the SDK as packaged (`cargo package`), not the repository's
/// sources: the crate a guest repository's CI builds.
#[tokio::test]
async fn a_new_guest_builds_tests_and_is_served_outside_the_workspace() {
    let dir = target_tmpdir().join(format!("new-guest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let crate_dir = dir.join("greeting");
    let mut new = Command::new(host_binary());
    new.args([
        "new",
        "Greeting",
        "--group",
        "greetings.example.com",
        "--sdk-path",
    ])
    .arg(&packages().rust)
    .arg(&crate_dir);
    let said = ok(new, "reconciler-host new");
    assert!(said.contains("a guest for Greeting"), "{said}");
    assert_depends_by_version(&crate_dir);
    // Refused: the directory is not empty now.
    let mut again = Command::new(host_binary());
    again
        .args(["new", "Greeting", "--sdk-path"])
        .arg(workspace().join("guests/sdk"))
        .arg(&crate_dir);
    let refused = again.output().unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is not empty"));
    // Without --sdk-path the registry's SDK it names is not this project's
    // yet: said, so nobody builds with a package someone else published.
    let unpinned = Command::new(host_binary())
        .args(["new", "Greeting"])
        .arg(dir.join("unpinned"))
        .output()
        .unwrap();
    assert!(unpinned.status.success());
    assert!(
        String::from_utf8_lossy(&unpinned.stderr).contains(
            "depends on reconciler-guest-sdk 0.1.0 from crates.io, where this project has not published it yet"
        ),
        "{}",
        String::from_utf8_lossy(&unpinned.stderr)
    );

    let wasm = built(&crate_dir, "greeting");
    fixtures_pass(&wasm, &crate_dir);

    // Served by the unchanged host.
    let ns = TestNamespace::new("new-guest").await.expect("a namespace");
    install_crd_of(&wasm, &ns.client()).await;
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests).unwrap();
    std::fs::copy(&wasm, guests.join("greeting_guest.wasm")).unwrap();
    let mut host = serve(&guests, ns.name());
    let api = objects::api(
        &ns.client(),
        ns.name(),
        "greetings.example.com/v1alpha1",
        "Greeting",
    );
    create(
        &ns.client(),
        ns.name(),
        json!({"apiVersion": "greetings.example.com/v1alpha1", "kind": "Greeting",
               "metadata": {"name": "hello"}, "spec": {"greeting": "hi"}}),
    )
    .await;
    let ready = eventually("the Greeting Ready", async || {
        let g = get(&api, "hello").await;
        condition(&g, "Ready")
            .filter(|c| c.status == "True")
            .ok_or(g)
    })
    .await;
    assert_eq!(ready.reason, "AsExpected");
    let _ = host.kill();
    let _ = host.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `new --child` (issue 35): a scaffold for each kind of child (Deployment,
/// ConfigMap, CronJob) builds outside the workspace, passes its native
/// tests and its fixtures, and, served by the unchanged host, makes its
/// parent's child, controlled by the parent and labelled as the host's:
/// exactly one of each, ChildReady and Ready True on every parent.
#[tokio::test]
async fn a_new_guest_with_a_child_owns_it_on_the_cluster() {
    let dir = target_tmpdir().join(format!("new-child-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests).unwrap();
    let ns = TestNamespace::new("new-child").await.expect("a namespace");
    let children = [
        ("Deployment", "apps/v1", ""),
        ("ConfigMap", "v1", "-greeting"),
        ("CronJob", "batch/v1", ""),
    ];
    for (child, _, _) in children {
        let kind = format!("{child}Greeting");
        let lower = kind.to_lowercase();
        let crate_dir = dir.join(&lower);
        let mut new = Command::new(host_binary());
        new.args([
            "new",
            &kind,
            "--child",
            child,
            "--group",
            "greetings.example.com",
        ])
        .arg("--sdk-path")
        .arg(workspace().join("guests/sdk"))
        .arg(&crate_dir);
        let said = ok(new, "reconciler-host new --child");
        assert!(said.contains(&format!("owning a {child}")), "{said}");
        let wasm = built(&crate_dir, &lower);
        fixtures_pass(&wasm, &crate_dir);
        install_crd_of(&wasm, &ns.client()).await;
        std::fs::copy(&wasm, guests.join(format!("{lower}_guest.wasm"))).unwrap();
    }

    let mut host = serve(&guests, ns.name());
    for (child, api_version, suffix) in children {
        owns_its_child(&ns, &format!("{child}Greeting"), child, api_version, suffix).await;
    }
    let _ = host.kill();
    let _ = host.wait();
    ns.cleanup().await.expect("cleanup");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `new --lang js --child` (issue 53): the Rust child scaffold's twin in
/// JavaScript, made from the SDK as packaged (`npm pack`) outside the
/// repository, installs, passes its node tests (under the SDK's mock) and
/// the Rust child's fixtures, and, served by the unchanged host, makes its
/// parent's ConfigMap as the Rust one does.
///
/// Then (issue 50) a candidate in JavaScript, the same guest with one
/// thing changed, its ChildReady False once its ConfigMap is made
/// ([`JS_MADE_FALSE`]): `shadow`, as a reviewer who may only read, holds
/// it (exit 1) naming the parent, and a fresh host under `--promotion
/// auto`, nothing applied by it, holds it too when it is dropped in.
#[tokio::test]
async fn a_new_js_guest_with_a_child_owns_it_and_a_candidate_failing_it_is_held() {
    let dir = target_tmpdir().join(format!("new-js-child-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (kind, child) = ("ConfigMapJsGreeting", "ConfigMap");
    let js = dir.join("configmapjsgreeting");
    let mut new = Command::new(host_binary());
    new.args([
        "new",
        kind,
        "--lang",
        "js",
        "--child",
        child,
        "--group",
        "greetings.example.com",
        "--sdk-path",
    ])
    .arg(&packages().js)
    .arg(&js);
    let said = ok(new, "reconciler-host new --lang js --child");
    assert!(said.contains("owning a ConfigMap"), "{said}");
    let wasm = built_js(&js, "configmapjsgreeting", 5);
    let started = Instant::now();
    fixtures_pass(&wasm, &js);
    eprintln!("its fixtures took {:.1?}", started.elapsed());

    let ns = TestNamespace::new("new-js-child")
        .await
        .expect("a namespace");
    install_crd_of(&wasm, &ns.client()).await;
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests).unwrap();
    std::fs::copy(&wasm, guests.join("configmapjsgreeting_guest.wasm")).unwrap();
    let mut host = serve(&guests, ns.name());
    owns_its_child(&ns, kind, child, "v1", "-greeting").await;
    let _ = host.kill();
    let _ = host.wait();
    a_js_candidate_failing_its_made_child_is_held(&dir, &js, &guests, &ns).await;
    ns.cleanup().await.expect("cleanup");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One kind with a child in three languages (issue 53): `TwinGreeting
/// --child ConfigMap` made in Rust, JavaScript and Python from the three
/// packages alone, each built as its README says; the fixtures blessed
/// through the Rust component, and the JavaScript and Python components
/// pass those fixtures against those goldens, unchanged. The scaffolds'
/// own fixtures are the same files (`new`'s unit test holds them so).
#[test]
fn a_kind_with_a_child_passes_the_same_goldens_in_three_languages() {
    let dir = target_tmpdir().join(format!("parity-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scaffold = |lang: &str, package: &Path| {
        let at = dir.join(lang);
        let mut new = Command::new(host_binary());
        new.args([
            "new",
            "TwinGreeting",
            "--lang",
            lang,
            "--child",
            "ConfigMap",
        ])
        .arg("--sdk-path")
        .arg(package)
        .arg(&at);
        ok(
            new,
            &format!("reconciler-host new --lang {lang} --child ConfigMap"),
        );
        at
    };
    let rust = scaffold("rust", &packages().rust);
    ok(
        cargo(
            &rust,
            &["build", "--target", "wasm32-wasip2", "--profile", "guest"],
        ),
        "building the Rust component",
    );
    let rust_wasm = target_tmpdir()
        .parent()
        .expect("<target>")
        .join("wasm32-wasip2/guest/twingreeting_guest.wasm");
    let fixtures = [
        rust.join("fixtures/valid.yaml"),
        rust.join("fixtures/missing-greeting.yaml"),
    ];
    let mut bless = Command::new(host_binary());
    bless
        .arg("test")
        .arg("--bless")
        .arg(&rust_wasm)
        .args(&fixtures);
    ok(bless, "blessing the fixtures through the Rust component");
    let js = scaffold("js", &packages().js);
    let py = scaffold("python", &packages().python);
    for (lang, wasm) in [
        ("JavaScript", built_js(&js, "twingreeting", 5)),
        ("Python", built_py(&py, "twingreeting", 5)),
    ] {
        let mut test = Command::new(host_binary());
        test.arg("test").arg(&wasm).args(&fixtures);
        let passed = ok(
            test,
            &format!("the {lang} component against the Rust goldens"),
        );
        assert!(passed.contains("2 passed, 0 failed"), "{lang}: {passed}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `new --lang python --child` (issue 53): the Rust child scaffold's twin
/// in Python, made from the SDK's wheel alone outside the repository,
/// passes its unit tests under the SDK's native mock and the Rust child's
/// fixtures, and, served by the unchanged host against the real API
/// server, makes its parent's ConfigMap: Ready True, one child.
#[tokio::test]
async fn a_new_python_guest_with_a_child_owns_it_on_the_cluster() {
    let dir = target_tmpdir().join(format!("new-py-child-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (kind, child) = ("ConfigMapPyGreeting", "ConfigMap");
    let py = dir.join("configmappygreeting");
    let mut new = Command::new(host_binary());
    new.args(["new", kind, "--lang", "python", "--child", child])
        .args(["--group", "greetings.example.com", "--sdk-path"])
        .arg(&packages().python)
        .arg(&py);
    let said = ok(new, "reconciler-host new --lang python --child");
    assert!(said.contains("owning a ConfigMap"), "{said}");
    let wasm = built_py(&py, "configmappygreeting", 5);
    fixtures_pass(&wasm, &py);

    let ns = TestNamespace::new("new-py-child")
        .await
        .expect("a namespace");
    install_crd_of(&wasm, &ns.client()).await;
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests).unwrap();
    std::fs::copy(&wasm, guests.join("configmappygreeting_guest.wasm")).unwrap();
    let mut host = serve(&guests, ns.name());
    owns_its_child(&ns, kind, child, "v1", "-greeting").await;
    let _ = host.kill();
    let _ = host.wait();
    ns.cleanup().await.expect("cleanup");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where the JavaScript child scaffold says ChildReady True, once its
/// child is made (exactly one place).
const JS_MADE_TRUE: &str = "() => ok(CHILD_READY, `${what} is applied as asked`)";
/// The candidate's: False, with a reason the scaffold registers already.
const JS_MADE_FALSE: &str = "() => fails(CHILD_READY, CHILD_REFUSED, `${what} is made, and this candidate finds fault with it`)";

/// The JavaScript scaffold in `js` (served from `guests`, its parent
/// `configmap` Ready True in `ns`, no host running), copied and changed
/// to [`JS_MADE_FALSE`], built: `shadow` of it holds it, naming the
/// parent, writing nothing; a host under `--promotion auto` holds it.
async fn a_js_candidate_failing_its_made_child_is_held(
    dir: &Path,
    js: &Path,
    guests: &Path,
    ns: &TestNamespace,
) {
    let file = "configmapjsgreeting_guest.wasm";
    let v2 = dir.join("configmapjsgreeting-v2");
    let mut copy = Command::new("cp");
    copy.arg("-r").arg(js).arg(&v2);
    ok(copy, "copying the JavaScript guest");
    let source = v2.join("src/guest.js");
    let text = std::fs::read_to_string(&source).unwrap();
    assert_eq!(text.matches(JS_MADE_TRUE).count(), 1, "{text}");
    std::fs::write(&source, text.replace(JS_MADE_TRUE, JS_MADE_FALSE)).unwrap();
    let mut build = Command::new("npm");
    build.args(["run", "build"]).current_dir(&v2);
    ok(build, "building the candidate");
    let candidate = v2.join(file);
    let (v1_digest, v2_digest) = (
        digest(&std::fs::read(guests.join(file)).unwrap()),
        digest(&std::fs::read(&candidate).unwrap()),
    );
    assert_ne!(v1_digest, v2_digest, "the candidate is another module");

    // `shadow` as a reviewer who may only read; the modules compiled
    // where `run` and `test` keep them.
    let cache = ArtifactCache::default_dir().expect("a cache directory");
    let reviewer = "new-js-child-reviewer";
    identity::read_only_reviewer(&ns.client(), ns.name(), reviewer).await;
    let kubeconfig = identity::kubeconfig_as(reviewer, dir);
    let review_path = dir.join("review.yaml");
    let before = parent_and_child(ns).await;
    let mut shadow = host_command(&kubeconfig, &cache);
    shadow
        .arg("shadow")
        .arg(&candidate)
        .arg("--guests")
        .arg(guests)
        .args(["--namespaces", ns.name(), "-o"])
        .arg(&review_path);
    let out = tokio::task::spawn_blocking(move || shadow.output().expect("the host binary runs"))
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let review_text = std::fs::read_to_string(&review_path).unwrap_or_default();
    assert_eq!(out.status.code(), Some(1), "{stderr}\n{review_text}");
    assert!(stderr.contains("1 turn Ready True to False"), "{stderr}");
    let review: Value = serde_yaml::from_str(&review_text).expect("the review is YAML");
    assert_eq!(review["readyTurnsFalse"], 1, "{review_text}");
    assert_eq!(review["newGuestErrors"], 0, "{review_text}");
    let difference = &review["differences"][0];
    assert_eq!(
        difference["parent"],
        format!("{}/configmap", ns.name()),
        "{review_text}"
    );
    let child_ready = difference["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "ChildReady")
        .cloned();
    assert_eq!(
        child_ready,
        Some(json!({"type": "ChildReady", "serving": "True (AsExpected)",
                    "candidate": "False (ChildRefused)"})),
        "{review_text}"
    );
    assert_eq!(
        parent_and_child(ns).await,
        before,
        "nothing written by shadow"
    );

    // A fresh host under `--promotion auto`, the candidate dropped in.
    let mut host =
        ProbeHost::start(ns.name(), guests, &cache, &["--promotion", "auto"], "auto").await;
    std::fs::copy(&candidate, guests.join(file)).unwrap();
    let line = host
        .one_line_with(
            "the shadow's refusal in the log",
            &[
                "refused guest configmapjsgreeting_guest",
                "held (promotion auto)",
            ],
        )
        .await;
    assert!(line.contains(&v2_digest[..12]), "{line}");
    assert!(
        line.contains("1 would turn from Ready True to False"),
        "{line}"
    );
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"ConfigMapJsGreeting\"}"),
        None
    );
    let parent = get(&js_parents(ns), "configmap").await;
    assert_eq!(
        condition(&parent, "Ready").map(|c| c.status),
        Some("True".into())
    );
    let _ = host.stop();
}

/// The JavaScript scaffold's parents in `ns`.
fn js_parents(ns: &TestNamespace) -> kube::Api<kube::api::DynamicObject> {
    objects::api(
        &ns.client(),
        ns.name(),
        "greetings.example.com/v1alpha1",
        "ConfigMapJsGreeting",
    )
}

/// The parent `configmap` and its ConfigMap in `ns`: resourceVersions.
async fn parent_and_child(ns: &TestNamespace) -> (String, String) {
    let version = |o: Value| {
        o["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let parent = get(&js_parents(ns), "configmap").await;
    let child = get(
        &objects::api(&ns.client(), ns.name(), "v1", "ConfigMap"),
        "configmap-greeting",
    )
    .await;
    (version(parent), version(child))
}

/// docs/guests.md's Rust snippets build as a reader would use them (issue
/// 35): each is a crate's `src/lib.rs` (its dependencies those of the
/// guide's section 1), except one starting `// tests/native.rs`, which is
/// a test of the crate starting `// src/lib.rs` (section 1's `MyKind`)
/// and runs.
#[test]
fn the_guides_rust_snippets_build() {
    let guide = std::fs::read_to_string(workspace().join("docs/guests.md")).expect("the guide");
    let mut blocks: Vec<String> = Vec::new();
    let mut open: Option<String> = None;
    for line in guide.lines() {
        match (&mut open, line) {
            (None, "```rust") => open = Some(String::new()),
            (Some(_), "```") => blocks.push(open.take().expect("open")),
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(blocks.len() >= 4, "{} snippets", blocks.len());
    let dir = target_tmpdir().join(format!("guide-snippets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (tests, libs): (Vec<&String>, Vec<&String>) = blocks
        .iter()
        .partition(|b| b.starts_with("// tests/native.rs"));
    assert_eq!(tests.len(), 1, "one test snippet");
    for (i, lib) in libs.iter().enumerate() {
        let name = if lib.starts_with("// src/lib.rs") {
            "mykind-guest".to_owned()
        } else {
            format!("guide-snippet-{i}")
        };
        let crate_dir = dir.join(&name);
        std::fs::create_dir_all(crate_dir.join("src")).unwrap();
        std::fs::write(
            crate_dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nedition = \"2024\"\npublish = false\n\n\
                 [dependencies]\nreconciler-guest-sdk = {{ path = {:?} }}\n\
                 serde = {{ version = \"1\", features = [\"derive\"] }}\nserde_json = \"1\"\n\
                 schemars = {{ version = \"1.2\", default-features = false, features = [\"derive\", \"std\"] }}\n\n\
                 [workspace]\n",
                workspace().join("guests/sdk").display().to_string()
            ),
        )
        .unwrap();
        std::fs::write(crate_dir.join("src/lib.rs"), lib).unwrap();
        if name == "mykind-guest" {
            std::fs::create_dir_all(crate_dir.join("tests")).unwrap();
            std::fs::write(crate_dir.join("tests/native.rs"), tests[0]).unwrap();
        }
        let ran = ok(cargo(&crate_dir, &["test"]), &format!("the snippet {name}"));
        eprintln!("{name}: {ran}");
        if name == "mykind-guest" {
            assert!(ran.contains("test ready_workload_is_ready ... ok"), "{ran}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `new --lang js` and `new --lang python` (issue 35): each guest builds
/// outside the repository from its SDK as packaged (the tarball `npm pack`
/// makes, the wheel `pip wheel` makes), as its README says, and passes its
/// fixtures; the JavaScript one its tests under node too.
#[test]
fn js_and_python_guests_build_from_the_packaged_sdks() {
    let host = host_binary();
    let dir = target_tmpdir().join(format!("new-langs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    // JavaScript: the SDK's tarball, then npm as the README says.
    let js = dir.join("hello-js");
    let mut new = Command::new(&host);
    new.args(["new", "HelloJs", "--lang", "js", "--sdk-path"])
        .arg(&packages().js)
        .arg(&js);
    ok(new, "reconciler-host new --lang js");
    fixtures_pass(&built_js(&js, "hellojs", 3), &js);

    // Python: the SDK's wheel, installed beside app.py as the README says.
    let py = dir.join("hello-py");
    let mut new = Command::new(&host);
    new.args(["new", "HelloPy", "--lang", "python", "--sdk-path"])
        .arg(&packages().python)
        .arg(&py);
    ok(new, "reconciler-host new --lang python");
    fixtures_pass(&built_py(&py, "hellopy", 3), &py);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Python scaffold in `py` as its README says: the SDK's wheel installed
/// beside app.py (with the componentize-py `make setup` installs, the
/// version the README pins), its `tests` unit tests passed under the SDK's
/// native mock, built; the component's path.
fn built_py(py: &Path, lower: &str, tests: usize) -> PathBuf {
    let makefile = std::fs::read_to_string(workspace().join("Makefile")).unwrap();
    let pinned = makefile
        .lines()
        .find_map(|l| l.strip_prefix("COMPONENTIZE_PY_VERSION := "))
        .expect("the Makefile pins componentize-py");
    let readme = std::fs::read_to_string(py.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("componentize-py=={pinned}")),
        "{readme}"
    );
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let venv = cache.join(format!("reconciler-host/componentize-py-{pinned}/bin"));
    let mut install = Command::new(venv.join("pip"));
    install
        .args(["install", "--quiet", "--target", "deps"])
        .arg(&packages().python)
        .current_dir(py);
    ok(install, "installing the SDK's wheel beside app.py");
    let out = Command::new(venv.join("python"))
        .args(["-B", "-m", "unittest"])
        .env("PYTHONPATH", "deps")
        .current_dir(py)
        .output()
        .expect("python runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the scaffold's unit tests: {said}");
    assert!(said.contains(&format!("Ran {tests} tests")), "{said}");
    let wasm = format!("{lower}_guest.wasm");
    let mut build = Command::new(venv.join("componentize-py"));
    build
        .args([
            "-d",
            "deps/reconciler_sdk/wit",
            "-w",
            "guest",
            "componentize",
        ])
        .args(["-p", "deps", "-p", ".", "app", "-o", &wasm])
        .current_dir(py);
    ok(build, "componentize-py");
    py.join(wasm)
}
