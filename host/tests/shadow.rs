//! `reconciler-host shadow` end to end, against the real local
//! kube-apiserver: a candidate module evaluated beside the module serving
//! its kind on every live parent, writing nothing, and the review of what
//! would differ. The serving module is the 0.4 LegacyWidget (its one
//! aspect, Applied, True; it wants the ConfigMap `<name>-legacy`), the
//! candidate the 0.1 one (its one aspect, WorkloadReady, from the
//! Deployment the widget names, which does not exist).

use std::path::{Path, PathBuf};
use std::process::Output;

use reconciler_host_harness::guests::guest_wasm;
use reconciler_host_harness::identity;
use reconciler_host_harness::objects::create;
use reconciler_host_harness::operator::{Guests, cli_command, fixture_of, install_crds};
use reconciler_host_harness::paths;
use reconciler_host_harness::scaffold::versions;
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// The 0.4 LegacyWidget guest serving.
const LEGACY: Guests = Guests {
    dir: "shadow-tests",
    crates: &["legacy-v0_4-guest"],
    settings: &[],
    expected_warnings: &[],
};

const API_VERSION: &str = "testing.reconciler.dev/v1";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `reconciler-host shadow <candidate> --guests <serving> --namespaces
/// <ns> -o <review>` under `kubeconfig`.
async fn shadow(kubeconfig: &Path, candidate: &Path, ns: &str, review: &Path) -> Output {
    let mut command = cli_command(kubeconfig);
    command
        .arg("shadow")
        .arg(candidate)
        .arg("--guests")
        .arg(&fixture_of(&LEGACY).guests_dir)
        .args(["--namespaces", ns, "-o"])
        .arg(review);
    tokio::task::spawn_blocking(move || command.output().expect("the host binary runs"))
        .await
        .expect("the command's thread")
}

/// Three widgets no host has served yet. A reviewer who may only read
/// (impersonated; any write would be refused) shadows the 0.1 module
/// beside the 0.4 one serving: every widget differs, each turns from
/// Ready True to False (seed 000: Ready is True only when every aspect
/// is; the 0.1 module's WorkloadReady is False, its Deployment missing),
/// the ConfigMap the serving module asks for is dropped, and the run is
/// held (exit 1). Shadowing the serving module itself differs in
/// nothing. Nothing is written: no widget changes, no ConfigMap, no
/// Event.
#[tokio::test]
async fn a_candidate_is_shadowed_on_every_parent_writing_nothing() {
    fixture_of(&LEGACY);
    let ns = TestNamespace::new("shadow")
        .await
        .expect("a test namespace");
    let client = ns.client();
    install_crds(&client).await;
    for name in ["a", "b", "c"] {
        create(
            &client,
            ns.name(),
            json!({"apiVersion": API_VERSION, "kind": "LegacyWidget",
                   "metadata": {"name": name}, "spec": {"message": "hello"}}),
        )
        .await;
    }
    let reviewer = "shadow-reviewer";
    // The 0.1 module reads ClusterRoles (when a widget names one).
    identity::read_only_reviewer(&client, ns.name(), reviewer).await;
    let dir = paths::target_tmpdir().join("shadow-tests").join(ns.name());
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = identity::kubeconfig_as(reviewer, &dir);
    let before = versions(&ns, API_VERSION, "LegacyWidget").await;

    let review_path = dir.join("review.yaml");
    let candidate: PathBuf = guest_wasm("legacy-v0_1-guest");
    let out = shadow(&kubeconfig, &candidate, ns.name(), &review_path).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "on 3 LegacyWidget parent(s): 3 differ, 3 turn Ready True to False, 0 new guest error(s), 0 not reproduced; nothing written to the cluster"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("held: "), "{stderr}");
    let review: Value =
        serde_yaml::from_str(&std::fs::read_to_string(&review_path).unwrap()).unwrap();
    assert_eq!(review["parents"], 3, "{review}");
    assert_eq!(review["readyTurnsFalse"], 3, "{review}");
    let differences = review["differences"].as_array().expect("differences");
    let parents: Vec<&str> = differences
        .iter()
        .map(|d| d["parent"].as_str().unwrap())
        .collect();
    let ns_name = ns.name();
    assert_eq!(
        parents,
        [
            format!("{ns_name}/a"),
            format!("{ns_name}/b"),
            format!("{ns_name}/c")
        ]
    );
    let a = &differences[0];
    assert!(a["readyTurnsFalse"].as_bool().unwrap(), "{a}");
    let conditions: Vec<(String, String, String)> = a["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_owned();
            (s("type"), s("serving"), s("candidate"))
        })
        .collect();
    let of = |type_: &str| conditions.iter().find(|(t, _, _)| t == type_).cloned();
    assert_eq!(
        of("Applied").map(|(_, s, c)| (s, c)),
        Some(("True (AsExpected)".into(), "absent".into())),
        "{a}"
    );
    let ready = of("Ready").expect("Ready differs");
    assert_eq!(ready.1, "True (AsExpected)", "{a}");
    assert!(ready.2.starts_with("False ("), "{a}");
    let workload = of("WorkloadReady").expect("WorkloadReady differs");
    assert_eq!(workload.1, "absent", "{a}");
    assert!(workload.2.starts_with("False ("), "{a}");
    assert!(
        a["changesDropped"]
            .as_array()
            .unwrap()
            .contains(&json!("apply ConfigMap a-legacy")),
        "{a}"
    );

    let serving = fixture_of(&LEGACY)
        .guests_dir
        .join("legacy_v0_4_guest.wasm");
    let same = shadow(&kubeconfig, &serving, ns.name(), &dir.join("same.yaml")).await;
    let stderr = text(&same.stderr);
    assert!(same.status.success(), "{stderr}");
    assert!(
        stderr.contains("on 3 LegacyWidget parent(s): 0 differ, 0 turn Ready True to False"),
        "{stderr}"
    );

    assert_eq!(
        versions(&ns, API_VERSION, "LegacyWidget").await,
        before,
        "no widget written"
    );
    assert!(
        versions(&ns, "v1", "ConfigMap")
            .await
            .iter()
            .all(|(name, _)| !name.ends_with("-legacy")),
        "no ConfigMap made"
    );
    assert!(
        versions(&ns, "events.k8s.io/v1", "Event").await.is_empty(),
        "no Event"
    );
    ns.cleanup().await.unwrap();
}
