//! The guardrails of plans and ownership against users who try (issue 30):
//! the host serving the writer test guest (a Widget wants the ConfigMap
//! `<name>-config` holding `spec.data`) under approval `manual`, the plans'
//! manifests of `deploy/` installed as they ship, and every attack made as
//! the user who would make it (impersonated, bound to the shipped roles):
//!
//! - a reviewer (`reconciler-plan-reviewer` only) writes phase Applying on
//!   a pending plan, a denied one, an observe one: refused by admission,
//!   nothing made;
//! - a plan reads Applying without a decision (written by a holder of
//!   `manage`, past the policy): the host supersedes it with a Warning,
//!   nothing made;
//! - a plan reads Rejected without a decision (written by a holder of the
//!   host's role, `manage`): the same changes are still held for
//!   `--replan-after`, no new plan made at once (issue 49);
//! - an editor of ConfigMaps forges the effects a reviewer reads: the
//!   ConfigMap is immutable, a replaced one is caught by `plan show` and
//!   `plan approve`, and an approval written by hand executes nothing;
//! - a plan deleted while Applying: execution stops before its next
//!   change, and a Warning says so;
//! - a requester who may create Widgets but not change ConfigMaps names a
//!   Widget after a hand-made ConfigMap: it is not taken over
//!   (ResourceNotOwned) until whoever may change it consents;
//! - random sequences of status writes by reviewer, approver, stranger
//!   and a `manage` holder: nothing is ever made without the approver's
//!   Approved.
//!
//! The passing cases the issue lists stay covered where they were:
//! self-approval and a forged decidedBy (plans_admission.rs,
//! `decided_by_naming_someone_else_is_refused`,
//! `a_decision_by_a_user_without_approve_is_refused`), Approved flipped to
//! Denied (`a_decision_cannot_be_changed_once_written`), a late approval of
//! a superseded plan, approve-then-change-spec and retired approval
//! annotations (plans.rs), an approved observe plan
//! (`observe_mode_writes_nothing_but_the_plan`).

use std::path::PathBuf;

use kube::Api;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use reconciler_host_harness::identity::{self, apply_rbac, role_binding};
use reconciler_host_harness::objects::{self, create, merge};
use reconciler_host_harness::operator::{
    Guests, Host, Published, condition, events_about, eventually, fixture_of, free_addr, get,
    http_get, install_crds, published, settle,
};
use reconciler_host_harness::paths::target_tmpdir;
use reconciler_host_harness::plans::{self, install};
use reconciler_host_harness::widgets::API_VERSION;
use reconciler_testsupport::{Access, TestNamespace, await_access, client_as};
use serde_json::{Value, json};

const WRITER: Guests = Guests {
    dir: "plan-attacks-tests",
    crates: &["writer-guest"],
    settings: &[],
    // The forged effects ConfigMap, caught before the plan is executed.
    expected_warnings: &["the plan's effects are not the ones it recorded"],
};

/// May read plans and patch their status (reconciler-plan-reviewer): no
/// authority to decide.
const REVIEWER: &str = "rita@example.com";
/// A reviewer who may also approve Widgets, and read the namespace's
/// ConfigMaps (a large plan's effects).
const APPROVER: &str = "alma@example.com";
/// May edit the namespace's ConfigMaps (as the default `edit` role does).
const EDITOR: &str = "ed@example.com";
/// A reviewer who may also edit the namespace's ConfigMaps: `plan show`
/// asks the API server for a dry run as them.
const OPERATOR: &str = "otto@example.com";
/// May create Widgets, nothing else: not a ConfigMap's writer.
const REQUESTER: &str = "rex@example.com";
/// Holds nothing.
const STRANGER: &str = "sam@example.com";
/// Holds the host's own role (reconciler-plan-manager): `manage` on plans,
/// past the admission policy's approve check.
const MANAGER: &str = "max@example.com";

/// A namespace with the plans' manifests and the users' grants, the host
/// not started yet.
struct Scene {
    ns: TestNamespace,
    dir: PathBuf,
}

impl Scene {
    async fn new(prefix: &str) -> Scene {
        fixture_of(&WRITER);
        let ns = TestNamespace::new(prefix).await.expect("a test namespace");
        let client = ns.client();
        install_crds(&client).await;
        install(&client).await;
        let n = ns.name();
        apply_rbac(
            &client,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "plan-attacks-widget-approver"},
                   "rules": [{"apiGroups": ["testing.reconciler.dev"], "resources": ["widgets"],
                              "verbs": ["approve"]}]}),
        )
        .await;
        apply_rbac(
            &client,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "widget-requester", "namespace": n},
                   "rules": [{"apiGroups": ["testing.reconciler.dev"], "resources": ["widgets"],
                              "verbs": ["create", "get", "list", "watch", "delete"]},
                             {"apiGroups": [""], "resources": ["configmaps"],
                              "verbs": ["get", "list", "watch"]}]}),
        )
        .await;
        apply_rbac(
            &client,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "configmap-editor", "namespace": n},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                              "verbs": ["get", "list", "create", "update", "patch", "delete"]}]}),
        )
        .await;
        apply_rbac(
            &client,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "configmap-reader", "namespace": n},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
        )
        .await;
        for (user, kind, role) in [
            (REVIEWER, "ClusterRole", "reconciler-plan-reviewer"),
            (APPROVER, "ClusterRole", "reconciler-plan-reviewer"),
            (APPROVER, "ClusterRole", "plan-attacks-widget-approver"),
            (APPROVER, "Role", "configmap-reader"),
            (EDITOR, "Role", "configmap-editor"),
            (OPERATOR, "ClusterRole", "reconciler-plan-reviewer"),
            (OPERATOR, "Role", "configmap-editor"),
            (REQUESTER, "Role", "widget-requester"),
            (MANAGER, "ClusterRole", "reconciler-plan-manager"),
        ] {
            let name = format!("{}-{role}", user.split('@').next().unwrap());
            apply_rbac(&client, role_binding(n, &name, kind, role, user)).await;
        }
        let status = Access {
            verb: "patch",
            group: "reconciler.dev",
            resource: "reconcileplans/status",
            namespace: Some(n),
        };
        let approve = Access {
            verb: "approve",
            group: "testing.reconciler.dev",
            resource: "widgets",
            namespace: Some(n),
        };
        let edit = Access {
            verb: "delete",
            group: "",
            resource: "configmaps",
            namespace: Some(n),
        };
        let request = Access {
            verb: "create",
            group: "testing.reconciler.dev",
            resource: "widgets",
            namespace: Some(n),
        };
        let manage = Access {
            verb: "manage",
            group: "reconciler.dev",
            resource: "reconcileplans",
            namespace: Some(n),
        };
        for (user, wanted) in [
            (REVIEWER, vec![status]),
            (APPROVER, vec![status, approve]),
            (EDITOR, vec![edit]),
            (OPERATOR, vec![status, edit]),
            (REQUESTER, vec![request]),
            (MANAGER, vec![status, manage]),
        ] {
            await_access(&client, user, &[], &wanted)
                .await
                .expect("the grants");
        }
        let dir = target_tmpdir().join(n);
        std::fs::create_dir_all(&dir).unwrap();
        Scene { ns, dir }
    }

    fn name(&self) -> &str {
        self.ns.name()
    }

    async fn host(&self) -> Host {
        Host::start_in(self.name(), &["--approval", "Widget=manual"]).await
    }

    async fn as_user(&self, user: &str) -> kube::Client {
        client_as(user, &[]).await.expect("an impersonating client")
    }

    fn widgets(&self) -> Api<DynamicObject> {
        objects::api(&self.ns.client(), self.name(), API_VERSION, "Widget")
    }

    fn plans_as(&self, client: kube::Client) -> Api<DynamicObject> {
        objects::api(
            &client,
            self.name(),
            "reconciler.dev/v1alpha1",
            "ReconcilePlan",
        )
    }

    fn plans(&self) -> Api<DynamicObject> {
        self.plans_as(self.ns.client())
    }

    fn config_maps_as(&self, client: kube::Client) -> Api<DynamicObject> {
        objects::api(&client, self.name(), "v1", "ConfigMap")
    }

    async fn widget(&self, name: &str, data: Value, annotations: Value) {
        create(
            &self.ns.client(),
            self.name(),
            json!({"apiVersion": API_VERSION, "kind": "Widget",
                   "metadata": {"name": name, "annotations": annotations},
                   "spec": {"data": data}}),
        )
        .await;
    }

    /// The Widget `parent`'s plans, oldest first.
    async fn plans_of(&self, parent: &str) -> Vec<Value> {
        let mut plans: Vec<Value> = self
            .plans()
            .list(&Default::default())
            .await
            .expect("listing plans")
            .items
            .into_iter()
            .map(|p| serde_json::to_value(p).unwrap())
            .filter(|p| p["spec"]["parent"]["name"] == parent)
            .collect();
        plans.sort_by_key(|p| {
            p["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .parse::<u64>()
                .unwrap_or(0)
        });
        plans.sort_by_key(|p| p["metadata"]["creationTimestamp"].to_string());
        plans
    }

    /// Waits until the Widget `parent`'s plans have these phases.
    async fn plans_in(&self, parent: &str, phases: &[&str]) -> Vec<Value> {
        eventually(&format!("plans of {parent}: {phases:?}"), async || {
            let plans = self.plans_of(parent).await;
            let seen: Vec<String> = plans.iter().map(|p| phase(p).to_owned()).collect();
            if seen == phases { Ok(plans) } else { Err(seen) }
        })
        .await
    }

    async fn config_map(&self, name: &str) -> Option<Value> {
        self.config_maps_as(self.ns.client())
            .get_opt(name)
            .await
            .expect("reading a ConfigMap")
            .map(|c| serde_json::to_value(c).unwrap())
    }

    /// The Widgets `pending` and `denied`, each with its plan: the first
    /// awaiting a decision, the second denied by the approver (Rejected).
    /// The plans' names.
    async fn pending_and_denied(&self) -> (String, String) {
        self.widget("pending", json!({"a": "1"}), json!({})).await;
        self.widget("denied", json!({"a": "1"}), json!({})).await;
        let pending = name_of(&self.plans_in("pending", &["Pending"]).await[0]);
        let denied = name_of(&self.plans_in("denied", &["Pending"]).await[0]);
        let approver = self.plans_as(self.as_user(APPROVER).await);
        patch_status(&approver, &denied, &decision("Denied", APPROVER))
            .await
            .expect("the approver denies");
        self.plans_in("denied", &["Rejected"]).await;
        (pending, denied)
    }

    /// Asserts the Widget `widget` has nothing made (no ConfigMap, no
    /// PlanApplied Event); its Events.
    async fn nothing_made(&self, widget: &str) -> Vec<Published> {
        assert!(
            self.config_map(&format!("{widget}-config")).await.is_none(),
            "{widget}: nothing is made"
        );
        let events = events_about(&self.ns.client(), self.name(), widget).await;
        assert_eq!(published(&events, "Normal", "PlanApplied"), 0, "{events:?}");
        events
    }

    fn plan_cli(&self, user: &str, args: &[&str]) -> (bool, String, String) {
        let kubeconfig = identity::kubeconfig_as(user, &self.dir);
        plans::plan_cli(
            std::path::Path::new(env!("CARGO_BIN_EXE_reconciler-host")),
            &kubeconfig,
            args,
        )
    }

    async fn finish(self, host: Host) {
        host.finish();
        self.ns.cleanup().await.expect("cleanup");
    }
}

fn phase(plan: &Value) -> &str {
    plan["status"]["phase"].as_str().unwrap_or("")
}

fn name_of(object: &Value) -> String {
    object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn plan_condition<'a>(plan: &'a Value, type_: &str) -> Option<&'a Value> {
    plan["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// A decision as `kubectl patch --subresource=status --type=merge` writes
/// it (the README's command), naming `by`, made now.
fn decision(type_: &str, by: &str) -> Value {
    let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).unwrap();
    json!({"status": {
        "conditions": [{"type": type_, "status": "True", "reason": format!("{type_}ByReviewer"),
                        "message": "by hand", "lastTransitionTime": now.to_string()}],
        "decidedBy": {"username": by},
    }})
}

async fn patch_status(
    api: &Api<DynamicObject>,
    name: &str,
    patch: &Value,
) -> Result<DynamicObject, kube::Error> {
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
}

fn refused_with(answer: Result<DynamicObject, kube::Error>, code: u16, says: &str) {
    match answer {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, code, "{e:?}");
            assert!(e.message.contains(says), "{says:?} not in {:?}", e.message);
        }
        other => panic!("expected a refusal ({code}), got {other:?}"),
    }
}

/// Issue 30, attack 1: a reviewer writes phase Applying on a pending plan,
/// on one the approver denied, and on an observe plan. Each write is
/// refused by admission, naming the rule; the phases stay the host's; no
/// child is made and no plan is applied.
#[tokio::test]
async fn a_reviewer_writing_applying_executes_nothing() {
    let scene = Scene::new("attack-phase").await;
    let host = scene.host().await;
    scene
        .widget(
            "observed",
            json!({"a": "1"}),
            json!({"reconciler.dev/mode": "observe"}),
        )
        .await;
    let (pending, denied) = scene.pending_and_denied().await;
    let observed = name_of(&scene.plans_in("observed", &["Pending"]).await[0]);

    let reviewer = scene.plans_as(scene.as_user(REVIEWER).await);
    let applying = json!({"status": {"phase": "Applying"}});
    for (plan, from) in [
        (&pending, "Pending"),
        (&denied, "Rejected"),
        (&observed, "Pending"),
    ] {
        refused_with(
            patch_status(&reviewer, plan, &applying).await,
            403,
            &format!("\"{REVIEWER}\" may not change it from \"{from}\" to \"Applying\""),
        );
    }
    settle().await;
    for (widget, want) in [
        ("pending", "Pending"),
        ("denied", "Rejected"),
        ("observed", "Pending"),
    ] {
        let plans = scene.plans_of(widget).await;
        assert_eq!(plans.len(), 1, "{widget}: {plans:?}");
        assert_eq!(phase(&plans[0]), want, "{widget}");
        scene.nothing_made(widget).await;
    }
    scene.finish(host).await;
}

/// Issue 30, the host's side of attack 1: a holder of `manage` (past the
/// policy) writes Applying on a pending plan and on a denied one. The host
/// does not execute a phase: it supersedes each (PhaseNotByHost) with one
/// Warning PlanSuperseded naming why, makes nothing, and plans the
/// Widgets' changes anew for review.
#[tokio::test]
async fn a_plan_reading_applying_without_a_decision_is_superseded() {
    let scene = Scene::new("attack-tampered").await;
    let host = scene.host().await;
    let (pending, denied) = scene.pending_and_denied().await;

    let applying = json!({"status": {"phase": "Applying"}});
    for plan in [&pending, &denied] {
        patch_status(&scene.plans(), plan, &applying)
            .await
            .expect("a manage holder writes the phase");
    }
    let plans = scene.plans_in("pending", &["Superseded", "Pending"]).await;
    let superseded = plan_condition(&plans[0], "Superseded").expect("Superseded");
    assert_eq!(superseded["reason"], "PhaseNotByHost");
    assert_eq!(
        plan_condition(&plans[0], "Approved").unwrap()["status"],
        "False"
    );
    // The denial no longer reads Rejected: its changes are planned anew,
    // for review again.
    let plans = scene.plans_in("denied", &["Superseded", "Pending"]).await;
    assert_eq!(
        plan_condition(&plans[0], "Denied").unwrap()["status"],
        "True",
        "the decision stays as recorded"
    );
    settle().await;
    for widget in ["pending", "denied"] {
        let events = scene.nothing_made(widget).await;
        let warnings: Vec<_> = events
            .iter()
            .filter(|e| e.type_ == "Warning" && e.reason == "PlanSuperseded")
            .collect();
        assert_eq!(warnings.len(), 1, "{widget}: {events:?}");
        assert!(
            warnings[0]
                .note
                .contains("a phase the host did not write is never a reason to act"),
            "{warnings:?}"
        );
    }
    scene.finish(host).await;
}

/// Issue 49: a holder of `manage` (the host's role, past the policy)
/// writes phase Rejected on a pending plan, with no decision and so no
/// decision time. A rejection holds the same changes for `--replan-after`
/// (1m here), however it came to be: the host holds them from when it saw
/// the rejection, the Widget says they are held, and no new plan is made
/// in the window after (before, one was made at once), nothing either.
#[tokio::test]
async fn a_rejection_written_without_a_decision_still_holds_the_changes() {
    let scene = Scene::new("attack-rejected").await;
    let host = scene.host().await;
    scene.widget("held", json!({"a": "1"}), json!({})).await;
    let plan = name_of(&scene.plans_in("held", &["Pending"]).await[0]);
    let manager = scene.plans_as(scene.as_user(MANAGER).await);
    patch_status(&manager, &plan, &json!({"status": {"phase": "Rejected"}}))
        .await
        .expect("a manage holder writes the phase");
    // The host passed the Widget on it: its current plan is no longer the
    // rejected one.
    let w = eventually("the host saw the rejection", async || {
        let w = get(&scene.widgets(), "held").await;
        if w["status"]["currentPlanRef"]["name"] == plan.as_str() {
            Err(w["status"].clone())
        } else {
            Ok(w)
        }
    })
    .await;
    settle().await;
    let plans = scene.plans_of("held").await;
    let phases: Vec<&str> = plans.iter().map(phase).collect();
    assert_eq!(phases, ["Rejected"], "no new plan within --replan-after");
    assert!(
        w["status"].get("currentPlanRef").is_none(),
        "{}",
        w["status"]
    );
    let ready = condition(&w, "Ready").expect("Ready");
    assert_eq!(ready.reason, "ChangesDenied", "{ready:?}");
    assert!(
        ready.message.contains(&plan) && ready.message.contains("planned again at"),
        "{ready:?}"
    );
    scene.nothing_made("held").await;
    scene.finish(host).await;
}

/// Issue 30, attack 2: effects too large to sit in the plan go to a
/// ConfigMap. An editor of ConfigMaps cannot rewrite it (immutable);
/// replacing it (delete, create) is caught: `plan show` shows no forged
/// text, `plan approve` refuses, and an approval written by hand executes
/// nothing: the plan is superseded (ArtifactChanged, a Warning) and a new
/// one holds the changes. The genuine artifact is shown, and approved.
#[tokio::test]
async fn a_forged_effects_configmap_is_never_what_is_approved() {
    let scene = Scene::new("attack-artifact").await;
    let host = scene.host().await;
    let big = "x".repeat(40 * 1024);
    scene.widget("big", json!({"a": big}), json!({})).await;
    let plan = scene.plans_in("big", &["Pending"]).await.remove(0);
    let p = name_of(&plan);
    let reference = plan["spec"]["effects"]["configMapRef"].clone();
    let sha = reference["sha256"]
        .as_str()
        .expect("the artifact's SHA-256");
    assert_eq!(sha.len(), 64, "{reference}");
    let cm_name = reference["name"].as_str().unwrap().to_owned();
    let genuine = eventually("the effects ConfigMap", async || {
        scene.config_map(&cm_name).await.ok_or("not yet")
    })
    .await;
    assert_eq!(genuine["immutable"], true);
    assert_eq!(
        genuine["metadata"]["ownerReferences"][0]["kind"],
        "ReconcilePlan"
    );

    let (ok, shown, _) = scene.plan_cli(APPROVER, &["show", &p, "-n", scene.name()]);
    assert!(ok, "{shown}");
    assert!(
        shown.contains(&format!("SHA-256 {sha}, as the plan records")),
        "{shown}"
    );
    assert!(shown.contains("name: big-config"), "{shown}");

    // The editor forges the text a reviewer would read.
    let editor = scene.config_maps_as(scene.as_user(EDITOR).await);
    let forged_text = "- kind: {group: '', version: v1, kind: ConfigMap}\n  name: big-config\n  op: apply\n  body: {data: {a: harmless}}\n";
    let forged_gz = {
        use std::io::Write as _;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(forged_text.as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let forged_data = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&forged_gz)
    };
    refused_with(
        editor
            .patch(
                &cm_name,
                &PatchParams::default(),
                &Patch::Merge(json!({"binaryData": {"effects.yaml.gz": forged_data}})),
            )
            .await,
        422,
        "immutable",
    );
    editor
        .delete(&cm_name, &DeleteParams::default())
        .await
        .expect("the editor deletes the ConfigMap");
    let forged: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": cm_name},
        "binaryData": {"effects.yaml.gz": forged_data},
    }))
    .unwrap();
    editor
        .create(&PostParams::default(), &forged)
        .await
        .expect("the editor creates a forged ConfigMap");

    let (ok, shown, _) = scene.plan_cli(APPROVER, &["show", &p, "-n", scene.name()]);
    assert!(ok, "{shown}");
    assert!(
        shown.contains("NOT SHOWN") && shown.contains("not the") && !shown.contains("harmless"),
        "{shown}"
    );
    let (ok, _, err) = scene.plan_cli(APPROVER, &["approve", &p, "-n", scene.name()]);
    assert!(!ok);
    assert!(
        err.contains(&format!("plan {}/{p} is not approved", scene.name())),
        "{err}"
    );
    assert!(
        plan_condition(&get(&scene.plans(), &p).await, "Approved").unwrap()["status"] == "False"
    );

    // Approved by hand all the same: nothing runs.
    let approver = scene.plans_as(scene.as_user(APPROVER).await);
    patch_status(&approver, &p, &decision("Approved", APPROVER))
        .await
        .expect("the approver approves by hand");
    let plans = scene.plans_in("big", &["Superseded", "Pending"]).await;
    assert_eq!(
        plan_condition(&plans[0], "Superseded").unwrap()["reason"],
        "ArtifactChanged"
    );
    settle().await;
    let events = scene.nothing_made("big").await;
    assert_eq!(
        published(&events, "Warning", "PlanSuperseded"),
        1,
        "{events:?}"
    );

    // The new plan's genuine artifact is shown and approved: made.
    let fresh = name_of(&plans[1]);
    let (ok, out, _) = scene.plan_cli(APPROVER, &["approve", &fresh, "-n", scene.name()]);
    assert!(ok, "{out}");
    scene.plans_in("big", &["Superseded", "Applied"]).await;
    let made = scene
        .config_map("big-config")
        .await
        .expect("made on approval");
    assert_eq!(made["data"]["a"].as_str().map(str::len), Some(40 * 1024));
    scene.finish(host).await;
}

/// Issue 30, attack 3: a plan deleted while Applying. The plan is held
/// by a finalizer of the test's and deleted (it reads a deletionTimestamp,
/// as it does while the garbage collector or a user deletes it), then
/// approved: the host stops before the first change, makes nothing, and
/// says so in one Warning PlanDeleted; once the plan is gone the changes
/// are planned anew.
/// Issue 35: `plan show` prints what each change would do to its live
/// object. A reviewer who may patch ConfigMaps reads the API server's
/// answer to a server-side apply dry run (a key changed, one added, one
/// the host stops setting removed); one who may only read them reads an
/// estimate that says what it leaves out. Neither writes anything.
#[tokio::test]
async fn a_reviewer_reads_what_a_plan_would_change_in_the_live_object() {
    let scene = Scene::new("review-diff").await;
    let metrics = free_addr();
    let host = Host::start_in(
        scene.name(),
        &[
            "--approval",
            "Widget=manual",
            "--metrics-addr",
            &metrics.to_string(),
        ],
    )
    .await;
    let pending = |n: usize| plans_pending(metrics, n);
    pending(0).await;
    scene
        .widget("w", json!({"a": "1", "gone": "x"}), json!({}))
        .await;
    let first = name_of(&scene.plans_in("w", &["Pending"]).await[0]);
    let text = pending(1).await;
    assert!(
        text.contains("reconciler_plan_oldest_pending_seconds{kind=\"Widget\"}"),
        "{text}"
    );
    let (ok, shown, _) = scene.plan_cli(OPERATOR, &["show", &first, "-n", scene.name()]);
    assert!(ok, "{shown}");
    assert!(
        shown.contains("  ConfigMap w-config: created, as a server-side apply dry run answers\n"),
        "{shown}"
    );
    assert!(shown.contains("    +  a: '1'\n"), "{shown}");
    assert!(
        scene.config_map("w-config").await.is_none(),
        "a dry run creates nothing"
    );
    let (ok, out, _) = scene.plan_cli(APPROVER, &["approve", &first, "-n", scene.name()]);
    assert!(ok, "{out}");
    scene.plans_in("w", &["Applied"]).await;
    pending(0).await;
    let made = scene.config_map("w-config").await.expect("made");
    assert_eq!(made["data"], json!({"a": "1", "gone": "x"}));

    merge(
        &scene.widgets(),
        "w",
        json!({"spec": {"data": {"a": "2", "b": "3", "gone": null}}}),
    )
    .await;
    let second = name_of(&scene.plans_in("w", &["Applied", "Pending"]).await[1]);
    pending(1).await;
    let (ok, shown, _) = scene.plan_cli(OPERATOR, &["show", &second, "-n", scene.name()]);
    assert!(ok, "{shown}");
    assert!(
        shown.contains("  ConfigMap w-config: changed, as a server-side apply dry run answers\n"),
        "{shown}"
    );
    for line in [
        "    -  a: '1'\n",
        "    +  a: '2'\n",
        "    +  b: '3'\n",
        "    -  gone: x\n",
    ] {
        assert!(shown.contains(line), "{line:?} in {shown}");
    }
    assert!(!shown.contains("resourceVersion"), "{shown}");

    let (ok, shown, _) = scene.plan_cli(APPROVER, &["show", &second, "-n", scene.name()]);
    assert!(ok, "{shown}");
    assert!(
        shown.contains(
            "  ConfigMap w-config: changed, estimated here: you may not ask the API server for a dry \
             run (patch on configmaps), so fields the host would stop setting are not shown\n"
        ),
        "{shown}"
    );
    for line in ["    -  a: '1'\n", "    +  a: '2'\n", "    +  b: '3'\n"] {
        assert!(shown.contains(line), "{line:?} in {shown}");
    }
    assert!(!shown.contains("-  gone"), "{shown}");

    let after = scene.config_map("w-config").await.expect("still there");
    assert_eq!(
        after["metadata"]["resourceVersion"], made["metadata"]["resourceVersion"],
        "plan show wrote nothing"
    );
    scene.finish(host).await;
}

/// Waits until the host whose `/metrics` is at `addr` counts `n` Widget
/// plans awaiting a decision; returns the exposition.
async fn plans_pending(addr: std::net::SocketAddr, n: usize) -> String {
    let line = format!("reconciler_plans_pending{{kind=\"Widget\"}} {n}\n");
    eventually(&format!("{n} Widget plans pending"), async || {
        let (_, text) = http_get(addr, "/metrics");
        if text.contains(&line) {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await
}

#[tokio::test]
async fn a_plan_deleted_while_applying_stops_before_its_next_change() {
    let scene = Scene::new("attack-deleted").await;
    let host = scene.host().await;
    scene.widget("w", json!({"a": "1"}), json!({})).await;
    let p = name_of(&scene.plans_in("w", &["Pending"]).await[0]);
    merge(
        &scene.plans(),
        &p,
        json!({"metadata": {"finalizers": ["test.reconciler.dev/hold"]}}),
    )
    .await;
    scene
        .plans()
        .delete(&p, &DeleteParams::default())
        .await
        .expect("deleting the plan");
    let approver = scene.plans_as(scene.as_user(APPROVER).await);
    patch_status(&approver, &p, &decision("Approved", APPROVER))
        .await
        .expect("the approver approves");
    eventually("a PlanDeleted Warning", async || {
        let events = events_about(&scene.ns.client(), scene.name(), "w").await;
        if published(&events, "Warning", "PlanDeleted") > 0 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    settle().await;
    let events = events_about(&scene.ns.client(), scene.name(), "w").await;
    assert_eq!(
        published(&events, "Warning", "PlanDeleted"),
        1,
        "{events:?}"
    );
    let deleted: Vec<_> = events
        .iter()
        .filter(|e| e.reason == "PlanDeleted")
        .collect();
    assert!(
        deleted[0].note.contains(&format!(
            "ReconcilePlan {p} (approved by {APPROVER}) was deleted while Applying: the host \
             stopped before its first change, nothing was made"
        )),
        "{deleted:?}"
    );
    assert!(
        scene.config_map("w-config").await.is_none(),
        "nothing is made"
    );
    assert_eq!(published(&events, "Normal", "PlanApplied"), 0, "{events:?}");
    merge(
        &scene.plans(),
        &p,
        json!({"metadata": {"finalizers": null}}),
    )
    .await;
    scene.plans_in("w", &["Pending"]).await;
    assert!(scene.config_map("w-config").await.is_none());
    scene.finish(host).await;
}

/// Issue 30, attack 4: the ConfigMap `payroll-config` was made by hand (no
/// controller). A requester who may create Widgets but may not patch
/// ConfigMaps names a Widget `payroll`: the host does not take the
/// ConfigMap over (ChildReady False, ResourceNotOwned, no plan, the data
/// and owners unchanged), and deleting the Widget leaves it. Once whoever
/// may change it consents (the annotation `reconciler.dev/adopt:
/// Widget/payroll`), it is adopted as any change is: planned and made on
/// approval.
#[tokio::test]
async fn an_object_nothing_controls_is_not_taken_over_without_consent() {
    let scene = Scene::new("attack-adopt").await;
    let host = scene.host().await;
    create(
        &scene.ns.client(),
        scene.name(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "payroll-config"}, "data": {"iban": "DE00"}}),
    )
    .await;
    let requester = objects::api(
        &scene.as_user(REQUESTER).await,
        scene.name(),
        API_VERSION,
        "Widget",
    );
    refused_with(
        scene
            .config_maps_as(scene.as_user(REQUESTER).await)
            .patch(
                "payroll-config",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"iban": "XX"}})),
            )
            .await,
        403,
        "forbidden",
    );
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": API_VERSION, "kind": "Widget",
        "metadata": {"name": "payroll"}, "spec": {"data": {"iban": "ATTACKER"}},
    }))
    .unwrap();
    requester
        .create(&PostParams::default(), &widget)
        .await
        .expect("the requester creates a Widget");
    let w = eventually("ChildReady ResourceNotOwned", async || {
        let w = get(&scene.widgets(), "payroll").await;
        match condition(&w, "ChildReady") {
            Some(c) if c.reason == "ResourceNotOwned" => Ok(w),
            other => Err(other),
        }
    })
    .await;
    let child = condition(&w, "ChildReady").unwrap();
    assert_eq!(child.status, "False");
    assert!(
        child.message.contains(
            "ConfigMap payroll-config exists and nothing controls it: the operator takes over \
             an object only when whoever may change it consents, with the annotation \
             reconciler.dev/adopt: Widget/payroll"
        ),
        "{}",
        child.message
    );
    settle().await;
    let cm = scene.config_map("payroll-config").await.unwrap();
    assert_eq!(cm["data"], json!({"iban": "DE00"}));
    assert!(cm["metadata"].get("ownerReferences").is_none(), "{cm}");
    assert!(scene.plans_of("payroll").await.is_empty());
    requester
        .delete("payroll", &DeleteParams::default())
        .await
        .expect("the requester deletes the Widget");
    eventually("the Widget gone", async || {
        match scene.widgets().get_opt("payroll").await.unwrap() {
            None => Ok(()),
            Some(_) => Err("still there"),
        }
    })
    .await;
    settle().await;
    assert_eq!(
        scene.config_map("payroll-config").await.unwrap()["data"],
        json!({"iban": "DE00"}),
        "the hand-made ConfigMap outlives the Widget"
    );

    // Consent, by whoever may change it: adopted through review.
    merge(
        &scene.config_maps_as(scene.ns.client()),
        "payroll-config",
        json!({"metadata": {"annotations": {"reconciler.dev/adopt": "Widget/payroll"}}}),
    )
    .await;
    scene
        .widget("payroll", json!({"iban": "FR00"}), json!({}))
        .await;
    let p = name_of(&scene.plans_in("payroll", &["Pending"]).await[0]);
    let (ok, out, _) = scene.plan_cli(APPROVER, &["approve", &p, "-n", scene.name()]);
    assert!(ok, "{out}");
    scene.plans_in("payroll", &["Applied"]).await;
    let cm = scene.config_map("payroll-config").await.unwrap();
    assert_eq!(cm["data"], json!({"iban": "FR00"}));
    let w = get(&scene.widgets(), "payroll").await;
    assert_eq!(
        cm["metadata"]["ownerReferences"][0]["uid"], w["metadata"]["uid"],
        "adopted: the Widget controls it now"
    );
    scene.finish(host).await;
}

/// One status write of a random sequence: who writes, and what.
#[derive(Clone, Debug)]
enum Write {
    /// The approver's genuine approval or denial.
    Approve,
    Deny,
    /// A phase, written by the reviewer, the approver, a stranger or a
    /// `manage` holder (the admin).
    Phase(Actor, &'static str),
    /// An approval in someone's name, by the reviewer or a stranger.
    Forged(Actor),
}

#[derive(Clone, Copy, Debug)]
enum Actor {
    Reviewer,
    Approver,
    Stranger,
    Manager,
}

fn write_strategy() -> impl Strategy<Value = Write> {
    use proptest::prelude::*;
    let actor = prop_oneof![
        Just(Actor::Reviewer),
        Just(Actor::Approver),
        Just(Actor::Stranger),
        Just(Actor::Manager),
    ];
    let phase = prop_oneof![
        Just("Applying"),
        Just("Approved"),
        Just("Applied"),
        Just("Pending"),
    ];
    prop_oneof![
        1 => Just(Write::Approve),
        1 => Just(Write::Deny),
        4 => (actor.clone(), phase).prop_map(|(a, p)| Write::Phase(a, p)),
        2 => actor.prop_map(Write::Forged),
    ]
}

/// Issue 30: no sequence of status writes without the approver's Approved
/// leads to a change. Random sequences (1 to 4 writes) by the reviewer,
/// the approver, a stranger and a `manage` holder, each on a fresh
/// Widget's pending plan, against the real API server's admission and the
/// running host; after each, the Widget's ConfigMap exists only if the
/// approver's Approved was accepted.
#[tokio::test]
async fn nothing_is_made_without_an_approvers_decision() {
    let scene = Scene::new("attack-sequences").await;
    let host = scene.host().await;
    let clients = [
        (
            Actor::Reviewer,
            scene.plans_as(scene.as_user(REVIEWER).await),
        ),
        (
            Actor::Approver,
            scene.plans_as(scene.as_user(APPROVER).await),
        ),
        (
            Actor::Stranger,
            scene.plans_as(scene.as_user(STRANGER).await),
        ),
        (Actor::Manager, scene.plans()),
    ];
    let api = |a: Actor| {
        &clients
            .iter()
            .find(|(b, _)| std::mem::discriminant(b) == std::mem::discriminant(&a))
            .unwrap()
            .1
    };
    let user = |a: Actor| match a {
        Actor::Reviewer => REVIEWER,
        Actor::Approver => APPROVER,
        Actor::Stranger => STRANGER,
        Actor::Manager => "admin",
    };
    let sequences = proptest::collection::vec(write_strategy(), 1..=4);
    let mut runner = TestRunner::deterministic();
    let mut made_with_approval = 0;
    for case in 0..10 {
        let writes = sequences.new_tree(&mut runner).unwrap().current();
        let widget = format!("w{case}");
        scene.widget(&widget, json!({"a": "1"}), json!({})).await;
        let p = name_of(&scene.plans_in(&widget, &["Pending"]).await[0]);
        let mut approved = false;
        for write in &writes {
            let answer = match write {
                Write::Approve => {
                    patch_status(api(Actor::Approver), &p, &decision("Approved", APPROVER)).await
                }
                Write::Deny => {
                    patch_status(api(Actor::Approver), &p, &decision("Denied", APPROVER)).await
                }
                Write::Phase(actor, phase) => {
                    patch_status(api(*actor), &p, &json!({"status": {"phase": phase}})).await
                }
                Write::Forged(actor) => {
                    let claimed = if matches!(actor, Actor::Approver) {
                        REVIEWER
                    } else {
                        APPROVER
                    };
                    patch_status(api(*actor), &p, &decision("Approved", claimed)).await
                }
            };
            eprintln!(
                "case {case}: {write:?} as {}: {}",
                match write {
                    Write::Phase(a, _) | Write::Forged(a) => user(*a),
                    _ => APPROVER,
                },
                if answer.is_ok() {
                    "accepted"
                } else {
                    "refused"
                }
            );
            if matches!(write, Write::Approve) && answer.is_ok() {
                approved = true;
            }
        }
        settle().await;
        let made = scene
            .config_map(&format!("{widget}-config"))
            .await
            .is_some();
        assert!(
            !made || approved,
            "case {case}: {writes:?} made {widget}-config without an approver's Approved"
        );
        if made {
            made_with_approval += 1;
        }
    }
    eprintln!("{made_with_approval} of 10 sequences carried an approval that was executed");
    scene.finish(host).await;
}
