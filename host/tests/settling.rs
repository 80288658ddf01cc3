//! Every change settles (issue 51), against the real API server: a child
//! the server stores otherwise than the guest wrote it (an empty map
//! dropped) is written once and then left alone, under approval auto and
//! under manual, where one plan is approved once and no plan follows it.
//! The writer test guest (`guests/testing/writer`) asks for
//! `<name>-config` with `spec.data` and, with `spec.extra`, for
//! `<name>-extra` with `data: {}`. The mirror test guest
//! (`guests/testing/mirror`) asks for the bodies of its `spec.children`
//! verbatim: a seeded fuzz of ConfigMaps, Secrets, Services, Deployments,
//! CronJobs, RoleBindings and NetworkPolicies settles, and a body the
//! server always rewrites stalls once (ChangeNotSettling) instead of
//! being made forever.

use std::time::Duration;

use kube::Api;
use kube::api::DynamicObject;
use reconciler_host_harness::objects;
use reconciler_host_harness::objects::create;
use reconciler_host_harness::operator::{
    Guests, Host, condition, events_about, events_of, eventually, fixture_of, free_addr, http_get,
    install_crds, published, settle, wait_for,
};
use reconciler_host_harness::plans::{self, install};
use reconciler_host_harness::widgets::{widget, widgets};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

const GUESTS: Guests = Guests {
    dir: "settling-tests",
    crates: &["writer-guest", "mirror-guest"],
    settings: &[],
    // The host says when it holds a change back for not settling.
    expected_warnings: &["a change does not settle"],
};

/// How long a settled parent is watched for writes it should not make.
const QUIET: Duration = Duration::from_secs(60);

async fn namespace(prefix: &str) -> TestNamespace {
    fixture_of(&GUESTS);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    install(&ns.client()).await;
    ns
}

async fn all_plans(ns: &TestNamespace) -> Vec<Value> {
    plans::listed(&ns.client(), ns.name()).await
}

/// Waits until the Widget `name` says ChildReady `status`/`reason`.
async fn child_ready(ns: &TestNamespace, name: &str, status: &str, reason: &str) {
    wait_for(&widgets(ns), name, &[("ChildReady", status, reason)]).await;
}

/// Waits until the Mirror `name` is stalled by a change that does not
/// settle.
async fn not_settling(ns: &TestNamespace, name: &str) -> Value {
    wait_for(
        &mirrors(ns),
        name,
        &[("Stalled", "True", "ChangeNotSettling")],
    )
    .await
}

/// The Widgets of the settling cases: an empty map asked for the child
/// itself, and a second child asked for with an empty map.
fn empty_maps() -> [Value; 2] {
    [
        widget("empty", json!({"data": {}})),
        widget("extra", json!({"data": {"a": "1"}, "extra": true})),
    ]
}

/// The ConfigMaps those Widgets ask for.
const CHILDREN: [&str; 3] = ["empty-config", "extra-config", "extra-extra"];

/// What a user counts of the namespace's writes: applies of each child,
/// status writes of each Widget, plans, Events about the Widgets.
#[derive(Debug, PartialEq)]
struct Writes {
    applies: Vec<usize>,
    status: Vec<usize>,
    plans: usize,
    events: usize,
}

async fn writes(host: &Host, ns: &TestNamespace) -> Writes {
    let mut events = 0;
    for w in ["empty", "extra"] {
        events += events_about(&ns.client(), ns.name(), w).await.len();
    }
    Writes {
        applies: CHILDREN
            .iter()
            .map(|c| {
                host.requests(
                    "PATCH",
                    &format!("/namespaces/{}/configmaps/{c}", ns.name()),
                )
            })
            .collect(),
        status: ["empty", "extra"]
            .iter()
            .map(|w| {
                host.requests(
                    "PATCH",
                    &format!("/namespaces/{}/widgets/{w}/status", ns.name()),
                )
            })
            .collect(),
        plans: all_plans(ns).await.len(),
        events,
    }
}

/// Each child written once, and then nothing written for [`QUIET`]: no
/// apply, no status, no plan, no Event.
async fn stays_settled(host: &Host, ns: &TestNamespace) -> Writes {
    settle().await;
    let settled = writes(host, ns).await;
    assert_eq!(settled.applies, vec![1, 1, 1], "each child written once");
    tokio::time::sleep(QUIET).await;
    let after = writes(host, ns).await;
    assert_eq!(after, settled, "nothing written once settled");
    after
}

#[tokio::test]
async fn empty_maps_settle_under_approval_auto() {
    let ns = namespace("settle-auto").await;
    let host = Host::start(ns.name()).await;
    for w in empty_maps() {
        create(&ns.client(), ns.name(), w).await;
    }
    child_ready(&ns, "empty", "True", "AsExpected").await;
    child_ready(&ns, "extra", "True", "AsExpected").await;
    let settled = stays_settled(&host, &ns).await;
    assert_eq!(settled.plans, 2, "one plan each, executed at once");
    host.finish();
}

#[tokio::test]
async fn empty_maps_settle_under_approval_manual_one_plan_approved_once() {
    let ns = namespace("settle-manual").await;
    let host = Host::start_in(ns.name(), &["--approval", "Widget=manual"]).await;
    for w in empty_maps() {
        create(&ns.client(), ns.name(), w).await;
    }
    child_ready(&ns, "empty", "False", "AwaitingApproval").await;
    child_ready(&ns, "extra", "False", "AwaitingApproval").await;
    let pending = eventually("a plan for each Widget", async || {
        let plans = all_plans(&ns).await;
        if plans.len() == 2 {
            Ok(plans)
        } else {
            Err(plans.len())
        }
    })
    .await;
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    for plan in &pending {
        let name = plan["metadata"]["name"].as_str().expect("a name");
        let (ok, out, err) = plans::plan_cli(
            std::path::Path::new(env!("CARGO_BIN_EXE_reconciler-host")),
            &kubeconfig,
            &["approve", name, "-n", ns.name()],
        );
        assert!(ok, "{out}{err}");
    }
    child_ready(&ns, "empty", "True", "AsExpected").await;
    child_ready(&ns, "extra", "True", "AsExpected").await;
    let settled = stays_settled(&host, &ns).await;
    assert_eq!(settled.plans, 2, "the two approved plans, and no other");
    host.finish();
}

// The mirror guest's cases.

const MIRROR_VERSION: &str = "testing.reconciler.dev/v1";

fn mirror(name: &str, child: &Value) -> Value {
    json!({"apiVersion": MIRROR_VERSION, "kind": "Mirror", "metadata": {"name": name},
           "spec": {"children": [child]}})
}

fn mirrors(ns: &TestNamespace) -> Api<DynamicObject> {
    objects::api(&ns.client(), ns.name(), MIRROR_VERSION, "Mirror")
}

/// Writes (PATCH, POST, PUT, DELETE) the host sent into the namespace, in
/// its log `log`.
fn writes_in(log: &str, ns: &str) -> usize {
    let path = format!("/namespaces/{ns}/");
    log.lines()
        .filter(|l| l.contains(&path) && l.trim_end().ends_with("requesting"))
        .filter(|l| {
            ["PATCH", "POST", "PUT", "DELETE"]
                .iter()
                .any(|m| l.contains(&format!("http.method={m} ")))
        })
        .count()
}

/// Applies of the child `plural`/`name` in the namespace, in `log`.
fn applies_in(log: &str, ns: &str, plural: &str, name: &str) -> usize {
    let path = format!("/namespaces/{ns}/{plural}/{name}?");
    log.lines()
        .filter(|l| l.contains("http.method=PATCH ") && l.contains(&path))
        .filter(|l| l.trim_end().ends_with("requesting"))
        .count()
}

/// The sum of the samples of `series` (a name with its labels) on the
/// host's metrics endpoint.
fn sample(metrics: std::net::SocketAddr, series: &str) -> f64 {
    http_get(metrics, "/metrics")
        .1
        .lines()
        .filter(|l| l.starts_with(series))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A body the API server rewrites on every write (it sets
/// `metadata.creationTimestamp` itself, and no manager owns it): made
/// twice, then held back. The parent says so (Stalled True,
/// ChangeNotSettling, naming the object and the field; Ready False), one
/// Warning, the counter at 1, and at most 3 writes of the child in a
/// minute.
#[tokio::test]
async fn a_body_the_server_always_rewrites_stalls_once_instead_of_looping() {
    let ns = namespace("settle-never").await;
    let metrics = free_addr();
    let host = Host::start_in(ns.name(), &["--metrics-addr", &metrics.to_string()]).await;
    let child = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "stamped", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "data": {"a": "1"}});
    create(&ns.client(), ns.name(), mirror("never", &child)).await;
    let stalled = not_settling(&ns, "never").await;
    let message = condition(&stalled, "Stalled").unwrap().message;
    assert!(
        message.contains(&format!("ConfigMap {}/stamped", ns.name()))
            && message.contains(".metadata.creationTimestamp"),
        "{message}"
    );
    let ready = condition(&stalled, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ChangeNotSettling")
    );
    tokio::time::sleep(QUIET).await;
    let log = host.log_text();
    let applies = applies_in(&log, ns.name(), "configmaps", "stamped");
    assert!(
        (1..=3).contains(&applies),
        "{applies} applies of the child in a minute"
    );
    let events = events_of(&ns.client(), ns.name(), "Mirror", "never").await;
    assert_eq!(
        published(&events, "Warning", "ChangeNotSettling"),
        1,
        "{events:?}"
    );
    assert_eq!(
        sample(
            metrics,
            "reconciler_changes_not_settling_total{kind=\"Mirror\"}"
        ),
        1.0
    );
    host.finish();
}

/// Under approval manual, a change an approved plan made that did not
/// settle is not planned again: one plan, approved once, then the parent
/// Stalled (ChangeNotSettling) and no other plan for a minute.
#[tokio::test]
async fn under_approval_manual_a_change_that_does_not_settle_is_not_planned_again() {
    let ns = namespace("settle-never-manual").await;
    let host = Host::start_in(ns.name(), &["--approval", "Mirror=manual"]).await;
    let child = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "stamped", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "data": {"a": "1"}});
    create(&ns.client(), ns.name(), mirror("never", &child)).await;
    let pending = eventually("one plan", async || match all_plans(&ns).await.as_slice() {
        [plan] => Ok(plan.clone()),
        other => Err(other.len()),
    })
    .await;
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let name = pending["metadata"]["name"].as_str().expect("a name");
    let (ok, out, err) = plans::plan_cli(
        std::path::Path::new(env!("CARGO_BIN_EXE_reconciler-host")),
        &kubeconfig,
        &["approve", name, "-n", ns.name()],
    );
    assert!(ok, "{out}{err}");
    not_settling(&ns, "never").await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        all_plans(&ns).await.len(),
        1,
        "no plan after the approved one"
    );
    let applies = applies_in(&host.log_text(), ns.name(), "configmaps", "stamped");
    assert_eq!(applies, 1, "made once, by the approved plan");
    host.finish();
}

/// A seeded generator (SplitMix64): the same seed, the same cases.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn pick(&mut self, choices: &[Value]) -> Value {
        let i = usize::try_from(self.next() % choices.len() as u64).expect("an index");
        choices[i].clone()
    }

    fn chance(&mut self) -> bool {
        self.next().is_multiple_of(2)
    }

    /// Sets `object[key]` to one of `choices`, or leaves it out (`Null`
    /// among the choices is written as `null`; `"<absent>"` leaves it out).
    fn maybe(&mut self, object: &mut Value, key: &str, choices: &[Value]) {
        let v = self.pick(choices);
        if v != json!("<absent>") {
            object[key] = v;
        }
    }

    /// Labels or annotations: left out, empty, null, or some.
    fn metadata(&mut self, name: &str) -> Value {
        let mut md = json!({"name": name});
        let maps = [
            json!("<absent>"),
            json!({}),
            Value::Null,
            json!({"team": "a"}),
            json!({"team": ""}),
        ];
        self.maybe(&mut md, "labels", &maps);
        self.maybe(&mut md, "annotations", &maps);
        md
    }

    fn config_map(&mut self, name: &str) -> Value {
        let mut o =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": self.metadata(name)});
        let data = [
            json!("<absent>"),
            json!({}),
            Value::Null,
            json!({"a": "1"}),
            json!({"a": "", "b": "x"}),
        ];
        self.maybe(&mut o, "data", &data);
        self.maybe(
            &mut o,
            "binaryData",
            &[json!("<absent>"), json!({}), json!({"bin": "AAE="})],
        );
        o
    }

    fn secret(&mut self, name: &str) -> Value {
        let mut o = json!({"apiVersion": "v1", "kind": "Secret", "metadata": self.metadata(name)});
        self.maybe(&mut o, "type", &[json!("<absent>"), json!("Opaque")]);
        self.maybe(
            &mut o,
            "data",
            &[json!("<absent>"), json!({}), json!({"k": "dmFsdWU="})],
        );
        self.maybe(
            &mut o,
            "stringData",
            &[json!("<absent>"), json!({}), json!({"s": "plain"})],
        );
        o
    }

    fn port(&mut self, key: &str, port: u16) -> Value {
        let mut p = json!({key: port});
        self.maybe(&mut p, "protocol", &[json!("<absent>"), json!("TCP")]);
        p
    }

    fn service(&mut self, name: &str) -> Value {
        let mut port = self.port("port", 80);
        self.maybe(
            &mut port,
            "targetPort",
            &[json!("<absent>"), json!(8080), json!("http"), json!(80)],
        );
        self.maybe(&mut port, "name", &[json!("<absent>"), json!("http")]);
        let mut spec = json!({"ports": [port]});
        self.maybe(
            &mut spec,
            "selector",
            &[json!("<absent>"), json!({}), json!({"app": name})],
        );
        self.maybe(
            &mut spec,
            "sessionAffinity",
            &[json!("<absent>"), json!("None")],
        );
        self.maybe(&mut spec, "type", &[json!("<absent>"), json!("ClusterIP")]);
        json!({"apiVersion": "v1", "kind": "Service", "metadata": self.metadata(name), "spec": spec})
    }

    fn container(&mut self) -> Value {
        let mut c = json!({"name": "main", "image": "registry.k8s.io/pause:3.10"});
        let cpu = [
            json!("1000m"),
            json!("1"),
            json!(1),
            json!("0.5"),
            json!("500m"),
            json!(0.5),
        ];
        let memory = [
            json!("0.5Gi"),
            json!("512Mi"),
            json!("536870912"),
            json!(536_870_912),
        ];
        if self.chance() {
            c["resources"] =
                json!({"requests": {"cpu": self.pick(&cpu), "memory": self.pick(&memory)}});
        }
        if self.chance() {
            c["ports"] = json!([self.port("containerPort", 8080)]);
        }
        self.maybe(
            &mut c,
            "imagePullPolicy",
            &[json!("<absent>"), json!("IfNotPresent")],
        );
        self.maybe(
            &mut c,
            "terminationMessagePath",
            &[json!("<absent>"), json!("/dev/termination-log")],
        );
        self.maybe(
            &mut c,
            "env",
            &[
                json!("<absent>"),
                json!([]),
                json!([{"name": "A", "value": "1"}]),
            ],
        );
        c
    }

    fn deployment(&mut self, name: &str) -> Value {
        let labels = json!({"app": name});
        let mut spec = json!({"selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [self.container()]}}});
        self.maybe(
            &mut spec,
            "replicas",
            &[json!("<absent>"), json!(0), json!(1)],
        );
        self.maybe(
            &mut spec,
            "strategy",
            &[
                json!("<absent>"),
                json!({}),
                json!({"type": "RollingUpdate"}),
            ],
        );
        self.maybe(
            &mut spec,
            "revisionHistoryLimit",
            &[json!("<absent>"), json!(10)],
        );
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": self.metadata(name), "spec": spec})
    }

    fn cron_job(&mut self, name: &str) -> Value {
        let mut pod = json!({"containers": [self.container()], "restartPolicy": "OnFailure"});
        self.maybe(
            &mut pod,
            "dnsPolicy",
            &[json!("<absent>"), json!("ClusterFirst")],
        );
        // Never due within a test: 1 January, 00:00.
        let mut spec = json!({"schedule": "0 0 1 1 *",
            "jobTemplate": {"spec": {"template": {"spec": pod}}}});
        self.maybe(
            &mut spec,
            "suspend",
            &[json!("<absent>"), json!(false), json!(true)],
        );
        self.maybe(
            &mut spec,
            "concurrencyPolicy",
            &[json!("<absent>"), json!("Allow")],
        );
        self.maybe(
            &mut spec,
            "successfulJobsHistoryLimit",
            &[json!("<absent>"), json!(3)],
        );
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": self.metadata(name), "spec": spec})
    }

    fn role_binding(&mut self, name: &str, ns: &str) -> Value {
        let mut o = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": self.metadata(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
        let subjects = [
            json!("<absent>"),
            json!([]),
            json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]),
            json!([{"kind": "ServiceAccount", "name": "default", "namespace": ns}]),
        ];
        self.maybe(&mut o, "subjects", &subjects);
        o
    }

    fn network_policy(&mut self, name: &str) -> Value {
        let mut spec = json!({});
        self.maybe(
            &mut spec,
            "podSelector",
            &[json!({}), json!({"matchLabels": {"app": name}})],
        );
        self.maybe(
            &mut spec,
            "policyTypes",
            &[json!("<absent>"), json!(["Ingress"])],
        );
        let mut port = json!({});
        self.maybe(&mut port, "port", &[json!(80), json!("http")]);
        self.maybe(&mut port, "protocol", &[json!("<absent>"), json!("TCP")]);
        self.maybe(
            &mut spec,
            "ingress",
            &[json!("<absent>"), json!([]), json!([{"ports": [port]}])],
        );
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": self.metadata(name), "spec": spec})
    }

    /// Case `i`: one child of the seven kinds, with its plural.
    fn case(&mut self, i: usize, ns: &str) -> (&'static str, Value) {
        let name = format!("c-{i}");
        match i % 7 {
            0 => ("configmaps", self.config_map(&name)),
            1 => ("secrets", self.secret(&name)),
            2 => ("services", self.service(&name)),
            3 => ("deployments", self.deployment(&name)),
            4 => ("cronjobs", self.cron_job(&name)),
            5 => ("rolebindings", self.role_binding(&name, ns)),
            _ => ("networkpolicies", self.network_policy(&name)),
        }
    }
}

/// How many cases the fuzz runs: 300, or `SETTLING_CASES`.
fn case_count() -> usize {
    std::env::var("SETTLING_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

/// Random child bodies (empty maps and lists, nulls, defaulted fields left
/// out or given, quantities in every spelling, int-or-string ports, labels
/// and annotations empty or not), each asked for by its own Mirror: every
/// case is made with at most 2 applies, none stalls, and then the host
/// writes nothing into the namespace for 10 s. The cases that did not
/// settle are printed. `SETTLING_SEED` repeats a run.
#[tokio::test]
async fn random_child_bodies_settle_against_the_real_server() {
    let ns = namespace("settle-fuzz").await;
    let seed = std::env::var("SETTLING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(51);
    eprintln!("settling fuzz: seed {seed}, {} cases", case_count());
    let mut cases = Cases(seed);
    let all: Vec<(&str, Value)> = (0..case_count())
        .map(|i| cases.case(i, ns.name()))
        .collect();
    let host = Host::start(ns.name()).await;
    for (i, (_, child)) in all.iter().enumerate() {
        create(&ns.client(), ns.name(), mirror(&format!("e-{i}"), child)).await;
    }
    let api = mirrors(&ns);
    let mirrored = |o: &Value| condition(o, "Mirrored").is_some_and(|c| c.status == "True");
    let stalled = |o: &Value| condition(o, "Stalled").is_some_and(|c| c.status == "True");
    // Made, or stalled: waited for, up to ten minutes (a slow machine).
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    let parents = loop {
        let parents: Vec<Value> = api
            .list(&Default::default())
            .await
            .expect("listing the Mirrors")
            .items
            .into_iter()
            .map(|o| serde_json::to_value(o).unwrap())
            .collect();
        let done = parents.iter().filter(|o| mirrored(o) || stalled(o)).count();
        if done == all.len() || std::time::Instant::now() > deadline {
            break parents;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    settle().await;
    let before = writes_in(&host.log_text(), ns.name());
    tokio::time::sleep(Duration::from_secs(10)).await;
    let log = host.log_text();
    let mut unsettled = Vec::new();
    for (i, (plural, child)) in all.iter().enumerate() {
        let name = format!("e-{i}");
        let parent = parents
            .iter()
            .find(|o| o["metadata"]["name"] == name.as_str());
        let applies = applies_in(&log, ns.name(), plural, &format!("c-{i}"));
        let made = parent.is_some_and(mirrored);
        let stall = parent
            .and_then(|o| condition(o, "Stalled"))
            .filter(|c| c.status == "True");
        if !made || stall.is_some() || applies > 2 {
            unsettled.push(format!(
                "case {i}: {applies} applies, Mirrored {:?}, Stalled {:?}: {child}",
                parent.and_then(|o| condition(o, "Mirrored")),
                stall
            ));
        }
    }
    let quiet = writes_in(&log, ns.name()) - before;
    for line in &unsettled {
        eprintln!("{line}");
    }
    assert!(
        unsettled.is_empty(),
        "{} of {} cases did not settle",
        unsettled.len(),
        all.len()
    );
    assert_eq!(
        quiet, 0,
        "writes into the namespace in the 10 s after settling"
    );
    host.finish();
}
