//! One truth of a pass against the real API server (issue 50, "Done when
//! 3"): the operator's pass, `reconciler-host test` on the fixture
//! `capture` makes of a live parent, and `shadow` of the module beside
//! itself settle alike. `fixture/agreement.rs` and `agreement_jobs.rs`
//! hold the fixture runner to the driver made dry on made-up caches; this
//! holds the CLI and the operator to each other on what the cluster really
//! serves.
//!
//! Twenty Widgets of the writer test guest (it wants the ConfigMap
//! `<name>-config` holding `spec.data`), drawn from a fixed seed
//! (`AGREEMENT_SEED` draws others) over every world of the unit property:
//! 1 or 2 keys of data; the ConfigMap absent, as the host would apply it
//! (its body stamped as the host stamps it) or drifted (the parent's, other
//! data); the parent's gates by annotation (`reconciler.dev/mode` none,
//! observe or apply, `reconciler.dev/approval: manual` or not), with the
//! ReconcilePlan CRD of `deploy/` installed (plans served); the parents in
//! two namespaces. Then, in order, nothing else writing meanwhile:
//!
//! 0. every other case whose changes wait for a reviewer (ConfigMap absent
//!    or drifted, mode apply, approval manual) gets its plan before any
//!    host: created as the host creates it (`record::new_plan`, for the
//!    pending change, bound to the cluster and the parent), then approved
//!    with `reconciler-host plan approve` by an approver holding what
//!    `deploy/` gives reviewers (`reconciler-plan-reviewer`) and the verb
//!    `approve` on Widgets, as the admission policy asks;
//! 1. each parent captured as a read-only reviewer (`capture Widget
//!    <ns>/<name>`: exit 0; its `plans.current` the plan approved in 0,
//!    approved by the approver, where there is one, else none), and its
//!    fixture replayed to its own expect block and golden (`test`: exit 0);
//! 2. `shadow` of the served module beside itself over every parent, as
//!    the reviewer: 0 differ, 0 not reproduced, exit 0;
//! 3. one host (`run`) over both namespaces until every parent's Ready
//!    observed its generation, then stopped: each parent's live conditions
//!    (type, status, reason), change summary and plan reference are the
//!    golden's first step's status; the Events published about it
//!    (events.k8s.io, each repeat counted) are the golden's by type and
//!    reason; where nothing is held its ConfigMap holds the golden's applied
//!    data, owned by it (a key another manager set survives the host's
//!    server-side apply, as the host's own "as asked" allows), and was not
//!    written where it held it already; where a gate holds it, it is
//!    untouched, a plan Pending and named by the parent's status (none open
//!    otherwise);
//! 4. `shadow` beside itself again, on the world the operator settled:
//!    0 differ, 0 not reproduced (the dry run reproduces the operator's
//!    own status).
//!
//! Every difference is printed with its case; the test fails unless there
//! are none.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::DynamicObject;
use kube::core::{ApiResource, GroupVersionKind};
use reconciler_host::children::bodies::Owner;
use reconciler_host::children::pending;
use reconciler_host::contract::model::Change;
use reconciler_host::facts::MemorySource;
use reconciler_host::plan::artifact::{self, Counts};
use reconciler_host::plan::digest::{self, Mode, Target};
use reconciler_host::plan::record;
use reconciler_host::runtime::{
    ArtifactCache, EvaluateRequest, Limits, Module, Runtime, RuntimeConfig,
};
use reconciler_host_harness::identity;
use reconciler_host_harness::objects::{self, create};
use reconciler_host_harness::operator::{
    Guests, Host, cli_command, condition, events_of, eventually, fixture, fixture_of, get,
    install_crds, settle, summary,
};
use reconciler_host_harness::paths::target_tmpdir;
use reconciler_host_harness::plans;
use reconciler_host_harness::widgets;
use reconciler_testsupport::{Access, TestNamespace};
use serde_json::{Value, json};

const WRITER: Guests = Guests {
    dir: "agreement-server",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

/// The seed the cases are drawn from, unless `AGREEMENT_SEED` gives one.
const SEED: u64 = 0x5eed_0050;
/// How many parents.
const CASES: usize = 20;
/// The served module's file in the guests directory.
const WASM: &str = "writer_guest.wasm";
/// The label the host puts on a parent's plans.
const PARENT_UID_LABEL: &str = "reconciler.dev/parent-uid";
/// The read-only reviewer `capture` and `shadow` run as.
const REVIEWER: &str = "agreement-reviewer";
/// The reviewer who approves plans before any host.
const APPROVER: &str = "agreement-approver";

/// splitmix64: a few lines, the same draws everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// What the cluster holds of the parent's ConfigMap before any host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Child {
    Absent,
    /// As the host would apply it for this very spec (stamped, owned).
    AsAsked,
    /// The parent's, stamped as asked, with other data.
    Drifted,
}

const CHILDREN: [Child; 3] = [Child::Absent, Child::AsAsked, Child::Drifted];
const MODES: [Option<&str>; 3] = [None, Some("observe"), Some("apply")];

/// One parent's world.
#[derive(Clone, Debug)]
struct Case {
    /// Index into the namespaces.
    ns: usize,
    name: String,
    data: BTreeMap<String, String>,
    child: Child,
    /// Its `reconciler.dev/mode`.
    mode: Option<&'static str>,
    /// Its `reconciler.dev/approval: manual`.
    manual: bool,
    /// A plan of its changes is approved by a reviewer before any host.
    approved: bool,
}

impl Case {
    fn widget(&self) -> Value {
        let mut annotations = serde_json::Map::new();
        if let Some(mode) = self.mode {
            annotations.insert("reconciler.dev/mode".into(), json!(mode));
        }
        if self.manual {
            annotations.insert("reconciler.dev/approval".into(), json!("manual"));
        }
        let mut widget = widgets::widget(&self.name, json!({"data": self.data}));
        widget["metadata"]["annotations"] = Value::Object(annotations);
        widget
    }

    fn config_map(&self) -> String {
        format!("{}-config", self.name)
    }

    /// Its changes wait for a reviewer: something to make, mode apply,
    /// approval manual.
    fn awaits_review(&self) -> bool {
        self.child != Child::AsAsked && self.manual && self.mode != Some("observe")
    }
}

/// `CASES` cases from `seed`: every (child, mode, approval) of the 18 once
/// in a drawn order, then drawn ones; data, namespace drawn for each.
fn cases(seed: u64) -> Vec<Case> {
    let mut rng = Rng(seed);
    let mut worlds: Vec<(Child, Option<&'static str>, bool)> = CHILDREN
        .iter()
        .flat_map(|&c| {
            MODES
                .iter()
                .flat_map(move |&m| [false, true].map(move |manual| (c, m, manual)))
        })
        .collect();
    for i in (1..worlds.len()).rev() {
        let j = rng.below(i + 1);
        worlds.swap(i, j);
    }
    while worlds.len() < CASES {
        let world = (
            CHILDREN[rng.below(3)],
            MODES[rng.below(3)],
            rng.below(2) == 1,
        );
        worlds.push(world);
    }
    worlds.truncate(CASES);
    let mut cases = worlds
        .into_iter()
        .enumerate()
        .map(|(i, (child, mode, manual))| {
            let mut data = BTreeMap::new();
            for _ in 0..=rng.below(2) {
                let key = ["a", "b", "c"][rng.below(3)];
                data.insert(key.to_owned(), rng.below(3).to_string());
            }
            Case {
                ns: rng.below(2),
                name: format!("w{i:02}"),
                data,
                child,
                mode,
                manual,
                approved: false,
            }
        })
        .collect::<Vec<_>>();
    // Every other case awaiting review is approved before any host; the
    // rest wait for the host's own plan.
    for case in cases.iter_mut().filter(|c| c.awaits_review()).step_by(2) {
        case.approved = true;
    }
    cases
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `reconciler-host <args>` under `kubeconfig`, off the test's thread.
async fn cli(kubeconfig: &Path, args: Vec<OsString>) -> Output {
    let mut command = cli_command(kubeconfig);
    command.args(args);
    tokio::task::spawn_blocking(move || command.output().expect("the host binary runs"))
        .await
        .expect("the command's thread")
}

fn os(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_os_string()).collect()
}

/// The writer guest as the harness compiled it.
fn writer() -> Module {
    Runtime::new(RuntimeConfig {
        limits: Limits::default(),
        cache: Some(ArtifactCache::new(fixture().cache_dir.clone())),
    })
    .expect("a runtime")
    .load_file(&fixture().guests_dir.join(WASM))
    .expect("the writer loads")
}

/// The guest's change of the ConfigMap of `parent`.
fn asked(module: &Module, parent: &Value) -> Change {
    let name = format!("{}-config", parent["metadata"]["name"].as_str().unwrap());
    let evaluated = module.evaluate(EvaluateRequest {
        parent,
        paused: false,
        settings: &[],
        source: Arc::new(MemorySource::new()),
        now: jiff::Timestamp::now(),
    });
    evaluated
        .changes
        .iter()
        .find(|c| matches!(c, Change::Apply { .. }) && c.name() == name)
        .unwrap_or_else(|| panic!("the writer asks for {name}: {:?}", evaluated.changes))
        .clone()
}

/// The ConfigMap the host would apply for `parent` (as stored): the
/// guest's change, owned and stamped as the host makes it.
fn as_asked(module: &Module, parent: &Value) -> Value {
    let change = asked(module, parent);
    let md = &parent["metadata"];
    let owner = Owner {
        api_version: widgets::API_VERSION,
        kind: "Widget",
        name: md["name"].as_str().unwrap(),
        namespace: md["namespace"].as_str().unwrap(),
        uid: md["uid"].as_str().unwrap(),
        member: None,
        slot: None,
    };
    pending::desired(&change, &MemorySource::new(), &owner).expect("an apply's body")
}

/// The plan the host would create for `parent`'s `pending` changes in
/// mode apply, on the cluster of identity `cluster`.
fn plan_of(parent: &Value, pending: &[Change], cluster: &str) -> Value {
    let target = Target {
        cluster: cluster.into(),
        parent: s(&parent["metadata"]["uid"]),
    };
    let digest = digest::digest(pending, Mode::Apply, &target);
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("testing.reconciler.dev", "v1", "Widget"),
        "widgets",
    );
    let name = format!("{}-rvwd1", s(&parent["metadata"]["name"]));
    let mut plan = record::new_plan(
        &name,
        &record::ParentRef::of(&resource, parent),
        Mode::Apply,
        &digest,
        &target,
        &artifact::artifact(pending),
        Counts::of(pending),
    );
    plan["metadata"]["namespace"] = parent["metadata"]["namespace"].clone();
    plan
}

/// What a case's captured golden says its first step settled on.
struct Golden {
    /// `(type, status, reason)`, sorted.
    conditions: Vec<(String, String, String)>,
    change_summary: Value,
    plan_named: bool,
    /// `(type, reason)`, sorted.
    events: Vec<(String, String)>,
    /// What holds the changes (`observe`, `awaitingApproval`), if anything.
    held: Option<String>,
    /// The data of its apply of the ConfigMap.
    applied: Option<Value>,
}

impl Golden {
    fn of(step: &Value, config_map: &str) -> Golden {
        Golden {
            conditions: conditions(&step["status"]),
            change_summary: step["status"]["changeSummary"].clone(),
            plan_named: !step["status"]["currentPlanRef"].is_null(),
            events: sorted(
                step["events"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| (s(&e["type"]), s(&e["reason"]))),
            ),
            held: step["held"].as_str().map(str::to_owned),
            applied: step["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["apply"]["name"] == config_map)
                .map(|c| c["apply"]["body"]["data"].clone()),
        }
    }
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn sorted<T: Ord>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut items: Vec<T> = items.collect();
    items.sort();
    items
}

/// A status's conditions as `(type, status, reason)`, sorted.
fn conditions(status: &Value) -> Vec<(String, String, String)> {
    sorted(
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| (s(&c["type"]), s(&c["status"]), s(&c["reason"]))),
    )
}

/// A ConfigMap as compared: its resourceVersion, data and controller's uid.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    resource_version: String,
    data: Value,
    controller: Option<String>,
}

impl Seen {
    /// Whether it holds every key of `data` with its value, controlled by
    /// the parent `uid`: as the host judges a child as asked (a server-side
    /// apply leaves the keys another manager set, such as a drifted one).
    fn holds(&self, data: &Value, uid: &str) -> bool {
        self.controller.as_deref() == Some(uid)
            && data
                .as_object()
                .into_iter()
                .flatten()
                .all(|(k, v)| self.data.get(k) == Some(v))
    }
}

async fn config_map(api: &Api<DynamicObject>, name: &str) -> Option<Seen> {
    let found = api.get_opt(name).await.expect("reading a ConfigMap")?;
    let v = serde_json::to_value(found).expect("JSON");
    Some(Seen {
        resource_version: s(&v["metadata"]["resourceVersion"]),
        data: v["data"].clone(),
        controller: v["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|o| o["controller"] == true)
            .map(|o| s(&o["uid"])),
    })
}

/// `shadow` of the served module beside itself over every parent, as
/// `kubeconfig`: what is wrong with it (nothing where it exits 0 having
/// shadowed every parent, none differing, unreproduced, turning Ready False
/// or failing anew).
async fn shadow_beside_itself(
    kubeconfig: &Path,
    namespaces: &str,
    review: &Path,
    when: &str,
) -> Vec<String> {
    let guests = &fixture().guests_dir;
    let out = cli(
        kubeconfig,
        os(&[
            &"shadow",
            &guests.join(WASM),
            &"--guests",
            guests,
            &"--namespaces",
            &namespaces,
            &"-o",
            &review,
        ]),
    )
    .await;
    let stderr = text(&out.stderr);
    let review_text = std::fs::read_to_string(review).unwrap_or_default();
    println!("shadow {when}: {}\n{stderr}", out.status);
    let mut wrong = Vec::new();
    if !out.status.success() {
        wrong.push(format!(
            "shadow {when}: {} (exit 0 expected)\n{stderr}\n{review_text}",
            out.status
        ));
        return wrong;
    }
    let review: Value = serde_yaml::from_str(&review_text).expect("the review is YAML");
    let count = |field: &str| review.get(field).and_then(Value::as_u64).unwrap_or(0);
    if count("parents") != CASES as u64 {
        wrong.push(format!(
            "shadow {when}: {} parents shadowed, {CASES} expected",
            count("parents")
        ));
    }
    for field in [
        "differ",
        "notReproduced",
        "readyTurnsFalse",
        "newGuestErrors",
    ] {
        if count(field) != 0 {
            wrong.push(format!(
                "shadow {when}: {field} {} (0 expected)",
                count(field)
            ));
        }
    }
    if !wrong.is_empty() {
        wrong.push(format!("the review ({when}):\n{review_text}"));
    }
    wrong
}

#[tokio::test]
async fn the_operator_capture_test_and_shadow_agree_on_the_real_api_server() {
    let started = Instant::now();
    let seed = std::env::var("AGREEMENT_SEED")
        .ok()
        .map(|s| {
            let s = s.trim_start_matches("0x");
            u64::from_str_radix(s, 16).expect("AGREEMENT_SEED in hex")
        })
        .unwrap_or(SEED);
    let cases = cases(seed);
    println!("seed {seed:#x} (AGREEMENT_SEED=<hex> draws others); the cases:");
    for case in &cases {
        println!("  {case:?}");
    }

    fixture_of(&WRITER);
    let dir = target_tmpdir().join(format!("agreement-server-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    // The world: the Widget and plans CRDs, two namespaces, the reviewer.
    let world = World::new().await;
    let reviewer = identity::kubeconfig_as(REVIEWER, &dir);
    let approver = identity::kubeconfig_as(APPROVER, &dir);
    let admin = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");

    // The parents, and their ConfigMaps where the case has one.
    let module = writer();
    let (uids, parents) = create_parents(&world, &cases, &module).await;

    // 0. The plans approved before any host.
    approve_before_any_host(&world, &approver, &cases, &parents, &module).await;

    // 1. Each parent captured as the reviewer, its fixture replayed.
    let mut differences: Vec<String> = Vec::new();
    let goldens = capture_and_replay(&world, &reviewer, &dir, &cases, &mut differences).await;
    println!(
        "{} captured and replayed in {:?}",
        goldens.len(),
        started.elapsed()
    );

    // 2. The served module beside itself, on the world as created.
    differences.extend(
        shadow_beside_itself(
            &reviewer,
            &world.watched,
            &dir.join("review-before.yaml"),
            "before the operator",
        )
        .await,
    );
    assert!(
        differences.is_empty(),
        "seed {seed:#x}: {} difference(s) before the operator ran:\n{}",
        differences.len(),
        differences.join("\n")
    );

    // Nothing was written: no Event yet, the ConfigMaps as created.
    let before = nothing_written_yet(&world, &cases).await;

    // 3. The operator over both namespaces, until every parent's Ready
    // observed its generation; then stopped.
    let host = operate_until_settled(&world, &admin, &cases).await;

    for case in &cases {
        let Some(golden) = goldens.get(&case.name) else {
            continue;
        };
        let ns = world.ns_of(case);
        let wrong = operator_against_golden(&world.client, &ns, case, golden, &before, &uids).await;
        for w in wrong {
            differences.push(format!("{case:?} ({ns}): {w}"));
        }
    }

    // 4. The served module beside itself again, on the world the operator
    // settled: its dry run reproduces every live status.
    differences.extend(
        shadow_beside_itself(
            &reviewer,
            &world.watched,
            &dir.join("review-after.yaml"),
            "after the operator",
        )
        .await,
    );

    println!(
        "seed {seed:#x}: {} difference(s) in {:?}",
        differences.len(),
        started.elapsed()
    );
    for d in &differences {
        println!("  {d}");
    }
    assert!(
        differences.is_empty(),
        "seed {seed:#x}: {} difference(s) between the operator, capture, test and shadow:\n{}",
        differences.len(),
        differences.join("\n")
    );
    host.finish();
    for ns in world.namespaces {
        ns.cleanup().await.unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("agreement_server took {:?}", started.elapsed());
}

/// The test's two namespaces, the admin client, and the namespaces the
/// host and the CLI watch (both, comma-separated).
struct World {
    namespaces: [TestNamespace; 2],
    client: kube::Client,
    watched: String,
}

impl World {
    /// Two namespaces with the Widget and plans CRDs installed, and the
    /// reviewer and the approver granted what they need (and seen to hold
    /// it).
    async fn new() -> World {
        let namespaces = [
            TestNamespace::new("agree-a").await.expect("a namespace"),
            TestNamespace::new("agree-b").await.expect("a namespace"),
        ];
        let client = namespaces[0].client();
        install_crds(&client).await;
        plans::install(&client).await;
        let watched = namespaces
            .iter()
            .map(|n| n.name().to_owned())
            .collect::<Vec<_>>()
            .join(",");
        grant_reviewer(&client, &namespaces).await;
        grant_approver(&client, &namespaces).await;
        World {
            namespaces,
            client,
            watched,
        }
    }

    /// The namespace of a case's parent.
    fn ns_of(&self, case: &Case) -> String {
        self.namespaces[case.ns].name().to_owned()
    }
}

/// The reviewer may read the Widgets, ConfigMaps, Secrets and plans of
/// both namespaces and get namespaces (the cluster's identity, which the
/// operator binds into its plans, is kube-system's UID: so the dry run
/// binds its plans as the operator does).
async fn grant_reviewer(client: &kube::Client, namespaces: &[TestNamespace; 2]) {
    for ns in namespaces {
        identity::read_only_reviewer(client, ns.name(), REVIEWER).await;
    }
    identity::apply_rbac(
        client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": format!("{REVIEWER}-namespaces")},
               "rules": [{"apiGroups": [""], "resources": ["namespaces"],
                          "verbs": ["get"]}]}),
    )
    .await;
    identity::apply_rbac(
        client,
        identity::cluster_role_binding(&format!("{REVIEWER}-namespaces"), REVIEWER),
    )
    .await;
    let mut wanted = Vec::new();
    for ns in namespaces {
        for (group, resource) in [
            ("testing.reconciler.dev", "widgets"),
            ("", "configmaps"),
            ("", "secrets"),
            ("reconciler.dev", "reconcileplans"),
        ] {
            for verb in ["get", "list", "watch"] {
                wanted.push(Access {
                    verb,
                    group,
                    resource,
                    namespace: Some(ns.name()),
                });
            }
        }
    }
    wanted.push(Access {
        verb: "get",
        group: "",
        resource: "namespaces",
        namespace: None,
    });
    reconciler_testsupport::await_access(client, REVIEWER, &[], &wanted)
        .await
        .expect("the reviewer may read");
}

/// The approver: what deploy/ gives reviewers, and `approve` on Widgets.
async fn grant_approver(client: &kube::Client, namespaces: &[TestNamespace; 2]) {
    identity::apply_rbac(
        client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": format!("{APPROVER}-widgets")},
               "rules": [{"apiGroups": ["testing.reconciler.dev"], "resources": ["widgets"],
                          "verbs": ["approve"]}]}),
    )
    .await;
    for ns in namespaces {
        for role in ["reconciler-plan-reviewer", &format!("{APPROVER}-widgets")] {
            identity::apply_rbac(
                client,
                identity::role_binding(
                    ns.name(),
                    &format!("{APPROVER}-{role}"),
                    "ClusterRole",
                    role,
                    APPROVER,
                ),
            )
            .await;
        }
    }
    let mut approving = Vec::new();
    for ns in namespaces {
        for (verb, group, resource) in [
            ("approve", "testing.reconciler.dev", "widgets"),
            ("patch", "reconciler.dev", "reconcileplans/status"),
        ] {
            approving.push(Access {
                verb,
                group,
                resource,
                namespace: Some(ns.name()),
            });
        }
    }
    reconciler_testsupport::await_access(client, APPROVER, &[], &approving)
        .await
        .expect("the approver may approve");
}

/// Each case's parent created, and its ConfigMap where the case has one;
/// the parents' UIDs and the parents as created, by name.
async fn create_parents(
    world: &World,
    cases: &[Case],
    module: &Module,
) -> (BTreeMap<String, String>, BTreeMap<String, Value>) {
    let client = &world.client;
    let mut uids = BTreeMap::new();
    let mut parents = BTreeMap::new();
    for case in cases {
        let ns = world.ns_of(case);
        create(client, &ns, case.widget()).await;
        let parent = get(
            &objects::api(client, &ns, widgets::API_VERSION, "Widget"),
            &case.name,
        )
        .await;
        uids.insert(case.name.clone(), s(&parent["metadata"]["uid"]));
        let mut body = as_asked(module, &parent);
        match case.child {
            Child::Absent => {}
            Child::AsAsked => create(client, &ns, body).await,
            Child::Drifted => {
                body["data"] = json!({"drifted": "yes"});
                create(client, &ns, body).await;
            }
        }
        parents.insert(case.name.clone(), parent);
    }
    (uids, parents)
}

/// The plan of each case approved before any host, created and approved
/// with the CLI as the approver.
async fn approve_before_any_host(
    world: &World,
    approver: &Path,
    cases: &[Case],
    parents: &BTreeMap<String, Value>,
    module: &Module,
) {
    let client = &world.client;
    let cluster = Api::<Namespace>::all(client.clone())
        .get("kube-system")
        .await
        .expect("kube-system")
        .metadata
        .uid
        .expect("its UID");
    for case in cases.iter().filter(|c| c.approved) {
        let ns = world.ns_of(case);
        let parent = &parents[&case.name];
        let plan = plan_of(parent, &[asked(module, parent)], &cluster);
        let name = s(&plan["metadata"]["name"]);
        create(client, &ns, plan).await;
        let out = cli(approver, os(&[&"plan", &"approve", &name, &"-n", &ns])).await;
        assert!(
            out.status.success(),
            "{case:?}: approving {name}: {}\n{}{}",
            out.status,
            text(&out.stdout),
            text(&out.stderr)
        );
    }
}

/// Each parent captured as the reviewer and its fixture replayed with
/// `test`; what went wrong goes to `differences`; the goldens, by name.
async fn capture_and_replay(
    world: &World,
    reviewer: &Path,
    dir: &Path,
    cases: &[Case],
    differences: &mut Vec<String>,
) -> BTreeMap<String, Golden> {
    let guests = fixture().guests_dir.clone();
    let wasm = guests.join(WASM);
    let mut goldens: BTreeMap<String, Golden> = BTreeMap::new();
    for case in cases {
        let output: PathBuf = dir.join(format!("{}.yaml", case.name));
        let target = format!("{}/{}", world.ns_of(case), case.name);
        let out = cli(
            reviewer,
            os(&[
                &"capture",
                &"Widget",
                &target,
                &"--guests",
                &guests,
                &"--namespaces",
                &world.watched,
                &"-o",
                &output,
            ]),
        )
        .await;
        if !out.status.success() {
            differences.push(format!(
                "{case:?}: capture failed ({}):\n{}{}",
                out.status,
                text(&out.stdout),
                text(&out.stderr)
            ));
            continue;
        }
        let replayed = cli(reviewer, os(&[&"test", &wasm, &output])).await;
        let said = text(&replayed.stdout);
        if !(replayed.status.success() && said.contains("1 passed, 0 failed")) {
            differences.push(format!(
                "{case:?}: test of its capture failed ({}):\n{said}{}\n{}",
                replayed.status,
                text(&replayed.stderr),
                std::fs::read_to_string(&output).unwrap_or_default()
            ));
            continue;
        }
        // The capture states the plan approved before any host, and no
        // other.
        let captured: Value =
            serde_yaml::from_str(&std::fs::read_to_string(&output).expect("the capture"))
                .expect("the capture is YAML");
        let current = &captured["plans"]["current"];
        let approved_by = current["approvedBy"].as_str();
        if approved_by != case.approved.then_some(APPROVER) || current.is_null() == case.approved {
            differences.push(format!(
                "{case:?}: the capture states the current plan {current}"
            ));
        }
        let golden_text = std::fs::read_to_string(output.with_extension("golden")).expect("golden");
        let golden: Vec<Value> = serde_yaml::from_str(&golden_text).expect("the golden is YAML");
        goldens.insert(
            case.name.clone(),
            Golden::of(&golden[0], &case.config_map()),
        );
    }
    goldens
}

/// No Event of any parent before any host; the ConfigMaps as created, by
/// parent.
async fn nothing_written_yet(world: &World, cases: &[Case]) -> BTreeMap<String, Option<Seen>> {
    let client = &world.client;
    let mut before = BTreeMap::new();
    for case in cases {
        let ns = world.ns_of(case);
        let events = events_of(client, &ns, "Widget", &case.name).await;
        assert!(
            events.is_empty(),
            "{case:?}: Events before any host: {events:?}"
        );
        let configmaps = objects::api(client, &ns, "v1", "ConfigMap");
        before.insert(
            case.name.clone(),
            config_map(&configmaps, &case.config_map()).await,
        );
    }
    before
}

/// The operator over both namespaces until every parent's Ready observes
/// its generation and nothing is left to do; then stopped.
async fn operate_until_settled(world: &World, admin: &Path, cases: &[Case]) -> Host {
    let client = &world.client;
    let mut host = Host::start_with(admin, &["--namespaces", &world.watched], "agreement").await;
    eventually(
        "every Widget's Ready observing its generation",
        async || {
            let mut unsettled = Vec::new();
            for case in cases {
                let api = objects::api(client, &world.ns_of(case), widgets::API_VERSION, "Widget");
                let w = get(&api, &case.name).await;
                let generation = w["metadata"]["generation"].as_i64().unwrap_or(-1);
                if condition(&w, "Ready").is_none_or(|c| c.observed_generation != generation) {
                    unsettled.push((case.name.clone(), summary(&w)));
                }
            }
            if unsettled.is_empty() {
                Ok(())
            } else {
                Err(unsettled)
            }
        },
    )
    .await;
    // Nothing left to do: what a later pass would publish or change lands
    // before the host stops.
    settle().await;
    host.stop();
    host
}

/// What differs between what the operator left of one case (its status,
/// Events, ConfigMap and plans) and what its capture's golden says.
async fn operator_against_golden(
    client: &kube::Client,
    ns: &str,
    case: &Case,
    golden: &Golden,
    before: &BTreeMap<String, Option<Seen>>,
    uids: &BTreeMap<String, String>,
) -> Vec<String> {
    let api = objects::api(client, ns, widgets::API_VERSION, "Widget");
    let w = get(&api, &case.name).await;
    let mut wrong = status_against_golden(&w, golden);

    // The Events, each repeat counted.
    let published = sorted(
        events_of(client, ns, "Widget", &case.name)
            .await
            .into_iter()
            .flat_map(|e| {
                std::iter::repeat_n((e.type_, e.reason), usize::try_from(e.count).unwrap_or(1))
            }),
    );
    if published != golden.events {
        wrong.push(format!(
            "Events: the operator published {published:?}, the capture expects {:?}",
            golden.events
        ));
    }

    let configmaps = objects::api(client, ns, "v1", "ConfigMap");
    let now = config_map(&configmaps, &case.config_map()).await;
    wrong.extend(config_map_against_golden(
        case,
        golden,
        &now,
        &before[&case.name],
        &uids[&case.name],
    ));
    let plan_ref = w["status"]["currentPlanRef"]["name"].as_str();
    wrong.extend(plans_against_golden(client, ns, &uids[&case.name], golden, plan_ref).await);
    wrong
}

/// What differs between the status the operator wrote and the golden's:
/// its conditions, Ready observing the generation, the change summary, and
/// whether a plan is named.
fn status_against_golden(w: &Value, golden: &Golden) -> Vec<String> {
    let mut wrong = Vec::new();
    let status = &w["status"];
    let generation = w["metadata"]["generation"].as_i64().unwrap_or(-1);
    let live = conditions(status);
    if live != golden.conditions {
        wrong.push(format!(
            "conditions: the operator wrote {live:?}, the capture expects {:?}",
            golden.conditions
        ));
    }
    if condition(w, "Ready").is_none_or(|c| c.observed_generation != generation) {
        wrong.push(format!(
            "Ready does not observe generation {generation}: {:?}",
            summary(w)
        ));
    }
    if status["changeSummary"] != golden.change_summary {
        wrong.push(format!(
            "changeSummary: the operator wrote {}, the capture expects {}",
            status["changeSummary"], golden.change_summary
        ));
    }
    let plan_ref = status["currentPlanRef"]["name"].as_str();
    if plan_ref.is_some() != golden.plan_named {
        wrong.push(format!(
            "currentPlanRef: the operator wrote {}, the capture expects {}",
            status["currentPlanRef"],
            if golden.plan_named { "one" } else { "none" }
        ));
    }
    wrong
}

/// The ConfigMap: holding what the golden applies where nothing is held
/// (left as is where it held it already), untouched where a gate holds it;
/// what differs, `was` before any host and `now` after the operator.
fn config_map_against_golden(
    case: &Case,
    golden: &Golden,
    now: &Option<Seen>,
    was: &Option<Seen>,
    uid: &str,
) -> Vec<String> {
    let mut wrong = Vec::new();
    match (&golden.held, &golden.applied) {
        (None, Some(data)) => {
            if !now.as_ref().is_some_and(|c| c.holds(data, uid)) {
                wrong.push(format!(
                    "ConfigMap {}: the operator left {now:?}, the capture applies data {data} (owned by the parent)",
                    case.config_map()
                ));
            } else if was.as_ref().is_some_and(|c| c.holds(data, uid))
                && now.as_ref().map(|c| &c.resource_version)
                    != was.as_ref().map(|c| &c.resource_version)
            {
                wrong.push(format!(
                    "ConfigMap {}: found as asked, yet the operator wrote it: {was:?} became {now:?}",
                    case.config_map()
                ));
            }
        }
        (None, None) => wrong.push(format!(
            "ConfigMap {}: the capture asks for no apply of it and holds nothing",
            case.config_map()
        )),
        (Some(held), _) => {
            if now != was {
                wrong.push(format!(
                    "ConfigMap {}: held ({held}) by the capture, but the operator changed it from {was:?} to {now:?}",
                    case.config_map()
                ));
            }
        }
    }
    wrong
}

/// The plans of the parent `uid`: Pending and named by the status where a
/// gate holds the changes, none open otherwise; what differs.
async fn plans_against_golden(
    client: &kube::Client,
    ns: &str,
    uid: &str,
    golden: &Golden,
    plan_ref: Option<&str>,
) -> Vec<String> {
    let mut wrong = Vec::new();
    let plans: Vec<Value> = objects::api(client, ns, "reconciler.dev/v1alpha1", "ReconcilePlan")
        .list(&kube::api::ListParams::default().labels(&format!("{PARENT_UID_LABEL}={uid}")))
        .await
        .expect("listing plans")
        .items
        .into_iter()
        .map(|p| serde_json::to_value(p).unwrap())
        .collect();
    let phase = |p: &Value| {
        p["status"]["phase"]
            .as_str()
            .unwrap_or("Pending")
            .to_owned()
    };
    let open: Vec<(String, String)> = plans
        .iter()
        .map(|p| (s(&p["metadata"]["name"]), phase(p)))
        .filter(|(_, phase)| matches!(phase.as_str(), "Pending" | "Approved" | "Applying"))
        .collect();
    match &golden.held {
        Some(held) => {
            let named_pending = open
                .iter()
                .any(|(name, phase)| Some(name.as_str()) == plan_ref && phase == "Pending");
            if open.len() != 1 || !named_pending {
                wrong.push(format!(
                    "plans: held ({held}) by the capture, but the operator's open plans are {open:?} and its status names {plan_ref:?}"
                ));
            }
        }
        None => {
            if !open.is_empty() {
                wrong.push(format!(
                    "plans: nothing held by the capture, but the operator left open plans {open:?}"
                ));
            }
        }
    }
    wrong
}
