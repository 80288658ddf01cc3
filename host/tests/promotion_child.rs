//! Auto promotion runs the operator's own pass (issue 50) wherever a
//! candidate comes from, end to end against the real local kube-apiserver:
//! on a standby that just took the Lease, and for a GuestModule pulled
//! from an OCI registry. The serving module (v1) is a scaffold of
//! `reconciler-host new Probe --child ConfigMap`, its ChildReady True once
//! the host made the ConfigMap; the candidate (v2) is the same crate whose
//! ChildReady is False once the ConfigMap is made (harness::scaffold).
//! Only a shadow that answers `facts.change-state` as the operator would
//! find it (the child made) sees the three parents turn from Ready True to
//! False. In both cases the candidate must be held (one refusal, counted
//! once under the shadow check), v1 must serve on, the parents must stay
//! Ready True, and nothing may be written meanwhile; the GuestModule's
//! `.status.shadow` must name the three parents.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use reconciler_host::operator::guest_modules::kind as gm;
use reconciler_host::runtime::artifacts::digest;
use reconciler_host_harness::objects;
use reconciler_host_harness::operator::{condition, eventually, get, settle, wait_for};
use reconciler_host_harness::paths::target_tmpdir;
use reconciler_host_harness::registry::Registry;
use reconciler_host_harness::scaffold::{
    FILE, KIND, ProbeHost, all_ready, create_probes, host_command, install_crd_of, modules, ok,
    place, precompile, probes, released_again, stay_ready, written,
};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// The parents, each owning the ConfigMap `<name>-greeting`.
const PARENTS: [&str; 3] = ["a", "b", "c"];

/// The modules the tests serve, built once for the binary, and the
/// compiled guests' cache every host of the binary shares.
struct Modules {
    /// The scaffold as `new --child ConfigMap` makes it.
    v1: Vec<u8>,
    /// The candidate: ChildReady False once its ConfigMap is made.
    v2: Vec<u8>,
    /// v1 released again: another digest, the same verdicts.
    v1_again: Vec<u8>,
    /// Where each is compiled already: what a host decides on a hot swap
    /// waits for no compile (whose time is the machine's).
    cache: PathBuf,
}

fn built_modules() -> &'static Modules {
    static MODULES: OnceLock<Modules> = OnceLock::new();
    MODULES.get_or_init(|| {
        let dir = target_tmpdir().join("promotion-child-modules");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (v1, v2) = modules(&dir);
        let v1_again = released_again(&v1);
        let cache = dir.join("cache");
        for module in [&v1, &v2, &v1_again] {
            precompile(&cache, module);
        }
        Modules {
            v1,
            v2,
            v1_again,
            cache,
        }
    })
}

/// A test's scratch directory, empty.
fn scratch(test: &str) -> PathBuf {
    let dir = target_tmpdir().join(format!("promotion-child-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A namespace with the Probe CRD (as `reconciler-host crd` prints it for
/// v1, written to `guests`) and the three parents, asking for "hi".
async fn probes_of_v1(prefix: &str, guests: &Path) -> TestNamespace {
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crd_of(&guests.join(FILE), &ns.client()).await;
    create_probes(&ns, &PARENTS, "hi").await;
    ns
}

/// Waits for the one line of `host`'s log refusing v2 on its shadow run,
/// and checks what it says: how many parents were shadowed, how many
/// would turn from Ready True to False, and that auto promotion held it.
async fn held_once(host: &ProbeHost, v2_digest: &str) {
    let line = host
        .one_line_with(
            "the shadow's refusal in the log",
            &["refused guest probe_guest", "shadowed on 3 parent(s)"],
        )
        .await;
    assert!(line.contains(&v2_digest[..12]), "{line}");
    assert!(
        line.contains("3 would turn from Ready True to False"),
        "{line}"
    );
    assert!(line.contains("held (promotion auto)"), "{line}");
}

/// What `host`'s metrics say of the hold: one refusal, under the shadow
/// check; no swap, no rollback; v1 serving, v2 not.
fn v1_serves_on(host: &ProbeHost, v1_digest: &str, v2_digest: &str) {
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"Probe\",check=\"shadow\"}"),
        Some(1.0)
    );
    assert_eq!(host.sample("reconciler_swaps_total{kind=\"Probe\"}"), None);
    assert_eq!(
        host.sample("reconciler_rollbacks_total{kind=\"Probe\"}"),
        None
    );
    assert_eq!(host.module_sample(v1_digest), Some(1.0));
    assert_eq!(host.module_sample(v2_digest), None);
}

/// A new generation of each parent is evaluated by the module serving:
/// Ready and ChildReady True for it, its ConfigMap made anew, never Ready
/// False on the way (v2 would say ChildReady False once made).
async fn a_new_generation_is_served_by_v1(ns: &TestNamespace) {
    let probes = probes(ns);
    for name in PARENTS {
        objects::merge(&probes, name, json!({"spec": {"greeting": "hi again"}})).await;
    }
    all_ready(ns, &PARENTS, "hi again", true).await;
}

/// Two replicas under `--promotion auto` with `--leader-elect`, each with
/// its own guests directory serving v1. The leader serves the three
/// Probes until Ready True and is killed; the standby takes the Lease, and
/// only then is v2 dropped into its guests directory. The new leader, which
/// made none of the children, holds v2 as a fresh host does: one refusal
/// naming the three parents turning from Ready True to False, v1 serving
/// on, the parents Ready True, nothing written. v1 released again (its
/// verdicts unchanged) then passes the same shadow and is swapped in.
#[tokio::test]
async fn a_standby_that_just_took_the_lease_holds_a_candidate_failing_its_made_child() {
    let started = Instant::now();
    let Modules {
        v1,
        v2,
        v1_again,
        cache,
    } = built_modules();
    let (v1_digest, v2_digest) = (digest(v1), digest(v2));
    let dir = scratch("standby");
    let (guests_a, guests_b) = (dir.join("a").join("guests"), dir.join("b").join("guests"));
    place(&guests_a, FILE, v1);
    place(&guests_b, FILE, v1);
    let ns = probes_of_v1("promotion-standby", &guests_a).await;
    let replica = |identity: &'static str| {
        [
            "--promotion",
            "auto",
            "--leader-elect",
            "--lease-namespace",
            ns.name(),
            "--lease-duration",
            "4s",
            "--identity",
            identity,
        ]
    };

    // 1. a leads and serves the Probes until Ready True; b stands by.
    let mut a = ProbeHost::start(ns.name(), &guests_a, cache, &replica("a"), "a").await;
    assert!(
        a.log_text().contains("leading: the Lease is held"),
        "a leads"
    );
    all_ready(&ns, &PARENTS, "hi", false).await;
    let mut b = ProbeHost::spawn(ns.name(), &guests_b, cache, &replica("b"), "b");
    b.wait_for_log("caches synced; standby until the Lease is held")
        .await;

    // 2. a killed (its Lease not released): nothing is written from now
    // on but by b, which takes the Lease once it lapses.
    a.kill();
    let before = written(&ns).await;
    b.wait_for_log("leading: the Lease is held").await;
    b.wait_for_log("caches synced; reconciling").await;

    // 3. v2 dropped into b's guests directory at once: held.
    place(&guests_b, FILE, v2);
    held_once(&b, &v2_digest).await;
    v1_serves_on(&b, &v1_digest, &v2_digest);
    // The parents stay Ready True after the hold, and nothing was
    // written: no status, child or Event, by the candidate or by the new
    // leader's passes under v1 (every parent was settled already).
    stay_ready(&ns, &PARENTS).await;
    assert_eq!(written(&ns).await, before, "nothing written since a died");

    // 4. b serves v1 on: a new generation of each parent is its.
    a_new_generation_is_served_by_v1(&ns).await;
    assert_eq!(
        b.lines_with(&["refused guest probe_guest", "held (promotion auto)"])
            .len(),
        1,
        "still one refusal"
    );
    assert_eq!(b.module_sample(&v2_digest), None);

    // 5. What held v2 is its own verdict, not b's shadow: v1 released
    // again (another digest, the same verdicts) passes the same shadow
    // and is swapped in. (A shadow that did not make v1's own pass, or
    // did not find the children made, would see every live Ready True
    // turn False under any candidate, and hold this one too.)
    let v1_again_digest = digest(v1_again);
    place(&guests_b, FILE, v1_again);
    let short = &v1_again_digest[..12];
    let decided = eventually("b's decision on v1 released again", async || {
        let swapped = b.lines_with(&["swapped in guest probe_guest", short]);
        let refused = b.lines_with(&["refused guest probe_guest", short]);
        if swapped.is_empty() && refused.is_empty() {
            Err(())
        } else {
            Ok((swapped, refused))
        }
    })
    .await;
    assert_eq!(decided.1, Vec::<String>::new(), "not refused");
    assert_eq!(decided.0.len(), 1, "swapped in once");
    let shadowed = b.lines_with(&[
        "shadowed guest probe_guest",
        short,
        "on 3 parent(s): no parent turns from Ready True to False",
    ]);
    assert_eq!(shadowed.len(), 1, "{shadowed:?}");
    assert_eq!(
        b.sample("reconciler_swaps_total{kind=\"Probe\"}"),
        Some(1.0)
    );
    assert_eq!(b.module_sample(&v1_again_digest), Some(1.0));
    assert_eq!(b.module_sample(&v1_digest), None);
    assert_eq!(
        b.sample("reconciler_swap_refusals_total{kind=\"Probe\",check=\"shadow\"}"),
        Some(1.0),
        "still one refusal"
    );
    stay_ready(&ns, &PARENTS).await;
    b.finish();
    ns.cleanup().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    println!("the standby test took {:?}", started.elapsed());
}

/// GuestModules, as the cluster serves them.
fn guest_modules(client: kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(gm::GROUP, gm::VERSION, gm::KIND),
        gm::PLURAL,
    );
    Api::all_with(client, &resource)
}

/// `reconciler-host push` of `bytes` (as `dir/push/probe_guest.wasm`) to
/// `registry` as `guests/probe:v2`: the reference pinned to its digest.
fn push(registry: &Registry, dir: &Path, cache: &Path, bytes: &[u8]) -> String {
    let module = dir.join("push").join(FILE);
    place(module.parent().unwrap(), FILE, bytes);
    let reference = format!("{}/guests/probe:v2", registry.address);
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let mut push = host_command(&kubeconfig, cache);
    push.env("DOCKER_CONFIG", dir.join("no-docker-config"))
        .arg("push")
        .arg(&module)
        .arg(&reference)
        .args(["--insecure-registry", &registry.address]);
    ok(push, "reconciler-host push").trim().to_owned()
}

/// A host under `--promotion direct` (the default) serving v1 from its
/// guests directory and GuestModules from a registry on loopback, its
/// policy serving Probe modules unsigned. The three Probes Ready True, a
/// GuestModule asking for promotion auto points at v2: it is pulled,
/// verified and compatible, and held by its shadow run (Shadowed False
/// Regression, the replica's entry Held), its `.status.shadow` naming the
/// three parents, each turning from Ready True to False on ChildReady.
/// The host refuses it once, v1 serves on, the parents stay Ready True,
/// and nothing is written in their namespace.
#[tokio::test]
async fn a_guest_module_under_auto_is_held_and_its_shadow_names_the_parents() {
    let started = Instant::now();
    let Modules { v1, v2, cache, .. } = built_modules();
    let (v1_digest, v2_digest) = (digest(v1), digest(v2));
    let dir = scratch("guest-module");
    let guests = dir.join("guests");
    place(&guests, FILE, v1);
    let ns = probes_of_v1("promotion-gm", &guests).await;
    reconciler_testsupport::install_crd(
        &ns.client(),
        serde_json::from_value(gm::crd()).expect("a CRD"),
    )
    .await
    .expect("installing the GuestModule CRD");
    let registry = Registry::start();
    let pinned = push(&registry, &dir, cache, v2);
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!("kinds:\n  {KIND}:\n    allowUnsigned: true\n"),
    )
    .unwrap();
    let pulled = dir.join("pulled");
    let args = [
        "--guest-modules",
        "--verification-policy",
        policy.to_str().unwrap(),
        "--insecure-registry",
        &registry.address,
        "--pulled-dir",
        pulled.to_str().unwrap(),
        "--identity",
        "a",
    ];
    let host = ProbeHost::start(ns.name(), &guests, cache, &args, "host").await;
    all_ready(&ns, &PARENTS, "hi", false).await;
    // Settled: the host has nothing left to write (its last Events
    // published).
    settle().await;
    let before = written(&ns).await;

    // The GuestModule, under promotion auto.
    let modules = guest_modules(ns.client());
    let name = format!("probe-{}", ns.name());
    create_held(&modules, &name, &pinned).await;
    // This replica's entry (written after the conditions): v2 held.
    let manifest = pinned.rsplit_once('@').expect("a pinned reference").1;
    let o = replica_entry_held(&modules, &name, manifest).await;
    let review = &o["status"]["shadow"];
    the_review_names_the_parents(&o, ns.name(), &v1_digest, &v2_digest);

    // The host: one refusal, v1 serving on; the parents Ready True, and
    // nothing written in their namespace.
    held_once(&host, &v2_digest).await;
    v1_serves_on(&host, &v1_digest, &v2_digest);
    stay_ready(&ns, &PARENTS).await;
    assert_eq!(
        written(&ns).await,
        before,
        "nothing written since the GuestModule"
    );
    a_new_generation_is_served_by_v1(&ns).await;
    // The held module is not offered again.
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"Probe\",check=\"shadow\"}"),
        Some(1.0)
    );
    assert_eq!(host.module_sample(&v2_digest), None);
    let still = get(&modules, &name).await;
    assert_eq!(still["status"]["shadow"], *review, "the review is kept");

    modules
        .delete(&name, &Default::default())
        .await
        .expect("deleting the GuestModule");
    host.finish();
    ns.cleanup().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    println!("the GuestModule test took {:?}", started.elapsed());
}

/// The GuestModule `name`, under promotion auto, pointing at `pinned`:
/// pulled, verified and compatible, then held by its shadow run (Shadowed
/// False Regression, stalled).
async fn create_held(modules: &Api<DynamicObject>, name: &str, pinned: &str) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{}/{}", gm::GROUP, gm::VERSION),
        "kind": gm::KIND,
        "metadata": {"name": name},
        "spec": {"kind": KIND, "source": {"oci": pinned}, "promotion": "auto"},
    }))
    .expect("a GuestModule");
    modules
        .create(&PostParams::default(), &object)
        .await
        .expect("creating the GuestModule");
    wait_for(
        modules,
        name,
        &[
            ("Pulled", "True", "AsExpected"),
            ("Verified", "True", "AsExpected"),
            ("Compatible", "True", "AsExpected"),
            ("Shadowed", "False", "Regression"),
            ("Ready", "False", "Regression"),
            ("Stalled", "True", "Regression"),
        ],
    )
    .await;
}

/// Waits for this replica's entry in the GuestModule's status: `manifest`
/// held; the GuestModule.
async fn replica_entry_held(modules: &Api<DynamicObject>, name: &str, manifest: &str) -> Value {
    eventually("this replica's entry: v2 held", async || {
        let o = get(modules, name).await;
        let entries: Vec<(&str, &str, &str)> = o["status"]["replicas"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let field = |f: &str| e[f].as_str().unwrap_or_default();
                (field("name"), field("state"), field("digest"))
            })
            .collect();
        let held = entries == [("a", gm::STATE_HELD, manifest)];
        if held {
            Ok(o)
        } else {
            Err(o["status"]["replicas"].clone())
        }
    })
    .await
}

/// The review, as recorded for whoever decides what to do with the
/// module: v2 beside v1, every parent of `ns` shadowed, every one turning
/// from Ready True to False on ChildReady, none failing; the replica's
/// entry says why.
fn the_review_names_the_parents(o: &Value, ns: &str, v1_digest: &str, v2_digest: &str) {
    let status = &o["status"];
    assert_eq!(status["promotion"], "auto", "{status}");
    let shadowed = condition(o, "Shadowed").unwrap().message;
    assert!(shadowed.contains("shadowed on 3 parent(s)"), "{shadowed}");
    assert!(
        shadowed.contains("3 would turn from Ready True to False"),
        "{shadowed}"
    );
    // The review, as recorded for whoever decides what to do with the
    // module: v2 beside v1, every parent shadowed, every one turning from
    // Ready True to False, none failing.
    let review = &status["shadow"];
    assert_eq!(review["kind"], KIND, "{review}");
    assert_eq!(review["serving"]["digest"], v1_digest, "{review}");
    assert_eq!(review["candidate"]["digest"], v2_digest, "{review}");
    assert_eq!(
        [
            &review["parents"],
            &review["differ"],
            &review["readyTurnsFalse"],
            &review["newGuestErrors"],
            &review["notReproduced"],
        ],
        [3, 3, 3, 0, 0],
        "{review}"
    );
    let differences = review["differences"].as_array().expect("the differences");
    let listed: BTreeSet<&str> = differences
        .iter()
        .map(|d| d["parent"].as_str().expect("a parent's name"))
        .collect();
    let parents: Vec<String> = PARENTS.iter().map(|p| format!("{ns}/{p}")).collect();
    assert_eq!(
        listed,
        parents.iter().map(String::as_str).collect(),
        "{review}"
    );
    for d in differences {
        assert_eq!(d["readyTurnsFalse"], true, "{d}");
        // The one thing v2 changes: ChildReady once the ConfigMap is made,
        // which both passes find made.
        let child_ready = d["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "ChildReady");
        assert_eq!(
            child_ready.map(|c| (&c["serving"], &c["candidate"])),
            Some((&json!("True (AsExpected)"), &json!("False (ChildRefused)"))),
            "{d}"
        );
    }
    // The entry says why.
    let entry = &status["replicas"][0];
    assert!(
        entry["message"]
            .as_str()
            .is_some_and(|m| m.contains("held (promotion auto)")),
        "{entry}"
    );
}
