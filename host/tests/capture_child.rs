//! `reconciler-host capture` makes the operator's own pass as a dry run
//! (issue 50), end to end against the real local kube-apiserver. The guest
//! is a scaffold of `reconciler-host new Probe --child ConfigMap` with one
//! thing changed: once `facts.change-state` says its ConfigMap is made, its
//! ChildReady also reads the Job `<parent>-check` (`facts.job`: the Job and
//! its Pods), which it never reads before, and is False (ChildRefused) when
//! that Job failed, True otherwise. So only a capture that answers
//! `change-state` as the operator would find it (the child made) and
//! evaluates the guest again keeps that read in its fixture and reaches
//! the live verdict.
//!
//! A parent served until Ready True (its check Job running), the host
//! stopped: its capture holds the Job and replays offline. The Job then
//! failed (the status the Job controller writes, written by the one helper
//! named for it: no Job controller runs beside the test API server), so
//! the live status, Ready True, is stale: the capture fails
//! naming ChildReady and Ready, live True against this pass False, and
//! writes nothing; with `--accept-difference` it writes the fixture, the
//! live status kept beside its expectation, which replays with the pass's
//! verdict, Ready False.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Instant;

use reconciler_host_harness::objects::{self, create};
use reconciler_host_harness::operator::{condition, eventually, get, resource_version, settle};
use reconciler_host_harness::paths::target_tmpdir;
use reconciler_host_harness::pgadmin_objects::{JobOutcome, end_as_job_controller};
use reconciler_host_harness::scaffold::{
    self, API_VERSION, KIND, MADE_TRUE, ProbeHost, host_command, install_crd_of, is_now, place,
    text,
};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// The parent; its child is the ConfigMap `<parent>-greeting`.
const PARENT: &str = "alpha";
/// The Job the guest's ChildReady reads once its child is made.
const CHECK: &str = "alpha-check";
/// The variant's package, and so its component's file.
const PACKAGE: &str = "probe-job-guest";
const LIB: &str = "probe_job_guest";
/// The variant's ChildReady once the ConfigMap is made, in place of the
/// scaffold's ([`MADE_TRUE`]): decided by the Job `<parent>-check`, read
/// only then. False takes a reason the scaffold's kind declares already.
const MADE_BY_JOB: &str = r#"{
            let check = format!("{}-check", meta.name);
            let failed = facts
                .job(&meta.namespace, &check)
                .ok()
                .flatten()
                .is_some_and(|job| matches!(job.state, reconciler_guest_sdk::JobState::Failed(_)));
            if failed {
                fails(CHILD_READY, CHILD_REFUSED, format!("{what} is made, and Job {check} failed"))
            } else {
                ok(CHILD_READY, format!("{what} is made, and Job {check} did not fail"))
            }
        }"#;
/// The scaffold reads nothing past its child; the variant reads Jobs and
/// their Pods (`facts.job`).
const READS_NOTHING: &str = "reads: vec![],";
const READS_JOBS: &str = r#"reads: vec![spec::reads(spec::kind_ref("batch", "v1", "Job")), spec::reads(spec::kind_ref("", "v1", "Pod"))],"#;

/// The scaffold of `new Probe --child ConfigMap` made into the variant
/// (its own package: another test builds `probe-guest` in the same target
/// directory), built outside the workspace (the guest profile), placed in
/// `dir/guests`: its component's path.
fn variant(dir: &Path) -> PathBuf {
    let crate_dir = dir.join("probe-job");
    scaffold::new_probe(&crate_dir);
    scaffold::rename_package(&crate_dir, PACKAGE);
    // The scaffold says ChildReady True in exactly one place, once its
    // child is made (and reads nothing there).
    scaffold::edit_once(&crate_dir, MADE_TRUE, MADE_BY_JOB);
    scaffold::edit_once(&crate_dir, READS_NOTHING, READS_JOBS);
    let bytes = scaffold::built(&crate_dir, LIB);
    let guests = dir.join("guests");
    let file = format!("{LIB}.wasm");
    place(&guests, &file, &bytes);
    guests.join(file)
}

fn admin() -> PathBuf {
    reconciler_testsupport::kubeconfig_path().expect("the test apiserver")
}

/// `reconciler-host capture Probe <ns>/alpha --guests <guests>
/// --namespaces <ns> -o <output>`, then `extra`.
async fn capture(cache: &Path, guests: &Path, ns: &str, output: &Path, extra: &[&str]) -> Output {
    let mut command = host_command(&admin(), cache);
    command
        .args(["capture", KIND, &format!("{ns}/{PARENT}"), "--guests"])
        .arg(guests)
        .args(["--namespaces", ns, "-o"])
        .arg(output)
        .args(extra);
    tokio::task::spawn_blocking(move || command.output().expect("the host binary runs"))
        .await
        .expect("the command's thread")
}

/// `reconciler-host test <wasm> <fixture>`.
async fn replay(cache: &Path, wasm: &Path, fixture: &Path) -> Output {
    let mut command = host_command(&admin(), cache);
    command.arg("test").arg(wasm).arg(fixture);
    tokio::task::spawn_blocking(move || command.output().expect("the host binary runs"))
        .await
        .expect("the command's thread")
}

/// The fixture's objects of `kind`: each one's name and whether it says
/// Failed=True.
fn held(fixture: &Value, kind: &str) -> Vec<(String, bool)> {
    fixture["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter(|o| o["kind"] == kind)
        .map(|o| {
            let failed = o["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Failed" && c["status"] == "True");
            (
                o["metadata"]["name"].as_str().expect("a name").to_owned(),
                failed,
            )
        })
        .collect()
}

/// A Probe served until Ready True, its ConfigMap made and its check Job
/// running; the host stopped. Its capture keeps the Job (read only once
/// the child is made) and replays; the Job failed, the capture fails on
/// the stale live status and writes nothing, unless accepted.
#[tokio::test]
async fn a_capture_evaluates_again_on_the_made_child_and_refuses_a_stale_live_status() {
    let started = Instant::now();
    // One path for every run: cargo's dep-info names the crate's sources
    // by their absolute paths, so a crate built from a new directory each
    // run is taken as fresh while a former run's directory is left (a
    // failed run's) and unchanged, and the former component is kept.
    let dir = target_tmpdir().join("capture-child");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("modules");

    // 1. The variant.
    let wasm = variant(&dir);
    let guests = wasm.parent().unwrap().to_path_buf();

    // 2. The CRD, the check Job (running: no Pod ever runs here) and the
    // parent, served until Ready True.
    let ns = TestNamespace::new("capture-child")
        .await
        .expect("a test namespace");
    let client = ns.client();
    let host = serve_until_ready(&client, ns.name(), &wasm, &guests, &cache).await;
    let probes = objects::api(&client, ns.name(), API_VERSION, KIND);
    let live = get(&probes, PARENT).await;

    // 3. The capture of the settled parent.
    let output = dir.join("alpha.yaml");
    captures_the_settled_parent(&cache, &guests, &wasm, ns.name(), &output).await;

    // 4. The Job failed, the host still stopped: the live status (Ready
    // True, for the parent's generation) is stale.
    end_as_job_controller(&client, ns.name(), CHECK, JobOutcome::Failed).await;
    let stale = dir.join("stale.yaml");
    refuses_the_stale_live_status(&cache, &guests, ns.name(), &stale).await;
    accepts_the_difference_when_asked(&cache, &guests, &wasm, ns.name(), &stale).await;

    // A capture writes nothing to the cluster: the parent's live status
    // is as the host left it.
    let after = get(&probes, PARENT).await;
    assert_eq!(
        resource_version(&after),
        resource_version(&live),
        "{}",
        after["status"]
    );
    println!("capture_child took {:?}", started.elapsed());
    drop(host);
    ns.cleanup().await.unwrap();
    if std::env::var_os("KEEP_CAPTURE").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The CRD, the check Job (running: no Pod ever runs here) and the parent,
/// served until Ready True with its ConfigMap made; then the host stopped,
/// cleanly.
async fn serve_until_ready(
    client: &kube::Client,
    ns: &str,
    wasm: &Path,
    guests: &Path,
    cache: &Path,
) -> ProbeHost {
    install_crd_of(wasm, client).await;
    create(
        client,
        ns,
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": CHECK},
               "spec": {"template": {"spec": {"restartPolicy": "Never",
                   "containers": [{"name": "check", "image": "busybox"}]}}}}),
    )
    .await;
    create(
        client,
        ns,
        json!({"apiVersion": API_VERSION, "kind": KIND,
               "metadata": {"name": PARENT}, "spec": {"greeting": "hi"}}),
    )
    .await;
    let probes = objects::api(client, ns, API_VERSION, KIND);
    let configmaps = objects::api(client, ns, "v1", "ConfigMap");
    let mut host = ProbeHost::start(ns, guests, cache, &[], "host").await;
    eventually("the Probe Ready, its ConfigMap made", async || {
        let p = get(&probes, PARENT).await;
        let made = configmaps
            .get_opt(&format!("{PARENT}-greeting"))
            .await
            .expect("reading a ConfigMap")
            .is_some();
        if made
            && is_now(&p, "Ready", "True", "AsExpected")
            && is_now(&p, "ChildReady", "True", "AsExpected")
        {
            Ok(())
        } else {
            Err((made, p["status"].clone()))
        }
    })
    .await;
    // Settled: nothing left to write; then the host stops, so each capture
    // is the only one passing the parent.
    settle().await;
    let stopped = host.stop();
    assert!(
        stopped.success(),
        "the host did not stop cleanly: {stopped}"
    );
    host
}

/// The capture of the settled parent succeeds on the pass's verdict, its
/// fixture holding every read of both evaluations, and replays offline.
async fn captures_the_settled_parent(
    cache: &Path,
    guests: &Path,
    wasm: &Path,
    ns: &str,
    output: &Path,
) {
    let out = capture(cache, guests, ns, output, &[]).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // The pass settles on the live status: the capture succeeds.
    assert!(out.status.success(), "capture failed:\n{stdout}\n{stderr}");
    // The printed conditions are the pass's: Ready True, its child
    // aspect True from the Job read once the child is made.
    assert!(stdout.contains("Ready=True/AsExpected"), "{stdout}");
    assert!(stdout.contains("ChildReady=True/AsExpected"), "{stdout}");
    let fixture_text = std::fs::read_to_string(output).expect("the fixture");
    let fixture: Value = serde_yaml::from_str(&fixture_text).expect("the fixture is YAML");
    // The fixture holds every read of both evaluations: the Job, not
    // failed, read only by the evaluation after the child is answered
    // Made...
    assert_eq!(
        held(&fixture, "Job"),
        [(CHECK.to_owned(), false)],
        "{fixture_text}"
    );
    // ... beside the child, read by the first.
    assert!(
        held(&fixture, "ConfigMap")
            .iter()
            .any(|(name, _)| *name == format!("{PARENT}-greeting")),
        "{fixture_text}"
    );
    // Its expectation is the pass's verdict: Ready and ChildReady True.
    assert_eq!(
        fixture["expect"]["conditions"]["Ready"],
        json!({"status": "True", "reason": "AsExpected"}),
        "{fixture_text}"
    );
    assert_eq!(
        fixture["expect"]["aspects"]["ChildReady"],
        json!({"status": "True", "reason": "AsExpected"}),
        "{fixture_text}"
    );
    // A live status the pass reproduces is no difference to note.
    assert!(
        !fixture_text.contains("# The live status differs"),
        "{fixture_text}"
    );
    // Replayed offline, the fixture reaches the live verdict.
    let replayed = replay(cache, wasm, output).await;
    let replayed_out = text(&replayed.stdout);
    assert!(
        replayed.status.success() && replayed_out.contains("1 passed, 0 failed"),
        "{replayed_out}\n{}",
        text(&replayed.stderr)
    );
}

/// A capture of the stale live status fails, naming each condition that
/// differs, and writes no fixture and no golden.
async fn refuses_the_stale_live_status(cache: &Path, guests: &Path, ns: &str, stale: &Path) {
    let out = capture(cache, guests, ns, stale, &[]).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // A live status the pass does not settle on fails the capture.
    assert!(
        !out.status.success(),
        "capture of a stale status succeeded:\n{stdout}\n{stderr}"
    );
    println!("the refused capture: {}\n{stderr}", out.status);
    assert!(
        stderr.contains("the live status differs from the pass captured"),
        "{stderr}"
    );
    // It names each condition that differs, live against this pass: the
    // child aspect (the Job read once the child is made) and Ready.
    assert!(
        stderr.contains("ChildReady: live True (AsExpected), this pass False (ChildRefused)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Ready: live True (AsExpected), this pass False ("),
        "{stderr}"
    );
    // A refused capture writes no fixture and no golden.
    assert!(
        !stale.exists(),
        "a fixture was written at {}",
        stale.display()
    );
    assert!(
        !stale.with_extension("golden").exists(),
        "a golden was written beside {}",
        stale.display()
    );
}

/// With --accept-difference, the capture writes the fixture anyway: the
/// live status kept beside the pass's verdict, which it replays to.
async fn accepts_the_difference_when_asked(
    cache: &Path,
    guests: &Path,
    wasm: &Path,
    ns: &str,
    stale: &Path,
) {
    let out = capture(cache, guests, ns, stale, &["--accept-difference"]).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // --accept-difference writes the fixture anyway.
    assert!(
        out.status.success(),
        "capture --accept-difference failed:\n{stdout}\n{stderr}"
    );
    // The printed conditions are the pass's: Ready False.
    assert!(stdout.contains("Ready=False/"), "{stdout}");
    assert!(stdout.contains("ChildReady=False/ChildRefused"), "{stdout}");
    // ... and it says which live conditions it accepted differing.
    assert!(
        stdout.contains("the live status differs (accepted): ChildReady"),
        "{stdout}"
    );
    let stale_text = std::fs::read_to_string(stale).expect("the accepted fixture");
    // The fixture keeps the live status beside its expectation, in a
    // comment block before `expect:`.
    let block = stale_text
        .find("# The live status differs from this pass (written with --accept-difference):")
        .unwrap_or_else(|| panic!("no comment block:\n{stale_text}"));
    let expect = stale_text
        .find("\nexpect:")
        .unwrap_or_else(|| panic!("no expect block:\n{stale_text}"));
    assert!(block < expect, "{stale_text}");
    assert!(
        stale_text[block..expect]
            .contains("ChildReady: live True (AsExpected), this pass False (ChildRefused)"),
        "{stale_text}"
    );
    let stale_fixture: Value = serde_yaml::from_str(&stale_text).expect("the fixture is YAML");
    // Its expectation is the pass's verdict, not the live status: Ready
    // and ChildReady False, from the Job now failed, which it holds.
    assert_eq!(
        stale_fixture["expect"]["conditions"]["Ready"]["status"], "False",
        "{stale_text}"
    );
    assert_eq!(
        stale_fixture["expect"]["aspects"]["ChildReady"],
        json!({"status": "False", "reason": "ChildRefused"}),
        "{stale_text}"
    );
    assert_eq!(
        held(&stale_fixture, "Job"),
        [(CHECK.to_owned(), true)],
        "{stale_text}"
    );
    // Replayed offline, it passes with the pass's verdict (Ready False).
    let replayed = replay(cache, wasm, stale).await;
    let replayed_out = text(&replayed.stdout);
    assert!(
        replayed.status.success() && replayed_out.contains("1 passed, 0 failed"),
        "{replayed_out}\n{}",
        text(&replayed.stderr)
    );
    let golden_text = std::fs::read_to_string(stale.with_extension("golden")).expect("the golden");
    let golden: Vec<Value> = serde_yaml::from_str(&golden_text).expect("the golden is YAML");
    assert_eq!(
        condition(&golden[0], "Ready").map(|c| c.status),
        Some("False".to_owned()),
        "{golden_text}"
    );
}
