//! The ring where the API server selects (issue 34, KEP-5866): replicas
//! of the host with `--ring` (the selection left to `auto`) on an API
//! server of their own with the alpha `ShardedListAndWatch` gate on. The
//! members' watches select their slots of the uid hash space by
//! `shardSelector`; nothing is relabelled: no Widget carries a ring label,
//! each ConfigMap carries its Widget's slot from its first apply. A member
//! joining takes its share in two published views; one leaving (SIGTERM)
//! gives its share up before it stops; one SIGKILLed has its share taken
//! once its Lease lapses; every change made meanwhile is made, each
//! Widget's status written by its owner alone. One paused past its Lease
//! (SIGSTOP) and resumed writes nothing and exits: its fence sealed. (The ring on a server
//! without the gate, where `auto` selects by labels: tests/ring.rs.)

use std::collections::BTreeMap;
use std::net::SocketAddr;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use reconciler_host::operator::ring::view::View;
use reconciler_host::operator::ring::{MEMBER, slots};
use reconciler_host_harness::objects::{self, create, merge};
use reconciler_host_harness::operator::{Guests, Host, eventually, fixture_of};
use reconciler_host_harness::ring::member;
use reconciler_host_harness::ring::{RING, admin, cached, gated_server, live_now, named};
use reconciler_host_harness::widgets::{widget, widgets};
use reconciler_testsupport::TestNamespace;
use serde_json::json;

/// The members' Lease.
const LEASE: &str = "6s";

const WRITER: Guests = Guests {
    dir: "ring-tests",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

/// `count` Widgets `w<i>`, each holding its name as data: their uids.
async fn make_widgets(ns: &TestNamespace, count: usize) -> BTreeMap<String, String> {
    for i in 0..count {
        let name = format!("w{i}");
        let body = widget(&name, json!({"data": {"n": name}}));
        create(&ns.client(), ns.name(), body).await;
    }
    uids(ns).await
}

/// Each Widget's uid, by name.
async fn uids(ns: &TestNamespace) -> BTreeMap<String, String> {
    let list = widgets(ns)
        .list(&Default::default())
        .await
        .expect("Widgets");
    list.items
        .into_iter()
        .map(|w| (w.metadata.name.unwrap(), w.metadata.uid.unwrap()))
        .collect()
}

/// The member of `members` whose slots hold the uid `uid`.
fn owner<'m>(members: &'m [String], uid: &str) -> &'m str {
    let slot = slots::of_uid(uid);
    members
        .iter()
        .find(|m| slots::owned(members, m).contains(&slot))
        .expect("every slot has an owner")
}

/// Waits until each of `hosts` (metrics, identity) caches exactly the
/// Widgets whose slots `members` gives it, and their ConfigMaps.
async fn caches_hold(
    hosts: &[(SocketAddr, &str)],
    members: &[String],
    uids: &BTreeMap<String, String>,
) {
    eventually(
        "each member caches its own slots' parents and children",
        async || {
            let now: Vec<(usize, usize)> = hosts
                .iter()
                .map(|(m, _)| (cached(*m, "Widget"), cached(*m, "ConfigMap")))
                .collect();
            let want: Vec<(usize, usize)> = hosts
                .iter()
                .map(|(_, id)| {
                    let n = uids.values().filter(|u| owner(members, u) == *id).count();
                    (n, n)
                })
                .collect();
            if now == want {
                Ok(())
            } else {
                Err((now, want))
            }
        },
    )
    .await;
}

/// The ConfigMap of each of `names` holds `{"n": <name><suffix>}` and its
/// Widget's slot label.
async fn children_hold(ns: &TestNamespace, uids: &BTreeMap<String, String>, suffix: &str) {
    let api = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    for (name, uid) in uids {
        let want = json!({ "n": format!("{name}{suffix}") });
        let slot = slots::of_uid(uid).to_string();
        eventually(
            &format!("{name}-config holds {want}, slot {slot}"),
            async || match api.get_opt(&format!("{name}-config")).await {
                Ok(Some(o))
                    if o.data["data"] == want
                        && o.metadata.labels.as_ref().and_then(|l| l.get(slots::SLOT))
                            == Some(&slot) =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            },
        )
        .await;
    }
}

async fn change_widgets(ns: &TestNamespace, uids: &BTreeMap<String, String>, suffix: &str) {
    let api = widgets(ns);
    for name in uids.keys() {
        merge(
            &api,
            name,
            json!({"spec": {"data": {"n": format!("{name}{suffix}")}}}),
        )
        .await;
    }
}

/// Waits until the view published on the coordinator Lease gives the
/// slots to `members`, not moving.
async fn settled(ns: &TestNamespace, members: &[String]) {
    let leases: Api<Lease> = Api::namespaced(ns.client(), ns.name());
    eventually(&format!("the ring settled on {members:?}"), async || {
        let lease = leases
            .get_opt(&format!("{RING}-coordinator"))
            .await
            .ok()
            .flatten();
        let now = lease.as_ref().map(View::read).unwrap_or_default();
        if now.members == members && now.next.is_none() {
            Ok(())
        } else {
            Err(now)
        }
    })
    .await;
}

/// How many views `host` published as the coordinator.
fn published(host: &Host) -> usize {
    host.log_text()
        .lines()
        .filter(|l| l.contains("ring: view published"))
        .count()
}

/// One member serves every Widget; a second joins and takes its slots; a
/// third joins and leaves; the second is SIGKILLed: each time every
/// change is made, and each Widget's status written by its owner alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_join_leave_and_die_while_the_api_server_selects() {
    fixture_of(&WRITER);
    let (server, kubeconfig) = tokio::task::block_in_place(|| gated_server("members"));
    let ns = TestNamespace::on(admin(&server).await, "ring-server")
        .await
        .expect("a test namespace");
    let (a, a_metrics) = member(&ns, &kubeconfig, "server-a", LEASE).await;
    assert!(
        a.log_text()
            .contains("selection=\"server (shardSelector)\""),
        "auto selects by the API server where it serves it: {}",
        a.log_text()
    );
    let uids = make_widgets(&ns, 16).await;
    let alone = live_now(&ns, 1).await;
    children_hold(&ns, &uids, "").await;
    let a_id = alone[0].clone();
    caches_hold(&[(a_metrics, &a_id)], &alone, &uids).await;
    // The first member's view: the ring starts (moving), then settles.
    eventually("a published the ring's first views", async || {
        if published(&a) == 2 {
            Ok(())
        } else {
            Err(published(&a))
        }
    })
    .await;

    // b joins: two more views, each Widget's cache moving with its slot.
    let (b, b_metrics) = member(&ns, &kubeconfig, "server-b", LEASE).await;
    let ab = live_now(&ns, 2).await;
    let b_id = named(&ab, "server-b").to_owned();
    settled(&ns, &ab).await;
    caches_hold(&[(a_metrics, &a_id), (b_metrics, &b_id)], &ab, &uids).await;
    assert_eq!(published(&a), 4, "{}", a.log_text());
    let to_b = uids.values().filter(|u| owner(&ab, u) == b_id).count();
    assert!(to_b > 0 && to_b < uids.len(), "b takes some of 16: {to_b}");
    let before: BTreeMap<&String, [usize; 2]> = uids
        .keys()
        .map(|n| {
            (
                n,
                [a.status_writes(ns.name(), n), b.status_writes(ns.name(), n)],
            )
        })
        .collect();
    change_widgets(&ns, &uids, "-2").await;
    children_hold(&ns, &uids, "-2").await;
    for (name, uid) in &uids {
        let after = [
            a.status_writes(ns.name(), name),
            b.status_writes(ns.name(), name),
        ];
        let grown = [after[0] - before[name][0], after[1] - before[name][1]];
        let by_b = usize::from(owner(&ab, uid) == b_id);
        assert!(
            grown[by_b] >= 1,
            "{name}: its owner wrote its status: {grown:?}"
        );
        assert_eq!(grown[1 - by_b], 0, "{name}: the other did not: {grown:?}");
    }

    // c joins and leaves (SIGTERM): it gives its slots up before it stops.
    let (mut c, c_metrics) = member(&ns, &kubeconfig, "server-c", LEASE).await;
    let abc = live_now(&ns, 3).await;
    let c_id = named(&abc, "server-c").to_owned();
    settled(&ns, &abc).await;
    caches_hold(
        &[(a_metrics, &a_id), (b_metrics, &b_id), (c_metrics, &c_id)],
        &abc,
        &uids,
    )
    .await;
    assert!(c.stop().success(), "{}", c.log_text());
    assert!(c.log_text().contains("ring: left"), "{}", c.log_text());
    settled(&ns, &ab).await;
    caches_hold(&[(a_metrics, &a_id), (b_metrics, &b_id)], &ab, &uids).await;
    change_widgets(&ns, &uids, "-3").await;
    children_hold(&ns, &uids, "-3").await;

    // b dies: a takes every slot once b's Lease lapses.
    let mut b = b;
    b.kill();
    change_widgets(&ns, &uids, "-4").await;
    let a_only = vec![a_id.clone()];
    settled(&ns, &a_only).await;
    caches_hold(&[(a_metrics, &a_id)], &a_only, &uids).await;
    children_hold(&ns, &uids, "-4").await;
    // Nothing was relabelled: no Widget carries a ring label.
    for w in widgets(&ns)
        .list(&Default::default())
        .await
        .expect("Widgets")
        .items
    {
        let labels = w.metadata.labels.unwrap_or_default();
        assert!(
            !labels.contains_key(MEMBER) && !labels.contains_key(slots::SLOT),
            "{labels:?}"
        );
    }
    a.finish();
    drop(server);
}

/// The writes (not of Leases) a member's log shows it sent.
fn writes(log: &str) -> usize {
    log.lines()
        .filter(|l| l.trim_end().ends_with("requesting"))
        .filter(|l| {
            ["PATCH", "POST", "PUT", "DELETE"]
                .iter()
                .any(|m| l.contains(&format!("http.method={m}")))
        })
        .filter(|l| !l.contains("/leases"))
        .count()
}

/// A member frozen (SIGSTOP) past its Lease: the other takes its slots and
/// makes every change; resumed, the frozen one renews its own Lease (no
/// one else holds it) but sends no write, and exits saying its Lease
/// lapsed: its parents were taken over, so it rejoins only as a new
/// member (as a Deployment restarts it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_paused_past_its_lease_writes_nothing_when_resumed() {
    fixture_of(&WRITER);
    let (server, kubeconfig) = tokio::task::block_in_place(|| gated_server("paused"));
    let ns = TestNamespace::on(admin(&server).await, "ring-paused")
        .await
        .expect("a test namespace");
    let (a, a_metrics) = member(&ns, &kubeconfig, "paused-a", LEASE).await;
    let (mut b, _) = member(&ns, &kubeconfig, "paused-b", LEASE).await;
    let ab = live_now(&ns, 2).await;
    settled(&ns, &ab).await;
    let uids = make_widgets(&ns, 12).await;
    children_hold(&ns, &uids, "").await;
    let b_id = named(&ab, "paused-b").to_owned();
    assert!(
        uids.values().any(|u| owner(&ab, u) == b_id),
        "b owns some of the 12 Widgets"
    );

    b.signal("STOP");
    let sent_before = writes(&b.log_text());
    let a_id = named(&ab, "paused-a").to_owned();
    let a_only = vec![a_id.clone()];
    settled(&ns, &a_only).await;
    change_widgets(&ns, &uids, "-2").await;
    children_hold(&ns, &uids, "-2").await;
    caches_hold(&[(a_metrics, &a_id)], &a_only, &uids).await;

    b.signal("CONT");
    eventually("b exits, its Lease lapsed", async || {
        if b.is_alive() { Err(()) } else { Ok(()) }
    })
    .await;
    let log = b.log_text();
    assert!(log.contains("lapsed before"), "{log}");
    assert_eq!(
        writes(&log),
        sent_before,
        "the resumed member sent no write: {log}"
    );
    children_hold(&ns, &uids, "-2").await;
    a.finish();
    drop(server);
}
