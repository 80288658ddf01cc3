//! The ring against the real API server (issue 34): replicas of the host
//! with `--ring`, the writer test guest. A member joining takes the
//! parents rendezvous hashing gives it, each only after its old owner gave
//! it up; from then on each parent is written by its owner alone. A member
//! SIGKILLed (the coordinator among them) has its parents taken over once
//! its Lease lapses, and a change made meanwhile is not lost. A team that
//! may edit its parents cannot move them, and one that may write Leases
//! cannot make a member (deploy/ring-admission.yaml).
//! The shared test API server has KEP-5866's gate off, so `auto` selects
//! by labels here (where it is on: tests/ring_server.rs).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use reconciler_host::operator::ring::{DRAIN, FIELD_MANAGER, MEMBER, assignment, members, view};
use reconciler_host_harness::access_requests::{apply, deploy_documents};
use reconciler_host_harness::identity::{apply_rbac, kubeconfig_as, role_binding};
use reconciler_host_harness::objects::{self, create, merge};
use reconciler_host_harness::operator::{
    Guests, Host, eventually, fixture_of, http_get, install_crds,
};
use reconciler_host_harness::proxy::FaultProxy;
use reconciler_host_harness::ring::{self, cached, live, live_now, named};
use reconciler_host_harness::widgets::{widget, widgets};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

const WRITER: Guests = Guests {
    dir: "ring-tests",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

async fn namespace(prefix: &str) -> TestNamespace {
    fixture_of(&WRITER);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    ns
}

/// A member of the ring in `ns`, logging to `<log>.log`, returned once it
/// reconciles, with the address of its metrics.
async fn member(ns: &TestNamespace, log: &str) -> (Host, SocketAddr) {
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    ring::member(ns, &kubeconfig, log, "6s").await
}

/// Waits until each member caches exactly the Widgets assigned to it and
/// their ConfigMaps, no other: `owned[i]` of each.
async fn caches_hold(members: &[SocketAddr], owned: &[usize]) {
    eventually(
        "each member caches its own parents and children",
        async || {
            let now: Vec<(usize, usize)> = members
                .iter()
                .map(|m| (cached(*m, "Widget"), cached(*m, "ConfigMap")))
                .collect();
            let want: Vec<(usize, usize)> = owned.iter().map(|n| (*n, *n)).collect();
            if now == want {
                Ok(())
            } else {
                Err((now, want))
            }
        },
    )
    .await;
}

/// Each ConfigMap of `names` carries its Widget's member label.
async fn children_labelled(ns: &TestNamespace, names: &[String], members: &[String]) {
    let api = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    for name in names {
        let owner = assignment::owner(members, ns.name(), name).unwrap();
        eventually(
            &format!("{name}-config labelled {owner}"),
            async || match api.get_opt(&format!("{name}-config")).await {
                Ok(Some(o))
                    if o.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(MEMBER))
                        .map(String::as_str)
                        == Some(owner) =>
                {
                    Ok(())
                }
                other => Err(format!("{:?}", other.map(|o| o.map(|o| o.metadata.labels)))),
            },
        )
        .await;
    }
}

/// Each Widget's ring labels: (member, drain).
async fn labels(ns: &TestNamespace) -> BTreeMap<String, (Value, Value)> {
    let list = widgets(ns)
        .list(&Default::default())
        .await
        .expect("Widgets");
    list.items
        .into_iter()
        .map(|w| {
            let labels = serde_json::to_value(&w.metadata.labels).unwrap_or_default();
            (
                w.metadata.name.clone().unwrap_or_default(),
                (labels[MEMBER].clone(), labels[DRAIN].clone()),
            )
        })
        .collect()
}

/// Waits until every Widget is labelled with the member rendezvous
/// hashing gives it among `members`, and none is being drained.
async fn assigned(ns: &TestNamespace, names: &[String], members: &[String]) {
    eventually("every Widget assigned to its owner", async || {
        let now = labels(ns).await;
        let wrong: Vec<_> = names
            .iter()
            .filter(|n| {
                let owner = assignment::owner(members, ns.name(), n).unwrap();
                now.get(*n) != Some(&(json!(owner), Value::Null))
            })
            .map(|n| (n.clone(), now.get(n).cloned()))
            .collect();
        if wrong.is_empty() { Ok(()) } else { Err(wrong) }
    })
    .await;
}

/// The ConfigMap of each of `names` holds `{"n": <name><suffix>}`.
async fn children_hold(ns: &TestNamespace, names: &[String], suffix: &str) {
    let api = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    for name in names {
        let want = json!({ "n": format!("{name}{suffix}") });
        eventually(&format!("{name}-config holds {want}"), async || {
            match api.get_opt(&format!("{name}-config")).await {
                Ok(Some(o)) if o.data["data"] == want => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
}

async fn make_widgets(ns: &TestNamespace, count: usize) -> Vec<String> {
    let names: Vec<String> = (0..count).map(|i| format!("w{i}")).collect();
    for name in &names {
        create(
            &ns.client(),
            ns.name(),
            widget(name, json!({"data": {"n": name}})),
        )
        .await;
    }
    names
}

/// Makes a Widget more until `member` owns one of `names`: the members'
/// names are random, and one run in 256 rendezvous hashing gives the
/// other member all of eight, leaving nothing of `member`'s to hand over
/// or take over.
async fn until_owning(
    ns: &TestNamespace,
    names: &mut Vec<String>,
    members: &[String],
    member: &str,
) {
    while !names
        .iter()
        .any(|n| assignment::owner(members, ns.name(), n) == Some(member))
    {
        assert!(names.len() < 64, "{member} owns none of {names:?}");
        let name = format!("w{}", names.len());
        create(
            &ns.client(),
            ns.name(),
            widget(&name, json!({"data": {"n": name}})),
        )
        .await;
        names.push(name);
    }
}

async fn change_widgets(ns: &TestNamespace, names: &[String], suffix: &str) {
    let api = widgets(ns);
    for name in names {
        merge(
            &api,
            name,
            json!({"spec": {"data": {"n": format!("{name}{suffix}")}}}),
        )
        .await;
    }
}

/// One member serves every Widget; a second joins and takes its share,
/// each Widget handed over by the first after its last pass; a change to
/// every Widget is then made by its owner alone.
#[tokio::test]
async fn a_joining_member_takes_its_share_once_the_owner_hands_it_over() {
    let ns = namespace("ring-join").await;
    let (a, a_metrics) = member(&ns, "join-a").await;
    assert!(
        a.log_text().contains("selection=\"labels\""),
        "auto selects by labels where the API server does not select: {}",
        a.log_text()
    );
    let names = make_widgets(&ns, 12).await;
    children_hold(&ns, &names, "").await;
    let alone = live(&ns).await;
    assert_eq!(alone.len(), 1, "{alone:?}");
    assigned(&ns, &names, &alone).await;
    children_labelled(&ns, &names, &alone).await;
    caches_hold(&[a_metrics], &[names.len()]).await;

    let (b, b_metrics) = member(&ns, "join-b").await;
    let both = live_now(&ns, 2).await;
    assigned(&ns, &names, &both).await;
    let b_id = named(&both, "join-b");
    let to_b: Vec<&String> = names
        .iter()
        .filter(|n| assignment::owner(&both, ns.name(), n) == Some(b_id))
        .collect();
    assert!(
        !to_b.is_empty() && to_b.len() < names.len(),
        "rendezvous hashing shares 12 Widgets between two members: {to_b:?}"
    );
    // Each moved Widget was handed over once, by a; b handed none.
    let handed = |host: &Host| {
        host.log_text()
            .lines()
            .filter(|l| l.contains("ring: handed over after the last pass"))
            .count()
    };
    assert_eq!(handed(&a), to_b.len(), "{}", a.log_text());
    assert_eq!(handed(&b), 0);
    // The children moved with their parents, before them; each member
    // caches its own alone.
    children_labelled(&ns, &names, &both).await;
    caches_hold(
        &[a_metrics, b_metrics],
        &[names.len() - to_b.len(), to_b.len()],
    )
    .await;

    let before: Vec<[usize; 2]> = names
        .iter()
        .map(|n| [a.status_writes(ns.name(), n), b.status_writes(ns.name(), n)])
        .collect();
    change_widgets(&ns, &names, "-2").await;
    children_hold(&ns, &names, "-2").await;
    for (name, before) in names.iter().zip(before) {
        let after = [
            a.status_writes(ns.name(), name),
            b.status_writes(ns.name(), name),
        ];
        let owner = usize::from(assignment::owner(&both, ns.name(), name) == Some(b_id));
        let grown = [after[0] - before[0], after[1] - before[1]];
        assert!(
            grown[owner] >= 1,
            "{name}: its owner wrote its status: {grown:?}"
        );
        assert_eq!(
            grown[1 - owner],
            0,
            "{name}: the other member did not: {grown:?}"
        );
    }
    a.finish();
    b.finish();
}

/// Two members serve the Widgets; the first (the coordinator) is
/// SIGKILLed and every Widget changed at once: once its Lease lapses the
/// other takes the coordinator Lease and every Widget, and makes every
/// change.
#[tokio::test]
async fn a_killed_members_parents_are_taken_over_and_no_change_is_lost() {
    let ns = namespace("ring-kill").await;
    let (mut a, _) = member(&ns, "kill-a").await;
    let (b, b_metrics) = member(&ns, "kill-b").await;
    let mut names = make_widgets(&ns, 8).await;
    let both = live_now(&ns, 2).await;
    until_owning(&ns, &mut names, &both, named(&both, "kill-a")).await;
    assigned(&ns, &names, &both).await;
    children_hold(&ns, &names, "").await;
    assert!(
        a.log_text().contains("ring: coordinating"),
        "the first member coordinates"
    );

    a.kill();
    change_widgets(&ns, &names, "-2").await;
    let b_id = named(&both, "kill-b").to_owned();
    assigned(&ns, &names, std::slice::from_ref(&b_id)).await;
    children_hold(&ns, &names, "-2").await;
    // The dead member's children relabelled by the survivor's applies.
    children_labelled(&ns, &names, &[b_id]).await;
    caches_hold(&[b_metrics], &[names.len()]).await;
    assert!(
        b.log_text().contains("ring: coordinating"),
        "{}",
        b.log_text()
    );
    b.finish();
}

/// Two members serve the Widgets; one leaves (SIGTERM): it hands every
/// parent over (children first) before it stops, so the other takes them
/// with their children, and a change made after is made.
#[tokio::test]
async fn a_leaving_member_hands_every_parent_over_before_it_stops() {
    let ns = namespace("ring-leave").await;
    let (a, a_metrics) = member(&ns, "leave-a").await;
    let (mut b, _) = member(&ns, "leave-b").await;
    let mut names = make_widgets(&ns, 8).await;
    let both = live_now(&ns, 2).await;
    until_owning(&ns, &mut names, &both, named(&both, "leave-b")).await;
    assigned(&ns, &names, &both).await;
    children_hold(&ns, &names, "").await;
    let b_id = named(&both, "leave-b").to_owned();
    let b_owned = names
        .iter()
        .filter(|n| assignment::owner(&both, ns.name(), n) == Some(b_id.as_str()))
        .count();
    assert!(b_owned > 0, "b serves some of the Widgets");

    assert!(b.stop().success(), "{}", b.log_text());
    let log = b.log_text();
    // Handed over while it ran, every one of its own.
    let handed = log
        .lines()
        .filter(|l| l.contains("ring: handed over after the last pass"))
        .count();
    assert_eq!(handed, b_owned, "{log}");
    assert!(log.contains("ring: left"), "{log}");
    let a_id = named(&both, "leave-a").to_owned();
    assigned(&ns, &names, std::slice::from_ref(&a_id)).await;
    children_labelled(&ns, &names, std::slice::from_ref(&a_id)).await;
    caches_hold(&[a_metrics], &[names.len()]).await;
    change_widgets(&ns, &names, "-2").await;
    children_hold(&ns, &names, "-2").await;
    a.finish();
}

/// A proxy adding latency in front of the test API server, and a
/// kubeconfig through it.
async fn slow_path(name: &str) -> (FaultProxy, PathBuf) {
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let text = std::fs::read_to_string(&kubeconfig).expect("the kubeconfig");
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: https://"))
        .expect("the server's address")
        .trim()
        .to_owned();
    let proxy = FaultProxy::start(server.parse().expect("an address"))
        .await
        .expect("the proxy");
    let path = kubeconfig.with_file_name(format!("{name}-{}.kubeconfig", std::process::id()));
    std::fs::write(&path, text.replace(&server, &proxy.addr().to_string()))
        .expect("the proxy's kubeconfig");
    (proxy, path)
}

/// Requests in `log` with `method` whose path is `path` or `path?...`
/// (no deeper), at the line ending `phase` (`requesting` when sent,
/// `stream closed` when answered): their times.
fn request_times(log: &str, method: &str, path: &str, phase: &str) -> Vec<jiff::Timestamp> {
    log.lines()
        .filter(|l| l.trim_end().ends_with(phase))
        .filter(|l| l.contains(&format!("http.method={method} ")))
        .filter(|l| {
            l.split("http.url=")
                .nth(1)
                .and_then(|u| u.split_whitespace().next())
                .and_then(|u| u.split('?').next())
                .is_some_and(|u| u.ends_with(path))
        })
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

/// A member whose passes are slow (every request through a proxy adding
/// latency) is asked to hand Widgets over while their passes are in
/// flight: each moved Widget's status and ConfigMap are written by the new
/// owner only after the old owner's last write of them was answered. (The
/// proxy runs on the test's runtime: two threads, so it still serves while
/// `finish` blocks one.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handover_waits_for_the_pass_in_flight() {
    let ns = namespace("ring-in-flight").await;
    let (proxy, slow) = slow_path("ring-in-flight").await;
    // A Lease long enough for renewals through the slow path: a's writes
    // are not fenced off.
    let (a, _) = ring::member(&ns, &slow, "flight-a", "15s").await;
    let names = make_widgets(&ns, 16).await;
    let alone = live_now(&ns, 1).await;
    assigned(&ns, &names, &alone).await;
    children_hold(&ns, &names, "").await;

    // The Widgets changed round after round while a is slow and b joins,
    // until b serves: a's passes are in flight when the coordinator (a)
    // asks for the moves (changed once only, they could all be done by
    // then on a loaded machine; changed on and on, every handover's
    // resourceVersion precondition would keep failing).
    proxy.set_latency(Duration::from_millis(200));
    let churning = Arc::new(AtomicBool::new(true));
    let churn = {
        let (api, names, churning) = (widgets(&ns), names.clone(), churning.clone());
        tokio::spawn(async move {
            let mut round = 0;
            while churning.load(Ordering::Relaxed) {
                for name in &names {
                    let data = json!({"spec": {"data": {"n": format!("{name}-c{round}")}}});
                    merge(&api, name, data).await;
                }
                round += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    let (b, _) = member(&ns, "flight-b").await;
    // Until b serves (it acknowledged a view): only then are moves asked.
    let both = ring::serving_now(&ns, 2).await;
    // And until the coordinator asked a for the moves.
    eventually("a asked to hand Widgets over", async || {
        let drains = labels(&ns)
            .await
            .values()
            .filter(|(_, d)| !d.is_null())
            .count();
        if drains > 0 { Ok(()) } else { Err(drains) }
    })
    .await;
    churning.store(false, Ordering::Relaxed);
    churn.await.expect("the churn");
    assigned(&ns, &names, &both).await;
    change_widgets(&ns, &names, "-2").await;
    children_hold(&ns, &names, "-2").await;
    proxy.set_latency(Duration::ZERO);
    let b_id = named(&both, "flight-b");
    let moved: Vec<&String> = names
        .iter()
        .filter(|n| assignment::owner(&both, ns.name(), n) == Some(b_id))
        .collect();
    assert!(!moved.is_empty(), "b takes some of the 16 Widgets");
    let (a_log, b_log) = (a.log_text(), b.log_text());
    // The moves the test is about: a write of a's to a Widget in flight
    // (sent, not yet answered) when the coordinator asked a to hand it
    // over.
    let in_flight = moved
        .iter()
        .filter(|name| {
            let asked = request_times(&a_log, "PATCH", &format!("/widgets/{name}"), "requesting");
            let paths = [
                format!("/widgets/{name}/status"),
                format!("/configmaps/{name}-config"),
            ];
            paths.iter().any(|path| {
                let sent = request_times(&a_log, "PATCH", path, "requesting");
                let answered = request_times(&a_log, "PATCH", path, "stream closed");
                sent.iter()
                    .zip(&answered)
                    .any(|(s, done)| asked.iter().any(|at| s < at && at < done))
            })
        })
        .count();
    assert!(
        in_flight > 0,
        "no write of a's was in flight when it was asked to hand a Widget over"
    );
    for name in moved {
        for path in [
            format!("/widgets/{name}/status"),
            format!("/configmaps/{name}-config"),
        ] {
            let a_last = request_times(&a_log, "PATCH", &path, "stream closed")
                .into_iter()
                .max();
            let b_first = request_times(&b_log, "PATCH", &path, "requesting")
                .into_iter()
                .min();
            if let (Some(a_last), Some(b_first)) = (a_last, b_first) {
                assert!(
                    a_last < b_first,
                    "{path}: a's last write answered at {a_last}, b's first sent at {b_first}"
                );
            }
        }
    }
    a.finish();
    b.finish();
}

/// The attack: a team that may edit its own Widgets (patch, update)
/// relabels one to move it to another member, or out of the ring, with a
/// pass possibly in flight on its owner. deploy/ring-admission.yaml, as
/// shipped, refuses each such write, naming the verb it takes; the team's
/// spec changes still go through and are made.
#[tokio::test]
async fn a_team_that_may_edit_its_parents_cannot_move_them() {
    let ns = namespace("ring-attack").await;
    let admin = ns.client();
    for manifest in deploy_documents("ring-admission.yaml") {
        apply(&admin, "", &manifest).await;
    }
    const EDITOR: &str = "team-editor@example.com";
    apply_rbac(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "widget-editor", "namespace": ns.name()},
               "rules": [{"apiGroups": ["testing.reconciler.dev"], "resources": ["widgets"],
                          "verbs": ["get", "list", "watch", "patch", "update"]}]}),
    )
    .await;
    apply_rbac(
        &admin,
        role_binding(ns.name(), "widget-editor", "Role", "widget-editor", EDITOR),
    )
    .await;
    let (a, _) = member(&ns, "attack-a").await;
    let names = make_widgets(&ns, 2).await;
    let members = live_now(&ns, 1).await;
    assigned(&ns, &names, &members).await;
    children_hold(&ns, &names, "").await;

    let dir = std::env::temp_dir().join(format!("ring-attack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let as_editor = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(kubeconfig_as(EDITOR, &dir)).expect("kubeconfig"),
            &Default::default(),
        )
        .await
        .expect("a config"),
    )
    .expect("a client");
    let editors = objects::api(&as_editor, ns.name(), "testing.reconciler.dev/v1", "Widget");
    for labels in [
        json!({MEMBER: "another-member"}),
        json!({MEMBER: null}),
        json!({DRAIN: "another-member"}),
    ] {
        let patch = json!({"metadata": {"labels": labels}});
        // The policy is in force once the API server loaded it.
        eventually(
            &format!("{EDITOR} refused {labels}"),
            async || match editors
                .patch("w0", &Default::default(), &kube::api::Patch::Merge(&patch))
                .await
            {
                Err(kube::Error::Api(s)) if s.code == 403 => {
                    if s.message.contains("may not change the ring labels")
                        && s.message.contains("verb assign on widgets")
                    {
                        Ok(())
                    } else {
                        Err(s.message)
                    }
                }
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    }
    // Still a's, untouched; the team's own change goes through and is made.
    assigned(&ns, &names, &members).await;
    merge(&editors, "w0", json!({"spec": {"data": {"n": "w0-2"}}})).await;
    children_hold(&ns, &names[..1], "-2").await;
    a.finish();
}

/// A member's `/metrics` value of `series` (`name{labels}`).
fn metric(metrics: SocketAddr, series: &str) -> i64 {
    let (_, body) = http_get(metrics, "/metrics");
    let line = format!("{series} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&line))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{series} in {body}"))
}

/// A Lease named like member `identity`, held by it for an hour from now,
/// labelled with the ring when `labelled`.
fn forged(identity: &str, labelled: bool) -> Lease {
    let labels = labelled.then(|| json!({members::RING_LABEL: ring::RING}));
    serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": members::lease_name(ring::RING, identity), "labels": labels},
        "spec": {"holderIdentity": identity, "leaseDurationSeconds": 3600,
                 "acquireTime": jiff::Timestamp::now(), "renewTime": jiff::Timestamp::now()},
    }))
    .expect("a Lease")
}

/// The attack: a user who may write Leases in the ring's namespace makes
/// one named like a member, held and fresh for an hour. Before, that
/// member was live and given its share of the parents, which nothing ever
/// passed. Now a Lease the ring did not write (no ring label set by its
/// field manager) is no member, and deploy/ring-admission.yaml refuses the
/// label to whoever lacks the verb `join`; a Lease labelled by a user who
/// may, but with no member behind it, never acknowledges a view and is
/// given no parent either. Every change is still made; the coordinator
/// counts the refused and the unacknowledged.
#[tokio::test]
async fn a_lease_with_no_member_behind_it_is_given_no_parent() {
    let ns = namespace("ring-forged").await;
    let admin = ns.client();
    for manifest in deploy_documents("ring-admission.yaml") {
        apply(&admin, "", &manifest).await;
    }
    const LEASE_WRITER: &str = "lease-writer@example.com";
    apply_rbac(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "lease-writer", "namespace": ns.name()},
               "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                          "verbs": ["get", "list", "watch", "create", "update", "patch"]}]}),
    )
    .await;
    apply_rbac(
        &admin,
        role_binding(
            ns.name(),
            "lease-writer",
            "Role",
            "lease-writer",
            LEASE_WRITER,
        ),
    )
    .await;
    let (a, a_metrics) = member(&ns, "forged-a").await;
    let names = make_widgets(&ns, 12).await;
    let alone = live_now(&ns, 1).await;
    assigned(&ns, &names, &alone).await;

    let dir = std::env::temp_dir().join(format!("ring-forged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let as_writer = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(kubeconfig_as(LEASE_WRITER, &dir))
                .expect("kubeconfig"),
            &Default::default(),
        )
        .await
        .expect("a config"),
    )
    .expect("a client");
    let leases: Api<Lease> = Api::namespaced(as_writer, ns.name());
    leases
        .create(&PostParams::default(), &forged("ghost", false))
        .await
        .expect("any Lease writer may make a Lease");
    // The ring's label: refused, naming the verb (once the API server
    // loaded the policy); nor may the writer add it to its Lease.
    let admin_leases: Api<Lease> = Api::namespaced(admin.clone(), ns.name());
    let labelled = members::lease_name(ring::RING, "ghost-labelled");
    eventually(
        "the ring's label refused to a Lease writer",
        async || match leases
            .create(&PostParams::default(), &forged("ghost-labelled", true))
            .await
        {
            Err(kube::Error::Api(s))
                if s.code == 403 && s.message.contains("verb join on leases") =>
            {
                Ok(())
            }
            // Admitted before the API server loaded the policy: undone,
            // and tried again.
            Ok(_) => {
                let _ = admin_leases.delete(&labelled, &Default::default()).await;
                Err("admitted before the policy was in force".to_owned())
            }
            other => Err(format!("{other:?}")),
        },
    )
    .await;
    let label = json!({"metadata": {"labels": {members::RING_LABEL: ring::RING}}});
    let added = leases
        .patch(
            &members::lease_name(ring::RING, "ghost"),
            &PatchParams::default(),
            &Patch::Merge(&label),
        )
        .await;
    assert!(
        matches!(&added, Err(kube::Error::Api(s)) if s.code == 403),
        "{added:?}"
    );
    // A user who may (the cluster's admin), as the ring's field manager:
    // a member Lease the ring could have written, with nothing behind it.
    let as_ring = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    admin_leases
        .create(&as_ring, &forged("phantom", true))
        .await
        .expect("the admin makes a member Lease");
    eventually(
        "the coordinator counts the refused and the unacknowledged",
        async || {
            let states = ["refused", "unacknowledged", "serving"].map(|s| {
                metric(
                    a_metrics,
                    &format!("reconciler_ring_members{{state=\"{s}\"}}"),
                )
            });
            if states == [1, 1, 1] {
                Ok(())
            } else {
                Err(states)
            }
        },
    )
    .await;
    // Past the acknowledgement bound, every Widget is still a's alone, and
    // every change is made.
    tokio::time::sleep(view::ACK_BOUND).await;
    assigned(&ns, &names, &alone).await;
    assert_eq!(metric(a_metrics, "reconciler_ring_parents_unowned"), 0);
    change_widgets(&ns, &names, "-2").await;
    children_hold(&ns, &names, "-2").await;
    assert!(
        a.problems()
            .iter()
            .all(|l| l.contains("Leases named like members that the ring did not write")),
        "{:#?}",
        a.problems()
    );
}
