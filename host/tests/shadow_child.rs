//! A shadow run and `--promotion auto` see a guest's child as the
//! operator's pass would (issue 50), end to end against the real local
//! kube-apiserver. The serving module (v1) is a scaffold of `reconciler-host
//! new Probe --child ConfigMap`: its ChildReady is True once the host made
//! the ConfigMap (`facts.change-state` says Made). The candidate (v2) is
//! the same crate with one thing changed: once the ConfigMap is made, its
//! ChildReady is False (ChildRefused). Before the child is made both
//! modules say the same, so only a shadow that answers `change-state` as
//! the operator would find it (the child made) and evaluates the guest
//! again after its changes sees every parent turn from Ready True to
//! False: `reconciler-host shadow` must hold v2 (exit 1) writing nothing,
//! and a fresh host under `--promotion auto` must hold it too, the three
//! parents staying Ready True under v1. Whoever may write a Probe's status
//! cannot hide that regression by forging a live Ready False: the review
//! still holds v2 and says which live status it does not reproduce.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::OnceLock;

use reconciler_host::runtime::artifacts::digest;
use reconciler_host_harness::identity;
use reconciler_host_harness::objects;
use reconciler_host_harness::paths::target_tmpdir;
use reconciler_host_harness::scaffold::{
    API_VERSION, FILE, KIND, ProbeHost, all_ready, create_probes, host_command, install_crd_of,
    modules, place, probes, stay_ready, text, written,
};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// The parents, each owning the ConfigMap `<name>-greeting`.
const PARENTS: [&str; 3] = ["a", "b", "c"];

/// v1 and v2 ([`modules`]), built once for this file's tests.
fn v1_and_v2() -> &'static (Vec<u8>, Vec<u8>) {
    static BUILT: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = target_tmpdir().join(format!("shadow-child-modules-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        modules(&dir)
    })
}

/// A test's directory and namespace, its Probes served by v1 until Ready
/// True and that host stopped, v2 placed as the candidate.
struct Served {
    dir: PathBuf,
    /// Where the hosts keep compiled modules.
    cache: PathBuf,
    /// v2's file.
    candidate: PathBuf,
    /// The guests directory serving v1.
    serving: PathBuf,
    ns: TestNamespace,
}

/// [`PARENTS`] served by v1 in a namespace named after `test`.
async fn served_by_v1(test: &str) -> Served {
    let (v1, v2) = v1_and_v2();
    let dir = target_tmpdir().join(format!("{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("modules");
    let candidate = dir.join("candidate").join(FILE);
    place(candidate.parent().unwrap(), FILE, v2);
    let ns = TestNamespace::new(test).await.expect("a test namespace");
    let serving = dir.join("serving").join("guests");
    place(&serving, FILE, v1);
    install_crd_of(&serving.join(FILE), &ns.client()).await;
    create_probes(&ns, &PARENTS, "hi").await;
    let host = ProbeHost::start(ns.name(), &serving, &cache, &[], "v1").await;
    all_ready(&ns, &PARENTS, "hi", false).await;
    host.finish();
    Served {
        dir,
        cache,
        candidate,
        serving,
        ns,
    }
}

/// What a shadow run said: its exit status, its stderr, and the review
/// it wrote (as text, and as YAML).
struct Shadowed {
    status: ExitStatus,
    stderr: String,
    text: String,
    review: Value,
}

/// `reconciler-host shadow <candidate> --guests <guests> --namespaces <ns>
/// -o <review>` under `kubeconfig`.
async fn shadow(
    kubeconfig: &Path,
    cache: &Path,
    candidate: &Path,
    guests: &Path,
    ns: &str,
    review: &Path,
) -> Shadowed {
    let mut command = host_command(kubeconfig, cache);
    command
        .arg("shadow")
        .arg(candidate)
        .arg("--guests")
        .arg(guests)
        .args(["--namespaces", ns, "-o"])
        .arg(review);
    let out = tokio::task::spawn_blocking(move || command.output().expect("the host binary runs"))
        .await
        .expect("the command's thread");
    let review_text = std::fs::read_to_string(review).unwrap_or_default();
    Shadowed {
        status: out.status,
        stderr: text(&out.stderr),
        review: serde_yaml::from_str(&review_text).expect("the review is YAML"),
        text: review_text,
    }
}

/// Three Probes served by v1 until Ready True (their ConfigMaps made),
/// that host stopped. `shadow` of v2 beside v1 holds it: every parent
/// turns from Ready True to False, and nothing is written; v1 beside
/// itself differs in nothing. Then a fresh host under `--promotion auto`
/// serving v1 is given v2 as a hot swap: it holds it, v1 serves on, and
/// the parents stay Ready True.
#[tokio::test]
async fn a_candidate_failing_its_made_child_is_held_by_shadow_and_auto_promotion() {
    // 1 and 2. v1 and v2; three Probes served by v1 until Ready True,
    // that host stopped.
    let (v1, v2) = v1_and_v2();
    let (v1_digest, v2_digest) = (digest(v1), digest(v2));
    let Served {
        dir,
        cache,
        candidate,
        serving,
        ns,
    } = served_by_v1("shadow-child").await;
    let client = ns.client();
    let probes = probes(&ns);

    // 3. `shadow`, as a reviewer who may only read (any write is refused).
    let reviewer = "shadow-child-reviewer";
    identity::read_only_reviewer(&client, ns.name(), reviewer).await;
    let kubeconfig = identity::kubeconfig_as(reviewer, &dir);
    let before = written(&ns).await;
    let review_path = dir.join("review.yaml");
    let Shadowed {
        status,
        stderr,
        text: review_text,
        review,
    } = shadow(
        &kubeconfig,
        &cache,
        &candidate,
        &serving,
        ns.name(),
        &review_path,
    )
    .await;
    // A parent turning from Ready True to False holds the candidate: exit 1.
    assert_eq!(
        status.code(),
        Some(1),
        "shadow of v2 beside v1:\n{stderr}\n{review_text}"
    );
    assert!(stderr.contains("3 turn Ready True to False"), "{stderr}");
    assert!(stderr.contains("held: "), "{stderr}");
    // Every live parent is shadowed, and every one differs.
    assert_eq!(review["parents"], 3, "{review_text}");
    assert_eq!(review["differ"], 3, "{review_text}");
    // The child made, v2's ChildReady is False: Ready turns from True to
    // False on each of the three parents.
    assert_eq!(review["readyTurnsFalse"], 3, "{review_text}");
    // v2 fails nowhere: only its verdict differs.
    assert_eq!(review["newGuestErrors"], 0, "{review_text}");
    each_parent_turns_false_on_child_ready(&review, &review_text, ns.name());

    // The serving module beside itself differs in nothing, and its own
    // pass reproduces every parent's status.
    serving_beside_itself_differs_in_nothing(&kubeconfig, &cache, &serving, ns.name(), &dir).await;

    // A shadow writes nothing: no Probe, ConfigMap or Event changed.
    let after = written(&ns).await;
    assert_eq!(after, before, "nothing written by shadow");

    // 4. A fresh host under `--promotion auto`, nothing applied by it yet,
    // serving v1; v2 dropped over it.
    let auto = dir.join("auto").join("guests");
    place(&auto, FILE, v1);
    let host = ProbeHost::start(ns.name(), &auto, &cache, &["--promotion", "auto"], "auto").await;
    place(&auto, FILE, v2);
    // A candidate that turns parents from Ready True to False is held, in
    // one refusal naming the count and the promotion.
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
    // The refusal is counted once, under the shadow check; nothing is
    // swapped or rolled back.
    assert_eq!(
        host.sample("reconciler_swap_refusals_total{kind=\"Probe\",check=\"shadow\"}"),
        Some(1.0)
    );
    assert_eq!(host.sample("reconciler_swaps_total{kind=\"Probe\"}"), None);
    assert_eq!(
        host.sample("reconciler_rollbacks_total{kind=\"Probe\"}"),
        None
    );
    // v1 serves on; v2 never serves.
    assert_eq!(host.module_sample(&v1_digest), Some(1.0));
    assert_eq!(host.module_sample(&v2_digest), None);
    // The parents stay Ready True after the hold...
    stay_ready(&ns, &PARENTS).await;
    // ... and a new generation of each is evaluated by v1: Ready and
    // ChildReady True for it, its ConfigMap made anew (v2 would say
    // ChildReady False once made).
    for name in PARENTS {
        objects::merge(&probes, name, json!({"spec": {"greeting": "hi again"}})).await;
    }
    all_ready(&ns, &PARENTS, "hi again", true).await;
    // Still one refusal, and v2 still not served.
    assert_eq!(
        host.lines_with(&["refused guest probe_guest", "held (promotion auto)"])
            .len(),
        1
    );
    assert_eq!(host.module_sample(&v2_digest), None);
    host.finish();
    ns.cleanup().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The review lists every parent, each turning from Ready True to False:
/// Ready True under v1, False under v2, from ChildReady, the one thing v2
/// changes; no change differs.
fn each_parent_turns_false_on_child_ready(review: &Value, review_text: &str, ns_name: &str) {
    let differences = review["differences"].as_array().expect("differences");
    let listed: Vec<&str> = differences
        .iter()
        .map(|d| d["parent"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        PARENTS.map(|p| format!("{ns_name}/{p}")),
        "{review_text}"
    );
    for d in differences {
        // Each parent is listed as turning from Ready True to False.
        assert_eq!(d["readyTurnsFalse"], true, "{d}");
        let of = |type_: &str| {
            d["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == type_)
                .map(|c| {
                    (
                        c["serving"].as_str().unwrap_or_default().to_owned(),
                        c["candidate"].as_str().unwrap_or_default().to_owned(),
                    )
                })
        };
        // Ready: True under v1, False under v2.
        let (ready_serving, ready_candidate) = of("Ready").expect("Ready differs");
        assert_eq!(ready_serving, "True (AsExpected)", "{d}");
        assert!(ready_candidate.starts_with("False ("), "{d}");
        // The one thing v2 changes: ChildReady once the ConfigMap is made,
        // which both see made (change-state as the operator finds it).
        assert_eq!(
            of("ChildReady"),
            Some(("True (AsExpected)".into(), "False (ChildRefused)".into())),
            "{d}"
        );
        // Both ask for the same ConfigMap: no change differs.
        assert!(d.get("changesAdded").is_none(), "{d}");
        assert!(d.get("changesDropped").is_none(), "{d}");
    }
}

/// `shadow` of the serving module beside itself: exit 0, every parent
/// shadowed, none differing, every status reproduced.
async fn serving_beside_itself_differs_in_nothing(
    kubeconfig: &Path,
    cache: &Path,
    serving: &Path,
    ns: &str,
    dir: &Path,
) {
    let same_path = dir.join("same.yaml");
    let Shadowed {
        status,
        stderr,
        text: same_text,
        review: same,
    } = shadow(
        kubeconfig,
        cache,
        &serving.join(FILE),
        serving,
        ns,
        &same_path,
    )
    .await;
    // Nothing turns False and nothing fails: not held, exit 0.
    assert!(status.success(), "{stderr}\n{same_text}");
    assert_eq!(same["parents"], 3, "{same_text}");
    assert_eq!(same["differ"], 0, "{same_text}");
    // A parent whose status the serving module's own pass does not
    // reproduce is counted in notReproduced (absent: none).
    let not_reproduced = same
        .get("notReproduced")
        .map_or(0, |n| n.as_u64().expect("notReproduced is a count"));
    assert_eq!(not_reproduced, 0, "{same_text}");
}

/// Lets `user` read the Probes of `namespace` and write their status, and
/// nothing more: whoever runs another controller that writes a Probe's
/// status (or was given `probes/status` to mend one by hand).
async fn status_writer(client: &kube::Client, namespace: &str, user: &str) {
    identity::apply_rbac(
        client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "probe-status-writer", "namespace": namespace},
               "rules": [
                   {"apiGroups": ["probes.example.com"], "resources": ["probes"],
                    "verbs": ["get", "list", "watch"]},
                   {"apiGroups": ["probes.example.com"], "resources": ["probes/status"],
                    "verbs": ["get", "patch", "update"]}]}),
    )
    .await;
    identity::apply_rbac(
        client,
        identity::role_binding(
            namespace,
            "probe-status-writer",
            "Role",
            "probe-status-writer",
            user,
        ),
    )
    .await;
}

/// A Probe's conditions with Ready forged False (ReconcileError) at the
/// generation it has, the rest as they are.
fn ready_forged_false(probe: &Value) -> Value {
    let generation = probe["metadata"]["generation"].clone();
    let conditions: Vec<Value> = probe["status"]["conditions"]
        .as_array()
        .expect("the host wrote conditions")
        .iter()
        .map(|c| {
            if c["type"] == "Ready" {
                json!({"type": "Ready", "status": "False", "reason": "ReconcileError",
                       "message": "forged by a status writer",
                       "observedGeneration": generation,
                       "lastTransitionTime": c["lastTransitionTime"]})
            } else {
                c.clone()
            }
        })
        .collect();
    json!({"status": {"conditions": conditions}})
}

/// Who may write a Probe's status cannot hide a regression from the review
/// a user runs before shipping a module. Three Probes served by v1 until
/// Ready True; then a status writer (impersonated, with `probes/status`
/// and reads only) forges `a`'s live Ready False, so that "live Ready True
/// turned False" cannot fire for it. `shadow` of v2 still holds it (exit
/// 1, all three turn Ready True to False: the serving module's own pass
/// says True), and it says that `a`'s live status is not what the serving
/// module's pass reproduces: `notReproduced` 1, `a` listed with its forged
/// Ready. v1 beside itself differs in nothing and still says so of `a`.
#[tokio::test]
async fn a_status_writer_forging_ready_false_hides_no_regression_from_shadow() {
    let Served {
        dir,
        cache,
        candidate,
        serving,
        ns,
    } = served_by_v1("shadow-forged").await;
    let client = ns.client();

    // The status writer forges `a`'s Ready False, as that user.
    let writer = "probe-status-writer";
    status_writer(&client, ns.name(), writer).await;
    let as_writer = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(identity::kubeconfig_as(writer, &dir)).unwrap(),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let theirs = objects::api(&as_writer, ns.name(), API_VERSION, KIND);
    let a = serde_json::to_value(theirs.get("a").await.expect("the writer reads a")).unwrap();
    theirs
        .patch_status(
            "a",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(ready_forged_false(&a)),
        )
        .await
        .expect("the status writer may write a's status");
    // Its rights end there: the Probe's spec is not theirs to write.
    let spec = theirs
        .patch(
            "a",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"greeting": "forged"}})),
        )
        .await;
    assert!(
        matches!(&spec, Err(kube::Error::Api(s)) if s.code == 403),
        "{spec:?}"
    );

    let reviewer = "shadow-forged-reviewer";
    identity::read_only_reviewer(&client, ns.name(), reviewer).await;
    let kubeconfig = identity::kubeconfig_as(reviewer, &dir);
    let before = written(&ns).await;
    let ns_name = ns.name();
    let forged = format!("{ns_name}/a");
    // `a`'s entry says its live Ready is the forged one, which the serving
    // module's pass does not reproduce.
    let unreproduced_ready = |review: &Value| {
        let entry = review["differences"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["parent"] == forged.as_str())
            .cloned()
            .unwrap_or_default();
        entry["notReproduced"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|u| u["type"] == "Ready")
            .map(|u| (u["live"].clone(), u["serving"].clone()))
    };

    // v2 beside v1: held, every parent turning False, `a` not reproduced.
    let review_path = dir.join("review.yaml");
    let Shadowed {
        status,
        stderr,
        text: review_text,
        review,
    } = shadow(
        &kubeconfig,
        &cache,
        &candidate,
        &serving,
        ns_name,
        &review_path,
    )
    .await;
    assert_eq!(status.code(), Some(1), "{stderr}\n{review_text}");
    assert_eq!(review["readyTurnsFalse"], 3, "{review_text}");
    assert_eq!(review["notReproduced"], 1, "{review_text}");
    assert_eq!(
        unreproduced_ready(&review),
        Some((json!("False (ReconcileError)"), json!("True (AsExpected)"))),
        "{review_text}"
    );
    assert!(
        stderr.contains("not reproduced: on 1 parent(s)"),
        "{stderr}"
    );

    // v1 beside itself: nothing differs, not held, and still not silent
    // about `a`.
    let same_path = dir.join("same.yaml");
    let Shadowed {
        status,
        stderr,
        text: same_text,
        review: same,
    } = shadow(
        &kubeconfig,
        &cache,
        &serving.join(FILE),
        &serving,
        ns_name,
        &same_path,
    )
    .await;
    assert!(status.success(), "{stderr}\n{same_text}");
    assert_eq!(same["differ"], 0, "{same_text}");
    assert_eq!(same["notReproduced"], 1, "{same_text}");
    assert_eq!(
        unreproduced_ready(&same),
        Some((json!("False (ReconcileError)"), json!("True (AsExpected)"))),
        "{same_text}"
    );
    assert!(
        stderr.contains("not reproduced: on 1 parent(s)"),
        "{stderr}"
    );

    // Neither review wrote anything.
    assert_eq!(written(&ns).await, before, "nothing written by shadow");
    ns.cleanup().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
