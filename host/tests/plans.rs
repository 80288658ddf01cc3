//! Plans and approval end to end (issue 14, seed 003; docs/design.md
//! "Plans and approval"): the writer test guest (a Widget wants the
//! ConfigMap `<name>-config` and, with `spec.secret`, a generated Secret
//! `<name>-secret`) served by the host against the real API server, with
//! the plans' manifests of `deploy/` installed as they ship: the CRD's
//! rules and the admission policy judge every write, the host's included.
//! The host runs as the test server's admin; reviewers decide with the
//! built `reconciler-host plan` CLI.

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use reconciler_host_harness::identity::{self, apply_rbac};
use reconciler_host_harness::objects::{self, create, merge};
use reconciler_host_harness::operator::{
    Guests, Host, condition, events_about, eventually, fixture_of, get, install_crds, published,
    settle,
};
use reconciler_host_harness::plans::{self, install};
use reconciler_host_harness::widgets::{self, widgets};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

const WRITER: Guests = Guests {
    dir: "plans-tests",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

async fn namespace(prefix: &str) -> TestNamespace {
    fixture_of(&WRITER);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    install(&ns.client()).await;
    ns
}

fn widget(name: &str, spec: Value, annotations: Value) -> Value {
    let mut widget = widgets::widget(name, spec);
    widget["metadata"]["annotations"] = annotations;
    widget
}

fn plan_api(ns: &TestNamespace) -> Api<DynamicObject> {
    objects::api(
        &ns.client(),
        ns.name(),
        "reconciler.dev/v1alpha1",
        "ReconcilePlan",
    )
}

/// The namespace's plans, oldest first.
async fn all_plans(ns: &TestNamespace) -> Vec<Value> {
    let mut plans: Vec<Value> = plan_api(ns)
        .list(&Default::default())
        .await
        .expect("listing plans")
        .items
        .into_iter()
        .map(|p| serde_json::to_value(p).unwrap())
        .collect();
    plans.sort_by_key(|p| {
        (
            p["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            p["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .parse::<u64>()
                .unwrap_or(0),
        )
    });
    plans
}

fn phase(plan: &Value) -> &str {
    plan["status"]["phase"].as_str().unwrap_or("")
}

fn name(object: &Value) -> String {
    object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits until the namespace's plans have these phases, oldest first.
async fn plans_in(ns: &TestNamespace, phases: &[&str]) -> Vec<Value> {
    eventually(&format!("plans {phases:?}"), async || {
        let plans = all_plans(ns).await;
        let seen: Vec<&str> = plans.iter().map(phase).collect();
        if seen == phases {
            Ok(plans)
        } else {
            Err(seen.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
        }
    })
    .await
}

/// Waits until the Widget's condition `type_` has `status` and `reason`.
async fn widget_with(
    ns: &TestNamespace,
    name: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> Value {
    let api = widgets(ns);
    eventually(&format!("{name}: {type_}={status}/{reason}"), async || {
        let o = get(&api, name).await;
        match condition(&o, type_) {
            Some(c) if c.status == status && c.reason == reason => Ok(o),
            other => Err(other),
        }
    })
    .await
}

async fn exists(ns: &TestNamespace, kind: &str, name: &str) -> bool {
    objects::api(&ns.client(), ns.name(), "v1", kind)
        .get_opt(name)
        .await
        .expect("reading")
        .is_some()
}

/// Who the test server's admin kubeconfig is (the host runs as it, and so
/// does the reviewer CLI here).
async fn admin_username(ns: &TestNamespace) -> String {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    Api::<SelfSubjectReview>::all(ns.client())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("a SelfSubjectReview")
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .expect("a username")
}

fn plan_cli(args: &[&str]) -> (bool, String, String) {
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    plans::plan_cli(
        std::path::Path::new(env!("CARGO_BIN_EXE_reconciler-host")),
        &kubeconfig,
        args,
    )
}

/// A decision as `kubectl patch --subresource=status --type=merge` writes
/// it (no resourceVersion: it lands whatever happened meanwhile).
async fn decide_raw(ns: &TestNamespace, plan: &str, type_: &str, by: &str) {
    let patch = json!({"status": {
        "conditions": [{"type": type_, "status": "True", "reason": format!("{type_}ByReviewer"),
                        "message": "raw kubectl patch", "lastTransitionTime": "2026-12-01T00:00:00Z"}],
        "decidedBy": {"username": by},
    }});
    plan_api(ns)
        .patch_status(plan, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("deciding {plan}: {e}"));
}

/// Mode observe (the kind's setting): the changes are planned in a
/// ReconcilePlan and nothing else is written (no ConfigMap, no generated
/// Secret); the Widget says Ready=True/Planned and Drifted=True with the
/// plan's name and counts. An approval is accepted and ignored
/// (ApprovalIgnored). The annotation `reconciler.dev/mode: apply` then
/// supersedes the observe plan (ModeChanged) and the host, approval auto,
/// makes the changes under a plan it approves itself, in its own name.
#[tokio::test]
async fn observe_mode_writes_nothing_but_the_plan() {
    let ns = namespace("plans-observe").await;
    let host = Host::start_in(ns.name(), &["--mode", "Widget=observe"]).await;
    create(
        &ns.client(),
        ns.name(),
        widget("w", json!({"data": {"a": "1"}, "secret": true}), json!({})),
    )
    .await;
    let w = widget_with(&ns, "w", "Ready", "True", "Planned").await;
    let drifted = condition(&w, "Drifted").expect("Drifted");
    assert_eq!(
        (drifted.status.as_str(), drifted.reason.as_str()),
        ("True", "ChangesPending")
    );
    let plans = plans_in(&ns, &["Pending"]).await;
    let plan = &plans[0];
    assert_eq!(
        w["status"]["currentPlanRef"]["name"],
        plan["metadata"]["name"]
    );
    assert_eq!(
        w["status"]["changeSummary"],
        json!({"applies": 1, "deletions": 0, "generated": 1})
    );
    assert!(drifted.message.contains(&name(plan)), "{}", drifted.message);
    assert_eq!(plan["spec"]["mode"], "observe");
    assert_eq!(plan["spec"]["parent"]["uid"], w["metadata"]["uid"]);
    assert_eq!(
        plan["metadata"]["ownerReferences"][0]["uid"],
        w["metadata"]["uid"]
    );
    let effects = plan["spec"]["effects"]["inline"]
        .as_str()
        .expect("inline effects");
    assert!(
        effects.contains("name: w-config") && effects.contains("password: 32"),
        "{effects}"
    );
    assert!(
        plan["spec"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("rhd1-sha256:")
    );
    settle().await;
    assert!(
        !exists(&ns, "ConfigMap", "w-config").await,
        "observe makes no child"
    );
    assert!(
        !exists(&ns, "Secret", "w-secret").await,
        "observe generates no Secret"
    );
    let path = format!("/namespaces/{}/configmaps", ns.name());
    assert_eq!(host.requests("PATCH", &path), 0, "no apply sent");
    assert_eq!(
        host.requests("POST", &format!("/namespaces/{}/secrets", ns.name())),
        0
    );
    assert_eq!(
        all_plans(&ns).await.len(),
        1,
        "one plan, kept while the changes stay"
    );
    let events = events_about(&ns.client(), ns.name(), "w").await;
    assert_eq!(published(&events, "Normal", "PlanCreated"), 1, "{events:?}");

    // An approval on an observe plan: recorded, and nothing runs.
    let (ok, _, _) = plan_cli(&["approve", &name(plan), "-n", ns.name()]);
    assert!(ok);
    widget_with(&ns, "w", "ApprovalIgnored", "True", "ObserveMode").await;
    settle().await;
    assert!(!exists(&ns, "ConfigMap", "w-config").await);
    assert_eq!(phase(&get(&plan_api(&ns), &name(plan)).await), "Pending");

    // Mode apply by annotation: the observe plan is superseded and the
    // changes are made under a new plan the host approves itself.
    merge(
        &widgets(&ns),
        "w",
        json!({"metadata": {"annotations": {"reconciler.dev/mode": "apply"}}}),
    )
    .await;
    let plans = plans_in(&ns, &["Superseded", "Applied"]).await;
    let superseded = condition(&plans[0], "Superseded").expect("Superseded");
    assert_eq!(superseded.reason, "ModeChanged");
    assert_eq!(
        condition(&plans[0], "Approved").unwrap().reason,
        "ApprovedByReviewer",
        "the decision stays as the reviewer wrote it"
    );
    let applied = &plans[1];
    assert_eq!(
        condition(applied, "Approved").unwrap().reason,
        "AutoApproved"
    );
    assert_eq!(
        applied["status"]["decidedBy"]["username"].as_str(),
        Some(admin_username(&ns).await.as_str()),
        "the host's own authenticated name"
    );
    assert!(exists(&ns, "ConfigMap", "w-config").await);
    assert!(exists(&ns, "Secret", "w-secret").await);
    let w = eventually("Drifted gone with the direct mode", async || {
        let w = get(&widgets(&ns), "w").await;
        if condition(&w, "Drifted").is_none() && condition(&w, "ApprovalIgnored").is_none() {
            Ok(w)
        } else {
            Err(w["status"].clone())
        }
    })
    .await;
    assert!(w["status"].get("currentPlanRef").is_none());
    let events = events_about(&ns.client(), ns.name(), "w").await;
    assert_eq!(
        published(&events, "Normal", "PlanSuperseded"),
        1,
        "{events:?}"
    );
    assert_eq!(published(&events, "Normal", "PlanApplied"), 1, "{events:?}");
    host.finish();
}

/// Approval manual: nothing is made, no Secret generated, until a
/// reviewer approves; an annotation of an older approval mechanism does
/// nothing. The approval executes exactly the plan (Applied), the
/// generated Secret created only then; Drifted goes False.
#[tokio::test]
async fn manual_approval_executes_what_was_reviewed() {
    let ns = namespace("plans-manual").await;
    let host = Host::start_in(ns.name(), &["--approval", "Widget=manual"]).await;
    create(
        &ns.client(),
        ns.name(),
        widget("w", json!({"data": {"a": "1"}, "secret": true}), json!({})),
    )
    .await;
    widget_with(&ns, "w", "Drifted", "True", "ChangesPending").await;
    let plan = plans_in(&ns, &["Pending"]).await.remove(0);
    let p = name(&plan);
    assert_eq!(condition(&plan, "Approved").unwrap().status, "False");
    // Mode apply holding the change: Ready is not True (issue 29: `kubectl
    // wait --for=condition=Ready` waits for the approved change to be made).
    let w = widget_with(&ns, "w", "Ready", "False", "AwaitingApproval").await;
    let ready = condition(&w, "Ready").unwrap().message;
    assert!(
        ready.contains(&p) && ready.contains("awaiting approval"),
        "{ready}"
    );
    // The child's aspect says what holds it (`facts.change-state`), not
    // that it holds the data.
    let child = condition(&w, "ChildReady").unwrap();
    assert_eq!(
        (
            child.status.as_str(),
            child.reason.as_str(),
            child.message.as_str()
        ),
        (
            "False",
            "AwaitingApproval",
            "ConfigMap w-config is not made: its change awaits a reviewer's approval"
        )
    );

    // Retired approval annotations: ignored.
    merge(
        &plan_api(&ns),
        &p,
        json!({"metadata": {"annotations": {"reconciler.dev/approved": "true"}}}),
    )
    .await;
    merge(
        &widgets(&ns),
        "w",
        json!({"metadata": {"annotations": {"reconciler.dev/approved": "true"}}}),
    )
    .await;
    settle().await;
    assert!(!exists(&ns, "ConfigMap", "w-config").await);
    assert!(
        !exists(&ns, "Secret", "w-secret").await,
        "no Secret before approval"
    );
    assert_eq!(phase(&get(&plan_api(&ns), &p).await), "Pending");

    let (ok, out, _) = plan_cli(&["approve", &p, "-n", ns.name()]);
    assert!(ok, "{out}");
    let plans = plans_in(&ns, &["Applied"]).await;
    assert_eq!(name(&plans[0]), p, "the reviewed plan itself is executed");
    assert_eq!(
        plans[0]["status"]["decidedBy"]["username"].as_str(),
        Some(admin_username(&ns).await.as_str())
    );
    assert!(exists(&ns, "ConfigMap", "w-config").await);
    assert!(exists(&ns, "Secret", "w-secret").await);
    let w = widget_with(&ns, "w", "Drifted", "False", "InSync").await;
    assert!(w["status"].get("currentPlanRef").is_none());
    widget_with(&ns, "w", "Ready", "True", "AsExpected").await;
    settle().await;
    let events = events_about(&ns.client(), ns.name(), "w").await;
    for reason in ["PlanCreated", "PlanApproved", "PlanApplied"] {
        assert_eq!(
            published(&events, "Normal", reason),
            1,
            "{reason}: {events:?}"
        );
    }
    assert_eq!(all_plans(&ns).await.len(), 1, "no plan once converged");
    assert_eq!(
        condition(&get(&widgets(&ns), "w").await, "ChildReady")
            .unwrap()
            .message,
        "ConfigMap w-config holds the data"
    );

    // A spec change held for review: the child still has the old data, so
    // neither its aspect nor Ready says it holds what the spec asks for.
    merge(&widgets(&ns), "w", json!({"spec": {"data": {"a": "2"}}})).await;
    let w = widget_with(&ns, "w", "ChildReady", "False", "AwaitingApproval").await;
    assert_eq!(condition(&w, "Ready").unwrap().reason, "AwaitingApproval");
    assert_eq!(
        w["status"]["observedGeneration"],
        w["metadata"]["generation"]
    );
    host.finish();
}

/// A pending plan is revalidated every pass: a spec change that does not
/// change the effects keeps it (revalidatedGeneration advances); one that
/// does supersedes it (EffectsChanged) and a fresh plan holds the new
/// changes. An approval racing that supersede lands on a plan that is no
/// longer current: nothing executes. Changes that go away supersede the
/// plan with no replacement (EffectsGone).
#[tokio::test]
async fn a_stale_plan_is_superseded_and_its_late_approval_executes_nothing() {
    let ns = namespace("plans-supersede").await;
    let host = Host::start_in(ns.name(), &["--approval", "Widget=manual"]).await;
    create(
        &ns.client(),
        ns.name(),
        widget("w", json!({"data": {"a": "1"}}), json!({})),
    )
    .await;
    let first = plans_in(&ns, &["Pending"]).await.remove(0);
    assert_eq!(first["status"]["revalidatedGeneration"], 1);

    // Same effects: kept, revalidated.
    merge(&widgets(&ns), "w", json!({"spec": {"unrelated": 1}})).await;
    eventually("revalidated at generation 2", async || {
        let p = get(&plan_api(&ns), &name(&first)).await;
        if p["status"]["revalidatedGeneration"] == 2 {
            Ok(())
        } else {
            Err(p["status"].clone())
        }
    })
    .await;
    assert_eq!(all_plans(&ns).await.len(), 1);

    // Changed effects: superseded, a fresh plan; the late approval of the
    // first executes nothing.
    merge(&widgets(&ns), "w", json!({"spec": {"data": {"a": "2"}}})).await;
    let plans = plans_in(&ns, &["Superseded", "Pending"]).await;
    assert_eq!(
        condition(&plans[0], "Superseded").unwrap().reason,
        "EffectsChanged"
    );
    assert_eq!(
        condition(&plans[0], "Approved").unwrap().reason,
        "EffectsChanged"
    );
    decide_raw(
        &ns,
        &name(&plans[0]),
        "Approved",
        &admin_username(&ns).await,
    )
    .await;
    settle().await;
    assert!(
        !exists(&ns, "ConfigMap", "w-config").await,
        "a superseded plan never executes"
    );
    let w = get(&widgets(&ns), "w").await;
    assert_eq!(
        w["status"]["currentPlanRef"]["name"].as_str(),
        Some(name(&plans[1]).as_str())
    );

    // The approval of the current plan executes the new data.
    let (ok, _, _) = plan_cli(&["approve", &name(&plans[1]), "-n", ns.name()]);
    assert!(ok);
    plans_in(&ns, &["Superseded", "Applied"]).await;
    let cm = get(
        &objects::api(&ns.client(), ns.name(), "v1", "ConfigMap"),
        "w-config",
    )
    .await;
    assert_eq!(cm["data"], json!({"a": "2"}));

    // A Secret asked for, then not: its plan goes with no replacement.
    merge(&widgets(&ns), "w", json!({"spec": {"secret": true}})).await;
    plans_in(&ns, &["Superseded", "Applied", "Pending"]).await;
    merge(&widgets(&ns), "w", json!({"spec": {"secret": false}})).await;
    let plans = plans_in(&ns, &["Superseded", "Applied", "Superseded"]).await;
    assert_eq!(
        condition(&plans[2], "Superseded").unwrap().reason,
        "EffectsGone"
    );
    widget_with(&ns, "w", "Drifted", "False", "InSync").await;
    settle().await;
    assert_eq!(
        all_plans(&ns).await.len(),
        3,
        "no replacement for changes gone"
    );
    assert!(
        !exists(&ns, "Secret", "w-secret").await,
        "a superseded plan leaves no Secret"
    );
    let events = events_about(&ns.client(), ns.name(), "w").await;
    assert_eq!(
        published(&events, "Normal", "PlanSuperseded"),
        2,
        "{events:?}"
    );
    host.finish();
}

/// A denial: the plan is Rejected and the parent's current plan cleared;
/// the same changes are planned again only after the hold
/// (`--replan-after`), never at once; nothing is made meanwhile.
#[tokio::test]
async fn a_denied_plan_is_replanned_after_the_hold_not_at_once() {
    let ns = namespace("plans-deny").await;
    let host = Host::start_in(
        ns.name(),
        &["--approval", "Widget=manual", "--replan-after", "4s"],
    )
    .await;
    create(
        &ns.client(),
        ns.name(),
        widget("w", json!({"data": {"a": "1"}, "secret": true}), json!({})),
    )
    .await;
    let p = name(&plans_in(&ns, &["Pending"]).await[0]);
    let (ok, _, _) = plan_cli(&["deny", &p, "-n", ns.name(), "--reason", "not now"]);
    assert!(ok);
    let rejected = plans_in(&ns, &["Rejected"]).await.remove(0);
    assert_eq!(condition(&rejected, "Denied").unwrap().message, "not now");
    let w = eventually("the current plan cleared", async || {
        let w = get(&widgets(&ns), "w").await;
        if w["status"].get("currentPlanRef").is_none() {
            Ok(w)
        } else {
            Err(w["status"].clone())
        }
    })
    .await;
    assert_eq!(condition(&w, "Drifted").unwrap().status, "True");
    // Denied: Ready says so (not that the change is on its way), and so
    // does the child's aspect.
    let w = widget_with(&ns, "w", "Ready", "False", "ChangesDenied").await;
    let ready = condition(&w, "Ready").unwrap().message;
    assert!(ready.contains(&p) && ready.contains("denied"), "{ready}");
    let child = condition(&w, "ChildReady").unwrap();
    assert_eq!(
        (
            child.status.as_str(),
            child.reason.as_str(),
            child.message.as_str()
        ),
        (
            "False",
            "ChangesDenied",
            "ConfigMap w-config is not made: a reviewer denied its change"
        )
    );
    let plans = plans_in(&ns, &["Rejected", "Pending"]).await;
    let denied_at: jiff::Timestamp = condition(&plans[0], "Denied")
        .unwrap()
        .last_transition_time
        .parse()
        .unwrap();
    let replanned: jiff::Timestamp = plans[1]["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        replanned.duration_since(denied_at) >= jiff::SignedDuration::from_secs(4),
        "denied at {denied_at}, planned again at {replanned}"
    );
    assert_eq!(
        plans[0]["spec"]["digest"], plans[1]["spec"]["digest"],
        "the same changes"
    );
    assert!(!exists(&ns, "ConfigMap", "w-config").await);
    assert!(
        !exists(&ns, "Secret", "w-secret").await,
        "a rejected plan leaves no Secret"
    );
    // The replacement's PlanCreated follows its plan's write (Events go
    // out once the writes that make them due are made).
    let events = eventually("the replacement's PlanCreated", async || {
        let events = events_about(&ns.client(), ns.name(), "w").await;
        if published(&events, "Normal", "PlanCreated") >= 2 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    assert_eq!(
        published(&events, "Normal", "PlanRejected"),
        1,
        "{events:?}"
    );
    assert_eq!(published(&events, "Normal", "PlanCreated"), 2, "{events:?}");
    host.finish();
}

/// Retention: at most `--plan-retention Applied=2` Applied plans of a
/// parent are kept, the oldest deleted first, but for one annotated
/// `reconciler.dev/keep: "true"`.
#[tokio::test]
async fn retention_keeps_a_bound_per_phase_and_what_is_marked_to_keep() {
    let ns = namespace("plans-retention").await;
    let host = Host::start_in(ns.name(), &["--plan-retention", "Applied=2"]).await;
    create(
        &ns.client(),
        ns.name(),
        widget("w", json!({"data": {"v": "0"}}), json!({})),
    )
    .await;
    let first = plans_in(&ns, &["Applied"]).await.remove(0);
    merge(
        &plan_api(&ns),
        &name(&first),
        json!({"metadata": {"annotations": {"reconciler.dev/keep": "true"}}}),
    )
    .await;
    for v in ["1", "2", "3", "4"] {
        merge(&widgets(&ns), "w", json!({"spec": {"data": {"v": v}}})).await;
        eventually(&format!("v={v} applied"), async || {
            let cm = get(
                &objects::api(&ns.client(), ns.name(), "v1", "ConfigMap"),
                "w-config",
            )
            .await;
            if cm["data"]["v"] == v {
                Ok(())
            } else {
                Err(cm["data"].clone())
            }
        })
        .await;
    }
    let plans = plans_in(&ns, &["Applied", "Applied", "Applied"]).await;
    assert_eq!(name(&plans[0]), name(&first), "the kept plan stays");
    let events = events_about(&ns.client(), ns.name(), "w").await;
    assert_eq!(published(&events, "Normal", "PlanApplied"), 5, "{events:?}");
    host.finish();
}

/// `reconciler-host capture` of the Widget `w` of `ns` under `gates`
/// (`run`'s flags), writing `<dir>/<file>.yaml`: its fixture, golden and
/// stdout; then the fixture replayed by `reconciler-host test`.
fn capture(ns: &TestNamespace, gates: &[&str], file: &str) -> (Value, Vec<Value>, String) {
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let (out, output) = capture_as(ns, &kubeconfig, gates, file);
    let f = fixture_of(&WRITER);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "capture failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay = std::process::Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
        .env("NO_COLOR", "1")
        .arg("--cache-dir")
        .arg(&f.cache_dir)
        .arg("test")
        .arg(f.guests_dir.join("writer_guest.wasm"))
        .arg(&output)
        .output()
        .expect("the host binary runs");
    let replayed = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success() && replayed.contains("1 passed, 0 failed"),
        "{replayed}\n{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let read = |path: &std::path::Path| std::fs::read_to_string(path).expect("a captured file");
    let fixture = serde_yaml::from_str(&read(&output)).expect("the fixture is YAML");
    let golden = serde_yaml::from_str(&read(&output.with_extension("golden"))).expect("YAML");
    (fixture, golden, stdout)
}

/// `reconciler-host capture` of the Widget `w` of `ns` with `kubeconfig`,
/// into `<file>.yaml` of a scratch directory: its output, and that path.
fn capture_as(
    ns: &TestNamespace,
    kubeconfig: &std::path::Path,
    gates: &[&str],
    file: &str,
) -> (std::process::Output, std::path::PathBuf) {
    let f = fixture_of(&WRITER);
    let dir = reconciler_host_harness::paths::target_tmpdir()
        .join("plans-capture")
        .join(ns.name());
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let output = dir.join(format!("{file}.yaml"));
    let _ = std::fs::remove_file(&output);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
        .env("KUBECONFIG", kubeconfig)
        .env("NO_COLOR", "1")
        .arg("--cache-dir")
        .arg(&f.cache_dir)
        .args(["capture", "Widget", &format!("{}/w", ns.name())])
        .arg("--guests")
        .arg(&f.guests_dir)
        .args(["--namespaces", ns.name(), "-o"])
        .arg(&output)
        .args(gates)
        .output()
        .expect("the host binary runs");
    (out, output)
}

/// `capture` runs the pass the operator runs, gates included (issue 32):
/// a Widget whose plan awaits approval (approval manual) is captured with
/// the kind's gates as `run` was given them and its current plan; the
/// replay holds the change for approval, creates no second plan and writes
/// nothing. Captured as if approval were auto, the same plan is executed
/// (PlanApplied, then Ready True); after a spec change the plan describes other changes:
/// left out and said so, and the replay plans them afresh.
#[tokio::test]
async fn a_capture_states_the_gates_and_the_parents_current_plan() {
    let ns = namespace("plans-capture").await;
    let host = Host::start_in(ns.name(), &["--approval", "Widget=manual"]).await;
    create(
        &ns.client(),
        ns.name(),
        widget("w", json!({"data": {"a": "1"}}), json!({})),
    )
    .await;
    widget_with(&ns, "w", "Ready", "False", "AwaitingApproval").await;
    let p = name(&plans_in(&ns, &["Pending"]).await[0]);
    settle().await;
    host.finish();
    let live = get(&widgets(&ns), "w").await;
    let plans_before = all_plans(&ns).await;

    let (fixture, golden, _) = capture(&ns, &["--approval", "Widget=manual"], "manual");
    assert_eq!(
        fixture["plans"],
        json!({"approval": "manual", "replanAfterSeconds": 60,
               "current": {"name": p, "phase": "Pending", "mode": "apply"}}),
        "the gates as given and the parent's plan"
    );
    let pass = &golden[0];
    assert_eq!(pass["held"], "awaitingApproval", "{pass}");
    assert_eq!(pass["events"], json!([]), "no second plan: {pass}");
    assert_eq!(
        pass["writes"], false,
        "the live status is the pass's: {pass}"
    );
    assert_eq!(
        get(&widgets(&ns), "w").await["metadata"]["resourceVersion"],
        live["metadata"]["resourceVersion"],
        "the capture wrote no status"
    );
    assert_eq!(all_plans(&ns).await, plans_before, "nor any plan");
    assert!(!exists(&ns, "ConfigMap", "w-config").await);

    // Captured as if the kind's approval were auto: the same plan runs. The
    // live status (held for approval) is not what that pass settles on, so
    // the capture says so and is written only when that is accepted.
    let (fixture, golden, stdout) = capture(&ns, &["--accept-difference"], "auto");
    assert!(
        stdout.contains(
            "the live status differs (accepted): Ready: live False (AwaitingApproval), this pass True (AsExpected)"
        ),
        "{stdout}"
    );
    assert_eq!(
        fixture["plans"],
        json!({"replanAfterSeconds": 60,
               "current": {"name": p, "phase": "Pending", "mode": "apply"}})
    );
    let pass = &golden[0];
    assert!(pass.get("held").is_none(), "{pass}");
    let reasons: Vec<&Value> = pass["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| &e["reason"])
        .collect();
    // The plan executed, then Ready turning True says so (seed 000: a
    // Normal Event when Ready becomes True).
    assert_eq!(
        reasons,
        [&json!("PlanApplied"), &json!("AsExpected")],
        "{pass}"
    );
    assert_eq!(pass["writes"], true, "{pass}");

    // The spec changed while no host ran: the plan is of other changes.
    merge(&widgets(&ns), "w", json!({"spec": {"data": {"a": "2"}}})).await;
    let (fixture, golden, stdout) = capture(&ns, &["--approval", "Widget=manual"], "changed");
    assert!(
        stdout.contains(&format!("left out: ReconcilePlan {p} (Pending)"))
            && stdout.contains("EffectsChanged"),
        "{stdout}"
    );
    assert!(
        fixture["plans"].get("current").is_none(),
        "{}",
        fixture["plans"]
    );
    let pass = &golden[0];
    assert_eq!(pass["held"], "awaitingApproval", "{pass}");
    assert_eq!(pass["events"][0]["reason"], "PlanCreated", "{pass}");
    ns.cleanup().await.unwrap();
}

/// A user who may read a Widget and what its guest reads, but not list
/// ReconcilePlans, gets no fixture that leaves the parent's plan out: the
/// capture fails naming what they may not read, and writes nothing. Once
/// they may list plans, the same capture succeeds.
#[tokio::test]
async fn a_capture_by_a_user_who_may_not_list_plans_names_them_and_writes_nothing() {
    let ns = namespace("plans-capture-rbac").await;
    let client = ns.client();
    create(
        &client,
        ns.name(),
        widget("w", json!({"data": {"a": "1"}}), json!({})),
    )
    .await;
    let user = "capture-no-plans";
    let reads = |plans: bool| {
        let mut rules = vec![
            json!({"apiGroups": ["testing.reconciler.dev"], "resources": ["widgets"],
                   "verbs": ["get", "list", "watch"]}),
            json!({"apiGroups": [""], "resources": ["configmaps", "secrets"],
                   "verbs": ["get", "list", "watch"]}),
        ];
        if plans {
            rules.push(
                json!({"apiGroups": ["reconciler.dev"], "resources": ["reconcileplans"],
                              "verbs": ["get", "list"]}),
            );
        }
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "capturer", "namespace": ns.name()}, "rules": rules})
    };
    apply_rbac(&client, reads(false)).await;
    apply_rbac(
        &client,
        identity::role_binding(ns.name(), "capturer", "Role", "capturer", user),
    )
    .await;
    let dir = reconciler_host_harness::paths::target_tmpdir().join("plans-capture-rbac");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let kubeconfig = identity::kubeconfig_as(user, &dir);

    let (out, output) = capture_as(&ns, &kubeconfig, &[], "refused");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "forbidden: you may not list the ReconcilePlans of Widget {}/w",
            ns.name()
        )),
        "{stderr}"
    );
    assert!(!output.exists(), "no fixture written");
    assert!(
        !output.with_extension("golden").exists(),
        "no golden written"
    );

    apply_rbac(&client, reads(true)).await;
    let (out, output) = capture_as(&ns, &kubeconfig, &[], "allowed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(output.exists());
    ns.cleanup().await.unwrap();
}

/// The plans' CRD installed while the host runs: the host looks for the
/// kind when a pass has changes a plan would record (at most every 10 s;
/// nothing at steady state), says once that it is served, and plans from
/// then on: a change made before had no plan record (none could be
/// written), the change that made it look may not either, a change made
/// after has one. On an API server of the test's own, so the other tests'
/// plans are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_installed_while_the_host_runs_are_used_from_then_on() {
    use reconciler_host_harness::paths;
    use reconciler_host_harness::proxy::RestartableServer;
    fixture_of(&WRITER);
    let dir = paths::target_tmpdir().join(format!("plans-later-{}", std::process::id()));
    let server = tokio::task::block_in_place(|| RestartableServer::start(&dir))
        .expect("an API server of the test's own");
    let admin = server.client().await.expect("an admin client");
    for crd in reconciler_host_harness::operator::fixture().crds.clone() {
        reconciler_testsupport::install_crd(&admin, crd)
            .await
            .expect("installing a CRD");
    }
    let ns = TestNamespace::on(admin.clone(), "plans-later")
        .await
        .expect("a test namespace");
    let host = Host::start_with(
        &server.kubeconfig(),
        &["--namespaces", ns.name()],
        "plans-later",
    )
    .await;
    assert!(
        host.log_text().contains("ReconcilePlans are not served"),
        "{}",
        host.log_text()
    );
    create(
        &admin,
        ns.name(),
        widget("before", json!({"data": {"n": "1"}}), json!({})),
    )
    .await;
    eventually("before's ConfigMap made", async || {
        if exists(&ns, "ConfigMap", "before-config").await {
            Ok(())
        } else {
            Err(())
        }
    })
    .await;

    install(&admin).await;
    create(
        &admin,
        ns.name(),
        widget("after", json!({"data": {"n": "1"}}), json!({})),
    )
    .await;
    let served = "served now (its CRD was installed)";
    eventually("the host noticed the plans", async || {
        if host.log_text().contains(served) {
            Ok(())
        } else {
            Err(())
        }
    })
    .await;
    merge(
        &widgets(&ns),
        "after",
        json!({"spec": {"data": {"n": "2"}}}),
    )
    .await;
    let plans = eventually("after's change planned", async || {
        let plans = all_plans(&ns).await;
        if plans.is_empty() {
            Err(plans)
        } else {
            Ok(plans)
        }
    })
    .await;
    let planned: Vec<&str> = plans
        .iter()
        .map(|p| p["spec"]["parent"]["name"].as_str().unwrap_or_default())
        .collect();
    assert!(planned.iter().all(|p| *p == "after"), "{planned:?}");
    assert_eq!(host.log_text().matches(served).count(), 1);
    host.finish();
    drop(server);
}
